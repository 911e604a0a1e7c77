from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest
from terminai_apts.action.cleanup import cleanup_downloads, main, parse_now
from terminai_apts.errors import ApprovalRequired, CleanupError, UsageError
from terminai_apts.model import CleanupPlan, CleanupPolicy, ObjectTableLabels

from .conftest import DAY, NOW, Maker

L = ObjectTableLabels


def plan_of(root: Path, **kw: object) -> dict[str, tuple[str, str]]:
    plan = cleanup_downloads(root, now=NOW, **kw)  # type: ignore[arg-type]
    return {e.path: (e.label.value, e.rule) for e in plan.entries}


@pytest.mark.parametrize(
    "name",
    ["a.crdownload", "b.part", "c.partial", "d.download", "e.opdownload", "f.!qB", "g.iso.aria2", "H.CRDOWNLOAD"],
)
def test_partial_download_markers_are_transit(make_file: Maker, name: str) -> None:
    make_file(name, age=400 * DAY)
    assert plan_of(make_file.root)[name] == ("TRANSIT", "partial-download")  # type: ignore[attr-defined]


def test_aria2_target_is_transit(make_file: Maker) -> None:
    make_file("big.iso", age=400 * DAY)
    make_file("big.iso.aria2", age=400 * DAY)
    assert plan_of(make_file.root)["big.iso"] == ("TRANSIT", "download-in-progress")  # type: ignore[attr-defined]


def test_recent_and_future_files_are_transit(make_file: Maker) -> None:
    make_file("recent.txt", age=60)
    make_file("future.txt", age=-3600)
    result = plan_of(make_file.root)  # type: ignore[attr-defined]
    assert result["recent.txt"] == ("TRANSIT", "recently-modified")
    assert result["future.txt"] == ("TRANSIT", "recently-modified")


def test_empty_files_are_delete(make_file: Maker) -> None:
    make_file("empty", content=b"")
    assert plan_of(make_file.root)["empty"] == ("DELETE", "empty-file")  # type: ignore[attr-defined]


def test_duplicates_keep_the_oldest_canonical_copy(make_file: Maker) -> None:
    make_file("z-original.pdf", b"same", age=30 * DAY)
    make_file("a-copy.pdf", b"same", age=20 * DAY)
    make_file("sub/b-copy.pdf", b"same", age=20 * DAY)
    make_file("different.pdf", b"diff", age=20 * DAY)
    plan = cleanup_downloads(make_file.root, now=NOW)  # type: ignore[attr-defined]
    by = {e.path: e for e in plan.entries}
    assert by["z-original.pdf"].label is L.KEEP
    assert by["a-copy.pdf"].label is L.DELETE and by["a-copy.pdf"].duplicate_of == "z-original.pdf"
    assert by["sub/b-copy.pdf"].duplicate_of == "z-original.pdf"
    assert by["different.pdf"].label is L.KEEP
    assert by["a-copy.pdf"].sha256 == by["z-original.pdf"].sha256


def test_duplicate_tie_break_is_shortest_then_smallest_path(make_file: Maker) -> None:
    make_file("bb.txt", b"same", age=20 * DAY)
    make_file("a.txt", b"same", age=20 * DAY)
    make_file("cc.txt", b"same", age=20 * DAY)
    result = plan_of(make_file.root)  # type: ignore[attr-defined]
    assert result["a.txt"][0] == "KEEP"
    assert result["bb.txt"] == ("DELETE", "duplicate") and result["cc.txt"] == ("DELETE", "duplicate")


def test_only_same_size_candidates_are_hashed(make_file: Maker) -> None:
    make_file("one", b"1", age=20 * DAY)
    make_file("two", b"22", age=20 * DAY)
    plan = cleanup_downloads(make_file.root, now=NOW)  # type: ignore[attr-defined]
    assert all(e.sha256 is None for e in plan.entries)


def test_stale_installers_delete_and_fresh_ones_keep(make_file: Maker) -> None:
    make_file("old.dmg", b"1", age=40 * DAY)
    make_file("new.exe", b"22", age=5 * DAY)
    result = plan_of(make_file.root)  # type: ignore[attr-defined]
    assert result["old.dmg"] == ("DELETE", "stale-installer")
    assert result["new.exe"] == ("KEEP", "default")


