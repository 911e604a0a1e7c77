"""The one error hierarchy of ``terminai_sandbox``.

Every failure a user can meet is a :class:`SandboxError` with a message (what went
wrong), a hint (what to do about it) and a stable exit code. Library code raises; only
the click group in :mod:`terminai_sandbox.cli` and the launch kernel's ``run`` entry
(:mod:`terminai_sandbox.launch.entry`) turn an error into an exit code and print it.
This module imports nothing: the launch kernel imports it on every session start.

Exit codes are part of the public interface (scripts and CI branch on them); never
renumber one, only add.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's would be this module's one import, on every session start


class SandboxError(Exception):
    """Root of every error the tooling raises on purpose."""

    # Class attributes each subclass overrides. Not annotated ClassVar: this module is the
    # launch kernel's one import from the package besides the version, and importing typing
    # for an annotation would cost every session start.
    exit_code: int = 1
    # Every class has a remedy of its own, so no error reaches a user without a hint line
    # (a raise site with a better one passes ``hint=``); a unit test holds every subclass to it.
    default_hint: str = "see 'terminai-sandbox COMMAND --help' and docs/EXIT_CODES.md"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint or self.default_hint

    def __str__(self) -> str:
        return self.message

    def render(self) -> str:
        """The text shown to a user: the message, then the remedy on its own line."""
        return f"error: {self.message}\n  hint: {self.hint}"


class ConfigError(SandboxError):
    """A setting, environment variable, flag or input file is malformed or refused."""

    exit_code = 3
    default_hint = "check the setting, flag or file the message names, then run the command again"


class ArtifactError(ConfigError):
    """An artefact handed from one step to the next (an OCI layout, a lock, a contract
    manifest) is missing or malformed. Exit code 3, like any other refused input file."""

    default_hint = "rebuild it with the command that writes it, or pass the right path"


class ArtifactCorrupted(ArtifactError):
    """An artefact's bytes do not hash to the digest that names them."""

    default_hint = "the file changed after it was written; rebuild it (never edit a layout by hand)"


class PathError(ConfigError):
    """A file or directory cannot be used: missing, a directory where a file is expected,
    unreadable, read-only, on a full device, or not UTF-8 text. Exit code 3, as a refused
    input is; the message names the path."""

    default_hint = "check the path and its permissions"

    # errno → remedy; numbers (Linux and the BSDs agree on these) keep this module import-free.
    _HINTS: dict[int, str] = {  # noqa: RUF012  (read-only; ClassVar would need typing)
        2: "check the path; the parent directory must exist",  # ENOENT
        21: "pass a file, not a directory",  # EISDIR
        20: "a component of the path is a file, not a directory",  # ENOTDIR
        13: "choose a location you may read and write",  # EACCES
        1: "choose a location you may read and write",  # EPERM
        30: "the file system is read-only; choose a writable location",  # EROFS
        28: "the device is full; free space or choose another location",  # ENOSPC
        17: "remove it first or choose another name",  # EEXIST
    }

    @classmethod
    def from_os(cls, exc: OSError) -> PathError:
        """The error for a failed file operation: which path, why, what to do."""
        where = exc.filename if exc.filename is not None else "a file"
        if isinstance(where, bytes):
            where = where.decode("utf-8", "backslashreplace")
        reason = exc.strerror or type(exc).__name__
        return cls(f"{where}: {reason}", hint=cls._HINTS.get(exc.errno or 0))


class EngineError(SandboxError):
    """No usable container engine: not installed, daemon down, socket not permitted."""

    exit_code = 4
    default_hint = "check that the container engine is running and that DOCKER_HOST, if set, names its socket"


class BuildError(SandboxError):
    """The image could not be assembled, or the result is not what the inputs say."""

    exit_code = 5
    default_hint = "read the step that failed above; 'terminai-sandbox --debug build' shows more"


