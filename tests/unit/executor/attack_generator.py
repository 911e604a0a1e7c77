"""Attack generation: random restricted programs that compose chains over everything the
sandbox can reach, run with the executor's real globals and compile policy, checked for
any forbidden object (``reachability.classify``) and for changes to the guards' state.

A program is a preamble (an attacker's toolkit: a ``str`` subclass that lies about its
prefix, one that spoofs hash and equality once, classes, a method that reads through
``super()``, a generator, an exception class, a decorator) and a chain of statements
``v<i> = <step>``. Each step takes a root or an earlier value and applies one move:

* attribute read through ``getattr`` with a name written as a plain ``str``, a lying
  subclass, a hash/eq spoof, ``bytes`` or ``bytearray``, or as ``x.name`` for public names;
* ``super()`` inside a method of a subclass, with any of those names;
* a call with an argument pattern (nothing, an int, a str, a class, an instance, itself);
* an item read, iteration (``next(iter())``, a comprehension, unpacking), a star call;
* class creation with the value as a base, the value as a decorator;
* raising and catching (the caught exception, or what a failed call raised);
* the json encoder and decoder hooks (``default=``, ``object_hook=``), which hand values to
  the program's callbacks;
* callback routes: a container (``[x]``, ``(x, x)``, or with ``--plant`` a list holding a
  forbidden object, standing for host code that would build one) handed by C to the
  program's functions (``sorted``/``min``/``max`` keys, ``map``, ``filter``, ``reduce``,
  ``groupby``, ``accumulate``, ``starmap``, ``cmp_to_key``, ``heapq`` keys, json hooks,
  ``re.sub``, ``defaultdict``, ``__eq__`` by ``in``, ``__lt__`` by ``sorted``, a
  generator's ``send``, ``yield from``, a ``with`` target, a ``match`` capture);
* ``str.format`` with the name as a field (``'{0.<name>!r}'``) and a nested format spec;
* ``type(x)`` and attributes of what it answers, ``setattr`` with any name form;
* the special reads in attribute syntax (``x.__class__``, ``x.__name__``,
  ``type(x).__name__``, ``x.__class__.<name>``), ``hasattr`` and ``delattr`` with any name
  form, ``staticmethod``/``classmethod`` around the value (alone and in a class body).

Every value a statement binds is classified, and so is everything the program's callbacks
stored (``caught``); a format field that reads a refused name and succeeds counts too. Run
it as a module (``--seed``, ``--seconds``, ``--mode``, ``--checks-off``, ``--plant``,
``--entry-checks-off``); it prints one JSON line. ``--checks-off`` restores the old guard
(names asked to the object itself, values unchecked, no entry checks): the generator must
then find an escape, which shows it can; ``--entry-checks-off --plant`` keeps every other
check and switches off only the checks at a function's entry: the callback routes must
then deliver a planted forbidden object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import sqlite3
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from RestrictedPython.compile import compile_restricted
from terminai_apts.executor.policy import FORBIDDEN_ATTR_PREFIXES, FORBIDDEN_ATTRS, Mode, modules_for
from terminai_apts.executor.python_layer import guards, sandbox_builtins, wrappers
from terminai_apts.executor.python_layer.entry_guard import ENTRY_GUARD_NAMES
from terminai_apts.executor.python_layer.transform import SandboxTransformer

from tests.unit.executor import reachability

PREAMBLE = """
u = '_' * 2
class Liar(str):
    def startswith(self, *a):
        return False
    def endswith(self, *a):
        return False
class Box:
    def __init__(self, *a, **k):
        self.a = a
    def get(self):
        return self.a
class Sub(Box):
    def up(self, name):
        return getattr(super(), name)
class Err(Exception):
    pass
def gen():
    yield 1
def deco(f):
    return f
caught = []
def keep(o):
    caught.append(o)
    return 0
def keep_star(*a, **k):
    caught.extend(a)
    caught.extend(k.values())
    return 0
class Eq:
    def __eq__(self, o):
        caught.append(o)
        return False
    def __lt__(self, o):
        caught.append(o)
        return False
def recv():
    while True:
        caught.append((yield))
"""
# hash/eq spoofing needs `hash`, which strict mode does not have
SPOOF = """
class Spoof(str):
    def __init__(self, v):
        self.passed = False
    def __hash__(self):
        if not self.passed:
            return hash(u + 'init' + u)
        return hash(str(self))
    def __eq__(self, o):
        if not self.passed:
            self.passed = True
            return True
        return str(self) == str(o)
