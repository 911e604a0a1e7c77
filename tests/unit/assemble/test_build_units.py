from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from terminai_sandbox import layers
from terminai_sandbox.artifacts.debian_lock import DebianLock
from terminai_sandbox.assemble import debian, oci
from terminai_sandbox.assemble.hooks import base_hooks
from terminai_sandbox.assemble.spec import load_spec
from terminai_sandbox.engine.client import candidate_hosts, diagnose
from terminai_sandbox.errors import BuildError, ConfigError, EngineError, LockError

from tests.fixtures.locks import deb_sha256, debian_lock_doc

SPEC = Path(__file__).resolve().parents[3] / "images" / "sandbox" / "image.toml"
SDE = 1_700_000_000


def test_the_real_spec_loads() -> None:
    spec = load_spec(SPEC)
    assert spec.uid == 10001 and spec.user == "sandbox" and "python3" in spec.packages


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t.replace("[debian]", "[debain]"), "did you mean 'debian'"),
        (lambda t: t.replace("variant =", "varient ="), "did you mean 'variant'"),
        (lambda t: t.replace("uid = 10001", "uid = 0"), "(0 is root; 4294967295 means no id), not 0"),
        (lambda t: t.replace("uid = 10001", "uid = 99999999999999999999"), "not 99999999999999999999"),
        (lambda t: t.replace("uid = 10001", "uid = 4294967295"), "user.uid must be a Linux id from 1 to 4294967294"),
        (lambda t: t.replace("uid = 10001", "uid = -5"), "user.uid must be a Linux id from 1 to 4294967294"),
        (lambda t: t.replace("gid = 10001", "gid = 9223372036854775807"), "user.gid must be a Linux id"),
        (lambda t: t.replace("uid = 10001", 'uid = "x"'), "user.uid must be a Linux id from 1 to 4294967294"),
        (lambda t: t + "\n[extra]\n", "unknown section"),
        (lambda t: t.replace("[image]", "[image"), "not valid TOML"),
    ],
)
def test_spec_errors_name_the_key(tmp_path: Path, mutate: object, message: str) -> None:
    bad = tmp_path / "image.toml"
    bad.write_text(mutate(SPEC.read_text()))  # type: ignore[operator]
    with pytest.raises(ConfigError) as caught:
        load_spec(bad)
    assert message in caught.value.render()


def _lock(*pkgs: tuple[str, str]) -> DebianLock:
    return DebianLock.from_dict(debian_lock_doc(*pkgs, sde=SDE))


def _collected(tmp_path: Path, status: str, index: str) -> debian.Collected:
    packages = tmp_path / "x_Packages"
    packages.write_text(index)
    return debian.Collected(status=status, packages_files=(packages,), release_dates=(SDE,))


def test_verify_against_lock_names_extra_missing_and_changed(tmp_path: Path) -> None:
    status = (
        "Package: a\nStatus: install ok installed\nVersion: 1\nArchitecture: amd64\n\n"
        "Package: b\nStatus: install ok installed\nVersion: 2\nArchitecture: amd64\n\n"
        "Package: extra\nStatus: install ok installed\nVersion: 9\nArchitecture: amd64\n"
    )
    index = f"Package: a\nVersion: 1\nSHA256: {deb_sha256('a')}\n\nPackage: b\nVersion: 2\nSHA256: tampered\n"
    with pytest.raises(LockError) as caught:
        debian.verify_against_lock(_lock(("a", "1"), ("b", "2"), ("gone", "3")), _collected(tmp_path, status, index))
    text = caught.value.message
    assert "extra package extra 9" in text and "missing package gone 3" in text
    assert "b 2: archive sha256 tampered differs" in text
    with pytest.raises(LockError, match=r"installed 1 .* locked 5"):
        debian.verify_against_lock(_lock(("a", "5")), _collected(tmp_path, status.split("\n\n", maxsplit=1)[0], index))


def test_preferences_pin_every_package() -> None:
    prefs = debian.preferences(_lock(("a", "1:2.0-1"), ("b", "3")))
    assert "Package: a\nPin: version 1:2.0-1\nPin-Priority: 1001\n" in prefs and "Package: b" in prefs


