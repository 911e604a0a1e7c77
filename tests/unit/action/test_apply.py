from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from terminai_apts.action import apply as apply_mod
from terminai_apts.action.apply import apply_plan, plan_id, read_journal, resume, undo
from terminai_apts.action.cleanup import cleanup_downloads
from terminai_apts.errors import ApprovalRequired, CleanupError, JournalError
from terminai_apts.model import CleanupPlan

from .conftest import DAY, NOW, Maker


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def sample(make_file: Maker) -> tuple[Path, CleanupPlan]:
    make_file("orig.pdf", b"same", age=30 * DAY)
    make_file("copy.pdf", b"same", age=20 * DAY)
    make_file("empty.txt", b"", age=20 * DAY)
    make_file("old/thesis.docx", b"thesis", age=400 * DAY)
    make_file("keep.md", b"keep", age=3 * DAY)
    make_file("dl.part", b"partial", age=3 * DAY)
    root: Path = make_file.root  # type: ignore[attr-defined]
    return root, cleanup_downloads(root, now=NOW)


def workspace_files(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in tree(root).items() if k.startswith(".terminai-cleanup/") and "/journal/" not in k}


def test_apply_refuses_without_an_approver(make_file: Maker) -> None:
    root, plan = sample(make_file)
    before = tree(root)
    for who in ("", "   "):
        with pytest.raises(ApprovalRequired):
            apply_plan(plan, approved_by=who)
    assert tree(root) == before


def test_apply_moves_delete_to_quarantine_and_archive_by_month(make_file: Maker) -> None:
    root, plan = sample(make_file)
    report = apply_plan(plan, approved_by="alice")
    assert report.ok and sorted(report.moved) == ["copy.pdf", "empty.txt", "old/thesis.docx"]
    pid = plan_id(plan)
    files = tree(root)
    assert files[f".terminai-cleanup/quarantine/{pid}/copy.pdf"] == b"same"
    assert files[f".terminai-cleanup/quarantine/{pid}/empty.txt"] == b""
    month = [k for k in files if k.startswith(".terminai-cleanup/archive/")]
    assert month == [".terminai-cleanup/archive/2025-10/old/thesis.docx"]
    for untouched in ("orig.pdf", "keep.md", "dl.part"):
        assert untouched in files
    records = read_journal(report.journal)
    assert records[0]["approved_by"] == "alice" and records[-1]["op"] == "commit"
    again = cleanup_downloads(root, now=NOW)
    assert all(not e.path.startswith(".terminai-cleanup") for e in again.entries)


def test_apply_skips_files_changed_since_planning(make_file: Maker) -> None:
    root, plan = sample(make_file)
    (root / "copy.pdf").write_bytes(b"SAME")  # same size, new content and mtime
    os.utime(root / "empty.txt", (1, 1))
    report = apply_plan(plan, approved_by="alice")
    assert dict(report.skipped) == {
        "copy.pdf": "changed since planning (size or modification time)",
        "empty.txt": "changed since planning (size or modification time)",
    }
    assert (root / "copy.pdf").read_bytes() == b"SAME"


def test_apply_detects_content_change_with_same_size_and_mtime(make_file: Maker) -> None:
    root, plan = sample(make_file)
    st = (root / "copy.pdf").stat()
    (root / "copy.pdf").write_bytes(b"evil")
    os.utime(root / "copy.pdf", ns=(st.st_atime_ns, st.st_mtime_ns))
    report = apply_plan(plan, approved_by="alice")
    assert ("copy.pdf", "content changed since planning") in report.skipped


def test_apply_twice_is_refused(make_file: Maker) -> None:
    _, plan = sample(make_file)
    apply_plan(plan, approved_by="alice")
    with pytest.raises(CleanupError, match="already applied"):
        apply_plan(plan, approved_by="alice")


