"""Preflight: the numbered checks between a configuration and a runnable, verified image.

0. configuration resolved (strict parsing, see :mod:`terminai_sandbox.launch.config`);
1. engine reachable, and which one (not installed / daemon down / permission denied), and
   the container runtime asked for (runc, or gVisor's runsc) available on it;
2. reference resolved to a digest (floating tags such as ``latest`` refused unless allowed);
   the digest is pinned from here on;
3. signature verified against the policy (a cache keyed by digest + policy fingerprint
   holds passes only, so it can never turn a failure into a pass; see
   :mod:`terminai_sandbox.launch.trust`). The signature names the digest, and the
   registry client reads only signature artefacts: the engine has fetched nothing yet.
   A multi-platform index: the engine's platform is asked (only then), and the index and
   the manifest it lists for that platform must both verify; from here on that manifest's
   digest is the image;
4. image present by digest, else pulled by the verified digest (``repo@sha256:…``): no
   byte of an image is fetched by the engine before its signature check passed, and the
   engine never chooses a platform from an index itself;
5. contract compatibility from the image's labels (no container needed);
6. health: the entrypoint's own check runs at the session's start; ``deep`` also runs the
   contract suite now;
7. per-project layer: ``.terminai/sandbox.Dockerfile`` built FROM the verified digest
   (see :mod:`terminai_sandbox.launch.project`).

Each step is timed, recorded in the audit ledger and named in its error. Only this module
can create a :class:`VerifiedImage`, and the run step accepts nothing else.

Every step runs on every launch; what a warm cache saves is work, never a check. The
registry client (and the HTTP stack it imports) is created only when a step needs the
registry: to fetch signatures when the digest and policy have no cached pass (step 3), or
to resolve a tag on podman (step 2; dockerd resolves tags itself, see
:meth:`~terminai_sandbox.engine.docker.DockerEngine.resolve`). A ``repo:tag@sha256:…``
reference needs neither.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from terminai_apts.records import field, frozen_record

from terminai_sandbox.artifacts.contract import LABEL as CONTRACT_LABEL
from terminai_sandbox.artifacts.contract import incompatibility as contract_compatible
from terminai_sandbox.artifacts.contract import supported_version
from terminai_sandbox.common.reference import FLOATING_TAGS, ImageRef
from terminai_sandbox.engine.protocol import ImageFacts, connect
from terminai_sandbox.engine.runtime import runtime_label, session_runtime
from terminai_sandbox.engine.transport import LAUNCH_ANSWERS
from terminai_sandbox.errors import ConfigError, LaunchError, SandboxError, VerificationError
from terminai_sandbox.launch import trust
from terminai_sandbox.launch.audit import Ledger
from terminai_sandbox.launch.config import LaunchConfig
from terminai_sandbox.launch.project import build_project_layer, project_dockerfile
from terminai_sandbox.launch.trust import TrustSource

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from typing import Any

    from terminai_sandbox.engine.protocol import Engine
    from terminai_sandbox.registry import RegistryClient

_TOKEN = object()
# The kernel's machine names of the platforms a release is built for, in OCI's spelling.
_OCI_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}


@frozen_record
class VerifiedImage:
    """An image that passed preflight. Construct only through :func:`preflight`."""

    pinned: str
    digest: str
    image_id: str
    verified_by: tuple[str, ...]
    skipped_verification: bool
    run_ref: str  # what to run: the pinned reference, or the project image derived from it
    # The engine API preflight checked the image on (docker): the session's CLI must use the
    # same one, not whatever DOCKER_CONTEXT or the CLI's current context would pick.
    engine_host: str | None = None
    _token: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self._token is not _TOKEN:
            raise TypeError("a VerifiedImage is only created by preflight()")


@frozen_record
class StepResult:
    """One numbered preflight step: whether it passed, what it found, how long it took."""

    number: int
    name: str
    ok: bool
    detail: str
    seconds: float


@frozen_record
class PreflightOptions:
    """How preflight verifies: the trust source, what it may accept, where its cache lives."""

    trust: TrustSource | None  # the policy as given; loaded only when the cache cannot answer
    unsafe_skip_verify: bool = False
    allow_floating_tag: bool = False
    insecure_registry: bool = False
    supported_contract: str = field(default_factory=supported_version)  # the shipped contract manifest
    deep: bool = False
    project: Path | None = None
    cache_path: Path | None = None
    env: Mapping[str, str] = field(default_factory=dict)


class _Steps:
    """Runs, reports and times the steps; their ledger records are written together.

    One write and one fsync per preflight: at a refusal, after the last step, or (``flush``
    in a ``finally``) when anything else ends the preflight early, such as an interrupt
    during a pull.
    """

    def __init__(self, ledger: Ledger | None, report: Callable[[StepResult], None]) -> None:
        self.ledger, self.report = ledger, report
        self.results: list[StepResult] = []
        self.pending: list[tuple[str, dict[str, Any]]] = []

    def run(self, number: int, name: str, action: Callable[[], tuple[Any, str]]) -> Any:
        started = time.monotonic()
        try:
            value, detail = action()
        except SandboxError as exc:
            result = StepResult(
                number=number, name=name, ok=False, detail=exc.message, seconds=time.monotonic() - started
            )
            self._record(result)
            if not exc.message.startswith(f"preflight step {number}"):
                exc.message = f"preflight step {number} ({name}) refused: {exc.message}"
                exc.args = (exc.message,)
            raise
        result = StepResult(number=number, name=name, ok=True, detail=detail, seconds=time.monotonic() - started)
        self._record(result)
        return value

    def _record(self, result: StepResult) -> None:
        self.results.append(result)
        fields = {"step": result.number, "name": result.name, "ok": result.ok, "detail": result.detail}
        self.pending.append(("preflight-step", {**fields, "seconds": round(result.seconds, 4)}))
        self.report(result)

    def note(self, event: str, **fields: Any) -> None:
        self.pending.append((event, fields))

    def flush(self) -> None:
        if self.ledger is not None and self.pending:
            self.ledger.extend(self.pending)
        self.pending = []


def configure(
    load: Callable[[], LaunchConfig],
    *,
    ledger: Ledger | None = None,
    report: Callable[[StepResult], None] = lambda _r: None,
) -> LaunchConfig:
    """Step 0's parsing half: resolve every knob with ``load``.

    A refused knob (a dangerous ``SANDBOX_FLAGS`` item, a mount of the host root, …) is
    reported and written to the ledger as a failed step 0, and its error names the step.
    On success nothing is recorded here: :func:`preflight` records step 0 with what it found.
    """
    started = time.monotonic()
    try:
        return load()
    except ConfigError as exc:
        steps = _Steps(ledger, report)
        steps._record(
            StepResult(number=0, name="configuration", ok=False, detail=exc.message, seconds=time.monotonic() - started)
        )
        steps.flush()
        exc.message = f"preflight step 0 (configuration) refused: {exc.message}"
        exc.args = (exc.message,)
        raise


def preflight(
    config: LaunchConfig,
    options: PreflightOptions,
    *,
    ledger: Ledger | None = None,
    report: Callable[[StepResult], None] = lambda _r: None,
) -> tuple[VerifiedImage, list[StepResult]]:
    steps = _Steps(ledger, report)
    try:
        return _preflight(config, options, steps)
    finally:
        steps.flush()


def _earlier(fingerprint: str, run: str, pinned: str) -> str:
    platform = "" if run == pinned else f"; runs its manifest {run} for this platform"
    return f"verified earlier for this digest and policy ({fingerprint[:19]}){platform}"


def _preflight(
    config: LaunchConfig, options: PreflightOptions, steps: _Steps
) -> tuple[VerifiedImage, list[StepResult]]:

    def step0() -> tuple[ImageRef, str]:
        if config.engine is None:
            raise LaunchError(
                f"the sandbox is switched off ({config.engine_from})",
                hint="set TERMINAI_SANDBOX=docker (or podman) to launch a session",
            )
        if config.image is None:
            raise LaunchError("no sandbox image configured", hint="pass --image or set TERMINAI_SANDBOX_IMAGE")
        return (
            config.image,
            f"engine {config.engine} ({config.engine_from}), runtime {config.runtime} ({config.runtime_from}), "
            f"image {config.image} ({config.image_from}), network {config.network.describe()}",
        )

    ref: ImageRef = steps.run(0, "configuration", step0)

    def step1() -> tuple[Engine, str]:
        assert config.engine is not None
        found = connect(config.engine, options.env, answers=LAUNCH_ANSWERS)
        problem = found.runtime_problem(session_runtime(config.runtime, egress=config.network.policy is not None))
        if problem is not None:
            raise problem
        return found, f"{found.describe()}; runtime {runtime_label(config.runtime)}"

    engine: Engine = steps.run(1, "engine", step1)
    registry: list[RegistryClient] = []

    def registry_client() -> RegistryClient:
        if not registry:
            from terminai_sandbox.common.deadlines import (  # noqa: PLC0415
                REGISTRY_INTERACTIVE_SECONDS,
                registry_seconds,
            )
            from terminai_sandbox.common.registry_auth import docker_config_credentials  # noqa: PLC0415
            from terminai_sandbox.registry import RegistryClient  # noqa: PLC0415

            registry.append(
                RegistryClient(
                    ref.registry,
                    insecure=options.insecure_registry,
                    credentials=docker_config_credentials(ref.registry, options.env),
                    timeout=registry_seconds(options.env, REGISTRY_INTERACTIVE_SECONDS),
                )
            )
        return registry[0]

    def step2() -> tuple[ImageRef, str]:
        if ref.digest is not None:
            return ref, f"pinned by the reference: {ref.digest}"
        tag = ref.tag or "latest"
        if tag in FLOATING_TAGS and not options.allow_floating_tag:
            raise LaunchError(
                f"{ref} uses the floating tag {tag!r}",
                hint="use a release tag (X.Y.Z) or a digest, or pass --allow-floating-tag",
            )
        from terminai_sandbox.common.deadlines import REGISTRY_INTERACTIVE_SECONDS, registry_seconds  # noqa: PLC0415

        seconds = registry_seconds(options.env, REGISTRY_INTERACTIVE_SECONDS)
        digest = engine.resolve(ref, tag, registry_client, seconds=seconds)
        return ref.with_digest(digest), f"{tag} -> {digest}"

    pinned: ImageRef = steps.run(2, "resolve digest", step2)

    host: list[str] = []

    def host_platform() -> str:
        """The engine's ``os/arch`` in OCI's spelling, asked once and only for an index."""
        if not host:
            from terminai_sandbox.signing.verify.platforms import Platform  # noqa: PLC0415

            host.append(str(Platform.of(*engine.platform())))
        return host[0]

    def cached(digest: str, fingerprint: str) -> str | None:
        """The manifest to run when this digest passed under this policy before."""
        if trust.cache_hit(options.cache_path, digest, fingerprint):
            return digest
        children = trust.cached_platforms(options.cache_path, digest, fingerprint)
        return children.get(host_platform()) if children else None

    def step3() -> tuple[tuple[tuple[str, ...], str], str]:
        assert pinned.digest is not None
        if options.unsafe_skip_verify:
            return ((), pinned.digest), "SKIPPED (--unsafe-skip-verify): this session runs an unverified image"
        if options.trust is None:
            raise VerificationError("no verification policy", hint="pass --key, --policy, or a keyless identity")
        remembered = trust.known_fingerprint(options.cache_path, options.trust)
        hit = None if remembered is None else cached(pinned.digest, remembered)
        if remembered is not None and hit is not None:
            return (("cache",), hit), _earlier(remembered, hit, pinned.digest)
        policy = options.trust.load()
        fingerprint = policy.fingerprint()
        hit = cached(pinned.digest, fingerprint)
        if hit is not None:
            if hit == pinned.digest:
                trust.cache_store(options.cache_path, pinned.digest, fingerprint, options.trust)
            else:
                platform = (host_platform(), hit)
                trust.cache_store(options.cache_path, pinned.digest, fingerprint, options.trust, platform=platform)
            return (("cache",), hit), _earlier(fingerprint, hit, pinned.digest)
        from terminai_sandbox.signing.verify.image import verify_image  # noqa: PLC0415  (HTTP and crypto stacks)
        from terminai_sandbox.signing.verify.platforms import Platform  # noqa: PLC0415

        try:
            result = verify_image(
                pinned, policy, client=registry_client(), platform=lambda: Platform.parse(host_platform())
            )
        except VerificationError as exc:
            if policy.mode == "warn":
                return ((), pinned.digest), f"WARNING (policy mode warn): {exc.message}"
            raise
        keys = tuple(s.key_id for s in result.signatures)
        if not result.platforms:
            trust.cache_store(options.cache_path, pinned.digest, fingerprint, options.trust)
            return (keys, pinned.digest), f"signed by {', '.join(keys)}"
        chosen = result.platforms[0]
        trust.cache_store(
            options.cache_path, pinned.digest, fingerprint, options.trust, platform=(chosen.platform, chosen.digest)
        )
        own = tuple(s.key_id for s in chosen.signatures)
        return (keys + own, chosen.digest), (
            f"index signed by {', '.join(keys)}; its {chosen.platform} manifest {chosen.digest} "
            f"signed by {', '.join(own)}"
        )

    verified_by, run_digest = steps.run(3, "signature", step3)
    if run_digest != pinned.digest:
        steps.note("platform-of-index", index=pinned.pinned, platform=host_platform(), manifest=run_digest)
        # From here on the session is the platform manifest, pulled and run by its own digest:
        # the engine never chooses a platform from the index itself.
        pinned = pinned.with_digest(run_digest)

    def runs_here(facts: ImageFacts) -> None:
        """Refuse an image of another platform than the engine's: the engine would run it
        under emulation (qemu-user through binfmt), where the sandbox's guarantees are not
        the ones proven. A tag moved from an index to one signed platform manifest lands here."""
        if facts.architecture is None:
            return
        local = engine.host is None or engine.host.startswith("unix://")
        if local and _OCI_ARCH.get(os.uname().machine) == facts.architecture:
            return  # a local engine runs on this kernel: answered without asking the engine
        image_platform = f"{facts.os or 'linux'}/{facts.architecture}"
        from terminai_sandbox.signing.verify.platforms import Platform  # noqa: PLC0415

        if Platform.parse(image_platform) != Platform.parse(host_platform()):
            raise LaunchError(
                f"{pinned.pinned} is a {image_platform} image, but the engine runs {host_platform()} "
                "(it would run under emulation)",
                hint=f"use the release's multi-platform index, or an image built for {host_platform()}",
            )

    def step4() -> tuple[ImageFacts, str]:
        present = engine.inspect(pinned.pinned)
        if present is not None:
            runs_here(present)
            return present, "present"
        pulled = engine.pull(pinned, insecure=options.insecure_registry)
        runs_here(pulled)
        return pulled, "pulled by the verified digest"

    image: ImageFacts = steps.run(4, "image by digest", step4)

    def step5() -> tuple[None, str]:
        problem = contract_compatible(image.labels.get(CONTRACT_LABEL), options.supported_contract)
        if problem:
            raise LaunchError(problem, hint="use an image release built for this launcher version")
        return None, f"contract {image.labels.get(CONTRACT_LABEL)} satisfies {options.supported_contract}"

    steps.run(5, "contract label", step5)

    def step6() -> tuple[None, str]:
        if not options.deep:
            return None, "the entrypoint checks health when the session starts"
        passed = contract_suite(engine, image.id, config.runtime)
        return None, f"contract suite passed inside the image under {config.runtime} ({passed} tests)"

    steps.run(6, "health", step6)
    assert pinned.digest is not None
    digest: str = pinned.digest

    def step7() -> tuple[str, str]:
        if options.project is None or project_dockerfile(options.project) is None:
            return pinned.pinned, "no .terminai/sandbox.Dockerfile: the verified image runs as is"
        derived, built = build_project_layer(engine, options.project, pinned.pinned, digest)
        # Run the derived image by its content id, not its tag: a tag could be re-pointed
        # between this step and `docker run`, an id cannot.
        what = "built project layer" if built else "cached project layer"
        return derived.id, f"{what} {derived.id[:19]} FROM {digest[:19]} (derived from verified)"

    run_ref: str = steps.run(7, "project layer", step7)
    if run_ref != pinned.pinned:
        steps.note("derived-from-verified", base=pinned.pinned, image=run_ref)
    verified = VerifiedImage(
        pinned=pinned.pinned,
        digest=digest,
        image_id=image.id,
        verified_by=verified_by,
        skipped_verification=options.unsafe_skip_verify,
        run_ref=run_ref,
        engine_host=engine.host,
        _token=_TOKEN,
    )
    return verified, steps.results


def contract_suite(engine: Engine, image_id: str, runtime: str) -> int:
    """``--deep``: the contract suite inside the image, where the session will run; the number that passed.

    The suite runs through the Docker API (:mod:`terminai_sandbox.contracts`), so an engine
    without one (the podman CLI) is refused instead of skipping the check.
    """
    if engine.api is None:
        raise LaunchError(
            "--deep runs the contract suite through the Docker API, which the podman engine does not use",
            hint="run 'terminai-sandbox contracts IMAGE' against dockerd, or drop --deep "
            "(the entrypoint still checks health when the session starts)",
        )
    from terminai_sandbox.contracts import run_contracts  # noqa: PLC0415  (--deep only)
    from terminai_sandbox.engine.runtime import DEFAULT as DEFAULT_RUNTIME  # noqa: PLC0415

    chosen = None if runtime == DEFAULT_RUNTIME else runtime  # the suite runs where the session will
    return len(run_contracts(engine.api, image_id, runtime=chosen).passed)
