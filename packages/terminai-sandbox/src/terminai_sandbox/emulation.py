"""What a contract run under qemu-user cannot prove, asked of the image and named.

An image of another architecture runs here through binfmt_misc and qemu-user: qemu
translates the program's system calls and makes its own. Two executor guarantees are the
kernel's to enforce on the program itself, and qemu does not pass them through: a seccomp
filter the emulated process installs (a filter would bind qemu, not the program, so qemu
does not offer seccomp: measured with Debian 12's qemu-user-static, libseccomp cannot even
set up the filter) and a Landlock ruleset (qemu has no Landlock system calls).

:func:`probe` asks the image's own executor modules, inside the image under emulation,
to install its seccomp filter and to report its Landlock ABI, so the run records what
emulation really refused rather than assuming it; each refused guarantee is then reported
by name with the proof that covers it instead (never as a silent skip).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from terminai_sandbox.common.platforms import architecture_of_machine, native_platform

if TYPE_CHECKING:
    from terminai_sandbox.engine.client import DockerApi


@dataclass(frozen=True, slots=True, kw_only=True)
class Guarantee:
    name: str
    what: str
    proof: str  # what proves it where emulation cannot


GUARANTEES = (
    Guarantee(
        name="executor.seccomp",
        what="each run installs the executor's seccomp filter on itself",
        proof="by simulation: the filter compiled for SCMP_ARCH_AARCH64 decides every system call as the "
        "amd64 one does (tests/unit/executor/test_seccomp_aarch64.py)",
    ),
    Guarantee(
        name="executor.landlock",
        what="each run confines itself with a Landlock ruleset",
        proof="by simulation and natively: Landlock's system calls (444-446) and structures are the "
        "generic ones on arm64 and amd64, and the amd64 suite applies the same code natively "
        "(tests/unit/executor)",
    ),
)

#: Run by the image's python3, as the image user, inside the image: what emulation grants.
PROBE = r"""
import ctypes, json, os
from terminai_apts.executor.os_layer import landlock, seccomp
out = {}
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(read_end)
    why = ""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(38, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
        seccomp.load_filter(seccomp.compile_filter(seccomp.rules(scratch=False)))
    except Exception as exc:
        why = getattr(exc, "message", "") or str(exc) or type(exc).__name__
    os.write(write_end, why.encode()[:500])
    os._exit(0)
os.close(write_end)
why = b""
while chunk := os.read(read_end, 4096):
    why += chunk
_, status = os.waitpid(pid, 0)
if os.waitstatus_to_exitcode(status) != 0:
    why = why or b"the child died"
out["executor.seccomp"] = "refused: " + why.decode(errors="replace") if why else "held"
abi = landlock.abi_version()
out["executor.landlock"] = f"held (ABI {abi})" if abi > 0 else "refused: no Landlock system calls"
print(json.dumps(out))
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class EmulationReport:
    """The platform of a contract run and, when emulated, what each guarantee got."""

    platform: str
    emulated: bool
    probed: tuple[tuple[str, str], ...] = ()  # (guarantee, what the emulated process got)

    def by_simulation(self) -> tuple[Guarantee, ...]:
        """The guarantees emulation refused: proven another way, and named in the report."""
        refused = {name for name, got in self.probed if not got.startswith("held")}
        return tuple(g for g in GUARANTEES if g.name in refused)

    def to_dict(self) -> dict[str, Any]:
        return {
            "platform": self.platform,
            "emulated": self.emulated,
            "under_emulation": dict(self.probed),
            "proven_by_simulation": {g.name: g.proof for g in self.by_simulation()},
        }

    def lines(self) -> list[str]:
        """What the suite's output says of the guarantees emulation could not hold."""
        if not self.emulated:
            return []
        out = [f"{self.platform} ran under qemu-user emulation"]
        for guarantee in self.by_simulation():
            got = dict(self.probed)[guarantee.name]
            out.append(
                f"proven by simulation: {guarantee.name} ({guarantee.what}; under emulation {got}); {guarantee.proof}"
            )
        return out


def image_platform(inspected: Mapping[str, Any]) -> str:
    """The platform of an image as the engine's inspect reports it."""
    return f"{inspected.get('Os') or 'linux'}/{architecture_of_machine(str(inspected.get('Architecture') or ''))}"


def probe(engine: DockerApi, image_id: str, *, runtime: str | None = None) -> EmulationReport:
    """The platform of ``image_id``; for a foreign one, what the emulated executor was granted."""
    inspected = engine.inspect_image(image_id) or {}
    platform = image_platform(inspected)
    if platform == native_platform():
        return EmulationReport(platform=platform, emulated=False)
    code, out, err = engine.run(
        image_id,
        ["python3", "-I", "-c", PROBE],
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": "rw,size=16m"},
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        timeout=300,
        runtime=runtime,
    )
    text = out.decode(errors="replace").strip().splitlines()
    try:
        found = json.loads(text[-1]) if code == 0 and text else {}
    except ValueError:
        found = {}
    if not isinstance(found, dict) or set(found) != {g.name for g in GUARANTEES}:
        detail = (err or out).decode(errors="replace").strip()[-300:]
        found = {g.name: f"refused: the probe did not run ({detail or f'exit {code}'})" for g in GUARANTEES}
    return EmulationReport(
        platform=platform, emulated=True, probed=tuple(sorted((k, str(v)) for k, v in found.items()))
    )
