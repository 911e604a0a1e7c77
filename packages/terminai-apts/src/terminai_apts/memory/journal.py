"""``MemoryJournal``: the hot/warm/cold journal files that are the truth behind the index.

Layout under ``root``: ``hot/`` (``session_context.md`` ≤ 200 lines, ``active_goals.json``,
``recent_decisions.jsonl`` rolling 10, ``posture_log.jsonl`` rolling 20 transitions),
``warm/`` (``daily/YYYY-MM-DD.md`` written once, ``decisions/decisions.jsonl`` and
``posture_history.jsonl`` append-only and hash-chained, ``weekly/YYYY-Www-summary.md``)
and ``cold/`` (``YYYY-Qn/``: archived chains, summary and a sealed SQLite shard;
``archive/YYYY-Qn.tar.gz``: daily summaries 90+ days old; ``summaries/YYYY-Qn-summary.md``;
``index/decisions_index.json``; see :mod:`~terminai_apts.memory.cold`). Entries carry
``ts`` (unix seconds) and ``iso``; :func:`~terminai_apts.memory.journal_files.entry_time`
reads either, and the ISO-text ``ts`` of journals written before. ``warm/seals.jsonl`` chains the sha256 of every
derived file a query can read (summaries, shards, the live ``index.sqlite``) and
``quarantine.jsonl`` the lines moved out of the chains; :mod:`~terminai_apts.memory.checks`
verifies every file. Writers hold ``root/.lock`` (``flock``); chains are appended in
constant time (:mod:`~terminai_apts.memory.chainfile`), every other file is replaced by
write-temp + fsync + rename, and compaction runs from a write-ahead plan whose steps are
idempotent, so a kill at any instant loses and duplicates nothing. Writes never call back
into anything: memory never triggers execution.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

from terminai_apts import durable, ledger
from terminai_apts.errors import IntegrityError, JournalError, UsageError
from terminai_apts.memory import chainfile, checkpoint, checks, compaction, seals, state, store
from terminai_apts.memory import cold as cold_tier
from terminai_apts.memory.checks import HOT_DECISIONS, HOT_POSTURE, QUARANTINE, ChainProblem
from terminai_apts.memory.compaction import SCHEDULES
from terminai_apts.memory.journal_files import (
    DECISIONS,
    POSTURE,
    Entry,
    atomic_write,
    entry_iso,
    entry_kind,
    jsonl,
    kept_bytes,
    now,
    posture_from,
    posture_to,
    quarter,
    read_jsonl,
    stamp,
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

GENESIS = chainfile.GENESIS
SESSION_CONTEXT = Path("hot/session_context.md")
ACTIVE_GOALS = Path("hot/active_goals.json")
CHAIN = chainfile.CHAIN
MAX_CONTEXT_LINES = 200


def entry_hash(body: dict[str, Any]) -> str:
    """sha256 over the canonical JSON of an entry without its ``hash`` field."""
    return CHAIN.digest(body)


def _stamp(timestamp: str | float | None) -> tuple[float, str]:
    try:
        return stamp(timestamp)
    except ValueError as exc:
        raise UsageError(str(exc), hint="pass ISO 8601 UTC (2026-01-04T19:59:34Z) or unix seconds") from None


def _with_iso(entry: Mapping[str, Any]) -> dict[str, Any]:
    item = dict(entry)
    if not isinstance(item.get("iso"), str):
        item["iso"] = entry_iso(entry)
    return item


def _lock_file(path: Path) -> int:
    """The lock file's descriptor, opened without blocking: only a regular file is a lock."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | os.O_NOFOLLOW, 0o666)
    except OSError as exc:
        raise JournalError(
            f"cannot open the journal's lock {path}: {exc.strerror}", hint="it must be a regular file: remove it"
        ) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise JournalError(f"the journal's lock {path} is not a regular file", hint="remove it; writers recreate it")
    return fd


