"""Per-project layer: ``.terminai/sandbox.Dockerfile`` built FROM the verified digest, adding files only.

The project folder is written by the agent, so its Dockerfile is hostile input. It is read
without following links (a regular file inside the project, at most 1 MiB), copied out of
the project for the build, and parsed with ``dockerfile-parse``; what that parser and the
engine's builder could read differently (parser directives, heredocs) is refused. Accepted:
``ARG BASE_IMAGE`` then one ``FROM ${BASE_IMAGE}`` (no stage name, no platform), then
``RUN`` (no flags), ``COPY``/``ADD`` from the build context (no ``--from``, ``--chmod``,
``--link``, no URL), ``ENV`` of names that are not reserved, ``ARG``, ``WORKDIR``, ``LABEL``
outside ``dev.terminai.*``, ``EXPOSE``, and ``USER`` only if the last one gives back the
image's own user (package installs need root while building; the session's user never
comes from the image anyway: :func:`~terminai_sandbox.engine.flags.session_flags`).
Every other instruction is refused, naming the file, the line and the instruction.

After the build the derived image itself is checked (:func:`derived_problems`): its layers
start with the verified image's, its user, entrypoint, command, health check, reserved
environment and ``dev.terminai.*`` labels are the verified ones, and no file its own layers
add is setuid or setgid, carries file capabilities, is a device node, replaces the toolset,
the interpreter or the entrypoint, or is a ``.pth``/``sitecustomize`` module that every
Python start would run. The result is tagged under a project-specific name (never the
official tag), cached by the hash of the Dockerfile and the base digest, built without
network, labelled with what it derives from, and checked again when reused.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from terminai_apts.records import frozen_record

from terminai_sandbox.engine.protocol import ImageFacts
from terminai_sandbox.errors import EngineError, LaunchError
from terminai_sandbox.launch import reserved_env
from terminai_sandbox.launch.held_mounts import read_customization

TYPE_CHECKING = False  # not `from typing import ...`: a launch never imports typing (~3 ms)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from terminai_sandbox.engine.protocol import Engine

DOCKERFILE = Path(".terminai") / "sandbox.Dockerfile"
DERIVED_LABEL = "dev.terminai.derived-from"
PROJECT_LABEL = "dev.terminai.project"
_BASE = ("${BASE_IMAGE}", "$BASE_IMAGE")
_ALLOWED = frozenset({"ARG", "FROM", "RUN", "COPY", "ADD", "ENV", "WORKDIR", "LABEL", "EXPOSE", "USER"})
_WHY = {
    "ENTRYPOINT": "the image's entrypoint runs the health check before any command",
    "CMD": "the session's command comes from `terminai-sandbox run`",
    "HEALTHCHECK": "the image's health check is part of what was verified",
    "SHELL": "it changes how every later RUN is read",
    "ONBUILD": "it runs in builds nobody reviews",
    "VOLUME": "the session's mounts come from SANDBOX_MOUNTS only",
    "STOPSIGNAL": "the launcher forwards signals itself",
    "MAINTAINER": "it is deprecated; use LABEL",
}
# Paths a project layer may not write: the toolset, the interpreter and its start-up hooks,
# the entrypoint and the dynamic loader's preload list.
_PROTECTED_PREFIXES = (
    "usr/local/lib/python3.13/dist-packages/terminai_apts",
    "usr/local/lib/python3.13/dist-packages/apts",
    "usr/local/bin/terminai-",
    "usr/local/bin/apts",
    "usr/bin/python3",
    "usr/lib/python3.13/",
    "etc/ld.so.preload",
    "etc/python3",
)
_STARTUP_NAMES = ("sitecustomize.py", "usercustomize.py")
_DIRECTIVE = re.compile(r"^\s*[A-Za-z][A-Za-z0-9_-]*\s*=")
# Whitespace other than space, tab and the line ends (a no-break space, \v, \f...).
_ODD_SPACE = re.compile(r"[^\S \t\r\n]")


def project_dockerfile(project: Path) -> Path | None:
    """The project's Dockerfile when it has one (what it is, is checked when it is read)."""
    path = project / DOCKERFILE
    return path if os.path.lexists(path) else None


