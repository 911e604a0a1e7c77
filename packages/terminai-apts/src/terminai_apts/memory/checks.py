"""``verify``: every file of a journal checked against the hash chains, or explained.

Each file under the journal root is one of (see ``docs/MEMORY_API.md``):

* a chain (``warm/decisions/decisions.jsonl``, ``warm/posture_history.jsonl``, their
  ``cold/YYYY-Qn/`` archives, ``warm/seals.jsonl``, ``quarantine.jsonl``): every line
  must parse, hash to its ``hash`` and link to the line before;
* derived from a chain and checked against it: the anchors (the hash of the last
  archived entry) and the hot buffers (the chain's last 10 decisions, 20 transitions);
* derived from the archived chains: ``cold/index/decisions_index.json`` must be what
  they give (it may be absent);
* sealed (the live index, sealed shards, daily, weekly and quarter summaries, the
  ``cold/archive/`` tarballs of daily summaries): its sha256 must be the one its newest
  seal records; a daily summary moved into such an archive may be absent when the
  archive holds exactly its sealed bytes;
* mutable by design (``.lock``, ``hot/session_context.md``, ``hot/active_goals.json``,
  ``.state.json``: see :mod:`~terminai_apts.memory.state`);
* left by an interrupted operation (``compaction.wal``, temporary files, a torn last
  line, a seal whose write did not happen): reported as *pending* with the command that
  completes it, not as a changed history;
* anything else is unexpected, and reported.

A problem means history or a file a query reads was changed; pending items mean an
operation was cut short and nothing recorded was lost.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from terminai_apts import ledger
from terminai_apts.errors import IntegrityError
from terminai_apts.memory import chainfile, checkpoint, cold, keyed, seals, state
from terminai_apts.memory.chainfile import CHAIN, GENESIS
from terminai_apts.memory.journal_files import DECISIONS, POSTURE, entry_quarter, entry_time, numbered_lines

WAL = "compaction.wal"
QUARANTINE = Path("quarantine.jsonl")
HOT_DECISIONS = Path("hot/recent_decisions.jsonl")
HOT_POSTURE = Path("hot/posture_log.jsonl")
HOT_KEEP = {HOT_DECISIONS: 10, HOT_POSTURE: 20}
MUTABLE = {".lock", "hot/session_context.md", "hot/active_goals.json", state.STATE, state.PREVIOUS}
_Q = r"cold/\d{4}-Q[1-4]"
SEALED = re.compile(
    rf"quarantine\.jsonl|index\.sqlite|{_Q}/(shard\.sqlite|summary\.md)|warm/daily/\d{{4}}-\d\d-\d\d\.md"
    r"|warm/weekly/\d{4}-W\d\d(-summary)?\.md|cold/archive/\d{4}-Q[1-4]\.tar\.gz|cold/summaries/\d{4}-Q[1-4]-summary\.md"
)
KEPT_LINE = re.compile(r"quarantine/([0-9a-f]{64})\.bin")  # a quarantined line too long to keep inline
COLD_QUARTER = re.compile(r"cold/(\d{4}-Q[1-4])/(?:decisions|posture_history)\.jsonl")
COLD_CHAIN = re.compile(rf"{_Q}/(decisions|posture_history)\.jsonl")
TEMP = re.compile(r"(.*/)?\.[^/]+\.\d+\.tmp(-journal|-wal|-shm)?")
LIVE_INDEX = "index.sqlite"
# Each chain holds records of one kind: a file swapped for another chain's is caught by this.
KINDS = {"decisions": "decision", "posture_history": "posture", "seals": "seal", "quarantine": "quarantine"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainProblem:
    """Where a check failed: file, 1-based line (0: the whole file) and what is wrong."""

    file: str
    line: int
    reason: str


@dataclass(slots=True)
class Report:
    """``problems``: history or a sealed file changed. ``pending``: an interrupted operation."""

    problems: list[ChainProblem] = field(default_factory=list)
    pending: list[ChainProblem] = field(default_factory=list)
    compaction: bool = False  # a compaction plan waits to be finished
    # Every intact chain's entry hashes in order (cold archives first): what a checkpoint records.
    hashes: dict[str, list[str]] = field(default_factory=dict)

    def add(self, file: str, line: int, reason: str, *, pending: bool = False) -> None:
        (self.pending if pending else self.problems).append(ChainProblem(file=file, line=line, reason=reason))


def inspect(root: Path) -> Report:
    """Check every file under ``root``; see the module docstring."""
    report = Report(compaction=(root / WAL).exists())
    if report.compaction:
        report.add(
            WAL,
            0,
            "compaction interrupted; nothing recorded was lost: complete it with"
            f" `terminai-apts memory compact {root}` (or `terminai-apts memory verify {root} --repair`)",
            pending=True,
        )
    chains = {
        stem: _chain(root, stem, warm, report)
        for stem, warm in (("decisions", DECISIONS), ("posture_history", POSTURE))
    }
    for single, stem in ((seals.SEALS, "seals"), (QUARANTINE, "quarantine")):
        before = len(report.problems)
        records = _walk(root, [root / single], GENESIS, report)
        chains[stem] = records if len(report.problems) == before else None
    if not report.compaction:  # an interrupted compaction has moved entries not yet cut: counted when done
        _rollback(root, chains, report)
    _cold_folders(root, report)
    for hot, stem in ((HOT_DECISIONS, "decisions"), (HOT_POSTURE, "posture_history")):
        chain = chains[stem]
        if chain is not None:  # a broken chain is reported once, not again through its buffer
            _hot(root, hot, chain, report)
    _files(root, report)
    return report


def _rollback(root: Path, chains: dict[str, list[dict[str, object]] | None], report: Report) -> None:
    """Each chain must hold the entries its writers recorded (the state record, the outside
    witness) and the operator's checkpoint saw."""
    report.hashes = {
        stem: [str(r.get("hash")) for r in records] for stem, records in chains.items() if records is not None
    }
    sources = [(f"the state record {state.STATE}", (state.load(root) or {}).get("chains", {}))]
    witness = state.witness_path(root)
    if witness is not None:
        sources.append((f"the witness {witness}", state.witnessed(root)))
    signed = checkpoint.configured()
    if signed is not None:
        seen, refused = checkpoint.read(signed, checkpoint.configured_key())
        if refused:
            report.add(str(signed), 0, refused)
        sources.append((f"the checkpoint {signed}", seen))
    for source, recorded in sources:
        for stem, hashes in report.hashes.items():
            seen = recorded.get(stem)
            if checkpoint.behind(hashes, seen):
                count, head = seen
                report.add(
                    str(state.CHAINS[stem]),
                    0,
                    f"rolled back: {source} saw {count} entries ending at {str(head)[:12]}…,"
                    f" the chain holds {len(hashes)}: restore the newer files from backup",
                )


