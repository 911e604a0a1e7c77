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
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from terminai_apts import durable, ledger
from terminai_apts.errors import IntegrityError, JournalError, UsageError
from terminai_apts.memory import store
from terminai_apts.memory.records import NewMemory

GENESIS = ledger.GENESIS
# sha256 over the canonical JSON without ``hash``: the scheme the launcher's audit ledger uses.
CHAIN = ledger.Chain(prev_prefix=False)
MAX_CONTEXT_LINES = 200
SCHEDULES = ("daily", "weekly", "quarterly")
DECISIONS = Path("warm/decisions/decisions.jsonl")
POSTURE = Path("warm/posture_history.jsonl")


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainProblem:
    """The first entry where a hash chain breaks: file, 1-based line and what is wrong."""

    file: str
    line: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """A parsed journal line with its location."""

    file: str
    line: int
    data: dict[str, Any]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def entry_hash(body: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of an entry without its ``hash`` field."""
    return CHAIN.digest(body)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` (see :func:`terminai_apts.durable.write`), creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    durable.write(path, data)


def read_jsonl(path: Path, root: Path) -> tuple[list[Entry], list[Entry]]:
    """Parsed entries and quarantined (unparsable) lines; a missing file is empty."""
    good: list[Entry] = []
    bad: list[Entry] = []
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return good, bad
    name = str(path.relative_to(root))
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except ValueError:
            bad.append(Entry(file=name, line=n, data={"raw": line.decode("utf-8", "replace")}))
            continue
        good.append(Entry(file=name, line=n, data=data))
    return good, bad


def _lines(path: Path) -> list[tuple[int, bytes]]:
    """Numbered non-blank lines (numbers count blank lines too, as ``read_jsonl`` does)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    return [(n, line) for n, line in enumerate(raw.splitlines(), start=1) if line.strip()]


def _week(day: str) -> str:
    year, week, _ = date.fromisoformat(day[:10]).isocalendar()
    return f"{year}-W{week:02d}"


def _week_end(week: str) -> str:
    return f"{date.fromisocalendar(int(week[:4]), int(week[6:]), 7).isoformat()}T23:59:59Z"


def _quarter(stamp: str) -> str:
    return f"{stamp[:4]}-Q{(int(stamp[5:7]) - 1) // 3 + 1}"


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
        atomic_write(self.root / rel, "".join(json.dumps(e, sort_keys=True) + "\n" for e in kept).encode())

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
            "ts": timestamp or _now(),
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
                "ts": timestamp or _now(),
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
            atomic_write(path, f"<!-- source: {source}; written: {_now()} -->\n{text.rstrip()}\n".encode())
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
                links = list(CHAIN.walk(_lines(path), prev=prev))
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
                atomic_write(path, "".join(json.dumps(e.data, sort_keys=True) + "\n" for e in good).encode())
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
                    recorded_at=_now()[:19] + "Z",
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
        summaries += [(p, "weekly", _week_end(p.stem)) for p in sorted((self.root / "warm/weekly").glob("*.md"))]
        for path, span, stamp in summaries:
            text = path.read_text(errors="replace")
            out.append(
                NewMemory(
                    uid=f"{span}:{path.stem}",
                    date=stamp,
                    recorded_at=_now()[:19] + "Z",
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
        """Daily, weekly and quarterly compaction from a write-ahead plan; resumes an interrupted run.

        ``only`` runs one schedule (``daily``, ``weekly`` or ``quarterly``); the default runs
        all three. Steps (each idempotent): ``plan`` (write ``compaction.wal``); daily:
        ``daily`` (gap markers for past days without a summary); weekly: ``weekly`` (a
        summary per closed ISO week, written once); quarterly: ``archive:Q`` (cold copies of
        each closed quarter's entries, then its summary and sealed shard) and ``truncate``
        (warm files keep only open-quarter entries, anchored to the archived tail hash);
        daily again: ``hot`` (trim the rolling buffers); ``done`` (remove the plan). A plan
        left by a killed run is finished first, whatever ``only`` asks.
        """
        if only not in (None, *SCHEDULES):
            raise UsageError(f"compaction schedule must be one of {', '.join(SCHEDULES)}, not {only!r}")
        today = today or datetime.now(UTC).date()
        with self.lock():
            wal = self.root / "compaction.wal"
            if wal.exists():
                plan = json.loads(wal.read_text())
            else:
                self._crash_at("plan")
                schedules = [only] if only else list(SCHEDULES)
                quarters: list[str] = []
                if "quarterly" in schedules:
                    good, _bad = self.entries()
                    current = _quarter(today.isoformat())
                    quarters = sorted(
                        {
                            _quarter(str(e.data.get("ts", "")))
                            for e in good
                            if not e.file.startswith("cold/") and _quarter(str(e.data.get("ts", ""))) < current
                        }
                    )
                plan = {"today": today.isoformat(), "schedules": schedules, "quarters": quarters}
                atomic_write(wal, json.dumps(plan).encode())
            day = date.fromisoformat(plan["today"])
            schedules = plan.get("schedules", list(SCHEDULES))
            gaps = weeks = 0
            if "daily" in schedules:
                self._crash_at("daily")
                gaps = self._daily_gaps(day)
            if "weekly" in schedules:
                self._crash_at("weekly")
                weeks = self._weekly_summaries(day)
            for quarter in plan["quarters"]:
                self._archive_quarter(quarter)
            if plan["quarters"]:
                self._crash_at("truncate")
                for rel in (DECISIONS, POSTURE):
                    self._truncate(rel, set(plan["quarters"]))
            if "daily" in schedules:
                self._crash_at("hot")
                self._trim_hot()
            self._crash_at("done")
            wal.unlink()
        return {"gap_markers": gaps, "weekly_summaries": weeks, "quarters_archived": len(plan["quarters"])}

    def _trim_hot(self) -> None:
        for rel, keep in ((Path("hot/recent_decisions.jsonl"), 10), (Path("hot/posture_log.jsonl"), 20)):
            entries, _b = read_jsonl(self.root / rel, self.root)
            if len(entries) > keep:
                atomic_write(
                    self.root / rel,
                    "".join(json.dumps(e.data, sort_keys=True) + "\n" for e in entries[-keep:]).encode(),
                )

    def _weekly_summaries(self, today: date) -> int:
        """One ``warm/weekly/YYYY-Www.md`` per closed ISO week with activity; never rewritten."""
        good, _bad = self.entries()
        by_week: dict[str, list[dict[str, Any]]] = {}
        for e in good:
            if e.data.get("ts"):
                by_week.setdefault(_week(str(e.data["ts"])), []).append(e.data)
        written = 0
        for week, items in sorted(by_week.items()):
            path = self.root / "warm/weekly" / f"{week}.md"
            if week >= _week(today.isoformat()) or path.exists():
                continue
            lines = ["<!-- source: compaction -->", f"# {week}: {len(items)} entries", ""]
            for d in sorted(items, key=lambda d: str(d.get("ts"))):
                what = (
                    d.get("decision")
                    if d.get("kind") == "decision"
                    else f"posture -> {d.get('posture')}: {d.get('reason')}"
                )
                lines.append(f"- {str(d.get('ts'))[:10]} {what}")
            atomic_write(path, ("\n".join(lines) + "\n").encode())
            written += 1
        return written

    def _daily_gaps(self, today: date) -> int:
        good, _bad = self.entries()
        days = {str(e.data.get("ts", ""))[:10] for e in good if e.data.get("ts")}
        if not days:
            return 0
        written = 0
        day = date.fromisoformat(min(days))
        while day < today:
            path = self.root / "warm/daily" / f"{day.isoformat()}.md"
            if day.isoformat() not in days and not path.exists():
                atomic_write(
                    path,
                    f"<!-- source: compaction; gap marker -->\nNo activity recorded on {day.isoformat()}.\n".encode(),
                )
                written += 1
            day += timedelta(days=1)
        return written

    def _archive_quarter(self, quarter: str) -> None:
        folder = self.root / "cold" / quarter
        for rel in (DECISIONS, POSTURE):
            target = folder / rel.name
            self._crash_at(f"archive:{quarter}:{rel.name}")
            if target.exists():
                continue  # rename is atomic: an existing archive is complete
            entries, _bad = read_jsonl(self.root / rel, self.root)
            chosen = [e.data for e in entries if _quarter(str(e.data.get("ts", ""))) == quarter]
            atomic_write(target, "".join(json.dumps(d, sort_keys=True) + "\n" for d in chosen).encode())
        self._crash_at(f"summary:{quarter}")
        summary = folder / "summary.md"
        if not summary.exists():
            entries, _b = read_jsonl(folder / DECISIONS.name, self.root)
            lines = [f"# {quarter}: {len(entries)} decisions", ""] + [
                f"- {e.data.get('ts', '')[:10]} {e.data.get('decision', '')}" for e in entries
            ]
            atomic_write(summary, ("\n".join(lines) + "\n").encode())
        self._crash_at(f"shard:{quarter}")
        shard = folder / "shard.sqlite"
        if not shard.exists():
            recs = [r for r in self.records() if r.origin.startswith(f"cold/{quarter}/")]
            store.build(shard, recs, first_id=store.shard_base(quarter) + 1)
            shard.chmod(0o444)  # sealed: opened with immutable=1 from now on

    def _truncate(self, rel: Path, quarters: set[str]) -> None:
        entries, bad = read_jsonl(self.root / rel, self.root)
        keep = [e.data for e in entries if _quarter(str(e.data.get("ts", ""))) not in quarters]
        dropped = [e.data for e in entries if _quarter(str(e.data.get("ts", ""))) in quarters]
        if not dropped:
            return
        # The first kept entry links to the last archived one: record that anchor first.
        atomic_write(self.root / rel.with_suffix(".anchor"), str(dropped[-1]["hash"]).encode())
        lines = [json.dumps(d, sort_keys=True) for d in keep] + [b.data["raw"] for b in bad]
        atomic_write(self.root / rel, "".join(line + "\n" for line in lines).encode())
