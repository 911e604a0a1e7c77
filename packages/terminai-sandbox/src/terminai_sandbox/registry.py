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
* Progress: ``push_layout`` and ``push_blob`` take an optional callback that is told, for
  each blob, how many of its bytes have gone out (as the HTTP layer reads them) and when
  it was sent or skipped; the CLI turns that into progress lines on a terminal.
"""

from __future__ import annotations

import base64
import io
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import requests

from terminai_sandbox.artifacts.oci_layout import OciLayout
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


class RegistryClient:
    """One registry host. Methods take the repository path (``terminai/sandbox``)."""

    def __init__(
        self,
        registry: str,
        *,
        insecure: bool = False,
        credentials: Credentials | None = None,
        timeout: float = 60,
        retries: int = 4,
    ) -> None:
        self.registry = registry
        plain = insecure or is_loopback(registry)
        self.base = f"{'http' if plain else 'https'}://{registry}"
        self.credentials = credentials
        self.timeout = timeout
        self.retries = retries
        self.session = requests.Session()
        self._tokens: dict[str, Secret[str]] = {}

    # -- transport -----------------------------------------------------------------
    def _send(self, method: str, url: str, headers: dict[str, str], data: Any) -> requests.Response:
        delay = 0.2
        for attempt in range(self.retries + 1):
            if hasattr(data, "seek"):  # a retried body is sent again from its start
                data.seek(0)
            try:
                response = self.session.request(
                    method, url, headers=headers, data=data, timeout=self.timeout, allow_redirects=True
                )
            except requests.ConnectionError as exc:
                if attempt == self.retries:
                    raise RegistryUnreachable(
                        f"registry {self.registry} is unreachable: {exc.__class__.__name__}",
                        hint="check the address, that it is running, and the network",
                    ) from None
                time.sleep(delay)
                delay *= 2
                continue
            except requests.RequestException as exc:
                raise RegistryUnreachable(f"request to {self.registry} failed: {exc}") from None
            if response.status_code >= 500 and attempt < self.retries:
                time.sleep(delay)
                delay *= 2
                continue
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
            raise RegistryBadResponse(f"registry {self.registry} asked for unsupported auth {challenge!r}")
        query = {"service": params.get("service", ""), "scope": params.get("scope", scope)}
        auth = None
        if self.credentials is not None:
            auth = (self.credentials.username, self.credentials.password.reveal())
        try:
            response = self.session.get(params["realm"], params=query, auth=auth, timeout=self.timeout)
        except requests.RequestException as exc:
            raise RegistryUnreachable(
                f"token service {params['realm']} is unreachable: {exc.__class__.__name__}"
            ) from None
        if response.status_code != 200:
            raise RegistryUnauthorized(
                f"token service refused ({response.status_code})", hint=f"check your login for {self.registry}"
            )
        body = response.json()
        token = body.get("token") or body.get("access_token")
        if not token:
            raise RegistryBadResponse("token service answered without a token")
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
    ) -> requests.Response:
        scope = f"repository:{repo}:{'pull,push' if push else 'pull'}"
        all_headers = {**(headers or {}), **self._auth_header(scope)}
        target = url or f"{self.base}/v2/{repo}/{path}"
        response = self._send(method, target, all_headers, data)
        if response.status_code == 401 and "WWW-Authenticate" in response.headers:
            all_headers.update(self._authenticate(response.headers["WWW-Authenticate"], scope))
            if hasattr(data, "seek"):
                data.seek(0)
            response = self._send(method, target, all_headers, data)
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
        location = self._absolute(start.headers["Location"])
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
                    data=body(part, offset),
                    headers={
                        "Content-Type": "application/octet-stream",
                        "Content-Range": f"{offset}-{offset + len(part) - 1}",
                    },
                )
                if response.status_code != 202:
                    raise RegistryBadResponse(f"chunk upload failed ({response.status_code}): {response.text[:200]}")
                location = self._absolute(response.headers["Location"])
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

    def get_blob(self, repo: str, digest: str) -> bytes:
        """Fetch a blob and check its bytes against ``digest``."""
        response = self.request("GET", repo, f"blobs/{digest}")
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
        media = response.headers.get("Content-Type", "").split(";")[0] or json.loads(body).get("mediaType", "")
        return body, media, digest

    def manifest_exists(self, repo: str, reference: str) -> bool:
        response = self.request("HEAD", repo, f"manifests/{reference}", headers={"Accept": MANIFEST_ACCEPT})
        return response.status_code == 200

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


@dataclass(frozen=True, slots=True, kw_only=True)
class PushResult:
    digest: str
    blobs_sent: int
    blobs_skipped: int