def refuse_changed(root: Path) -> None:
    """What a reader runs before it answers from a journal: nothing, or verify's first problem raised.

    Cheap when every file is as the journal's writers left it (see :mod:`state`); any other
    state gets the whole check (a copied journal, a file changed by hand). The cheap path
    trusts the state record for the files a read does not serve: without a key, a writer
    who edits such a file (a chain's middle, an anchor, a cold archive) and rewrites the
    record to match is caught by ``verify`` only; what reads serve is checked whatever the
    record says (the hot buffers against their chains' tails, the chains' heads against the
    record, the live index and shards against their seals). With a key configured, only a
    record signed with it is trusted (:func:`state.trusted`), so that edit is caught here too.
    """
    if _as_left(root):
        return
    if seals.writer_done(root) and _as_left(root):
        return  # a writer was busy: what it left is recorded now
    problems = inspect(root).problems
    if problems:
        p = problems[0]
        raise IntegrityError(
            f"journal chain broken at {p.file}:{p.line}: {p.reason}",
            hint=f"answers from this journal must not be trusted: `terminai-apts memory verify {root}` lists"
            " every changed file; restore them from backup",
        )


def _as_left(root: Path) -> bool:
    recorded = state.trusted(root)
    if recorded is None or state.snapshot(root) != recorded["files"]:
        return False
    if not _tails_served(root, recorded["chains"]):
        return False
    outside = [state.witnessed(root)]
    signed = checkpoint.configured()
    if signed is not None:
        seen, refused = checkpoint.read(signed, checkpoint.configured_key())
        if refused:
            return False  # verify reports it
        outside.append(seen)
    for chains in outside:
        for stem, seen in chains.items():
            mine = recorded["chains"].get(stem)
            if not (isinstance(seen, list) and isinstance(mine, list) and len(seen) == len(mine) == 2):
                return False
            if seen[0] > mine[0] or (seen[0] == mine[0] and seen[1] != mine[1]):
                return False  # a record kept outside saw more than this journal holds: look closely
    return True