def test_old_files_archive(make_file: Maker) -> None:
    make_file("thesis.docx", age=200 * DAY)
    assert plan_of(make_file.root)["thesis.docx"] == ("ARCHIVE", "old-file")  # type: ignore[attr-defined]


def test_policy_thresholds_are_honoured(make_file: Maker) -> None:
    make_file("thesis.docx", age=20 * DAY)
    policy = CleanupPolicy(archive_age_seconds=10 * DAY)
    assert plan_of(make_file.root, policy=policy)["thesis.docx"][0] == "ARCHIVE"  # type: ignore[attr-defined]


def test_symlinks_are_keep_and_never_followed(make_file: Maker, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    root = make_file.root  # type: ignore[attr-defined]
    (root / "to-file").symlink_to(outside / "secret")
    (root / "to-dir").symlink_to(outside)
    (root / "dangling").symlink_to(tmp_path / "nothing")
    plan = cleanup_downloads(root, now=NOW)
    assert {e.path: (e.label.value, e.rule, e.kind) for e in plan.entries} == {
        "to-file": ("KEEP", "symlink", "symlink"),
        "to-dir": ("KEEP", "symlink", "symlink"),
        "dangling": ("KEEP", "symlink", "symlink"),
    }


def test_special_files_are_unknown(make_file: Maker) -> None:
    root = make_file.root  # type: ignore[attr-defined]
    os.mkfifo(root / "pipe")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "sock"))
        result = plan_of(root)
    assert result["pipe"] == ("UNKNOWN", "special-file")
    assert result["sock"] == ("UNKNOWN", "special-file")


def test_unreadable_directory_is_unknown() -> None:
    # root may read anything, so the walk runs as an unprivileged uid in a forked child
    root = Path(tempfile.mkdtemp(prefix="tapts-locked-"))
    try:
        os.chmod(root, 0o755)
        (root / "locked").mkdir()
        (root / "locked" / "inside.txt").write_text("x")
        os.chmod(root / "locked", 0)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            code = 1
            try:
                if os.geteuid() == 0:
                    os.setuid(65534)
                plan = cleanup_downloads(root, now=NOW)
                got = [(e.path, e.label.value, e.rule, e.reason) for e in plan.entries]
                code = 0 if got == [("locked", "UNKNOWN", "unreadable", "permission denied")] else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        os.chmod(root / "locked", 0o755)
        shutil.rmtree(root)


def test_non_utf8_and_newline_names_are_lossless(make_file: Maker) -> None:
    make_file(b"caf\xe9.txt", age=20 * DAY)
    make_file(b"two\nlines.txt", b"22", age=20 * DAY)
    plan = cleanup_downloads(make_file.root, now=NOW)  # type: ignore[attr-defined]
    by = {e.raw_path: e for e in plan.entries}
    assert by[b"caf\xe9.txt"].path == "caf\\xe9.txt" and by[b"caf\xe9.txt"].path_hex == b"caf\xe9.txt".hex()
    assert by[b"two\nlines.txt"].path == "two\nlines.txt" and by[b"two\nlines.txt"].path_hex is None
    text = plan.to_json()
    assert CleanupPlan.from_json(text) == plan
    text.encode("ascii")  # escaped, so any consumer can read it


def test_very_deep_tree_does_not_crash_and_reports_the_cut(make_file: Maker) -> None:
    deep = "/".join(["d"] * 60) + "/leaf.txt"
    make_file(deep, age=20 * DAY)
    policy = CleanupPolicy(max_depth=40)
    plan = cleanup_downloads(make_file.root, now=NOW, policy=policy)  # type: ignore[attr-defined]
    assert [(e.label.value, e.rule) for e in plan.entries] == [("UNKNOWN", "too-deep")]
    full = cleanup_downloads(make_file.root, now=NOW)  # type: ignore[attr-defined]
    assert [e.path for e in full.entries] == [deep]


