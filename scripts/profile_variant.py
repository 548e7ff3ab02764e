"""`rooflinectl profile` with one part of the capture switched off, to measure what that part
costs a launch-bound program (scripts/gpu.d/68-overhead.sh). Measurement only: not a user option.

python3 scripts/profile_variant.py no-modules PROFILE-ARGS...   (no nn.Module scopes)
python3 scripts/profile_variant.py op-scopes PROFILE-ARGS...    (scopes through the dispatched
    record-function ops, as before _RecordFunctionFast: scripts/bench_module_scopes.py)

NVML sampling is switched off the documented way (ROOFLINECTL_NVML_PERIOD_S=0), not here.
"""

from __future__ import annotations

import contextlib
import sys


def main() -> int:
    variant, args = sys.argv[1], sys.argv[2:]
    if variant not in ("no-modules", "op-scopes"):
        print(__doc__, file=sys.stderr)
        return 2
    import rooflinectl.capture.run.modules as modules
    import rooflinectl.capture.run.session as session

    if variant == "no-modules":
        # the session enters module_scopes() by this name, and gets back the function that turns them off
        session.module_scopes = lambda *_args: contextlib.nullcontext(lambda: None)
    else:
        modules.FAST_SCOPES = False
    from rooflinectl.cli.main import main as cli

    cli(["profile", *args], prog_name="rooflinectl")  # exits with the profile's own exit code
    return 0


if __name__ == "__main__":
    sys.exit(main())
