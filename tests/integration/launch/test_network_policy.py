"""Network policies end to end: the real launcher, engine, image, proxy and a test origin.

The origin servers live in a network namespace this test creates, on addresses given to
that namespace's loopback only (``11.0.0.7`` for ``allowed.test``, ``11.0.0.8`` for
``denied.test``, names the proxy learns from the operator's test hosts file): no packet of
this test leaves the machine, and none goes through the host's own routes. The launcher
(and with it the proxy it starts) runs inside that namespace; dockerd creates the session
with ``--network none`` as always, so the session can reach nothing but the bridge.

Clients the project did not write do the reaching: CPython's ``urllib`` (HTTP, and HTTPS
through ``CONNECT`` to an origin whose certificate openssl made) and pip (the wheel CPython
bundles, run from a read-only mount as ``python3 pip.whl/pip``). The image carries no curl;
curl runs beside it, through the same bridge and proxy. Docker and podman, runc and gVisor.
"""

from __future__ import annotations

import base64
import ensurepip
import hashlib
import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminai_apts.egress.ledger import EVENT
from terminai_sandbox.assemble import BuildResult

from tests.fixtures.registry import RegistryServer, podman_forget
from tests.integration.launch.test_launch import CLI, Site

ALLOWED, DENIED = "11.0.0.7", "11.0.0.8"
WHEEL = "demo_pkg-1.0-py3-none-any.whl"
EGRESS_EVENT = EVENT

ORIGIN = textwrap.dedent(
    """
    import http.server, socketserver, ssl, sys, threading
    wheel = open(sys.argv[1], "rb").read()
    name = sys.argv[2]
    def handler_for(address):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path.startswith("/simple/"):
                    body = f'<html><body><a href="/files/{name}">{name}</a></body></html>'.encode()
                elif self.path == "/files/" + name:
                    body = wheel
                else:
                    body = f"origin {address} {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html" if self.path.startswith("/simple/") else "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args):
                pass
        return Handler
    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(sys.argv[3], sys.argv[4])
    for address in sys.argv[5:]:
        for port in (80, 443, 8443):
            server = Server((address, port), handler_for(address if port == 80 else f"{address}:{port}"))
            if port != 80:
                server.socket = context.wrap_socket(server.socket, server_side=True)
            threading.Thread(target=server.serve_forever, daemon=True).start()
    print("ready", flush=True)
    sys.stdin.read()
    """
)

PROBE = textwrap.dedent(
    f"""
    import json, os, socket, urllib.error, urllib.request
    out = {{}}
    def attempt(name, call):
        try:
            out[name] = ["ok", call()]
        except urllib.error.HTTPError as exc:
            out[name] = ["http", exc.code]
        except Exception as exc:
            out[name] = ["error", type(exc).__name__, str(exc)[:200]]
    attempt("allowed", lambda: urllib.request.urlopen("http://allowed.test/hello", timeout=20).read().decode())
    attempt("denied", lambda: urllib.request.urlopen("http://denied.test/", timeout=20).read().decode())
    if os.path.exists("/data/tls/cert.pem"):
        import ssl
        tls = ssl.create_default_context(cafile="/data/tls/cert.pem")
        get = lambda url: urllib.request.urlopen(url, timeout=20, context=tls).read().decode()
        attempt("https", lambda: get("https://allowed.test/tls"))
        attempt("https_denied", lambda: get("https://denied.test/tls"))
        attempt("https_port", lambda: get("https://allowed.test:8443/tls"))
    attempt("dns", lambda: socket.getaddrinfo("allowed.test", 80))
    attempt("raw", lambda: socket.create_connection(("{ALLOWED}", 80), timeout=5).close())
    attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW).close())
    attempt("interfaces", lambda: sorted(name for _, name in socket.if_nameindex()))
    def netlink_add_address():
        # RTM_NEWADDR 10.9.9.9/24 on lo over AF_NETLINK: the kernel's answer (0 would mean it was added).
        import struct
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as link:
            body = struct.pack("BBBBI", socket.AF_INET, 24, 0, 0, socket.if_nametoindex("lo"))
            body += struct.pack("HH4s", 8, 2, socket.inet_aton("10.9.9.9"))
            flags = 0x1 | 0x4 | 0x200 | 0x400  # REQUEST, ACK, EXCL, CREATE
            link.send(struct.pack("IHHII", 16 + len(body), 20, flags, 1, 0) + body)
            return struct.unpack("i", link.recv(4096)[16:20])[0]
    attempt("netlink", netlink_add_address)
    out["env"] = {{k: v for k, v in os.environ.items() if k.lower().endswith("_proxy")}}
    print(json.dumps(out))
    """
)


