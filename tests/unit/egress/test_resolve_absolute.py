"""The proxy's system lookups are absolute names, so the resolver's search list never applies.

The stub stands in for glibc's getaddrinfo with ``search corp.example`` and ``ndots:5``:
a relative name is tried under the search domain first (where an attacker's record
waits); an absolute one is looked up as written.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import pytest
from terminai_apts.egress.resolve import SystemResolver

REAL, SEARCHED = "45.0.2.1", "45.0.2.66"


def _stub(asked: list[str]):  # type: ignore[no-untyped-def]
    def getaddrinfo(host: str, *_args: object, **_kwargs: object) -> list[tuple[object, ...]]:
        asked.append(host)
        if host.endswith("."):
            answer = {"pypi.org.": REAL}.get(host)
        else:  # fewer than ndots dots: the search list first
            answer = {"pypi.org.corp.example": SEARCHED}.get(f"{host}.corp.example")
        if answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (answer, 0))]

    return getaddrinfo


def test_the_search_list_never_answers_for_an_allowed_name(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    monkeypatch.setattr(socket, "getaddrinfo", _stub(asked))
    found = asyncio.run(SystemResolver().resolve("pypi.org"))
    assert found == (ipaddress.ip_address(REAL),)
    assert asked == ["pypi.org."]


def test_the_stub_does_answer_a_relative_name_from_the_search_list(monkeypatch: pytest.MonkeyPatch) -> None:
    # control: the stub models the hole; without the trailing dot it is open
    monkeypatch.setattr(socket, "getaddrinfo", _stub([]))
    assert socket.getaddrinfo("pypi.org", None)[0][4][0] == SEARCHED