class LockError(BuildError):
    """The installed package set or a wheel does not match its lock."""

    exit_code = 6
    default_hint = "review the difference and relock with 'terminai-sandbox lock' (in a reviewed change)"


class ReproducibilityError(BuildError):
    """Two builds from the same inputs gave different bytes."""

    exit_code = 7
    default_hint = "compare the two builds' layers; an input that is not pinned or a timestamp not clamped differs"


class ContractError(SandboxError):
    """The toolset contract is not satisfied, or a manifest change is not allowed."""

    exit_code = 8
    default_hint = (
        "compare the manifests with 'terminai-sandbox contract diff OLD NEW'; "
        "removing or changing a name needs a major version"
    )


class RegistryError(SandboxError):
    """The registry refused, failed or could not be reached."""

    exit_code = 9
    default_hint = "check the registry's address, that it is running, and your login (docker login REGISTRY)"


# Kinds of registry failure, so callers branch on the type and never on the message text.
# They share RegistryError's exit code: the remedy differs, the failure class does not.
class RegistryNotFound(RegistryError):
    """The repository, tag, manifest or blob does not exist (HTTP 404)."""

    default_hint = "check the repository and the tag or digest"


class RegistryUnauthorized(RegistryError):
    """The registry wants a login, refused the credentials, or denies access (401/403)."""

    default_hint = "log in with 'docker login REGISTRY' or check your access to the repository"


class RegistryUnreachable(RegistryError):
    """No answer: connection refused or dropped after retries, DNS, TLS, timeouts."""

    default_hint = "check the address, that the registry is running, and the network"


class RegistryCorrupted(RegistryError):
    """The bytes served (or read from a layout) do not hash to the digest asked for."""

    default_hint = "the registry's storage or an answer on the way was altered; do not use this image"


class RegistryBadResponse(RegistryError):
    """The registry answered, but not as the distribution API says it should: an HTML page,
    junk or JSON of another shape, a missing header, a redirect loop, a body cut short, 5xx."""

    default_hint = "check that the address names an OCI registry (not a web page or a proxy), and its health"


class SigningError(SandboxError):
    """A signature or attestation could not be produced (keys, passwords, sigstore)."""

    exit_code = 10
    default_hint = "check the key file and its password (COSIGN_PASSWORD), or for --keyless the CI's OIDC identity"


class VerificationError(SandboxError):
    """A signature, attestation or digest did not verify. Nothing may run on this."""

    exit_code = 11
    default_hint = "do not run this image; check the key or identity you verify against, or sign the image again"


class SbomError(SandboxError):
    """The SBOM could not be generated or did not validate."""

    exit_code = 12
    default_hint = "rebuild the image layout and run 'terminai-sandbox sbom' again"


class LaunchError(SandboxError):
    """A preflight step refused the session, or the session could not start."""

    exit_code = 13
    default_hint = "run 'terminai-sandbox preflight' to see which step refused and why"


class EgressError(LaunchError):
    """The session's network-policy proxy (or the legacy proxy command) could not start."""

    exit_code = 18
    default_hint = (
        "see the proxy's message above; the session did not start. SANDBOX_NETWORK=off runs it without network"
    )


class AuditError(SandboxError):
    """The audit ledger is unreadable or its hash chain is broken."""

    exit_code = 15
    default_hint = (
        "keep the ledger for review and move it away to start a new one; "
        "'terminai-sandbox audit verify' names the first bad line"
    )


class ReleaseError(SandboxError):
    """A release step failed; nothing after it ran."""

    exit_code = 16
    default_hint = "fix the step the message names, then run the release again"


class EvolutionError(SandboxError):
    """Reserved for governed-evolution failures surfaced through the host CLI."""

    exit_code = 17
    default_hint = "see 'terminai-apts evolve status' in the image"