def _tails_served(root: Path, recorded: dict[str, list[object]]) -> bool:
    """Whether what a read serves from the chains, checked without the state record, is intact.

    Each chain's last entry must hash to its ``hash`` and be the head the record saw, and
    each hot buffer must be a run of intact, linked entries ending at that head: a few
    dozen lines, so a buffer or a chain's tail edited under a rewritten record is caught
    on every read, key or not.
    """
    for stem in state.CHAINS:
        seen = recorded.get(stem)
        head = _tail_entry(root, stem)
        if head is None:
            if isinstance(seen, list) and seen[0]:
                return False
            continue
        if head.get("hash") != CHAIN.digest(head) or not isinstance(seen, list) or seen[1] != head["hash"]:
            return False
        hot = {"decisions": HOT_DECISIONS, "posture_history": HOT_POSTURE}.get(stem)
        if hot is None:
            continue
        lines = list(numbered_lines(root / hot))
        links = list(CHAIN.walk(lines, prev=None))
        if not links or not all(link.ok for link in links) or links[-1].record != head:
            return False
    return True


def _tail_entry(root: Path, stem: str) -> dict[str, object] | None:
    """A chain's last entry: its warm file's, else its newest archive's (None: empty)."""
    cold_files = sorted((root / "cold").glob(f"*-Q*/{stem}.jsonl")) if stem in ("decisions", "posture_history") else []
    for path in reversed([*cold_files, root / state.CHAINS[stem]]):
        last = chainfile.tail_records(path, 1)
        if last:
            return last[0]
    return None


def _chain(root: Path, stem: str, warm: Path, report: Report) -> list[dict[str, object]] | None:
    """Walk a chain across its cold archives and warm file; its records in order (None: broken)."""
    cold = sorted((root / "cold").glob(f"*-Q*/{stem}.jsonl"))
    archived: set[str] = set()
    before = len(report.problems)
    records = _walk(root, cold, GENESIS, report, seen=archived)
    if len(report.problems) > before:
        return None  # the chain is broken already: what follows cannot link
    cold_last = str(records[-1]["hash"]) if records else None
    # An interrupted compaction may have archived entries it has not yet cut from the warm file.
    skip = archived if report.compaction else set()
    mark = len(report.problems)
    records += _walk(root, [root / warm], cold_last or GENESIS, report, skip=skip)
    broke = report.problems[mark:]
    if (
        cold
        and broke
        and broke[0].reason.startswith("entry removed")
        and _first_prev(root / warm) == _read(root / warm.with_suffix(".anchor"))
    ):
        # The warm file still links to the anchor: it is the archive that lost its end.
        report.add(str(cold[-1].relative_to(root)), 0, "entries removed from its end: the warm file links past it")
    _anchor(root, root / warm.with_suffix(".anchor"), cold_last, report)
    return None if len(report.problems) > before else records


def _first_prev(path: Path) -> str | None:
    lines = numbered_lines(path)
    record = ledger.parse(lines[0][1]) if lines else None
    return str(record.get("prev")) if record else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (FileNotFoundError, UnicodeDecodeError):
        return None


