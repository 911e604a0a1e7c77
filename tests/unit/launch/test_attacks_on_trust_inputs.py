"""Attacks on whom a launch, ``verify`` and ``kube`` trust.

* A key or policy path that is not a regular file (a FIFO, ``/dev/zero``, a directory) or is
  far too large is refused with the same message by a launch and by ``verify``/``kube``,
  at once: before, a FIFO blocked every command forever and ``/dev/zero`` filled memory.
* Conflicting or half-given options fail closed with the same message on every command.
* A keyless identity given as a regular expression admits on a cluster exactly what
  ``verify`` accepts: cosign's Go code (policy-controller, Kyverno) finds a pattern anywhere
  in the subject, so the emitted pattern must be anchored.
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from terminai_sandbox.common import trust_options
from terminai_sandbox.common.trust_options import EMPTY, MAX_TRUST_FILE, TOO_MANY, UNPAIRED, read_trust_file
from terminai_sandbox.errors import ConfigError
from terminai_sandbox.kube.admission import whole_match
from terminai_sandbox.launch.session import LaunchRequest, trust_source
from terminai_sandbox.signing.verify.trust import policy_from_options


@pytest.fixture()
def deadline() -> Iterator[None]:
    """Fail instead of hanging when a read blocks (the attack this file guards against)."""

    def expired(_signum: int, _frame: FrameType | None) -> None:
        raise TimeoutError("blocked reading a trust input")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _refusals(path: Path, option: str, env: dict[str, str]) -> tuple[str, str]:
    """The message a launch gives (refused as its trust source is made, before preflight) and the
    one ``verify``/``kube`` give."""
    request = LaunchRequest(**{option: path})  # type: ignore[arg-type]
    with pytest.raises(ConfigError) as launched:
        trust_source(request, env)
    names = {"key_path": "key", "policy_path": "policy_file"}
    with pytest.raises(ConfigError) as verified:
        policy_from_options(**{"key": None, "identity": None, "issuer": None, "policy_file": None, names[option]: path})
    return launched.value.message, verified.value.message


@pytest.mark.usefixtures("deadline")
@pytest.mark.parametrize("option", ["key_path", "policy_path"])
def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path, option: str) -> None:
    fifo = tmp_path / "cosign.pub"
    os.mkfifo(fifo)
    started = time.monotonic()
    launched, verified = _refusals(fifo, option, {"HOME": str(tmp_path)})
    assert launched == verified and "not a regular file" in launched
    assert time.monotonic() - started < 2


def test_companion_a_plain_read_of_the_fifo_blocks(tmp_path: Path) -> None:
    fifo = tmp_path / "cosign.pub"
    os.mkfifo(fifo)
    reader = threading.Thread(target=fifo.read_bytes, daemon=True)
    reader.start()
    reader.join(0.5)
    assert reader.is_alive()  # what `path.read_bytes()` did to every command
    with open(fifo, "wb"):  # release it
        pass
    reader.join(5)


@pytest.mark.usefixtures("deadline")
@pytest.mark.parametrize("option", ["key_path", "policy_path"])
def test_a_device_is_refused_without_reading_it(tmp_path: Path, option: str) -> None:
    launched, verified = _refusals(Path("/dev/zero"), option, {"HOME": str(tmp_path)})
    assert launched == verified and "not a regular file" in launched


@pytest.mark.parametrize("option", ["key_path", "policy_path"])
def test_a_file_far_larger_than_any_key_or_policy_is_refused(tmp_path: Path, option: str) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (MAX_TRUST_FILE + 1))
    launched, verified = _refusals(big, option, {"HOME": str(tmp_path)})
    assert launched == verified and "larger than" in launched
    big.write_bytes(b" " * MAX_TRUST_FILE)  # at the cap: read, then refused for what it says
    assert read_trust_file(big) == b" " * MAX_TRUST_FILE


@pytest.mark.parametrize("option", ["key_path", "policy_path"])
def test_a_directory_and_an_empty_path_are_refused_alike(tmp_path: Path, option: str) -> None:
    for path in (tmp_path, Path("")):  # `--key=` is the current directory to click and to the kernel
        launched, verified = _refusals(path, option, {"HOME": str(tmp_path)})
        assert launched == verified and "Is a directory" in launched


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"key": Path("k.pub"), "policy": Path("p.json")}, TOO_MANY),
        ({"key": Path(""), "policy": Path("p.json")}, TOO_MANY),
        ({"key": Path("k.pub"), "issuer": "https://issuer"}, TOO_MANY),
        ({"identity": "me@example.com"}, UNPAIRED),
        ({"issuer": "https://issuer", "identity": ""}, UNPAIRED),
    ],
)
def test_conflicting_options_fail_closed_alike_even_with_a_user_policy_to_fall_back_on(
    tmp_path: Path, given: dict[str, object], message: str
) -> None:
    user_policy = tmp_path / "config" / "terminai-sandbox" / "policy.json"
    user_policy.parent.mkdir(parents=True)
    user_policy.write_text('{"version": 1, "mode": "warn", "keys": []}')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    request = LaunchRequest(
        key_path=given.get("key"),  # type: ignore[arg-type]
        policy_path=given.get("policy"),  # type: ignore[arg-type]
        certificate_identity=given.get("identity"),  # type: ignore[arg-type]
        certificate_oidc_issuer=given.get("issuer"),  # type: ignore[arg-type]
    )
    with pytest.raises(ConfigError) as launched:
        trust_source(request, env)
    with pytest.raises(ConfigError) as verified:
        policy_from_options(
            key=given.get("key"),  # type: ignore[arg-type]
            identity=given.get("identity"),  # type: ignore[arg-type]
            issuer=given.get("issuer"),  # type: ignore[arg-type]
            policy_file=given.get("policy"),  # type: ignore[arg-type]
        )
    assert launched.value.message == verified.value.message == message


SUBJECTS = [
    "https://github.com/terminai/sandbox/.github/workflows/release.yml@refs/tags/v1.0.0",
    "https://evil.example/https://github.com/terminai/sandbox/.github/workflows/release.yml@refs/tags/v1",
    "https://github.com/terminai/sandbox/.github/workflows/release.yml@refs/tags/v1.0.0/extra",
    "xhttps://github.com/terminai/x",
]
PATTERNS = [
    "https://github\\.com/terminai/.*",
    "https://github\\.com/terminai/sandbox/\\.github/workflows/release\\.yml@refs/tags/v1\\.0\\.0",
    "^https://github\\.com/terminai/.*$",
    "a|https://github\\.com/terminai/.*",
    "^(?:https://github\\.com/terminai/.*)$",
]


def _go_match(pattern: str, subject: str) -> bool:
    """Go's ``regexp.MatchString``: true when the pattern matches anywhere (``re.search``)."""
    return re.search(pattern, subject) is not None


