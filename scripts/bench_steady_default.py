"""The default `rooflinectl profile` (`--profile-steps auto`) against a plain run of the same
script, for issue 28 (scripts/gpu.d/71-steady-default.sh runs it on the H200 machine).

Usage: python3 scripts/bench_steady_default.py OUT_DIR [--device cuda|cpu] [--only NAME ...] [--small]

For each workload (plain scripts from examples/real, random weights): the script plain (its own
TIMING line: CUDA events around each timed step) and under the default `rooflinectl profile`, then
`rooflinectl advise --format json`. Printed as FIGURE lines:
- step: the profile's un-profiled step (median of the steps timed after the profiler stopped)
  against the plain run's median step, in % and with both step counts;
- idle: the launch/idle saving the advice claims per step (launch.overhead) and the profile's
  idle per step without the profiler, against plain step - kernel busy per step (the profile's
  device_busy_s / iterations); for the GPT-2 forward also the step replayed from a CUDA graph;
- launch findings above 1% of the window on the GPU-bound GPT-2 forward;
- loop: a 2,000-step small eager training loop, `profile` wall time against the plain run's.
Writes OUT_DIR/steady_default.json. CHECK lines say which of issue 28's targets held.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REAL = "examples/real"
# name: (script, args on the GPU, args for --small / CPU runs)
WORKLOADS: dict[str, tuple[str, list[str], list[str]]] = {
    "gpt2-forward": ("gpt2_forward.py", ["--layers", "12", "--batch", "8", "--seq", "1024"],
                     ["--layers", "2", "--batch", "1", "--seq", "64"]),
    "llama-train": ("llama_train.py", ["--layers", "4", "--hidden", "1024", "--batch", "4", "--seq", "512"],
                    ["--layers", "1", "--hidden", "64", "--batch", "1", "--seq", "32", "--vocab", "256"]),
    "mixtral-forward": ("mixtral_forward.py", ["--layers", "2", "--hidden", "1024", "--batch", "2", "--seq", "512"],
                        ["--layers", "1", "--hidden", "64", "--batch", "1", "--seq", "32", "--vocab", "256"]),
    "moe-layer": ("moe_layer.py", [], ["--tokens", "256", "--dim", "64", "--hidden", "128"]),  # no live marker
    "resnet50-train": ("resnet_train.py", ["--batch", "32"], ["--batch", "2", "--size", "64", "--arch", "resnet18"]),
}
ORDER = ["gpt2-forward", "loop", "llama-train", "resnet50-train", "mixtral-forward"]  # most wanted first; moe-layer: --only
HOST_BOUND = ("llama-train", "resnet50-train", "mixtral-forward")  # a second plain run after the profile: host drift
WARMUP, STEPS = 3, 20  # 23 iterations: 5 profiled (auto), 17 timed without the profiler

LOOP = """
import sys, time, torch
device = sys.argv[1]
model = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(256, 1024, device=device)
start = time.perf_counter()
for _ in range(int(sys.argv[2])):
    opt.zero_grad(set_to_none=True)
    model(x).square().mean().backward()
    opt.step()
if device == "cuda":
    torch.cuda.synchronize()
print(f"LOOP_S {time.perf_counter() - start:.4f}")
"""

GRAPH = """
import statistics, sys, torch
sys.path.insert(0, "examples/real")
from transformers import GPT2Config, GPT2LMHeadModel
layers, batch, seq = (int(a) for a in sys.argv[1:4])
torch.manual_seed(0)
config = GPT2Config(n_layer=layers, n_positions=max(1024, seq))
model = GPT2LMHeadModel(config).eval().to(device="cuda", dtype=torch.bfloat16)
ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")
def step():
    with torch.no_grad():
        return model(ids, use_cache=False).logits
def timed(fn, n=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for a, b in pairs:
        a.record(); fn(); b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in pairs)
eager_ms = timed(step)
stream = torch.cuda.Stream()
stream.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(stream):
    for _ in range(3):
        step()
torch.cuda.current_stream().wait_stream(stream)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    step()
print(f"GRAPH eager_ms={eager_ms:.4f} replay_ms={timed(graph.replay):.4f}")
"""


def _run(command: list[str], log: Path, timeout_s: float = 150) -> tuple[int, float, str]:
    """Exit code, wall seconds and output (stdout + stderr, also written to log)."""
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
        code, text = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        code, text = 124, f"timed out after {timeout_s:.0f} s: {exc}"
    wall_s = time.perf_counter() - start
    log.write_text(text)
    sys.stdout.flush()
    return code, wall_s, text


def _timing(text: str) -> dict[str, Any] | None:
    line = next((x for x in text.splitlines() if x.startswith("TIMING ")), None)
    return json.loads(line[len("TIMING "):]) if line else None


def _launch_findings(advice: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in advice.get("findings", []) if f.get("rule_id") == "launch.overhead"]


def _claimed_s(finding: dict[str, Any]) -> float:
    """A finding's saving: ranked, or (a calibrated estimate, ranked as a note) its estimate."""
    return float(finding.get("est_saving_s") or finding.get("numbers", {}).get("estimated_saving_s") or 0.0)


