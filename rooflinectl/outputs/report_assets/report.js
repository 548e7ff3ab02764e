/* rooflinectl report: draws the page from the JSON in #report-data.
 * Every string from a profile reaches the page through textContent (el() below) or, for the chart
 * library's own labels, through esc(): never as markup. Nothing is fetched. */
(function () {
  'use strict';
  var DOC = JSON.parse(document.getElementById('report-data').textContent);
  var BOUND_COLORS = { memory: '#1f77b4', compute: '#ff7f0e', latency: '#9467bd', link: '#2ca02c', unknown: '#8c8c8c' };
  var SYMBOLS = { bf16: 'circle', fp16: 'square', fp32: 'triangle-up', tf32: 'diamond', fp8: 'cross', fp64: 'triangle-down', int8: 'x' };
  var MEMORY_DASH = { dram: 'solid', l2: 'dash', l1: 'dot' };
  var state = { view: 0, text: '', module: '', family: '', precision: '', selected: null, linked: [], sortKey: 'time_s', sortAsc: false, finding: null, allRows: false };
  var app = document.getElementById('app');

  /* An element whose text is set as text (never parsed as HTML). */
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent, child) { parent.appendChild(child); return child; }
  /* For strings the chart library draws (legend, axis titles): its pseudo-HTML shown as text. */
  function esc(s) {
    return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
  }
  function view() { return DOC.views[state.view]; }
  function fmt(v, unit) {
    if (v === null || v === undefined || !isFinite(v)) return '-';
    var p = ['', 'k', 'M', 'G', 'T', 'P'], i = 0, a = Math.abs(v);
    while (a >= 1000 && i < p.length - 1) { a /= 1000; v /= 1000; i++; }
    return Number(v.toPrecision(3)) + ' ' + p[i] + unit;
  }

  /* ---- page frame ---- */
  function header() {
    var h = add(app, el('header'));
    add(h, el('h1', '', DOC.title));
    var v = DOC.views[0];
    add(h, el('div', 'sub', [v.device, v.command, 'rooflinectl ' + DOC.tool_version].filter(Boolean).join(' · ')));
    var nav = add(app, el('nav'));
    var parts = [['summary', 'Summary'], ['roofline', 'Roofline'], ['kernels', 'Kernels'], ['advice', 'Advice'], ['clocks', 'Run over time']];
    if (DOC.comparison) parts.push(['comparison', 'Comparison']);
    if (v.ranks) parts.push(['ranks', 'Ranks']);
    parts.forEach(function (p) { var a = add(nav, el('a', '', p[1])); a.href = '#' + p[0]; });
  }
  function section(id, title) {
    var s = add(app, el('section'));
    s.id = id;
    add(s, el('h2', '', title));
    return s;
  }

  /* ---- summary ---- */
  var summaryBox;
  function drawSummary() {
    summaryBox.textContent = '';
    var v = view();
    add(summaryBox, el('pre', 'summary', v.summary.join('\n')));
  }

  /* ---- filters ---- */
  function matches(rows, i) {
    if (state.module && rows.module[i] !== state.module) return false;
    if (state.family && rows.op_family[i] !== state.family) return false;
    if (state.precision && rows.precision[i] !== state.precision) return false;
    if (state.text) {
      var hay = [rows.kernel[i], rows.op[i], rows.module[i], rows.op_family[i], rows.source[i]].join(' ');
      var re = null;
      try { re = new RegExp(state.text, 'i'); } catch (e) { re = null; }
      if (re ? !re.test(hay) : hay.toLowerCase().indexOf(state.text.toLowerCase()) < 0) return false;
    }
    return true;
  }
  function visibleRows() {
    var rows = view().rows, out = [];
    for (var i = 0; i < rows.kernel.length; i++) if (matches(rows, i)) out.push(i);
    return out;
  }
  function options(select, values, all) {
    select.textContent = '';
    var o = add(select, el('option', '', all)); o.value = '';
    values.forEach(function (v) { var opt = add(select, el('option', '', v === '' ? '(none)' : v)); opt.value = v; });
  }
  function distinct(list) { return Array.from(new Set(list)).sort(); }
  var selects = {};
  function controls(parent) {
    var bar = add(parent, el('div', 'controls'));
    if (DOC.views.length > 1) {
      add(bar, el('label', '', 'profile'));
      var vs = add(bar, el('select'));
      vs.id = 'view-select';
      DOC.views.forEach(function (v, i) { var o = add(vs, el('option', '', v.name)); o.value = String(i); });
      vs.addEventListener('change', function () { state.view = Number(vs.value); state.selected = null; state.linked = []; refillSelects(); redraw(); });
    }
    add(bar, el('label', '', 'filter'));
    var input = add(bar, el('input'));
    input.type = 'search'; input.id = 'filter-text'; input.placeholder = 'kernel, op, module, family or source line (regex)';
    var typing = null;  /* redraw once the user pauses, not on every key */
    input.addEventListener('input', function () {
      clearTimeout(typing);
      typing = setTimeout(function () { state.text = input.value; redraw(); }, 120);
    });
    [['module', 'every module'], ['family', 'every op family'], ['precision', 'every precision']].forEach(function (p) {
      var s = add(bar, el('select'));
      s.id = 'filter-' + p[0];
      s.dataset.all = p[1];
      s.addEventListener('change', function () { state[p[0]] = s.value; redraw(); });
      selects[p[0]] = s;
    });
    refillSelects();
  }
  function refillSelects() {
    var rows = view().rows;
    var cols = { module: rows.module, family: rows.op_family, precision: rows.precision };
    Object.keys(selects).forEach(function (k) { state[k] = ''; options(selects[k], distinct(cols[k]), selects[k].dataset.all); });
  }

  /* ---- roofline ---- */
  var chartDiv, chartNote, selectionNote, hoverBox;
  function frame(v, shown) {
    var rows = v.rows, xs = [], ys = [];
    shown.forEach(function (i) { if (rows.where[i] === 'roofline') { xs.push(rows.x[i]); ys.push(rows.y[i]); } });
    var dram = v.roofs.filter(function (r) { return r.key === 'dram'; })[0];
    var bw = dram ? dram.value : 1;
    var peaks = v.roofs.filter(function (r) { return r.kind === 'compute'; }).map(function (r) { return r.value; });
    var cand = xs.concat(peaks.map(function (p) { return p / bw; })).filter(function (x) { return x > 0 && isFinite(x); });
    if (!cand.length) cand = [1];
    var lo = Math.min.apply(null, cand), hi = Math.max.apply(null, cand);
    var strip = lo / 10;
    var ycand = ys.concat(peaks).filter(function (y) { return y > 0 && isFinite(y); });
    shown.forEach(function (i) { if (rows.where[i] === 'no_flops' && rows.bytes_per_s[i] > 0) ycand.push(strip * rows.bytes_per_s[i]); });
    if (!ycand.length) ycand = [bw * lo];
    return { xlo: strip / Math.pow(10, 0.45), xhi: hi * Math.pow(10, 0.8), ylo: Math.min(Math.min.apply(null, ycand), bw * lo) / Math.pow(10, 0.6),
      yhi: Math.max.apply(null, ycand) * Math.pow(10, 0.55), strip: strip, bw: bw, top: peaks.length ? Math.max.apply(null, peaks) : null };
  }
  function roofTraces(v, f) {
    var out = [];
    v.roofs.forEach(function (r) {
      var x, y;
      if (r.kind === 'memory') { var end = Math.min(f.top ? f.top / r.value : f.xhi, f.xhi); x = [f.xlo, end]; y = [f.xlo * r.value, end * r.value]; }
      else { var start = r.value / f.bw; x = [start, f.xhi]; y = [r.value, r.value]; }
      out.push({ x: x, y: y, mode: 'lines', name: esc(r.label), hoverinfo: 'skip', meta: 'roof',
        line: { color: '#333', width: r.key === 'dram' || r.kind === 'compute' ? 1.8 : 1.2, dash: MEMORY_DASH[r.key] || 'solid' } });
    });
    return out;
  }
  /* Each roof named on the chart: compute roofs at their right end, memory roofs near their left. */
  function roofLabels(v, f) {
    return v.roofs.map(function (r, k) {
      var memory = r.kind === 'memory', x = memory ? f.strip * Math.pow(10, 0.6 + 0.5 * k) : f.xhi;
      return { x: Math.log10(x), y: Math.log10(memory ? x * r.value : r.value), xref: 'x', yref: 'y', showarrow: false,
        text: esc(r.label), xanchor: memory ? 'left' : 'right', yanchor: 'bottom', font: { size: 10, color: '#333' } };
    });
  }
  function pointTraces(v, shown, f) {
    var rows = v.rows, byBound = {}, total = v.total_kernel_time_s || 1, linked = new Set(state.linked);
    shown.forEach(function (i) {
      var w = rows.where[i];
      if (w !== 'roofline' && w !== 'no_flops') return;
      var b = rows.bound[i] || 'unknown';
      var t = byBound[b] || (byBound[b] = { x: [], y: [], ids: [], size: [], symbol: [], lw: [], lc: [] });
      t.x.push(w === 'roofline' ? rows.x[i] : f.strip);
      t.y.push(w === 'roofline' ? rows.y[i] : f.strip * rows.bytes_per_s[i]);
      t.ids.push(i);
      t.size.push(Math.max(7, 64 * Math.sqrt((rows.time_s[i] || 0) / total)));
      t.symbol.push(SYMBOLS[rows.precision[i]] || 'star');
      var hot = i === state.selected || linked.has(i);
      t.lw.push(hot ? 3 : (rows.above_roof[i] ? 2.2 : 0.7));
      t.lc.push(i === state.selected ? '#000' : (linked.has(i) ? '#2a8a1a' : (rows.above_roof[i] ? '#d62728' : '#fff')));
    });
    return Object.keys(byBound).sort().map(function (b) {
      var t = byBound[b];
      return { x: t.x, y: t.y, customdata: t.ids, mode: 'markers', type: 'scatter', name: esc(b), hoverinfo: 'none', meta: 'group',
        marker: { size: t.size, symbol: t.symbol, color: BOUND_COLORS[b] || '#8c8c8c', opacity: 0.85, line: { width: t.lw, color: t.lc } } };
    });
  }
  function arrowTraces() {
    if (!DOC.comparison || state.view !== 0) return [];  /* view 0 is AFTER: the arrows end there */
    var groups = { faster: [], slower: [], same: [] };
    DOC.comparison.arrows.forEach(function (a) {
      if (a.x0 === null || a.y0 === null || a.x1 === null || a.y1 === null) return;
      var k = a.speedup === null || Math.abs(a.speedup - 1) <= 0.03 ? 'same' : (a.speedup > 1 ? 'faster' : 'slower');
      groups[k].push(a);
    });
    var colors = { faster: '#2ca02c', slower: '#d62728', same: '#777' };
    return Object.keys(groups).filter(function (k) { return groups[k].length; }).map(function (k) {
      var x = [], y = [], sym = [];
      groups[k].forEach(function (a) { x.push(a.x0, a.x1, null); y.push(a.y0, a.y1, null); sym.push('circle-open', 'arrow', 'circle'); });
      return { x: x, y: y, mode: 'lines+markers', name: 'before → after: ' + k, hoverinfo: 'skip', meta: 'arrow',
        line: { color: colors[k], width: 1.2 }, marker: { symbol: sym, size: 9, angleref: 'previous', color: colors[k] } };
    });
  }
  function drawChart() {
    var v = view(), shown = visibleRows(), f = frame(v, shown);
    var traces = roofTraces(v, f).concat(arrowTraces(), pointTraces(v, shown, f));
    var layout = {
      margin: { l: 70, r: 10, t: 10, b: 50 }, hovermode: 'closest', dragmode: 'zoom', legend: { orientation: 'h', y: -0.14 },
      xaxis: { type: 'log', title: { text: 'Arithmetic intensity (FLOP/byte)' }, range: [Math.log10(f.xlo), Math.log10(f.xhi)], exponentformat: 'SI' },
      yaxis: { type: 'log', title: { text: 'Performance (FLOP/s)' }, range: [Math.log10(f.ylo), Math.log10(f.yhi)], exponentformat: 'SI' },
      shapes: [{ type: 'rect', xref: 'x', yref: 'paper', x0: f.xlo, x1: f.strip * Math.pow(10, 0.4), y0: 0, y1: 1, fillcolor: '#f1f1f1', line: { width: 0 }, layer: 'below' }],
      annotations: [{ x: Math.log10(Math.sqrt(f.xlo * f.strip * Math.pow(10, 0.4))), y: 0.98, xref: 'x', yref: 'paper', showarrow: false, text: 'no FLOPs<br>(bytes/s)', font: { size: 10, color: '#666' } }].concat(roofLabels(v, f))
    };
    Plotly.react(chartDiv, traces, layout, { displaylogo: false, responsive: true });
    var rows = v.rows, unknown = shown.filter(function (i) { return rows.where[i] === 'unknown' || rows.where[i] === 'link'; });
    var drawn = shown.length - unknown.length;
    chartNote.textContent = drawn + ' of ' + rows.kernel.length + ' group(s) on the chart' +
      (unknown.length ? '; not drawn (no cost, or a collective on the link): ' + unknown.length + ' group(s), ' + share(unknown) + ' of kernel time' : '') +
      '. Colour: bound; area: time; marker: precision (' + precisionKey(shown) + '). Drag to zoom, double-click to reset, click a point to select its row and findings.';
  }
  function precisionKey(shown) {
    var rows = view().rows, seen = distinct(shown.map(function (i) { return rows.precision[i]; }));
    return seen.map(function (p) { return (SYMBOLS[p] || 'star') + ' ' + (p || 'none'); }).join(', ');
  }
  function share(ids) {
    var rows = view().rows, t = 0;
    ids.forEach(function (i) { t += rows.time_s[i] || 0; });
    return (100 * t / (view().total_kernel_time_s || 1)).toFixed(1) + '%';
  }
  function cellOf(v, i, name) {
    var at = -1;
    v.columns.forEach(function (c, k) { if (c.name.replace('/it', '') === name) at = k; });
    return at >= 0 ? v.rows.cells[i][at] : '';
  }
  /* The hover box of row i of view v (the shown one by default), near the mouse. */
  function showHover(i, ev, v) {
    v = v || view();
    var rows = v.rows, cell = function (name) { return cellOf(v, i, name); };
    state.hovered = i;
    hoverBox.textContent = '';
    add(hoverBox, el('div', 'k', rows.kernel[i]));
    var per = v.iterations > 1 ? ' per iteration' : '';
    [['op', rows.op[i]], ['module', rows.module[i] || '(none)'], ['source', rows.source[i] || '(none)'], ['shapes', rows.shapes[i]],
      ['time' + per, cell('time') + ' (' + cell('share') + ')'], ['FLOPs' + per, cell('FLOPs')], ['bytes' + per, cell('bytes')],
      ['intensity', cell('AI') + ' FLOP/B'], ['achieved', cell('FLOP/s') + ', ' + cell('B/s')], ['attainable', cell('attainable')],
      ['efficiency', cell('eff')], ['bound', rows.bound[i]], ['precision', cell('prec')], ['cost', rows.cost_source[i]]
    ].forEach(function (p) { add(hoverBox, el('div', '', p[0] + ': ' + p[1])); });
    hoverBox.style.display = 'block';
    var x = (ev && ev.clientX) || 40, y = (ev && ev.clientY) || 40;
    hoverBox.style.left = Math.min(x + 14, window.innerWidth - 540) + 'px';
    hoverBox.style.top = Math.min(y + 14, window.innerHeight - 300) + 'px';
  }
  function roofline() {
    var s = section('roofline', 'Roofline');
    controls(s);
    chartDiv = add(s, el('div', 'chart'));
    chartDiv.id = 'roofline-chart';
    chartNote = add(s, el('p', 'note'));
    selectionNote = add(s, el('p', ''));
    selectionNote.id = 'selection';
    hoverBox = add(document.body, el('div'));
    hoverBox.id = 'hover';
    drawChart();
    chartDiv.on('plotly_hover', function (e) {
      var p = e.points && e.points[0];
      if (p && p.data.meta === 'group') showHover(p.customdata, e.event);
    });
    chartDiv.on('plotly_unhover', function () { hoverBox.style.display = 'none'; });
    chartDiv.on('plotly_click', function (e) {
      var p = e.points && e.points[0];
      if (p && p.data.meta === 'group') select(p.customdata, true);
    });
  }

  /* ---- kernel table ---- */
  /* The first FIRST_ROWS rows in the current order are drawn at once (a page with thousands of rows
   * would take seconds to lay out); the rest on request, or when a selection needs them. */
  var tableBody, tableHead, tableNote, moreButton, FIRST_ROWS = 200;
  function kernels() {
    var s = section('kernels', 'Kernels');
    tableNote = add(s, el('p', 'note'));
    moreButton = add(s, el('button', 'hidden', ''));
    moreButton.id = 'table-more';
    moreButton.addEventListener('click', function () { state.allRows = true; drawTable(); });
    var box = add(s, el('div', 'tablebox'));
    var t = add(box, el('table', 'grid'));
    t.id = 'kernel-table';
    tableHead = add(t, el('thead'));
    tableBody = add(t, el('tbody'));
    drawTable();
  }
  function compare(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined || a === '') return 1;
    if (b === null || b === undefined || b === '') return -1;
    var r = typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b));
    return state.sortAsc ? r : -r;
  }
  function drawTable() {
    var v = view(), rows = v.rows, ids = visibleRows(), key = state.sortKey;
    var col = rows[key] || rows.time_s;
    ids.sort(function (a, b) { return compare(col[a], col[b]) || a - b; });
    tableHead.textContent = '';
    var hr = add(tableHead, el('tr'));
    add(hr, el('th', '', '#'));
    v.columns.forEach(function (c) {
      var th = add(hr, el('th', (c.key === key ? 'sorted' + (state.sortAsc ? ' asc' : '') : '') + (c.name === 'kernel' || c.name === 'op · shapes' || c.name === 'bound' || c.name === 'prec' ? ' text' : ''), c.name));
      th.addEventListener('click', function () {
        state.sortAsc = state.sortKey === c.key ? !state.sortAsc : (c.key === 'kernel' || c.key === 'op');
        state.sortKey = c.key; drawTable();
      });
    });
    tableBody.textContent = '';
    var linked = new Set(state.linked);
    var shown = state.allRows ? ids.length : FIRST_ROWS;
    var wanted = ids.indexOf(state.selected);
    state.linked.forEach(function (r) { wanted = Math.max(wanted, ids.indexOf(r)); });
    if (wanted >= shown) shown = wanted + 1;
    ids.slice(0, shown).forEach(function (i) {
      var tr = add(tableBody, el('tr', (i === state.selected ? 'selected ' : '') + (linked.has(i) ? 'linked ' : '') + (rows.above_roof[i] ? 'above' : '')));
      tr.dataset.row = String(i);
      add(tr, el('td', '', String(i + 1)));
      rows.cells[i].forEach(function (text, k) {
        var n = v.columns[k].name;
        if (n === 'kernel' || n === 'op · shapes') {  /* two lines at most; the whole name on hover */
          var td = add(tr, el('td', 'name'));
          add(td, el('div', 'clamp', text));
          td.title = text;
        } else add(tr, el('td', n === 'bound' || n === 'prec' ? 'text' : '', text));
      });
      tr.addEventListener('click', function () { select(i, false); });
    });
    moreButton.className = ids.length > shown ? '' : 'hidden';
    moreButton.textContent = 'show all ' + ids.length + ' rows';
    tableNote.textContent = ids.length + ' of ' + rows.kernel.length + ' group(s)' + (ids.length > shown ? ', the first ' + shown + ' drawn' : '') +
      (v.iterations > 1 ? '; calls, time, FLOPs and bytes per iteration (' + v.iterations + ' iterations)' : '') +
      '. # is the group\'s row in the profile (largest time first). Click a header to sort, a row to find it on the chart.';
  }

  /* ---- selection, shared by chart, table and advice ---- */
  function select(i, fromChart) {
    state.selected = i;
    state.linked = [];
    state.finding = null;
    redraw();
    var tr = tableBody.querySelector('tr[data-row="' + i + '"]');
    if (tr && fromChart) {  /* the row comes into the table's own view; the page stays where it is */
      var box = tr.closest('.tablebox');
      box.scrollTop = Math.max(0, tr.offsetTop - box.clientHeight / 2);
    }
    var about = markFindings(i);
    selectionNote.textContent = 'selected: #' + (i + 1) + ' ' + view().rows.kernel[i] + ' (' + cellOf(view(), i, 'time') + ', ' +
      cellOf(view(), i, 'share') + ' of kernel time); ' + (about.length ? about.length + ' finding(s) about it: ' + about.join('; ') : 'no finding names it');
  }
  /* Mark the findings about row i (or the one clicked); returns the titles of those about row i. */
  function markFindings(i) {
    var cards = document.querySelectorAll('.finding'), about = [];
    cards.forEach(function (c) {
      var rows = JSON.parse(c.dataset.rows || '[]');
      var on = state.finding === Number(c.dataset.index) || (i !== null && rows.indexOf(i) >= 0 && state.view === 0);
      c.classList.toggle('active', on);
      if (on && i !== null) about.push(c.dataset.title);
    });
    return about;
  }
  function redraw() { drawSummary(); drawChart(); drawTable(); }

  /* ---- advice ---- */
  function advice() {
    var s = section('advice', 'Advice');
    var a = DOC.advice;
    if (!a) { add(s, el('p', 'note', 'No advice in this report.')); return; }
    add(s, el('p', '', a.headline));
    if (!a.findings.length) add(s, el('p', 'note', 'No findings.'));
    a.findings.forEach(function (f, n) {
      var card = add(s, el('div', 'finding ' + f.severity));
      card.dataset.rows = JSON.stringify(f.rows);
      card.dataset.index = String(n);
      card.dataset.title = (n + 1) + '. ' + f.title;
      var head = add(card, el('div'));
      add(head, el('span', 'title', (n + 1) + '. ' + f.title + (f.subject ? ': ' + f.subject : '')));
      add(head, el('span', 'meta', '[' + f.rule + ', ' + f.severity + ']'));
      (f.source ? [['source', f.source]] : []).concat([['evidence', f.evidence], ['fix', f.fix], ['saving', f.saving + ' (estimated)' + (f.measured ? '; measured by --verify: ' + f.measured : '')]]).forEach(function (p) {
        var line = add(card, el('div', 'line'));
        add(line, el('b', '', p[0] + ': '));
        line.appendChild(document.createTextNode(p[1]));
      });
      if (/^https:\/\//.test(f.docs || '')) {  /* the rule's docs for the version that wrote the report */
        var about = add(card, el('div', 'line'));
        add(about, el('b', '', 'docs: '));
        var link = add(about, el('a', '', 'about ' + f.rule));
        link.href = f.docs;
        link.rel = 'noopener';
        link.addEventListener('click', function (ev) { ev.stopPropagation(); });
      }
      if (f.rows.length) {
        var ks = add(card, el('div', 'line'));
        add(ks, el('b', '', 'kernels: '));
        f.rows.slice(0, 12).forEach(function (r) {
          var b = add(ks, el('button', 'kernel', '#' + (r + 1) + ' ' + DOC.views[0].rows.kernel[r]));
          b.title = DOC.views[0].rows.kernel[r];
          b.addEventListener('click', function (ev) { ev.stopPropagation(); state.view = 0; select(r, true); });
        });
        if (f.rows.length > 12) add(ks, el('span', 'note', '+ ' + (f.rows.length - 12) + ' more: click the finding to mark all ' + f.rows.length + ' on the chart and in the table'));
      }
      card.addEventListener('click', function () {
        state.view = 0; state.selected = null; state.linked = f.rows.slice(); state.finding = n;
        redraw(); markFindings(null);
      });
    });
    a.notes.forEach(function (t) { add(s, el('p', 'note', t)); });
  }

  /* ---- the run over time ---- */
  function clocks() {
    var s = section('clocks', 'Run over time');
    var c = view().clocks;
    if (!c || c.why !== undefined) { add(s, el('p', 'note', 'No clock samples: ' + (c ? c.why : 'none') + '.')); return; }
    var span = c.counted_s[1] - c.counted_s[0];
    add(s, el('p', 'note', 'NVML every ' + (1000 * c.period_s).toFixed(0) + ' ms: ' + c.t_s.length + ' samples over ' +
      (c.t_s[c.t_s.length - 1] - c.t_s[0]).toFixed(2) + ' s. Shaded: the counted kernels (grey, ' + (1000 * span).toFixed(1) +
      ' ms), a power or thermal cap (red). The chart opens on the counted kernels; double-click for the whole run.'));
    var d = add(s, el('div', 'chart small'));
    d.id = 'clock-chart';
    var shapes = [{ type: 'rect', xref: 'x', yref: 'paper', x0: c.counted_s[0], x1: c.counted_s[1], y0: 0, y1: 1, fillcolor: '#eee', line: { width: 0 }, layer: 'below' }];
    var half = c.period_s / 2;
    c.capped.forEach(function (on, k) {
      if (on) shapes.push({ type: 'rect', xref: 'x', yref: 'paper', x0: c.t_s[k] - half, x1: c.t_s[k] + half, y0: 0, y1: 1, fillcolor: 'rgba(214,39,40,0.15)', line: { width: 0 }, layer: 'below' });
    });
    var text = c.reasons.map(function (r) { return esc(r || 'no throttle reason'); });
    var traces = [
      { x: c.t_s, y: c.sm_clock_mhz, name: 'SM clock (MHz)', mode: 'lines', line: { color: '#1f77b4' }, text: text, hovertemplate: '%{y:.0f} MHz at %{x:.3f} s<br>%{text}<extra></extra>' },
      { x: c.t_s, y: c.power_w, name: 'power (W)', mode: 'lines', yaxis: 'y2', line: { color: '#ff7f0e' }, hovertemplate: '%{y:.0f} W<extra></extra>' }];
    if (c.power_limit_w) traces.push({ x: [c.t_s[0], c.t_s[c.t_s.length - 1]], y: [c.power_limit_w, c.power_limit_w], name: 'power limit', mode: 'lines', yaxis: 'y2', line: { color: '#ff7f0e', dash: 'dash' }, hoverinfo: 'skip' });
    Plotly.newPlot(d, traces, { margin: { l: 60, r: 60, t: 10, b: 40 }, shapes: shapes, legend: { orientation: 'h', y: 1.15 },
      xaxis: { title: { text: 'seconds since the first counted kernel' }, range: [c.counted_s[0] - Math.max(span, 5 * c.period_s), c.counted_s[1] + Math.max(span, 5 * c.period_s)] }, yaxis: { title: { text: 'SM clock (MHz)' }, rangemode: 'tozero' },
      yaxis2: { title: { text: 'power (W)' }, overlaying: 'y', side: 'right', rangemode: 'tozero' } }, { displaylogo: false, responsive: true });
  }

  /* ---- plain tables (diff, ranks) ---- */
  function plainTable(parent, header, rows, textCols) {
    var box = add(parent, el('div', 'tablebox'));
    var t = add(box, el('table', 'grid'));
    var hr = add(add(t, el('thead')), el('tr'));
    header.forEach(function (h, k) { add(hr, el('th', textCols.indexOf(k) >= 0 ? 'text' : '', h)); });
    var body = add(t, el('tbody'));
    rows.forEach(function (r) {
      var tr = add(body, el('tr'));
      r.forEach(function (c, k) { add(tr, el('td', textCols.indexOf(k) >= 0 ? 'name' : '', c)); });
    });
    return t;
  }
  function comparison() {
    var c = DOC.comparison;
    if (!c) return;
    var s = section('comparison', 'Comparison: ' + c.base_name + ' → ' + c.new_name);
    add(s, el('p', '', c.headline));
    c.notes.forEach(function (n) { add(s, el('p', 'note', n)); });
    add(s, el('p', 'note', 'The roofline above shows ' + c.new_name + ' with an arrow per matched group from where it sat in ' + c.base_name + ' (green faster, red slower, grey within 3%).'));
    plainTable(s, c.header, c.changes, [0, 4, 5]).id = 'diff-table';
    if (c.lonely.length) { add(s, el('h2', '', 'Groups in one profile only')); plainTable(s, ['side', 'group', 'time/it'], c.lonely, [0, 1]); }
  }
  function ranks() {
    var r = view().ranks || DOC.views[0].ranks;
    if (!r) return;
    var s = section('ranks', 'Ranks');
    add(s, el('p', 'note', r.ranks.title));
    plainTable(s, r.ranks.header, r.ranks.rows, [1]).id = 'rank-table';
    r.lines.forEach(function (l) { add(s, el('p', '', l)); });
    if (r.collectives) { add(s, el('p', 'note', r.collectives.title)); plainTable(s, r.collectives.header, r.collectives.rows, [0]); }
    if (DOC.mode === 'ranks') rankCharts(s);
    add(s, el('p', 'note', 'Pick a rank in the roofline\'s profile menu to see its own kernels in the table.'));
  }
  /* One small roofline per rank, on the axes of the merged one: the ranks side by side. */
  function rankCharts(parent) {
    var grid = add(parent, el('div', 'rank-grid'));
    var merged = DOC.views[0], f = frame(merged, merged.rows.kernel.map(function (_, i) { return i; }));
    DOC.views.slice(1).forEach(function (v) {
      var cell = add(grid, el('div'));
      add(cell, el('div', 'note', v.name + ': ' + (1e3 * v.total_kernel_time_s / (v.iterations || 1)).toPrecision(3) + ' ms of kernel time per iteration'));
      var d = add(cell, el('div', 'chart small rank-chart'));
      var all = v.rows.kernel.map(function (_, i) { return i; });
      Plotly.newPlot(d, roofTraces(v, f).concat(pointTraces(v, all, f)), {
        margin: { l: 50, r: 10, t: 5, b: 35 }, showlegend: false, hovermode: 'closest',
        xaxis: { type: 'log', range: [Math.log10(f.xlo), Math.log10(f.xhi)], exponentformat: 'SI' },
        yaxis: { type: 'log', range: [Math.log10(f.ylo), Math.log10(f.yhi)], exponentformat: 'SI' } }, { displaylogo: false, responsive: true });
      d.on('plotly_hover', function (e) { var p = e.points && e.points[0]; if (p && p.data.meta === 'group') showHover(p.customdata, e.event, v); });
      d.on('plotly_unhover', function () { hoverBox.style.display = 'none'; });
    });
  }

  function main() {
    header();
    summaryBox = add(section('summary', 'Summary'), el('div'));
    roofline();
    kernels();
    advice();
    clocks();
    comparison();
    ranks();
    drawSummary();
    void document.body.offsetHeight;  /* layout done: the time below is the page's drawn, not just built */
    window.rooflineReport = { readyMs: performance.now(), state: state, view: view, drawChart: drawChart, drawTable: drawTable, select: select, pointsOnChart: function () { return chartDiv.querySelectorAll('.scatterlayer .trace path.point').length; } };
    document.body.dataset.ready = '1';
  }
  main();
})();
