"""No network by any path, with the Python layer gone: sockets, io_uring, inherited
descriptors, unix sockets (abstract and by path)."""

from __future__ import annotations

import pytest

from tests.breach.support import EVERYTHING_OFF, attack, landlock_abi, namespaces_available, tcp_listener

CONNECT = """
import socket
def connect():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(("127.0.0.1", {port}))
    s.close()
out["tcp"] = attempt(connect)
out["udp"] = attempt(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", {port})))
out["unix"] = attempt(socket.socket, socket.AF_UNIX, socket.SOCK_STREAM)
out["pair"] = attempt(socket.socketpair)
out["netlink"] = attempt(socket.socket, socket.AF_NETLINK, socket.SOCK_RAW, 0)
out["raw"] = attempt(socket.socket, socket.AF_PACKET, socket.SOCK_RAW, 0)
"""


def test_no_socket_of_any_family() -> None:
    with tcp_listener() as port:
        out = attack(CONNECT.format(port=port))
    assert set(out.values()) == {"EPERM"}, out


def test_the_connection_is_made_when_every_layer_is_off() -> None:
    # The test above can fail: with the OS layer off, the same code reaches the server.
    with tcp_listener() as port:
        out = attack(CONNECT.format(port=port), skip=EVERYTHING_OFF)
    assert out["tcp"] == "ok" and out["unix"] == "ok", out


@pytest.mark.parametrize(
    ("only", "expect"),
    [
        ("seccomp", "EPERM"),  # socket() itself is refused
        ("namespaces", "ECONNREFUSED|ENETUNREACH"),  # an empty network namespace
        ("landlock", "EACCES"),  # Landlock ABI 4 refuses TCP connect
    ],
)
def test_each_layer_alone_refuses_tcp(only: str, expect: str) -> None:
    skip = tuple(layer for layer in ("namespaces", "landlock", "seccomp") if layer != only)
    with tcp_listener() as port:
        out = attack(CONNECT.format(port=port), skip=skip)
    if only == "namespaces" and not namespaces_available():
        assert out["tcp"] == "ok"  # no namespace here: this layer is absent, as documented
    elif only == "landlock" and landlock_abi() < 4:
        assert out["tcp"] == "ok"  # TCP rules need Landlock ABI 4, as documented
    else:
        assert out["tcp"] in expect.split("|"), out


def test_io_uring_cannot_be_set_up() -> None:
    out = attack(
        "params = ctypes.create_string_buffer(120)\n"
        "out['setup'] = sc(425, 8, params)\n"
        "out['enter'] = sc(426, 0, 0, 0, 0, None, 0)\n"
        "out['register'] = sc(427, 0, 0, None, 0)\n"
    )
    assert out == {"setup": "EPERM", "enter": "EPERM", "register": "EPERM"}
    off = attack("params = ctypes.create_string_buffer(120)\nout['setup'] = sc(425, 8, params)\n", skip=EVERYTHING_OFF)
    assert off["setup"] == "ok"  # the kernel offers io_uring: only the filter refuses it


def test_no_inherited_socket_or_stray_descriptor() -> None:
    # Every open descriptor: only the run's two pipes (and /dev/null on stdio) may be there.
    out = attack(
        "import stat, fcntl\n"
        "kinds = {}\n"
        "for fd in range(65536):\n"
        "    try:\n"
        "        mode = os.fstat(fd).st_mode\n"
        "    except OSError:\n"
        "        continue\n"
        "    kind = 'sock' if stat.S_ISSOCK(mode) else 'fifo' if stat.S_ISFIFO(mode) else 'other'\n"
        "    kinds[fd] = 'chr' if stat.S_ISCHR(mode) else kind\n"
        "out['kinds'] = sorted(kinds.values())\n"
    )
    assert out["kinds"] == ["chr", "chr", "chr", "fifo", "fifo"], out


def test_abstract_unix_sockets_are_out_of_reach() -> None:
    out = attack(
        "import socket\n"
        "def go():\n"
        "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "    s.connect('\\0terminai-breach-probe')\n"
        "out['abstract'] = attempt(go)\n"
    )
    assert out["abstract"] == "EPERM"
