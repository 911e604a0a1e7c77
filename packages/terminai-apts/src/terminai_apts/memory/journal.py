"""``MemoryJournal``: the hot/warm/cold journal files that are the truth behind the index.

Layout under ``root``: ``hot/`` (``session_context.md`` ≤ 200 lines, ``active_goals.json``,
``recent_decisions.jsonl`` rolling 10, ``posture_log.jsonl`` rolling 20 transitions),
``warm/`` (``daily/YYYY-MM-DD.md`` written once, ``decisions/decisions.jsonl`` and
``posture_history.jsonl`` append-only and hash-chained) and ``cold/YYYY-Qn/`` (archive,
summary and a sealed SQLite shard). Writers hold ``root/.lock`` (``flock``); every file is
replaced by write-temp + fsync + rename, and compaction runs from a write-ahead plan whose
steps are idempotent, so a kill at any instant loses and duplicates nothing. Writes never
call back into anything: memory never triggers execution.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from terminai_apts import ledger
from terminai_apts.errors import IntegrityError, JournalError, UsageError
from terminai_apts.memory import compaction
from terminai_apts.memory.compaction import SCHEDULES
from terminai_apts.memory.journal_files import (
    DECISIONS,
    POSTURE,
    Entry,
    atomic_write,
    jsonl,
    now,
    numbered_lines,
    read_jsonl,
    week_end,
)
from terminai_apts.memory.records import NewMemory

__all__ = [
    "CHAIN",
    "DECISIONS",
    "GENESIS",
    "MAX_CONTEXT_LINES",
    "POSTURE",
    "SCHEDULES",
    "ChainProblem",
    "Entry",
    "MemoryJournal",
    "atomic_write",
    "entry_hash",
    "read_jsonl",
]

GENESIS = ledger.GENESIS
# sha256 over the canonical JSON without ``hash``: the scheme the launcher's audit ledger uses.
CHAIN = ledger.Chain(prev_prefix=False)
MAX_CONTEXT_LINES = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainProblem:
    """The first entry where a hash chain breaks: file, 1-based line and what is wrong."""

    file: str
    line: int
    reason: str


def entry_hash(body: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of an entry without its ``hash`` field."""
    return CHAIN.digest(body)


