"""HTTP requests with a total deadline: connecting, the answer's head and its whole body.

requests' ``timeout=`` bounds each socket operation, not a request: a server that sends
one byte every half second, in its headers or its body, never trips it, and one that
sends an endless body is read for ever. Here a request runs under a :class:`_Watch`: a
timer thread shuts down the sockets the request uses when its time is up, which wakes a
read or a write blocked on them, and the request is then reported as
:class:`DeadlineExceeded`, never as the short or broken answer a shut-down socket would
otherwise look like. The body is read here, as it arrives, up to a size cap.

The sockets are found through the connection classes of the session's adapter: each
connection tells the current request's watch about itself when it connects and when it
sends a request (a kept-alive connection is reused without connecting again).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.poolmanager import PoolManager

__all__ = ["AnswerTooLarge", "DeadlineExceeded", "deadline_session", "fetch"]


class DeadlineExceeded(Exception):
    """The request was not complete (connected, answered and read) within its deadline."""


class AnswerTooLarge(Exception):
    """The answer's body is larger than the caller allows."""


class _Watch:
    """One request's deadline: shuts down every socket the request uses when it passes."""

    def __init__(self, seconds: float) -> None:
        self.ends = time.monotonic() + seconds
        self.fired = False
        self._lock = threading.Lock()
        self._connections: list[HTTPConnection] = []
        # The sockets themselves too: http.client lets go of a connection's socket (``sock``
        # becomes None) when an answer ends at the connection's close, and the response then
        # reads from the socket alone.
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True  # a command that ends for another reason never waits on it

    def left(self) -> float:
        return max(0.001, self.ends - time.monotonic())

    def add(self, connection: HTTPConnection) -> None:
        with self._lock:
            if connection not in self._connections:
                self._connections.append(connection)
            if connection.sock is not None and connection.sock not in self._sockets:
                self._sockets.append(connection.sock)
            if self.fired:
                self._shut_all()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            self._shut_all()

    def _shut_all(self) -> None:
        # A connection's socket now (one still connecting: the TLS handshake reads from the
        # plain socket) and every socket seen on the request's connections.
        for sock in [*(c.sock for c in self._connections), *self._sockets]:
            _shut(sock)

    def __enter__(self) -> _Watch:
        _current.watch = self
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            self._connections.clear()
            self._sockets.clear()
        _current.watch = None


def _shut(sock: socket.socket | None) -> None:
    if sock is None:
        return
    # The plain socket's shutdown, also under TLS: an SSLSocket's own would start a TLS close
    # on an object another thread is reading from. An error: already closed, nothing blocked.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


_current = threading.local()


def _register(connection: HTTPConnection) -> None:
    watch: _Watch | None = getattr(_current, "watch", None)
    if watch is not None:
        watch.add(connection)


class _WatchedHTTPConnection(HTTPConnection):
    def connect(self) -> None:
        _register(self)
        super().connect()
        _register(self)  # now with its socket: shut it down if the deadline passed meanwhile

    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self)
        super().request(*args, **kwargs)


class _WatchedHTTPSConnection(HTTPSConnection):
    def connect(self) -> None:
        _register(self)
        super().connect()
        _register(self)

    def request(self, *args: Any, **kwargs: Any) -> None:
        _register(self)
        super().request(*args, **kwargs)


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_POOLS: dict[str, type[HTTPConnectionPool]] = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class _WatchedAdapter(HTTPAdapter):
    """requests' adapter, with connections a request's watch can reach (proxied ones too)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> PoolManager:
        manager: PoolManager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = _POOLS
        return manager


def deadline_session() -> requests.Session:
    """A :class:`requests.Session` whose requests :func:`fetch` can bound."""
    session = requests.Session()
    adapter = _WatchedAdapter()
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def fetch(
    session: requests.Session,
    method: str,
    url: str,
    *,
    seconds: float,
    connect_seconds: float,
    max_body: int,
    **kwargs: Any,
) -> requests.Response:
    """``session.request(method, url, **kwargs)``, whole within ``seconds``; the body is read.

    Raises :class:`DeadlineExceeded` when the time is up (whatever the HTTP stack raised on
    the shut-down socket, or nothing, as for a body that ends at the connection's close),
    :class:`AnswerTooLarge` for a body over ``max_body`` bytes, and requests' own errors
    otherwise. The returned response's ``content`` is the whole body.
    """
    with _Watch(seconds) as watch:
        try:
            response = session.request(
                method,
                url,
                stream=True,
                timeout=(min(connect_seconds, watch.left()), watch.left()),
                **kwargs,
            )
            try:
                chunks, size = [], 0
                for chunk in response.iter_content(65536):
                    size += len(chunk)
                    if size > max_body:
                        raise AnswerTooLarge(f"the answer is larger than {max_body >> 20} MiB")
                    chunks.append(chunk)
            finally:
                response.close()
        except requests.ConnectTimeout:
            raise  # not even connected: the caller says the server is unreachable
        except (requests.RequestException, OSError) as exc:
            # Every read's own timeout is what is left of the deadline, so a read timing out
            # is the deadline too, even when it beats the watch by a hair.
            if watch.fired or isinstance(exc, requests.Timeout):
                raise DeadlineExceeded(f"no whole answer within {round(seconds, 1):g} s") from None
            raise
        if watch.fired:
            raise DeadlineExceeded(f"no whole answer within {round(seconds, 1):g} s")
    # What requests' own `.content` would hold; `.text` and `.json()` read it.
    response._content = b"".join(chunks)
    return response