def test_lock_file_errors(tmp_path: Path) -> None:
    with pytest.raises(LockError) as caught:
        debian.read_lock(tmp_path / "missing")
    assert "terminai-sandbox lock" in caught.value.hint
    (tmp_path / "bad").write_text("{}")
    with pytest.raises(LockError, match="format-1"):
        debian.read_lock(tmp_path / "bad")


def _stage(root: Path) -> None:
    (root / "usr" / "local" / "bin").mkdir(parents=True)
    (root / "usr" / "local" / "bin" / "tool").write_text("#!/bin/sh\n")
    (root / "usr" / "local" / "bin" / "tool").chmod(0o700)
    (root / "data.txt").write_text("data")
    os.link(root / "data.txt", root / "alias.txt")
    (root / "link").symlink_to("data.txt")


def test_own_layers_are_deterministic_across_umask_and_mtime(tmp_path: Path) -> None:
    _stage(tmp_path / "a")
    old = os.umask(0o077)
    try:
        _stage(tmp_path / "b")
    finally:
        os.umask(old)
    os.utime(tmp_path / "b" / "data.txt", (1, 1))
    one = layers.write_layer(tmp_path / "a", tmp_path / "a.tar", source_date_epoch=SDE)
    two = layers.write_layer(tmp_path / "b", tmp_path / "b.tar", source_date_epoch=SDE)
    assert one.diff_id == two.diff_id
    with tarfile.open(one.tar) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert [m for m in members] == sorted(members)
    assert members["usr/local/bin/tool"].mode == 0o755 and members["data.txt"].mode == 0o644
    assert members["alias.txt"].isreg() and members["data.txt"].islnk()  # the first name carries the data
    assert members["data.txt"].linkname == "alias.txt"
    assert {m.mtime for m in members.values()} == {SDE} and {m.uid for m in members.values()} == {0}


def test_special_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    os.mkfifo(tmp_path / "s" / "fifo")
    with pytest.raises(BuildError, match="special file"):
        layers.write_layer(tmp_path / "s", tmp_path / "x.tar", source_date_epoch=SDE)


def test_normalise_retargets_hardlinks_and_clamps_times(tmp_path: Path) -> None:
    src = tmp_path / "src.tar"
    with tarfile.open(src, "w") as tar:
        for name, kind, link in (
            ("./", tarfile.DIRTYPE, ""),
            ("./z-target", tarfile.REGTYPE, ""),
            ("./a-link", tarfile.LNKTYPE, "./z-target"),
            ("./dev/null", tarfile.CHRTYPE, ""),
        ):
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mtime = kind, link, SDE + 999
            data = b"payload" if kind == tarfile.REGTYPE else b""
            info.size = len(data)
            import io

            tar.addfile(info, io.BytesIO(data))
    layer = layers.normalise_tar(src, tmp_path / "out.tar", source_date_epoch=SDE)
    with tarfile.open(layer.tar) as tar:
        members = tar.getmembers()
        assert [(m.name, m.type) for m in members] == [("a-link", tarfile.REGTYPE), ("z-target", tarfile.LNKTYPE)]
        assert members[1].linkname == "a-link" and {m.mtime for m in members} == {SDE}
        first = tar.extractfile(members[0])
        assert first is not None and first.read() == b"payload"


def test_gzip_blobs_are_deterministic(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "f").write_text("x" * 1000)
    layer = layers.write_layer(tmp_path / "s", tmp_path / "l.tar", source_date_epoch=SDE)
    a = layers.compress(layer, tmp_path / "a.gz")
    b = layers.compress(layer, tmp_path / "b.gz")
    assert a.digest == b.digest and a.diff_id == layer.diff_id


def test_a_gzip_blob_is_never_seen_half_written(tmp_path: Path) -> None:
    # Builds at once share the cache's blobs: another process compressing into the same path
    # must never show a reader (that takes the digest and links the file) partial content.
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "f").write_bytes(os.urandom(6 << 20))
    layer = layers.write_layer(tmp_path / "s", tmp_path / "l.tar", source_date_epoch=SDE)
    expected = layers.compress(layer, tmp_path / "ref.gz").digest
    dst = tmp_path / "shared.gz"
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from terminai_sandbox import layers\n"
            "layer = layers.Layer(tar=Path(sys.argv[1]), diff_id='', size=0)\n"
            "for _ in range(4):\n"
            "    Path(sys.argv[2]).unlink(missing_ok=True); layers.compress(layer, Path(sys.argv[2]))",
            str(layer.tar),
            str(dst),
        ]
    )
    seen = 0
    while writer.poll() is None:
        try:
            digest = layers.sha256_file(dst)
        except FileNotFoundError:
            continue
        seen += 1
        assert digest == expected
    assert writer.returncode == 0 and seen > 0


