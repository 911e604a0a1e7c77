"""Keyless signing ends by the command's deadline, whatever Sigstore's services do.

sigstore-python (and the ``id`` library it asks for the ambient token) bound their requests
per socket read at most, and its Fulcio request not at all: a service that trickles or says
nothing holds them for ever. Here the real libraries talk to servers on 127.0.0.1 that do
exactly that, one step at a time:

* the ambient OIDC token (GitHub Actions' token endpoint, named by the environment the
  runner sets), through the installed ``sign --keyless`` and ``attest --keyless``;
* the TUF refresh of the trusted root (sigstore-python's own TUF updater, bootstrapped with
  the public-good root it ships, pointed at a silent repository);
* the Fulcio certificate (a client trust configuration naming a silent Fulcio);
* the Rekor entry, after a Fulcio on 127.0.0.1 that answers properly: it issues, for the
  CSR sigstore-python sends, a certificate of the test Sigstore instance
  (``tests/unit/signing/sigstore_testing.py``), whose SCT sigstore-python checks against that
  instance's trusted root, before it asks a Rekor that never answers whole.

Each must end within the deadline plus start-up slack, with exit 10 (``SigningError``), one
``error:`` line naming the step and the deadline, a hint naming ``TERMINAI_COMMAND_TIMEOUT``,
and no traceback; the slow servers also prove the deadline was waited for.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
import sigstore
from sigstore.models import ClientTrustConfig
from terminai_sandbox.common import deadlines
from terminai_sandbox.errors import SigningError
from terminai_sandbox.signing import keyless

from tests.fixtures.hostile import STALL, TRICKLE, Answer, always, http, serving

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).with_name("terminai-sandbox"))
SECONDS = 2.0  # the command deadline of the in-process sessions
# TERMINAI_COMMAND_TIMEOUT of the console-script rows: the clock starts with the command, and
# importing sigstore-python alone can take seconds on a loaded machine.
CLI_SECONDS = 6.0
SLACK = 6.0  # interpreter start-up and sigstore's imports on a busy 2-core machine
DIGEST = "sha256:" + "b" * 64
FIXTURES = Path(__file__).parents[2] / "fixtures" / "sigstore"
PUBLIC_GOOD = Path(sigstore.__file__).parent / "_store" / "https%3A%2F%2Ftuf-repo-cdn.sigstore.dev"
SERVERS = {
    "stalling": always(STALL),
    "trickling": always(TRICKLE, http(200, b'{"value": "' + b"x" * 200 + b'"}')),
}


@pytest.fixture(autouse=True)
def _no_command_deadline_left_over() -> Iterator[None]:
    deadlines.end()
    yield
    deadlines.end()


def _one_signing_error(done: subprocess.CompletedProcess[str], words: str) -> None:
    assert done.returncode == 10, done.stderr
    assert "Traceback" not in done.stderr and "unexpected failure" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    assert len(errors) == 1, done.stderr
    assert words in lines[errors[0]], done.stderr
    assert lines[errors[0] + 1].startswith("  hint: ") and "TERMINAI_COMMAND_TIMEOUT" in lines[errors[0] + 1]


# The server classes dealt across the two commands (each start costs seconds of imports).
@pytest.mark.parametrize(("command", "server"), [("sign", "stalling"), ("attest", "trickling")])
def test_an_ambient_token_service_that_never_answers_whole_ends_at_the_deadline(
    command: str, server: str, tmp_path: Path
) -> None:
    predicate = tmp_path / "sbom.json"
    predicate.write_text('{"bomFormat": "CycloneDX", "specVersion": "1.5", "version": 1}')
    with serving(SERVERS[server]) as token:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("TERMINAI_", "GITHUB_", "ACTIONS_"))},
            "HOME": str(tmp_path),
            "GITHUB_ACTIONS": "true",
            "ACTIONS_ID_TOKEN_REQUEST_URL": f"http://{token.host}/token",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "bounds-request-token",
            "TERMINAI_COMMAND_TIMEOUT": str(CLI_SECONDS),
        }
        # A pinned digest: nothing asks the registry (a closed port) before signing starts.
        args = [command, f"127.0.0.1:9/bounds/x@{DIGEST}", "--keyless"]
        if command == "attest":
            args += ["--predicate", str(predicate)]
        started = time.monotonic()
        done = subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=60, check=False)
        took = time.monotonic() - started
        assert token.requests and token.requests[0][1].startswith("/token?audience=sigstore"), token.requests
    _one_signing_error(done, f"getting the ambient OIDC token did not finish within the {command} command's total")
    assert CLI_SECONDS * 0.9 <= took < CLI_SECONDS + SLACK, took
    assert done.stdout == ""


def _token() -> str:
    """An identity token as an OIDC provider issues it (sigstore-python reads its claims unverified)."""
    now = int(time.time())
    claims = {"iss": "https://issuer.example.test", "aud": "sigstore", "sub": "ci@example.test"}
    claims |= {"email": "ci@example.test", "iat": now, "nbf": now, "exp": now + 600}
    return jwt.encode(claims, "not-checked-by-the-client-" + "k" * 16, algorithm="HS256")


def _trust_config(fulcio: str, rekor: str) -> ClientTrustConfig:
    """The public-good trusted root, with a signing configuration naming these services."""
    signing = json.loads((PUBLIC_GOOD / "signing_config.v0.2.json").read_text())
    signing["caUrls"][0]["url"] = fulcio
    signing["rekorTlogUrls"][0]["url"] = rekor
    signing["tsaUrls"] = []
    signing["oidcUrls"][0]["url"] = fulcio
    config = {
        "mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
        "trustedRoot": json.loads((FIXTURES / "production-trusted_root.json").read_text()),
        "signingConfig": signing,
    }
    return ClientTrustConfig.from_json(json.dumps(config))


def _session_fails_within(trust: object) -> tuple[SigningError, float]:
    deadlines.begin("sign", SECONDS)
    started = time.monotonic()
    with pytest.raises(SigningError) as caught, keyless.ambient_session(credential=_token, trust_config=trust):  # type: ignore[arg-type]
        raise AssertionError("a session opened against a silent service")
    return caught.value, time.monotonic() - started


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_fulcio_that_never_answers_whole_ends_at_the_deadline(server: str) -> None:
    with serving(SERVERS[server]) as fulcio:
        config = _trust_config(f"http://{fulcio.host}", f"http://{fulcio.host}")
        error, took = _session_fails_within(lambda: config)
        assert any(path.startswith("/api/v2/signingCert") for _, path in fulcio.requests), fulcio.requests
    assert error.exit_code == 10
    assert error.message == (
        "keyless signing: getting a signing certificate from Fulcio did not finish within "
        f"the sign command's total deadline of {SECONDS:g} s"
    )
    assert deadlines.COMMAND_VARIABLE in error.hint and "Fulcio" in error.hint
    assert SECONDS * 0.9 <= took < SECONDS + 1.0, took


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_tuf_repository_that_never_answers_whole_ends_at_the_deadline(server: str, tmp_path: Path) -> None:
    # The TUF client keeps its metadata under the XDG directories: a fresh cache per test.
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        with serving(SERVERS[server]) as repository:
            url = f"http://{repository.host}"
            error, took = _session_fails_within(
                lambda: ClientTrustConfig.from_tuf(url, bootstrap_root=PUBLIC_GOOD / "root.json")
            )
            assert repository.requests, "the TUF client never asked the repository"
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    assert error.exit_code == 10
    assert "refreshing the Sigstore trusted root over TUF did not finish within the sign command's" in error.message
    assert SECONDS * 0.9 <= took < SECONDS + 1.0, took


def test_a_prompt_service_is_not_cut_short() -> None:
    """The control: a step that finishes in time returns its value, and its own error is its own."""
    deadlines.begin("sign", SECONDS)
    assert keyless.within_deadline("a quick step", lambda: 42) == 42
    with pytest.raises(ValueError, match="its own"):
        keyless.within_deadline("a failing step", lambda: (_ for _ in ()).throw(ValueError("its own")))


class _PublicOnly:
    """What the test CA's ``issue`` reads of a key: its public half (Fulcio sees only the CSR)."""

    def __init__(self, public: object) -> None:
        self._public = public

    def public_key(self) -> object:
        return self._public


