"""The egress lab: a network namespace of the test's own, origin servers in it, and the proxy.

The namespace has one interface, its loopback, carrying the addresses the tests name:

* 45.0.2.1 (``allowed.test``, ``rebind.test``'s public half) and 45.0.2.2 (``denied.test``):
  globally routable addresses, so the proxy's address check lets them through. They are
  routed nowhere: the namespace has no other interface, so no packet leaves it. (Python's
  ``ipaddress`` and the proxy refuse 100.64.0.0/10, the documentation and benchmarking
  blocks, and every private block, so an address the proxy allows has to be a global one.)
* 2a0f:ff00::1 (``six.test``), a global IPv6 address, and fd00:20::1 (``ula.test``), a
  unique-local one, both on the same loopback.
* 10.20.0.1 (``private.test``), 127.0.0.1 (``loopback.test``) and 169.254.169.254
  (``metadata.test``): servers that answer when asked directly, so a refusal is the
  proxy's doing, not an absent server's.

Names resolve from the proxy's test-only hosts file; nothing in the namespace has DNS.
The proxy runs as a process in the namespace (``ip netns exec``), started as root so it
drops to ``nobody``; it listens on a Unix socket (which the tests reach from outside the
namespace) and on a loopback TCP port for curl, openssl and pip inside it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ALLOWED, DENIED, PRIVATE, METADATA = "45.0.2.1", "45.0.2.2", "10.20.0.1", "169.254.169.254"
SIX, ULA = "2a0f:ff00::1", "fd00:20::1"  # a global IPv6 address (2000::/3) and a unique-local one
PROXY_PORT = 3128
NAMES = ("allowed.test", "denied.test", "private.test", "loopback.test", "metadata.test", "rebind.test")
POLICY = (
    "allow:allowed.test,private.test,loopback.test,metadata.test,rebind.test,six.test,ula.test,"
    f"{ALLOWED}:8080,{ALLOWED}:443,*.wild.test,!deny.wild.test"
)
HOSTS = f"""# the proxy's test resolver
{ALLOWED} allowed.test rebind.test x.wild.test deny.wild.test
{DENIED} denied.test
{PRIVATE} private.test rebind.test
127.0.0.1 loopback.test
{METADATA} metadata.test
{SIX} six.test
{ULA} ula.test
"""


def _need(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        pytest.fail(f"{tool} is needed by the egress attack tests (it is part of the dev environment)")
    return found


def run(*argv: str, check: bool = True, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), check=check, capture_output=True, text=True, timeout=60, **kwargs)  # type: ignore[call-overload,no-any-return]


class Lab:
    """The namespace, its servers, the proxy and the files they share."""

    def __init__(self, root: Path, netns: str) -> None:
        self.root, self.netns = root, netns
        self.ca = root / "ca.pem"
        self.socket = root / "sock" / "proxy.sock"
        self.ledger = root / "ledger.jsonl"
        self.policy_json = root / "policy.json"
        self.hosts = root / "hosts"
        self.proxy: subprocess.Popen[str] | None = None
        self.origin: subprocess.Popen[str] | None = None

    def inside(
        self, *argv: str, env: dict[str, str] | None = None, check: bool = False, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside the namespace."""
        return run("ip", "netns", "exec", self.netns, *argv, check=check, env=env, input=input)

    def curl(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return self.inside(
            "curl", "-sS", "--max-time", "20", "--cacert", str(self.ca), "-x", f"http://127.0.0.1:{PROXY_PORT}", *argv
        )

    def origin_log(self) -> str:
        path = self.root / "origin.log"
        return path.read_text() if path.exists() else ""

    def records(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.ledger.read_text().splitlines() if line]


def _certificates(root: Path) -> None:
    openssl = _need("openssl")
    subj = ["-subj", "/CN=egress test CA"]
    run(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
        "-keyout", str(root / "ca.key"), "-out", str(root / "ca.pem"), *subj,
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")  # fmt: skip
    run(openssl, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", str(root / "server.key"), "-out", str(root / "server.csr"), "-subj", "/CN=allowed.test")  # fmt: skip
    san = ",".join(f"DNS:{n}" for n in (*NAMES, "x.wild.test", "deny.wild.test")) + f",IP:{ALLOWED},IP:{DENIED}"
    (root / "ext.cnf").write_text(f"subjectAltName={san}\nbasicConstraints=CA:FALSE\n")
    run(openssl, "x509", "-req", "-in", str(root / "server.csr"), "-CA", str(root / "ca.pem"),
        "-CAkey", str(root / "ca.key"), "-CAcreateserial", "-days", "2", "-out", str(root / "server.pem"),
        "-extfile", str(root / "ext.cnf"))  # fmt: skip


def _wheel(root: Path) -> Path:
    """A tiny pure-Python wheel for ``pip download`` to fetch through the proxy."""
    path = root / "tinypkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("tinypkg/__init__.py", "VALUE = 1\n")
        archive.writestr("tinypkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n")
        archive.writestr(
            "tinypkg-1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr("tinypkg-1.0.dist-info/RECORD", "")
    return path


def _wait_line(process: subprocess.Popen[str], prefix: str) -> str:
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith(prefix):
        process.kill()
        _, err = process.communicate(timeout=10)
        pytest.fail(f"expected {prefix!r}, got {line!r}; stderr: {err}")
    return line


def start_proxy(
    lab: Lab, *, policy: Path | None = None, socket: Path | None = None, port: int = PROXY_PORT
) -> subprocess.Popen[str]:
    """The proxy process in the lab's namespace, once it printed that it listens."""
    socket = socket or lab.socket
    argv = [
        "ip", "netns", "exec", lab.netns, sys.executable, "-m", "terminai_apts.egress", "serve",
        "--policy-json", str(policy or lab.policy_json), "--socket", str(socket), "--ledger", str(lab.ledger),
        "--hosts-file", str(lab.hosts), "--tcp-port", str(port), "--socket-mode", "666",
    ]  # fmt: skip
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert _wait_line(process, "listening ").strip() == f"listening {socket}"
    _wait_line(process, "listening tcp ")
    return process


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if os.geteuid() != 0:
        pytest.fail("the egress attack tests create a network namespace: run them as root")
    _need("ip")
    _need("curl")
    root = tmp_path_factory.mktemp("egress-lab")
    os.chmod(root, 0o755)  # the proxy drops to nobody; it keeps its descriptors, the tests read back
    netns = f"egress-proxy-{os.getpid()}"
    run("ip", "netns", "add", netns)
    lab = Lab(root, netns)
    try:
        lab.inside("ip", "link", "set", "lo", "up", check=True)
        for address in (ALLOWED, DENIED, PRIVATE, METADATA):
            lab.inside("ip", "addr", "add", f"{address}/32", "dev", "lo", check=True)
        for address in (SIX, ULA):
            lab.inside("ip", "-6", "addr", "add", f"{address}/128", "dev", "lo", "nodad", check=True)
        _certificates(root)
        config = {
            "listen": [[a, p, p in (443, 8443)] for a in (ALLOWED, DENIED, PRIVATE, "127.0.0.1", METADATA)
                       for p in (80, 443, 8080, 8443)] + [[SIX, 80, False], [ULA, 80, False]],
            "cert": str(root / "server.pem"),
            "key": str(root / "server.key"),
            "redirect": "https://denied.test/after-redirect",
            "wheel": str(_wheel(root)),
            "log": str(root / "origin.log"),
        }  # fmt: skip
        (root / "origin.json").write_text(json.dumps(config))
        lab.origin = subprocess.Popen(
            ["ip", "netns", "exec", netns, sys.executable, str(HERE / "origin.py"), str(root / "origin.json")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        _wait_line(lab.origin, "ready")
        lab.hosts.write_text(HOSTS)
        from terminai_apts.egress.policy import parse_network_policy

        lab.policy_json.write_text(json.dumps(parse_network_policy(POLICY, source="test").to_json()))
        lab.socket.parent.mkdir()
        shutil.chown(lab.socket.parent, "nobody")  # so the dropped proxy can remove its socket
        lab.proxy = start_proxy(lab)
        yield lab
    finally:
        for process in (lab.proxy, lab.origin):
            if process is not None and process.poll() is None:
                process.terminate()
                try:
                    process.communicate(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.communicate()
        run("ip", "netns", "del", netns, check=False)
