"""Where inside the session a mount or tmpfs may go: normalised, then held to an allowlist.

A mount over the toolset or the system (``/usr/local/lib/python3.13/dist-packages/terminai_apts``,
``/etc/ld.so.preload``, ``/usr/local/bin``) would replace the verified code with the
workspace's, and a tmpfs over ``/proc`` or ``/sys`` would hide what the engine mounts there.
Targets are compared after normalising (``/./proc`` and ``//proc`` are ``/proc`` to the
kernel), and must lie under :data:`ALLOWED_UNDER`, under the working directory, or be the
source's own path (``SANDBOX_MOUNTS=/data/in`` mounts it at ``/data/in``, as the launcher we
replace does); :data:`SYSTEM_TREES` are refused in every case.
"""

from __future__ import annotations

# The documented places for the session's data (docs/SECURITY.md, "Mounts").
ALLOWED_UNDER = ("/workspace", "/downloads", "/mnt", "/data", "/media", "/srv", "/home/sandbox")
# The image's code and the kernel's and engine's interfaces: never a target, however reached.
SYSTEM_TREES = (
    "/usr",
    "/etc",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/var",
    "/boot",
)
# The session's own tmpfs mounts: a path inside is fine, the mount point itself is taken.
TAKEN = ("/tmp", "/home/sandbox")


def normal(path: str) -> str | None:
    """``path`` as the kernel reads it (no empty or ``.`` parts); None when not absolute or with ``..``."""
    if not path.startswith("/"):
        return None
    parts = [part for part in path.split("/") if part not in ("", ".")]
    if ".." in parts:
        return None
    return "/" + "/".join(parts)


def within(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def problem(target: str, *, cwd: str | None, source: str | None = None) -> str | None:
    """Why ``target`` may not be mounted over (None when it may); ``cwd`` is the working directory."""
    path = normal(target)
    if path is None:
        return f"target {target!r} is not an absolute path without '..'"
    shown = path if path == target else f"{target!r} (which is {path})"
    if path == "/":
        return f"target {shown} would replace the whole image"
    for tree in SYSTEM_TREES:
        if within(path, tree):
            return f"target {shown} lies in {tree}, which holds the image's code or the kernel's interfaces"
    if path in TAKEN:
        return f"target {shown} is the session's own tmpfs; mount inside it instead"
    if cwd is not None and path == normal(cwd):
        return f"target {shown} is the working directory, which every session mounts already"
    if any(within(path, place) for place in ALLOWED_UNDER):
        return None
    if cwd is not None and within(path, cwd):
        return None
    if source is not None and path == normal(source):
        return None
    return f"target {shown} is outside the places a session's data may go ({', '.join(ALLOWED_UNDER)})"