@pytest.mark.parametrize("server", sorted(SERVERS))
def test_a_rekor_that_never_answers_whole_ends_at_the_deadline(server: str) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    from tests.unit.signing.sigstore_testing import TestSigstore

    instance = TestSigstore()

    def fulcio_answer(method: str, path: str) -> Answer:
        request = json.loads(fulcio.bodies[-1])
        csr = x509.load_pem_x509_csr(base64.b64decode(request["certificateSigningRequest"]))
        leaf = instance.issue(_PublicOnly(csr.public_key()), identity="ci@example.test")  # type: ignore[arg-type]
        chain = [
            c.public_bytes(serialization.Encoding.PEM).decode() for c in (leaf, instance.intermediate, instance.root)
        ]
        body = json.dumps({"signedCertificateEmbeddedSct": {"chain": {"certificates": chain}}}).encode()
        return Answer((http(200, body, headers={"Content-Type": "application/json"}),))

    with serving(fulcio_answer) as fulcio, serving(SERVERS[server]) as rekor:
        signing = json.loads((PUBLIC_GOOD / "signing_config.v0.2.json").read_text())
        signing["caUrls"][0]["url"] = f"http://{fulcio.host}"
        signing["rekorTlogUrls"][0]["url"] = f"http://{rekor.host}"
        signing["oidcUrls"][0]["url"] = f"http://{fulcio.host}"
        signing["tsaUrls"] = []
        config = ClientTrustConfig.from_json(
            json.dumps(
                {
                    "mediaType": "application/vnd.dev.sigstore.clienttrustconfig.v0.1+json",
                    "trustedRoot": json.loads(instance.trusted_root_json()),
                    "signingConfig": signing,
                }
            )
        )
        deadlines.begin("sign", SECONDS)
        started = time.monotonic()
        with keyless.ambient_session(credential=_token, trust_config=lambda: config) as session:
            assert fulcio.requests, "no certificate was asked for"
            with pytest.raises(SigningError) as caught:
                keyless.sign_statement(session.signer, "127.0.0.1:9/bounds/x", DIGEST)
        took = time.monotonic() - started
        assert rekor.requests and rekor.requests[0][0] == "POST", rekor.requests
    assert caught.value.exit_code == 10
    assert caught.value.message == (
        f"keyless signing: logging a signature in Rekor did not finish within the sign command's total deadline of "
        f"{SECONDS:g} s"
    )
    assert SECONDS * 0.9 <= took < SECONDS + 1.0, took
