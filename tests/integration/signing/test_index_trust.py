"""A signed multi-platform index on a real registry: who accepts it and which forgeries are refused.

The index lists linux/amd64 and linux/arm64 (see ``tiny_index`` for why a one-layer arm64
image under an arm64 config is a fair stand-in for the trust logic). ``terminai-sandbox
sign`` and ``attest`` sign the index and each platform manifest and attest each platform's
SBOM and provenance; Debian's cosign 2.x and 3.x verify all of it, our ``verify`` accepts
it, and skopeo (containers/image, not our code) reads back, and copies with ``--all``,
exactly the bytes ``terminai-sandbox push`` sent from a multi-platform OCI layout.

Then the attacks of the index rule (docs/SECURITY.md), each refused with exit 11 and its
own message: a forged index adding an unsigned platform (with and without the genuine
index's signature replayed onto it), an index re-signed by another key, a platform
manifest swapped for another signed image's, a child digest listed twice, a nested index,
variant and os.version tricks, and a tag flipped from the index to a single manifest and
back. The malformed indexes are signed with the trusted key, so what refuses them is the
rule, not a missing signature.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from terminai_sandbox.cli import main
from terminai_sandbox.errors import VerificationError
from terminai_sandbox.oci_media import OCI_INDEX
from terminai_sandbox.registry import RegistryClient
from terminai_sandbox_dev.localregistry import loopback_registry

from tests.fixtures.oci import write_index_layout
from tests.fixtures.registry import RegistryServer, forget_images
from tests.integration.signing.cosign_tools import cosign
from tests.integration.signing.tiny_index import config, descriptor, plat, push_index, push_platform

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KINDS = ("cyclonedx", "slsaprovenance1")
PROVENANCE = {
    "buildDefinition": {
        "buildType": "https://terminai.example/sandbox-build/v1",
        "externalParameters": {"source": "git+https://example.com/sandbox@refs/tags/v1"},
        "resolvedDependencies": [],
    },
    "runDetails": {"builder": {"id": "https://example.com/builder"}},
}


def _sbom(arch: str) -> dict[str, object]:
    return {
        "bomFormat": "CycloneDX",
        "specVersion": "1.6",
        "version": 1,
        "metadata": {"component": {"type": "container", "name": f"index-{arch}"}},
        "components": [
            {
                "type": "library",
                "name": "bash",
                "version": "5.2.15-2+b7",
                "purl": f"pkg:deb/debian/bash@5.2.15-2%2Bb7?arch={arch}&distro=debian-12",
            }
        ],
    }


@dataclass(frozen=True, slots=True)
class World:
    client: RegistryClient
    host: str
    work: Path
    runner: CliRunner

    def ours(self, *args: str) -> tuple[int, str]:
        out = self.runner.invoke(main, list(args))
        return out.exit_code, out.output

    def ref(self, repo: str, digest: str) -> str:
        return f"{self.host}/{repo}@{digest}"

    def sign(self, ref: str, key: str = "ours.key") -> None:
        code, output = self.ours("sign", ref, "--key", key, "--bundle-format")
        assert code == 0, output

    def attest(self, ref: str, arch: str) -> None:
        for kind, predicate in zip(KINDS, (f"sbom-{arch}.json", "provenance.json"), strict=True):
            code, output = self.ours(
                "attest", ref, "--key", "ours.key", "--type", kind, "--predicate", predicate, "--bundle-format"
            )
            assert code == 0, output

    def release(self, repo: str, *, tag: str = "1.0") -> tuple[str, dict[str, str]]:
        """An index of two signed, attested platforms, itself signed; (index digest, platform -> digest)."""
        children = {
            "linux/amd64": push_platform(
                self.client, repo, self.work, "linux/amd64", content=b"amd64 " + repo.encode()
            ),
            "linux/arm64": push_platform(
                self.client, repo, self.work, "linux/arm64", content=b"arm64 " + repo.encode()
            ),
        }
        for platform, digest in children.items():
            self.sign(self.ref(repo, digest))
            self.attest(self.ref(repo, digest), platform.split("/")[1])
        entries = [descriptor(self.client, repo, d, plat(p)) for p, d in children.items()]
        index = push_index(self.client, repo, entries, tag=tag)
        self.sign(self.ref(repo, index))
        return index, children

    def refused(self, ref: str, *extra: str) -> str:
        code, output = self.ours("verify", ref, "--key", "ours.pub", *extra)
        assert code == VerificationError.exit_code, output
        return output


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One registry and one pair of keys for the module: every test signs into repositories
    of its own, so none sees another's manifests, tags or signatures (keys made once: each
    ``keygen`` is a scrypt of the password, the registry a process start)."""
    work = tmp_path_factory.mktemp("index-trust")
    with pytest.MonkeyPatch.context() as patch, loopback_registry(work / "registry") as server:
        patch.setenv("COSIGN_PASSWORD", "pw")
        patch.chdir(work)  # the CLI names the keys and predicates relative to it
        for arch in ("amd64", "arm64"):
            (work / f"sbom-{arch}.json").write_text(json.dumps(_sbom(arch)))
        (work / "provenance.json").write_text(json.dumps(PROVENANCE))
        runner = CliRunner()
        for prefix in ("ours", "stranger"):
            made = runner.invoke(main, ["keygen", "--output-prefix", prefix])
            assert made.exit_code == 0, made.output
        yield World(RegistryClient(server.host), server.host, work, runner)
    forget_images(f"{server.host}/")


