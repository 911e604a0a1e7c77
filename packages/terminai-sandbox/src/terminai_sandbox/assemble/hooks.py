"""The shell hooks mmdebstrap runs inside the Debian base: pure text derived from the spec.

They are part of what the base stage declares (their text enters its cache key), so a
change here is a change of the base's inputs and of ``layers.lock``.
"""

from __future__ import annotations

from terminai_sandbox.assemble.spec import ImageSpec

#: Debian's maintainer scripts byte-compile the Python modules they install in parallel
#: batches; marshal output depends on what the compiling process saw before (reference
#: counts decide its FLAG_REF bits), so the same lock gave different .pyc bytes from run to
#: run. The image's python3 recompiles exactly those files again, one process, sorted order,
#: fixed hash seed: measured identical across runs and hosts.
RECOMPILE_HOOK = (
    'find "$1/usr" -path "*/__pycache__/*.pyc" | LC_ALL=C sort | '
    'sed -e "s#^$1##" -e "s#/__pycache__/\\([^/]*\\)\\.cpython-[0-9]*\\.pyc\\$#/\\1.py#" '
    '> "$1/tmp/terminai-pyc.list" && if [ -s "$1/tmp/terminai-pyc.list" ]; then '
    'PYTHONHASHSEED=0 chroot "$1" /usr/bin/python3 -m compileall -q -f -j 1 '
    "--invalidation-mode checked-hash -i /tmp/terminai-pyc.list; fi"
)


#: mmdebstrap cleanup steps the build skips: the customize hooks remove the package lists
#: and the .debs themselves, so no 'apt-get clean' runs (it would recreate the lists' lock in
#: the root). Part of the base stage's declared inputs, like the hooks.
MMDEBSTRAP_SKIP = ("cleanup/apt/lists", "cleanup/apt/cache")


def base_hooks(spec: ImageSpec, source_date_epoch: int) -> tuple[str, ...]:
    """Add the image user, recompile Debian's ``.pyc`` files, scrub what differs per build."""
    days = source_date_epoch // 86400
    u, g, home = spec.uid, spec.gid, spec.home
    return (
        f"echo '{spec.user}:x:{u}:{g}::{home}:/bin/sh' >> \"$1/etc/passwd\" && "
        f"echo '{spec.user}:x:{g}:' >> \"$1/etc/group\" && "
        f"echo '{spec.user}:*:{days}:0:99999:7:::' >> \"$1/etc/shadow\" && "
        f"echo '{spec.user}:!::' >> \"$1/etc/gshadow\" && "
        f'mkdir -p "$1{home}" "$1{spec.workdir}" && chown {u}:{g} "$1{home}" "$1{spec.workdir}"',
        RECOMPILE_HOOK,
        # Scrub what differs between builds or leaks the build host. Not the root's /tmp: it
        # holds mmdebstrap's own APT_CONFIG until its cleanup phase, which empties /tmp after
        # 'apt-get clean'; without that file the clean runs on the host's apt cache.
        'rm -rf "$1"/var/log/* "$1"/var/cache/ldconfig/aux-cache "$1"/var/cache/apt/*.bin '
        '"$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old "$1"/var/tmp/* '
        '"$1"/var/lib/dbus/machine-id && : > "$1/etc/machine-id" && echo sandbox > "$1/etc/hostname" && '
        ': > "$1/etc/resolv.conf"',
    )
