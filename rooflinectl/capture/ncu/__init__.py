"""The counters tier: the workload run again under Nsight Compute (`ncu`) as a subprocess.

torch.profiler cannot read hardware counters on CUDA 13 builds of torch, so `ncu` is the way:
- metrics.py: the smallest metric list (names checked on an H200) and what each counter is worth
  in FLOPs and bytes;
- sampling.py: which launches to measure (each (kernel, launch config) group once, not every
  launch) and which launches ncu will have measured, from the profiler's own launch sequence;
- command.py: finding ncu, what it supports, and its command line;
- csv_parse.py: its CSV output, one MeasuredLaunch per profiled launch;
- run.py: the subprocess, with progress, a timeout and a one-sentence reason when it fails;
- child.py: what runs under ncu: the user's script or function, counted region only.
"""