def read_dockerfile(project: Path) -> bytes:
    """The Dockerfile's bytes, read without following links: a regular file inside the project."""
    data = read_customization(str(project), DOCKERFILE.name, error=LaunchError)
    if data is None:
        raise LaunchError(f"{project / DOCKERFILE} disappeared while the session started")
    return data


def _refuse(dockerfile: Path, line: int, what: str, hint: str) -> LaunchError:
    return LaunchError(f"{dockerfile} line {line}: {what}", hint=hint)


def _words(value: str) -> list[str]:
    import shlex  # noqa: PLC0415  (a project layer only)

    try:
        return shlex.split(value)
    except ValueError:
        return value.split()


@frozen_record
class DockerfileReading:
    """What the checks read a Dockerfile to set: the environment names and label keys, in
    order, and the last user (the builder must read the same: see the oracle test)."""

    env: tuple[str, ...]
    labels: tuple[str, ...]
    user: str | None


def check_dockerfile(text: str, dockerfile: Path, *, base_user: str) -> DockerfileReading:
    """Refuse what a project layer may not do (see the module docstring); return what it sets."""
    import io  # noqa: PLC0415  (a project layer only)

    from dockerfile_parse import DockerfileParser  # noqa: PLC0415

    odd = _ODD_SPACE.search(text)
    if odd is not None:
        # the builder splits words on every Unicode space, shlex on a few: one name each
        raise _refuse(
            dockerfile,
            text.count("\n", 0, odd.start()) + 1,
            f"the space character U+{ord(odd.group()):04X} is refused",
            "use plain spaces and tabs; builders split words on other spaces differently",
        )
    if text.rstrip().endswith("\\"):
        raise _refuse(
            dockerfile,
            len(text.splitlines()),
            "the file ends in a line continuation",
            "remove the trailing backslash; the builder drops what it would continue",
        )
    parser = DockerfileParser(fileobj=io.BytesIO(text.encode()))
    structure = parser.structure
    seen_from = False
    last_user: str | None = None
    env: list[str] = []
    labels: list[str] = []
    for item in structure:
        instruction, value, line = item["instruction"].upper(), item["value"], item["startline"] + 1
        if instruction == "COMMENT":
            if not seen_from and _DIRECTIVE.match(value):
                raise _refuse(
                    dockerfile,
                    line,
                    f"the parser directive '# {value}' is refused",
                    "a syntax= directive runs a builder image, escape= changes how the file is read; remove it",
                )
            continue
        if "<<" in value and instruction in ("RUN", "COPY", "ADD"):
            raise _refuse(
                dockerfile,
                line,
                f"{instruction} with a heredoc (<<) is refused",
                "builders read heredocs differently; put the script in a file and COPY it",
            )
        if instruction not in _ALLOWED:
            why = _WHY.get(instruction, "it is not an instruction a project layer needs")
            raise _refuse(
                dockerfile,
                line,
                f"{instruction} is refused: {why}",
                "a project layer may RUN, COPY/ADD from the project, and set ENV, ARG, WORKDIR, LABEL, EXPOSE",
            )
        words = _words(value)
        if instruction == "FROM":
            if seen_from:
                raise _refuse(
                    dockerfile, line, "a second FROM is refused", "a project layer is one stage on the verified image"
                )
            if len(words) != 1 or words[0] not in _BASE:
                raise _refuse(
                    dockerfile,
                    line,
                    f"FROM {value} is refused: it must be exactly FROM ${{BASE_IMAGE}}",
                    "the launcher passes the verified image as BASE_IMAGE; no stage name, platform or other image",
                )
            seen_from = True
            continue
        if not seen_from:
            if instruction == "ARG" and words == ["BASE_IMAGE"]:
                continue
            raise _refuse(
                dockerfile,
                line,
                f"{instruction} before FROM is refused",
                "start with 'ARG BASE_IMAGE' and 'FROM ${BASE_IMAGE}'",
            )
        if instruction == "RUN" and value.lstrip().startswith("--"):
            raise _refuse(
                dockerfile,
                line,
                f"RUN {words[0]} is refused",
                "RUN flags (--mount, --network, --security) reach outside the build; use a plain RUN",
            )
        if instruction in ("COPY", "ADD"):
            for word in words:
                if word.startswith("--") and not word.startswith("--chown="):
                    raise _refuse(
                        dockerfile,
                        line,
                        f"{instruction} {word} is refused",
                        "copy from the project folder only (--from, --chmod, --link reach other images or set modes)",
                    )
                if "://" in word or word.startswith("git@"):
                    raise _refuse(
                        dockerfile, line, f"{instruction} from {word} is refused", "copy files of the project"
                    )
        if instruction in ("ENV", "LABEL", "USER") and "$" in (value if instruction == "USER" else _keys(words)):
            # the builder substitutes variables there (`ENV ${N}PATH=...` sets PYTHONPATH
            # when N=PYTHON): a name is checked only as written
            raise _refuse(
                dockerfile,
                line,
                f"a variable in the {'user' if instruction == 'USER' else 'name'} of {instruction} is refused",
                "write the name out; variables are fine in ENV and LABEL values",
            )
        if instruction == "ENV":
            names = [w.split("=", 1)[0] for w in words] if "=" in (words[0] if words else "") else words[:1]
            env.extend(names)
            for name in names:
                if reserved_env.reserved(name) is not None:
                    raise _refuse(
                        dockerfile,
                        line,
                        f"ENV {name} is refused: it changes which code the verified toolset runs",
                        f"remove {name}; ordinary variables (ENV FOO=bar) are fine",
                    )
        if instruction == "LABEL":
            for word in words:
                labels.append(word.split("=", 1)[0])
                if word.split("=", 1)[0].lower().startswith("dev.terminai."):
                    raise _refuse(
                        dockerfile,
                        line,
                        f"LABEL {word.split('=', 1)[0]} is refused: dev.terminai.* is the launcher's",
                        "use your own label prefix",
                    )
        if instruction == "USER":
            last_user = value.strip()
    if not seen_from:
        raise LaunchError(
            f"{dockerfile} must start FROM ${{BASE_IMAGE}} (found no FROM)",
            hint="the launcher passes the verified image as BASE_IMAGE; add 'ARG BASE_IMAGE' first",
        )
    if last_user is not None and last_user != base_user:
        raise LaunchError(
            f"{dockerfile}: the last USER is {last_user!r}, not the image's own user {base_user!r}",
            hint=f"end with 'USER {base_user}' after the steps that need root",
        )
    return DockerfileReading(env=tuple(env), labels=tuple(labels), user=last_user)


