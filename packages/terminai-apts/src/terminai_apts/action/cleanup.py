"""Downloads cleanup: a pure, deterministic planner and its command line.

``cleanup_downloads`` examines a folder and returns a :class:`~terminai_apts.model.CleanupPlan`
labelling every object (see :mod:`terminai_apts.action.rules` for the rules). Planning
only reads: it never follows symlinks, never leaves the folder, hashes only same-size
duplicate candidates, and stops after ``scan_limit`` objects (the plan says so). The same
tree and the same ``now`` give byte-identical JSON. Changing anything requires an
explicit approver through :func:`terminai_apts.action.apply.apply_plan`.

Command line (stdout carries the plan JSON and nothing else)::

    python -m terminai_apts.action.cleanup DIR [--now ISO8601] [--scan-limit N]
        [--apply --approved-by NAME] [--plan PLAN.json] [--undo JOURNAL]
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from terminai_apts import params
from terminai_apts.action import rules
from terminai_apts.action.apply import ApplyReport, apply_plan, undo
from terminai_apts.action.scan import ChangedError, Found, sha256_of, walk
from terminai_apts.boundary import ArgumentParser, guarded, json_asked, path_error
from terminai_apts.errors import ApprovalRequired, CleanupError, PathError, UsageError
from terminai_apts.model import CleanupEntry, CleanupPlan, CleanupPolicy, ObjectTableLabels

__all__ = ["ApplyReport", "apply_plan", "cleanup_downloads", "default_downloads_dir", "main", "undo"]


def default_downloads_dir() -> Path:
    """``$XDG_DOWNLOAD_DIR`` when set, else ``~/Downloads``."""
    configured = os.environ.get("XDG_DOWNLOAD_DIR")
    return Path(configured).expanduser() if configured else Path.home() / "Downloads"


def parse_now(text: str) -> datetime:
    """Parse an ISO 8601 time; a time without a zone is taken as UTC."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"--now {text!r} is not an ISO 8601 time",
            hint="use e.g. 2026-11-21T12:00:00Z or 2026-11-21",
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _display(rel: bytes) -> tuple[str, str | None]:
    try:
        return rel.decode("utf-8"), None
    except UnicodeDecodeError:
        return rel.decode("utf-8", "backslashreplace"), rel.hex()


def cleanup_downloads(
    downloads_dir: str | os.PathLike[str] | None = None,
    dry_run: bool = True,
    scan_limit: int = 10000,
    *,
    now: datetime | None = None,
    policy: CleanupPolicy | None = None,
    approved_by: str | None = None,
) -> CleanupPlan:
    """Plan the cleanup of ``downloads_dir`` (default: the user's Downloads folder).

    With ``dry_run=True`` (the default) nothing is written anywhere. ``dry_run=False``
    applies the plan and therefore needs ``approved_by``; without it
    :class:`~terminai_apts.errors.ApprovalRequired` is raised before anything is touched.
    ``now`` fixes the reference time (default: the current time) so that plans are
    reproducible. Raises :class:`~terminai_apts.errors.CleanupError` when the folder is
    missing or not a directory.
    """
    if not dry_run and not (approved_by and approved_by.strip()):
        raise ApprovalRequired(
            "cleanup with dry_run=False needs an explicit approver",
            hint="pass approved_by='NAME' (or review the plan and call apply_plan)",
        )
    if isinstance(scan_limit, bool) or not isinstance(scan_limit, int) or scan_limit < 1:
        raise UsageError(f"scan_limit must be a positive integer, got {scan_limit!r}")
    policy = policy or CleanupPolicy()
    moment = now or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    if isinstance(downloads_dir, str) and not downloads_dir.strip():
        # Path("") is the current directory: an unset $DIR would plan (and move) the wrong folder.
        raise UsageError(
            f"the folder to clean is empty ({downloads_dir!r})",
            hint="name the folder explicitly; an empty argument is usually an unset variable",
        )
    root = Path(downloads_dir) if downloads_dir is not None else default_downloads_dir()
    plan = _plan(root, moment, scan_limit, policy)
    if dry_run:
        return plan
    assert approved_by is not None
    apply_plan(plan, approved_by=approved_by)
    return CleanupPlan(
        root=plan.root,
        now=plan.now,
        policy=plan.policy,
        entries=plan.entries,
        scanned=plan.scanned,
        scan_limit=plan.scan_limit,
        limit_hit=plan.limit_hit,
        dry_run=False,
    )