def _walk(
    root: Path,
    files: list[Path],
    prev: str,
    report: Report,
    *,
    skip: set[str] | None = None,
    seen: set[str] | None = None,
) -> list[dict[str, object]]:
    """Check the chain through ``files`` from ``prev``; stops at the first break.

    Leading lines whose hash is in ``skip`` (already archived) are passed over. A last
    line cut short (no newline, not a record) is a torn write, reported as pending.
    """
    out: list[dict[str, object]] = []
    previous: str | None = None
    secret = keyed.key()
    for path in files:
        name = str(path.relative_to(root))
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raw = b""
        # Split at newlines only: a line ending "\r\n" is not its entry's spelling (reported as such).
        lines = [(n, line) for n, line in enumerate(raw.split(b"\n"), start=1) if line.strip()]
        if lines and not raw.endswith(b"\n") and ledger.parse(lines[-1][1]) is None:
            report.add(
                name,
                lines[-1][0],
                "torn last line (a write cut short); the next append or `terminai-apts memory compact` quarantines it",
                pending=True,
            )
            lines = lines[:-1]
        while skip and lines and str((ledger.parse(lines[0][1]) or {}).get("hash")) in skip:
            lines = lines[1:]
        links = list(CHAIN.walk(lines, prev=prev))
        corrupt = [link for link in links if link.record is None]
        for c in corrupt:
            report.add(name, c.number, f"corrupt line ({c.spelling}): `terminai-apts memory compact` quarantines it")
        kind = KINDS[path.stem]
        plain = next((link for link in links if link.record is not None and "hash" not in link.record), None)
        if not corrupt and plain is not None:
            report.add(
                name,
                plain.number,
                "an entry without hash and prev (written outside the journal, in the plain JSONL form):"
                " readers take it, but it is bound to no chain",
            )
            return out
        stranger = next((link for link in links if link.record is not None and link.record.get("kind") != kind), None)
        if not corrupt and stranger is not None:
            report.add(name, stranger.number, f"not a {kind} entry: this file holds another chain's records")
            return out
        bad = corrupt[:1] or [link for link in links if not link.ok][:1]
        if bad and bad[0].record is not None:
            reason = f"entry {bad[0].problem}" if not bad[0].intact else "entry removed or reordered before this one"
            report.add(name, bad[0].number, reason)
            if bad[0].intact and bad[0] is links[0] and previous is not None:
                # Where two files meet, either side may have lost entries: name both.
                report.add(previous, 0, f"entries removed from its end, or {name} does not continue it")
        if bad:
            return out
        if secret is not None:
            unsigned = next((link for link in links if not keyed.signed(secret, link.record or {})), None)
            if unsigned is not None:
                report.add(
                    name,
                    unsigned.number,
                    f"not signed with the journal key ({keyed.KEY_ENV}): forged, or written without the key",
                )
                return out
        quarter = COLD_QUARTER.fullmatch(name)
        if quarter:
            stray = next((link for link in links if entry_quarter(link.record or {}) != quarter.group(1)), None)
            if stray is not None:
                report.add(name, stray.number, f"not dated in {quarter.group(1)}: an archive holds its quarter only")
                return out
        if kind in ("decision", "posture"):
            undated = next((link for link in links if entry_time(link.record or {}) is None), None)
            if undated is not None:
                report.add(name, undated.number, "entry without a readable time (no valid 'iso' or 'ts')")
                return out
        for link in links:
            if link.record is not None:  # always: a corrupt line stopped the walk above
                out.append(link.record)
                if seen is not None:
                    seen.add(str(link.record["hash"]))
        if out:
            prev = str(out[-1]["hash"])
        previous = name
    return out


def _cold_folders(root: Path, report: Report) -> None:
    """Compaction writes both chains of an archived quarter (empty when it had no entries)."""
    for folder in sorted((root / "cold").glob("*-Q*")):
        for stem in ("decisions", "posture_history"):
            rel = f"cold/{folder.name}/{stem}.jsonl"
            if folder.is_dir() and not (root / rel).exists():
                report.add(rel, 0, "archived chain removed", pending=report.compaction)