def test_first_difference_names_the_entry(tmp_path: Path) -> None:
    for name, text in (("a", "one"), ("b", "two")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_text(text)
        layers.write_layer(tmp_path / name, tmp_path / f"{name}.tar", source_date_epoch=SDE)
    assert layers.first_difference(tmp_path / "a.tar", tmp_path / "b.tar") == "f: content differs"
    assert layers.first_difference(tmp_path / "a.tar", tmp_path / "a.tar") is None


def test_config_is_canonical_json() -> None:
    layer = layers.Layer(tar=Path("x"), diff_id="sha256:" + "0" * 64, size=1, digest="sha256:" + "1" * 64, gzip_size=1)
    kwargs = dict(
        layers=[layer],
        history=["h"],
        user="1:1",
        env=["A=1"],
        entrypoint=["/e"],
        cmd=["c"],
        workdir="/w",
        labels={"b": "2", "a": "1"},
        source_date_epoch=SDE,
        architecture="amd64",
    )
    config = oci.make_config(**kwargs)  # type: ignore[arg-type]
    assert config == oci.make_config(**kwargs)  # type: ignore[arg-type]
    data = json.loads(config)
    assert data["created"] == "2023-11-14T22:13:20Z" and data["rootfs"]["diff_ids"] == [layer.diff_id]
    assert b" " not in config.replace(b"Sovereign Sandbox", b"")


def test_engine_hosts_and_diagnosis(tmp_path: Path) -> None:
    assert candidate_hosts({"DOCKER_HOST": "tcp://127.0.0.1:1"}) == ["tcp://127.0.0.1:1"]
    assert candidate_hosts({"XDG_RUNTIME_DIR": "/run/user/5"})[1] == "unix:///run/user/5/podman/podman.sock"
    down = diagnose(f"unix://{tmp_path}/nothing.sock", ConnectionError("refused"))
    assert isinstance(down, EngineError) and ("not running" in down.message or "no container engine" in down.message)
    sock = tmp_path / "docker.sock"
    sock.write_text("")
    denied = diagnose(f"unix://{sock}", PermissionError(13, "Permission denied"))
    assert "permission denied" in denied.message and "docker' group" in denied.hint


def test_the_base_hooks_leave_mmdebstraps_apt_config_and_no_apt_clean_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # mmdebstrap keeps its APT_CONFIG in the root's /tmp until its cleanup phase; a hook that
    # empties /tmp made that phase's 'apt-get clean' run with the host's configuration (the
    # host's apt cache cleaned, and a lock conflict with any apt-get running beside it).
    root = tmp_path / "root"
    for d in ("tmp", "var/tmp", "var/log", "etc"):
        (root / d).mkdir(parents=True)
    apt_config = root / "tmp" / "mmdebstrap.apt.conf.abc"
    apt_config.write_text('Dir "/";\n')
    (root / "var" / "tmp" / "leftover").write_text("x")
    scrub = base_hooks(load_spec(SPEC), SDE)[-1]
    subprocess.run(["sh", "-c", scrub, "hook", str(root)], check=True)
    assert apt_config.exists() and not (root / "var" / "tmp" / "leftover").exists()

    seen: list[list[str]] = []

    def fake_run(cmd: list[str], **_kw: object) -> subprocess.CompletedProcess[str]:
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, "", "stop here")

    monkeypatch.setattr(debian.subprocess, "run", fake_run)
    monkeypatch.setattr(debian.shutil, "which", lambda _n: "/usr/bin/mmdebstrap")
    with pytest.raises(BuildError):
        debian.run_mmdebstrap(
            load_spec(SPEC), tmp_path / "o.tar", workdir=tmp_path / "w", source_date_epoch=SDE, prefs=None
        )
    assert {"--skip=cleanup/apt/lists", "--skip=cleanup/apt/cache"} <= set(seen[0])
