"""Everyday Python from seed 001's allowlist runs as CPython runs it, and each relaxation
that makes it run holds against the attacks written for it.

The oracle is CPython itself: each program is run by the host's interpreter as a plain
script and through the executor, and the two outputs must be equal. The programs use what
seed 001's sandbox offers (RestrictedPython's safe builtins, its import allowlist) and what
the peers' own suites expect to work: decimal contexts, ``typing.NamedTuple`` and
``TypedDict`` class syntax, ``class T(object)``, a program's own ``input``/``dir``/``id``,
in-place and arithmetic operator methods, ``bytes``, ``format``, ``NotImplemented``,
``RecursionError``, ``ExceptionGroup``, iterating an ``Enum``.

The builtins are compared with CPython's: every name CPython has and the sandbox does not
offer is listed, with its reason, in docs/AGENT_API.md ("Builtins the sandbox does not
offer"); the test reads that table.
"""

from __future__ import annotations

import builtins
import re
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_apts.executor import execute
from terminai_apts.executor.policy import SHADOWABLE_NAMES, Mode
from terminai_apts.executor.python_layer.sandbox_globals import build_builtins

from tests.unit.executor.test_python_layer_attacks import ALL_MODES, A, cfg, run_attacks

DOC = Path(__file__).resolve().parents[3] / "docs" / "AGENT_API.md"

PROGRAMS: dict[str, str] = {
    "decimal contexts": """
import decimal
from decimal import Context, Decimal, ROUND_HALF_UP, localcontext
ctx = Context(prec=6, rounding=ROUND_HALF_UP)
print(ctx.divide(Decimal(1), Decimal(7)), ctx.prec, ctx.rounding)
print(ctx.create_decimal("3.14159265"), ctx.power(Decimal(2), Decimal(10)))
with localcontext(ctx) as local:
    local.prec = 3
    print(Decimal(2) / Decimal(3))
print(Decimal(2) / Decimal(3))
try:
    Context(traps=[decimal.DivisionByZero]).divide(Decimal(1), Decimal(0))
except decimal.DivisionByZero as exc:
    print("caught", type(exc).__name__)
print(decimal.BasicContext.prec, decimal.ExtendedContext.prec, decimal.MAX_PREC > 0)
""",
    "NamedTuple class syntax": """
from typing import NamedTuple
class Deploy(NamedTuple):
    service: str
    region: str = "eu"
    replicas: int = 1
    def label(self):
        return f"{self.service}@{self.region}x{self.replicas}"
a = Deploy("api")
b = Deploy("db", "us", 3)
print(a, b, a.label(), b.replicas, a == ("api", "eu", 1), isinstance(a, tuple))
print(sorted([b, a]), len(b), list(b), Deploy(*["x", "y", 2]).label())
try:
    class Bad(NamedTuple):
        x: int = 0
        y: int
except TypeError as exc:
    print("refused:", exc)
""",
    "TypedDict class syntax": """
from typing import TypedDict
class Row(TypedDict):
    id: str
    score: float
class Scored(Row):
    rank: int
r = Row(id="m1", score=0.5)
s = Scored(id="m2", score=1.0, rank=1)
print(r, s, type(r) is dict, r["score"] + s["score"])
""",
    "class T(object) and names a program binds": """
class Plain(object):
    def __init__(self, id):
        self.id = id
    def __repr__(self):
        return f"Plain({self.id})"
def ask(input, dir="/tmp", vars=None, help="h"):
    return input.upper(), dir, vars, help
id = "mem-0001"
print(Plain(id), ask("yes"), [dir for dir in ("a", "b")])
def where(license="MIT", copyright=2026, exit=0, quit=False, credits=()):
    return license, copyright, exit, quit, credits
print(where())
""",
    "operator methods": """
class Money:
    def __init__(self, cents):
        self.cents = cents
    def __add__(self, other):
        if isinstance(other, Money):
            return Money(self.cents + other.cents)
        if isinstance(other, int):
            return Money(self.cents + other)
        return NotImplemented
    def __radd__(self, other):
        return self + other
    def __iadd__(self, other):
        self.cents += other.cents if isinstance(other, Money) else other
        return self
    def __sub__(self, other):
        return Money(self.cents - other.cents)
    def __mul__(self, k):
        return Money(self.cents * k)
    def __rmul__(self, k):
        return self * k
    def __neg__(self):
        return Money(-self.cents)
    def __abs__(self):
        return Money(abs(self.cents))
    def __eq__(self, other):
        return isinstance(other, Money) and other.cents == self.cents
    def __repr__(self):
        return f"Money({self.cents})"
total = Money(5)
total += Money(7)
total += 3
wallet = {"a": Money(1)}
wallet["a"] += Money(2)
print(total, sum([Money(1), Money(2)]), 3 * Money(2), -Money(4), abs(Money(-9)))
print(Money(9) - Money(4), wallet, Money(1) == Money(1), Money(1) == 1)
try:
    Money(1) + "x"
except TypeError as exc:
    print("TypeError", "unsupported" in str(exc))
class Vec:
    def __init__(self, *xs):
        self.xs = list(xs)
    def __add__(self, other):
        return Vec(*[a + b for a, b in zip(self.xs, other.xs)])
    def __repr__(self):
        return f"Vec{tuple(self.xs)}"
class Loud(Vec):
    def __add__(self, other):
        return Loud(*super().__add__(other).xs)
print(Loud(1, 2) + Vec(3, 4), type(Loud(1) + Vec(1)).__name__)
""",
    "builtins programs expect": """
print(bytes(3), bytes([104, 105]), bytes("hé", "utf-8"), format(3.14159, ".2f"), format(42, "08b"))
print(format("x", ">4"), NotImplemented, repr(NotImplemented))
def deep(n):
    if n > 50:
        raise RecursionError("too deep")
    return deep(n + 1)
try:
    deep(0)
except RecursionError as exc:
    print("RecursionError:", exc)
group = ExceptionGroup("two problems", [ValueError("a"), KeyError("b")])
print(group, len(group.exceptions), [type(e).__name__ for e in group.exceptions])
matched, rest = group.split(ValueError)
print(matched.exceptions, rest.exceptions)
try:
    raise group
except ExceptionGroup as exc:
    print("caught", exc.message)
for kind in (FileNotFoundError, TimeoutError, ConnectionError, ModuleNotFoundError, PermissionError):
    try:
        raise kind("x")
    except OSError as exc:
        print(type(exc).__name__, "is OSError")
    except ImportError as exc:
        print(type(exc).__name__, "is ImportError")
""",
    "iterating an Enum": """
from enum import Enum, IntEnum, auto
class Level(Enum):
    LOW = 1
    MID = 2
    HIGH = 3
    ALSO_LOW = 1
class Rank(IntEnum):
    A = auto()
    B = auto()
print([level.name for level in Level], [r.value for r in Rank])
for level in Level:
    print(level, level.value)
print({level.name: level.value for level in Level if level.value > 1}, max(r for r in Rank))
""",
}