def _anchor(root: Path, anchor: Path, cold_last: str | None, report: Report) -> None:
    """The anchor must hold exactly the hash of the last archived entry (and exist iff one does)."""
    name = str(anchor.relative_to(root))
    try:
        held: bytes | None = anchor.read_bytes()
    except FileNotFoundError:
        held = None
    if held is None and cold_last is None:
        return
    if held is not None and cold_last is not None and held == cold_last.encode():
        return
    if held is None:
        reason = "anchor missing: it must name the last archived entry"
    elif cold_last is None:
        reason = "anchor names an entry, but nothing is archived"
    else:
        reason = "anchor does not name the last archived entry"
    report.add(name, 1 if held else 0, reason, pending=report.compaction)


def _cut_short(root: Path, rel: Path) -> bool:
    """Whether a buffer one entry behind its chain is a crash's signature, not an edit.

    A writer stopped between the chain's append and the buffer's rewrite left the buffer
    as the state record (see :mod:`state`) has it; a buffer cut by hand is not.
    """
    recorded = state.load(root)
    if recorded is None or str(rel) not in recorded["files"]:
        return True  # nothing to tell them apart by
    return bool(recorded["files"][str(rel)] == state.snapshot_of(root, str(rel)))


def _hot(root: Path, rel: Path, chain: list[dict[str, object]], report: Report) -> None:
    """A hot buffer must be the chain's last entries (or lack only the newest, after a crash)."""
    keep = HOT_KEEP[rel]
    name = str(rel)
    held: list[dict[str, object]] = []
    for number, line in numbered_lines(root / rel):
        record, why = ledger.read(line)
        if record is None:
            report.add(name, number, f"corrupt line ({why})")
            return
        how = ledger.spelling(line, record)
        if how:
            report.add(name, number, f"entry edited: {how}")
            return
        held.append(record)
    if held == chain[-keep:]:
        return
    # A kill leaves the buffer one entry behind; a power loss may leave it several behind
    # (its rename is not flushed on its own: the chain is, see journal_files.atomic_write).
    behind = next((k for k in range(1, keep + 1) if held == chain[:-k][-keep:]), None)
    if behind is not None and _cut_short(root, rel):
        newest = "the chain's newest entry" if behind == 1 else f"the chain's newest {behind} entries"
        report.add(
            name,
            0,
            f"lacks {newest} (a write cut short); the next write or `verify --repair` rebuilds it",
            pending=True,
        )
        return
    known = {str(r.get("hash")) for r in chain}
    newer = [r for r in held if str(r.get("hash")) not in known]
    links = [str(r.get("prev")) for r in newer] == [str(chain[-1].get("hash")) if chain else GENESIS] + [
        str(r.get("hash")) for r in newer[:-1]
    ]
    if newer and links and all(r.get("hash") == CHAIN.digest(r) for r in newer):
        warm = DECISIONS if rel == HOT_DECISIONS else POSTURE
        report.add(str(warm), 0, f"entries removed from its end: {name} holds {len(newer)} intact entries it lacks")
        return
    report.add(name, 0, f"does not hold the last {min(keep, len(chain))} entries of the chain")


