"""Landlock: the child's file-system, TCP and scope confinement (unprivileged).

Landlock is a stackable Linux security module that any process may apply to itself
(after ``no_new_privs``); it works inside an unprivileged container, where namespaces
do not. The child keeps read access to what a run needs (the interpreter's prefixes
and ``sys.path``, the time zone data, the memory database) and write access to its
scratch directory only. From ABI 4 it also refuses TCP bind/connect, and from ABI 6 it
scopes signals and abstract unix sockets to the run's own domain.

There is no maintained Python binding, so the three system calls (stable numbers on
every architecture) are made through ``ctypes``.
"""

from __future__ import annotations

import ctypes
import os
import stat

_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1

# Access rights by the ABI version that introduced them.
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
_FS_V1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_IOCTL_DEV = 1 << 15  # ABI 5
_NET_TCP = (1 << 0) | (1 << 1)  # BIND_TCP, CONNECT_TCP (ABI 4)
_SCOPE = (1 << 0) | (1 << 1)  # ABSTRACT_UNIX_SOCKET, SIGNAL (ABI 6)
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | _TRUNCATE | _IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall() -> ctypes._CFuncPtr:  # type: ignore[name-defined]
    fn = ctypes.CDLL(None, use_errno=True).syscall
    fn.restype = ctypes.c_long
    return fn


def abi_version() -> int:
    """The kernel's Landlock ABI (0 when Landlock is absent, disabled or filtered)."""
    rc = int(_syscall()(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)))
    return max(rc, 0)


def handled_fs(abi: int) -> int:
    rights = _FS_V1
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


class Ruleset:
    """A ruleset the run fills while it waits for its caller, then applies to itself.

    Paths that do not exist (or that the run's uid could not reach) are skipped. Every
    failure raises ``OSError``, so the run fails closed rather than half-confined.
    """

    def __init__(self, abi: int) -> None:
        self.call = _syscall()
        self.abi = abi
        self.rights = handled_fs(abi)
        attr = _RulesetAttr(self.rights, _NET_TCP if abi >= 4 else 0, _SCOPE if abi >= 6 else 0)
        self.fd = int(self.call(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), 0))
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")

    def allow(self, paths: tuple[str, ...], *, write: bool = False) -> None:
        rights = self.rights if write else EXECUTE | READ_FILE | READ_DIR
        for path in paths:
            _allow(self.call, self.fd, path, rights)

    def restrict(self) -> None:
        """Apply the ruleset to the calling thread, for good."""
        try:
            if int(self.call(_SYS_RESTRICT_SELF, self.fd, 0)) != 0:
                raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
        finally:
            os.close(self.fd)


def _allow(call: ctypes._CFuncPtr, ruleset: int, path: str, rights: int) -> None:  # type: ignore[name-defined]
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (FileNotFoundError, PermissionError):
        return  # nothing to grant: the run could not reach it anyway
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= _FILE_RIGHTS
        rule = _PathBeneath(rights, fd)
        if int(call(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)
