"""Layer 6, the OS boundary of one run (numbered steps, applied in this order).

The Python layers above are defence in depth; this layer assumes arbitrary native code
in the run. The zygote prepares what can be prepared once (``prepare``); every run then
takes the steps below in a process forked from it:

6a  namespaces: the run's keeper unshares PID, IPC, network and UTS namespaces (the
    last named "sandbox"; and a user namespace when not root) and forks the sandboxed process as PID 1 of them
    (``namespaces.py``; unavailable in an unprivileged container, reported); as root,
    the zygote unshares them itself, forks the sandboxed process straight into them
    and returns to its own (``run_namespaces_home``: one fork per run, no keeper); with them,
    the sandboxed process gets a root of its own ("minimal-root", ``rootfs.py``): a
    mount namespace whose root holds only the read paths below, the injected API's
    paths and the scratch tmpfs, at the same paths, and a ``/proc`` of its own PID
    namespace, so it cannot learn which other files or processes exist;
6b  descriptors: stdio to /dev/null, every descriptor but the run's two pipes closed;
6c  environment emptied, working directory ``/`` (or the scratch directory);
6d  not dumpable: other processes of the same uid cannot read this one's /proc files;
6e  no_new_privs, then root drops to the configured uid/gid and every capability goes;
6f  dies with its parent (the zygote's kill of the keeper takes the run with it);
6g  resource limits: address space, CPU, file size, descriptors, no processes, no core,
    no locked memory, no message queues;
6h  Landlock: reads confined to the read set (``read_set``: the interpreter, its
    standard library without any site-packages, this package, RestrictedPython, the
    shared libraries, time zone data) and the injected API's own paths; writes to the
    scratch directory only; no TCP; signals and abstract unix sockets scoped to the run
    (kernel ABI permitting, reported);
6i  seccomp: a default-deny allowlist compiled by libseccomp (``seccomp.py``).

Steps 6b-6e, the common part of 6h's ruleset and the run's root up to the caller's paths
are taken before the caller's setup arrives (``build_root``, ``harden_early``), the rest
(the root entered with the caller's paths at neutral places, ``enter_root``; the
injected API built; then 6e-6i) once it has (``harden``). A step
that cannot be applied where it must be fails the run closed; optional steps (6a and its
root, 6h) report what they could not do in ``Isolation.notes``. ``STEPS`` names each for
the assume-breach tests, which switch them off one by one (``orphans`` is the zygote's
sweep); production never skips any.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import sysconfig
from dataclasses import dataclass, field

import RestrictedPython

import terminai_apts
from terminai_apts.executor.os_layer import landlock, limits, namespaces, rootfs, seccomp
from terminai_apts.executor.policy import MIB, SandboxConfig

STEPS: tuple[str, ...] = (
    "namespaces", "minimal-root", "descriptors", "environment", "dumpable", "privileges",
    "parent-death", "rlimits", "landlock", "seccomp", "orphans",
)  # fmt: skip
_EXTRA_READ = ("/usr/share/zoneinfo", "/etc/localtime", "/dev/urandom", "/dev/null")
# Other packages' homes: never part of a run's read set, even inside the stdlib's directory
# (a base interpreter's site-packages held private keys of test suites).
_SITE_DIRS = ("site-packages", "dist-packages")


@dataclass(frozen=True, slots=True, kw_only=True)
class Hardening:
    """What the zygote prepared for every run it forks."""

    filters: dict[bool, bytes]  # scratch allowed? -> compiled seccomp program
    landlock_abi: int
    read_paths: tuple[str, ...]  # what Landlock lets a run read (directories whole)
    # The same for a run inside its own root, where an empty directory already covers
    # every hidden site-packages: the directories that hold one are allowed whole.
    rooted_read_paths: tuple[str, ...] = ()
    root: rootfs.Plan | None = None  # what each run's own root holds (step 6a)
    skip: frozenset[str] = field(default=frozenset())


def prepare(skip: frozenset[str] = frozenset()) -> Hardening:
    """Compile the filters and compute the read set; called once the zygote has loaded
    everything a run may use (the read set names the shared libraries mapped by then)."""
    unknown = skip - set(STEPS)
    if unknown:
        raise ValueError(f"unknown isolation steps: {sorted(unknown)}")
    filters = {} if "seccomp" in skip else {s: seccomp.compile_filter(seccomp.rules(scratch=s)) for s in (False, True)}
    seccomp.warm()
    abi = 0 if "landlock" in skip else landlock.abi_version()
    reads = read_set()
    root = None if "minimal-root" in skip else rootfs.plan(reads.paths, hidden=reads.hidden)
    return Hardening(
        filters=filters,
        landlock_abi=abi,
        read_paths=reads.expanded(),
        rooted_read_paths=reads.paths,
        root=root,
        skip=skip,
    )


@dataclass(frozen=True, slots=True)
class ReadSet:
    """What a run may read (real paths), and the directories inside them that stay out."""

    paths: tuple[str, ...]
    hidden: tuple[str, ...]

    def expanded(self) -> tuple[str, ...]:
        """The same set for Landlock, which can only allow: a directory that holds a
        hidden one is allowed entry by entry, without it."""
        out: list[str] = []
        for path in self.paths:
            inside = {os.path.basename(h) for h in self.hidden if os.path.dirname(h) == path}
            if not inside:
                out.append(path)
                continue
            with os.scandir(path) as entries:
                out += sorted(e.path for e in entries if e.name not in inside)
        return tuple(sorted(set(out)))


def read_set() -> ReadSet:
    """Exactly what a run needs to read, never ``sys.path`` as a whole (it may hold a
    script's directory) nor any site-packages: the interpreter, its standard library
    (with its compiled modules), the directories of this package and of the packages it
    requires (``DEPENDENCIES``: RestrictedPython, google-re2's ``re2``), the
    system's shared-library directory (where the C library lives: a module imported late
    finds its libraries there; what the zygote mapped elsewhere, a ``libpython`` say, is
    mapped in every run already), time-zone data and the two devices. The injected API's
    paths are added per run."""
    stdlib = {os.path.realpath(d) for d in (os.path.dirname(os.__file__), sysconfig.get_config_var("DESTSHARED")) if d}
    packages = {os.path.realpath(os.path.dirname(m.__file__ or "")) for m in (terminai_apts, RestrictedPython)}
    packages.update(_dependency_paths())
    mapped = _mapped_files()
    system = {os.path.dirname(f) for f in mapped if os.path.basename(f).startswith("libc.so")}
    found = {os.path.realpath(sys.executable), *stdlib, *packages, *system, *_EXTRA_READ}
    hidden = {os.path.join(d, name) for d in stdlib for name in _SITE_DIRS if os.path.isdir(os.path.join(d, name))}
    return ReadSet(
        paths=tuple(sorted(p for p in found if p and os.path.exists(p))),
        hidden=tuple(sorted(hidden)),
    )


# What this package requires (its pyproject's dependencies), by import name; a unit test
# holds this to the installed distribution's metadata (read here, importlib.metadata would
# cost the zygote's start-up about 10 ms).
DEPENDENCIES = ("RestrictedPython", "re2")


def _dependency_paths() -> set[str]:
    """Where the packages this one requires live (their package directories)."""
    found: set[str] = set()
    for name in DEPENDENCIES:
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue
        for location in spec.submodule_search_locations or ([spec.origin] if spec.origin else []):
            found.add(os.path.realpath(location))
    return found


def _mapped_files() -> set[str]:
    """The real paths of the files this process has mapped (the interpreter and its
    shared objects), from ``/proc/self/maps``."""
    named = set()  # each file once: it has a line per mapped segment (about five)
    with open("/proc/self/maps") as fh:
        for line in fh:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith("/") and not fields[5].rstrip().endswith("(deleted)"):
                named.add(fields[5].rstrip("\n"))
    return {os.path.realpath(path) for path in named if os.path.isfile(path)}


@dataclass(slots=True)
class Isolation:
    """What a run got (reported to the host in every result)."""

    namespaces: bool = False
    root: bool = False
    landlock: int = 0
    seccomp: bool = False
    notes: list[str] = field(default_factory=list)

    def layers(self) -> list[str]:
        out = ["namespaces"] if self.namespaces else []
        if self.root:
            out.append("minimal-root")
        if self.landlock:
            out.append(f"landlock-abi{self.landlock}")
        if self.seccomp:
            out.append("seccomp")
        return out


def run_namespaces_home(hardening: Hardening) -> namespaces.Home | None:
    """Where the zygote can fork each run straight into its namespaces (root, step 6a not
    skipped): its own namespaces, to come back to after each fork. None: every run's
    keeper enters them (``enter_namespaces``)."""
    if "namespaces" in hardening.skip or os.geteuid() != 0:
        return None
    try:
        return namespaces.Home()
    except OSError:
        return None


def enter_namespaces(hardening: Hardening, isolation: Isolation) -> bool:
    """Step 6a, in the keeper. True when the keeper must fork the sandboxed process."""
    if "namespaces" in hardening.skip:
        return False
    isolation.namespaces = namespaces.enter_run_namespaces()
    if not isolation.namespaces:
        isolation.notes.append("namespaces unavailable: processes and IPC rest on seccomp and the kill")
    return isolation.namespaces


def build_root(hardening: Hardening, isolation: Isolation, base: str) -> rootfs.RunRoot | None:
    """Step 6a's root, in the sandboxed process, while it waits for a caller: only with
    the run's namespaces (its PID namespace gives it a /proc of its own; without a user
    or PID namespace of its own the run's mounts would not go with it). Optional like
    the namespaces: where mounts are refused (a security module, a container's profile)
    the run goes on without it, and says so."""
    if hardening.root is None:
        return None
    if isolation.namespaces:
        try:
            return rootfs.RunRoot.build(base, hardening.root)
        except OSError as exc:
            isolation.notes.append(
                f"no root of its own ({os.strerror(exc.errno) if exc.errno else 'refused'}): "
                "metadata outside the run rests on the container"
            )
            return None
    isolation.notes.append("no root of its own: metadata outside the run rests on the container")
    return None


def harden_early(hardening: Hardening, *, keep: set[int], rooted: bool = False) -> landlock.Ruleset | None:
    """Steps 6b-6e, and the common part of 6h's ruleset: what needs no caller setup is
    done while the run waits for one. ``rooted``: the run has its own root (built
    first), so the read set's directories can be allowed whole."""
    skip = hardening.skip
    if "descriptors" not in skip:
        limits.close_inherited(keep)
    if "environment" not in skip:
        os.environ.clear()
        os.chdir("/")
    if "dumpable" not in skip:
        limits.set_not_dumpable()
    limits.set_no_new_privs()
    if not hardening.landlock_abi:
        return None
    ruleset = landlock.Ruleset(hardening.landlock_abi)
    ruleset.allow(hardening.rooted_read_paths if rooted and hardening.rooted_read_paths else hardening.read_paths)
    return ruleset


def enter_root(root: rootfs.RunRoot | None, isolation: Isolation, places: tuple[tuple[str, str], ...]) -> None:
    """Step 6a's root, finished once the caller's setup is known: the injected API's files
    bound read-only where the run will see them, then entered (raises: the run fails)."""
    if root is None:
        return
    for source, inside in places:
        root.add_at(source, inside)
    root.enter()
    isolation.root = True


def warm_harden() -> None:
    """Read what ``harden`` will set (limits, capabilities), changing nothing: the pages
    its code touches are copied while the run waits, not on its caller's path."""
    limits.read_limits()
    namespaces.read_capabilities()


def harden(
    hardening: Hardening,
    isolation: Isolation,
    *,
    ruleset: landlock.Ruleset | None,
    config: SandboxConfig,
    api_paths: tuple[str, ...],
    scratch: str | None,
    parent: int | None = None,
) -> None:
    """Steps 6e-6i once the caller's setup is known (and the run's root entered, if it
    has one); raises (the run fails) on any error. ``parent``: a pidfd of the run's
    parent when that is outside the run's PID namespace (``limits.die_with_parent``)."""
    skip = hardening.skip
    if scratch:
        os.chdir(scratch)
    if "privileges" not in skip:
        limits.drop_privileges(config.unprivileged_uid, config.unprivileged_gid)
        namespaces.drop_capabilities()
    if "parent-death" not in skip:
        limits.die_with_parent(parent)
    if "rlimits" not in skip:
        limits.set_rlimits(
            memory_mb=config.max_memory_mb,
            cpu_seconds=config.effective_cpu_seconds,
            max_open_files=config.max_open_files,
            file_bytes=config.scratch_file_mb * MIB if scratch else 0,
        )
    if ruleset is not None:
        ruleset.allow(api_paths)
        ruleset.allow((scratch,) if scratch else (), write=True)
        ruleset.restrict()
        isolation.landlock = ruleset.abi
    elif "landlock" not in skip:
        if scratch:
            raise OSError("a scratch directory needs Landlock, which this kernel does not offer")
        isolation.notes.append("Landlock unavailable: reads rest on file permissions, writes on seccomp")
    if "seccomp" not in skip:
        seccomp.load_filter(hardening.filters[scratch is not None])
        isolation.seccomp = True
