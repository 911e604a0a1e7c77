"""Governed apply of a cleanup plan: approval, re-checks, write-ahead journal, undo.

Only DELETE and ARCHIVE entries are acted on; TRANSIT, KEEP and UNKNOWN are never
touched, and nothing is ever unlinked: DELETE moves into ``<root>/<workspace>/quarantine/
<plan id>/`` and ARCHIVE into ``<root>/<workspace>/archive/<YYYY-MM>/`` (month of the
file's modification time), keeping the relative path.

Every step is written to a JSON-lines journal and fsync'd *before* it happens:
``begin`` → for each entry ``intent`` → move → ``done`` (or ``skip`` with a reason) →
``commit``. A move is a hard link to the destination followed by removing the source, so
it never overwrites anything and a crash leaves the file in one or both places, never in
none. :func:`resume` finishes an interrupted apply; :func:`undo` moves everything back.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from terminai_apts import durable
from terminai_apts.action.scan import DIR_FLAGS, ChangedError, sha256_of
from terminai_apts.errors import ApprovalRequired, CleanupError, JournalError
from terminai_apts.model import CleanupEntry, CleanupPlan, ObjectTableLabels

__all__ = ["ApplyReport", "apply_plan", "plan_id", "resume", "undo"]

_ACTED_ON = (ObjectTableLabels.DELETE, ObjectTableLabels.ARCHIVE)


def plan_id(plan: CleanupPlan) -> str:
    """A stable id for a plan: the first 16 hex digits of the sha256 of its JSON."""
    return hashlib.sha256(plan.to_json().encode()).hexdigest()[:16]


@dataclass(slots=True)
class ApplyReport:
    """What an apply, resume or undo did. ``ok`` is False when any step failed."""

    journal: Path
    moved: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> str:
        lines = [
            f"journal: {self.journal}",
            f"moved: {len(self.moved)}, restored: {len(self.restored)}, "
            f"skipped: {len(self.skipped)}, failed: {len(self.failed)}",
        ]
        lines += [f"  skipped {path}: {why}" for path, why in self.skipped]
        lines += [f"  FAILED {path}: {why}" for path, why in self.failed]
        return "\n".join(lines)


class _Journal:
    """Append-only JSON lines, each fsync'd before the caller acts on it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)

    def write(self, record: dict[str, Any]) -> None:
        record = {"time": datetime.now(UTC).isoformat(), **record}
        os.write(self._fd, (json.dumps(record, sort_keys=True) + "\n").encode())
        os.fsync(self._fd)

    def close(self) -> None:
        os.close(self._fd)


