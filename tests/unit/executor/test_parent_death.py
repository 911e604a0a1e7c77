"""A run forked straight into its PID namespace is that namespace's PID 1: its parent
(the zygote) is outside it, so ``getppid()`` is 0 before and after the parent's death.
``die_with_parent`` must still see a parent that died before the parent-death signal
was set (the process would otherwise outlive it); it does with a pidfd of the parent."""

from __future__ import annotations

import os
import select

import pytest
from terminai_apts.executor.os_layer import limits, namespaces

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a PID namespace of its own needs root here")


def _outlives_its_parent(*, with_pidfd: bool) -> bool:
    """A process, PID 1 of a new namespace, whose parent has died by the time it sets its
    parent-death signal: whether it goes on running after ``die_with_parent``."""
    read, write = os.pipe()
    helper = os.fork()
    if helper == 0:
        try:
            os.close(read)
            if namespaces._libc().unshare(namespaces.CLONE_NEWPID) != 0:
                os._exit(2)
            parent = os.pidfd_open(os.getpid())
            if os.fork() == 0:
                select.select([parent], [], [], 5)  # until the parent has exited
                limits.die_with_parent(parent if with_pidfd else None)
                os.write(write, b"outlived")
            os._exit(0)
        finally:
            os._exit(1)
    os.close(write)
    _, status = os.waitpid(helper, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    try:
        ready, _, _ = select.select([read], [], [], 10)
        return bool(ready) and os.read(read, 16) == b"outlived"
    finally:
        os.close(read)


def test_a_parent_outside_the_pid_namespace_that_died_first_is_seen() -> None:
    assert not _outlives_its_parent(with_pidfd=True)


def test_getppid_alone_cannot_see_it() -> None:
    """The companion: the check by ``getppid()`` alone lets the process run on."""
    assert _outlives_its_parent(with_pidfd=False)