@pytest.mark.parametrize("pattern", PATTERNS)
def test_an_emitted_identity_pattern_admits_exactly_what_verify_accepts(pattern: str) -> None:
    for subject in SUBJECTS:
        verify_accepts = re.fullmatch(pattern, subject) is not None  # signing.verify.certs.identity_problem
        assert _go_match(whole_match(pattern) or "", subject) == verify_accepts, subject


def test_companion_the_pattern_as_given_admits_a_subject_verify_refuses() -> None:
    pattern, forged = PATTERNS[0], SUBJECTS[1]
    assert re.fullmatch(pattern, forged) is None
    assert _go_match(pattern, forged)  # what the cluster admitted before the anchoring


def _user_policy_in_warn_mode(tmp_path: Path) -> dict[str, str]:
    user_policy = tmp_path / "config" / "terminai-sandbox" / "policy.json"
    user_policy.parent.mkdir(parents=True, exist_ok=True)
    user_policy.write_text('{"version": 1, "mode": "warn", "keys": []}')
    return {"XDG_CONFIG_HOME": str(tmp_path / "config")}


@pytest.mark.parametrize(
    "given",
    [{"identity": "", "issuer": ""}, {"identity": ""}, {"issuer": ""}],
    ids=["both-empty", "identity-empty", "issuer-empty"],
)
def test_empty_keyless_options_never_fall_back_to_the_user_policy(tmp_path: Path, given: dict[str, str]) -> None:
    """``--certificate-identity "$ID" --certificate-oidc-issuer "$ISS"`` with the variables unset."""
    env = _user_policy_in_warn_mode(tmp_path)
    request = LaunchRequest(certificate_identity=given.get("identity"), certificate_oidc_issuer=given.get("issuer"))
    with pytest.raises(ConfigError) as launched:
        trust_source(request, env)
    with pytest.raises(ConfigError) as verified:
        policy_from_options(key=None, identity=given.get("identity"), issuer=given.get("issuer"), policy_file=None)
    assert launched.value.message == verified.value.message == EMPTY


def test_companion_without_the_check_empty_options_launch_under_the_user_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _user_policy_in_warn_mode(tmp_path)
    real = trust_options.choose_trust

    def lenient(**kwargs: object) -> object:
        blank = {k: (None if v == "" else v) for k, v in kwargs.items()}
        return real(**blank)  # type: ignore[arg-type]

    monkeypatch.setattr("terminai_sandbox.launch.session.choose_trust", lenient)
    source = trust_source(LaunchRequest(certificate_identity="", certificate_oidc_issuer=""), env)
    assert source is not None and source.describe.startswith("policy ") and source.load().mode == "warn"