def _open_root(root: Path) -> tuple[int, str]:
    real = os.path.realpath(root)
    try:
        fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise CleanupError(f"folder {str(root)!r} does not exist", hint="pass an existing directory") from None
    except NotADirectoryError:
        raise CleanupError(f"{str(root)!r} is not a directory", hint="pass a directory, not a file") from None
    except PermissionError:
        raise CleanupError(f"folder {str(root)!r} cannot be read: permission denied") from None
    return fd, real


def _plan(root: Path, moment: datetime, scan_limit: int, policy: CleanupPolicy) -> CleanupPlan:
    root_fd, real = _open_root(root)
    try:
        now_ns = int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000
        skip = frozenset({policy.workspace.encode()})
        found: list[Found] = []
        for item in walk(root_fd, skip_top=skip, max_depth=policy.max_depth, limit=scan_limit + 1):
            found.append(item)
        limit_hit = len(found) > scan_limit
        found = found[:scan_limit]
        entries = _classify(root_fd, found, now_ns, policy)
    finally:
        os.close(root_fd)
    entries.sort(key=lambda e: e.raw_path)
    return CleanupPlan(
        root=real,
        now=_iso(moment),
        policy=policy,
        entries=tuple(entries),
        scanned=len(found),
        scan_limit=scan_limit,
        limit_hit=limit_hit,
        dry_run=True,
    )


def _entry(item: Found, verdict: rules.Verdict, **extra: str | None) -> CleanupEntry:
    label, rule, reason = verdict
    path, path_hex = _display(item.rel)
    return CleanupEntry(
        path=path,
        path_hex=path_hex,
        kind=item.kind,
        label=label,
        rule=rule,
        reason=reason,
        size=item.size if item.kind != "dir" else None,
        mtime_ns=item.mtime_ns,
        sha256=extra.get("sha256"),
        duplicate_of=extra.get("duplicate_of"),
    )


def _classify(root_fd: int, found: list[Found], now_ns: int, policy: CleanupPolicy) -> list[CleanupEntry]:
    files = [item.rel for item in found if item.kind == "file" and item.error is None]
    targets = rules.in_progress_targets(files, policy)
    entries: list[CleanupEntry] = []
    pending: list[Found] = []
    for item in found:
        if item.kind == "dir" and item.error is None:
            continue  # directories are containers, not plan entries
        verdict = rules.before_hashing(
            rel=item.rel,
            kind=item.kind,
            size=item.size,
            mtime_ns=item.mtime_ns,
            error=item.error,
            now_ns=now_ns,
            policy=policy,
            in_progress_targets=targets,
        )
        if verdict is None:
            pending.append(item)
        else:
            entries.append(_entry(item, verdict))

    by_size: dict[int, list[Found]] = defaultdict(list)
    for item in pending:
        assert item.size is not None
        by_size[item.size].append(item)
    hashes: dict[bytes, str] = {}
    failed: set[bytes] = set()
    for group in by_size.values():
        if len(group) < 2:
            continue  # a unique size cannot have a duplicate: never read it
        for item in group:
            assert item.dev is not None and item.ino is not None
            assert item.size is not None and item.mtime_ns is not None
            try:
                hashes[item.rel] = sha256_of(root_fd, item.rel, expect=(item.dev, item.ino, item.size, item.mtime_ns))
            except ChangedError as exc:
                failed.add(item.rel)
                entries.append(_entry(item, (ObjectTableLabels.UNKNOWN, "changed-during-planning", str(exc))))
            except OSError as exc:
                failed.add(item.rel)
                reason = "permission denied" if isinstance(exc, PermissionError) else "could not be read"
                entries.append(_entry(item, (ObjectTableLabels.UNKNOWN, "unreadable", reason)))

    by_digest: dict[str, list[Found]] = defaultdict(list)
    for item in pending:
        if item.rel in hashes:
            by_digest[hashes[item.rel]].append(item)
    duplicate_of: dict[bytes, bytes] = {}
    for group in by_digest.values():
        if len(group) < 2:
            continue
        ordered = sorted(group, key=lambda f: rules.canonical_key(f.rel, f.mtime_ns or 0))
        for item in ordered[1:]:
            duplicate_of[item.rel] = ordered[0].rel

    for item in pending:
        if item.rel in failed:
            continue  # already reported as unreadable or changed
        digest = hashes.get(item.rel)
        if item.rel in duplicate_of:
            canonical = _display(duplicate_of[item.rel])[0]
            verdict = (ObjectTableLabels.DELETE, "duplicate", f"same content as {canonical!r}, which is kept")
            entries.append(_entry(item, verdict, sha256=digest, duplicate_of=canonical))
            continue
        assert item.mtime_ns is not None
        verdict = rules.after_hashing(rel=item.rel, mtime_ns=item.mtime_ns, now_ns=now_ns, policy=policy)
        entries.append(_entry(item, verdict, sha256=digest))
    return entries