def measure(name: str, out: Path, device: str, small: bool) -> dict[str, Any] | None:
    """Plain run, default profile, advice: the figures of one workload (None: script missing)."""
    script, args, small_args = WORKLOADS[name]
    path = Path(REAL) / script
    if not path.is_file():
        print(f"FIGURE {name}: skipped ({path} is not in this tree)")
        return None
    argv = [*(small_args if small else args), "--warmup", str(WARMUP), "--steps", str(STEPS), "--device", device]
    code, _, text = _run([sys.executable, str(path), *argv], out / f"{name}.plain.log")
    plain = _timing(text)
    profile = out / f"{name}.profile.json"
    pcode, profile_wall_s, ptext = _run([sys.executable, "-m", "rooflinectl", "profile", str(path), "-o", str(profile),
                                         "--top", "8", "--device", device, "--", *argv], out / f"{name}.profile.log")
    if code or pcode or plain is None or not profile.is_file():
        print(f"FIGURE {name}: failed (plain exit {code}, profile exit {pcode}; logs in {out})")
        return None
    plains = [statistics.median(plain["iter_ms"]) / 1e3]
    if name in HOST_BOUND:  # plain, profiled, plain: how far the host moves a plain run
        _, _, text2 = _run([sys.executable, str(path), *argv], out / f"{name}.plain2.log")
        if (again := _timing(text2)) is not None:
            plains.append(statistics.median(again["iter_ms"]) / 1e3)
    same_run = _timing(ptext)  # the script's own CUDA events in the profiled run
    acode, _, atext = _run([sys.executable, "-m", "rooflinectl", "advise", str(profile), "--format", "json"],
                           out / f"{name}.advice.log")
    try:  # the JSON report first, then whatever the command wrote to stderr
        advice = json.JSONDecoder().raw_decode(atext[atext.index("{"):])[0] if "{" in atext else {}
    except ValueError:
        advice = {}
    s = json.loads(profile.read_text())["summary"]
    iterations = s.get("iterations") or 1
    launch = _launch_findings(advice)
    timed = s.get("unprofiled_steps") or 0
    own = same_run["iter_ms"][-timed:] if same_run and timed else []  # the steps rooflinectl timed
    return {
        "name": name, "argv": argv, "plain_median_s": plains[0], "plain_medians_s": plains,
        "same_run_script_s": statistics.median(own) / 1e3 if own else None,
        "plain_steps": len(plain["iter_ms"]), "unprofiled_step_s": s.get("unprofiled_step_time_s"),
        "unprofiled_steps": s.get("unprofiled_steps"), "profiled_step_s": s.get("iteration_time_s"),
        "iterations": iterations, "busy_per_step_s": (s.get("device_busy_s") or 0.0) / iterations,
        "idle_unprofiled_per_step_s": (s.get("device_idle_unprofiled_s") or 0.0) / iterations,
        "idle_source": s.get("device_idle_unprofiled_source"), "window_s": s.get("window_s"),
        "claimed_saving_per_step_s": sum(_claimed_s(f) for f in launch) / iterations,
        "claim_is_estimate": any("estimated_saving_s" in f.get("numbers", {}) for f in launch),
        "launch_findings": [[f["est_saving_s"], f.get("severity"), _claimed_s(f)] for f in launch],
        "profile_wall_s": profile_wall_s, "marker": s.get("profile_steps_marker"),
        "stopped": s.get("profile_steps_stopped"), "advise_exit": acode,
        "profile_lines": [x for x in ptext.splitlines() if x.startswith(("--profile-steps", "un-profiled step"))],
    }


def _pct(a: float, b: float) -> str:
    return f"{100 * (a / b - 1):+.1f}%" if b else "n/a"


