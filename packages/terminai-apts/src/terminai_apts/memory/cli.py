"""``terminai-apts memory ...``: build the index and query it from a shell (``--json`` for agents)."""

from __future__ import annotations

import argparse
import json
import math
import os
import sqlite3
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from terminai_apts.boundary import what_is
from terminai_apts.errors import IntegrityError, JournalError, MemoryQueryError, MemoryStoreError, UsageError
from terminai_apts.memory import checks, keyed, render, store
from terminai_apts.memory.api import ThermalMemory, open_memory
from terminai_apts.memory.journal import SCHEDULES, MemoryJournal
from terminai_apts.memory.journal_files import entry_time
from terminai_apts.memory.query import normalize_date
from terminai_apts.memory.records import (
    BLOB_CONTENT,
    BLOB_TITLE,
    LATER_ID,
    NULL_CONTENT,
    NULL_SUMMARY,
    NULL_TITLE,
    STORED_COLUMNS,
    AsStored,
    NewMemory,
    Results,
    split_tags,
)
from terminai_apts.memory.tiers import LIVE_INDEX


def import_archive(path: Path) -> list[NewMemory]:
    """Records from an archive in the original schema, opened read-only (the file is untouched).

    Every row is taken as it is: a NULL, a date with a time or none, an impossible date.
    The seed's view of each (:class:`AsStored`) keeps its values as stored and its place in
    the archive's own ``ORDER BY date DESC``; the index's event time is the date read as
    ISO 8601, or ``UNDATED`` when it is not one.
    """
    if not path.is_file():
        raise MemoryStoreError(f"archive {path} {what_is(path)}", hint="pass an archive file in the original schema")
    conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
    try:
        declared = {str(r[1]).lower(): str(r[2]) for r in conn.execute("PRAGMA table_info(memories)")}
        rows = conn.execute(_ARCHIVE_ROWS).fetchall()
        later = _later_rows(conn, rows)
    except sqlite3.DatabaseError as exc:
        raise MemoryStoreError(
            f"{path} is not an archive in the original schema: {exc}",
            hint="expected a table memories(id, date, title, content, summary, tags, source, confidence)",
        ) from None
    finally:
        conn.close()
    affinity = tuple(column_affinity(declared.get(name, "")) for name in STORED_COLUMNS)
    out: list[NewMemory] = []
    uids: set[str] = set()
    for position, (mid, when, title, content, summary, tags, source, confidence, *raw) in enumerate(rows):
        # Rows sharing an id (NULLs, which a TEXT PRIMARY KEY admits, or b"m1" beside "m1")
        # are all the seed's: each is kept, the later ones under ``ID#ROW`` in the index.
        uid = _text(mid)
        if uid in uids:
            uid = f"{uid}#{position}"
            while uid in uids:
                uid += "#"
        uids.add(uid)
        nulls = (title is None) * NULL_TITLE | (content is None) * NULL_CONTENT | (summary is None) * NULL_SUMMARY
        nulls |= isinstance(title, bytes) * BLOB_TITLE | isinstance(content, bytes) * BLOB_CONTENT
        nulls |= (position in later) * LATER_ID
        out.append(
            NewMemory(
                uid=uid,  # the archive's id, or ID#ROW for a later row sharing it (the seed's calls show ``mid``)
                date=(stamp := _event_time(when)),
                recorded_at=stamp,
                title=_text(title),
                content=_text(content),
                summary=_text(summary),
                tags=split_tags(_text(tags), fold=False),  # as written; the tag index folds case
                source=_text(source),
                confidence=_confidence(confidence),
                kind="note",
                tier="archive",
                origin=f"{path.name}#memories/{uid}",
                stored=AsStored(
                    values=(mid, when, tags, source, confidence),
                    texts=(_not_text(raw[0]), _not_text(raw[1]), _not_text(raw[2])),
                    nulls=nulls,
                    position=position,
                    affinity=affinity,
                ),
            )
        )
    return out


