"""The memory journal's rollback evidence, handed to the session from the launcher's own settings.

A journal inside the session compares its chains with a signed checkpoint
(``TERMINAI_JOURNAL_CHECKPOINT``) and an outside witness (``TERMINAI_JOURNAL_WITNESS``),
see docs/MEMORY_API.md. Both live on the host, outside the session's mounts, so the agent
can neither lower nor remove them. The user sets these two variables in the launcher's
own environment (the names the journal reads, so the operator's ``memory verify`` on the
host uses the same files); the launcher checks them here and passes them in itself:

* the checkpoint, a regular file, mounted read-only at :data:`CHECKPOINT_IN_SESSION`;
* the witness, a directory, mounted read-write at :data:`WITNESS_IN_SESSION` (every
  writer of the journal records its chain counts there, and only moves them forward).

``TERMINAI_*`` names stay refused in ``SANDBOX_ENV`` and ``--env`` (issue #33): a value the
session reads at start comes from here, checked, never from a free-form variable. The
checkpoint key (``TERMINAI_JOURNAL_CHECKPOINT_KEY``) is never passed: whoever holds it can
make checkpoints, so it stays with the operator.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping

from terminai_apts.records import frozen_record

from terminai_sandbox.errors import ConfigError

CHECKPOINT_ENV = "TERMINAI_JOURNAL_CHECKPOINT"
WITNESS_ENV = "TERMINAI_JOURNAL_WITNESS"
KEY_ENV = "TERMINAI_JOURNAL_CHECKPOINT_KEY"
CHECKPOINT_IN_SESSION = "/run/terminai/journal/checkpoint.json"
WITNESS_IN_SESSION = "/run/terminai/journal/witness"


@frozen_record
class JournalTrust:
    """Host paths (real, checked) of the journal's checkpoint and witness; None: not configured."""

    checkpoint: str | None = None
    witness: str | None = None

    def session_env(self) -> list[str]:
        """The ``NAME=VALUE`` items the session gets."""
        out = []
        if self.checkpoint is not None:
            out.append(f"{CHECKPOINT_ENV}={CHECKPOINT_IN_SESSION}")
        if self.witness is not None:
            out.append(f"{WITNESS_ENV}={WITNESS_IN_SESSION}")
        return out

    def mounts(self) -> list[tuple[str, str, bool]]:
        """``(host source, session target, read-only)`` for each configured file."""
        out = []
        if self.checkpoint is not None:
            out.append((self.checkpoint, CHECKPOINT_IN_SESSION, True))
        if self.witness is not None:
            out.append((self.witness, WITNESS_IN_SESSION, False))
        return out


def resolve(env: Mapping[str, str]) -> JournalTrust:
    """The checkpoint and witness the launcher's environment names, each checked."""
    return JournalTrust(
        checkpoint=_path(env, CHECKPOINT_ENV, directory=False), witness=_path(env, WITNESS_ENV, directory=True)
    )


def _path(env: Mapping[str, str], name: str, *, directory: bool) -> str | None:
    value = env.get(name, "")
    if not value:
        return None
    what = "directory" if directory else "regular file"
    hint = f"set {name} to an absolute path of an existing {what} outside the session's folders, or unset it"
    if not os.path.isabs(value):
        raise ConfigError(f"{name}={value!r} is not an absolute path", hint=hint)
    try:
        info = os.lstat(value)
    except OSError as exc:
        raise ConfigError(f"{name}={value}: {exc.strerror}", hint=hint) from None
    if stat.S_ISLNK(info.st_mode):
        # Mounted by path: a link could be pointed elsewhere between this check and the mount.
        raise ConfigError(f"{name}={value} is a symbolic link", hint=f"name its target ({os.path.realpath(value)})")
    if directory != stat.S_ISDIR(info.st_mode) or (not directory and not stat.S_ISREG(info.st_mode)):
        raise ConfigError(f"{name}={value} is not a {what}", hint=hint)
    return os.path.realpath(value)
