"""A small OCI distribution API client: push and fetch by digest, never by trust in tags.

* Push an opened OCI image layout (:class:`~terminai_sandbox.artifacts.oci_layout.OciLayout`)
  blob by blob (blobs the registry already has are skipped; monolithic or chunked uploads),
  then the manifest *by digest*, so the registry holds exactly the assembled manifest bytes
  (``docker push`` would rewrite them).
* Fetch manifests and blobs by digest and check the bytes against the digest.
* Resolve a tag to a digest once; everything after that works by digest.
* Auth: anonymous, basic, and the bearer-token challenge flow, with credentials from the
  Docker config (``auths`` or a credential helper). TLS is verified; plain HTTP only for a
  loopback registry or one named as insecure. 5xx answers and dropped connections are
  retried with backoff.
* Deadlines: each request, its retries included, must be whole (connected, answered, its
  body read) within the client's ``timeout`` (``TERMINAI_REGISTRY_TIMEOUT``, default 60 s;
  a blob gets 1 s more per MiB), not only between two bytes (:mod:`terminai_sandbox.http_deadline`);
  and every request ends by the running command's total deadline
  (:class:`~terminai_sandbox.common.deadlines.CommandDeadline`), whatever their number.
* Answers are input: one that is not the distribution API's (an HTML page, junk or JSON of
  another shape, an upload without ``Location``, a redirect loop, a body cut short, 5xx after
  the retries) is a :class:`~terminai_sandbox.errors.RegistryBadResponse` naming the URL and
  what was wrong, never a crash.
* Progress: ``push_layout`` and ``push_blob`` take an optional callback that is told, for
  each blob, how many of its bytes have gone out (as the HTTP layer reads them) and when
  it was sent or skipped; the CLI turns that into progress lines on a terminal.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

import requests

from terminai_sandbox.artifacts.oci_layout import IndexLayout, OciLayout
from terminai_sandbox.common import deadlines
from terminai_sandbox.common.reference import is_digest
from terminai_sandbox.common.registry_auth import Credentials, is_loopback
from terminai_sandbox.errors import (
    ConfigError,
    RegistryBadResponse,
    RegistryCorrupted,
    RegistryNotFound,
    RegistryUnauthorized,
    RegistryUnreachable,
)
from terminai_sandbox.http_deadline import AnswerTooLarge, DeadlineExceeded, deadline_session, fetch
from terminai_sandbox.oci_media import DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST, sha256_digest
from terminai_sandbox.secret import Secret

__all__ = [
    "OCI_INDEX",
    "OCI_MANIFEST",
    "BlobProgress",
    "ProgressCallback",
    "PushResult",
    "RegistryClient",
    "parse_challenge",
    "sha256_digest",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class BlobProgress:
    """Where one blob's upload stands: ``done`` of ``total`` bytes sent."""

    digest: str
    done: int
    total: int
    state: Literal["sending", "sent", "skipped"]


ProgressCallback = Callable[[BlobProgress], None]


class _CountingBody(io.BytesIO):
    """A request body that reports each read: the HTTP layer reads it in blocks as it sends.

    ``base`` is where this body starts within the blob (a chunked upload sends parts).
    Rewinding (a retried request) starts the count of this part again, so it never
    overstates what went out.
    """

    def __init__(self, data: bytes, *, base: int, report: Callable[[int], None]) -> None:
        super().__init__(data)
        self._base = base
        self._report = report

    def read(self, size: int | None = -1, /) -> bytes:
        block = super().read(size)
        if block:
            self._report(self._base + self.tell())
        return block


MANIFEST_ACCEPT = ", ".join((OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST))
CHUNK = 8 << 20


_CHALLENGE = re.compile(r'(\w+)="([^"]*)"')


def parse_challenge(header: str) -> tuple[str, dict[str, str]]:
    """``Bearer realm="…",service="…",scope="…"`` → ("bearer", {realm, service, scope})."""
    scheme, _, rest = header.strip().partition(" ")
    return scheme.lower(), dict(_CHALLENGE.findall(rest))