# Programs that use nothing strict mode withholds (no imports, the strict builtins).
STRICT_PROGRAMS = ("class T(object) and names a program binds", "operator methods")


def cpython(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("mode", ["standard", "high", "strict"])
def test_everyday_programs_print_what_cpython_prints(mode: Mode) -> None:
    names = STRICT_PROGRAMS if mode == "strict" else tuple(PROGRAMS)
    wrong = []
    for name in names:
        code = PROGRAMS[name]
        expected = cpython(code)
        result = execute(code, cfg(mode))
        if not result.success or result.stdout != expected:
            wrong.append(f"{name}: {result.error}\n{result.stdout}--- CPython printed:\n{expected}")
    assert not wrong, "\n\n".join(wrong)


def _documented_absences() -> dict[str, str]:
    """The table "Builtins the sandbox does not offer" of docs/AGENT_API.md: name -> reason."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("### Builtins the sandbox does not offer", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `([^`]+)`((?:, `[^`]+`)*) \| (.+?) \|$", section, flags=re.M)
    found: dict[str, str] = {}
    for first, more, reason in rows:
        for name in [first, *re.findall(r"`([^`]+)`", more)]:
            found[name] = reason
    return found


def _documented_strict() -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("### Builtins the sandbox does not offer", 1)[1]
    listed = section.split("Strict mode offers only these builtins:", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"`([^`]+)`", listed))


def test_every_builtin_cpython_has_is_offered_or_its_absence_documented() -> None:
    public = {name for name in dir(builtins) if not name.startswith("_")}
    offered = set(build_builtins("standard", {}))
    assert set(build_builtins("high", {})) == offered
    absent = public - offered
    withheld = set(SHADOWABLE_NAMES)  # offered as names a program may bind; calling them refuses
    documented = _documented_absences()
    assert absent | withheld == set(documented), (
        f"offered nowhere and not documented: {sorted((absent | withheld) - set(documented))}; "
        f"documented yet offered: {sorted(set(documented) - absent - withheld)}"
    )
    assert all(len(reason) > 10 for reason in documented.values())


def test_strict_builtins_are_the_documented_list() -> None:
    strict = {name for name in build_builtins("strict", {}) if not name.startswith("_")} - set(SHADOWABLE_NAMES)
    assert strict == _documented_strict()


@pytest.mark.parametrize("mode", ALL_MODES)
def test_the_names_a_program_may_bind_refuse_when_called_unbound(mode: Mode) -> None:
    for name, reason in SHADOWABLE_NAMES.items():
        result = execute(f"print('ESCAPED', {name}())", cfg(mode))
        assert not result.success and "ESCAPED" not in result.stdout
        assert f"{name}() is not available in the sandbox: {reason}" in (result.error or ""), result.error


@pytest.mark.parametrize("mode", ALL_MODES)
def test_relaxed_names_and_bases_reach_nothing_new(mode: Mode) -> None:
    run_attacks(
        [
            # the stand-in of an unbound name is sealed: no attribute leads to the refusing function
            A("print('ESCAPED', input._fn)", "L2-validate", "attribute '_fn' is not allowed"),
            A("print('ESCAPED', getattr(dir, '_fn'))", "L4-runtime-guard", "'_fn'"),
            A("print('ESCAPED', vars.__call__)", "L2-validate", "attribute '__call__' is not allowed"),
            A("input.x = 1\nprint('ESCAPED')", "L4-runtime-guard", "cannot modify objects"),
            # `object` is accepted only as a class statement's base, where it is dropped
            A("print('ESCAPED', object)", "L2-validate", "name 'object' is not allowed"),
            A("class T(object):\n    pass\nprint('ESCAPED', T.__bases__)", "L2-validate", "'__bases__'"),
            A("class T(object):\n    pass\nprint('ESCAPED', T.mro())", "L2-validate", "attribute 'mro' is not allowed"),
            A("o = object\nprint('ESCAPED')", "L2-validate", "name 'object' is not allowed"),
            A("def f(object=1):\n    return object\nprint('ESCAPED')", "L2-validate", "'object'"),
            # the operator methods are special methods like the others: never readable
            A(
                "class V:\n    def __add__(self, o):\n        return 1\nprint('ESCAPED', V().__add__)",
                "L2-validate",
                "attribute '__add__' is not allowed",
            ),
            A(
                "class V:\n    def __add__(self, o):\n        return 1\nprint('ESCAPED', getattr(V, '__add__'))",
                "L4-runtime-guard",
                "'__add__'",
            ),
            # other special methods stay refused
            A("class V:\n    def __index__(self):\n        return 0\nprint('ESCAPED')", "L2-validate", "__index__"),
            A(
                "class V:\n    def __format__(self, s):\n        return ''\nprint('ESCAPED')",
                "L2-validate",
                "__format__",
            ),
            A(
                "class V:\n    def __getattr__(self, n):\n        return 0\nprint('ESCAPED')",
                "L2-validate",
                "__getattr__",
            ),
        ],
        mode,
    )


@pytest.mark.parametrize("mode", ["standard", "high"])
def test_what_the_operator_methods_and_class_syntax_are_handed_stays_checked(mode: Mode) -> None:
    run_attacks(
        [
            # an in-place operator on what the program may not write is still refused
            A("import math\nmath.pi += 1\nprint('ESCAPED')", "L4-runtime-guard", "cannot modify"),
            A("import decimal\nx = decimal.Decimal\nx += 1\nprint('ESCAPED')", "TypeError", "unsupported operand"),
            # `__radd__` receives what `sum` adds: the program's own values only
            A(
                "import re\nclass V:\n    def __radd__(self, other):\n"
                "        print('ESCAPED', other.__class__.__base__)\n        return self\nsum([V()], re.compile('x'))",
                "L2-validate",
                "'__base__'",
            ),
            # the class-syntax markers: only as the single base, no keywords, no hidden builder
            A("from typing import NamedTuple\nprint('ESCAPED', NamedTuple._build)", "L2-validate", "'_build'"),
            A(
                "from typing import NamedTuple\nclass P(int, NamedTuple):\n    x: int\nprint('ESCAPED')",
                "L4-runtime-guard",
                "base classes must be plain classes",
            ),
            A(
                "from typing import NamedTuple\nclass P(NamedTuple):\n    x: int\n    def __init__(self):\n"
                "        pass\nprint('ESCAPED')",
                "AttributeError",
                "Cannot overwrite NamedTuple attribute __init__",
            ),
            A(
                "from typing import TypedDict\nclass P(TypedDict, total=False):\n    x: int\nprint('ESCAPED')",
                "L2-validate",
                "class keywords",
            ),
            A(
                "from typing import NamedTuple\nclass P(NamedTuple):\n    x: int\nprint('ESCAPED', P._make)",
                "L2-validate",
                "'_make'",
            ),
            A(
                "from typing import NamedTuple\nclass P(NamedTuple):\n    x: int\n"
                "print('ESCAPED', getattr(P, '_make'))",
                "L4-runtime-guard",
                "'_make'",
            ),
            # a decimal context is a value of the run: its C methods check their arguments
            A(
                "import decimal\nclass V:\n    pass\nprint('ESCAPED', decimal.Context().add(V(), 1))",
                "TypeError",
                "conversion from V to Decimal is not supported",
            ),
            A("import decimal\nprint('ESCAPED', decimal.Context.__reduce__)", "L2-validate", "'__reduce__'"),
            # an exception group holds what the program put in it; its internals stay refused
            A(
                "g = ExceptionGroup('g', [ValueError(1)])\nprint('ESCAPED', g.__traceback__)",
                "L2-validate",
                "'__traceback__'",
            ),
            A(
                "try:\n    pass\nexcept* ValueError:\n    pass\nprint('ESCAPED')",
                "L2-validate",
                "except* is not allowed",
            ),
        ],
        mode,
    )