def _wheel(path: Path) -> None:
    """A minimal valid wheel for pip to download (and read the metadata of)."""
    files = {
        "demo_pkg/__init__.py": b"",
        "demo_pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
        "demo_pkg-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(data)}\n"
    record += "demo_pkg-1.0.dist-info/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("demo_pkg-1.0.dist-info/RECORD", record)
    path.write_bytes(buffer.getvalue())


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The namespace's name and the operator's hosts file; the origins listen inside it."""
    if os.geteuid() != 0:
        pytest.fail("these tests create a network namespace: run them as root (as `make test` does on CI)")
    work = tmp_path_factory.mktemp("origin")
    name = f"egress-launch-{os.getpid()}"
    _ip("netns", "add", name)
    try:
        _ip("-n", name, "link", "set", "lo", "up")
        for address in (ALLOWED, DENIED):  # on the namespace's own loopback: nowhere else has them
            _ip("-n", name, "addr", "add", f"{address}/32", "dev", "lo")
        _wheel(work / WHEEL)
        # The origins' certificate, made by openssl: it names allowed.test and denied.test.
        (work / "tls").mkdir(mode=0o755)
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=allowed.test",
             "-addext", "subjectAltName=DNS:allowed.test,DNS:denied.test",
             "-keyout", str(work / "key.pem"), "-out", str(work / "tls" / "cert.pem")],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        (work / "origin.py").write_text(ORIGIN)
        server = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                name,
                sys.executable,
                str(work / "origin.py"),
                str(work / WHEEL),
                WHEEL,
                str(work / "tls" / "cert.pem"),
                str(work / "key.pem"),
                ALLOWED,
                DENIED,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        hosts = work / "hosts"
        hosts.write_text(f"{ALLOWED} allowed.test\n{DENIED} denied.test\n")
        try:
            (work / "tls" / "cert.pem").chmod(0o644)  # the session's user reads it
            yield name, hosts
        finally:
            assert server.stdin is not None
            server.stdin.close()
            server.wait(timeout=30)
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False, capture_output=True, timeout=30)


def _pinned(site: Site, built_image: BuildResult) -> str:
    """The signed image by digest, verified once from the host (the trust cache holds the pass),
    so that launches inside the namespace, where the registry is out of reach, need no registry."""
    digest = site.push(built_image.oci_layout.root, "0.1.0")
    first = site.launch("0.1.0", "true")
    assert first.returncode == 0, first.stderr
    return f"{site.ref('0.1.0')}@{digest}"


def _in_namespace(
    site: Site, namespace: str, image: str, command: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    full = {"PATH": os.environ["PATH"], "HOME": str(site.home), "TERMINAI_SANDBOX": "docker", **env}
    return subprocess.run(
        # nsenter, not `ip netns exec`: that one also gives the launcher a mount namespace of its
        # own, where the mounts it stages as root are invisible to dockerd.
        [
            "nsenter",
            f"--net=/run/netns/{namespace}",
            str(CLI),
            "run",
            "--image",
            image,
            "--key",
            str(site.pub),
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        env=full,
        cwd=site.project,
        timeout=300,
        check=False,
    )


def _ledger(site: Site) -> list[dict[str, object]]:
    path = site.home / ".local" / "state" / "terminai-sandbox" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def site(registry: RegistryServer, tmp_path: Path, built_image: BuildResult) -> Site:
    os.chmod(tmp_path, 0o755)
    return Site(registry, tmp_path)


def _pip_wheel() -> Path:
    bundled = sorted((Path(ensurepip.__file__).parent / "_bundled").glob("pip-*.whl"))
    assert bundled, "this interpreter bundles no pip wheel"
    return bundled[-1]


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_an_allow_policy_reaches_the_allowed_host_and_nothing_else(
    site: Site, built_image: BuildResult, origin: tuple[str, Path], runtime: str
) -> None:
    namespace, hosts = origin
    image = _pinned(site, built_image)
    env = {
        "SANDBOX_NETWORK": "allow:allowed.test",
        "TERMINAI_EGRESS_TEST_HOSTS_FILE": str(hosts),
        "TERMINAI_SANDBOX_RUNTIME": runtime,  # gVisor: the runsc-egress variant scripts/ensure-engine registers
        "SANDBOX_MOUNTS": f"{hosts.parent / 'tls'}:/data/tls:ro",  # the origins' certificate, to trust
    }
    done = _in_namespace(site, namespace, image, ["python3", "-c", PROBE], env)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["allowed"] == ["ok", f"origin {ALLOWED} /hello"]
    assert seen["denied"][0] == "http" and seen["denied"][1] == 403  # the proxy's refusal, not the origin
    # HTTPS through CONNECT: the tunnel to the allowed name, TLS end to end (the proxy reads no byte of it).
    assert seen["https"] == ["ok", f"origin {ALLOWED}:443 /tls"], seen
    assert seen["https_denied"][0] == "error" and "403" in seen["https_denied"][2], seen
    assert seen["https_port"][0] == "error" and "403" in seen["https_port"][2], seen  # 8443 is not allowed
    assert seen["dns"][0] == "error"  # no resolver inside: the proxy resolves
    assert seen["raw"][0] == "error"  # no route: the namespace holds only loopback
    assert seen["packet"][0] == "error" and "PermissionError" in seen["packet"][1]
    assert seen["interfaces"] == ["ok", ["lo"]]
    assert seen["netlink"][0] == "error" or seen["netlink"][1] < 0, seen["netlink"]  # refused: no address added
    assert seen["env"]["HTTPS_PROXY"] == seen["env"]["http_proxy"] == "http://127.0.0.1:3128"
    # The ledger: the policy at preflight and in the run record, and each connection the proxy judged.
    records = _ledger(site)
    run = [r for r in records if r.get("event") == "run"][-1]
    assert run["network"]["mode"] == "allow" and run["network"]["source"] == "SANDBOX_NETWORK"
    if runtime == "runsc":
        argv = run["argv"]
        assert argv[argv.index("--runtime") + 1] == "runsc-egress"
    assert not Path(run["network"]["socket_dir"]).exists()  # removed with the session
    step0 = [r for r in records if r.get("event") == "preflight-step" and r.get("step") == 0][-1]
    assert "network allow:allowed.test" in json.dumps(step0)
    judged = [r for r in records if r.get("event") == EGRESS_EVENT]
    assert {(r["host"], r["verdict"]) for r in judged} >= {("allowed.test", "allowed"), ("denied.test", "refused")}, (
        judged
    )


def test_pip_download_reaches_the_allowed_index_through_the_proxy(
    site: Site, built_image: BuildResult, origin: tuple[str, Path], tmp_path: Path
) -> None:
    namespace, hosts = origin
    image = _pinned(site, built_image)
    tools = tmp_path / "tools"
    tools.mkdir()
    wheel = tools / "pip.whl"
    wheel.write_bytes(_pip_wheel().read_bytes())
    tools.chmod(0o755)
    wheel.chmod(0o644)  # the session's user is not the test's
    env = {
        "SANDBOX_NETWORK": "allow:allowed.test",
        "TERMINAI_EGRESS_TEST_HOSTS_FILE": str(hosts),
        "SANDBOX_MOUNTS": f"{tools}:/data/tools:ro",
    }

    def pip_download(index: str) -> subprocess.CompletedProcess[str]:
        host = index.split("/")[2]  # plain HTTP: the origins of this test have no certificates
        command = [
            "python3",
            "/data/tools/pip.whl/pip",
            "download",
            "--no-cache-dir",
            "--disable-pip-version-check",
            "--retries",
            "0",
            "--index-url",
            index,
            "--trusted-host",
            host,
            "-d",
            "/tmp/dl",
            "demo-pkg",
        ]
        return _in_namespace(site, namespace, image, command, env)

    done = pip_download("http://allowed.test/simple/")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Saved /tmp/dl/{WHEEL}" in done.stdout
    refused = pip_download("http://denied.test/simple/")
    assert refused.returncode != 0 and "No matching distribution" in refused.stderr, refused.stdout + refused.stderr
    judged = [(r["host"], r["verdict"]) for r in _ledger(site) if r.get("event") == EGRESS_EVENT]
    assert ("allowed.test", "allowed") in judged and ("denied.test", "refused") in judged


def test_off_keeps_the_session_without_any_network(
    site: Site, built_image: BuildResult, origin: tuple[str, Path]
) -> None:
    namespace, hosts = origin
    image = _pinned(site, built_image)
    done = _in_namespace(
        site, namespace, image, ["python3", "-c", PROBE], {"TERMINAI_EGRESS_TEST_HOSTS_FILE": str(hosts)}
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["allowed"][0] == "error" and seen["raw"][0] == "error" and seen["dns"][0] == "error"
    assert seen["env"] == {} and seen["interfaces"] == ["ok", ["lo"]]
    run = [r for r in _ledger(site) if r.get("event") == "run"][-1]
    assert run["network"] == {"mode": "off", "source": "the default"}
    assert not any("/run/terminai/egress" in word for word in run["argv"])


def test_the_executor_refuses_a_python_escape_even_with_a_policy(
    site: Site, built_image: BuildResult, origin: tuple[str, Path]
) -> None:
    namespace, hosts = origin
    image = _pinned(site, built_image)
    payload = (
        "().__class__.__base__.__subclasses__()\n"
        "import socket\n"
        "socket.create_connection(('127.0.0.1', 3128)).sendall(b'GET http://allowed.test/ HTTP/1.0\\r\\n\\r\\n')"
    )
    env = {"SANDBOX_NETWORK": "allow:allowed.test", "TERMINAI_EGRESS_TEST_HOSTS_FILE": str(hosts)}
    done = _in_namespace(
        site, namespace, image, ["sh", "-c", f"printf '%s' {payload!r} | terminai-apts exec --json"], env
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["success"] is False and done.returncode == 1, done.stdout + done.stderr
    assert not [r for r in _ledger(site) if r.get("event") == EGRESS_EVENT]  # no connection reached the proxy


def test_the_legacy_proxy_command_serves_the_session_and_is_removed_after(site: Site, built_image: BuildResult) -> None:
    image = _pinned(site, built_image)
    probe = (
        "import urllib.request, urllib.error\n"
        "try:\n    urllib.request.urlopen('http://anything.test/legacy', timeout=20)\n"
        "except urllib.error.HTTPError as exc:\n    print(exc.code, exc.headers.get('Server'))\n"
    )
    done = site.cli(
        "run",
        "--image",
        image,
        "--key",
        str(site.pub),
        "--",
        "python3",
        "-c",
        probe,
        env={"TERMINAI_SANDBOX_PROXY_COMMAND": "python3 -m http.server --bind 127.0.0.1 8877"},
    )
    assert done.returncode == 0, done.stderr
    # http.server in the proxy command's container answered the session's proxy request.
    assert done.stdout.strip().startswith("404 SimpleHTTP"), done.stdout
    run = [r for r in _ledger(site) if r.get("event") == "run"][-1]
    assert run["network"]["mode"] == "proxy-command"
    container = str(run["network"]["served_by"]).split()[-1]
    inspect = subprocess.run(["docker", "inspect", container], capture_output=True, text=True, check=False)
    assert inspect.returncode != 0  # removed
    assert not Path(run["network"]["socket_dir"]).exists()


def test_a_failing_proxy_command_fails_the_launch_with_its_message(site: Site, built_image: BuildResult) -> None:
    image = _pinned(site, built_image)
    done = site.cli(
        "run",
        "--image",
        image,
        "--key",
        str(site.pub),
        "--",
        "true",
        env={"TERMINAI_SANDBOX_PROXY_COMMAND": "python3 -c \"import sys; sys.exit('no upstream configured')\""},
    )
    assert done.returncode == 18, done.stderr
    assert "no upstream configured" in done.stderr and "hint:" in done.stderr
    names = subprocess.run(
        ["docker", "ps", "-a", "--filter", "label=dev.terminai.role=proxy-command", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert not [n for n in names if n.startswith("terminai-")] or all(n not in done.stderr for n in names)


def test_a_proxy_that_cannot_start_fails_the_launch_and_leaves_nothing(
    site: Site, built_image: BuildResult, origin: tuple[str, Path], tmp_path: Path
) -> None:
    namespace, _ = origin
    image = _pinned(site, built_image)
    broken = tmp_path.parent / f"{tmp_path.name}-hosts"
    broken.write_bytes(b"\xff\xfe not a hosts file\n")
    before = set(Path("/tmp").glob("terminai-egress-*"))
    env = {"SANDBOX_NETWORK": "allow:allowed.test", "TERMINAI_EGRESS_TEST_HOSTS_FILE": str(broken)}
    done = _in_namespace(site, namespace, image, ["sleep", "30"], env)
    assert done.returncode == 18, done.stderr
    assert "egress proxy exited" in done.stderr and "hint:" in done.stderr
    assert "container" not in done.stderr.lower()  # the clean-up's own output is not the user's
    assert set(Path("/tmp").glob("terminai-egress-*")) <= before  # its directory is gone
    run = [r for r in _ledger(site) if r.get("event") == "run"][-1]
    name = run["argv"][run["argv"].index("--name") + 1]
    # The session that had started beside it was stopped: no container of that name is left.
    left = subprocess.run(["docker", "inspect", name], capture_output=True, text=True, check=False)
    assert left.returncode != 0


def test_curl_reaches_the_allowed_host_through_the_bridge_and_the_proxy(
    origin: tuple[str, Path], tmp_path: Path
) -> None:
    # The image has no curl, so curl runs beside it: the same bridge and proxy the session
    # uses, in the test's namespace, started by the launcher's own code.
    from terminai_sandbox.launch import network

    namespace, hosts = origin
    enter = ["nsenter", f"--net=/run/netns/{namespace}"]
    env = {"PATH": os.environ["PATH"], network.TEST_HOSTS_ENV: str(hosts)}
    # The proxy must start inside the namespace: run the launcher's start there through a tiny driver.
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import json, os, subprocess, sys\n"
        "from pathlib import Path\n"
        "from terminai_sandbox.launch import egress_session, network\n"
        "choice = network.resolve({'SANDBOX_NETWORK': 'allow:allowed.test'})\n"
        f"egress = egress_session.start(choice, ledger=Path({str(tmp_path / 'audit.jsonl')!r}), env=os.environ,\n"
        f"    cwd={str(tmp_path / 'project')!r}, name='curl-test', engine_binary='docker', image_ref='unused')\n"
        "egress.ready()\n"
        "bridge = subprocess.Popen([sys.executable, '-I', '-m', 'terminai_apts.egress_bridge', '--listen',\n"
        "    'tcp:127.0.0.1:0', '--connect', f'unix:{egress.socket}'], stdout=subprocess.PIPE, text=True)\n"
        "port = bridge.stdout.readline().strip().rsplit(':', 1)[1]\n"
        f"cert = {str(hosts.parent / 'tls' / 'cert.pem')!r}\n"
        "out = {}\n"
        "for name, url in (('http', 'http://allowed.test/curl'), ('https', 'https://allowed.test/curl'),\n"
        "                  ('denied', 'https://denied.test/curl')):\n"
        "    done = subprocess.run(['curl', '-sS', '--max-time', '20', '--cacert', cert, '-x',\n"
        "        f'http://127.0.0.1:{port}', url], capture_output=True, text=True)\n"
        "    out[name] = [done.returncode, done.stdout, done.stderr]\n"
        "bridge.terminate(); bridge.wait()\n"
        "egress.close()\n"
        "out['left'] = egress.root.exists()\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [*enter, sys.executable, str(driver)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["http"][:2] == [0, f"origin {ALLOWED} /curl"], seen
    assert seen["https"][:2] == [0, f"origin {ALLOWED}:443 /curl"], seen
    assert seen["denied"][0] != 0 and "403" in seen["denied"][2], seen  # curl: "CONNECT tunnel failed, response 403"
    assert seen["left"] is False
    judged = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert {(r["host"], r["verdict"]) for r in judged if r.get("event") == EGRESS_EVENT} == {
        ("allowed.test", "allowed"),
        ("denied.test", "refused"),
    }


def test_preflight_shows_the_policy_on_one_line_and_in_its_json(site: Site, built_image: BuildResult) -> None:
    image = _pinned(site, built_image)
    env = {"GEMINI_SANDBOX_PROXY_COMMAND": "python3 -m http.server 8877"}
    shown = site.cli("preflight", "--image", image, "--key", str(site.pub), env=env)
    assert shown.returncode == 0, shown.stderr
    lines = [line for line in shown.stderr.splitlines() if "network proxy-command:" in line]
    assert len(lines) == 1 and "(GEMINI_SANDBOX_PROXY_COMMAND)" in lines[0], shown.stderr
    report = site.cli("preflight", "--image", image, "--key", str(site.pub), "--json", env=env)
    assert report.returncode == 0, report.stderr
    network = json.loads(report.stdout)["network"]
    assert network["mode"] == "proxy-command" and network["source"] == "GEMINI_SANDBOX_PROXY_COMMAND"
    assert network["policy"]["proxy_command"] == ["python3", "-m", "http.server", "8877"]
    conflict = site.cli(
        "preflight", "--image", image, "--key", str(site.pub), "--network-policy", "off", "--json", env=env
    )
    assert conflict.returncode == 3 and json.loads(conflict.stdout)["error"]["hint"], conflict.stdout


@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_podman_sessions_reach_the_allowed_host_the_same_way(
    site: Site, built_image: BuildResult, origin: tuple[str, Path], runtime: str
) -> None:
    namespace, hosts = origin
    digest = site.push(built_image.oci_layout.root, "0.1.0")
    try:
        first = site.launch("0.1.0", "true", env={"TERMINAI_SANDBOX": "podman"})  # pulls and verifies from the host
        assert first.returncode == 0, first.stderr
        env = {
            "TERMINAI_SANDBOX": "podman",
            "TERMINAI_SANDBOX_RUNTIME": runtime,
            "SANDBOX_NETWORK": "allow:allowed.test",
            "TERMINAI_EGRESS_TEST_HOSTS_FILE": str(hosts),
        }
        done = _in_namespace(site, namespace, f"{site.ref('0.1.0')}@{digest}", ["python3", "-c", PROBE], env)
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert seen["allowed"] == ["ok", f"origin {ALLOWED} /hello"], seen
        assert seen["denied"][:2] == ["http", 403] and seen["raw"][0] == "error" and seen["dns"][0] == "error"
        assert seen["interfaces"] == ["ok", ["lo"]]
        run = [r for r in _ledger(site) if r.get("event") == "run"][-1]
        assert run["argv"][run["argv"].index("--network") + 1] == "none"
        if runtime == "runsc":
            assert "host-uds=open" in run["argv"]
    finally:
        podman_forget(site.registry.host)


def test_curl_in_the_session_reaches_the_allowed_host_and_nothing_else(
    site: Site, built_image: BuildResult, origin: tuple[str, Path]
) -> None:
    # The image's own curl (Debian's, pinned in both locks), through HTTPS_PROXY as the session has it.
    namespace, hosts = origin
    image = _pinned(site, built_image)
    env = {
        "SANDBOX_NETWORK": "allow:allowed.test",
        "TERMINAI_EGRESS_TEST_HOSTS_FILE": str(hosts),
        "SANDBOX_MOUNTS": f"{hosts.parent / 'tls'}:/data/tls:ro",
    }
    urls = [
        "http://allowed.test/curl",
        "https://allowed.test/curl",
        "https://denied.test/curl",
        "http://denied.test/curl",
        "https://allowed.test:8443/curl",
    ]
    # One JSON line per URL (curl's exit code and its whole output), written by the image's python3.
    script = textwrap.dedent(
        f"""
        import json, subprocess
        for url in {urls!r}:
            done = subprocess.run(["curl", "-sS", "--max-time", "20", "--cacert", "/data/tls/cert.pem",
                                   "-w", " %{{http_code}}", url], capture_output=True, text=True)
            print(json.dumps([url, done.returncode, (done.stdout + done.stderr).strip()]))
        print(json.dumps(subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.split()[:2]))
        """
    )
    done = _in_namespace(site, namespace, image, ["python3", "-c", script], env)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.strip().splitlines()]
    assert lines[-1][0] == "curl" and lines[-1][1].startswith("8."), lines  # Debian's curl 8, in the image
    seen = {url: (str(code), out) for url, code, out in lines[:-1]}
    assert seen["http://allowed.test/curl"] == ("0", f"origin {ALLOWED} /curl 200"), seen
    assert seen["https://allowed.test/curl"] == ("0", f"origin {ALLOWED}:443 /curl 200"), seen
    assert seen["http://denied.test/curl"][1].endswith(" 403"), seen  # the proxy's answer, not the origin's
    for refused in ("https://denied.test/curl", "https://allowed.test:8443/curl"):
        code, out = seen[refused]
        assert code != "0" and "403" in out, (refused, seen)  # curl: CONNECT tunnel failed, response 403
    judged = [r for r in _ledger(site) if r.get("event") == EGRESS_EVENT]
    assert {(r["host"], r["port"], r["verdict"]) for r in judged} >= {
        ("allowed.test", 80, "allowed"),
        ("allowed.test", 443, "allowed"),
        ("denied.test", 443, "refused"),
        ("denied.test", 80, "refused"),
        ("allowed.test", 8443, "refused"),
    }, judged