def report(fig: dict[str, Any], graph: dict[str, float] | None) -> bool:
    """Print the FIGURE and CHECK lines of one workload; whether the step target held."""
    name, plain_s, ours = fig["name"], fig["plain_median_s"], fig["unprofiled_step_s"]
    for line in fig["profile_lines"]:
        print(f"FIGURE {name} says: {line}")
    if ours is None:
        print(f"FIGURE {name} step: no un-profiled step (marker {fig['marker']}, stopped {fig['stopped']}); plain "
              f"{plain_s * 1e3:.3f} ms (median of {fig['plain_steps']}); idle is an {fig['idle_source']} estimate")
        ok = False
    else:
        ok = abs(ours / plain_s - 1) <= 0.03
        print(f"FIGURE {name} step: un-profiled {ours * 1e3:.3f} ms (median of {fig['unprofiled_steps']}) vs plain "
              f"{plain_s * 1e3:.3f} ms (median of {fig['plain_steps']}): {_pct(ours, plain_s)}; profiled step "
              f"{(fig['profiled_step_s'] or 0) * 1e3:.3f} ms")
        if fig["same_run_script_s"]:
            print(f"FIGURE {name} same run: the script's own CUDA events for those steps "
                  f"{fig['same_run_script_s'] * 1e3:.3f} ms ({_pct(ours, fig['same_run_script_s'])} ours against them)")
        if len(fig["plain_medians_s"]) > 1:
            print(f"FIGURE {name} host drift: plain before {fig['plain_medians_s'][0] * 1e3:.3f} ms, plain after "
                  f"{fig['plain_medians_s'][1] * 1e3:.3f} ms; un-profiled {_pct(ours, max(fig['plain_medians_s']))} "
                  "against the slower")
    measured_idle_s = max(plain_s - fig["busy_per_step_s"], 0.0)
    kind = " (an estimate, ranked as a note)" if fig["claim_is_estimate"] else ""
    print(f"FIGURE {name} idle: claimed launch saving {fig['claimed_saving_per_step_s'] * 1e3:.3f} ms/step{kind}; profile "
          f"idle without the profiler {fig['idle_unprofiled_per_step_s'] * 1e3:.3f} ms/step ({fig['idle_source']}); "
          f"plain step - kernel busy {measured_idle_s * 1e3:.3f} ms/step (busy {fig['busy_per_step_s'] * 1e3:.3f} ms, "
          f"{100 * fig['busy_per_step_s'] / plain_s:.1f}% of the plain step)")
    if graph is not None:
        saving_ms = graph["eager_ms"] - graph["replay_ms"]
        print(f"FIGURE {name} graph: eager {graph['eager_ms']:.3f} ms, CUDA-graph replay {graph['replay_ms']:.3f} ms: "
              f"measured saving {saving_ms:.3f} ms/step vs claimed {fig['claimed_saving_per_step_s'] * 1e3:.3f}")
    window_s = fig["window_s"] or 0.0
    big = [f for f in fig["launch_findings"] if window_s and f[0] / window_s > 0.01]
    print(f"FIGURE {name} launch findings ranked above 1% of the window: {len(big)} (ranked ms, severity, claimed ms) "
          + json.dumps([[round(f[0] * 1e3, 3), f[1], round(f[2] * 1e3, 3)] for f in fig["launch_findings"]]))
    print(f"CHECK {name} un-profiled step within 3% of plain: {'ok' if ok else 'no'}")
    return ok


def graph_replay(out: Path, small: bool) -> dict[str, float] | None:
    args = WORKLOADS["gpt2-forward"][2 if small else 1]
    layers, batch, seq = args[1], args[3], args[5]
    code, _, text = _run([sys.executable, "-c", GRAPH, layers, batch, seq], out / "gpt2-graph.log")
    line = next((x for x in text.splitlines() if x.startswith("GRAPH ")), None)
    if code or line is None:
        print(f"FIGURE gpt2-forward graph: capture failed (exit {code}; {out / 'gpt2-graph.log'})")
        return None
    return {k: float(v) for k, v in (p.split("=") for p in line.split()[1:])}


def long_loop(out: Path, device: str, steps: int) -> dict[str, Any]:
    """A small eager training loop of `steps` steps, plain and under the default profile."""
    script = out / "loop2000.py"
    script.write_text(LOOP)
    code, plain_wall_s, text = _run([sys.executable, str(script), device, str(steps)], out / "loop.plain.log")
    pcode, prof_wall_s, ptext = _run([sys.executable, "-m", "rooflinectl", "profile", str(script), "-q", "-o",
                                  str(out / "loop.profile.json"), "--device", device, "--", device, str(steps)],
                                 out / "loop.profile.log")
    if code or pcode:
        print(f"FIGURE loop{steps}: failed (plain exit {code}, profile exit {pcode}; logs in {out})")
        return {"plain_exit": code, "profile_exit": pcode}
    loop_s = [float(x.split()[1]) for x in (text + ptext).splitlines() if x.startswith("LOOP_S ")]
    s = json.loads((out / "loop.profile.json").read_text())["summary"] if (out / "loop.profile.json").is_file() else {}
    ratio = prof_wall_s / plain_wall_s
    print(f"FIGURE loop{steps}: profile wall {prof_wall_s:.2f} s vs plain {plain_wall_s:.2f} s (ratio {ratio:.2f}x); "
          f"the loop itself plain / profiled: {loop_s}; sampled steps {s.get('profile_steps')}, timed without the "
          f"profiler {s.get('unprofiled_steps')}")
    print(f"CHECK loop{steps} profile within 1.3x of plain: {'ok' if ratio <= 1.3 else 'no'}")
    return {"plain_wall_s": plain_wall_s, "profile_wall_s": prof_wall_s, "ratio": ratio}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--only", nargs="*", default=ORDER)
    p.add_argument("--small", action="store_true", help="tiny sizes (a CPU check of this script)")
    p.add_argument("--loop-steps", type=int, default=2000)
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"device": args.device, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for name in [n for n in ORDER if n in args.only]:
        if name == "loop":
            results["loop"] = long_loop(args.out, args.device, args.loop_steps)
        elif (fig := measure(name, args.out, args.device, args.small)) is not None:
            graph = graph_replay(args.out, args.small) if name == "gpt2-forward" and args.device == "cuda" else None
            fig["graph"] = graph
            fig["step_ok"] = report(fig, graph)
            results[name] = fig
        (args.out / "steady_default.json").write_text(json.dumps(results, indent=1))  # what ran, if stopped later


if __name__ == "__main__":
    main()
