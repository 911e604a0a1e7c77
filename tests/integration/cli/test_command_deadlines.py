"""A real registry, slow on every answer but never stalling, against the whole command's deadline.

Debian's docker-registry holds an image pushed, signed and attested with the installed
console script; a relay in front of it (:mod:`tests.fixtures.slow_proxy`) holds every answer
back for :data:`PAUSE` seconds, far inside the per-request bound the test sets
(``TERMINAI_REGISTRY_TIMEOUT``). ``verify --attestation`` and ``push`` make many requests, so
through the relay each takes many pauses in all: the control run shows how long and proves
the relay serves whole answers; under a smaller ``TERMINAI_COMMAND_TIMEOUT`` the same
command ends at that deadline with its family's exit code (9 for push, 11 for verify, which
reports a registry it cannot finish reading as a verification that could not complete), one
error line naming the deadline and a hint, no traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from terminai_sandbox.secret import Secret
from terminai_sandbox.signing.formats import keys
from terminai_sandbox_dev.localregistry import loopback_registry

from tests.fixtures.oci import write_layout
from tests.fixtures.registry import RegistryServer
from tests.fixtures.slow_proxy import SlowRelay, slow_relay

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
PAUSE = 0.4  # each answer's delay through the relay
REQUEST_SECONDS = 3.0  # TERMINAI_REGISTRY_TIMEOUT: every single answer is well inside it
COMMAND_SECONDS = 1.5  # TERMINAI_COMMAND_TIMEOUT for the bounded runs
SLACK = 6.0  # interpreter start-up and imports on a busy 2-core machine
PASSWORD = "bounds"
SBOM = {"bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1, "components": []}


@dataclass(frozen=True)
class Signed:
    registry: RegistryServer
    relay: SlowRelay  # in front of it; what the image was pushed and signed through
    root: Path
    reference: str  # RELAY/REPO@DIGEST: the signatures name the relay's address


def _env(root: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TERMINAI_", "GEMINI_", "SANDBOX_", "DOCKER_"))}
    home = root / "home"
    return {**env, "HOME": str(home), "DOCKER_CONFIG": str(home / ".docker"), "COSIGN_PASSWORD": PASSWORD, **extra}


def _run(args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=120, check=False)
    return done, time.monotonic() - started


@pytest.fixture(scope="module")
def signed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Signed]:
    root = tmp_path_factory.mktemp("bounds-command")
    (root / "home").mkdir()
    key = keys.generate()
    (root / "cosign.pub").write_bytes(keys.public_pem(key))
    (root / "cosign.key").write_bytes(keys.encrypt_private(key, Secret(PASSWORD.encode())))
    layers = [f"layer {i}\n".encode() * 300 for i in range(4)]
    write_layout(root / "layout", config=b'{"architecture":"amd64","os":"linux"}', layers=layers)
    (root / "sbom.json").write_text(json.dumps(SBOM))
    # Signed through the relay (not slow yet): a signature names the repository it was made
    # for, and verify refuses one made for another address.
    with loopback_registry(root / "registry") as registry, slow_relay(registry.host, 0.0) as relay:
        done, _ = _run(["push", str(root / "layout"), f"{relay.host}/bounds/x:1.0.0", "--json"], _env(root))
        assert done.returncode == 0, done.stderr
        reference = f"{relay.host}/bounds/x@{json.loads(done.stdout)['digest']}"
        for args in (
            ["sign", reference, "--key", str(root / "cosign.key")],
            ["attest", reference, "--predicate", str(root / "sbom.json"), "--key", str(root / "cosign.key")],
        ):
            done, _ = _run(args, _env(root))
            assert done.returncode == 0, done.stderr
        yield Signed(registry, relay, root, reference)


@pytest.fixture()
def relay(signed: Signed) -> Iterator[SlowRelay]:
    """The module's relay, slow for one test."""
    signed.relay.pause, signed.relay.exchanges = PAUSE, 0
    yield signed.relay
    signed.relay.pause = 0.0


def _verify_args(signed: Signed) -> list[str]:
    return ["verify", signed.reference, "--key", str(signed.root / "cosign.pub"), "--attestation", "cyclonedx"]


