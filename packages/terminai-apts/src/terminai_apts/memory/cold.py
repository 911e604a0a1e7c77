"""The cold tier's archive files: daily-summary tarballs, quarter summaries and the keyword index.

``cold/archive/YYYY-Qn.tar.gz`` holds the quarter's ``daily/YYYY-MM-DD.md`` summaries once
the quarter ended more than 90 days ago (same files ⇒ same bytes: sorted names, mtime 0,
uid/gid 0, no owner names, gzip mtime 0); ``cold/summaries/YYYY-Qn-summary.md`` is the
quarter's narrative summary; ``cold/index/decisions_index.json`` maps each keyword of the
archived decisions to the days it occurs on. Shared by compaction (writes) and
:mod:`terminai_apts.memory.checks` (verify).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
import zlib
from collections import Counter
from collections.abc import Mapping
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from terminai_apts.memory import journal_files as jf

ARCHIVE_DIR = "cold/archive"
SUMMARIES_DIR = "cold/summaries"
DECISIONS_INDEX = "cold/index/decisions_index.json"
DAILY_RETENTION_DAYS = 90
_WORD = re.compile(r"[a-z0-9][a-z0-9_]{2,}")
_STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "into",
        "onto",
        "over",
        "under",
        "after",
        "before",
        "was",
        "were",
        "are",
        "has",
        "have",
        "had",
        "not",
        "but",
        "all",
        "any",
        "its",
        "our",
        "out",
        "per",
        "via",
        "than",
        "then",
        "them",
        "they",
        "when",
        "what",
        "which",
        "who",
        "why",
        "will",
        "would",
    ]
)


def archive_rel(quarter: str) -> str:
    return f"{ARCHIVE_DIR}/{quarter}.tar.gz"


def summary_rel(quarter: str) -> str:
    return f"{SUMMARIES_DIR}/{quarter}-summary.md"


def quarter_last_day(quarter: str) -> date:
    year, q = int(quarter[:4]), int(quarter[-1])
    return date(year + q // 4, q % 4 * 3 + 1, 1) - timedelta(days=1)


def daily_due(quarter: str, today: date) -> bool:
    """True when every day of ``quarter`` is more than 90 days before ``today``."""
    return (today - quarter_last_day(quarter)).days > DAILY_RETENTION_DAYS


def archive_bytes(files: Mapping[str, bytes]) -> bytes:
    """A deterministic ``.tar.gz`` of ``files`` (member name → content)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(files):
            data = files[name]
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def archive_members(path: Path) -> dict[str, bytes]:
    """The regular files in an archive (name → content); empty when it is missing or unreadable."""
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            out: dict[str, bytes] = {}
            for member in tar.getmembers():
                fh = tar.extractfile(member) if member.isfile() else None
                if fh is not None:
                    out[member.name] = fh.read()
            return out
    except (OSError, EOFError, tarfile.TarError, zlib.error):
        return {}


def archived_quarters(root: Path) -> set[str]:
    """Quarters whose daily summaries were archived (their tarball exists)."""
    return {p.name.removesuffix(".tar.gz") for p in (root / ARCHIVE_DIR).glob("*-Q*.tar.gz")}


def archived_dailies(root: Path) -> dict[str, tuple[str, bytes]]:
    """Each archived daily summary: ``warm/daily/DAY.md`` → (its archive under root, its content)."""
    out: dict[str, tuple[str, bytes]] = {}
    for path in sorted((root / ARCHIVE_DIR).glob("*-Q*.tar.gz")):
        rel = path.relative_to(root).as_posix()
        for name, data in archive_members(path).items():
            out[f"warm/{name}"] = (rel, data)
    return out


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def keywords(entry: Mapping[str, Any]) -> set[str]:
    """An archived decision's keywords: its tags and the words (3+ letters) of its text, lowercased."""
    words = set(_WORD.findall(str(entry.get("decision", "")).lower())) - _STOP
    tags = {str(t).lower() for t in entry.get("tags", []) or [] if str(t).strip()}
    return words | tags


def decisions_index(root: Path) -> bytes | None:
    """``cold/index/decisions_index.json`` as it must read (None: nothing archived yet).

    Derived from the archived decision chains: ``{"keyword": ["YYYY-MM-DD", ...]}``, keys
    and days sorted, so it is rebuilt byte for byte and verify compares it with them.
    """
    chains = sorted((root / "cold").glob("*-Q*/decisions.jsonl"))
    if not chains:
        return None
    index: dict[str, set[str]] = {}
    for chain in chains:
        entries, _bad = jf.read_jsonl(chain, root)
        for e in entries:
            day = jf.entry_day(e.data)
            if not day:
                continue
            for word in keywords(e.data):
                index.setdefault(word, set()).add(day)
    return (json.dumps({k: sorted(v) for k, v in sorted(index.items())}, indent=2) + "\n").encode()


def quarter_summary(quarter: str, decisions: list[dict[str, Any]], postures: list[dict[str, Any]]) -> bytes:
    """The quarter's narrative summary (generated from its archived entries)."""
    decisions = sorted(decisions, key=jf.entry_sort_key)
    postures = sorted(postures, key=jf.entry_sort_key)
    days = sorted({jf.entry_day(d) for d in decisions + postures} - {""})
    moved = [str(p.get("to_posture", p.get("posture"))) for p in postures]
    makers = Counter(str(d.get("decision_maker", "")) for d in decisions)
    tags = Counter(str(t).lower() for d in decisions for t in d.get("tags", []) or [])
    lines = [
        "<!-- source: compaction; generated from the quarter's archived entries -->",
        f"# Quarterly Summary — {quarter}",
        "",
        f"**Decisions**: {len(decisions)}  ",
        f"**Posture Transitions**: {len(postures)}  ",
        f"**Posture Range**: {jf.posture_range(moved)}  ",
        f"**Active Days**: {len(days)}" + (f" ({days[0]} to {days[-1]})" if days else ""),
        "",
        "## Decisions",
        *(
            f"- {jf.entry_day(d)}: {d.get('decision', '')} ({d.get('decision_maker', '')})"
            + (" [human approved]" if d.get("human_approval") else "")
            for d in decisions
        ),
        *([] if decisions else ["- none recorded"]),
        "",
        "## Decision Makers",
        *(f"- {who or 'unnamed'}: {n}" for who, n in sorted(makers.items())),
        *([] if makers else ["- none"]),
        "",
        "## Recurring Tags",
        *(f"- {tag}: {n} decisions" for tag, n in sorted(tags.items()) if n > 1),
        *([] if any(n > 1 for n in tags.values()) else ["- none"]),
        "",
        f"Daily summaries of {quarter} are in {archive_rel(quarter)} once the quarter is 90 days old.",
    ]
    return ("\n".join(lines) + "\n").encode()