@pytest.fixture()
def second_registry(tmp_path: Path) -> Iterator[RegistryServer]:
    with loopback_registry(tmp_path / "second") as server:
        yield server


def _ok(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, f"{done.args}: {done.stderr}"


def test_the_signed_index_and_each_platform_verify(world: World) -> None:
    index, children = world.release("multi/sandbox")
    code, output = world.ours(
        "verify", f"{world.host}/multi/sandbox:1.0", "--key", "ours.pub", *(f"--attestation={k}" for k in KINDS)
    )
    assert code == 0, output
    assert f"verified index {world.host}/multi/sandbox@{index} signed by sha256:" in output
    for platform, digest in children.items():
        assert f"verified {platform} {world.host}/multi/sandbox@{digest} signed by sha256:" in output
    assert output.count("verified attestation https://cyclonedx.org/bom\n") == 2  # one per platform
    assert output.count("verified attestation https://slsa.dev/provenance/v1\n") == 2

    code, output = world.ours("verify", world.ref("multi/sandbox", index), "--key", "ours.pub", "--json")
    assert code == 0, output
    result = json.loads(output)
    assert result["digest"] == index
    assert {p["platform"]: p["digest"] for p in result["platforms"]} == children

    code, output = world.ours(
        "verify", world.ref("multi/sandbox", index), "--key", "ours.pub", "--platform", "linux/arm64"
    )
    assert code == 0, output
    assert children["linux/arm64"] in output
    assert children["linux/amd64"] not in output

    output = world.refused(world.ref("multi/sandbox", index), "--platform", "linux/riscv64")
    assert "has no manifest for linux/riscv64 (it has: linux/amd64, linux/arm64)" in output

    # Another key trusts nothing here.
    code, output = world.ours("verify", world.ref("multi/sandbox", index), "--key", "stranger.pub")
    assert code == VerificationError.exit_code, output


def test_kube_renders_the_verified_index_for_mixed_pools(world: World) -> None:
    index, children = world.release("multi/kube")
    code, output = world.ours("kube", f"{world.host}/multi/kube:1.0", "--key", "ours.pub")
    assert code == 0, output
    pods = [doc for doc in yaml.safe_load_all(output) if doc and doc["kind"] == "Pod"]
    (pod,) = pods
    assert pod["spec"]["containers"][0]["image"] == f"{world.host}/multi/kube@{index}"
    (term,) = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]} in term["matchExpressions"]
    assert not any(d in output for d in children.values())
    # An index with an unsigned platform renders nothing.
    extra = push_platform(world.client, "multi/kube", world.work, "linux/riscv64", content=b"unsigned")
    genuine = json.loads(world.client.get_manifest("multi/kube", index)[0])
    half = push_index(
        world.client,
        "multi/kube",
        [*genuine["manifests"], descriptor(world.client, "multi/kube", extra, plat("linux/riscv64"))],
    )
    world.sign(world.ref("multi/kube", half))
    code, output = world.ours("kube", world.ref("multi/kube", half), "--key", "ours.pub")
    assert code == VerificationError.exit_code, output
    assert extra in output and "kind: Pod" not in output