def _keys(words: list[str]) -> str:
    """The names of ``NAME=value`` words (the first word alone in the legacy ``ENV NAME value``)."""
    if words and "=" not in words[0]:
        return words[0]
    return " ".join(word.split("=", 1)[0] for word in words)


def _config(document: Mapping[str, Any]) -> Mapping[str, Any]:
    config = document.get("Config")
    return config if isinstance(config, dict) else {}


def _env(config: Mapping[str, Any]) -> dict[str, str]:
    return dict(item.partition("=")[::2] for item in config.get("Env") or [] if isinstance(item, str))


def config_problems(base: Mapping[str, Any], derived: Mapping[str, Any]) -> list[str]:
    """Where the derived image's config or layers differ from what a project layer may change."""
    problems = []
    base_layers = (base.get("RootFS") or {}).get("Layers") or []
    layers = (derived.get("RootFS") or {}).get("Layers") or []
    if not base_layers or layers[: len(base_layers)] != base_layers:
        problems.append("its layers do not start with the verified image's")
    old, new = _config(base), _config(derived)
    for key in ("User", "Entrypoint", "Cmd", "Healthcheck"):
        if (old.get(key) or None) != (new.get(key) or None):
            problems.append(f"its {key} is {new.get(key)!r}, not the verified {old.get(key)!r}")
    old_env, new_env = _env(old), _env(new)
    for name in sorted(set(old_env) | set(new_env)):
        if reserved_env.reserved(name) is not None and old_env.get(name) != new_env.get(name):
            problems.append(f"it changes the reserved variable {name}")
    old_labels = {k: v for k, v in (old.get("Labels") or {}).items() if k.startswith("dev.terminai.")}
    new_labels = {
        k: v
        for k, v in (new.get("Labels") or {}).items()
        if k.startswith("dev.terminai.") and k not in (DERIVED_LABEL, PROJECT_LABEL)
    }
    if old_labels != new_labels:
        problems.append("its dev.terminai.* labels differ from the verified image's")
    return problems


