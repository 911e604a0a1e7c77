"""The memory journal's rollback evidence has no place in a cluster session: refused, not dropped.

``run`` mounts the host's checkpoint and witness (``TERMINAI_JOURNAL_CHECKPOINT``,
``TERMINAI_JOURNAL_WITNESS``, :mod:`terminai_sandbox.common.journal_trust`) into the
session because the journal they describe is in the working directory, mounted at the same
path. A pod's journal lives on its ``workspace`` volume, an ``emptyDir`` that starts empty:
a host checkpoint would describe entries that journal never held (every read would report a
rollback), and a host path cannot be mounted on a node anyway. Leaving the variables out
silently would let an operator believe the cluster session is held to them, so ``kube``
refuses while either is set (exit 3, before any registry request).
"""

from __future__ import annotations

from collections.abc import Mapping

from terminai_sandbox.common.journal_trust import CHECKPOINT_ENV, WITNESS_ENV
from terminai_sandbox.errors import ConfigError


def refuse_host_journal(env: Mapping[str, str]) -> None:
    """Refuse the journal's host checkpoint or witness, naming the variable set."""
    for name in (CHECKPOINT_ENV, WITNESS_ENV):
        if env.get(name, ""):
            raise ConfigError(
                f"{name} is set, but a cluster session's journal starts empty on the pod's workspace volume: "
                "a host file cannot hold it to that journal's entries",
                hint=f"unset {name} for 'kube' (it applies to 'run'), and checkpoint the pod's journal from "
                "its volume instead (see docs/KUBERNETES.md)",
            )
