"""The proxy under attack, in a namespace of the test's own (see conftest.py for the lab).

Real clients do the asking (curl, openssl s_client, pip, CPython's urllib); each refusal
is checked against a direct request that reaches the same server, so what refuses is
the proxy, and every attempt is looked up in the ledger.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import socket
import ssl
import sys
import time
from pathlib import Path

import pytest
from terminai_sandbox.launch import audit

from tests.integration.egress.conftest import ALLOWED, DENIED, METADATA, PRIVATE, PROXY_PORT, SIX, ULA, Lab


def _ask(lab: Lab, raw: bytes, *, read_all: bool = True) -> bytes:
    """Send ``raw`` over the proxy's Unix socket (from outside the namespace) and read the answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(20)
        client.connect(str(lab.socket))
        client.sendall(raw)
        if read_all:
            client.shutdown(socket.SHUT_WR)  # the request is all there is: the proxy sees the end
        chunks = []
        while True:
            try:
                chunk = client.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            chunks.append(chunk)
            if not read_all:
                break
        return b"".join(chunks)


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0


def _last(lab: Lab, host: str, port: int) -> dict[str, object]:
    _settled(lab)
    found = [r for r in lab.records() if r["host"] == host and r["port"] == port]
    assert found, f"no ledger record for {host}:{port}"
    return found[-1]


# --- reachable --------------------------------------------------------------------------------


def test_curl_reaches_the_allowed_host_over_https_and_http(lab: Lab) -> None:
    https = lab.curl("https://allowed.test/hello")
    assert https.returncode == 0, https.stderr
    assert https.stdout == f"origin {ALLOWED}:443 /hello"
    plain = lab.curl("http://allowed.test/plain?q=1")
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == f"origin {ALLOWED}:80 /plain?q=1"
    tunnel = _last(lab, "allowed.test", 443)
    assert tunnel["verdict"] == "allowed" and tunnel["address"] == ALLOWED and tunnel["status"] == 200
    assert int(tunnel["bytes_up"]) > 0 and int(tunnel["bytes_down"]) > 0  # type: ignore[call-overload]
    assert _last(lab, "allowed.test", 80)["status"] == 200


def test_python_urllib_reaches_it_through_https_proxy(lab: Lab) -> None:
    code = (
        "import ssl, urllib.request\n"
        f"ctx = ssl.create_default_context(cafile={str(lab.ca)!r})\n"
        "print(urllib.request.urlopen('https://allowed.test/py', context=ctx, timeout=20).read().decode())\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HTTPS_PROXY": f"http://127.0.0.1:{PROXY_PORT}"}
    done = lab.inside("python3", "-c", code, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"origin {ALLOWED}:443 /py"


def test_pip_download_fetches_a_wheel_from_the_allowed_index(lab: Lab, tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "HTTPS_PROXY": f"http://127.0.0.1:{PROXY_PORT}",
        "PIP_CERT": str(lab.ca),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_CACHE_DIR": "1",
    }
    done = lab.inside(
        "python3", "-m", "pip", "download", "--no-deps", "--index-url", "https://allowed.test/simple/",
        "-d", str(tmp_path / "out"), "tinypkg", env=env,
    )  # fmt: skip
    if "No module named pip" in done.stderr:
        pytest.fail("the egress tests need pip for the system python3 (python3-pip)")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "tinypkg-1.0-py3-none-any.whl").is_file()


def test_an_ip_literal_the_list_names_is_reachable_on_its_port(lab: Lab) -> None:
    done = lab.curl(f"http://{ALLOWED}:8080/literal")
    assert done.stdout == f"origin {ALLOWED}:8080 /literal", done.stderr


def test_a_name_resolving_to_public_and_private_addresses_only_reaches_the_public_one(lab: Lab) -> None:
    for _ in range(3):
        done = lab.curl("http://rebind.test/")
        assert done.stdout == f"origin {ALLOWED}:80 /", done.stderr
    record = _last(lab, "rebind.test", 80)
    assert set(record["addresses"]) == {ALLOWED, PRIVATE}  # type: ignore[arg-type]
    assert record["address"] == ALLOWED


# --- refused ----------------------------------------------------------------------------------


def _refused_by_proxy(lab: Lab, url: str, direct: list[str], *, status: int = 403) -> dict[str, object]:
    """``url`` through the proxy is refused with ``status``; the same server answers ``direct``."""
    through = lab.inside(
        "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code} %{http_connect}", "--max-time", "20",
        "--cacert", str(lab.ca), "-x", f"http://127.0.0.1:{PROXY_PORT}", url,
    )  # fmt: skip
    assert through.returncode != 0 or through.stdout.split()[0] == str(status), through
    assert str(status) in through.stdout.split(), through
    reached = lab.inside("curl", "-sS", "--max-time", "20", "--cacert", str(lab.ca), *direct)
    assert reached.returncode == 0 and reached.stdout.startswith("origin "), reached
    _settled(lab)
    return lab.records()[-1]


