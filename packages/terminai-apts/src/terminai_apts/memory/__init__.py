"""Memory: a read-only query API over FTS5 index shards, and the tiered journal behind it.

``ThermalMemory`` (read-only, injected into sandboxed code as ``thermal``: one index file,
or a journal's live index and sealed quarter shards), ``open_memory``, ``MemoryJournal``
(hot/warm/cold files, compaction, hash chains), and the immutable records they return.
``TieredMemory`` is a deprecated name of ``ThermalMemory``, which now opens journal
directories itself.
"""

from __future__ import annotations

import warnings

from terminai_apts.memory.api import ThermalMemory, open_memory
from terminai_apts.memory.journal import MemoryJournal
from terminai_apts.memory.records import Batch, Facet, Hit, Memory, Provenance, Results

__all__ = [
    "Batch",
    "Facet",
    "Hit",
    "Memory",
    "MemoryJournal",
    "Provenance",
    "Results",
    "ThermalMemory",
    "TieredMemory",
    "open_memory",
]


def __getattr__(name: str) -> object:
    # T-APTS contract 1.2.0 names TieredMemory: it stays importable, with a warning.
    if name == "TieredMemory":
        warnings.warn(
            "terminai_apts.memory.TieredMemory is deprecated: ThermalMemory opens journal directories too",
            DeprecationWarning,
            stacklevel=2,
        )
        return ThermalMemory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
