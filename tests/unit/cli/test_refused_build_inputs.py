"""``build`` and ``lock`` refuse a bad ``image.toml`` or lock before any work starts.

The cases are generated: every key of the schema (``assemble.spec.SCHEMA``) with a value of
the wrong type, a value the build cannot use, and left out; every input file the build
reads (the three locks and ``layers.lock``) replaced by a directory, a FIFO, a device, a
dangling link, an empty file, garbage and bytes that are not UTF-8. A key or lock added
later is covered by the same loops.

"No work started" is proven with a tripwire: the image directory is a copy of
``images/sandbox``, the stage cache is empty and ``mmdebstrap`` on PATH is a script that
leaves a mark. The control case (the unchanged copy) must reach it, so a refusal that came
after the build started would be seen.
"""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from terminai_sandbox.assemble.spec import SCHEMA, load_spec
from terminai_sandbox.errors import ConfigError

from tests.unit.cli.refusals import (
    REPO,
    SANDBOX,
    assert_refused,
    in_process,
    make_device,
    make_directory,
    make_fifo,
    run,
)

SPEC = REPO / "images" / "sandbox" / "image.toml"


@dataclass(frozen=True)
class Checkout:
    """A copy of images/sandbox, a cold cache and the mmdebstrap tripwire."""

    root: Path
    images: Path
    env: dict[str, str]

    @property
    def spec(self) -> Path:
        return self.images / "image.toml"

    @property
    def tripped(self) -> bool:
        return (self.root / "mmdebstrap-ran").exists()

    @property
    def output(self) -> Path:
        return self.root / "out"

    def build(self, *extra: str) -> Any:
        return run(SANDBOX, *self.build_args(*extra), env=self.env)

    def build_in_process(self, *extra: str) -> Any:
        return in_process(SANDBOX, *self.build_args(*extra), env=self.env)

    def build_args(self, *extra: str) -> tuple[str, ...]:
        return ("build", "--no-load", "--spec", str(self.spec), "--output", str(self.output), *extra)

    def assert_nothing_started(self) -> None:
        assert not self.tripped, "mmdebstrap ran: the build started before refusing"
        assert not self.output.exists(), "the build made its output directory before refusing"
        assert not any((self.root / "cache").iterdir()), "the build wrote to its stage cache before refusing"


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    images = tmp_path / "sandbox"
    shutil.copytree(SPEC.parent, images)
    tools = tmp_path / "bin"
    tools.mkdir()
    trip = tools / "mmdebstrap"
    trip.write_text(f"#!/bin/sh\ntouch {tmp_path / 'mmdebstrap-ran'}\nexit 1\n")
    trip.chmod(0o755)
    (tmp_path / "cache").mkdir()
    env = {"PATH": f"{tools}:{os.environ['PATH']}", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return Checkout(root=tmp_path, images=images, env=env)


# -- image.toml ------------------------------------------------------------------------------


def _toml(data: dict[str, Any]) -> str:
    """A TOML document of ``data`` (strings, integers, floats, booleans and lists of them):
    JSON's spelling of these is TOML's too."""
    # A section given as a plain value is written as a top-level key, before the tables.
    lines = [f"{json.dumps(key)} = {json.dumps(value)}" for key, value in data.items() if not isinstance(value, dict)]
    for section, table in data.items():
        if not isinstance(table, dict):
            continue
        lines.append(f"[{section}]")
        lines += [f"{json.dumps(key)} = {json.dumps(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"


def _real() -> dict[str, Any]:
    return tomllib.loads(SPEC.read_text(encoding="utf-8"))


# What a value of the wrong type is, per TOML type a key takes.
WRONG_TYPE: dict[type, list[object]] = {str: [42, ["text"]], int: ["10001", 1.5, True], list: ["python3", 7]}

# A value of the right type the build cannot use, for every key (a new key must add one).
UNUSABLE: dict[str, object] = {
    "image.repository": "Terminai/Sandbox Image",
    "image.source": "ftp://example.org/x",
    "image.platforms": ["linux/sparc64"],
    "debian.suite": "Trixie!",
    "debian.variant": "tiny",
    "debian.packages": [],
    "debian.mirrors": ["deb http://deb.debian.org/debian trixie main\ndeb http://attacker.example/ x main"],
    "python.requirements": "../../../etc/passwd",
    "python.site_packages": "lib/python3.13/dist-packages",
    "user.name": "Root User",
    "user.uid": 99999999999999999999,
    "user.gid": -1,
    "user.home": "home/sandbox",
    "runtime.workdir": "/workspace/../etc",
    "runtime.entrypoint": [],
    "runtime.cmd": [""],
    "runtime.env": ["NO_EQUALS_SIGN"],
    "slim.path_exclude": ["usr/share/doc/*"],
    "slim.path_include": ["/usr/share/doc/*/copyright", "/usr/share/doc/*/copyright"],
}

KEYS = [f"{section}.{key}" for section, fields in SCHEMA.items() for key in fields]


def test_every_schema_key_has_an_unusable_value() -> None:
    assert sorted(UNUSABLE) == sorted(KEYS)


def _with(key: str, value: object) -> dict[str, Any]:
    data = _real()
    section, name = key.split(".")
    data[section][name] = value
    return data


def _without(key: str) -> dict[str, Any]:
    data = _real()
    section, name = key.split(".")
    del data[section][name]
    return data


def _spec_cases() -> list[tuple[str, Callable[[], dict[str, Any]], str]]:
    cases: list[tuple[str, Callable[[], dict[str, Any]], str]] = []
    for key in KEYS:
        section, name = key.split(".")
        kind = SCHEMA[section][name].kind
        value = WRONG_TYPE[kind][0]  # the others are checked in-process (test_every_wrong_type_is_refused)
        cases.append((f"{key} = {value!r}", lambda k=key, v=value: _with(k, v), key))  # type: ignore[misc]
        cases.append((f"{key} unusable", lambda k=key: _with(k, UNUSABLE[k]), key))  # type: ignore[misc]
        cases.append((f"{key} missing", lambda k=key: _without(k), f"missing key {key}"))  # type: ignore[misc]
        cases.append((f"{section} unknown key", lambda s=section: _with(f"{s}.colour", "x"), f"{section}.colour"))  # type: ignore[misc]
    for section in SCHEMA:

        def drop(s: str = section) -> dict[str, Any]:
            data = _real()
            del data[s]
            return data

        cases.append((f"[{section}] missing", drop, f"missing section [{section}]"))
    cases.append(("label not a string", lambda: _labels({"org.example": 3}), "labels.'org.example'"))
    cases.append(("label name with a space", lambda: _labels({"org example": "x"}), "label 'org example'"))
    cases.append(("[labels] not a table", lambda: _labels(["x"]), "[labels] must be a table"))
    cases.append(("[unknown] section", lambda: {**_real(), "imgae": {"x": "y"}}, "unknown section [imgae]"))
    return cases


def _labels(value: object) -> dict[str, Any]:
    data = _real()
    data["labels"] = value
    return data


SPEC_CASES = _spec_cases()


@pytest.mark.parametrize(("name", "make", "fragment"), SPEC_CASES, ids=[c[0] for c in SPEC_CASES])
def test_a_bad_image_toml_is_refused_naming_the_file_and_the_key(
    checkout: Checkout, name: str, make: Callable[[], dict[str, Any]], fragment: str
) -> None:
    checkout.spec.write_text(_toml(make()), encoding="utf-8")
    assert_refused(checkout.build_in_process(), 3, str(checkout.spec), fragment)
    checkout.assert_nothing_started()


@pytest.mark.parametrize("key", KEYS)
def test_every_wrong_type_is_refused(tmp_path: Path, key: str) -> None:
    """Every wrong-typed value of every key, through the loader the commands share (in-process:
    the console script is driven with the first of them above)."""
    section, name = key.split(".")
    for value in WRONG_TYPE[SCHEMA[section][name].kind]:
        spec = tmp_path / "image.toml"
        spec.write_text(_toml(_with(key, value)), encoding="utf-8")
        with pytest.raises(ConfigError) as caught:
            load_spec(spec)
        assert f"{spec}: {key}" in caught.value.message and caught.value.hint


@pytest.mark.parametrize("driver", ["process", "in-process"])
def test_the_unchanged_copy_gets_as_far_as_mmdebstrap(checkout: Checkout, driver: str) -> None:
    """The control: with nothing refused the build starts, and the tripwire sees it (for
    both drivers: a refusal the in-process rows see came before the build started too)."""
    checkout.spec.write_text(_toml(_real()), encoding="utf-8")  # the writer round-trips the real spec
    proc = checkout.build() if driver == "process" else checkout.build_in_process()
    assert proc.returncode == 5 and "mmdebstrap failed" in proc.stderr, proc.stderr
    assert checkout.tripped


@pytest.mark.parametrize("index", [0, 1, len(SPEC_CASES) - 1])
def test_the_in_process_rows_answer_as_the_console_script_does(checkout: Checkout, index: int) -> None:
    """The in-process driver is faithful: a row's exit code, stdout and stderr are the
    console script's own, byte for byte."""
    _name, make, _fragment = SPEC_CASES[index]
    checkout.spec.write_text(_toml(make()), encoding="utf-8")
    process, here = checkout.build(), checkout.build_in_process()
    assert (here.returncode, here.stdout, here.stderr) == (process.returncode, process.stdout, process.stderr)
    assert process.returncode == 3


SAME_EVERYWHERE = [
    ("user.uid", 99999999999999999999),
    ("image.platforms", ["linux/sparc64"]),
    ("runtime.env", [1]),
    ("image.repsitory", "x"),
]


@pytest.mark.parametrize(("key", "value"), SAME_EVERYWHERE, ids=[k for k, _ in SAME_EVERYWHERE])
def test_build_lock_and_lock_check_refuse_a_spec_in_the_same_words(checkout: Checkout, key: str, value: object) -> None:
    checkout.spec.write_text(_toml(_with(key, value)), encoding="utf-8")
    spec = str(checkout.spec)
    answers = [
        checkout.build_in_process(),
        in_process(SANDBOX, "lock", "--spec", spec, env=checkout.env),
        in_process(SANDBOX, "lock", "--check", "--spec", spec, env=checkout.env),
    ]
    lines = {assert_refused(proc, 3, spec, key.split(".")[1]) for proc in answers}
    assert len(lines) == 1, lines
    assert len({proc.stderr for proc in answers}) == 1
    checkout.assert_nothing_started()


def test_a_spec_that_is_not_a_file_is_refused_by_kind(checkout: Checkout) -> None:
    checkout.spec.unlink()
    os.mkfifo(checkout.spec)
    # refused by the --spec argument's type while the command line is parsed (cli/params.py)
    assert_refused(checkout.build(), 3, f"{checkout.spec} is a FIFO, not a regular file")
    checkout.spec.unlink()
    checkout.spec.mkdir()
    assert_refused(checkout.build(), 3, f"{checkout.spec} is a directory")
    checkout.assert_nothing_started()


# -- the locks and the layer record -----------------------------------------------------------

LOCKS = ("debian.lock", "requirements.lock", "requirements-build.lock", "layers.lock")


def _dangling(path: Path) -> None:
    path.symlink_to(path.parent / "gone")


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _garbage(path: Path) -> None:
    path.write_bytes(b"<html><body>502 Bad Gateway</body></html>\n")


def _latin1(path: Path) -> None:
    path.write_bytes("caf\xe9 = 1\n".encode("latin-1"))


# (kind, how to make it, what the error says, exit code for a lock, exit code for layers.lock)
# A lock whose content is wrong is a lock mismatch (6, LockError); a file that is not a file,
# or not text, is a refused input (3); layers.lock's content is a refused input too (3).
KINDS: list[tuple[str, Callable[[Path], None], str, int, int]] = [
    ("directory", make_directory, "is a directory, not a file", 3, 3),
    ("fifo", make_fifo, "is a FIFO, not a file", 3, 3),
    ("device", make_device, "is a device, not a file", 3, 3),
    ("dangling link", _dangling, "is a symbolic link to a missing file", 3, 3),
    ("not UTF-8", _latin1, "is not UTF-8 text", 3, 3),
    ("empty", _empty, "", 6, 3),
    ("garbage", _garbage, "", 6, 3),
]
LOCK_CASES = [(lock, *kind) for lock in LOCKS for kind in KINDS]


@pytest.mark.parametrize(
    ("lock", "kind", "make", "says", "code", "record_code"), LOCK_CASES, ids=[f"{c[0]}-{c[1]}" for c in LOCK_CASES]
)
def test_a_bad_lock_is_refused_before_the_build_starts(
    checkout: Checkout,
    lock: str,
    kind: str,
    make: Callable[[Path], None],
    says: str,
    code: int,
    record_code: int,
) -> None:
    path = checkout.images / lock
    path.unlink()
    make(path)
    # A FIFO or a device could block a reader: only a process can be given up on.
    answer = checkout.build() if kind in ("fifo", "device") else checkout.build_in_process()
    line = assert_refused(answer, record_code if lock == "layers.lock" else code, str(path))
    assert says in line
    checkout.assert_nothing_started()


@pytest.mark.parametrize(
    ("kind", "make", "says"), [(k, m, s) for k, m, s, _, _ in KINDS[:4]], ids=[k[0] for k in KINDS[:4]]
)
def test_lock_check_refuses_a_debian_lock_that_is_not_a_file(
    checkout: Checkout, kind: str, make: Callable[[Path], None], says: str
) -> None:
    path = checkout.images / "debian.lock"
    path.unlink()
    make(path)
    assert_refused(run(SANDBOX, "lock", "--check", "--spec", str(checkout.spec), env=checkout.env), 3, str(path), says)


def test_record_layers_refuses_a_record_path_it_could_not_write_before_building(checkout: Checkout) -> None:
    path = checkout.images / "layers.lock"
    path.unlink()
    path.mkdir()
    assert_refused(checkout.build("--record-layers"), 3, f"the layer record {path} is a directory")
    checkout.assert_nothing_started()


def test_record_layers_takes_a_malformed_record_it_will_replace(checkout: Checkout) -> None:
    (checkout.images / "layers.lock").write_text("not json")
    proc = checkout.build("--record-layers")
    assert proc.returncode == 5 and checkout.tripped, proc.stderr  # got as far as building


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda d: d["packages"][0].update(version="not a version"), "is not a Debian version"),
        (lambda d: d["packages"][0].update(name="Bad_Name"), "is not a Debian package name"),
        (lambda d: d["packages"][0].update(sha256="ab" * 31), "'sha256' must be 64 lowercase hex digits"),
    ],
    ids=["version", "name", "sha256"],
)
def test_a_debian_lock_with_a_bad_version_name_or_hash_is_refused(
    checkout: Checkout, edit: Callable[[dict[str, Any]], None], says: str
) -> None:
    path = checkout.images / "debian.lock"
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))
    assert_refused(checkout.build(), 6, str(path), says)
    checkout.assert_nothing_started()


def test_a_wheel_lock_with_a_bad_hash_is_refused(checkout: Checkout) -> None:
    path = checkout.images / "requirements.lock"
    path.write_text("restrictedpython==8.0 --hash=sha256:" + "A" * 64 + "\n")
    assert_refused(checkout.build(), 6, str(path), "needs only --hash=sha256:HEX")
    checkout.assert_nothing_started()