# A number stored in title, content or summary (a column without text affinity keeps it) as
# SQLite's ``LIKE`` reads it (``1.0e+20``, where Python writes ``1e+20``), so the record's text is
# what the seed's statement matches; then each as stored, what the seed's ``Memory`` shows.
_ARCHIVE_COLUMNS = """id, date,
  CASE WHEN typeof(title) IN ('integer', 'real') THEN CAST(title AS TEXT) ELSE title END,
  CASE WHEN typeof(content) IN ('integer', 'real') THEN CAST(content AS TEXT) ELSE content END,
  CASE WHEN typeof(summary) IN ('integer', 'real') THEN CAST(summary AS TEXT) ELSE summary END,
  tags, source, confidence, title, content, summary"""
_ARCHIVE_ROWS = "SELECT " + _ARCHIVE_COLUMNS + " FROM memories ORDER BY date DESC"  # noqa: S608 - constants
# The row the seed's ``get`` answers with for an id several rows share.
_FIRST_WITH_ID = "SELECT " + _ARCHIVE_COLUMNS + " FROM memories WHERE id = ? LIMIT 1"  # noqa: S608 - constants


def _not_text(value: object) -> object:
    """A title, content or summary the index must keep as stored (a number, a blob), else None."""
    return None if value is None or isinstance(value, str) else value


def _later_rows(conn: sqlite3.Connection, rows: list[tuple[object, ...]]) -> set[int]:
    """Positions of the rows whose id an earlier row shares, as the archive's own
    ``WHERE id = ? LIMIT 1`` decides which one is first (NULL ids match nothing)."""
    shared: dict[object, list[int]] = {}
    for position, row in enumerate(rows):
        if row[0] is not None:
            shared.setdefault(row[0], []).append(position)
    later: set[int] = set()
    for mid, positions in shared.items():
        if len(positions) > 1:
            first = conn.execute(_FIRST_WITH_ID, (mid,)).fetchone()
            kept = next((p for p in positions if rows[p] == first), positions[0])
            later.update(p for p in positions if p != kept)
    return later


# Event time of an archive row whose date is NULL or not ISO 8601: before every real date.
UNDATED = "0001-01-01T00:00:00Z"