class MemoryJournal:
    """Write and compact the tiered journal; see the module docstring for the layout."""

    def __init__(self, root: str | Path, *, crash_at: Callable[[str], None] | None = None) -> None:
        self.root = Path(root)
        # Test hook: called with each compaction step name before it runs (crash injection).
        self._crash_at = crash_at or (lambda _step: None)
        self._sealing = False
        self._verified: dict[str, list[int]] | None = None
        self._verified_chains: dict[str, list[object]] | None = None

    # ------------------------------------------------------------ locking and appends
    @contextmanager
    def lock(self) -> Iterator[None]:
        """Serialise writers across processes with an exclusive ``flock`` on ``root/.lock``."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(_lock_file(self.root / ".lock"), "a") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            changed = durable.track()
            try:
                yield
            finally:
                durable.untrack()
                try:
                    # What this writer changed, as it left it (see memory.state): readers compare.
                    state.record(self.root, changed, verified=self._verified, chains=self._verified_chains)
                finally:
                    self._verified = self._verified_chains = None
                    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def inspect_and_record(self) -> checks.Report:
        """:meth:`inspect` under the lock; a journal found unchanged is recorded as such for readers."""
        with self.lock():
            return self._verify_clean()

    def _verify_clean(self) -> checks.Report:
        """:meth:`inspect`, remembering the files as they were before it when it found nothing changed."""
        before = state.snapshot(self.root)
        report = self.inspect()
        if not report.problems and not report.pending:
            self._verified = before
            # The lengths verify counted: a checkpoint made from them is no more than readers expect.
            self._verified_chains = {stem: [len(h), h[-1] if h else None] for stem, h in report.hashes.items()}
        return report

    def _anchor(self, rel: Path) -> str:
        anchor = self.root / rel.with_suffix(".anchor")
        return anchor.read_text().strip() if anchor.exists() else GENESIS

    def _append(self, rel: Path, body: dict[str, Any]) -> dict[str, Any]:
        """Append to a chain in constant time: its head is read from the file's tail, not the whole file."""
        return chainfile.append(self.root / rel, body, genesis=lambda: self._anchor(rel), on_torn=self._torn(str(rel)))

    def _torn(self, rel: str) -> Callable[[int, bytes], None]:
        """What to do with a torn last line of ``rel``: move it to the quarantine chain."""

        def keep(offset: int, raw: bytes) -> None:
            self._quarantine_line(rel, {"offset": offset, "reason": "torn last line"}, raw)

        return keep

    def _quarantine_line(self, rel: str, where: dict[str, Any], raw: bytes) -> None:
        body = {"kind": "quarantine", "file": rel, **where, **kept_bytes(self.root, raw), "ts": now()}
        # A torn quarantine record only repeats bytes still in the file it came from: cut it.
        chainfile.append(self.root / QUARANTINE, body, on_torn=lambda _offset, _raw: None)
        if not self._sealing:  # sealing may quarantine a torn seal line: that one is sealed next time
            self._sealing = True
            try:
                seals.seal_file(self.root, str(QUARANTINE), self._torn(str(seals.SEALS)), prefix=True)
            finally:
                self._sealing = False

    def seal(self, rel: str) -> None:
        """Record the current sha256 of ``root/rel`` in the seal chain (the caller holds the lock)."""
        seals.seal_file(self.root, rel, self._torn(str(seals.SEALS)))

    def _roll(self, rel: Path, entry: dict[str, Any], keep: int, chain: Path) -> None:
        """Add ``entry`` to a rolling hot buffer: the last ``keep`` entries of ``chain``.

        When the buffer does not end at ``entry``'s predecessor (a crash came between the
        chain append and this write), it is rebuilt from the chain's tail instead.
        """
        # Only the last line is parsed: the others are kept as the bytes they are (a line
        # edited by hand stays for verify to report, never re-spelled into a clean one).
        try:
            lines = [line + b"\n" for line in (self.root / rel).read_bytes().split(b"\n") if line.strip()]
        except FileNotFoundError:
            lines = []
        last = ledger.parse(lines[-1]) if lines else None
        if (last is not None and last.get("hash") == entry.get("prev")) or (
            not lines and entry.get("prev") == self._anchor(chain)
        ):
            data = b"".join([*lines, jsonl([entry])][-keep:])
        else:
            data = jsonl([dict(r) for r in self._chain_tail(chain, keep)])
        atomic_write(self.root / rel, data, derived=True)

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
        timestamp: str | float | None = None,
        supersedes: str | None = None,
    ) -> dict[str, Any]:
        """Record a decision: appended to the warm chain and the rolling hot buffer of 10.

        The entry carries ``ts`` (unix seconds) and ``iso`` (``2026-01-04T19:59:34Z``);
        ``timestamp`` (ISO 8601 text or unix seconds) sets them, the default is now.
        ``supersedes`` is the ``hash`` of an earlier decision this one replaces; the index
        then marks the earlier record ``superseded_by`` this one.
        """
        if not str(decision).strip():
            raise UsageError("a decision needs text")
        ts, iso = _stamp(timestamp)
        body: dict[str, Any] = {
            "ts": ts,
            "iso": iso,
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
            self._roll(HOT_DECISIONS, entry, 10, DECISIONS)
        return entry

    def update_posture(
        self,
        posture: str,
        reason: str = "",
        *,
        source: str = "agent",
        timestamp: str | float | None = None,
        active_count: int | None = None,
        tes_score: float | None = None,
        trigger: str | None = None,
        agent_changes: Mapping[str, str] | None = None,
    ) -> dict[str, Any] | None:
        """Record a posture transition (the seed's ``update_posture_log``); returns the entry or None.

        The entry carries ``from_posture``/``to_posture`` (and, as before, ``previous``/
        ``posture``), ``active_count``, ``tes_score``, ``trigger`` and ``agent_changes``
        (``{"navigator": "stalled→idling"}``), ``null``/``{}`` when not given. The posture
        log records transitions, not polls: the same posture as the last entry records
        nothing, unless the call names a ``trigger`` or ``agent_changes`` (the station
        changed while its posture held, as in the seed's example).
        """
        if not str(posture).strip():
            raise UsageError("a posture entry needs a posture")
        changes = dict(agent_changes or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in changes.items()):
            raise UsageError("agent_changes maps agent names to text such as 'stalled→idling'")
        ts, iso = _stamp(timestamp)
        with self.lock():
            hot = HOT_POSTURE
            entries, _bad = read_jsonl(self.root / hot, self.root)
            previous = posture_to(entries[-1].data) if entries else None
            if previous == posture and not trigger and not changes:
                return None
            body = {
                "ts": ts,
                "iso": iso,
                "source": source,
                "kind": "posture",
                "posture": posture,
                "previous": previous,
                "from_posture": previous,
                "to_posture": posture,
                "reason": reason,
                "active_count": active_count,
                "tes_score": None if tes_score is None else float(tes_score),
                "trigger": trigger,
                "agent_changes": changes,
            }
            entry = self._append(POSTURE, body)
            self._roll(hot, entry, 20, POSTURE)
        return entry

    def write_session_context(self, text: str) -> None:
        """Replace ``hot/session_context.md``; more than 200 lines is refused."""
        if len(text.splitlines()) > MAX_CONTEXT_LINES:
            raise JournalError(
                f"session context has {len(text.splitlines())} lines, the limit is {MAX_CONTEXT_LINES}",
                hint="summarise older context into the daily summary",
            )
        with self.lock():
            atomic_write(self.root / SESSION_CONTEXT, text.encode())

    def set_goals(
        self,
        goals: list[dict[str, Any]],
        *,
        completed_today: int = 0,
        deferred: list[Any] | None = None,
        timestamp: float | None = None,
    ) -> dict[str, Any]:
        """Atomically replace ``hot/active_goals.json`` with the seed's snapshot; returns it.

        Written as ``{"timestamp", "goals", "completed_today", "deferred"}``; each goal gets
        the seed's fields it lacks (``id`` ``g-NNN``, ``priority`` ``normal``, ``summary``,
        ``agent``, ``created_at`` = the snapshot's time, ``status`` ``active``); fields it
        has are kept as given.
        """
        if not isinstance(goals, list) or not all(isinstance(g, dict) for g in goals):
            raise UsageError("goals must be a list of objects", hint='e.g. [{"summary": "ship", "priority": "high"}]')
        if isinstance(completed_today, bool) or not isinstance(completed_today, int) or completed_today < 0:
            raise UsageError(f"completed_today must be a count, not {completed_today!r}")
        when, _iso = _stamp(timestamp)
        snapshot = {
            "timestamp": when,
            "goals": [
                {
                    "id": f"g-{n:03d}",
                    "priority": "normal",
                    "summary": str(g.get("goal", "")),
                    "agent": "",
                    "created_at": when,
                    "status": "active",
                    **g,
                }
                for n, g in enumerate(goals, start=1)
            ],
            "completed_today": completed_today,
            "deferred": list(deferred or []),
        }
        with self.lock():
            atomic_write(self.root / ACTIVE_GOALS, json.dumps(snapshot, indent=2, sort_keys=True).encode())
        return snapshot

    # ------------------------------------------------------------ readers (never raise)
    def read_session_context(self) -> str | None:
        """``hot/session_context.md`` as text; None when it is missing, unreadable or not UTF-8."""
        try:
            return (self.root / SESSION_CONTEXT).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def read_active_goals(self) -> dict[str, Any]:
        """The goal snapshot in the seed's form; an empty one when the file is missing or corrupt.

        A bare list (the form journals were written in before) is read as the snapshot's goals.
        """
        empty: dict[str, Any] = {"timestamp": None, "goals": [], "completed_today": 0, "deferred": []}
        try:
            data = json.loads((self.root / ACTIVE_GOALS).read_bytes())
        except (OSError, ValueError):
            return empty
        if isinstance(data, list):
            data = {"goals": data}
        if not isinstance(data, dict):
            return empty
        goals = data.get("goals")
        deferred = data.get("deferred")
        done = data.get("completed_today")
        stamp_ = data.get("timestamp")
        return {
            "timestamp": stamp_ if isinstance(stamp_, int | float) and not isinstance(stamp_, bool) else None,
            "goals": [g for g in goals if isinstance(g, dict)] if isinstance(goals, list) else [],
            "completed_today": done if isinstance(done, int) and not isinstance(done, bool) else 0,
            "deferred": deferred if isinstance(deferred, list) else [],
        }

    def recent_decisions(self, count: int = 10) -> list[dict[str, Any]]:
        """The newest ``count`` decisions of ``hot/recent_decisions.jsonl`` (at most 10), oldest first.

        Corrupt lines are skipped; each entry is a copy with ``iso`` filled in from ``ts``
        when it lacks one (entries written before carry an ISO ``ts`` only).
        """
        return [_with_iso(d) for d in self._hot(HOT_DECISIONS, count)]

    def posture_trend(self, count: int = 5) -> list[dict[str, Any]]:
        """The last ``count`` posture transitions of ``hot/posture_log.jsonl`` (at most 20), oldest first.

        What a status display shows as the trend (the seed's "last 5 entries"). Each entry is
        a copy with ``iso``, ``from_posture`` and ``to_posture`` filled in from ``ts``,
        ``previous`` and ``posture`` when it lacks them.
        """
        out = []
        for d in self._hot(HOT_POSTURE, count):
            item = _with_iso(d)
            item.setdefault("to_posture", posture_to(d))
            item.setdefault("from_posture", posture_from(d))
            out.append(item)
        return out

    def _hot(self, rel: Path, count: int) -> list[dict[str, Any]]:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise UsageError(f"count must be a non-negative integer, not {count!r}")
        try:
            entries, _bad = read_jsonl(self.root / rel, self.root)
        except (OSError, ValueError):
            return []
        return [e.data for e in entries[-count:]] if count else []

    def write_daily_summary(self, day: str, text: str, *, source: str = "agent") -> Path:
        """Write ``warm/daily/YYYY-MM-DD.md`` once; an existing summary is never modified."""
        try:
            date.fromisoformat(day)
        except ValueError:
            raise UsageError(f"day {day!r} is not YYYY-MM-DD") from None
        path = self.root / "warm/daily" / f"{day}.md"
        if quarter(day) in cold_tier.archived_quarters(self.root):
            raise JournalError(
                f"the daily summaries of {quarter(day)} were archived into {cold_tier.archive_rel(quarter(day))}",
                hint="an archived quarter's summaries are never added to or modified",
            )
        data = f"<!-- source: {source}; written: {now()} -->\n{text.rstrip()}\n".encode()
        with self.lock():
            if path.exists():
                raise JournalError(f"daily summary {path.name} already exists and is never modified")
            # Sealed before it is written: a crash in between leaves a seal whose file is
            # missing, which verify reports as an interrupted write, not as a removal.
            seals.record(
                self.root, f"warm/daily/{day}.md", hashlib.sha256(data).hexdigest(), self._torn(str(seals.SEALS))
            )
            atomic_write(path, data)
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

    def _chain_tail(self, chain: Path, count: int) -> list[dict[str, object]]:
        """The last ``count`` entries of a chain, oldest first (from its tail, then its archives)."""
        stem = chain.stem
        files = [*sorted((self.root / "cold").glob(f"*-Q*/{stem}.jsonl")), self.root / chain]
        out: list[dict[str, object]] = []
        for path in reversed(files):
            out = chainfile.tail_records(path, count - len(out)) + out
            if len(out) >= count:
                break
        return out

    def _chain_files(self) -> list[Path]:
        cold = sorted((self.root / "cold").glob("*-Q*/decisions.jsonl")) + sorted(
            (self.root / "cold").glob("*-Q*/posture_history.jsonl")
        )
        return [*cold, self.root / DECISIONS, self.root / POSTURE]

    def inspect(self) -> checks.Report:
        """Every file checked (see :mod:`terminai_apts.memory.checks`): problems and pending recoveries."""
        return checks.inspect(self.root)

    def verify(self) -> list[ChainProblem]:
        """What was changed: chains (first broken entry of each), anchors, hot buffers, sealed files.

        A file with corrupt lines reports all of them (they are what ``quarantine`` moves)
        and stops that chain; otherwise the first entry that was edited, or that does not
        link to the one before it, is reported. Interrupted operations are not problems:
        :meth:`inspect` lists them.
        """
        return self.inspect().problems

    def verify_or_raise(self) -> None:
        problems = self.verify()
        if problems:
            p = problems[0]
            raise IntegrityError(
                f"journal chain broken at {p.file}:{p.line}: {p.reason}",
                hint="restore the file from backup; the index must not be trusted",
            )

    def checkpoint(self, out: Path, secret: bytes) -> dict[str, Any]:
        """Verify the journal and write a checkpoint of its chains to ``out`` (see :mod:`checkpoint`).

        Refused when the journal does not verify, has an operation to finish, or holds less
        than (or other entries than) a checkpoint already at ``out`` saw: a checkpoint never
        blesses a changed or rolled-back journal.
        """
        if out.resolve().is_relative_to(self.root.resolve()):
            raise UsageError(
                f"the checkpoint {out} would be inside the journal it vouches for",
                hint="write it where the journal's writers cannot (a rollback of the journal would take it along)",
            )
        with self.lock():
            report = self._verify_clean()
            if report.problems or report.pending:
                first = (report.problems or report.pending)[0]
                raise IntegrityError(
                    f"refusing to checkpoint a journal that does not verify: {first.file}:{first.line}: {first.reason}",
                    hint=f"run `terminai-apts memory verify {self.root}` and restore or repair what it names",
                )
            if out.exists():
                seen, refused = checkpoint.read(out, secret)
                if refused:
                    raise IntegrityError(f"{out}: {refused}", hint="move it aside, or write the checkpoint elsewhere")
                lost = [stem for stem, hashes in report.hashes.items() if checkpoint.behind(hashes, seen.get(stem))]
                if lost:
                    raise IntegrityError(
                        f"the journal holds less than the checkpoint {out} saw ({', '.join(lost)}): rolled back",
                        hint="restore the newer journal from backup; never checkpoint over a newer checkpoint",
                    )
            chains = {stem: [len(h), h[-1] if h else None] for stem, h in report.hashes.items()}
            return checkpoint.write(out, chains, secret)

    def quarantine(self) -> int:
        """Move corrupt lines out of the chained files into the ``quarantine.jsonl`` chain; returns how many."""
        moved = 0
        with self.lock():
            for path in self._chain_files():
                good, bad = read_jsonl(path, self.root)
                if not bad:
                    continue
                for b in bad:
                    where = {"line": b.line, "reason": f"corrupt line ({b.data['why']})"}
                    self._quarantine_line(b.file, where, b.data["bytes"])
                atomic_write(path, jsonl([e.data for e in good]))
                moved += len(bad)
        return moved

    def repair(self) -> list[str]:
        """Finish what interrupted operations left (never touching history); returns what was done.

        Completes an interrupted compaction, quarantines torn last lines, removes
        temporary files, rebuilds hot buffers that lack the newest entry and gives up a
        daily summary sealed but never written.
        """
        done = [f"quarantined the torn last line of {rel}" for rel in self.repair_tails()]
        if (self.root / checks.WAL).exists():
            self.compact()
            done.append("completed the interrupted compaction")
        report = self.inspect()
        with self.lock():
            done += [f"removed {rel}" for rel in compaction.remove_temporaries(self.root)]
            for p in report.pending:
                if p.file in (str(HOT_DECISIONS), str(HOT_POSTURE)):
                    chain = DECISIONS if p.file == str(HOT_DECISIONS) else POSTURE
                    keep = checks.HOT_KEEP[Path(p.file)]
                    atomic_write(self.root / p.file, jsonl([dict(r) for r in self._chain_tail(chain, keep)]))
                    done.append(f"rebuilt {p.file} from the chain")
                elif p.file.startswith("warm/daily/") and "never written" in p.reason:
                    seals.record(self.root, p.file, None, self._torn(str(seals.SEALS)))
                    done.append(f"gave up the unwritten {p.file}")
        return done

    def repair_tails(self) -> list[str]:
        """Quarantine and cut the torn last line of every chain in the warm tier; returns the files."""
        repaired: list[str] = []
        with self.lock():
            for rel in (DECISIONS, POSTURE, seals.SEALS, QUARANTINE):
                path = self.root / rel
                if not path.exists():
                    continue
                durable.changing(path)
                fd = os.open(path, os.O_RDWR | os.O_APPEND)
                try:
                    if chainfile.repair_torn_tail(fd, self._torn(str(rel))):
                        repaired.append(str(rel))
                finally:
                    os.close(fd)
        return repaired

    def seal_existing(self) -> list[str]:
        """Seal the files a journal written before seals were kept holds; refused once seals exist."""
        with self.lock():
            if (self.root / seals.SEALS).exists():
                raise JournalError(
                    f"{self.root / seals.SEALS} exists: only a journal from before seals is sealed this way",
                    hint="files not sealed in a sealed journal were added outside its API: restore or remove them",
                )
            found = sorted(
                str(p.relative_to(self.root))
                for p in self.root.rglob("*")
                if p.is_file() and checks.SEALED.fullmatch(str(p.relative_to(self.root)))
            )
            for rel in found:
                self.seal(rel)
        return found

    def build_index(self, extra: list[NewMemory], *, rebuild: bool) -> tuple[str, int]:
        """Build or update the live index (open quarters and summaries, plus ``extra``) and seal it.

        A journal whose chains or sealed files were changed is refused (the index would
        serve the changed text). The seal is withdrawn first: a crash while the index is
        written leaves an index that ``verify`` reports as an interrupted write (rebuild
        it), not as tampering.
        """
        db = self.root / checks.LIVE_INDEX
        with self.lock():
            problems = self._verify_clean().problems
            changed = [p for p in problems if p.file != checks.LIVE_INDEX]
            if changed:
                # The index would serve (and its seal bless) whatever was changed.
                raise IntegrityError(
                    f"refusing to index a changed journal: {changed[0].file}:{changed[0].line}: {changed[0].reason}",
                    hint=f"run `terminai-apts memory verify {self.root}` and restore the files it names",
                )
            # A changed index is never extended (the new seal would bless the change): rebuilt.
            rebuild = rebuild or len(changed) < len(problems)
            if rebuild:
                self._rebuild_earlier_shards()
            records = self.records(cold=False) + extra
            seals.record(self.root, checks.LIVE_INDEX, None, self._torn(str(seals.SEALS)))
            if rebuild or not db.exists():
                n, what = store.build(db, records, meta=seals.SEALED_META), "built"
            else:
                durable.changing(db)
                n, what = store.append(db, records), "added"
            self.seal(checks.LIVE_INDEX)
        return what, n

    def _rebuild_earlier_shards(self) -> None:
        """Sealed quarter shards built with an earlier index schema (which readers refuse),
        rebuilt from their quarter's archive as compaction built them, and sealed again (the
        newest seal record of a file is what it must hold). The caller holds the lock and has
        verified the journal, archives and old shards included, so nothing changed is
        rebuilt into a fresh seal. The old seal is withdrawn first: a crash meanwhile leaves
        an interrupted write for ``verify`` to report, not tampering."""
        for shard in sorted((self.root / "cold").glob(f"*/{compaction.SHARD_NAME}")):
            if store.meta_value(shard, "schema_version") == store.SCHEMA_VERSION:
                continue
            rel = shard.relative_to(self.root).as_posix()
            seals.record(self.root, rel, None, self._torn(str(seals.SEALS)))
            compaction.build_quarter_shard(self, shard.parent.name)
            self.seal(rel)

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
            kind = entry_kind(d)
            if kind == "posture":
                moved_to, moved_from = posture_to(d), posture_from(d)
                why = d.get("reason") or d.get("trigger")
                title, content = f"posture: {moved_to}", f"{moved_from} -> {moved_to}: {why}"
            else:
                title = str(d.get("decision", ""))[:200]
                content = (
                    f"{d.get('decision')}\nrationale: {d.get('rationale')}\noutcome: {d.get('outcome')}\n"
                    f"by: {d.get('decision_maker')} (human approval: {d.get('human_approval')})"
                )
            when = entry_iso(d)
            out.append(
                NewMemory(
                    uid=str(d.get("hash") or entry_hash(d)),
                    date=when or "0001-01-01T00:00:00Z",
                    recorded_at=now()[:19] + "Z",
                    title=title,
                    content=content,
                    summary=str(d.get("outcome", "")),
                    tags=tuple(str(t).lower() for t in d.get("tags", []) or []),
                    source=str(d.get("source", d.get("decision_maker", ""))),
                    kind=kind,
                    tier=tier,
                    origin=f"{e.file}:{e.line}",
                    supersedes=str(d.get("supersedes") or ""),
                )
            )
        summaries = [(p, "daily", f"{p.stem}T23:59:59Z") for p in sorted((self.root / "warm/daily").glob("*.md"))]
        summaries += [(p, "weekly", week_end(p.stem)) for p in sorted((self.root / "warm/weekly").glob("*.md"))]
        texts = [(str(p.relative_to(self.root)), p.stem, span, when, p.read_bytes()) for p, span, when in summaries]
        # Daily summaries moved into cold/archive/ stay searchable under the same uid.
        for rel, (archive, data) in sorted(cold_tier.archived_dailies(self.root).items()):
            day = Path(rel).stem
            texts.append((f"{archive}:{rel.removeprefix('warm/')}", day, "daily", f"{day}T23:59:59Z", data))
        for origin, stem, span, when, raw in texts:
            text = raw.decode("utf-8", "replace")
            out.append(
                NewMemory(
                    uid=f"{span}:{stem.removesuffix('-summary')}",
                    date=when,
                    recorded_at=now()[:19] + "Z",
                    title=f"{span} summary {stem.removesuffix('-summary')}",
                    content=text,
                    summary=text[:200],
                    tags=("summary",),
                    source="journal",
                    kind="summary",
                    tier="cold" if origin.startswith("cold/") else "warm",
                    origin=origin,
                )
            )
        return out

    # ------------------------------------------------------------ compaction
    def compact(self, *, today: date | None = None, only: str | None = None) -> dict[str, int]:
        """Daily, weekly and quarterly compaction (see :func:`terminai_apts.memory.compaction.compact`).

        Torn last lines are quarantined first, so no archive or truncation copies one.
        """
        self.repair_tails()
        return compaction.compact(self, self._crash_at, today=today, only=only)