def read_journal(path: Path) -> list[dict[str, Any]]:
    """All complete records of a journal. A torn last line (crash mid-write) is ignored."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise JournalError(f"journal {str(path)!r} cannot be read: {exc.strerror}") from None
    records: list[dict[str, Any]] = []
    lines = raw.split(b"\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            if number == len(lines):  # the crash happened while writing this line
                break
            raise JournalError(f"journal {str(path)!r} line {number} is corrupt; refusing to guess") from None
    if not records or records[0].get("op") != "begin":
        raise JournalError(f"{str(path)!r} is not a cleanup journal (no 'begin' record)")
    return records


def _destination(plan: CleanupPlan, entry: CleanupEntry, pid: str) -> bytes:
    workspace = os.fsencode(plan.root) + b"/" + plan.policy.workspace.encode()
    if entry.label is ObjectTableLabels.DELETE:
        return workspace + b"/quarantine/" + pid.encode() + b"/" + entry.raw_path
    assert entry.mtime_ns is not None
    month = datetime.fromtimestamp(entry.mtime_ns / 1e9, UTC).strftime("%Y-%m")
    return workspace + b"/archive/" + month.encode() + b"/" + entry.raw_path


_OUTSIDE = "outside the planned folder (a plan names paths relative to its root, without '..')"


def _outside(raw_path: bytes) -> bool:
    return not raw_path or raw_path.startswith(b"/") or b".." in raw_path.split(b"/")


def _parent(root_fd: int, raw_path: bytes) -> tuple[int, bytes]:
    """The folder holding ``raw_path``, opened from ``root_fd`` one component at a time without
    following a symbolic link (``ELOOP``/``ENOTDIR`` if one is met), and the last component.
    Every later look at the entry goes through this descriptor, so a folder swapped for a
    link after the check cannot redirect the move."""
    *folders, name = raw_path.split(b"/")
    fd = os.dup(root_fd)
    try:
        for part in folders:
            next_fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd, name


def _escape(root_fd: int, root: bytes, raw_path: bytes) -> str | None:
    """How ``raw_path`` leads out of the folder through a symbolic link, or None.

    The planner never descends through a link, so a plan path through one was edited or the
    folder changed since: either way it could reach any file the user may move. A last
    component that is a link is moved as the link itself (never its target), but one that
    points outside the folder is refused too: the plan did not name it.
    """
    prefix = b""
    fd = os.dup(root_fd)
    try:
        *folders, name = raw_path.split(b"/")
        for part in folders:
            prefix += part
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except OSError:
                return None  # gone or unreadable: the per-entry re-check skips it with the reason
            if stat.S_ISLNK(st.st_mode):
                return f"passes through the symbolic link {os.fsdecode(prefix)!r}"
            try:
                next_fd = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError:
                return None
            os.close(fd)
            fd = next_fd
            prefix += b"/"
        try:
            target = os.readlink(name, dir_fd=fd)
        except OSError:
            return None  # not a link (or gone)
        where = os.path.realpath(os.path.join(root, prefix, target))
        inside = os.path.realpath(root)
        if os.path.commonpath([where, inside]) != inside:
            return f"is a symbolic link to {os.fsdecode(target)!r}, outside the folder"
        return None
    finally:
        os.close(fd)


def _recheck(parent_fd: int, name: bytes, entry: CleanupEntry) -> str | None:
    """Why the file may no longer be moved, or None when it is exactly as planned (and inside)."""
    try:
        st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    except FileNotFoundError:
        return "vanished since planning"
    except OSError as exc:
        return f"cannot be examined: {exc.strerror}"
    if not stat.S_ISREG(st.st_mode):
        return "no longer a regular file"
    if st.st_size != entry.size or st.st_mtime_ns != entry.mtime_ns:
        return "changed since planning (size or modification time)"
    if entry.sha256 is not None:
        try:
            digest = sha256_of(parent_fd, name, expect=(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
        except (OSError, ChangedError):
            return "changed while being re-checked"
        if digest != entry.sha256:
            return "content changed since planning"
    return None


def _move_from(parent_fd: int, name: bytes, src: bytes, dst: bytes) -> None:
    """:func:`_move` of ``name`` in the folder ``parent_fd`` (``src`` is its path, for the
    directory syncs): the source is named through the descriptor the re-check used."""
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        os.link(name, dst, src_dir_fd=parent_fd, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EOPNOTSUPP):  # no hard links here
            raise
        if os.path.lexists(dst):
            raise FileExistsError(dst) from None
        os.rename(name, dst, src_dir_fd=parent_fd)
        return
    os.unlink(name, dir_fd=parent_fd)
    durable.fsync_dir(os.path.dirname(dst))
    durable.fsync_dir(os.path.dirname(src))


def _move(src: bytes, dst: bytes) -> None:
    """Move without ever overwriting: link to ``dst`` (fails if it exists), then unlink ``src``."""
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EOPNOTSUPP):  # no hard links here
            raise
        if os.path.lexists(dst):
            raise FileExistsError(dst) from None
        os.rename(src, dst)
        return
    os.unlink(src)
    durable.fsync_dir(os.path.dirname(dst))
    durable.fsync_dir(os.path.dirname(src))


def apply_plan(
    plan: CleanupPlan,
    *,
    approved_by: str,
    journal_path: Path | None = None,
) -> ApplyReport:
    """Apply ``plan`` after an explicit approval; return what was moved and skipped.

    Raises :class:`~terminai_apts.errors.ApprovalRequired` without a non-empty
    ``approved_by``. Each file is re-checked (size, mtime and, where the plan hashed it,
    content) right before its move and skipped with a reason if it changed. The journal
    (default ``<root>/<workspace>/journal/<plan id>.jsonl``) makes the apply resumable
    with :func:`resume` and reversible with :func:`undo`.
    """
    if not isinstance(approved_by, str) or not approved_by.strip():
        raise ApprovalRequired(
            "applying a cleanup plan needs an explicit approver",
            hint="pass approved_by='NAME' after reviewing the plan",
        )
    # The planner never writes such a path: a plan that names one was edited, so none of it runs.
    escaping = [e.path for e in plan.entries if e.label in _ACTED_ON and _outside(e.raw_path)]
    if escaping:
        raise CleanupError(
            f"the plan names {len(escaping)} path(s) {_OUTSIDE}: "
            f"{', '.join(map(repr, escaping[:3]))}; nothing was moved",
            hint="plan the folder again and review that plan; never apply an edited plan",
        )
    pid = plan_id(plan)
    root = Path(plan.root)
    journal_file = journal_path or root / plan.policy.workspace / "journal" / f"{pid}.jsonl"
    if journal_file.exists():
        raise CleanupError(
            f"plan {pid} was already applied (journal {journal_file})",
            hint="use resume() to finish an interrupted apply, or undo() to revert it",
        )
    try:
        root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise CleanupError(f"plan root {plan.root!r} cannot be opened: {exc.strerror}") from None
    escapes = []
    try:
        for entry in plan.entries:
            if entry.label in _ACTED_ON and (how := _escape(root_fd, os.fsencode(plan.root), entry.raw_path)):
                escapes.append(f"{entry.path!r} {how}")
    except BaseException:
        os.close(root_fd)
        raise
    if escapes:
        os.close(root_fd)
        raise CleanupError(
            f"the plan names {len(escapes)} path(s) that lead out of the planned folder: "
            f"{'; '.join(escapes[:3])}; nothing was moved",
            hint="remove the link or plan the folder again and review that plan; never apply an edited plan",
        )
    try:
        journal = _Journal(journal_file)
    except OSError as exc:
        os.close(root_fd)
        raise CleanupError(
            f"cannot write the cleanup journal {journal_file}: {exc.strerror}",
            hint="the folder must be writable by the user applying the plan",
        ) from None
    report = ApplyReport(journal=journal_file)
    try:
        journal.write({"op": "begin", "plan_id": pid, "root": plan.root, "approved_by": approved_by.strip()})
        seq = 0
        for entry in plan.entries:
            if entry.label not in _ACTED_ON:
                continue
            seq += 1
            try:
                parent_fd, name = _parent(root_fd, entry.raw_path)
            except OSError as exc:
                gone = "vanished since planning" if exc.errno == errno.ENOENT else "a folder on its path changed"
                journal.write({"op": "skip", "seq": seq, "src": entry.path, "reason": gone})
                report.skipped.append((entry.path, gone))
                continue
            try:
                why: str | None = _recheck(parent_fd, name, entry)
                if why is None:
                    src, dst = os.fsencode(plan.root) + b"/" + entry.raw_path, _destination(plan, entry, pid)
                    _move_planned(journal, report, seq, entry, parent_fd, name, src, dst)
            finally:
                os.close(parent_fd)
            if why is not None:
                journal.write({"op": "skip", "seq": seq, "src": entry.path, "reason": why})
                report.skipped.append((entry.path, why))
        journal.write({"op": "commit"})
    finally:
        journal.close()
        os.close(root_fd)
    return report


def _move_planned(
    journal: _Journal,
    report: ApplyReport,
    seq: int,
    entry: CleanupEntry,
    parent_fd: int,
    name: bytes,
    src: bytes,
    dst: bytes,
) -> None:
    """Journal the intent, move, journal the outcome (a failed move is reported, not raised)."""
    journal.write(
        {
            "op": "intent",
            "seq": seq,
            "src_hex": src.hex(),
            "dst_hex": dst.hex(),
            "path": entry.path,
            "label": entry.label.value,
        }
    )
    try:
        _move_from(parent_fd, name, src, dst)
    except OSError as exc:
        journal.write({"op": "skip", "seq": seq, "src": entry.path, "reason": f"move failed: {exc}"})
        report.failed.append((entry.path, f"move failed: {exc.strerror or exc}"))
        return
    journal.write({"op": "done", "seq": seq})
    report.moved.append(entry.path)


def _open_intents(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    finished = {r["seq"] for r in records if r.get("op") in ("done", "skip")}
    return [r for r in records if r.get("op") == "intent" and r["seq"] not in finished]


def _settle_intent(record: dict[str, Any]) -> tuple[str, str]:
    """Finish one interrupted move; return ('done'|'skip', reason)."""
    src, dst = bytes.fromhex(record["src_hex"]), bytes.fromhex(record["dst_hex"])
    src_there, dst_there = os.path.lexists(src), os.path.lexists(dst)
    if src_there and dst_there:
        if os.path.samestat(os.lstat(src), os.lstat(dst)):
            os.unlink(src)  # crashed between link and unlink
            return "done", "completed interrupted move"
        return "skip", "source and destination both exist and differ; left both untouched"
    if dst_there:
        return "done", "move had completed"
    if src_there:
        return "skip", "move had not started; file left in place (plan again to act on it)"
    return "skip", "file is missing from both places (removed by someone else)"


def resume(journal_path: Path) -> ApplyReport:
    """Finish an apply that crashed: settle every move that was started but not recorded."""
    records = read_journal(journal_path)
    report = ApplyReport(journal=journal_path)
    journal = _Journal(journal_path)
    try:
        for record in _open_intents(records):
            outcome, why = _settle_intent(record)
            journal.write({"op": outcome, "seq": record["seq"], "reason": why, "resumed": True})
            (report.moved.append(record["path"]) if outcome == "done" else report.skipped.append((record["path"], why)))
        if not any(r.get("op") == "commit" for r in records):
            journal.write({"op": "commit", "resumed": True})
    finally:
        journal.close()
    return report


def undo(journal_path: Path) -> ApplyReport:
    """Move every file the journal moved back to where it was (newest first).

    Interrupted moves are settled first. A file whose original place is occupied again
    is left in quarantine/archive and reported, never overwritten.
    """
    journal_path = Path(journal_path)
    if _open_intents(read_journal(journal_path)):
        resume(journal_path)
    records = read_journal(journal_path)
    undone = {r["seq"] for r in records if r.get("op") == "undone"}
    done = {r["seq"] for r in records if r.get("op") == "done"}
    intents = [r for r in records if r.get("op") == "intent" and r["seq"] in done and r["seq"] not in undone]
    report = ApplyReport(journal=journal_path)
    journal = _Journal(journal_path)
    try:
        for record in reversed(intents):
            src, dst = bytes.fromhex(record["src_hex"]), bytes.fromhex(record["dst_hex"])
            if not os.path.lexists(dst):
                report.failed.append((record["path"], "no longer in quarantine/archive"))
                continue
            try:
                _move(dst, src)
            except FileExistsError:
                report.failed.append((record["path"], "original place is occupied; left in quarantine/archive"))
                continue
            except OSError as exc:
                report.failed.append((record["path"], f"restore failed: {exc.strerror or exc}"))
                continue
            journal.write({"op": "undone", "seq": record["seq"]})
            report.restored.append(record["path"])
    finally:
        journal.close()
    return report
