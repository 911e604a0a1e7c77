"""DebianLock, WheelLock and ImageLocks: the image's locks, parsed strictly into frozen records."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from terminai_sandbox.artifacts.debian_lock import DebianLock
from terminai_sandbox.artifacts.image_locks import ImageLocks
from terminai_sandbox.artifacts.wheel_lock import WheelLock
from terminai_sandbox.errors import LockError

from tests.fixtures.locks import deb_sha256, debian_lock_doc

ROOT = Path(__file__).resolve().parents[3]
IMAGE_DIR = ROOT / "images" / "sandbox"
SHA = "c" * 64


def test_the_real_debian_lock_parses_and_round_trips_exactly() -> None:
    text = (IMAGE_DIR / "debian.lock").read_text()
    lock = DebianLock.load(IMAGE_DIR / "debian.lock")
    # The base layer's cache key hashes this document: it must be the one on disk, key for key.
    assert lock.to_dict() == json.loads(text)
    assert lock.dumps() == text  # what `terminai-sandbox lock` writes is what is committed
    assert lock.source_date_epoch > 0 and lock.packages and "python3" in lock.by_name()
    with pytest.raises(dataclasses.FrozenInstanceError):
        lock.suite = "sid"  # type: ignore[misc]


def _mutated(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    doc = debian_lock_doc(("a", "1"), ("b", "2"))
    change(doc)
    return doc


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(format=2), "is not a format-1 Debian lock"),
        (lambda d: d.pop("format"), "is not a format-1 Debian lock"),
        (lambda d: d.update(extra=1), "unknown key(s) 'extra'"),
        (lambda d: d.pop("suite"), "missing key(s) 'suite'"),
        (lambda d: d.update(mirrors=[]), "'mirrors' must be a non-empty list"),
        (lambda d: d.update(packages={}), "'packages' must be a list"),
        (lambda d: d.update(source_date_epoch="1700000000"), "'source_date_epoch' must be an integer"),
        (lambda d: d.update(source_date_epoch=True), "'source_date_epoch' must be an integer"),
        (lambda d: d.update(source_date_epoch=0), "'source_date_epoch' must be an integer of at least 1"),
        (lambda d: d["packages"][1].update(sha256="a-sum"), "packages[1]: 'sha256' must be 64 lowercase hex"),
        (lambda d: d["packages"][0].update(sha256=SHA.upper()), "packages[0]: 'sha256' must be 64 lowercase hex"),
        (lambda d: d["packages"][0].pop("filename"), "packages[0]: missing key(s) 'filename'"),
        (lambda d: d["packages"][0].update(size=-1), "packages[0]: 'size' must be an integer of at least 0"),
        (lambda d: d["packages"][0].update(version=""), "packages[0]: 'version' must be a non-empty string"),
        (lambda d: d["packages"].append("x"), "packages[2] is not a JSON object"),
        (lambda d: d["packages"].append(dict(d["packages"][0])), "packages listed more than once: a"),
    ],
)
def test_a_malformed_debian_lock_names_the_key(change: Callable[[dict[str, Any]], object], message: str) -> None:
    with pytest.raises(LockError) as caught:
        DebianLock.from_dict(_mutated(change), where="debian.lock")
    assert message in caught.value.message and caught.value.message.startswith("debian.lock")
    assert "terminai-sandbox lock" in caught.value.hint and caught.value.exit_code == 6


def test_debian_lock_files_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(LockError, match="no Debian lock at") as caught:
        DebianLock.load(tmp_path / "missing")
    assert "terminai-sandbox lock" in caught.value.hint
    (tmp_path / "bad").write_text("{")
    with pytest.raises(LockError, match="is not valid JSON"):
        DebianLock.load(tmp_path / "bad")


def test_the_real_wheel_locks_parse() -> None:
    pins = WheelLock.load(IMAGE_DIR / "requirements.lock").pins
    assert pins and all(len(h) == 64 for hashes in pins.values() for h in hashes)
    assert ("restrictedpython", "9.0") in pins  # names are PEP 503-normalised
    assert WheelLock.load(IMAGE_DIR / "requirements-test.lock").pins


def test_a_wheel_lock_takes_continuations_comments_extras_and_several_hashes() -> None:
    text = (
        f"# comment\n\nRestricted_Python[x]==9.0 \\\n    --hash=sha256:{SHA} \\\n    --hash=sha256:{'d' * 64}  # why\n"
    )
    assert WheelLock.parse(text).pins == {("restricted-python", "9.0"): (SHA, "d" * 64)}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"pkg>=1.0 --hash=sha256:{SHA}", "is not an exact 'name==version' pin"),
        ("pkg==1.0", "needs only --hash=sha256:HEX options"),
        ("pkg==1.0 --hash=md5:abc", "needs only --hash=sha256:HEX options"),
        (f"pkg==1.0 --hash=sha256:{SHA} --no-deps", "needs only --hash=sha256:HEX options"),
        ("--index-url https://example.test/simple", "is not an exact 'name==version' pin"),
        (f"pkg==1 --hash=sha256:{SHA}\nPKG==1 --hash=sha256:{SHA}", "line 2: PKG==1 is pinned twice"),
    ],
)
def test_a_wheel_lock_accepts_only_hash_pinned_exact_versions(text: str, message: str) -> None:
    with pytest.raises(LockError) as caught:
        WheelLock.parse(text, where="requirements.lock")
    assert message in caught.value.message and caught.value.hint


def test_image_locks_read_both_and_tolerate_an_absent_one(tmp_path: Path) -> None:
    real = ImageLocks.read(IMAGE_DIR)
    assert real.debian is not None and real.wheels is not None
    assert len(real.deb_sha256) == len(real.debian.packages)
    empty = ImageLocks.read(tmp_path)
    assert empty == ImageLocks(debian=None, wheels=None) and empty.deb_sha256 == {} and empty.wheel_sha256 == {}
    (tmp_path / "debian.lock").write_text(json.dumps(debian_lock_doc(("libc6", "2.36-9"))))
    assert ImageLocks.read(tmp_path).deb_sha256 == {("libc6", "2.36-9", "amd64"): deb_sha256("libc6")}
    (tmp_path / "requirements.lock").write_text("broken\n")  # present but malformed: refused, never skipped
    with pytest.raises(LockError, match=r"requirements\.lock: line 1"):
        ImageLocks.read(tmp_path)
