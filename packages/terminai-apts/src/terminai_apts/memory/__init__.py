"""Memory: a read-only query API over an FTS5 index, and the tiered journal behind it.

``ThermalMemory`` (read-only, injected into sandboxed code as ``thermal``), ``TieredMemory``
(the same API over a journal's live index and sealed quarter shards), ``MemoryJournal``
(hot/warm/cold files, compaction, hash chains), and the immutable records they return.
"""

from __future__ import annotations

from terminai_apts.memory.api import ThermalMemory
from terminai_apts.memory.journal import MemoryJournal
from terminai_apts.memory.records import Batch, Facet, Hit, Memory, Provenance, Results
from terminai_apts.memory.tiered import TieredMemory, open_memory

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