class UnexpectedError(SandboxError):
    """Something the tooling did not foresee failed; the console script reports it as one line.

    Never raised by library code: the console script and the launch kernel's ``run`` entry
    wrap any other exception in it, so a user sees what failed and how to get the details
    instead of a traceback.
    """

    exit_code = 1
    default_hint = "rerun with 'terminai-sandbox --debug ...' to see the traceback, and report it if it is a bug"

    @classmethod
    def wrapping(cls, exc: BaseException) -> UnexpectedError:
        """The error for ``exc``: its type and the first line of its message."""
        text = str(exc).strip().splitlines()
        detail = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
        return cls(f"unexpected failure: {detail}")


class Interrupted(SandboxError):
    """The user interrupted the command."""

    exit_code = 130
    default_hint = "nothing was left half-written; run the command again"


class Terminated(Interrupted):
    """The command was asked to stop (SIGTERM) and cleaned up as for Ctrl-C."""

    exit_code = 143


class SigTerm(KeyboardInterrupt):
    """SIGTERM, raised where the process is (:func:`stop_on_sigterm`), so that every path
    that cleans up after Ctrl-C (temporary files, containers, children) does so for it too."""


def stop_on_sigterm() -> None:
    """From now on SIGTERM raises :class:`SigTerm` in the main thread (once: a second one
    while the first one's clean-up runs is ignored)."""
    # _signal, the C module under signal, is loaded with the interpreter: a session start
    # (which sets this too) pays nothing for it (signal itself costs ~0.5 ms of enums).
    if TYPE_CHECKING:
        import signal as _signal  # noqa: PLC0415
    else:
        import _signal  # noqa: PLC0415

    def handler(signum: int, frame: object) -> None:
        _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
        raise SigTerm

    _signal.signal(_signal.SIGTERM, handler)


def as_sandbox_error(exc: BaseException) -> SandboxError:
    """``exc`` as the error a user sees: itself when it is one, a :class:`PathError` for a
    file that cannot be used, :class:`Interrupted` for Ctrl-C, else :class:`UnexpectedError`."""
    if isinstance(exc, SandboxError):
        return exc
    if isinstance(exc, SigTerm):
        return Terminated("terminated (SIGTERM)", hint="nothing was left half-written; run the command again")
    if isinstance(exc, KeyboardInterrupt):
        return Interrupted("interrupted", hint="nothing was left half-written; run the command again")
    if isinstance(exc, OSError) and (exc.filename is not None or exc.errno in PathError._HINTS):
        return PathError.from_os(exc)
    if isinstance(exc, UnicodeEncodeError) and exc.encoding.replace("-", "").lower() != "utf8":
        # The result is fine; the output stream's encoding (PYTHONIOENCODING=ascii, a C locale) cannot hold it.
        char = exc.object[exc.start : exc.start + 1]
        return ConfigError(
            f"the output cannot be written in the {exc.encoding!r} encoding (it holds {char!r})",
            hint="use a UTF-8 locale (LC_ALL=C.UTF-8) or set PYTHONIOENCODING=utf-8",
        )
    if isinstance(exc, UnicodeError):
        return ConfigError(f"an input is not valid UTF-8 text ({exc})", hint="pass UTF-8 text")
    return UnexpectedError.wrapping(exc)


def from_egress(exc: Exception) -> SandboxError:
    """The host error for one the egress policy or proxy raised (``terminai_apts.egress.errors``).

    The proxy lives in the toolset, so it cannot raise this hierarchy; its classes carry
    the name of the host class they stand for (same exit code), and callers of the policy
    turn one into the other here. Duck-typed: this module imports nothing.
    """
    classes: dict[str, type[SandboxError]] = {
        "SandboxError": SandboxError,
        "ConfigError": ConfigError,
        "PathError": PathError,
        "LaunchError": LaunchError,
        "AuditError": AuditError,
    }
    cls = classes.get(getattr(exc, "host_class", ""), SandboxError)
    return cls(getattr(exc, "message", str(exc)), hint=getattr(exc, "hint", None))