def test_path_longer_than_path_max_is_planned(make_file: Maker) -> None:
    # 300 levels of 20-byte names: far beyond PATH_MAX, fine with descriptor-relative walking
    parts = ["x" * 20] * 220
    root = make_file.root  # type: ignore[attr-defined]
    fd = os.open(root, os.O_RDONLY)
    try:
        for part in parts:
            os.mkdir(part, dir_fd=fd)
            nfd = os.open(part, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        leaf = os.open("leaf", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
        os.write(leaf, b"data")
        os.close(leaf)
        os.utime("leaf", (NOW.timestamp() - DAY * 20,) * 2, dir_fd=fd)
    finally:
        os.close(fd)
    plan = cleanup_downloads(root, now=NOW)
    assert len(plan.entries) == 1 and plan.entries[0].path.endswith("/leaf")
    assert plan.entries[0].label is L.KEEP


def test_scan_limit_is_reported(make_file: Maker) -> None:
    for index in range(30):
        make_file(f"f{index:02}.txt", str(index).encode(), age=20 * DAY)
    plan = cleanup_downloads(make_file.root, scan_limit=10, now=NOW)  # type: ignore[attr-defined]
    assert plan.limit_hit and plan.scanned == 10 and len(plan.entries) == 10
    full = cleanup_downloads(make_file.root, scan_limit=30, now=NOW)  # type: ignore[attr-defined]
    assert not full.limit_hit and len(full.entries) == 30


def test_plans_are_byte_identical_for_the_same_tree_and_now(make_file: Maker) -> None:
    for index in range(50):
        make_file(f"d{index % 5}/f{index}.bin", bytes([index % 7]) * (index % 4), age=(index + 1) * 9 * DAY)
    first = cleanup_downloads(make_file.root, now=NOW).to_json()  # type: ignore[attr-defined]
    second = cleanup_downloads(make_file.root, now=NOW).to_json()  # type: ignore[attr-defined]
    assert first == second
    assert json.loads(first)["now"] == "2026-11-21T12:00:00Z"


def test_dry_run_writes_nothing(make_file: Maker) -> None:
    make_file("dup1", b"same", age=400 * DAY)
    make_file("dup2", b"same", age=400 * DAY)
    root = make_file.root  # type: ignore[attr-defined]
    before = sorted((p, p.stat().st_mtime_ns) for p in root.rglob("*"))
    cleanup_downloads(root, now=NOW)
    assert sorted((p, p.stat().st_mtime_ns) for p in root.rglob("*")) == before


def test_dry_run_false_needs_an_approver(make_file: Maker) -> None:
    make_file("dup1", b"same", age=400 * DAY)
    with pytest.raises(ApprovalRequired):
        cleanup_downloads(make_file.root, dry_run=False, now=NOW)  # type: ignore[attr-defined]


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(CleanupError, match="does not exist"):
        cleanup_downloads(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(CleanupError, match="not a directory"):
        cleanup_downloads(tmp_path / "file")
    with pytest.raises(UsageError):
        cleanup_downloads(tmp_path, scan_limit=0)
    with pytest.raises(UsageError, match="ISO 8601"):
        parse_now("yesterday")


def test_cli_stdout_is_only_the_plan(make_file: Maker, capsys: pytest.CaptureFixture[str]) -> None:
    make_file("a.txt", age=20 * DAY)
    assert main([str(make_file.root), "--now", "2026-11-21T12:00:00Z"]) == 0  # type: ignore[attr-defined]
    out = capsys.readouterr().out
    assert json.loads(out)["entries"][0]["path"] == "a.txt"


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--now", "not-a-time"], "ISO 8601"), (["--apply"], "--approved-by")],
)
def test_cli_errors_go_to_stderr(
    make_file: Maker, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert main([str(make_file.root), *args]) != 0  # type: ignore[attr-defined]
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err


def test_cli_missing_dir_and_file_instead_of_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "nope")]) != 0
    (tmp_path / "f").write_text("x")
    assert main([str(tmp_path / "f")]) != 0
    captured = capsys.readouterr()
    assert captured.out == "" and "does not exist" in captured.err and "not a directory" in captured.err
