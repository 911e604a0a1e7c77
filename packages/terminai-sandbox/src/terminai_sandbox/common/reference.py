"""Parsing of image references (``[host[:port]/]path[:tag][@sha256:hex]``).

One strict parser shared by the registry client, the build and the launcher. It follows
the distribution reference grammar: the first component is a registry host when it
contains a ``.`` or ``:`` or is ``localhost``; otherwise the reference names Docker Hub
(which this project never contacts, but a user may still type such a name).
"""

from __future__ import annotations

import re

from terminai_apts.records import frozen_record

from terminai_sandbox.errors import ConfigError

_DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_COMPONENT_RE = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_HOST_RE = re.compile(
    r"^(?:localhost|\[[0-9A-Fa-f:]+\]|[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*)(?::[0-9]{1,5})?$"
)

DEFAULT_REGISTRY = "docker.io"
# Tags that move by design: a launch refuses them unless told otherwise (preflight step 2).
FLOATING_TAGS = ("latest", "stable", "edge", "nightly", "main", "master", "dev")
ACCEPTED_FORM = "[HOST[:PORT]/]NAME[:TAG][@sha256:<64 hex>], e.g. 127.0.0.1:5000/terminai/sandbox:0.1.0"


def is_digest(value: str) -> bool:
    """True when ``value`` is a well-formed ``sha256:<64 lowercase hex>`` digest."""
    return bool(_DIGEST_RE.match(value))


@frozen_record
class ImageRef:
    """A parsed image reference. ``registry`` is ``docker.io`` when none was given."""

    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @classmethod
    def parse(cls, text: str, *, what: str = "image reference") -> ImageRef:
        """Parse ``text`` strictly; raise :class:`ConfigError` naming ``what`` if malformed."""
        raw = text.strip()
        if not raw:
            raise ConfigError(f"{what} is empty", hint=f"use the form {ACCEPTED_FORM}")
        if raw != text or any(ch.isspace() for ch in raw):
            raise ConfigError(f"{what} {text!r} contains white space", hint=f"use the form {ACCEPTED_FORM}")
        rest, digest = raw, None
        if "@" in rest:
            rest, digest = rest.split("@", 1)
            if not is_digest(digest):
                raise ConfigError(
                    f"{what} {text!r} has a malformed digest {digest!r}",
                    hint="a digest is 'sha256:' followed by 64 lowercase hex characters",
                )
        registry = DEFAULT_REGISTRY
        first, sep, remainder = rest.partition("/")
        if sep and ("." in first or ":" in first or first == "localhost" or first.startswith("[")):
            if not _HOST_RE.match(first):
                raise ConfigError(
                    f"{what} {text!r} has a malformed registry host {first!r}", hint=f"use the form {ACCEPTED_FORM}"
                )
            registry, rest = first, remainder
        tag = None
        last_slash = rest.rfind("/")
        colon = rest.rfind(":")
        if colon > last_slash:
            rest, tag = rest[:colon], rest[colon + 1 :]
            if not _TAG_RE.match(tag):
                raise ConfigError(
                    f"{what} {text!r} has a malformed tag {tag!r}",
                    hint="a tag is up to 128 of [A-Za-z0-9_.-], not starting with '.' or '-'",
                )
        if not rest or not all(_COMPONENT_RE.match(part) for part in rest.split("/")):
            raise ConfigError(
                f"{what} {text!r} has a malformed repository name {rest!r}",
                hint="repository names are lowercase components separated by '/'",
            )
        if len(first if registry != DEFAULT_REGISTRY else "") + len(rest) >= 255:  # distribution's reference grammar
            raise ConfigError(
                f"{what} {text[:60]!r}... has a repository name of {len(rest)} characters",
                hint="a name (registry and repository) must be shorter than 256 characters",
            )
        if registry == DEFAULT_REGISTRY and "/" not in rest:
            rest = f"library/{rest}"
        return cls(registry=registry, repository=rest, tag=tag, digest=digest)

    @property
    def name(self) -> str:
        """``registry/repository`` without tag or digest."""
        return f"{self.registry}/{self.repository}"

    def with_digest(self, digest: str) -> ImageRef:
        """The same reference pinned to ``digest`` (the tag is kept for display only)."""
        if not is_digest(digest):
            raise ConfigError(f"malformed digest {digest!r}")
        return ImageRef(registry=self.registry, repository=self.repository, tag=self.tag, digest=digest)

    @property
    def pinned(self) -> str:
        """``registry/repository@digest``; raises if the reference has no digest."""
        if self.digest is None:
            raise ConfigError(f"{self} is not pinned to a digest")
        return f"{self.name}@{self.digest}"

    def __str__(self) -> str:
        text = self.name
        if self.tag:
            text += f":{self.tag}"
        if self.digest:
            text += f"@{self.digest}"
        return text