def layer_problems(members: list[tuple[str, int, str, bool]]) -> list[str]:
    """What the project's own layers add that they may not: (name, mode, type, has file capabilities)."""
    problems = []
    for name, mode, kind, capabilities in members:
        path = name.lstrip("./")
        base = path.rsplit("/", 1)[-1]
        target = path.replace(".wh.", "")
        if mode & (stat.S_ISUID | stat.S_ISGID) and kind == "file":
            problems.append(f"/{path} is setuid or setgid")
        if capabilities:
            problems.append(f"/{path} carries file capabilities")
        if kind == "device":
            problems.append(f"/{path} is a device node or FIFO")
        if (
            any(target.startswith(prefix) for prefix in _PROTECTED_PREFIXES)
            or path == "usr/local/bin/terminai-entrypoint"
        ):
            problems.append(f"/{path} changes the verified toolset, interpreter or entrypoint")
        elif base.endswith(".pth") or base in _STARTUP_NAMES:
            problems.append(f"/{path} would run at every Python start")
    return problems


def build_project_layer(engine: Engine, project: Path, base_pinned: str, base_digest: str) -> tuple[ImageFacts, bool]:
    """Build (or reuse) the project image; return (image, built_now)."""
    dockerfile = project / DOCKERFILE
    data = read_dockerfile(project)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LaunchError(f"{dockerfile} is not UTF-8 text") from None
    base = engine.image_document(base_pinned)
    if base is None:
        raise LaunchError(f"the engine no longer holds the verified image {base_pinned}")
    check_dockerfile(text, dockerfile, base_user=str(_config(base).get("User") or ""))
    import hashlib  # noqa: PLC0415  (a project layer only: hashlib loads OpenSSL)

    key = hashlib.sha256(data + b"\0" + base_digest.encode()).hexdigest()[:16]
    name = "terminai-project/" + hashlib.sha256(str(project.resolve()).encode()).hexdigest()[:12]
    tag = f"{name}:{key}"
    existing = engine.inspect(tag)
    # A tag can be re-pointed by anyone with engine access: reuse it only if it says what it
    # derives from, and its config still passes.
    if existing is not None and existing.labels.get(DERIVED_LABEL) == base_digest:
        document = engine.image_document(existing.id)
        if document is not None and not config_problems(base, document):
            return existing, False
    import tempfile  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="terminai-project-") as private:
        copy = Path(private) / "sandbox.Dockerfile"
        copy.write_bytes(data)
        built = engine.build(
            context=project,
            dockerfile=str(copy),
            build_args={"BASE_IMAGE": base_pinned},
            tag=tag,
            labels={DERIVED_LABEL: base_digest, PROJECT_LABEL: str(project.resolve())},
        )
        document = engine.image_document(built.id)
        problems = config_problems(base, document or {})
        if not problems:
            base_count = len((base.get("RootFS") or {}).get("Layers") or [])
            problems = layer_problems(engine.new_layer_members(tag, base_count, Path(private)))
    if problems:
        import contextlib  # noqa: PLC0415

        with contextlib.suppress(EngineError):  # already gone: nothing refused is left either way
            engine.remove(tag)
        raise LaunchError(
            f"the image built from {dockerfile} is refused: "
            + "; ".join(problems[:5])
            + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""),
            hint="a project layer may only add files on top of the verified image",
        )
    return built, True