@pytest.mark.parametrize("major", [2, 3])
def test_cosign_verifies_the_index_both_platforms_and_their_attestations(
    world: World, major: int, tmp_path: Path
) -> None:
    tool = cosign(f"cosign{major}", tmp_path / "home")
    index, children = world.release(f"multi/cosign{major}")
    repo = f"multi/cosign{major}"
    _ok(tool.verify(world.ref(repo, index), "ours.pub", world.work))
    for digest in children.values():
        _ok(tool.verify(world.ref(repo, digest), "ours.pub", world.work))
        for kind in KINDS:
            _ok(tool.verify_attestation(world.ref(repo, digest), "ours.pub", kind, world.work))
    # cosign agrees with us that another key signed none of it.
    assert tool.verify(world.ref(repo, index), "stranger.pub", world.work).returncode != 0
    for digest in children.values():
        assert tool.verify(world.ref(repo, digest), "stranger.pub", world.work).returncode != 0


def test_push_keeps_every_byte_and_skopeo_copies_all_of_it(world: World, second_registry: RegistryServer) -> None:
    layout = world.work / "multi-layout"
    index, children = write_index_layout(
        layout,
        {
            "linux/amd64": (config("linux", "amd64"), [b"amd64 layer"]),
            "linux/arm64": (config("linux", "arm64"), [b"arm64 layer", b"shared layer"]),
        },
    )
    code, output = world.ours("push", str(layout), f"{world.host}/multi/bytes:1.0", "--json")
    assert code == 0, output
    assert json.loads(output)["digest"] == index
    on_disk = {
        d: (layout / "blobs" / "sha256" / d.removeprefix("sha256:")).read_bytes() for d in (index, *children.values())
    }

    def raw(host: str, digest: str) -> bytes:
        done = subprocess.run(
            ["skopeo", "inspect", "--raw", "--tls-verify=false", f"docker://{host}/multi/bytes@{digest}"],
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    for digest, body in on_disk.items():
        assert raw(world.host, digest) == body
    tagged = subprocess.run(
        ["skopeo", "inspect", "--raw", "--tls-verify=false", f"docker://{world.host}/multi/bytes:1.0"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert tagged.stdout == on_disk[index]
    # A digest in the destination that is not the index's: refused before anything is sent.
    code, output = world.ours("push", str(layout), f"{world.host}/multi/other@{children['linux/amd64']}")
    assert code != 0 and "nothing was pushed" in output
    assert world.client.request("GET", "multi/other", "tags/list").status_code == 404

    # The signed release, copied whole by containers/image, keeps every byte.
    for platform, digest in children.items():
        world.sign(world.ref("multi/bytes", digest))
        world.attest(world.ref("multi/bytes", digest), platform.split("/")[1])
    world.sign(world.ref("multi/bytes", index))
    code, output = world.ours("verify", world.ref("multi/bytes", index), "--key", "ours.pub")
    assert code == 0, output
    copied = subprocess.run(
        [
            "skopeo",
            "copy",
            "--all",
            # skopeo would otherwise re-describe the tiny layers (not really gzip), and with
            # them rewrite the manifests; this makes any rewrite an error instead.
            "--preserve-digests",
            "--src-tls-verify=false",
            "--dest-tls-verify=false",
            f"docker://{world.host}/multi/bytes@{index}",
            f"docker://{second_registry.host}/multi/bytes:1.0",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    _ok(copied)
    for digest, body in on_disk.items():
        assert raw(second_registry.host, digest) == body
    there = RegistryClient(second_registry.host)
    for digest in children.values():  # configs and layers too
        manifest = json.loads(on_disk[digest])
        for blob in (manifest["config"], *manifest["layers"]):
            assert there.get_blob("multi/bytes", blob["digest"]) == world.client.get_blob("multi/bytes", blob["digest"])


def test_a_forged_index_adding_an_unsigned_platform_is_refused(world: World) -> None:
    index, _children = world.release("attack/added")
    extra = push_platform(world.client, "attack/added", world.work, "linux/riscv64", content=b"unsigned riscv64")
    genuine = json.loads(world.client.get_manifest("attack/added", index)[0])
    forged = push_index(
        world.client,
        "attack/added",
        [*genuine["manifests"], descriptor(world.client, "attack/added", extra, plat("linux/riscv64"))],
        tag="1.0",
    )
    output = world.refused(f"{world.host}/attack/added:1.0")
    assert forged in output
    # The genuine index's signature replayed onto the forged one: bound to the other digest.
    src, dst = index.replace(":", "-"), forged.replace(":", "-")
    for tag in world.client.request("GET", "attack/added", "tags/list").json()["tags"]:
        if tag.startswith(src):
            body, media, _ = world.client.get_manifest("attack/added", tag)
            world.client.put_manifest("attack/added", dst + tag[len(src) :], body, media)
    world.refused(world.ref("attack/added", forged))
    world.refused(world.ref("attack/added", forged), "--platform", "linux/amd64")
    # The genuine index still verifies, for every platform it lists.
    code, output = world.ours("verify", world.ref("attack/added", index), "--key", "ours.pub")
    assert code == 0, output


def test_a_signed_index_listing_an_unsigned_platform_runs_only_the_signed_one(world: World) -> None:
    amd64 = push_platform(world.client, "attack/half", world.work, "linux/amd64", content=b"signed amd64")
    arm64 = push_platform(world.client, "attack/half", world.work, "linux/arm64", content=b"unsigned arm64")
    world.sign(world.ref("attack/half", amd64))
    entries = [
        descriptor(world.client, "attack/half", amd64, plat("linux/amd64")),
        descriptor(world.client, "attack/half", arm64, plat("linux/arm64")),
    ]
    index = push_index(world.client, "attack/half", entries)
    world.sign(world.ref("attack/half", index))
    output = world.refused(world.ref("attack/half", index))
    assert arm64 in output
    world.refused(world.ref("attack/half", index), "--platform", "linux/arm64")
    code, output = world.ours(
        "verify", world.ref("attack/half", index), "--key", "ours.pub", "--platform", "linux/amd64"
    )
    assert code == 0, output


def test_an_index_re_signed_by_another_key_is_refused(world: World) -> None:
    _index, children = world.release("attack/resigned")
    entries = [descriptor(world.client, "attack/resigned", d, plat(p)) for p, d in reversed(children.items())]
    forged = push_index(world.client, "attack/resigned", entries)  # same children, another digest
    world.sign(world.ref("attack/resigned", forged), key="stranger.key")
    output = world.refused(world.ref("attack/resigned", forged))
    assert forged in output


def test_a_platform_swapped_for_another_signed_image_is_refused(world: World) -> None:
    _index, children = world.release("attack/swap")
    other = push_platform(world.client, "attack/swap", world.work, "linux/arm64", content=b"another signed arm64")
    world.sign(world.ref("attack/swap", other))
    entries = [
        descriptor(world.client, "attack/swap", children["linux/amd64"], plat("linux/amd64")),
        descriptor(world.client, "attack/swap", other, plat("linux/arm64")),
    ]
    swapped = push_index(world.client, "attack/swap", entries)
    world.refused(world.ref("attack/swap", swapped))  # every manifest signed, but not this index
    # Signed by the trusted key, an index that calls the amd64 image arm64 is still refused.
    misnamed = push_index(
        world.client,
        "attack/swap",
        [
            descriptor(world.client, "attack/swap", children["linux/amd64"], plat("linux/arm64")),
            descriptor(world.client, "attack/swap", other, plat("linux/amd64")),
        ],
    )
    world.sign(world.ref("attack/swap", misnamed))
    output = world.refused(world.ref("attack/swap", misnamed), "--platform", "linux/arm64")
    assert "step 1i" in output
    assert "config says linux/amd64" in output


@dataclass(frozen=True, slots=True)
class Genuine:
    repo: str
    index: str
    children: dict[str, str]
    second: str  # another signed linux/arm64 manifest in the same repository


@pytest.fixture(scope="module")
def genuine(world: World) -> Genuine:
    """One genuine release that the malformed indexes below are forged from: each case adds
    its own index beside it, so one release serves them all."""
    repo = "attack/malformed"
    index, children = world.release(repo)
    second = push_platform(world.client, repo, world.work, "linux/arm64", content=b"a second arm64")
    world.sign(world.ref(repo, second))
    return Genuine(repo, index, children, second)


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("twice", "more than once"),
        ("nested", "nested indexes are refused"),
        ("variant", "variant 'v9'"),
        ("os.version", "os.version"),
        ("two-for-one", "two manifests for linux/arm64"),
    ],
)
def test_a_malformed_index_is_refused_though_signed(world: World, genuine: Genuine, case: str, message: str) -> None:
    repo, index, children, second = genuine.repo, genuine.index, genuine.children, genuine.second
    amd64 = descriptor(world.client, repo, children["linux/amd64"], plat("linux/amd64"))
    arm64 = descriptor(world.client, repo, children["linux/arm64"], plat("linux/arm64"))
    nested = {"mediaType": OCI_INDEX, "digest": index, "size": len(world.client.get_manifest(repo, index)[0])}
    entries = {
        "twice": [amd64, {**amd64, "platform": plat("linux/arm64")}],
        "nested": [amd64, {**nested, "platform": plat("linux/arm64")}],
        "variant": [amd64, arm64, {**arm64, "platform": plat("linux/arm64/v9")}],
        "os.version": [amd64, {**arm64, "platform": plat("linux/arm64", **{"os.version": "10.0.17763"})}],
        "two-for-one": [amd64, arm64, descriptor(world.client, repo, second, plat("linux/arm64/v8"))],
    }[case]
    forged = push_index(world.client, repo, entries)
    world.sign(world.ref(repo, forged))  # the trusted key: only the rule can refuse it
    output = world.refused(world.ref(repo, forged))
    assert "step 1i" in output
    assert message in output
    output = world.refused(world.ref(repo, forged), "--platform", "linux/amd64")
    assert message in output
    # The genuine index beside the forgeries still verifies: the rule refused the forgery, not the repository.
    code, output = world.ours("verify", world.ref(repo, index), "--key", "ours.pub")
    assert code == 0, output


def test_a_tag_flipped_between_index_and_single_manifest_is_verified_by_what_it_names(world: World) -> None:
    repo = "attack/flip"
    index, children = world.release(repo)
    tagged = f"{world.host}/{repo}:1.0"
    code, output = world.ours("verify", tagged, "--key", "ours.pub")
    assert code == 0, output
    assert "verified index" in output
    # Flipped to an unsigned single manifest: refused.
    unsigned = push_platform(world.client, repo, world.work, "linux/amd64", content=b"unsigned single")
    body, media, _ = world.client.get_manifest(repo, unsigned)
    world.client.put_manifest(repo, "1.0", body, media)
    output = world.refused(tagged)
    assert unsigned in output
    # Flipped to the signed amd64 manifest alone: that manifest, verified as the single image it is.
    body, media, _ = world.client.get_manifest(repo, children["linux/amd64"])
    world.client.put_manifest(repo, "1.0", body, media)
    code, output = world.ours("verify", tagged, "--key", "ours.pub")
    assert code == 0, output
    assert "verified index" not in output
    assert f"verified {world.host}/{repo}@{children['linux/amd64']} signed by" in output
    # And back: the index again, under the index rule.
    body, media, _ = world.client.get_manifest(repo, index)
    world.client.put_manifest(repo, "1.0", body, media)
    code, output = world.ours("verify", tagged, "--key", "ours.pub")
    assert code == 0, output
    assert f"verified index {world.host}/{repo}@{index}" in output