def _one_error_with_hint(done: subprocess.CompletedProcess[str], code: int, words: str) -> None:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and "unexpected failure" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert words in lines[errors[0]], done.stderr
    assert lines[errors[0] + 1].startswith("  hint: ") and "TERMINAI_COMMAND_TIMEOUT" in lines[errors[0] + 1]


def test_verify_with_an_attestation_through_a_slow_registry_ends_at_the_command_deadline(
    signed: Signed, relay: SlowRelay
) -> None:
    # The control: every answer arrives, so the command succeeds, after many pauses.
    done, whole = _run(_verify_args(signed), _env(signed.root, TERMINAI_REGISTRY_TIMEOUT=str(REQUEST_SECONDS)))
    assert done.returncode == 0, done.stderr
    assert "verified attestation" in done.stdout
    assert relay.exchanges * PAUSE > COMMAND_SECONDS * 2, relay.exchanges  # the sum, not any one request
    # The same command under a command deadline smaller than that sum.
    done, seconds = _run(
        _verify_args(signed),
        _env(
            signed.root,
            TERMINAI_REGISTRY_TIMEOUT=str(REQUEST_SECONDS),
            TERMINAI_COMMAND_TIMEOUT=str(COMMAND_SECONDS),
        ),
    )
    # Exit 11: verify reports a registry it cannot finish reading as a verification that
    # could not complete (signing/verify/image.py), naming the request and the deadline.
    _one_error_with_hint(done, 11, "the verify command's total deadline of 1.5 s passed before the registry answered")
    assert seconds < COMMAND_SECONDS + SLACK, seconds
    assert seconds < whole, (seconds, whole)
    assert done.stdout == ""


def test_a_push_of_many_blobs_to_a_slow_registry_ends_at_the_command_deadline(signed: Signed, relay: SlowRelay) -> None:
    done, seconds = _run(
        ["push", str(signed.root / "layout"), f"{relay.host}/bounds/again:1.0.0"],
        _env(
            signed.root,
            TERMINAI_REGISTRY_TIMEOUT=str(REQUEST_SECONDS),
            TERMINAI_COMMAND_TIMEOUT=str(COMMAND_SECONDS),
        ),
    )
    assert relay.exchanges >= 2
    _one_error_with_hint(done, 9, "the push command's total deadline of 1.5 s passed")
    assert seconds < COMMAND_SECONDS + SLACK, seconds


# The click group begins the deadline for every command; `run` has its own click-free entry.
MALFORMED = [("verify", "0"), ("verify", "-3"), ("run", "1e2"), ("release", "soon"), ("verify", "٣")]


@pytest.mark.parametrize(("command", "value"), MALFORMED)
def test_a_malformed_command_deadline_is_refused_before_any_request(
    signed: Signed, relay: SlowRelay, command: str, value: str
) -> None:
    args = {
        "verify": _verify_args(signed),
        "run": ["run", "--image", signed.reference, "--key", str(signed.root / "cosign.pub"), "--", "true"],
        "release": ["release", "verify", "--dist", str(signed.root / "dist")],
    }[command]
    done, _ = _run(args, _env(signed.root, TERMINAI_COMMAND_TIMEOUT=value))
    assert relay.exchanges == 0
    assert done.returncode == 3, done.stderr
    assert "TERMINAI_COMMAND_TIMEOUT=" in done.stderr and "hint:" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_engine_resolves_a_tag_of_a_prompt_registry_and_is_cut_at_the_deadline_of_a_slow_one(
    signed: Signed,
) -> None:
    """dockerd itself asks the registry (``/distribution``); our bound is on its answer."""
    from terminai_sandbox.engine.client import DockerApi
    from terminai_sandbox.errors import RegistryUnreachable

    api = DockerApi.connect(dict(os.environ))
    tagged = f"{signed.relay.host}/bounds/x:1.0.0"
    assert api.distribution_digest(tagged, seconds=30) == signed.reference.rpartition("@")[2]
    signed.relay.pause = 3.0
    try:
        started = time.monotonic()
        with pytest.raises(RegistryUnreachable, match=r"no whole answer within 1\.5 s"):
            api.distribution_digest(tagged, seconds=1.5)
        assert time.monotonic() - started < 2.5
    finally:
        signed.relay.pause = 0.0
