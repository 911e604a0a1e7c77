"""``python -m tests.breach.zygote_leaky FD``: the breach zygote (raw runner) whose runs
keep every descriptor the zygote held when it forked them (its own clean-up after the
fork and step 6b both switched off), to show that ``test_descriptors`` catches a run
that holds another run's pipes."""

from __future__ import annotations

from terminai_apts.executor.process import zygote

from tests.breach.runner import run_raw

if __name__ == "__main__":
    zygote.Zygote._forked = lambda self: None  # type: ignore[method-assign]
    zygote.main(runner=run_raw, skip=frozenset({"descriptors"}))