def test_a_denied_host_is_refused(lab: Lab) -> None:
    record = _refused_by_proxy(
        lab, "https://denied.test/", ["--resolve", f"denied.test:443:{DENIED}", "https://denied.test/"]
    )
    assert record["host"] == "denied.test" and record["verdict"] == "refused" and record["status"] == 403
    assert "not in the allowlist" in str(record["reason"])
    assert record["address"] == ""


def test_an_ip_literal_not_in_the_list_is_refused(lab: Lab) -> None:
    record = _refused_by_proxy(lab, f"https://{DENIED}/", [f"https://{DENIED}/"])
    assert record["host"] == DENIED and record["verdict"] == "refused"


@pytest.mark.parametrize(
    ("name", "address", "why"),
    [
        ("private.test", PRIVATE, "private"),
        ("loopback.test", "127.0.0.1", "loopback"),
        ("metadata.test", METADATA, "cloud metadata"),
    ],
)
def test_an_allowed_name_resolving_to_a_private_address_is_refused(lab: Lab, name: str, address: str, why: str) -> None:
    record = _refused_by_proxy(lab, f"https://{name}/", ["--resolve", f"{name}:443:{address}", f"https://{name}/"])
    assert record["host"] == name and record["addresses"] == [address] and record["address"] == ""
    assert why in str(record["reason"])
    plain = _refused_by_proxy(lab, f"http://{name}/", [f"http://{address}/"])
    assert plain["port"] == 80


def test_a_redirect_to_a_denied_host_is_refused_at_the_second_connect(lab: Lab) -> None:
    done = lab.curl("-L", "https://allowed.test/redirect")
    assert done.returncode != 0, done
    assert "403" in done.stderr, done.stderr
    _settled(lab)
    # the first tunnel ends (and is recorded) after the second CONNECT was refused
    assert sorted((r["host"], r["verdict"], r["status"]) for r in lab.records()[-2:]) == [
        ("allowed.test", "allowed", 200),
        ("denied.test", "refused", 403),
    ]


def test_connect_to_another_port_of_an_allowed_host_is_refused(lab: Lab) -> None:
    record = _refused_by_proxy(
        lab, "https://allowed.test:8443/", ["--resolve", f"allowed.test:8443:{ALLOWED}", "https://allowed.test:8443/"]
    )
    assert record["port"] == 8443 and "not in the allowlist" in str(record["reason"])


def test_deny_beats_a_wildcard_and_the_bare_suffix_is_not_under_it(lab: Lab) -> None:
    assert lab.curl("http://x.wild.test/").stdout == f"origin {ALLOWED}:80 /"
    assert "denied by !deny.wild.test" in str(
        _refused_by_proxy(lab, "http://deny.wild.test/", [f"http://{ALLOWED}/"])["reason"]
    )
    assert "not in the allowlist" in str(_refused_by_proxy(lab, "http://wild.test/", [f"http://{ALLOWED}/"])["reason"])


def test_a_client_hello_naming_another_host_is_cut_off(lab: Lab) -> None:
    # openssl s_client tunnels through the proxy to allowed.test but asks TLS for denied.test
    done = lab.inside(
        "openssl", "s_client", "-proxy", f"127.0.0.1:{PROXY_PORT}", "-connect", "allowed.test:443",
        "-servername", "denied.test", "-CAfile", str(lab.ca), "-verify_return_error", input="",
    )  # fmt: skip
    assert "CONNECTED" not in done.stdout or "BEGIN CERTIFICATE" not in done.stdout, done.stdout
    record = _last(lab, "allowed.test", 443)
    assert record["verdict"] == "refused"
    assert "TLS ClientHello names denied.test" in str(record["reason"])
    # the same tunnel with the matching name works: the cut was the name's
    ok = lab.inside(
        "openssl", "s_client", "-proxy", f"127.0.0.1:{PROXY_PORT}", "-connect", "allowed.test:443",
        "-servername", "allowed.test", "-CAfile", str(lab.ca), "-verify_return_error", input="",
    )  # fmt: skip
    assert "Verify return code: 0 (ok)" in ok.stdout, ok.stdout + ok.stderr


def test_a_tunnel_that_does_not_speak_tls_on_443_is_cut_off(lab: Lab) -> None:
    answer = _ask(
        lab,
        b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n"
        b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
    )
    assert answer == b"HTTP/1.1 200 Connection Established\r\n\r\n"
    assert "not a TLS handshake" in str(_last(lab, "allowed.test", 443)["reason"])


def test_an_ip_literal_tunnel_carries_no_server_name(lab: Lab) -> None:
    # curl sends no SNI to an IP literal (RFC 6066): the tunnel to the listed address works
    done = lab.curl(f"https://{ALLOWED}/ip")
    assert done.stdout == f"origin {ALLOWED}:443 /ip", done.stderr
    # a ClientHello naming a host on a tunnel to an address would reach whatever site that
    # name picks behind the address (domain fronting): cut off
    context = ssl.create_default_context(cafile=str(lab.ca))
    with socket.socket(socket.AF_UNIX) as raw:
        raw.settimeout(20)
        raw.connect(str(lab.socket))
        raw.sendall(f"CONNECT {ALLOWED}:443 HTTP/1.1\r\n\r\n".encode())
        assert raw.recv(4096) == b"HTTP/1.1 200 Connection Established\r\n\r\n"
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            context.wrap_socket(raw, server_hostname="allowed.test").recv(1)
    record = _last(lab, ALLOWED, 443)
    assert record["verdict"] == "refused"
    assert "names allowed.test" in str(record["reason"])