"""

ROOTS_ALL = (
    "1", "'s'", "b'x'", "[1, 'a']", "{'k': 1}", "(1,)", "len", "isinstance", "getattr", "sorted",
    "Box", "Box(1)", "Sub", "Sub(1)", "gen()", "gen", "Err('x')", "Err", "deco", "keep", "caught",
    "Liar('x')", "lambda: 0", "range(3)", "zip([1], [2])", "map(len, ['a'])", "property", "super",
    "ValueError('v')", "KeyError", "enumerate([1])", "str", "int", "list", "dict", "tuple",
    "type", "hasattr", "setattr", "delattr", "staticmethod", "classmethod", "type(len)", "type(Box)",
)  # fmt: skip

NAMES = (
    "globals", "class", "dict", "self", "func", "code", "closure", "builtins", "subclasses",
    "mro", "bases", "base", "init", "reduce_ex", "reduce", "getattribute", "traceback",
    "context", "cause", "wrapped", "module", "qualname", "name", "doc", "get", "call", "new",
    "objclass", "defaults", "kwdefaults", "import", "loader", "spec", "build_class", "slots",
    "thisclass", "self_class", "prepare", "init_subclass", "class_getitem", "getstate",
)  # fmt: skip
PRIVATE = ("_fn", "_cls", "_bound", "_methods", "_attrs", "_data", "_items", "_meta", "_super", "_guard", "_formatter",
           "_lookup", "_helpers", "_label", "_api", "_usage", "_template", "_fget", "_shards")  # fmt: skip
PLAIN = ("gi_frame", "gi_code", "f_globals", "f_back", "tb_frame", "co_consts", "cr_frame", "ag_frame", "mro", "obj",
         "func", "args", "keywords", "default_factory", "fget", "real", "upper", "get", "copy", "fromkeys",
         "from_float", "most_common", "items", "values", "keys", "pop", "format", "format_map", "with_traceback",
         "group", "span", "re", "string", "pattern", "send", "throw", "close", "encode", "decode", "hits")  # fmt: skip
# callback routes: C hands the items of {c} (or other values of its own) to the program's
# functions; (modules needed, statement)
ROUTES: tuple[tuple[tuple[str, ...], str], ...] = (
    ((), "sorted({c}, key=keep)"),
    ((), "min({c}, key=keep)"),
    ((), "max({c}, key=lambda w: keep(w))"),
    ((), "list(map(keep, {c}))"),
    ((), "list(map(lambda *w: keep_star(*w), {c}))"),
    ((), "list(filter(keep_star, {c}))"),
    ((), "Eq() in {c}"),
    ((), "sorted(list({c}) + [Eq()])"),
    ((), "g{i} = recv()\nnext(g{i})\nlist(map(g{i}.send, {c}))"),
    ((), "match list({c}):\n    case [m{i}, *_]:\n        keep(m{i})"),
    ((), "match dict(zip('k', {c})):\n    case {{'k': m{i}}}:\n        keep(m{i})"),
    ((), "def yf{i}():\n    caught.append((yield from g{i}))\n    yield 0\ng{i} = iter({c})\nlist(yf{i}())"),
    ((), "with {x} as w{i}:\n    keep(w{i})"),
    (("functools",), "functools.reduce(lambda a, b: keep(b), {c}, 0)"),
    (("functools",), "sorted(list({c}) * 2, key=functools.cmp_to_key(lambda a, b: keep_star(a, b)))"),
    (("functools",), "list(map(functools.partial(keep_star, 1), {c}))"),
    (("itertools",), "list(itertools.groupby({c}, key=keep))"),
    (("itertools",), "list(itertools.starmap(keep_star, [{c}]))"),
    (("itertools",), "list(itertools.accumulate([0] + list({c}), lambda a, b: keep(b)))"),
    (("itertools",), "list(itertools.dropwhile(keep_star, {c}))"),
    (("heapq",), "heapq.nsmallest(1, {c}, key=keep)"),
    (("json",), "json.dumps({c}, default=keep)"),
    (("json",), "json.loads('{{\"a\": [1.5, 2]}}', object_pairs_hook=keep_star, parse_float=keep, parse_int=keep)"),
    (("re",), "re.sub('a', keep_star, 'a')"),
    (("collections",), "collections.defaultdict(keep_star)[1]"),
    # a container that gains another container's items (in C) while a loop runs over it
    (
        (),
        "xs{i} = []\nxs{i}.append(xs{i})\nfor w{i} in xs{i}:\n    if w{i} is xs{i}:\n        xs{i}.extend({c})\n"
        "    else:\n        caught.append(w{i})",
    ),
    (
        (),
        "xs{i} = [0, 0]\nfor w{i} in xs{i}:\n    if w{i} == 0 and len(caught) < 1000:\n        xs{i}[1:2] = {c}\n"
        "    caught.append(w{i})",
    ),
    (
        (),
        "d{i} = dict.fromkeys('ak', 0)\nfor w{i} in d{i}.values():\n    d{i}.update(zip('k', {c}))\n"
        "    caught.append(w{i})",
    ),
    # a name bound before its check, the refusal caught, then the name used
    (
        (),
        "try:\n    match list({c}):\n        case [m{i}, *_]:\n            pass\nexcept Exception:\n    pass\n"
        "caught.append(m{i})",
    ),
    ((), "try:\n    with {x} as m{i}:\n        pass\nexcept Exception:\n    pass\ncaught.append(m{i})"),
    (
        (),
        "try:\n    @next\n    @(lambda f: iter({c}))\n    def m{i}():\n        pass\nexcept Exception:\n    pass\n"
        "caught.append(m{i})",
    ),
)
CONTAINERS = ("[{x}]", "({x}, {x})", "[{x}, 1]")

ARGS = ("", "1", "'a'", "int", "Box", "Box()", "{X}", "1, 2", "'a', int", "*[1]", "**{'a': 1}")


def _name_text(rng: random.Random) -> tuple[str, str]:
    """(the plain name, an expression that spells it)."""
    kind = rng.random()
    if kind < 0.55:
        word = rng.choice(NAMES)
        return f"__{word}__", f"u + '{word}' + u"
    if kind < 0.8:
        name = rng.choice(PRIVATE)
        return name, f"'_' + '{name[1:]}'"
    name = rng.choice(PLAIN)
    return name, repr(name)


# read on purpose: they answer sandbox-safe values (a class the program may hold or a view, a name)
SAFE_SPECIALS = frozenset({"__class__", "__name__"})


def _forbidden(name: str) -> bool:
    return name not in SAFE_SPECIALS and (name in FORBIDDEN_ATTRS or name.startswith(FORBIDDEN_ATTR_PREFIXES))


def _name_form(rng: random.Random, spell: str, spoof: bool) -> str:
    forms = ["Liar({})", "Liar({})", "{}", "bytes({}, 'ascii')", "bytearray({}, 'ascii')"]
    if spoof:
        forms.append("Spoof({})")
    return rng.choice(forms).format(spell)


@dataclass
class Program:
    source: str
    format_checks: dict[str, str] = field(default_factory=dict)  # variable -> forbidden name read


THERMAL_ROOTS = (
    "thermal", "thermal.search", "thermal.search('deploy')", "thermal.search('deploy')[0]", "thermal.get(1)",
    "thermal.count", "thermal.search_results('deploy').hits", "thermal.search_results('deploy')",
    "thermal.search_results('deploy')[0]", "thermal.get('u0')", "thermal.get('u0').tags",
)  # fmt: skip


def generate(rng: random.Random, mode: Mode, steps: int, thermal: bool = False, plant: bool = False) -> Program:
    spoof = mode != "strict"
    modules = sorted(modules_for(mode))
    lines = [PREAMBLE, SPOOF if spoof else ""]
    roots = list(ROOTS_ALL) + (list(THERMAL_ROOTS) if thermal else [])
    if modules:
        lines.append("import " + ", ".join(modules))
        roots += [f"{m}.{a}" for m, attrs in modules_for(mode).items() for a in attrs[:6]]
        roots += modules
    values: list[str] = []
    program = Program("")
    routes = [route for needs, route in ROUTES if set(needs) <= set(modules)]

    def pick() -> str:
        if values and rng.random() < 0.7:
            return rng.choice(values)
        return rng.choice(roots)

    for i in range(steps):
        x = pick()
        var = f"v{i}"
        name, spell = _name_text(rng)
        move = rng.randrange(18)
        if move <= 3:
            body = f"{var} = getattr({x}, {_name_form(rng, spell, spoof)})"
        elif move == 4:
            public = rng.choice(PLAIN)
            body = f"{var} = ({x}).{public}" if not _forbidden(public) else f"{var} = getattr({x}, '{public}')"
        elif move == 5:
            body = f"{var} = Sub({x}).up({_name_form(rng, spell, spoof)})"
        elif move == 6:
            args = rng.choice(ARGS).replace("{X}", x)
            body = f"{var} = ({x})({args})"
        elif move == 7:
            body = f"{var} = ({x})[{rng.choice(['0', '-1', repr('k'), '1'])}]"
        elif move == 8:
            body = rng.choice(
                [
                    f"{var} = next(iter({x}))",
                    f"{var} = [w for w in {x}][0]",
                    f"{var}, *rest{i} = {x}",
                    f"{var} = max({x}, key=lambda w: 0)",
                    f"def star{i}(*a):\n    return a[0]\n{var} = star{i}(*{x})",
                ]
            )
        elif move == 9:
            body = f"class C{i}({x}):\n    pass\n{var} = C{i}"
        elif move == 10:
            body = f"@{x}\ndef d{i}():\n    return 1\n{var} = d{i}"
        elif move == 11:
            body = rng.choice(
                [
                    f"try:\n    raise {x}\nexcept Exception as e{i}:\n    {var} = e{i}",
                    f"try:\n    ({x})(Box)\nexcept Exception as e{i}:\n    {var} = e{i}",
                    f"try:\n    ({x}).nothing\nexcept Exception as e{i}:\n    {var} = e{i}.args",
                ]
            )
        elif move == 12 and "json" in modules:
            body = rng.choice(
                [
                    f"json.dumps({x}, default=keep)\n{var} = caught[-1]",
                    f"json.loads('{{\"a\": [1]}}', object_hook=lambda d: keep({x}))\n{var} = caught[-1]",
                    f"json.dumps([{x}], default=lambda o: keep(o) or str(o))\n{var} = caught[-1]",
                    f"json.loads('[1.5]', parse_float=lambda s: keep(s))\n{var} = caught[-1]",
                ]
            )
        elif move == 13:
            if _forbidden(name):
                program.format_checks[var] = name
            field_ = f"{{0.{name}!r}}" if rng.random() < 0.7 else f"{{1:{{0.{name}}}}}"
            body = f"{var} = '{field_}'.format({x}, 's')"
        elif move == 15:
            form = _name_form(rng, spell, spoof)
            body = rng.choice(
                [
                    f"{var} = ({x}).__class__",
                    f"{var} = ({x}).__name__",
                    f"{var} = type({x}).__name__",
                    f"{var} = ({x}).__class__.{public}"
                    if not _forbidden(public := rng.choice(PLAIN))
                    else f"{var} = getattr(({x}).__class__, '{public}')",
                    f"{var} = getattr(({x}).__class__, {form})",
                    f"{var} = hasattr({x}, {form})",
                    f"delattr({x}, {form})\n{var} = {x}",
                    f"{var} = staticmethod({x})",
                    f"{var} = classmethod({x})",
                    f"class K{i}:\n    m = staticmethod({x})\n{var} = K{i}.m",
                    f"class K{i}:\n    m = classmethod({x})\n{var} = K{i}().m",
                    f"class K{i}:\n    m = property({x})\n{var} = K{i}().m",
                ]
            )
        elif move >= 16:
            container = "leak" if plant and rng.random() < 0.5 else rng.choice(CONTAINERS).format(x=x)
            route = rng.choice(routes).format(c=container, x=x, i=i)
            body = f"{route}\n{var} = caught[-1] if caught else 0"
        else:
            body = rng.choice(
                [
                    f"{var} = ({x})({x})",
                    f"{var} = type({x})",
                    f"{var} = getattr(type({x}), {_name_form(rng, spell, spoof)})",
                    f"setattr({x}, {_name_form(rng, spell, spoof)}, len)\n{var} = {x}",
                ]
            )
        lines.append(f"try:\n{_indent(body)}\nexcept Exception:\n    pass")
        values.append(var)
    program.source = "\n".join(lines) + "\n"
    return program


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


@dataclass
class Finding:
    seed: int
    variable: str
    kind: str
    value: str
    source: str


def _guard_state() -> dict[str, dict[str, int]]:
    return {m.__name__: {k: id(v) for k, v in vars(m).items()} for m in (guards, wrappers, sandbox_builtins)}


def _stop(signum: int, frame: object) -> None:
    raise TimeoutError


def run_program(program: Program, glb: dict[str, Any], seed: int) -> list[Finding]:
    scope = dict(glb)
    before = _guard_state()
    signal.alarm(2)
    try:
        code = compile_restricted(program.source, filename="<sandbox>", mode="exec", policy=SandboxTransformer)
        exec(code, scope)
    except BaseException:  # a refusal outside the per-statement try, a timeout, a limit
        pass
    finally:
        signal.alarm(0)
    findings = []
    for var, value in scope.items():
        if not (var.startswith("v") and var[1:].isdigit()):
            continue
        kind = reachability.classify(value)
        if kind is None and var in program.format_checks and isinstance(value, str):
            kind = f"format field read '{program.format_checks[var]}'"
        if kind is not None:
            findings.append(Finding(seed, var, kind, repr(value)[:120], program.source))
    for item in list(scope.get("caught", ()))[:500]:  # what the program's callbacks were handed
        kind = reachability.classify(item)
        if kind is not None:
            findings.append(Finding(seed, "caught", kind, repr(item)[:120], program.source))
    if _guard_state() != before:
        findings.append(Finding(seed, "-", "guard state rewritten", "", program.source))
    return findings


def old_checks() -> None:
    """The guard as it was: names asked to the object itself, values unchecked."""

    def plain_name(name: object) -> Any:
        if not isinstance(name, str):
            raise wrappers.SandboxViolation("attribute names must be strings")
        return name

    guards.plain_name = plain_name  # type: ignore[assignment]
    guards.admit = lambda value, what: value  # type: ignore[assignment]


def _enter(*params: object) -> tuple[object, ...]:
    return params


def _same(value: object, /) -> object:
    return value


def _entered(*params: object) -> bool:
    return True


def _captured(value: object, call: bool = False, /) -> object:
    return value


# the checks at a function's entry as pass-throughs (``executor.python_layer.entry_guard``)
ENTRY_CHECKS_OFF: dict[str, object] = dict(
    zip(ENTRY_GUARD_NAMES, (_enter, _same, _same, _same, _entered, _captured, _entered), strict=True)
)


def _planted() -> list[object]:
    """Forbidden objects of each kind, in a list the program holds (``--plant``)."""
    return [json.dumps, sqlite3.Connection, os, sys._getframe(), _planted.__code__, property(len)]


@dataclass
class Report:
    programs: int = 0
    statements: int = 0
    findings: list[Finding] = field(default_factory=list)


def generate_and_run(
    seed: int,
    seconds: float,
    modes: tuple[Mode, ...],
    stop_at_first: bool = False,
    db: str | None = None,
    plant: bool = False,
    entry_checks: bool = True,
) -> Report:
    report = Report()
    rng = random.Random(seed)
    injected: dict[str, object] = {"leak": _planted()} if plant else {}
    if db is not None:
        from terminai_apts.executor import policy
        from terminai_apts.executor.python_layer import api_object
        from terminai_apts.memory.api import open_memory

        injected["thermal"] = api_object.wrap_api(policy.thermal_spec(db), open_memory(db))
    globals_by_mode = {mode: reachability.sandbox_globals(mode, injected) for mode in modes}
    if not entry_checks:
        for glb in globals_by_mode.values():
            glb.update(ENTRY_CHECKS_OFF)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        mode = modes[report.programs % len(modes)]
        program_seed = rng.randrange(2**32)
        steps = 1 + program_seed % 6
        program = generate(random.Random(program_seed), mode, steps, thermal=db is not None, plant=plant)
        report.programs += 1
        report.statements += steps
        report.findings += run_program(program, globals_by_mode[mode], program_seed)
        if stop_at_first and report.findings:
            break
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--mode", action="append", choices=["standard", "high", "strict"])
    parser.add_argument("--checks-off", action="store_true")
    parser.add_argument("--db", help="a memory index: `thermal` and its results join the roots")
    parser.add_argument("--plant", action="store_true", help="callback routes also get a list of forbidden objects")
    parser.add_argument("--entry-checks-off", action="store_true", help="only the checks at a function's entry off")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGALRM, _stop)
    warnings.simplefilter("ignore")  # compile warnings about generated nonsense (`1(1)`)
    limit = 2 << 30  # a generated chain may build a huge list: a MemoryError, not the host's memory
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.setrecursionlimit(400)
    if args.checks_off:
        old_checks()
    modes: tuple[Mode, ...] = tuple(args.mode or ("standard", "high", "strict"))
    off = args.checks_off or args.entry_checks_off
    report = generate_and_run(
        args.seed, args.seconds, modes, stop_at_first=off, db=args.db, plant=args.plant, entry_checks=not off
    )
    found = [
        {"seed": f.seed, "variable": f.variable, "kind": f.kind, "value": f.value, "source": f.source[-600:]}
        for f in report.findings[:20]
    ]
    print(json.dumps({"programs": report.programs, "statements": report.statements, "findings": found}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