def _load_plan(path: str) -> CleanupPlan:
    # A plan file that cannot be read or is not a plan is a refused input file (exit 3, as
    # docs/EXIT_CODES.md says), named with the reason and not a usage error.
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise path_error(exc, path) from None
    try:
        return CleanupPlan.from_json(text)
    except (ValueError, KeyError, TypeError) as exc:
        raise PathError(
            f"--plan {path!r} is not a cleanup plan: {exc}",
            hint="pass the JSON plan a run without --apply printed (terminai-apts cleanup DIR > plan.json)",
        ) from None


def build_parser(prog: str = "python -m terminai_apts.action.cleanup") -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog=prog,
        description="Plan (and, with an approver, apply) a cleanup of a downloads folder. "
        "The plan is printed as JSON on stdout; diagnostics go to stderr.",
        epilog="exit codes: 0 done, 1 some moves failed (see the journal), 2 usage, 3 unusable path, "
        "20 cleanup refused, 21 approval required, 22 journal unreadable, 130 interrupted, 143 terminated "
        "(an interrupted or terminated apply is resumed or undone from its journal)",
    )
    # The folder keeps its own empty-argument message (cleanup_downloads says it, for callers
    # of the function too); its other kinds are refused here, before anything is scanned.
    parser.add_argument("directory", metavar="DIR", type=_folder, help="the folder to plan")
    parser.add_argument("--now", help="reference time, ISO 8601 (default: now); makes plans reproducible")
    parser.add_argument(
        "--scan-limit",
        type=params.Number("--scan-limit", int, 1, 10**9),
        default=10000,
        help="stop after this many objects",
    )
    parser.add_argument("--apply", action="store_true", help="apply the plan (needs --approved-by)")
    parser.add_argument("--approved-by", metavar="NAME", help="who approved applying the plan")
    parser.add_argument(
        "--plan",
        metavar="FILE",
        type=params.InputPath("--plan"),
        help="with --apply: apply this reviewed plan instead of a fresh one",
    )
    parser.add_argument(
        "--undo", metavar="JOURNAL", type=params.InputPath("--undo"), help="undo the apply recorded in JOURNAL and exit"
    )
    # The plan is JSON already; --json makes a failure one JSON object on stdout too.
    parser.add_argument("--json", action="store_true", help="on failure, also print the error as JSON on stdout")
    return parser


class _Folder(params.InputPath):
    def __call__(self, text: str) -> str:
        return text if text == "" else super().__call__(text)


_folder = _Folder("DIR", want="dir", error=CleanupError)


def run(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """The command line's work; failures propagate to the caller's error boundary."""
    args = (build_parser(prog) if prog else build_parser()).parse_args(argv)
    if args.undo:
        report = undo(Path(args.undo))
        print(report.summary(), file=sys.stderr)
        return 0 if report.ok else 1
    if args.apply and not (args.approved_by and args.approved_by.strip()):
        raise ApprovalRequired("--apply needs --approved-by NAME", hint="name who approved this cleanup")
    now = parse_now(args.now) if args.now else None
    if args.plan:
        plan = _load_plan(args.plan)
    else:
        plan = cleanup_downloads(args.directory, dry_run=True, scan_limit=args.scan_limit, now=now)
    sys.stdout.write(plan.to_json() + "\n")
    sys.stdout.flush()
    if plan.limit_hit:
        print(f"warning: scan stopped at --scan-limit {plan.scan_limit}; the plan is partial", file=sys.stderr)
    if args.apply:
        try:
            outcome = apply_plan(plan, approved_by=args.approved_by)
        except KeyboardInterrupt:
            # Every move is journalled before it happens: the apply can be finished or undone.
            print(
                "warning: apply interrupted; the journal under the folder's workspace records every move made "
                "(undo them with --undo JOURNAL)",
                file=sys.stderr,
            )
            raise
        print(outcome.summary(), file=sys.stderr)
        return 0 if outcome.ok else 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    return guarded(lambda: run(words), as_json=lambda: json_asked(words))


if __name__ == "__main__":
    sys.exit(main())