def test_undo_restores_everything(make_file: Maker) -> None:
    root, plan = sample(make_file)
    before = tree(root)
    report = apply_plan(plan, approved_by="alice")
    restored = undo(report.journal)
    assert restored.ok and sorted(restored.restored) == sorted(report.moved)
    assert {k: v for k, v in tree(root).items() if not k.startswith(".terminai-cleanup")} == before
    assert workspace_files(root) == {}
    assert undo(report.journal).restored == []  # idempotent


def test_undo_never_overwrites_a_reoccupied_place(make_file: Maker) -> None:
    root, plan = sample(make_file)
    report = apply_plan(plan, approved_by="alice")
    (root / "copy.pdf").write_bytes(b"new file with the old name")
    result = undo(report.journal)
    assert ("copy.pdf", "original place is occupied; left in quarantine/archive") in result.failed
    assert (root / "copy.pdf").read_bytes() == b"new file with the old name"


def _crash_in_child(plan: CleanupPlan, patch: Callable[[], None]) -> None:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child: crashes without running any cleanup code
        try:
            patch()
            apply_plan(plan, approved_by="alice")
        finally:
            os._exit(3)
    os.waitpid(pid, 0)


def _journal(root: Path, plan: CleanupPlan) -> Path:
    return root / ".terminai-cleanup" / "journal" / f"{plan_id(plan)}.jsonl"


@pytest.mark.parametrize("crash_point", ["before-move", "after-link", "after-move"])
def test_crash_at_any_point_loses_nothing_and_resumes_or_undoes(make_file: Maker, crash_point: str) -> None:
    root, plan = sample(make_file)
    before = tree(root)
    real_move, real_unlink, real_write = apply_mod._move_from, os.unlink, apply_mod._Journal.write

    def patch() -> None:
        if crash_point == "before-move":
            apply_mod._move_from = lambda *_: os._exit(9)  # type: ignore[assignment]
        elif crash_point == "after-link":
            os.unlink = lambda *a, **k: os._exit(9)  # type: ignore[assignment]
        else:

            def write(self: object, record: dict[str, object]) -> None:
                if record.get("op") == "done":
                    os._exit(9)
                real_write(self, record)  # type: ignore[arg-type]

            apply_mod._Journal.write = write  # type: ignore[method-assign]

    _crash_in_child(plan, patch)
    assert (apply_mod._move_from, os.unlink, apply_mod._Journal.write) == (real_move, real_unlink, real_write)
    journal = _journal(root, plan)
    ops = [r["op"] for r in read_journal(journal)]
    assert ops[-1] == "intent"  # crashed with the first move in flight
    # nothing is lost: every original file is still somewhere (in both places after a link)
    names = {k.rsplit("/", 1)[-1]: v for k, v in tree(root).items() if "/journal/" not in k}
    assert all(names.get(k.rsplit("/", 1)[-1]) == v for k, v in before.items())
    resumed = resume(journal)
    assert resumed.ok
    restored = undo(journal)
    assert restored.ok
    assert {k: v for k, v in tree(root).items() if not k.startswith(".terminai-cleanup")} == before


def test_torn_last_journal_line_is_ignored_but_corruption_refused(make_file: Maker) -> None:
    _, plan = sample(make_file)
    report = apply_plan(plan, approved_by="alice")
    with report.journal.open("ab") as handle:
        handle.write(b'{"op": "und')
    assert read_journal(report.journal)[-1]["op"] == "commit"
    lines = report.journal.read_bytes().split(b"\n")
    lines[1] = b"garbage"
    report.journal.write_bytes(b"\n".join(lines))
    with pytest.raises(JournalError, match="line 2 is corrupt"):
        undo(report.journal)


def test_not_a_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(json.dumps({"op": "intent"}) + "\n")
    with pytest.raises(JournalError, match="not a cleanup journal"):
        undo(path)
    with pytest.raises(JournalError, match="cannot be read"):
        undo(tmp_path / "missing.jsonl")


def test_dry_run_false_with_approver_applies(make_file: Maker) -> None:
    root, _ = sample(make_file)
    plan = cleanup_downloads(root, dry_run=False, now=NOW, approved_by="bob")
    assert plan.dry_run is False
    assert not (root / "copy.pdf").exists()