def _where(url: str) -> str:
    """``url`` without its query (upload locations carry session state, tokens ask for scopes)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _looks(body: bytes) -> str:
    """What an answer that should be JSON looks like instead, in a few words."""
    head = body.lstrip()[:200].lower()
    if not head:
        return "an empty body"
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head:
        return "an HTML page"
    return f"{body[:40]!r}"


_JSON_KINDS = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number"}
_JSON_KINDS.update({bool: "true or false", type(None): "null"})


def json_document(body: bytes, where: str, *, kind: type = dict) -> Any:
    """``body`` parsed as JSON of type ``kind``; :class:`RegistryBadResponse` saying what it is instead."""
    try:
        value = json.loads(body)
    except ValueError:
        raise RegistryBadResponse(
            f"{where} answered {_looks(body)}, not the JSON the distribution API sends",
            hint="check that the address names an OCI registry (not a web page or a proxy's error page)",
        ) from None
    if not isinstance(value, kind):
        raise RegistryBadResponse(
            f"{where} answered JSON of the wrong shape ({_JSON_KINDS.get(type(value), 'a value')}, "
            f"not {_JSON_KINDS.get(kind, kind.__name__)})",
            hint="check that the address names an OCI registry that speaks the distribution API",
        )
    return value


class RegistryClient:
    """One registry host. Methods take the repository path (``terminai/sandbox``).

    ``timeout`` is each request's total deadline in seconds, retries included (None: the
    ``TERMINAI_REGISTRY_TIMEOUT`` environment variable, else 60 s).
    """

    def __init__(
        self,
        registry: str,
        *,
        insecure: bool = False,
        credentials: Credentials | None = None,
        timeout: float | None = None,
        retries: int = 4,
    ) -> None:
        self.registry = registry
        plain = insecure or is_loopback(registry)
        self.base = f"{'http' if plain else 'https'}://{registry}"
        self.credentials = credentials
        self.timeout = deadlines.registry_seconds(os.environ) if timeout is None else timeout
        self.retries = retries
        self.session = deadline_session()
        self._tokens: dict[str, Secret[str]] = {}

    # -- transport -----------------------------------------------------------------
    def _send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        data: Any,
        *,
        params: dict[str, str] | None = None,
        auth: tuple[str, str] | None = None,
        size: int = 0,
        max_body: int = deadlines.MAX_DOCUMENT,
    ) -> requests.Response:
        """One request, retried on dropped connections and 5xx, whole within the deadline.

        ``size`` is how many bytes of a blob the request carries either way: each MiB adds
        :data:`~terminai_sandbox.common.deadlines.SECONDS_PER_MIB` to the deadline.
        """
        seconds = self.timeout + size / (1 << 20) * deadlines.SECONDS_PER_MIB
        ends = time.monotonic() + seconds
        # The command's total deadline caps the sum of its requests: a registry answering
        # each one just inside its own bound would otherwise hold a many-request command
        # (verify with attestations, push, release) for their sum.
        command = deadlines.active()
        by_command = command is not None and command.ends < ends
        if command is not None and by_command:
            ends = command.ends
        where = f"{method} {_where(url)}"
        delay = 0.2
        for attempt in range(self.retries + 1):
            if hasattr(data, "seek"):  # a retried body is sent again from its start
                data.seek(0)
            left = ends - time.monotonic()
            # Another attempt only while the deadline leaves room for the pause and the attempt.
            last = attempt == self.retries or left <= 2 * delay + 0.25
            try:
                if left <= 0:
                    raise DeadlineExceeded
                response = fetch(
                    self.session,
                    method,
                    url,
                    seconds=left,
                    connect_seconds=deadlines.REGISTRY_CONNECT_SECONDS,
                    max_body=max_body,
                    headers=headers,
                    data=data,
                    params=params,
                    auth=auth,
                    allow_redirects=True,
                )
            except DeadlineExceeded:
                if command is not None and by_command:
                    raise RegistryUnreachable(
                        f"{where}: {command.describe()} passed before the registry answered",
                        hint=command.hint(f"the registry {self.registry}"),
                    ) from None
                raise RegistryUnreachable(
                    f"{where}: no whole answer within {round(seconds, 1):g} s",
                    hint=f"the registry {self.registry} is slow or stopped answering: check it and the network, "
                    f"or allow more time with {deadlines.REGISTRY_VARIABLE}=SECONDS (now {self.timeout:g})",
                ) from None
            except AnswerTooLarge as exc:
                raise RegistryBadResponse(
                    f"{where}: {exc}, more than any answer of the distribution API here",
                    hint="check that the address names an OCI registry (not a proxy or a file server)",
                ) from None
            except requests.TooManyRedirects:
                raise RegistryBadResponse(
                    f"{where}: the registry redirects in a loop",
                    hint="the registry or a proxy in front of it is misconfigured; check the address",
                ) from None
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
                if not last:
                    time.sleep(delay)
                    delay *= 2
                    continue
                if isinstance(exc, requests.exceptions.ChunkedEncodingError):
                    raise RegistryBadResponse(
                        f"{where}: the answer was cut short ({_first_cause(exc)})",
                        hint="the connection broke in the middle of an answer; check the registry and any "
                        "proxy in between, then run the command again",
                    ) from None
                raise RegistryUnreachable(
                    f"registry {self.registry} is unreachable: {exc.__class__.__name__} ({where})",
                    hint="check the address, that it is running, and the network",
                ) from None
            except requests.RequestException as exc:
                raise RegistryBadResponse(
                    f"{where}: the request failed: {_first_cause(exc)}",
                    hint="check the registry's address and TLS set-up, then run the command again",
                ) from None
            if response.status_code >= 500:
                if not last:
                    time.sleep(delay)
                    delay *= 2
                    continue
                raise RegistryBadResponse(
                    f"{where}: HTTP {response.status_code} {response.reason or ''}".rstrip()
                    + f" after {attempt + 1} attempt{'s' if attempt else ''}",
                    hint=f"the registry {self.registry} is failing on its side; try again later or ask its operator",
                )
            return response
        raise AssertionError("unreachable")

    def _auth_header(self, scope: str) -> dict[str, str]:
        token = self._tokens.get(scope)
        return {"Authorization": f"Bearer {token.reveal()}"} if token else {}

    def _authenticate(self, challenge: str, scope: str) -> dict[str, str]:
        scheme, params = parse_challenge(challenge)
        if scheme == "basic":
            if self.credentials is None:
                raise RegistryUnauthorized(
                    f"registry {self.registry} needs a login",
                    hint=f"run 'docker login {self.registry}' (credentials are read from the Docker config)",
                )
            raw = f"{self.credentials.username}:{self.credentials.password.reveal()}".encode()
            return {"Authorization": "Basic " + base64.b64encode(raw).decode()}
        if scheme != "bearer" or "realm" not in params:
            raise RegistryBadResponse(
                f"registry {self.registry} asked for unsupported auth {challenge[:200]!r}",
                hint="only anonymous, basic and bearer-token registries are supported",
            )
        realm = params["realm"]
        if not realm.startswith(("https://", "http://")):
            raise RegistryBadResponse(
                f"registry {self.registry} named a token service that is not a URL: {realm[:200]!r}",
                hint="the registry's auth set-up is broken; ask its operator",
            )
        query = {"service": params.get("service", ""), "scope": params.get("scope", scope)}
        auth = None
        if self.credentials is not None:
            auth = (self.credentials.username, self.credentials.password.reveal())
        response = self._send("GET", realm, {}, None, params=query, auth=auth)
        if response.status_code != 200:
            raise RegistryUnauthorized(
                f"token service refused ({response.status_code}): {_where(realm)}",
                hint=f"check your login for {self.registry}",
            )
        body = json_document(response.content, f"token service {_where(realm)}")
        token = body.get("token") or body.get("access_token")
        if not token or not isinstance(token, str):
            raise RegistryBadResponse(
                f"token service {_where(realm)} answered without a token",
                hint="the registry's token service is broken or is not one; ask its operator",
            )
        self._tokens[scope] = Secret(token)
        return {"Authorization": f"Bearer {token}"}

    def request(
        self,
        method: str,
        repo: str,
        path: str,
        *,
        headers: dict[str, str] | None = None,
        data: Any = None,
        push: bool = False,
        url: str | None = None,
        size: int = 0,
        max_body: int = deadlines.MAX_DOCUMENT,
    ) -> requests.Response:
        """One API request (with the token flow when the registry asks); 5xx after retries,
        a late or malformed answer, 401 and 403 are raised as typed errors. ``size`` is the
        blob bytes it carries (each MiB adds a second to the deadline)."""
        scope = f"repository:{repo}:{'pull,push' if push else 'pull'}"
        all_headers = {**(headers or {}), **self._auth_header(scope)}
        target = url or f"{self.base}/v2/{repo}/{path}"
        response = self._send(method, target, all_headers, data, size=size, max_body=max_body)
        if response.status_code == 401 and "WWW-Authenticate" in response.headers:
            all_headers.update(self._authenticate(response.headers["WWW-Authenticate"], scope))
            if hasattr(data, "seek"):
                data.seek(0)
            response = self._send(method, target, all_headers, data, size=size, max_body=max_body)
        if response.status_code == 401:
            raise RegistryUnauthorized(
                f"{self.registry}/{repo}: authentication failed (401)",
                hint=f"log in with 'docker login {self.registry}'",
            )
        if response.status_code == 403:
            raise RegistryUnauthorized(
                f"{self.registry}/{repo}: access denied (403)", hint="your account lacks permission for this repository"
            )
        return response

    # -- blobs -----------------------------------------------------------------------
    def has_blob(self, repo: str, digest: str) -> bool:
        response = self.request("HEAD", repo, f"blobs/{digest}")
        return response.status_code == 200

    def push_blob(
        self,
        repo: str,
        digest: str,
        data: bytes,
        *,
        chunk_size: int | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> bool:
        """Upload a blob unless the registry has it; return True when bytes were sent."""
        if sha256_digest(data) != digest:
            raise RegistryCorrupted(f"refusing to push blob {digest}: its bytes do not match the digest")
        total = len(data)

        def report(done: int, state: Literal["sending", "sent", "skipped"] = "sending") -> None:
            if on_progress is not None:
                on_progress(BlobProgress(digest=digest, done=done, total=total, state=state))

        def body(part: bytes, base: int) -> bytes | _CountingBody:
            return _CountingBody(part, base=base, report=report) if on_progress is not None and part else part

        if self.has_blob(repo, digest):
            report(total, "skipped")
            return False
        start = self.request("POST", repo, "blobs/uploads/", push=True)
        if start.status_code != 202:
            raise RegistryBadResponse(
                f"{self.registry}/{repo}: upload refused ({start.status_code}): {start.text[:200]}"
            )
        location = self._location(start, f"{self.registry}/{repo}: starting the upload of {digest}")
        if chunk_size:
            offset = 0
            while offset < len(data):
                part = data[offset : offset + chunk_size]
                response = self.request(
                    "PATCH",
                    repo,
                    "",
                    url=location,
                    push=True,
                    size=len(part),
                    data=body(part, offset),
                    headers={
                        "Content-Type": "application/octet-stream",
                        "Content-Range": f"{offset}-{offset + len(part) - 1}",
                    },
                )
                if response.status_code != 202:
                    raise RegistryBadResponse(
                        f"{self.registry}/{repo}: chunk upload of {digest} failed ({response.status_code}): "
                        f"{response.text[:200]}"
                    )
                location = self._location(response, f"{self.registry}/{repo}: a chunk of {digest}")
                offset += len(part)
            last: bytes | _CountingBody = b""
        else:
            last = body(data, 0)
        sep = "&" if "?" in location else "?"
        done = self.request(
            "PUT",
            repo,
            "",
            url=f"{location}{sep}digest={digest}",
            push=True,
            size=0 if chunk_size else total,
            data=last,
            headers={"Content-Type": "application/octet-stream"},
        )
        if done.status_code != 201:
            raise RegistryBadResponse(
                f"{self.registry}/{repo}: blob {digest} rejected ({done.status_code}): {done.text[:200]}"
            )
        report(total, "sent")
        return True

    def _absolute(self, location: str) -> str:
        return location if location.startswith("http") else f"{self.base}{location}"

    def _location(self, response: requests.Response, doing: str) -> str:
        """Where the upload continues (the ``Location`` of a 202); :class:`RegistryBadResponse` without one."""
        location = response.headers.get("Location", "").strip()
        if not location:
            raise RegistryBadResponse(
                f"{doing}: the registry accepted ({response.status_code}) without saying where to send "
                "the bytes (no Location header)",
                hint="the registry does not follow the distribution API's upload protocol; check the address "
                "or ask its operator",
            )
        return self._absolute(location)

    def get_blob(self, repo: str, digest: str, *, size: int | None = None) -> bytes:
        """Fetch a blob and check its bytes against ``digest`` (``size``, when known, extends the deadline)."""
        response = self.request(
            "GET", repo, f"blobs/{digest}", size=size if size and size > 0 else 0, max_body=deadlines.MAX_BLOB
        )
        if response.status_code == 404:
            raise RegistryNotFound(f"{self.registry}/{repo}: blob {digest} not found")
        if response.status_code != 200:
            raise RegistryBadResponse(f"{self.registry}/{repo}: blob {digest}: HTTP {response.status_code}")
        if sha256_digest(response.content) != digest:
            raise RegistryCorrupted(
                f"{self.registry}/{repo}: blob {digest} is corrupted (its bytes hash differently)",
                hint="the registry's storage was altered; do not use this image",
            )
        return response.content

    # -- manifests -----------------------------------------------------------------
    def get_manifest(self, repo: str, reference: str) -> tuple[bytes, str, str]:
        """(bytes, media type, digest). A digest reference is checked against the bytes."""
        response = self.request("GET", repo, f"manifests/{reference}", headers={"Accept": MANIFEST_ACCEPT})
        if response.status_code == 404:
            raise RegistryNotFound(
                f"{self.registry}/{repo}:{reference}: manifest unknown (404)",
                hint="check the repository and tag or digest",
            )
        if response.status_code != 200:
            raise RegistryBadResponse(f"{self.registry}/{repo}:{reference}: HTTP {response.status_code}")
        body = response.content
        digest = sha256_digest(body)
        if is_digest(reference) and digest != reference:
            raise RegistryCorrupted(f"{self.registry}/{repo}: manifest {reference} is corrupted (got {digest})")
        document = json_document(body, f"{self.registry}/{repo}:{reference} (manifest)")
        media = response.headers.get("Content-Type", "").split(";")[0].strip()
        if not media or media in ("application/json", "text/plain", "application/octet-stream"):
            media = document.get("mediaType") if isinstance(document.get("mediaType"), str) else media
        return body, media, digest

    def resolve(self, repo: str, tag: str) -> str:
        """The digest a tag points at now (read once; use the digest afterwards)."""
        return self.get_manifest(repo, tag)[2]

    def put_manifest(self, repo: str, reference: str, body: bytes, media_type: str) -> str:
        response = self.request(
            "PUT", repo, f"manifests/{reference}", push=True, data=body, headers={"Content-Type": media_type}
        )
        if response.status_code != 201:
            raise RegistryBadResponse(
                f"{self.registry}/{repo}: manifest {reference} rejected ({response.status_code}): {response.text[:300]}"
            )
        digest = sha256_digest(body)
        stored = response.headers.get("Docker-Content-Digest")
        if stored and stored != digest:
            raise RegistryBadResponse(f"registry stored the manifest as {stored}, expected {digest}")
        return digest

    # -- OCI layouts -----------------------------------------------------------------
    def push_layout(
        self,
        layout: OciLayout,
        repo: str,
        *,
        tag: str | None = None,
        chunk_size: int | None = None,
        digest: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> PushResult:
        """Push the one image of an opened OCI layout by digest; tag it afterwards if asked.

        Each blob is read through the layout, which checks its bytes against its digest.
        ``digest``, when the destination names one (``repo@sha256:…``), must be the layout's
        manifest digest: a mismatch is refused before anything is sent, never pushed as
        another image and reported as a success. ``on_progress`` hears about every blob.
        """
        if digest is not None and digest != layout.manifest_digest:
            raise ConfigError(
                f"the destination names {digest}, but the layout's manifest is {layout.manifest_digest}; "
                "nothing was pushed",
                hint=f"push to {self.registry}/{repo}@{layout.manifest_digest}, or name a tag or only the repository",
            )
        sent = skipped = 0
        for item in (layout.config, *layout.layers):
            blob = layout.read_blob(item.digest)
            if self.push_blob(repo, item.digest, blob, chunk_size=chunk_size, on_progress=on_progress):
                sent += 1
            else:
                skipped += 1
        manifest, media_type = layout.manifest_bytes, layout.manifest.media_type
        pushed = self.put_manifest(repo, layout.manifest_digest, manifest, media_type)
        if tag:
            self.put_manifest(repo, tag, manifest, media_type)
        return PushResult(digest=pushed, blobs_sent=sent, blobs_skipped=skipped)

    def push_index_layout(
        self,
        layout: IndexLayout,
        repo: str,
        *,
        tag: str | None = None,
        chunk_size: int | None = None,
        digest: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> PushResult:
        """Push a multi-platform layout: every platform image by digest, then the index's exact bytes.

        The index goes last, so a registry never holds an index naming a manifest it lacks,
        and its bytes are the layout's as stored: the digest pushed is the digest built.
        """
        if digest is not None and digest != layout.index_digest:
            raise ConfigError(
                f"the destination names {digest}, but the layout's image index is {layout.index_digest}; "
                "nothing was pushed",
                hint=f"push to {self.registry}/{repo}@{layout.index_digest}, or name a tag or only the repository",
            )
        sent = skipped = 0
        for image in layout.images:
            pushed = self.push_layout(image, repo, chunk_size=chunk_size, on_progress=on_progress)
            sent, skipped = sent + pushed.blobs_sent, skipped + pushed.blobs_skipped
        index = self.put_manifest(repo, layout.index_digest, layout.index_bytes, layout.index.media_type)
        if tag:
            self.put_manifest(repo, tag, layout.index_bytes, layout.index.media_type)
        return PushResult(digest=index, blobs_sent=sent, blobs_skipped=skipped)


@dataclass(frozen=True, slots=True, kw_only=True)
class PushResult:
    digest: str
    blobs_sent: int
    blobs_skipped: int


def _first_cause(exc: BaseException) -> str:
    """The reason requests and urllib3 wrap, in one line (``Connection broken: IncompleteRead(...)``)."""
    while exc.args and isinstance(exc.args[0], BaseException):
        exc = exc.args[0]
    first = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
    text = first.strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:200]