def _files(root: Path, report: Report) -> None:
    """Sealed files against their seals, and every other file classified."""
    sealed = seals.latest(root)
    have_seals = (root / seals.SEALS).exists()
    if not have_seals:
        marked = [f for f in [root / LIVE_INDEX, *sorted(root.glob("cold/*/shard.sqlite"))] if f.is_file()]
        witness = next((f for f in marked if seals.carries_seal_mark(f)), None)
        if witness is not None:
            report.add(str(seals.SEALS), 0, f"removed: {witness.relative_to(root)} was sealed in it")
            have_seals = True  # every file it sealed is now unsealed: report each as such
    last_seal = max((s.line for s in sealed.values()), default=0)
    archived = cold.archived_dailies(root) if sealed else {}
    present: set[str] = set()
    for folder, dirs, names in os.walk(root):
        for fname in [*dirs, *names]:
            path = Path(folder) / fname
            rel = str(path.relative_to(root))
            if path.is_symlink():
                # Readers would follow it out of the journal, past what its writers recorded.
                report.add(rel, 0, "a symbolic link: every file of a journal must be a regular file inside it")
            elif fname in names:
                present.add(rel)
                _classify(root, rel, sealed, have_seals, report)
    for rel, seal in sorted(sealed.items()):
        if rel in present or seal.sha256 is None:
            continue
        if rel in archived and cold.sha256(archived[rel][1]) == seal.sha256:
            continue  # moved, byte for byte, into a sealed archive by quarterly compaction
        if seal.line == last_seal and rel.startswith("warm/daily/"):
            report.add(
                rel, 0, "sealed but never written (a write cut short); `verify --repair` gives it up", pending=True
            )
        else:
            report.add(rel, 0, f"removed (sealed at {seals.SEALS}:{seal.line}){_rebuild_hint(root, rel)}")


def _rebuild_hint(root: Path, rel: str) -> str:
    return (
        f"; the index is derived: rebuild it with `terminai-apts memory index {root} --rebuild`"
        if rel == LIVE_INDEX
        else ""
    )


def _classify(root: Path, rel: str, sealed: dict[str, seals.Seal], have_seals: bool, report: Report) -> None:
    if rel in MUTABLE or rel == WAL or rel in {str(DECISIONS), str(POSTURE), str(seals.SEALS)}:
        return
    if rel in {
        str(HOT_DECISIONS),
        str(HOT_POSTURE),
        str(DECISIONS.with_suffix(".anchor")),
        str(POSTURE.with_suffix(".anchor")),
    }:
        return
    if COLD_CHAIN.fullmatch(rel):
        return
    kept = KEPT_LINE.fullmatch(rel)
    if kept:
        if seals.digest_file(root / rel) != kept.group(1):
            report.add(rel, 0, "changed: a quarantined line's bytes no longer hash to the file's name")
        return
    if rel == cold.DECISIONS_INDEX:
        if cold.decisions_index(root) != (root / rel).read_bytes():
            report.add(
                rel,
                0,
                "does not match the archived decisions it indexes; `terminai-apts memory compact --only quarterly`"
                " writes it again from them",
                pending=report.compaction,
            )
        return
    if TEMP.fullmatch(rel):
        report.add(
            rel, 0, "temporary file of a write cut short; `terminai-apts memory compact` removes it", pending=True
        )
        return
    if rel == f"{LIVE_INDEX}-journal":
        report.add(rel, 0, f"an index write was cut short{_rebuild_hint(root, LIVE_INDEX)}", pending=True)
        return
    if not SEALED.fullmatch(rel):
        report.add(rel, 0, "unexpected file: not part of the journal and not bound to its chain")
        return
    seal = sealed.get(rel)
    if seal is None:
        if report.compaction and rel != LIVE_INDEX:
            report.add(rel, 0, "written by the interrupted compaction, sealed when it completes", pending=True)
        elif not have_seals:
            report.add(
                rel,
                0,
                f"not sealed (written before seals were kept, or {seals.SEALS} was removed): after checking it,"
                f" seal it with `terminai-apts memory compact {root} --seal-existing`",
                pending=True,
            )
        else:
            report.add(rel, 0, f"not sealed: added or replaced outside the journal's API{_rebuild_hint(root, rel)}")
        return
    if seal.sha256 is None:
        if rel == LIVE_INDEX:
            report.add(rel, 0, f"an index write was cut short{_rebuild_hint(root, rel)}", pending=True)
        else:
            report.add(rel, 0, f"present although its seal ({seals.SEALS}:{seal.line}) gave it up")
        return
    if seals.digest_file(root / rel, seal.size) != seal.sha256:
        report.add(rel, 0, f"changed since it was sealed ({seals.SEALS}:{seal.line}){_rebuild_hint(root, rel)}")
