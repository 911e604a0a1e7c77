"""``python -m tests.unit.executor.zygote_stays FD``: the production zygote whose return
to its own namespaces after forking a run is switched off, to show that
``test_run_namespaces`` catches a zygote left in a run's namespaces."""

from __future__ import annotations

from terminai_apts.executor.os_layer import namespaces
from terminai_apts.executor.process import zygote

if __name__ == "__main__":
    namespaces.Home.back = lambda self: None  # type: ignore[method-assign]
    zygote.main()
