"""The cleanup rules: pure functions from what the walk saw to a label, a rule id and a reason.

Rule ids are stable (they appear in plans and in the contract's schema description):

==========================  =========  ==================================================
rule                        label      when
==========================  =========  ==================================================
``unreadable``              UNKNOWN    could not be examined (vanished, permission denied)
``too-deep``                UNKNOWN    a directory nested deeper than ``max_depth``
``special-file``            UNKNOWN    FIFO, socket, device or other non-regular object
``changed-during-planning`` UNKNOWN    differed between the walk and hashing
``symlink``                 KEEP       a symbolic link (its target is never followed)
``partial-download``        TRANSIT    a partial-download marker (``.crdownload`` ...)
``download-in-progress``    TRANSIT    the target of an ``.aria2`` control file or similar
``recently-modified``       TRANSIT    modified within the settle window (or in the future)
``empty-file``              DELETE     zero bytes
``duplicate``               DELETE     same bytes as the canonical copy (``duplicate_of``)
``stale-installer``         DELETE     installer or disk image older than the threshold
``old-file``                ARCHIVE    older than the archive threshold
``default``                 KEEP       nothing else applies
==========================  =========  ==================================================

The canonical copy of a duplicate set is the one with the oldest modification time, then
the shortest path, then the smallest path bytes: the original download usually predates
its ``(1)`` copies, and the tie-breaks make the choice independent of directory order.
"""

from __future__ import annotations

from terminai_apts.model import CleanupPolicy, ObjectTableLabels

Verdict = tuple[ObjectTableLabels, str, str]

_NS = 1_000_000_000


def _lower_name(rel: bytes) -> str:
    return rel.rsplit(b"/", 1)[-1].decode("utf-8", "replace").lower()


def before_hashing(
    *,
    rel: bytes,
    kind: str,
    size: int | None,
    mtime_ns: int | None,
    error: str | None,
    now_ns: int,
    policy: CleanupPolicy,
    in_progress_targets: frozenset[bytes],
) -> Verdict | None:
    """The verdict that does not need content hashes, or None to continue."""
    if error is not None:
        if error.startswith("nested deeper"):
            return ObjectTableLabels.UNKNOWN, "too-deep", error
        return ObjectTableLabels.UNKNOWN, "unreadable", error
    if kind == "symlink":
        return ObjectTableLabels.KEEP, "symlink", "symbolic link; its target is never followed or touched"
    if kind != "file":
        return ObjectTableLabels.UNKNOWN, "special-file", f"special file ({kind}); never touched"
    name = _lower_name(rel)
    for suffix in policy.partial_suffixes:
        if name.endswith(suffix.lower()):
            return ObjectTableLabels.TRANSIT, "partial-download", f"partial-download marker '{suffix}'"
    if rel in in_progress_targets:
        return ObjectTableLabels.TRANSIT, "download-in-progress", "a download manager's control file names it"
    assert mtime_ns is not None and size is not None
    if mtime_ns > now_ns - policy.settle_seconds * _NS:
        return (
            ObjectTableLabels.TRANSIT,
            "recently-modified",
            f"modified within the last {policy.settle_seconds} s (or in the future); may still be in use",
        )
    if size == 0:
        return ObjectTableLabels.DELETE, "empty-file", "zero-byte file"
    return None


def after_hashing(*, rel: bytes, mtime_ns: int, now_ns: int, policy: CleanupPolicy) -> Verdict:
    """The verdict for a regular, settled, non-empty file that is not a duplicate."""
    age_s = (now_ns - mtime_ns) // _NS
    name = _lower_name(rel)
    for suffix in policy.installer_suffixes:
        if name.endswith(suffix.lower()) and age_s > policy.installer_age_seconds:
            days = policy.installer_age_seconds // 86400
            return ObjectTableLabels.DELETE, "stale-installer", f"installer or disk image older than {days} days"
    if age_s > policy.archive_age_seconds:
        days = policy.archive_age_seconds // 86400
        return ObjectTableLabels.ARCHIVE, "old-file", f"not modified for more than {days} days"
    return ObjectTableLabels.KEEP, "default", "recent enough and not a duplicate, empty or stale installer"


def in_progress_targets(paths: list[bytes], policy: CleanupPolicy) -> frozenset[bytes]:
    """Files that a sibling control file marks as still downloading (``x.iso.aria2`` → ``x.iso``)."""
    present = set(paths)
    targets = set()
    for rel in paths:
        lowered = rel.lower()
        for suffix in policy.partial_suffixes:
            encoded = suffix.lower().encode()
            if lowered.endswith(encoded):
                target = rel[: -len(encoded)]
                if target in present:
                    targets.add(target)
    return frozenset(targets)


def canonical_key(rel: bytes, mtime_ns: int) -> tuple[int, int, bytes]:
    """Sort key choosing the canonical copy of a duplicate set (see the module docstring)."""
    return (mtime_ns, len(rel), rel)
