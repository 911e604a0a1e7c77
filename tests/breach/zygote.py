"""``python -m tests.breach.zygote FD [STEP,...]``: the production zygote with the raw
runner, optionally with named isolation steps switched off (to show a test fails then)."""

from __future__ import annotations

import fcntl  # noqa: F401  (attacks use it: loaded before the fork, as production loads what runs use)
import sys

from terminai_apts.executor.process import zygote

from tests.breach.runner import run_raw

if __name__ == "__main__":
    skip = frozenset(s for s in (sys.argv[2] if len(sys.argv) > 2 else "").split(",") if s)
    zygote.main(runner=run_raw, skip=skip)
