"""Engine differences, the verification cache and the plain-socket Docker API client (no engine needed)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_sandbox.engine import podman as engines
from terminai_sandbox.engine.client import DockerApi, api_request
from terminai_sandbox.engine.flags import NPROC_CAP, session_flags
from terminai_sandbox.engine.podman import PodmanEngine
from terminai_sandbox.errors import EngineError, LaunchError
from terminai_sandbox.launch import audit, preflight, trust
from terminai_sandbox.launch.config import LaunchConfig, load_launch_config
from terminai_sandbox.launch.run import build_argv, execute
from terminai_sandbox.signing.formats import keys

LIMITS = {"nofile": (1024, 20000), "nproc": (96365, 96365)}


def test_docker_and_podman_differ_only_where_they_must() -> None:
    common = dict(home="/home/sandbox", home_size="256m", gid=1000, image_uid=10001, rlimits=LIMITS)
    docker_user = session_flags("docker", uid=1000, set_uid_gid=None, **common)  # type: ignore[arg-type]
    assert docker_user.home_tmpfs.endswith("mode=0700,uid=1000,gid=1000")
    assert docker_user.identity == ("--user", "1000:1000") and docker_user.extra == ()
    podman_user = session_flags("podman", uid=1000, set_uid_gid=None, **common)  # type: ignore[arg-type]
    assert podman_user.home_tmpfs.endswith("mode=0700,U") and "uid=" not in podman_user.home_tmpfs
    assert podman_user.identity == ("--userns=keep-id", "--user", "1000:1000")
    assert podman_user.extra == ("--ulimit", "nofile=20000:20000", "--ulimit", f"nproc={NPROC_CAP}:{NPROC_CAP}")
    # Root on the host: no keep-id (rootless-only), and the image's unprivileged user named
    # explicitly, so an image (or project layer) saying USER root never decides.
    podman_root = session_flags("podman", uid=0, set_uid_gid=None, **common)  # type: ignore[arg-type]
    assert podman_root.identity == ("--user", "10001:10001") and "--userns=keep-id" not in podman_root.extra
    docker_root = session_flags("docker", uid=0, set_uid_gid=None, **common)  # type: ignore[arg-type]
    assert docker_root.identity == ("--user", "10001:10001")
    assert docker_root.home_tmpfs.endswith("uid=10001,gid=10001")
    # SANDBOX_SET_UID_GID=false: the image's user for everyone, still named explicitly.
    for engine in ("docker", "podman"):
        kept = session_flags(engine, uid=1000, set_uid_gid=False, **common)  # type: ignore[arg-type]
        assert kept.identity == ("--user", "10001:10001")
    assert all(
        session_flags(engine, uid=uid, set_uid_gid=keep, **common).identity[-1].split(":")[0] != "0"  # type: ignore[arg-type]
        for engine in ("docker", "podman")
        for uid in (0, 1000)
        for keep in (None, True, False)
    )
    # Unlimited or low hard limits: never above the launcher's own hard limit.
    low = session_flags(
        "podman", uid=0, set_uid_gid=None, **{**common, "rlimits": {"nofile": (64, 256), "nproc": (-1, -1)}}
    )  # type: ignore[arg-type]
    assert low.extra == ("--ulimit", "nofile=256:256", "--ulimit", f"nproc={NPROC_CAP}:{NPROC_CAP}")


def _verified(engine_name: str = "docker") -> preflight.VerifiedImage:
    digest = "sha256:" + "b" * 64
    return preflight.VerifiedImage(
        pinned=f"r.example/x@{digest}",
        digest=digest,
        image_id="sha256:" + "c" * 64,
        verified_by=("k",),
        skipped_verification=False,
        run_ref=f"r.example/x@{digest}",
        _token=preflight._TOKEN,
    )


def test_podman_argv_carries_the_same_hardening() -> None:
    config = LaunchConfig(engine="podman", engine_from="test", image=None, image_from="test")
    argv = build_argv(
        "podman",
        _verified(),
        config,
        ["true"],
        cwd="/w",
        tty=False,
        uid=1000,
        gid=1000,
        binary="podman",
        rlimits=LIMITS,
    )
    for flag in ("--read-only", "--init", "--rm", "--userns=keep-id"):
        assert flag in argv
    for pair in (("--cap-drop", "ALL"), ("--security-opt", "no-new-privileges"), ("--network", "none")):
        assert argv[argv.index(pair[0]) + 1] == pair[1]
    assert argv[-2:] == ["r.example/x@sha256:" + "b" * 64, "true"]
    assert not any("uid=" in a for a in argv)


def test_execute_passes_the_exit_code_through() -> None:
    assert execute(["sh", "-c", "exit 7"], {"PATH": "/usr/bin:/bin"}) == 7
    assert execute(["sh", "-c", "kill -TERM $$"], {"PATH": "/usr/bin:/bin"}) == -15


def test_cache_holds_passes_only_and_keys_on_exact_inputs(tmp_path: Path) -> None:
    cache = tmp_path / "verified.json"
    pub = tmp_path / "k.pub"
    pub.write_bytes(keys.public_pem(keys.generate()))
    source = trust.key_file(pub)
    digest = "sha256:" + "d" * 64
    assert trust.known_fingerprint(cache, source) is None and not trust.cache_hit(cache, digest, "fp")
    fingerprint = source.load().fingerprint()
    trust.cache_store(cache, digest, fingerprint, source)
    assert trust.known_fingerprint(cache, source) == fingerprint
    assert trust.cache_hit(cache, digest, fingerprint) and not trust.cache_hit(cache, "sha256:" + "e" * 64, fingerprint)
    # Another key (other bytes) is unknown: it must load and verify on its own.
    pub.write_bytes(keys.public_pem(keys.generate()))
    assert trust.known_fingerprint(cache, trust.key_file(pub)) is None
    # A policy naming key files by path cannot be keyed by its own bytes; one with inline keys can.
    by_path = tmp_path / "p.json"
    by_path.write_text(json.dumps({"version": 1, "keys": [{"path": str(pub)}]}))
    assert trust.policy_file(by_path).source_key is None
    inline = tmp_path / "q.json"
    inline.write_text(json.dumps({"version": 1, "keys": [{"pem": pub.read_text()}]}))
    assert trust.policy_file(inline).source_key is not None
    # A corrupt cache is a miss, never an error or a pass.
    cache.write_text("{not json")
    assert not trust.cache_hit(cache, digest, fingerprint) and trust.known_fingerprint(cache, source) is None


def test_first_launches_at_once_all_record_their_pass(tmp_path: Path) -> None:
    # Each process is a first launch storing its own pass at the same instant: none may fail,
    # none may lose another's entry, and no temporary file is left.
    cache = tmp_path / "state" / "verified.json"
    script = (
        "import sys; from pathlib import Path; from terminai_sandbox.launch import trust\n"
        "trust.cache_store(Path(sys.argv[1]), 'sha256:' + sys.argv[2] * 64, 'fp')\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(cache), digit], stderr=subprocess.PIPE)
        for digit in "0123456789abcdef"
    ]
    failures = [p.stderr.read() for p in procs if p.wait() != 0 and p.stderr is not None]
    assert failures == []
    assert all(trust.cache_hit(cache, "sha256:" + d * 64, "fp") for d in "0123456789abcdef")
    assert sorted(p.name for p in cache.parent.iterdir()) == ["verified.json", "verified.json.lock"]


class _FakeEngine:
    """A unix-socket HTTP server answering like dockerd (or not at all)."""

    def __init__(self, path: Path, answers: dict[str, bytes]) -> None:
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(8)
        self.answers = answers
        self.requests: list[str] = []
        self.bodies: list[bytes] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                data = conn.recv(65536)
                while b"\r\n\r\n" not in data and (more := conn.recv(65536)):
                    data += more
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                while len(body) < length and (more := conn.recv(65536)):
                    body += more
                request = head.decode()
                path = request.split()[1]
                self.requests.append(path)
                self.bodies.append(body)
                conn.sendall(self.answers.get(path, b'HTTP/1.0 404 Not Found\r\n\r\n{"message":"no such image"}'))


@pytest.fixture()
def fake(tmp_path: Path) -> Iterator[tuple[Path, dict[str, bytes]]]:
    answers: dict[str, bytes] = {}
    server = _FakeEngine(tmp_path / "e.sock", answers)
    yield tmp_path / "e.sock", answers
    server.server.close()


def test_engine_probe_uses_ping_headers_then_version(fake: tuple[Path, dict[str, bytes]]) -> None:
    sock, answers = fake
    answers["/_ping"] = b"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Docker/20.10.24 (linux)\r\n\r\nOK"
    engine = DockerApi.connect({"DOCKER_HOST": f"unix://{sock}"})
    assert (engine.info.name, engine.info.version, engine.info.api_version) == ("docker", "20.10.24", "1.41")
    answers["/_ping"] = b"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Libpod/4.3.1 (linux)\r\n\r\nOK"
    assert DockerApi.connect({"DOCKER_HOST": f"unix://{sock}"}).info.name == "podman"
    # No usable headers: fall back to /version (chunked bodies are decoded).
    answers["/_ping"] = b"HTTP/1.0 200 OK\r\n\r\nOK"
    body = json.dumps({"ApiVersion": "1.39", "Version": "18.09"}).encode()
    answers["/version"] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (
        len(body),
        body,
    )
    with pytest.raises(EngineError, match="too old"):
        DockerApi.connect({"DOCKER_HOST": f"unix://{sock}"})


def test_image_inspect_over_the_plain_socket(fake: tuple[Path, dict[str, bytes]]) -> None:
    sock, answers = fake
    answers["/_ping"] = b"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Docker/20.10.24 (linux)\r\n\r\nOK"
    ref = "127.0.0.1:5000/terminai/sandbox@sha256:" + "a" * 64
    answers[f"/v1.41/images/{ref}/json"] = (
        b'HTTP/1.0 200 OK\r\n\r\n{"Id": "sha256:1", "Config": {"Labels": {"a": "b"}}}'
    )
    engine = DockerApi.connect({"DOCKER_HOST": f"unix://{sock}"})
    assert engine.inspect_image(ref) == {"Id": "sha256:1", "Config": {"Labels": {"a": "b"}}}
    assert engine.inspect_image("other:1") is None
    answers["/v1.41/images/broken:1/json"] = b'HTTP/1.0 500 Internal Server Error\r\n\r\n{"message": "disk on fire"}'
    with pytest.raises(EngineError, match="disk on fire"):
        engine.inspect_image("broken:1")
    answers["/garbage"] = b"SSH-2.0-OpenSSH\r\n"
    with pytest.raises(ValueError, match="not an HTTP answer"):
        api_request(f"unix://{sock}", "/garbage")


def test_dead_socket_is_diagnosed(tmp_path: Path) -> None:
    with pytest.raises(EngineError) as caught:
        DockerApi.connect({"DOCKER_HOST": f"unix://{tmp_path}/none.sock"})
    assert "not running" in caught.value.message or "no container engine" in caught.value.message


def test_ledger_reads_only_its_tail(tmp_path: Path) -> None:
    ledger = audit.Ledger(tmp_path / "audit.jsonl")
    ledger.append("big", blob="x" * 200_000)  # one record longer than the tail window
    for index in range(3):
        ledger.append("event", n=index)
    assert audit.verify(ledger.path) == 4


def _preflight_on(
    sock: Path, answers: dict[str, bytes], labels: dict[str, str], tmp_path: Path
) -> tuple[LaunchConfig, preflight.PreflightOptions, audit.Ledger]:
    answers["/_ping"] = b"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Docker/20.10.24 (linux)\r\n\r\nOK"
    ref = "127.0.0.1:5000/terminai/sandbox@sha256:" + "a" * 64
    image = {"Id": "sha256:1", "Config": {"Labels": labels}}
    answers[f"/v1.41/images/{ref}/json"] = b"HTTP/1.0 200 OK\r\n\r\n" + json.dumps(image).encode()
    env = {"DOCKER_HOST": f"unix://{sock}", "TERMINAI_SANDBOX": "docker"}
    config = load_launch_config(env, image_flag=ref, available=["docker"])
    options = preflight.PreflightOptions(trust=None, unsafe_skip_verify=True, supported_contract="1.0.0", env=env)
    return config, options, audit.Ledger(tmp_path / "audit.jsonl")


def test_preflight_records_every_step_in_one_write_even_when_it_stops_early(
    fake: tuple[Path, dict[str, bytes]], tmp_path: Path
) -> None:
    config, options, ledger = _preflight_on(*fake, {preflight.CONTRACT_LABEL: "2.0.0"}, tmp_path)
    with pytest.raises(LaunchError, match=r"preflight step 5 \(contract label\) refused: .*major differs"):
        preflight.preflight(config, options, ledger=ledger)
    records = [json.loads(line) for line in ledger.path.read_text().splitlines()]
    assert [(r["step"], r["ok"]) for r in records] == [
        (0, True),
        (1, True),
        (2, True),
        (3, True),
        (4, True),
        (5, False),
    ]
    assert audit.verify(ledger.path) == 6

    # An interrupt between steps (here: while step 3 is reported) still leaves the steps done so far.
    ledger.path.unlink()

    def interrupt(result: preflight.StepResult) -> None:
        if result.number == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        preflight.preflight(config, options, ledger=ledger, report=interrupt)
    assert [json.loads(line)["step"] for line in ledger.path.read_text().splitlines()] == [0, 1, 2, 3]


def test_rootless_podman_on_cgroups_v1_says_its_limits_do_not_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not engines.cgroups_v2(tmp_path)
    (tmp_path / "cgroup.controllers").write_text("cpu memory pids\n")
    assert engines.cgroups_v2(tmp_path)
    rootless = PodmanEngine("/usr/bin/podman", "4.3.1", rootless=True, env={})
    rootful = PodmanEngine("/usr/bin/podman", "4.3.1", rootless=False, env={})
    monkeypatch.setattr(engines, "cgroups_v2", lambda: False)
    assert "--pids-limit NOT enforced: rootless podman on cgroups v1" in rootless.describe()
    assert "NOT enforced" not in rootful.describe()
    monkeypatch.setattr(engines, "cgroups_v2", lambda: True)
    assert rootless.describe() == "podman 4.3.1 (rootless, /usr/bin/podman)"


def test_the_engine_client_speaks_plain_sockets_and_names_the_way_round_other_schemes() -> None:
    from terminai_sandbox.engine import transport

    with pytest.raises(ValueError, match="only unix://, tcp:// and http://"):
        transport.api_request("ssh://user@builder", "/_ping")
    with pytest.raises(EngineError, match="ssh://user@builder is not supported") as caught:
        DockerApi.connect({"DOCKER_HOST": "ssh://user@builder"})
    assert "DOCKER_HOST=unix://" in caught.value.hint


def _session_site(tmp_path: Path, answers: dict[str, bytes]) -> tuple[dict[str, str], str]:
    """An engine that holds the pinned image and a `docker` that copies the ledger and exits 7."""
    from terminai_sandbox.artifacts.contract import supported_version

    ref = "127.0.0.1:5000/terminai/sandbox:0.1.0@sha256:" + "a" * 64
    answers["/_ping"] = b"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Docker/20.10.24 (linux)\r\n\r\nOK"
    image = {"Id": "sha256:" + "b" * 64, "Config": {"Labels": {preflight.CONTRACT_LABEL: supported_version()}}}
    pinned = "127.0.0.1:5000/terminai/sandbox@sha256:" + "a" * 64
    answers[f"/v1.41/images/{pinned}/json"] = b"HTTP/1.0 200 OK\r\n\r\n" + json.dumps(image).encode()
    bin_dir, home = tmp_path / "bin", tmp_path / "home"
    bin_dir.mkdir()
    home.mkdir()
    fake = bin_dir / "docker"
    fake.write_text('#!/bin/sh\ncp "$HOME/.local/state/terminai-sandbox/audit.jsonl" "$HOME/at-start.jsonl"\nexit 7\n')
    fake.chmod(0o755)
    env = {
        "DOCKER_HOST": f"unix://{tmp_path / 'e.sock'}",
        "TERMINAI_SANDBOX": "docker",
        "HOME": str(home),
        "PATH": f"{bin_dir}:/usr/bin:/bin",
    }
    return env, ref


def launch_true(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ref: str, env: dict[str, str]) -> int:
    """``run REF -- true`` (verification skipped) from a new project folder: its exit code."""
    from terminai_sandbox.common.hardening import Limits
    from terminai_sandbox.launch import session

    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    request = session.LaunchRequest(image=ref, unsafe_skip_verify=True)
    return session.run(request, ["true"], limits=Limits(), env=env, say=lambda _line: None)


def test_a_session_start_writes_preflight_and_the_run_record_with_one_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    answers: dict[str, bytes] = {}
    server = _FakeEngine(tmp_path / "e.sock", answers)
    try:
        env, ref = _session_site(tmp_path, answers)
        synced: list[int] = []
        real_fsync = os.fsync
        monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
        code = launch_true(tmp_path, monkeypatch, ref, env)
    finally:
        server.server.close()
    assert code == 7
    assert len(synced) == 2  # preflight and the run record together, then the exit code
    state = Path(env["HOME"]) / ".local" / "state" / "terminai-sandbox" / "audit.jsonl"
    at_start = [json.loads(line) for line in (Path(env["HOME"]) / "at-start.jsonl").read_text().splitlines()]
    # Everything the launch decided was on disk before the engine started.
    assert [r["event"] for r in at_start] == ["unsafe-skip-verify", *["preflight-step"] * 8, "run"]
    assert [r.get("step") for r in at_start[1:9]] == list(range(8)) and all(r["ok"] for r in at_start[1:9])
    records = [json.loads(line) for line in state.read_text().splitlines()]
    assert records[:-1] == at_start and records[-1]["event"] == "exit" and records[-1]["code"] == 7
    assert audit.verify(state) == len(records)


def test_a_refused_session_start_still_writes_its_preflight_records(tmp_path: Path) -> None:
    from terminai_sandbox.common.hardening import Limits
    from terminai_sandbox.launch import session

    env, ref = _session_site(tmp_path, {})  # no engine answers at DOCKER_HOST
    request = session.LaunchRequest(image=ref, unsafe_skip_verify=True)
    with pytest.raises(EngineError, match=r"preflight step 1 \(engine\) refused"):
        session.run(request, ["true"], limits=Limits(), env=env, say=lambda _line: None)
    state = Path(env["HOME"]) / ".local" / "state" / "terminai-sandbox" / "audit.jsonl"
    records = [json.loads(line) for line in state.read_text().splitlines()]
    steps = [(r["step"], r["ok"]) for r in records if r["event"] == "preflight-step"]
    assert steps == [(0, True), (1, False)] and not (Path(env["HOME"]) / "at-start.jsonl").exists()
    assert "run" not in [r["event"] for r in records] and audit.verify(state) == len(records)


def _frame(stream: int, payload: bytes) -> bytes:
    return bytes([stream, 0, 0, 0]) + len(payload).to_bytes(4, "big") + payload


def test_the_engine_client_runs_a_labelled_container_to_completion_and_always_removes_it(tmp_path: Path) -> None:
    from terminai_sandbox.engine.client import LABEL

    answers: dict[str, bytes] = {}
    server = _FakeEngine(tmp_path / "e.sock", answers)
    try:
        answers["/_ping"] = b"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Docker/20.10.24 (linux)\r\n\r\nOK"
        answers["/v1.41/containers/create?name=job"] = b'HTTP/1.0 201 Created\r\n\r\n{"Id": "c0ffee"}'
        answers["/v1.41/containers/c0ffee/start"] = b"HTTP/1.0 204 No Content\r\n\r\n"
        answers["/v1.41/containers/c0ffee/wait"] = b'HTTP/1.0 200 OK\r\n\r\n{"StatusCode": 3}'
        logs = _frame(1, b"out ") + _frame(2, b"err") + _frame(1, b"put")
        answers["/v1.41/containers/c0ffee/logs?stdout=1&stderr=1"] = b"HTTP/1.0 200 OK\r\n\r\n" + logs
        answers["/v1.41/containers/c0ffee?force=1&v=1"] = b"HTTP/1.0 204 No Content\r\n\r\n"
        engine = DockerApi.connect({"DOCKER_HOST": f"unix://{tmp_path / 'e.sock'}"})
        code, out, err = engine.run(
            "img",
            ["sh", "-c", "x"],
            name="job",
            network_mode="none",
            read_only=True,
            tmpfs={"/tmp": "rw,size=64m"},
            volumes={"/host": {"bind": "/in", "mode": "ro"}},
            environment={"A": "1"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            runtime="runsc",
            labels={"extra": "yes"},
        )
        assert (code, out, err) == (3, b"out put", b"err")
        created = json.loads(server.bodies[server.requests.index("/v1.41/containers/create?name=job")])
        assert created["Image"] == "img" and created["Cmd"] == ["sh", "-c", "x"] and created["Env"] == ["A=1"]
        assert created["Labels"] == {LABEL: "1", "extra": "yes"}
        assert created["HostConfig"] == {
            "NetworkMode": "none",
            "ReadonlyRootfs": True,
            "Tmpfs": {"/tmp": "rw,size=64m"},
            "Binds": ["/host:/in:ro"],
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "Runtime": "runsc",
        }
        # A container that cannot start is removed all the same, and the engine's words reach the error.
        server.requests.clear()
        answers["/v1.41/containers/c0ffee/start"] = (
            b'HTTP/1.0 400 Bad Request\r\n\r\n{"message": "exec: \\"python3\\": executable file not found"}'
        )
        with pytest.raises(EngineError, match="executable file not found") as refused:
            engine.run("img", ["python3"], name="job")
        assert getattr(refused.value, "status", None) == 400
        assert server.requests[-1] == "/v1.41/containers/c0ffee?force=1&v=1"
    finally:
        server.server.close()


def test_a_pull_whose_stream_reports_an_error_fails_even_though_the_engine_answered_200(tmp_path: Path) -> None:
    from terminai_sandbox.errors import RegistryError

    answers: dict[str, bytes] = {}
    server = _FakeEngine(tmp_path / "e.sock", answers)
    try:
        answers["/_ping"] = b"HTTP/1.0 200 OK\r\nApi-Version: 1.41\r\nServer: Docker/20.10.24 (linux)\r\n\r\nOK"
        digest = "sha256:" + "c" * 64
        stream = (
            b'{"status":"Pulling from r/x"}\n{"errorDetail":{"message":"unauthorized: login"},"error":"unauthorized"}\n'
        )
        answers[f"/v1.41/images/create?fromImage=reg.example/r/x&tag={digest}"] = b"HTTP/1.0 200 OK\r\n\r\n" + stream
        engine = DockerApi.connect({"DOCKER_HOST": f"unix://{tmp_path / 'e.sock'}"})
        with pytest.raises(
            RegistryError, match=r"refused to serve reg\.example/r/x@sha256:c+: unauthorized: login"
        ) as refused:
            engine.pull_by_digest("reg.example/r/x", digest)
        assert "docker login" in refused.value.hint
    finally:
        server.server.close()