class MemoryJournal:
    """Write and compact the tiered journal; see the module docstring for the layout."""

    def __init__(self, root: str | Path, *, crash_at: Callable[[str], None] | None = None) -> None:
        self.root = Path(root)
        # Test hook: called with each compaction step name before it runs (crash injection).
        self._crash_at = crash_at or (lambda _step: None)

    # ------------------------------------------------------------ locking and appends
    @contextmanager
    def lock(self) -> Iterator[None]:
        """Serialise writers across processes with an exclusive ``flock`` on ``root/.lock``."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _tail_hash(self, rel: Path) -> str:
        entries, _bad = read_jsonl(self.root / rel, self.root)
        if entries:
            return str(entries[-1].data.get("hash", GENESIS))
        anchor = self.root / rel.with_suffix(".anchor")
        return anchor.read_text().strip() if anchor.exists() else GENESIS

    def _append(self, rel: Path, body: dict[str, Any]) -> dict[str, Any]:
        entry = CHAIN.seal(body, self._tail_hash(rel))
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        try:
            ledger.append(fd, [entry])
        finally:
            os.close(fd)
        return entry

    def _roll(self, rel: Path, body: dict[str, Any], keep: int) -> None:
        entries, _bad = read_jsonl(self.root / rel, self.root)
        kept = [*[e.data for e in entries][-(keep - 1) :], body]
        atomic_write(self.root / rel, jsonl(kept))

    # ------------------------------------------------------------ hot and warm writes
    def write_decision(
        self,
        decision: str,
        rationale: str,
        outcome: str,
        decision_maker: str,
        human_approval: bool,
        *,
        source: str = "agent",
        tags: tuple[str, ...] = (),
        timestamp: str | None = None,
        supersedes: str | None = None,
    ) -> dict[str, Any]:
        """Record a decision: appended to the warm chain and the rolling hot buffer of 10.

        ``supersedes`` is the ``hash`` of an earlier decision this one replaces; the index
        then marks the earlier record ``superseded_by`` this one.
        """
        if not str(decision).strip():
            raise UsageError("a decision needs text")
        body: dict[str, Any] = {
            "ts": timestamp or now(),
            "source": source,
            "kind": "decision",
            "decision": decision,
            "rationale": rationale,
            "outcome": outcome,
            "decision_maker": decision_maker,
            "human_approval": bool(human_approval),
            "tags": list(tags),
        }
        with self.lock():
            if supersedes is not None:
                known = {e.data.get("hash"): e.data.get("kind") for e in self.entries()[0]}
                if known.get(supersedes) != "decision":
                    raise UsageError(
                        f"supersedes={supersedes!r} names no recorded decision",
                        hint="pass the 'hash' of an earlier decision entry",
                    )
                body["supersedes"] = supersedes
            entry = self._append(DECISIONS, body)
            self._roll(Path("hot/recent_decisions.jsonl"), entry, 10)
        return entry

    def update_posture(
        self, posture: str, reason: str, *, source: str = "agent", timestamp: str | None = None
    ) -> dict[str, Any] | None:
        """Record a posture transition; the same posture twice in a row records nothing."""
        with self.lock():
            hot = Path("hot/posture_log.jsonl")
            entries, _bad = read_jsonl(self.root / hot, self.root)
            if entries and entries[-1].data.get("posture") == posture:
                return None
            previous = entries[-1].data.get("posture") if entries else None
            body = {
                "ts": timestamp or now(),
                "source": source,
                "kind": "posture",
                "posture": posture,
                "previous": previous,
                "reason": reason,
            }
            entry = self._append(POSTURE, body)
            self._roll(hot, entry, 20)
        return entry

    def write_session_context(self, text: str) -> None:
        """Replace ``hot/session_context.md``; more than 200 lines is refused."""
        if len(text.splitlines()) > MAX_CONTEXT_LINES:
            raise JournalError(
                f"session context has {len(text.splitlines())} lines, the limit is {MAX_CONTEXT_LINES}",
                hint="summarise older context into the daily summary",
            )
        with self.lock():
            atomic_write(self.root / "hot/session_context.md", text.encode())

    def set_goals(self, goals: list[dict[str, Any]]) -> None:
        """Atomically replace ``hot/active_goals.json``."""
        with self.lock():
            atomic_write(self.root / "hot/active_goals.json", json.dumps(goals, indent=2, sort_keys=True).encode())

    def write_daily_summary(self, day: str, text: str, *, source: str = "agent") -> Path:
        """Write ``warm/daily/YYYY-MM-DD.md`` once; an existing summary is never modified."""
        try:
            date.fromisoformat(day)
        except ValueError:
            raise UsageError(f"day {day!r} is not YYYY-MM-DD") from None
        path = self.root / "warm/daily" / f"{day}.md"
        with self.lock():
            if path.exists():
                raise JournalError(f"daily summary {path.name} already exists and is never modified")
            atomic_write(path, f"<!-- source: {source}; written: {now()} -->\n{text.rstrip()}\n".encode())
        return path

    # ------------------------------------------------------------ reading and verifying
    def entries(self) -> tuple[list[Entry], list[Entry]]:
        """All chained entries (cold archives oldest first, then warm) and quarantined lines."""
        good: list[Entry] = []
        bad: list[Entry] = []
        for path in self._chain_files():
            g, b = read_jsonl(path, self.root)
            good += g
            bad += b
        return good, bad

    def _chain_files(self) -> list[Path]:
        cold = sorted((self.root / "cold").glob("*-Q*/decisions.jsonl")) + sorted(
            (self.root / "cold").glob("*-Q*/posture_history.jsonl")
        )
        return [*cold, self.root / DECISIONS, self.root / POSTURE]

    def verify(self) -> list[ChainProblem]:
        """Check every chain (decisions, posture); report the first broken entry of each.

        A file with corrupt lines reports all of them (they are what ``quarantine`` moves)
        and stops that chain; otherwise the first entry that was edited, or that does not
        link to the one before it, is reported.
        """
        problems: list[ChainProblem] = []
        for stem in ("decisions", "posture_history"):
            files = sorted((self.root / "cold").glob(f"*-Q*/{stem}.jsonl"))
            files.append(self.root / (DECISIONS if stem == "decisions" else POSTURE))
            prev = GENESIS
            for path in files:
                links = list(CHAIN.walk(numbered_lines(path), prev=prev))
                name = str(path.relative_to(self.root))
                corrupt = [link for link in links if link.record is None]
                problems += [
                    ChainProblem(file=name, line=c.number, reason="corrupt line (quarantined)") for c in corrupt
                ]
                bad = corrupt[:1] or [link for link in links if not link.ok][:1]
                if bad and bad[0].record is not None:
                    reason = (
                        "entry edited (hash mismatch)"
                        if not bad[0].intact
                        else "entry removed or reordered before this one"
                    )
                    problems.append(ChainProblem(file=name, line=bad[0].number, reason=reason))
                if bad:
                    break
                if links and links[-1].record is not None:
                    prev = str(links[-1].record["hash"])
        return problems

    def verify_or_raise(self) -> None:
        problems = self.verify()
        if problems:
            p = problems[0]
            raise IntegrityError(
                f"journal chain broken at {p.file}:{p.line}: {p.reason}",
                hint="restore the file from backup; the index must not be trusted",
            )

    def quarantine(self) -> int:
        """Move corrupt lines out of the chained files into ``quarantine.jsonl``; returns how many."""
        moved = 0
        with self.lock():
            for path in self._chain_files():
                good, bad = read_jsonl(path, self.root)
                if not bad:
                    continue
                with open(self.root / "quarantine.jsonl", "ab") as fh:
                    for b in bad:
                        fh.write((json.dumps({"file": b.file, "line": b.line, "raw": b.data["raw"]}) + "\n").encode())
                    os.fsync(fh.fileno())
                atomic_write(path, jsonl([e.data for e in good]))
                moved += len(bad)
        return moved

    def records(self, *, cold: bool = True) -> list[NewMemory]:
        """Every journal entry and summary as an index record (uid = entry hash).

        ``cold=False`` leaves out archived quarters: they are searched in their sealed shards.
        """
        out: list[NewMemory] = []
        good, _bad = self.entries()
        for e in good:
            if not cold and e.file.startswith("cold/"):
                continue
            d = e.data
            tier = "cold" if e.file.startswith("cold/") else "warm"
            if d.get("kind") == "posture":
                title, content = (
                    f"posture: {d.get('posture')}",
                    f"{d.get('previous')} -> {d.get('posture')}: {d.get('reason')}",
                )
            else:
                title = str(d.get("decision", ""))[:200]
                content = (
                    f"{d.get('decision')}\nrationale: {d.get('rationale')}\noutcome: {d.get('outcome')}\n"
                    f"by: {d.get('decision_maker')} (human approval: {d.get('human_approval')})"
                )
            out.append(
                NewMemory(
                    uid=str(d.get("hash")),
                    date=str(d.get("ts", ""))[:19] + "Z",
                    recorded_at=now()[:19] + "Z",
                    title=title,
                    content=content,
                    summary=str(d.get("outcome", "")),
                    tags=tuple(str(t).lower() for t in d.get("tags", [])),
                    source=str(d.get("source", "")),
                    kind=str(d.get("kind", "note")),
                    tier=tier,
                    origin=f"{e.file}:{e.line}",
                    supersedes=str(d.get("supersedes") or ""),
                )
            )
        summaries = [(p, "daily", f"{p.stem}T23:59:59Z") for p in sorted((self.root / "warm/daily").glob("*.md"))]
        summaries += [(p, "weekly", week_end(p.stem)) for p in sorted((self.root / "warm/weekly").glob("*.md"))]
        for path, span, stamp in summaries:
            text = path.read_text(errors="replace")
            out.append(
                NewMemory(
                    uid=f"{span}:{path.stem}",
                    date=stamp,
                    recorded_at=now()[:19] + "Z",
                    title=f"{span} summary {path.stem}",
                    content=text,
                    summary=text[:200],
                    tags=("summary",),
                    source="journal",
                    kind="summary",
                    tier="warm",
                    origin=str(path.relative_to(self.root)),
                )
            )
        return out

    # ------------------------------------------------------------ compaction
    def compact(self, *, today: date | None = None, only: str | None = None) -> dict[str, int]:
        """Daily, weekly and quarterly compaction (see :func:`terminai_apts.memory.compaction.compact`)."""
        return compaction.compact(self, self._crash_at, today=today, only=only)