# --- the ledger -------------------------------------------------------------------------------


def test_every_attempt_is_in_the_ledger_and_the_chain_verifies(lab: Lab) -> None:
    before = _settled(lab)
    for raw in (b"GET http://denied.test/ HTTP/1.1\r\nHost: denied.test\r\n\r\n", b"junk\r\n\r\n", b""):
        _ask(lab, raw)
    ok = _ask(lab, b"GET http://allowed.test/x HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
    assert ok.endswith(f"origin {ALLOWED}:80 /x".encode())
    assert _settled(lab) == before + 4
    fresh = lab.records()[before:]
    assert sorted((r["host"], r["verdict"], r["status"]) for r in fresh) == [
        ("", "refused", 0),
        ("", "refused", 400),
        ("allowed.test", "allowed", 200),
        ("denied.test", "refused", 403),
    ]
    assert audit.verify(lab.ledger) == len(lab.records())
    for record in fresh:
        assert {
            "host",
            "port",
            "address",
            "verdict",
            "reason",
            "bytes_up",
            "bytes_down",
            "seconds",
            "prev",
            "hash",
        } <= set(record)
        assert "/x" not in json.dumps(record)  # the path is never kept


def _settled(lab: Lab) -> int:
    """The ledger's record count once it stopped growing (records land as connections end)."""
    count, still = len(lab.records()), 0
    while still < 3:
        time.sleep(0.05)
        now = len(lab.records())
        count, still = now, (still + 1 if now == count else 0)
    return count


def test_the_proxy_process_is_confined(lab: Lab) -> None:
    assert lab.proxy is not None
    proc = Path(f"/proc/{lab.proxy.pid}")
    status = dict(line.split(":", 1) for line in (proc / "status").read_text().splitlines())
    nobody = pwd.getpwnam("nobody")
    assert status["Uid"].split() == [str(nobody.pw_uid)] * 4
    assert status["Gid"].split() == [str(nobody.pw_gid)] * 4
    assert status["Groups"].strip() == ""
    assert status["NoNewPrivs"].strip() == "1"
    assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0
    limits = (proc / "limits").read_text()
    assert re.search(r"Max core file size\s+0\s+0", limits), limits
    files = []
    for fd in (proc / "fd").iterdir():
        with contextlib.suppress(FileNotFoundError):
            target = os.readlink(fd)
            if target.startswith("/") and not target.startswith("/dev/"):
                files.append(target)
    # the ledger and the socket's directory; never the policy, the hosts file or anything inherited
    assert sorted(files) == sorted([str(lab.ledger), str(lab.socket.parent)]), files


def test_a_rebinding_resolver_gets_one_lookup_per_connection_and_the_private_answer_nowhere(lab: Lab) -> None:
    done = lab.inside(sys.executable, str(Path(__file__).parent / "rebinding.py"), ALLOWED, PRIVATE, "6")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    # every other lookup answers the private address: those connections are refused, and no
    # connection that passed the check on the public answer ever reached the private origin
    assert result["lookups"] == 6
    assert result["reached"] == [f"origin {ALLOWED}:80 /r", "HTTP/1.1 403"] * 3
    assert f"{PRIVATE}:80 GET /r" not in lab.origin_log()


def test_ipv6_a_global_address_is_reached_and_a_unique_local_one_refused(lab: Lab) -> None:
    assert lab.curl("http://six.test/v6").stdout == f"origin {SIX}:80 /v6"
    assert _last(lab, "six.test", 80)["address"] == SIX
    record = _refused_by_proxy(lab, "http://ula.test/", [f"http://[{ULA}]/"])
    assert record["addresses"] == [ULA] and "unique local" in str(record["reason"])


def test_cut_tunnels_leave_no_descriptor_behind(lab: Lab) -> None:
    assert lab.proxy is not None
    fds = Path(f"/proc/{lab.proxy.pid}/fd")
    _settled(lab)
    before = len(list(fds.iterdir()))
    context = ssl.create_default_context(cafile=str(lab.ca))
    for _ in range(10):
        with socket.socket(socket.AF_UNIX) as raw:
            raw.settimeout(20)
            raw.connect(str(lab.socket))
            raw.sendall(b"CONNECT allowed.test:443 HTTP/1.1\r\n\r\n")
            assert raw.recv(4096).startswith(b"HTTP/1.1 200")
            with pytest.raises((ssl.SSLError, OSError)):
                context.wrap_socket(raw, server_hostname="denied.test").recv(1)
    _settled(lab)
    assert len(list(fds.iterdir())) <= before
