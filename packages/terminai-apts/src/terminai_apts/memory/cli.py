"""``terminai-apts memory ...``: build the index and query it from a shell (``--json`` for agents)."""

from __future__ import annotations

import argparse
import json
import math
import sqlite3
from dataclasses import asdict
from pathlib import Path
from typing import Any

from terminai_apts.errors import IntegrityError, JournalError, MemoryQueryError, MemoryStoreError, UsageError
from terminai_apts.memory import render, store
from terminai_apts.memory.api import ThermalMemory, open_memory
from terminai_apts.memory.journal import SCHEDULES, MemoryJournal
from terminai_apts.memory.query import normalize_date
from terminai_apts.memory.records import (
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
        raise MemoryStoreError(f"archive {path} does not exist")
    conn = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
    try:
        declared = {str(r[1]).lower(): str(r[2]) for r in conn.execute("PRAGMA table_info(memories)")}
        rows = conn.execute(
            "SELECT id, date, title, content, summary, tags, source, confidence FROM memories ORDER BY date DESC"
        ).fetchall()
    except sqlite3.DatabaseError as exc:
        raise MemoryStoreError(
            f"{path} is not an archive in the original schema: {exc}",
            hint="expected a table memories(id, date, title, content, summary, tags, source, confidence)",
        ) from None
    finally:
        conn.close()
    affinity = tuple(column_affinity(declared.get(name, "")) for name in STORED_COLUMNS)
    out: list[NewMemory] = []
    for position, (mid, when, title, content, summary, tags, source, confidence) in enumerate(rows):
        nulls = (title is None) * NULL_TITLE | (content is None) * NULL_CONTENT | (summary is None) * NULL_SUMMARY
        out.append(
            NewMemory(
                uid=_text(mid),  # the archive's own id: what `get` takes and every memory shows
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
                origin=f"{path.name}#memories/{_text(mid)}",
                stored=AsStored(
                    values=(mid, when, tags, source, confidence), nulls=nulls, position=position, affinity=affinity
                ),
            )
        )
    return out


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
    report = journal.inspect()
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


def register(subparsers: argparse._SubParsersAction[Any]) -> None:
    """Attach ``memory {index,search,grep,find,filter,count,get,summarize,verify,compact}``."""
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