def _event_time(value: object) -> str:
    try:
        return normalize_date(_text(value))
    except MemoryQueryError:
        return UNDATED


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _confidence(value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 1.0
    return number if math.isfinite(number) else 1.0


def column_affinity(declared: str) -> str:
    """SQLite's affinity of a column declared ``declared`` (its rules 1 to 5, in their order)."""
    kind = declared.upper()
    if "INT" in kind:
        return "INTEGER"
    if any(word in kind for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in kind or not kind.strip():
        return "BLOB"
    if any(word in kind for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def _emit(args: argparse.Namespace, value: Any, text: str) -> int:
    print(json.dumps(value, default=str) if args.json else text)
    return 0


def _results(args: argparse.Namespace, res: Results) -> int:
    value = {
        "total": res.total,
        "truncated": res.truncated,
        "elapsed_ms": res.elapsed_ms,
        "plan": res.plan,
        "hits": [{**asdict(h.memory), "score": h.score, "snippet": h.snippet} for h in res.hits],
    }
    return _emit(args, value, render.results(res))


def _indexed(db: Path) -> int:
    """Records in an existing index (0 when the file is not one: building replaces it)."""
    try:
        conn = store.open_writer(db)
    except MemoryStoreError:
        return 0
    try:
        return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    finally:
        conn.close()


def _cmd_index(args: argparse.Namespace) -> int:
    db = Path(args.db)
    if db.is_dir():
        journal_root(args.db)  # a plain directory is refused, not made into a journal
    records: list[NewMemory] = []
    if not db.is_dir() and not args.journal and not args.archive:
        raise UsageError(
            f"no source to index into {db}",
            hint="name one: --journal DIR, --archive FILE (repeatable), or pass a journal directory as DB",
        )
    if args.journal:
        records += MemoryJournal(journal_root(args.journal)).records()
    for archive in args.archive or []:
        records += import_archive(Path(archive))
    if db.is_dir():
        # A journal directory gets its live index (sealed in its chain); sealed quarters are
        # searched in their shards.
        journal = MemoryJournal(db)
        live = db / LIVE_INDEX
        if args.rebuild and live.exists() and not records and not journal.records(cold=False):
            _refuse_empty_rebuild(live)
        what, n = journal.build_index(records, rebuild=args.rebuild)
        return _emit(
            args,
            {what: n},
            f"{what} {live} with {n} records" if what == "built" else f"added {n} new records to {live}",
        )
    if args.rebuild and db.exists() and not records:
        _refuse_empty_rebuild(db)
    if args.rebuild or not db.exists():
        n = store.build(db, records)
        return _emit(args, {"built": n}, f"built {db} with {n} records")
    n = store.append(db, records)
    return _emit(args, {"added": n}, f"added {n} new records to {db}")


def _refuse_empty_rebuild(db: Path) -> None:
    held = _indexed(db)
    if held:
        raise UsageError(
            f"refusing to rebuild {db} from sources holding no records: it would drop all {held}",
            hint="check the --journal/--archive paths; to start over, delete the index file first",
        )


def _open(args: argparse.Namespace) -> ThermalMemory:
    return open_memory(args.db)


def _cmd_search(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        return _results(
            args,
            mem.search_results(
                args.query,
                tags=args.tags,
                limit=args.limit,
                offset=args.offset,
                order=args.order,
                since=args.since,
                until=args.until,
                raw=args.raw,
                exhaustive=not args.capped,
            ),
        )


def _cmd_grep(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        return _results(args, mem.grep_results(args.pattern, limit=args.limit, since=args.since, until=args.until))


def _cmd_find(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        return _results(args, mem.find(args.substring, limit=args.limit, since=args.since, until=args.until))


def _cmd_filter(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        return _results(
            args,
            mem.filter_results(
                source=args.source,
                min_confidence=args.min_confidence,
                tags=args.tags,
                limit=args.limit,
                since=args.since,
                until=args.until,
                kind=args.kind,
            ),
        )


def _cmd_count(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        n = mem.count_results(args.query, since=args.since, until=args.until)
        return _emit(args, {"count": n}, str(n))


def _cmd_get(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        rec = mem.require(args.id)
    return _emit(args, asdict(rec), render.record(rec))


def _cmd_summarize(args: argparse.Namespace) -> int:
    with _open(args) as mem:
        text = mem.summarize(args.query, max_results=args.max_results)
    return _emit(args, {"summary": text}, render.block(text))


JOURNAL_TIERS = ("hot", "warm", "cold")  # a journal's root holds at least one of these


def journal_root(path: str) -> Path:
    """An existing journal directory, or a :class:`JournalError` naming what ``path`` is instead."""
    root = Path(path)
    if not root.exists():
        raise JournalError(f"journal directory {root} does not exist", hint="pass the journal's root directory")
    if not root.is_dir():
        what = "a memory index file" if store.is_sqlite(root) else "a file"
        raise JournalError(
            f"{root} is {what}, not a journal directory",
            hint="pass the journal's root directory (the one holding hot/, warm/ and cold/)",
        )
    if not any((root / tier).is_dir() for tier in JOURNAL_TIERS):
        # Checked before anything is opened or locked: a plain directory is left as it was
        # (no .lock, no warm/), and verify or compact never reports on a journal that is not there.
        raise JournalError(
            f"{root} is not a journal directory: it holds none of {', '.join(t + '/' for t in JOURNAL_TIERS)}",
            hint="pass the journal's root directory; to build an index file, name a file (DIR/index.sqlite)",
        )
    return root


def _cmd_verify(args: argparse.Namespace) -> int:
    journal = MemoryJournal(journal_root(args.journal))
    repaired = journal.repair() if args.repair else []
    # A journal found unchanged is recorded as such, so readers open it with a stat per file.
    report = journal.inspect_and_record() if os.access(journal.root, os.W_OK) else journal.inspect()
    lines = [*repaired, *(f"{p.file}:{p.line}: {p.reason}" for p in report.problems)]
    lines += [f"{p.file}:{p.line}: pending: {p.reason}" for p in report.pending]
    found = {
        "ok": not report.problems and not report.pending,
        "problems": [asdict(p) for p in report.problems],
        "pending": [asdict(p) for p in report.pending],
        "repaired": repaired,
    }
    if found["ok"]:
        return _emit(args, found, "\n".join([*repaired, "journal intact"]))
    if not args.json:  # under --json the error object below carries the report
        print("\n".join(lines))
    if report.problems:
        first = report.problems[0]
        raise IntegrityError(
            f"journal chain broken at {first.file}:{first.line}: {first.reason}",
            hint="restore the named files from backup; answers from this journal must not be trusted",
            details=found,
        )
    command = (
        f"terminai-apts memory compact {journal.root}"
        if report.compaction
        else f"terminai-apts memory verify {journal.root} --repair"
    )
    first = report.pending[0]
    raise JournalError(
        f"journal needs recovery, nothing recorded was changed: {first.file}: {first.reason}",
        hint=f"complete it: {command}",
        details=found,
    )


def _cmd_compact(args: argparse.Namespace) -> int:
    journal = MemoryJournal(journal_root(args.journal))
    sealed = journal.seal_existing() if args.seal_existing else []
    moved = journal.quarantine()
    report = {**journal.compact(only=args.only), "quarantined": moved}
    if args.seal_existing:
        report["sealed"] = len(sealed)
    return _emit(args, report, ", ".join(f"{k}={v}" for k, v in report.items()))


def _writable(args: argparse.Namespace) -> MemoryJournal:
    """The journal a write goes to; ``--create`` makes a new one (its ``hot/`` folder) first."""
    root = Path(args.journal)
    if args.create:
        if root.exists() and not root.is_dir():
            raise JournalError(f"{root} is a file, not a journal directory", hint="pass the journal's root directory")
        (root / "hot").mkdir(parents=True, exist_ok=True)
    elif not root.exists():
        raise JournalError(
            f"journal directory {root} does not exist", hint="pass --create to start a new journal there"
        )
    return MemoryJournal(journal_root(args.journal))


def _when(value: str | None) -> str | float | None:
    """``--ts``: unix seconds (a number) or ISO 8601 text."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return value


def _agent_changes(items: list[str] | None) -> dict[str, str]:
    changes: dict[str, str] = {}
    for item in items or []:
        name, sep, change = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(
                f"--agent-change {item!r} is not NAME=CHANGE", hint="e.g. --agent-change 'triage=stalled→idling'"
            )
        changes[name.strip()] = change
    return changes


def _entry_line(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "no transition: the posture is unchanged (pass --trigger or --agent-change to record an event)"
    if entry.get("kind") == "posture":
        return f"{entry['iso']} posture {entry['from_posture']} -> {entry['to_posture']}  {entry['hash'][:12]}"
    return f"{entry['iso']} decision: {entry['decision']}  {entry['hash'][:12]}"


def _cmd_journal_decide(args: argparse.Namespace) -> int:
    journal = _writable(args)
    entry = journal.write_decision(
        args.decision,
        args.rationale,
        args.outcome,
        args.by,
        args.human_approval,
        source=args.source,
        tags=tuple(args.tag or ()),
        timestamp=_when(args.ts),
        supersedes=args.supersedes,
    )
    return _emit(args, entry, _entry_line(entry))


def _cmd_journal_posture(args: argparse.Namespace) -> int:
    journal = _writable(args)
    entry = journal.update_posture(
        args.posture,
        args.reason,
        source=args.source,
        timestamp=_when(args.ts),
        active_count=args.active_count,
        tes_score=args.tes_score,
        trigger=args.trigger,
        agent_changes=_agent_changes(args.agent_change),
    )
    return _emit(args, {"recorded": entry is not None, "entry": entry}, _entry_line(entry))


def _seed_entry(journal: MemoryJournal, data: Any, where: str, source: str) -> dict[str, Any] | None:
    """Write one entry given in the journal files' own format (a decision or a posture line)."""
    if not isinstance(data, dict):
        raise UsageError(f"{where}: an entry must be a JSON object")
    # The entry's own time, read as the journal reads it (its ``iso``, else its ``ts``).
    found = entry_time(data)
    when = None if found is None else found.timestamp()
    if found is None and (data.get("ts") is not None or data.get("iso") is not None):
        raise UsageError(f"{where}: its ts/iso is not a time", hint='"ts": unix seconds, "iso": "2026-01-04T19:59:34Z"')
    if "decision" in data:
        return journal.write_decision(
            str(data["decision"]),
            str(data.get("rationale", "")),
            str(data.get("outcome", "")),
            str(data.get("decision_maker", "")),
            data.get("human_approval") is True,
            source=str(data.get("source", source)),
            tags=tuple(str(t) for t in data.get("tags", []) or []),
            timestamp=when,
        )
    if "to_posture" in data or "posture" in data:
        count, score = data.get("active_count"), data.get("tes_score")
        changes = data.get("agent_changes") or {}
        if not isinstance(changes, dict):
            raise UsageError(f"{where}: agent_changes must be an object")
        return journal.update_posture(
            str(data.get("to_posture", data.get("posture"))),
            str(data.get("reason", "")),
            source=str(data.get("source", source)),
            timestamp=when,
            active_count=count if isinstance(count, int) and not isinstance(count, bool) else None,
            tes_score=float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None,
            trigger=None if data.get("trigger") is None else str(data["trigger"]),
            agent_changes={str(k): str(v) for k, v in changes.items()},
        )
    raise UsageError(
        f"{where}: neither a decision nor a posture entry",
        hint='a decision has "decision" (and rationale, outcome, decision_maker, human_approval);'
        ' a posture entry has "to_posture"',
    )


def _cmd_journal_append(args: argparse.Namespace) -> int:
    journal = _writable(args)
    lines = [args.entry] if args.entry is not None else sys.stdin.read().splitlines()
    parsed: list[tuple[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = "--entry" if args.entry is not None else f"stdin line {number}"
        try:
            parsed.append((where, json.loads(line)))
        except ValueError as exc:
            raise UsageError(f"{where} is not JSON: {exc}", hint="one JSON object per line") from None
    if not parsed:
        raise UsageError("no entry to append", hint="pass --entry JSON or JSON lines on stdin")
    written = [_seed_entry(journal, data, where, args.source) for where, data in parsed]
    return _emit(
        args,
        {"appended": sum(e is not None for e in written), "entries": written},
        "\n".join(_entry_line(e) for e in written),
    )


def _read_input(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    try:
        return Path(name).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {name}: {exc}") from None


def _cmd_journal_goals(args: argparse.Namespace) -> int:
    if args.set is None:
        goals = MemoryJournal(journal_root(args.journal)).read_active_goals()
    else:
        journal = _writable(args)
        try:
            given = json.loads(_read_input(args.set))
        except ValueError as exc:
            raise UsageError(f"goals in {args.set} are not JSON: {exc}") from None
        if isinstance(given, dict):
            items, deferred = given.get("goals", []), given.get("deferred", [])
            done = given.get("completed_today", 0) if args.completed_today is None else args.completed_today
        else:
            items, deferred, done = given, [], args.completed_today or 0
        goals = journal.set_goals(items, completed_today=done, deferred=deferred)
    text = "\n".join(
        f"{g.get('id')} [{g.get('priority')}] {g.get('status')}: {g.get('summary')} ({g.get('agent')})"
        for g in goals["goals"]
    )
    return _emit(args, goals, text or "no active goals")


def _cmd_journal_context(args: argparse.Namespace) -> int:
    if args.set is None:
        text = MemoryJournal(journal_root(args.journal)).read_session_context()
        return _emit(args, {"session_context": text}, text if text is not None else "no session context")
    journal = _writable(args)
    text = _read_input(args.set)
    journal.write_session_context(text)
    return _emit(args, {"written": len(text.splitlines())}, f"session context: {len(text.splitlines())} lines")


def _cmd_journal_read(args: argparse.Namespace) -> int:
    journal = MemoryJournal(journal_root(args.journal))
    # The recent decisions and posture trend are the chains' tails: never shown from a
    # journal verify refuses (a hand-edited buffer would otherwise be read as history).
    checks.refuse_changed(journal.root)
    context = journal.read_session_context()
    goals = journal.read_active_goals()
    decisions = journal.recent_decisions(args.decisions)
    trend = journal.posture_trend(args.posture)
    found = {"session_context": context, "active_goals": goals, "recent_decisions": decisions, "posture_trend": trend}
    lines = [context or "(no session context)", "", "goals:"]
    lines += [f"  {g.get('id')} [{g.get('priority')}] {g.get('summary')}" for g in goals["goals"]]
    lines += ["recent decisions:"]
    lines += [f"  [{d['iso']}] {d.get('decision')} ({d.get('decision_maker')})" for d in decisions]
    lines += ["posture trend:"]
    lines += [f"  [{p['iso']}] {p['from_posture']} -> {p['to_posture']}" for p in trend]
    return _emit(args, found, "\n".join(lines))


def _cmd_journal_checkpoint(args: argparse.Namespace) -> int:
    journal = MemoryJournal(journal_root(args.journal))
    made = journal.checkpoint(Path(args.out), keyed.read_key(os.path.abspath(args.key), "--key"))
    lines = [f"checkpoint {args.out} ({made['iso']}):"]
    lines += [
        f"  {stem}: {count} entries, last {str(head)[:12]}" for stem, (count, head) in sorted(made["chains"].items())
    ]
    return _emit(args, made, "\n".join(lines))


def _register_journal(sub: argparse._SubParsersAction[Any]) -> None:
    """``memory journal {append,decide,posture,goals,context,checkpoint,read} ROOT``: writers and readers."""
    journal = sub.add_parser("journal", help="write and read a journal's entries, goals and session context")
    actions = journal.add_subparsers(dest="journal_command", metavar="ACTION", required=True)

    def action(name: str, func: Any, helptext: str, *, writes: bool) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = actions.add_parser(name, help=helptext)
        p.add_argument("journal", help="journal root directory")
        p.add_argument("--json", action="store_true", help="print one JSON object")
        if writes:
            p.add_argument("--create", action="store_true", help="start a new journal at ROOT if there is none")
            p.add_argument("--source", default="agent", help="who writes (default: agent)")
        p.set_defaults(func=func)
        return p

    p = action("decide", _cmd_journal_decide, "record a decision", writes=True)
    p.add_argument("--decision", required=True, help="what was decided")
    p.add_argument("--rationale", default="", help="why")
    p.add_argument("--outcome", default="", help="what it led to")
    p.add_argument("--by", required=True, help="the decision maker (cbo, agent1, human, ...)")
    p.add_argument("--human-approval", action="store_true", help="a person approved it")
    p.add_argument("--tag", action="append", help="a tag (repeatable)")
    p.add_argument("--supersedes", help="hash of an earlier decision this one replaces")
    p.add_argument("--ts", help="when: unix seconds or ISO 8601 (default: now)")
    p = action("posture", _cmd_journal_posture, "record a posture transition", writes=True)
    p.add_argument("posture", help="the posture moved to")
    p.add_argument("--reason", default="", help="why the posture changed")
    p.add_argument("--trigger", help="the event behind the entry (records it even when the posture holds)")
    p.add_argument("--active-count", type=int, help="how many agents are active")
    p.add_argument("--tes-score", type=float, help="the TES score, in percent")
    p.add_argument("--agent-change", action="append", help="NAME=CHANGE, e.g. 'triage=stalled→idling' (repeatable)")
    p.add_argument("--ts", help="when: unix seconds or ISO 8601 (default: now)")
    p = action("append", _cmd_journal_append, "append decision or posture entries given as JSON lines", writes=True)
    p.add_argument("--entry", help="one JSON entry (default: JSON lines read from stdin)")
    p = action("goals", _cmd_journal_goals, "print the active goals, or replace them with --set", writes=True)
    p.add_argument("--set", metavar="FILE", help="replace the goals from a JSON file ('-': stdin)")
    p.add_argument("--completed-today", type=int, help="goals completed today (with --set)")
    p = action("context", _cmd_journal_context, "print the session context, or replace it with --set", writes=True)
    p.add_argument("--set", metavar="FILE", help="replace the session context from a file ('-': stdin)")
    p = action(
        "checkpoint", _cmd_journal_checkpoint, "verify, then sign the chains' lengths (rollback evidence)", writes=False
    )
    p.add_argument("--key", required=True, metavar="FILE", help="the operator's key file (16+ random bytes)")
    p.add_argument("--out", required=True, metavar="FILE", help="where the checkpoint goes: outside the journal")
    p = action("read", _cmd_journal_read, "session context, goals, recent decisions and posture trend", writes=False)
    p.add_argument("--decisions", type=int, default=10, help="how many recent decisions (at most 10)")
    p.add_argument("--posture", type=int, default=5, help="how many posture transitions (at most 20)")


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Attach ``memory {index,search,grep,find,filter,count,get,summarize,verify,compact,journal}``."""
    memory = subparsers.add_parser("memory", help="query and maintain the memory archive")
    sub = memory.add_subparsers(dest="memory_command", metavar="ACTION", required=True)

    def parser(name: str, func: Any, helptext: str, *, db: bool = True) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = sub.add_parser(name, help=helptext)
        if db:
            p.add_argument("db", help="memory index (SQLite), or a journal directory (live index + sealed quarters)")
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.set_defaults(func=func)
        return p

    def window(p: argparse.ArgumentParser) -> None:
        p.add_argument("--since", help="ISO date/time or relative (7d)")
        p.add_argument("--until", help="ISO date/time (date-only is inclusive) or relative")

    p = parser("index", _cmd_index, "build or update the index from a journal and/or archives")
    p.add_argument("--journal", help="journal root directory")
    p.add_argument("--archive", action="append", help="archive in the original schema (repeatable)")
    p.add_argument("--rebuild", action="store_true", help="rebuild from scratch instead of appending")
    p = parser("search", _cmd_search, "case-insensitive substring of title or content, newest first")
    p.add_argument("query")
    p.add_argument("--tags", type=split_tags)
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--offset", type=int, default=0, help="skip this many matches (paging)")
    p.add_argument(
        "--order", choices=["newest", "oldest", "relevance"], default="newest", help="relevance: bm25 over words"
    )
    p.add_argument("--raw", action="store_true", help="pass FTS5 syntax through")
    p.add_argument("--capped", action="store_true", help="relevance: rank only the newest matches of common words")
    window(p)
    p = parser("grep", _cmd_grep, "regular-expression search")
    p.add_argument("pattern")
    p.add_argument("--limit", type=int, default=50)
    window(p)
    p = parser("find", _cmd_find, "case-insensitive exact substring search, newest first")
    p.add_argument("substring")
    p.add_argument("--limit", type=int, default=20)
    window(p)
    p = parser("filter", _cmd_filter, "records by metadata")
    p.add_argument("--source")
    p.add_argument("--kind")
    p.add_argument("--min-confidence", type=float)
    p.add_argument("--tags", type=split_tags)
    p.add_argument("--limit", type=int, default=50)
    window(p)
    p = parser("count", _cmd_count, "exact number of matches")
    p.add_argument("query", nargs="?")
    window(p)
    p = parser("get", _cmd_get, "one record by id")
    p.add_argument("id", help="the record's id, as search and filter show it")
    p = parser("summarize", _cmd_summarize, "short digest of the best matches")
    p.add_argument("query")
    p.add_argument("--max-results", type=int, default=5)
    p = parser("verify", _cmd_verify, "check the journal's chains and every sealed file", db=False)
    p.add_argument("journal", help="journal root directory")
    p.add_argument("--repair", action="store_true", help="first finish interrupted operations (never edits history)")
    p = parser("compact", _cmd_compact, "quarantine corrupt lines, then compact the journal", db=False)
    p.add_argument("journal", help="journal root directory")
    p.add_argument("--only", choices=SCHEDULES, help="run one schedule (default: daily, weekly and quarterly)")
    p.add_argument(
        "--seal-existing", action="store_true", help="first seal the files of a journal written before seals were kept"
    )
    _register_journal(sub)
