"""Python-layer attack suite: one test per technique, each through the real `execute()` or
`ExecutorSession` (validation, compile_restricted, the guards, a forked hardened child),
in standard and high mode (and strict where the technique needs no import).

Each test asserts two things: the attack is refused with the refusal it names (the layer,
``ExecutionResult.refused_by``, or the error a wrapper raises, and a part of the
message), and the benign program doing the same job still works. Every snippet written
as ``A(...)`` here and in ``test_relaxation_attacks`` reaches its ``ESCAPED`` line under
plain CPython, with the Python layer switched off (``test_attacks_escape_unguarded``):
none of them is refused by the interpreter itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from terminai_apts.executor import ApiSpec, ExecutionResult, ExecutorSession, SandboxConfig, execute, thermal_spec
from terminai_apts.executor.policy import Mode
from terminai_apts.memory import store

from tests.unit.memory.conftest import make_records

IMPORT_MODES: tuple[Mode, ...] = ("standard", "high")
ALL_MODES: tuple[Mode, ...] = ("standard", "high", "strict")


def cfg(mode: Mode) -> SandboxConfig:
    return SandboxConfig(timeout_seconds=10, security_mode=mode)


@pytest.fixture(scope="module")
def memory_api(tmp_path_factory: pytest.TempPathFactory) -> ApiSpec:
    folder = tmp_path_factory.mktemp("attack-memory")
    path = folder / "mem.db"
    store.build(path, make_records())
    path.chmod(0o644)  # the child reads it after dropping to an unprivileged uid
    folder.chmod(0o755)
    for parent in folder.parents:
        if parent == Path(tmp_path_factory.getbasetemp()).parent:
            break
        parent.chmod(0o755)
    return thermal_spec(str(path))


@dataclass(frozen=True, slots=True)
class Attack:
    """A snippet and the refusal it must meet: ``layer`` is the result's ``refused_by``
    (``L2-validate``, ``L3-validate``, ``L4-runtime-guard``) or, for a wrapper
    that answers like the object it stands for, the error type it raises; ``reason`` is a
    part of the error message."""

    code: str
    layer: str
    reason: str


def A(code: str, layer: str, reason: str) -> Attack:
    return Attack(code, layer, reason)


@dataclass(frozen=True, slots=True)
class Neutralised:
    """A snippet that reads a special attribute (``x.__class__``, ``type(x)``, ``f.__name__``)
    and prints what it got: it must run and print exactly ``stdout`` (the sandbox-safe value:
    a ``TypeView`` stand-in, a plain name, a class the program may hold), where plain CPython
    prints something else (the real object)."""

    code: str
    stdout: str


def N(code: str, stdout: str) -> Neutralised:
    return Neutralised(code, stdout)


def refused(result: ExecutionResult, layer: str, reason: str) -> bool:
    """Refused by ``layer`` for ``reason``, and never reached the line that proves an escape."""
    got = result.refused_by or result.error_type
    return not result.success and "ESCAPED" not in result.stdout and got == layer and reason in (result.error or "")


def run_attacks(attacks: list[Attack | Neutralised], mode: Mode, api: ApiSpec | None = None) -> None:
    """Every attack of the list is run; the failure lists each one not refused (or not
    neutralised) as expected."""
    wrong: list[str] = []
    for attack in attacks:
        result = execute(attack.code, cfg(mode), api=api)
        if isinstance(attack, Neutralised):
            if not (result.success and result.stdout == attack.stdout):
                wrong.append(
                    f"{mode}: not neutralised as expected ({attack.stdout!r}):\n{attack.code}\n"
                    f"-> {result.refused_by} {result.error_type} {result.stdout!r} {result.error!r}"
                )
            continue
        if not refused(result, attack.layer, attack.reason):
            wrong.append(
                f"{mode}: not refused as expected ({attack.layer}: {attack.reason}):\n{attack.code}\n"
                f"-> {result.refused_by} {result.error_type} {result.stdout!r} {result.error!r}"
            )
    assert not wrong, "\n\n".join(wrong)


def run_benign(code: str, mode: Mode, expected: str, api: ApiSpec | None = None) -> None:
    result = execute(code, cfg(mode), api=api)
    assert result.success, f"{mode}: benign program failed: {result.error}\n{code}"
    assert result.stdout == expected


# 1 -- the red team's first finding: a collections class method that returns its
# argument's class gave `type`; from there type(name, bases, ns) defined dunders.
@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_class_leak_through_collections(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "import collections\nt = collections.Counter.copy(int)\nprint('ESCAPED', t)",
                "AttributeError",
                "'collections.Counter' exposes only: ",
            ),
            A(
                "import collections\nt = collections.Counter().copy.__func__\nprint('ESCAPED')",
                "L2-validate",
                "attribute '__func__' is not allowed",
            ),
            A(
                "import collections\nf = collections.Counter().fromkeys\nprint('ESCAPED', f)",
                "L4-runtime-guard",
                "attribute 'fromkeys' is not allowed (it is a method bound to a class)",
            ),
            A(
                "from collections import Counter\nt = Counter.copy(int)\nprint('ESCAPED', t)",
                "AttributeError",
                "'collections.Counter' exposes only: ",
            ),
            A(
                "import collections\nclass C(collections.Counter):\n    pass\nt = C.copy(int)\nprint('ESCAPED', t)",
                "L4-runtime-guard",
                "<class collections.Counter> cannot be subclassed in the sandbox; wrap an instanc",
            ),
            A(
                "import collections\nP = collections.namedtuple('P', 'x')\nprint('ESCAPED', P.x)",
                "L4-runtime-guard",
                "attribute 'x' is not allowed (it is a descriptor)",
            ),
            A(
                "import collections\nk = collections.OrderedDict.fromkeys\nprint('ESCAPED', k.__self__)",
                "L2-validate",
                "attribute '__self__' is not allowed",
            ),
            A(
                "import collections\nd = collections.defaultdict(list)\nprint('ESCAPED', d.default_factory.__base__)",
                "L2-validate",
                "attribute '__base__' is not allowed",
            ),
        ],
        mode,
    )
    benign = (
        "import collections\n"
        "c = collections.Counter('aab')\n"
        "d = collections.defaultdict(list)\n"
        "d['k'].append(1)\n"
        "P = collections.namedtuple('P', 'x y')\n"
        "p = P(1, 2)\n"
        "o = collections.OrderedDict(a=1)\n"
        "print(c.most_common(1), c.copy() == c, dict(d), p.x + p.y, isinstance(p, P),"
        " isinstance(c, collections.Counter), isinstance(c, dict), isinstance(d, collections.defaultdict),"
        " list(o), collections.deque([1, 2])[1])\n"
    )
    run_benign(benign, mode, "[('a', 2)] True {'k': [1]} 3 True True True True ['a'] 2\n")


# 2 -- the red team's `property` reached through a fractions attribute, and descriptors
# in general (member/getset descriptors of builtin types, slots, classmethods).
@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_descriptors_are_never_handed_out(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "import fractions\nprint('ESCAPED', fractions.Fraction.numerator)",
                "AttributeError",
                "'fractions.Fraction' exposes only: from_float, from_decimal",
            ),
            A(
                "import fractions\nprint('ESCAPED', fractions.Fraction(1, 2).from_float)",
                "L4-runtime-guard",
                "attribute 'from_float' is not allowed (it is a method bound to a class)",
            ),
            A("print('ESCAPED', int.real)", "L4-runtime-guard", "attribute 'real' is not allowed (it is a descriptor)"),
            A(
                "print('ESCAPED', complex.imag)",
                "L4-runtime-guard",
                "attribute 'imag' is not allowed (it is a descriptor)",
            ),
            A(
                "print('ESCAPED', slice.start)",
                "L4-runtime-guard",
                "attribute 'start' is not allowed (it is a descriptor)",
            ),
            A(
                "import datetime\nprint('ESCAPED', datetime.datetime.year)",
                "L4-runtime-guard",
                "attribute 'year' is not allowed (it is a descriptor)",
            ),
            A(
                "import decimal\nprint('ESCAPED', decimal.Decimal.real)",
                "L4-runtime-guard",
                "attribute 'real' is not allowed (it is a descriptor)",
            ),
            A(
                "try:\n    1 / 0\nexcept Exception as e:\n    print('ESCAPED', ZeroDivisionError.args)",
                "L4-runtime-guard",
                "attribute 'args' is not allowed (it is a descriptor)",
            ),
        ],
        mode,
    )
    run_benign(
        "import fractions, datetime, decimal\n"
        "f = fractions.Fraction(3, 4)\n"
        "print(f.numerator, f.denominator, fractions.Fraction.from_float(0.5), (5).real, slice(1, 4).start,"
        " datetime.datetime(2024, 1, 5).year, decimal.Decimal('1.5').real, isinstance(f, fractions.Fraction))\n",
        mode,
        "3 4 1/2 5 1 2024 1.5 True\n",
    )


# 3 -- class bodies cannot shadow the guards: no name a class body binds, and no
# namespace a metaclass could prepare, changes which _write_/_getattr_/... run.
@pytest.mark.parametrize("mode", ALL_MODES)
def test_class_body_cannot_shadow_guards(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "class C:\n    _write_ = lambda o: o\n    x = [1]\nprint('ESCAPED')",
                "L2-validate",
                "names starting with '_' are not allowed: '_write_'",
            ),
            A(
                "class C:\n    _getattr_ = lambda o, n: 1\nprint('ESCAPED')",
                "L2-validate",
                "names starting with '_' are not allowed: '_getattr_'",
            ),
            A(
                "class C:\n    __metaclass__ = 1\nprint('ESCAPED')",
                "L2-validate",
                "names starting with '_' are not allowed: '__metaclass__'",
            ),
            A(
                "class C:\n    for _getitem_ in [1]:\n        pass\nprint('ESCAPED')",
                "L2-validate",
                "names starting with '_' are not allowed: '_getitem_'",
            ),
            A(
                "class C:\n    try:\n        1 / 0\n    except Exception as _write_:\n        pass\nprint('ESCAPED')",
                "L2-validate",
                "name '_write_' may not be bound",
            ),
            A(
                "class C:\n    match 1:\n        case _getiter_:\n            pass\nprint('ESCAPED')",
                "L2-validate",
                "name '_getiter_' may not be bound",
            ),
            A(
                "class C:\n    match [1]:\n        case [*_write_]:\n            pass\nprint('ESCAPED')",
                "L2-validate",
                "name '_write_' may not be bound",
            ),
            A(
                "class C:\n    match {}:\n        case {**_write_}:\n            pass\nprint('ESCAPED')",
                "L2-validate",
                "name '_write_' may not be bound",
            ),
            A(
                "class C:\n    def _write_(o):\n        return o\nprint('ESCAPED')",
                "L2-validate",
                "name '_write_' may not be bound",
            ),
            A("class C:\n    global _write_\nprint('ESCAPED')", "L2-validate", "name '_write_' may not be bound"),
            A(
                "class C:\n    (_write_ := 1)\nprint('ESCAPED')",
                "L2-validate",
                "names starting with '_' are not allowed: '_write_'",
            ),
            A(
                "class M:\n    def __prepare__(name, bases):\n        return {}\nprint('ESCAPED')",
                "L2-validate",
                "name '__prepare__' may not be bound",
            ),
            A(
                "class C(metaclass=type):\n    pass\nprint('ESCAPED')",
                "L2-validate",
                "class keywords (metaclass=...) are not allowed",
            ),
            A(
                "class C(**{'metaclass': type}):\n    pass\nprint('ESCAPED')",
                "L2-validate",
                "class keywords (metaclass=...) are not allowed",
            ),
            A(
                "class C:\n    __build_class__ = 1\nprint('ESCAPED')",
                "L2-validate",
                "names starting with '_' are not allowed: '__build_class__'",
            ),
        ],
        mode,
    )
    # benign classes, nested classes and class attributes keep working; the guards still
    # run inside class bodies (a write to a foreign object there is refused)
    run_benign(
        "class Outer:\n    size = 2\n    class Inner:\n        label = 'in'\n"
        "    items = [2 * i for i in range(size + 1)]\n"
        "class Child(Outer):\n    def __init__(self, n):\n        self.n = n\n"
        "c = Child(3)\nc.n = c.n + 1\nprint(c.n, Child.size, Outer.Inner.label, Outer.items)\n",
        mode,
        "4 2 in [0, 2, 4]\n",
    )
    inside = execute("class C:\n    v = isinstance.x = 1", cfg(mode))
    assert not inside.success and inside.refused_by


# 4 -- metaclass, __init_subclass__, __class_getitem__, __mro_entries__.
@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_metaclass_and_class_hooks(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "class B:\n    def __init_subclass__(cls):\n        pass\nprint('ESCAPED')",
                "L2-validate",
                "name '__init_subclass__' may not be bound",
            ),
            A(
                "class B:\n    def __class_getitem__(cls, item):\n        return cls\nprint('ESCAPED')",
                "L2-validate",
                "name '__class_getitem__' may not be bound",
            ),
            A(
                "class B:\n    def __mro_entries__(self, bases):\n        return ()\nprint('ESCAPED')",
                "L2-validate",
                "name '__mro_entries__' may not be bound",
            ),
            A(
                "import collections\nprint('ESCAPED', collections.deque[int])",
                "L4-runtime-guard",
                "item is not allowed (it is a GenericAlias)",
            ),
            A("print('ESCAPED', list[int])", "L4-runtime-guard", "item is not allowed (it is a GenericAlias)"),
            A(
                "import collections\nclass D(collections.deque[int]):\n    pass\nprint('ESCAPED')",
                "L4-runtime-guard",
                "item is not allowed (it is a GenericAlias)",
            ),
            A(
                "import collections\nclass E(collections.Counter):\n    pass\nprint('ESCAPED')",
                "L4-runtime-guard",
                "<class collections.Counter> cannot be subclassed in the sandbox; wrap an instanc",
            ),
            A(
                "import fractions\nclass F(fractions.Fraction):\n    pass\nprint('ESCAPED')",
                "L4-runtime-guard",
                "<class fractions.Fraction> cannot be subclassed in the sandbox; wrap an instance",
            ),
        ],
        mode,
    )
    run_benign(
        "import collections, json\n"
        "class Q(collections.deque):\n    def __init__(self, items):\n        self.extend(items)\n"
        "class Bad(json.JSONDecodeError):\n    pass\n"
        "class Err(ValueError):\n    pass\n"
        "try:\n    raise Err('boom')\nexcept ValueError as e:\n    msg = str(e)\n"
        "print(list(Q([1, 2])), msg, isinstance(Q([]), collections.deque))\n",
        mode,
        "[1, 2] boom True\n",
    )


# 5 -- __index__ / __len__ (the bytearray use-after-free needed a class with __index__):
# no route defines such a method from sandbox code.
@pytest.mark.parametrize("mode", ALL_MODES)
def test_index_and_len_dunders_cannot_be_defined(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "class I:\n    def __index__(self):\n        return 0\nb = bytearray(4)\nb[I()] = 1\nprint('ESCAPED')",
                "L2-validate",
                "name '__index__' may not be bound",
            ),
            A(
                "class I:\n    __index__ = lambda self: 0\nprint('ESCAPED')",
                "L2-validate",
                "names starting with '_' are not allowed: '__index__'",
            ),
            A(
                "def f(self):\n    return 0\nclass I:\n    pass\nI.__index__ = f\nprint('ESCAPED')",
                "L2-validate",
                "attribute '__index__' is not allowed",
            ),
            A(
                "class L:\n    __len__ = lambda self: 0\nprint('ESCAPED')",
                "L2-validate",
                "names starting with '_' are not allowed: '__len__'",
            ),
            A(
                "def f(self):\n    return 0\nclass L:\n    pass\nL.__len__ = f\nprint('ESCAPED')",
                "L2-validate",
                "attribute '__len__' is not allowed",
            ),
            # `type` and `setattr` are the sandbox's own: no class from a dict, no special
            # method added after the class statement
            A(
                "X = type('X', (), {'__index__': lambda s: 0})\nprint('ESCAPED')",
                "L4-runtime-guard",
                "type() with three arguments is not allowed; use a class statement",
            ),
            A(
                "class I:\n    pass\nsetattr(I, '__index__', len)\nprint('ESCAPED')",
                "L4-runtime-guard",
                "attribute '__index__' is not allowed",
            ),
            A(
                "class L:\n    pass\nsetattr(L(), '__len__', lambda: 0)\nprint('ESCAPED')",
                "L4-runtime-guard",
                "attribute '__len__' is not allowed",
            ),
        ],
        mode,
    )
    run_benign(
        "class Box:\n    def __init__(self, items):\n        self.items = items\n"
        "    def size(self):\n        return len(self.items)\n"
        "b = [0] * 4\nb[1] = 7\nprint(Box([1, 2]).size(), list(b))\n",
        mode,
        "2 [0, 7, 0, 0]\n",
    )
    if mode != "strict":
        run_benign("b = bytearray(4)\nb[1] = 7\nb[2:3] = b'x'\nprint(list(b))\n", mode, "[0, 7, 120, 0]\n")


# 5b -- type(), x.__class__/__name__, staticmethod/classmethod, hasattr, setattr/delattr:
# the sandbox's own versions (``guards``, ``sandbox_builtins``). What a program obtains is
# a class it may hold or a stand-in with a name; every step past it is refused.
@pytest.mark.parametrize("mode", ALL_MODES)
def test_type_and_special_reads_end_in_stand_ins(mode: Mode) -> None:
    run_attacks(
        [
            # type(): one argument only, and the class of a class is a stand-in
            A("print('ESCAPED', type('X', (), {}))", "L4-runtime-guard", "type() with three arguments is not allowed"),
            A(
                "X = type('X', (), {'__init_subclass__': classmethod(lambda c: print('ESCAPED'))})\n"
                "class Y(X):\n    pass",
                "L4-runtime-guard",
                "type() with three arguments is not allowed",
            ),
            A(
                "X = type('X', (), {'mro': lambda c: [int]})\nprint('ESCAPED', X)",
                "L4-runtime-guard",
                "type() with three arguments is not allowed",
            ),
            A(
                "class D:\n    pass\n"
                "setattr(D, '__set_name__', lambda s, o, n: print('ESCAPED'))\nclass E:\n    d = D()",
                "L4-runtime-guard",
                "attribute '__set_name__' is not allowed",
            ),
            A("print('ESCAPED', type(type(1))('X', (), {}))", "TypeError", "'TypeView' object is not callable"),
            A("print('ESCAPED', type(type)('X', (), {}))", "TypeError", "'TypeView' object is not callable"),
            N("t = type(type)\nprint(type(t).__name__, t, t == type)", "TypeView <class 'type'> True\n"),
            A("print('ESCAPED', getattr(type, '__call__'))", "L4-runtime-guard", "attribute '__call__' is not allowed"),
            A("print('ESCAPED', type.__call__)", "L2-validate", "attribute '__call__' is not allowed"),
            A(
                "class C:\n    pass\nprint('ESCAPED', getattr(type(C), '__subclasses__'))",
                "L4-runtime-guard",
                "attribute '__subclasses__' is not allowed",
            ),
            A(
                "print('ESCAPED', (1).__class__.__base__.__subclasses__())",
                "L2-validate",
                "attribute '__base__' is not allowed",
            ),
            A(
                "print('ESCAPED', getattr(getattr((1).__class__, '__base__'), '__subclasses__')())",
                "L4-runtime-guard",
                "attribute '__base__' is not allowed",
            ),
            # a function's class: a stand-in, so no function from a code object and globals
            A(
                "def f():\n    pass\nF = type(f)\nprint('ESCAPED', F(getattr(f, '__code__'), {}))",
                "L4-runtime-guard",
                "attribute '__code__' is not allowed",
            ),
            N(
                "def f():\n    pass\nF = type(f)\nprint(type(F).__name__, F.__name__, F)",
                "TypeView function <class 'function'>\n",
            ),
            N("t = type(type(1))\nprint(type(t).__name__, t.__name__, t)", "TypeView type <class 'type'>\n"),
            N(
                "print(type(len).__name__, type(type(len)).__name__, len.__name__)",
                "builtin_function_or_method TypeView len\n",
            ),
            N(
                "class C:\n    pass\nT = type(C)\n"
                "print(type(T).__name__, T.__name__, T is type(int), C.__class__ == T)",
                "TypeView type True True\n",
            ),
            # the special reads are reads: never a write or a delete
            A(
                "class C:\n    pass\nclass D:\n    pass\nc = C()\nc.__class__ = D\nprint('ESCAPED')",
                "L2-validate",
                "attribute '__class__' may be read, never set or deleted",
            ),
            A(
                "class C:\n    pass\nclass D:\n    pass\nc = C()\nsetattr(c, '__class__', D)\nprint('ESCAPED')",
                "L4-runtime-guard",
                "attribute '__class__' is not allowed",
            ),
            A(
                "def f():\n    pass\nf.__name__ = 'g'\nprint('ESCAPED')",
                "L2-validate",
                "attribute '__name__' may be read, never set or deleted",
            ),
            A(
                "class C:\n    pass\nsetattr(C, '__name__', 'D')\nprint('ESCAPED', C.__name__)",
                "L4-runtime-guard",
                "attribute '__name__' is not allowed",
            ),
            A(
                "class C:\n    pass\nC.__name__ += 'x'\nprint('ESCAPED')",
                "L2-validate",
                "attribute '__name__' may be read, never set or deleted",
            ),
            # setattr/delattr: the program's own objects, public names only
            A(
                "class C:\n    pass\nsetattr(C, '__getattribute__', lambda s, n: 0)\nprint('ESCAPED')",
                "L4-runtime-guard",
                "attribute '__getattribute__' is not allowed",
            ),
            A(
                "class S(str):\n    pass\nclass C:\n    pass\n"
                "setattr(C, S('__getattribute__'), lambda s, n: 0)\nprint('ESCAPED')",
                "L4-runtime-guard",
                "attribute '__getattribute__' is not allowed",
            ),
            A(
                "e = ValueError()\nsetattr(e, 'x', 1)\nprint('ESCAPED')",
                "L4-runtime-guard",
                "cannot modify objects of type 'ValueError'",
            ),
            A(
                "def f():\n    pass\nsetattr(f, 'x', 1)\nprint('ESCAPED')",
                "L4-runtime-guard",
                "cannot modify objects of type 'function'",
            ),
            A(
                "class C:\n    def __init__(self):\n        self.n = 1\ndelattr(C, '__init__')\nprint('ESCAPED')",
                "L4-runtime-guard",
                "attribute '__init__' is not allowed",
            ),
            # staticmethod/classmethod: only the program's own functions, never the descriptor
            A(
                "s = staticmethod(len)\nprint('ESCAPED', s)",
                "L4-runtime-guard",
                "staticmethod() accepts only functions defined in the program",
            ),
            A(
                "c = classmethod(getattr)\nprint('ESCAPED', c)",
                "L4-runtime-guard",
                "classmethod() accepts only functions defined in the program",
            ),
            A(
                "def f(c):\n    return c\nprint('ESCAPED', classmethod(f).__func__)",
                "L2-validate",
                "attribute '__func__' is not allowed",
            ),
            A(
                "def f(c):\n    return c\nprint('ESCAPED', getattr(classmethod(f), '__func__'))",
                "L4-runtime-guard",
                "attribute '__func__' is not allowed",
            ),
            A(
                "class C:\n    @classmethod\n    def m(cls):\n"
                "        return cls\nprint('ESCAPED', getattr(C.m, '__func__'))",
                "L4-runtime-guard",
                "attribute '__func__' is not allowed",
            ),
            A(
                "class C:\n    @staticmethod\n    def m():\n        return 1\n"
                "print('ESCAPED', getattr(C, '__dict__')['m'])",
                "L4-runtime-guard",
                "attribute '__dict__' is not allowed",
            ),
            A(
                "def f(c):\n    return c\nclass C:\n    pass\nC.m = classmethod(f)\n"
                "print('ESCAPED', getattr(C.m(), '__subclasses__'))",
                "L4-runtime-guard",
                "attribute '__subclasses__' is not allowed",
            ),
            # hasattr asks the guard: a getter's refusal is not swallowed into False, and a
            # property read on its class answers False instead of the descriptor
            A(
                "class P:\n    @property\n    def x(self):\n        return getattr(self, '__dict__')\n"
                "print('ESCAPED', hasattr(P(), 'x'))",
                "L4-runtime-guard",
                "attribute '__dict__' is not allowed",
            ),
            N(
                "class P:\n    @property\n    def x(self):\n"
                "        return 1\nprint(hasattr(P, 'x'), hasattr(P(), 'x'))",
                "False True\n",
            ),
        ],
        mode,
    )
    run_benign(
        "class Temp:\n    unit = 'C'\n    def __init__(self, v):\n        self.v = v\n"
        "    @staticmethod\n    def parse(s):\n        return Temp(float(s))\n"
        "    @classmethod\n    def zero(cls):\n        return cls(0.0)\n"
        "    @property\n    def label(self):\n        return f'{self.v}{self.unit}'\n"
        "t = Temp.parse('21.5')\nsetattr(t, 'note', 'ok')\nz = Temp.zero()\ndelattr(z, 'v')\n"
        "try:\n    1 / 0\nexcept Exception as e:\n    err = type(e).__name__\n"
        "print(t.label, t.note, hasattr(z, 'v'), type(t).__name__, t.__class__ is Temp, err)\n",
        mode,
        "21.5C ok False Temp True ZeroDivisionError\n",
    )
    # `type` where code tests for a class: bools, as in CPython
    run_benign(
        "class C:\n    pass\n"
        "print(isinstance(C, type), isinstance(C(), type), isinstance(int, type), type(C) == type,"
        " type.__name__, hasattr.__name__, type(type) == type)\n",
        mode,
        "True False True True type hasattr True\n",
    )


# 6 -- getattr-style tricks: names as runtime strings, attribute helpers, dunders.
@pytest.mark.parametrize("mode", ALL_MODES)
def test_getattr_tricks(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "print('ESCAPED', getattr(getattr(1, '__class__'), '__base__'))",
                "L4-runtime-guard",
                "attribute '__base__' is not allowed",
            ),
            # hasattr is the attribute guard's answer: a refused name raises, never False
            A(
                "def f():\n    pass\nprint('ESCAPED', hasattr(f, '__globals__'))",
                "L4-runtime-guard",
                "attribute '__globals__' is not allowed",
            ),
            A("print('ESCAPED', hasattr(len, '__self__'))", "L4-runtime-guard", "attribute '__self__' is not allowed"),
            A("print('ESCAPED', vars())", "L4-runtime-guard", "vars() is not available in the sandbox"),
            A("print('ESCAPED', dir())", "L4-runtime-guard", "dir() is not available in the sandbox"),
            # `x.__class__` is read through the guard; what comes after it is refused
            A("print('ESCAPED', (1).__class__.__base__)", "L2-validate", "attribute '__base__' is not allowed"),
            A(
                "print('ESCAPED', getattr((1).__class__, '__subclasses__')())",
                "L4-runtime-guard",
                "attribute '__subclasses__' is not allowed",
            ),
            A(
                "print('ESCAPED', (1).__getattribute__('real'))",
                "L2-validate",
                "attribute '__getattribute__' is not allowed",
            ),
            A("print('ESCAPED', type(1).mro())", "L2-validate", "attribute 'mro' is not allowed"),
            A("print('ESCAPED', getattr(type(1), 'mro')())", "L4-runtime-guard", "attribute 'mro' is not allowed"),
            A("print('ESCAPED', object.__subclasses__())", "L2-validate", "attribute '__subclasses__' is not allowed"),
            A("print('ESCAPED', globals())", "L2-validate", "name 'globals' is not allowed"),
            A("print('ESCAPED', __builtins__)", "L2-validate", "name '__builtins__' is not allowed"),
            A("print('ESCAPED', isinstance.__self__)", "L2-validate", "attribute '__self__' is not allowed"),
            A("print('ESCAPED', len.__self__.open)", "L2-validate", "attribute '__self__' is not allowed"),
        ],
        mode,
    )
    run_benign("x = [3, 1, 2]\nprint(len(x), sorted(x), (7).real, 'ab'.upper())\n", mode, "3 [1, 2, 3] 7 AB\n")
    run_benign(
        "print(hasattr(1, 'real'), hasattr(1, 'nope'), hasattr([], '__iter__'), type(1) is int,"
        " (1).__class__.__name__)\n",
        mode,
        "True False True True int\n",
    )
    if mode != "strict":
        run_attacks(
            [
                A(
                    "import json\nprint('ESCAPED', json.dumps.__globals__)",
                    "L2-validate",
                    "attribute '__globals__' is not allowed",
                ),
                A(
                    "import statistics\nprint('ESCAPED', statistics.mean.__globals__)",
                    "L2-validate",
                    "attribute '__globals__' is not allowed",
                ),
                A(
                    "from json import dumps\nprint('ESCAPED', dumps.__globals__)",
                    "L2-validate",
                    "attribute '__globals__' is not allowed",
                ),
                A(
                    "import re\nprint('ESCAPED', re.compile.__closure__)",
                    "L2-validate",
                    "attribute '__closure__' is not allowed",
                ),
            ],
            mode,
        )


# 7 -- format strings: str.format / format_map field access reaches any attribute.
@pytest.mark.parametrize("mode", ALL_MODES)
def test_format_string_field_access(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "print('{0.__class__.__base__}'.format(1), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__base__' is not allowed",
            ),
            A(
                "print('{0.__class__.__mro__}'.format(1), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__mro__' is not allowed",
            ),
            A(
                "print('{x.__globals__}'.format_map({'x': lambda: 0}), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__globals__' is not allowed",
            ),
            # `'...'.format` is the guarded formatter now: holding it is harmless, and every
            # field lookup goes through the attribute guard
            A(
                "f = '{0.__class__.__base__}'.format\nprint(f(1), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__base__' is not allowed",
            ),
            A(
                "print('{0.real.__class__.__base__}'.format(1), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__base__' is not allowed",
            ),
            A(
                "print('{0[0].__class__.__base__}'.format([1]), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__base__' is not allowed",
            ),
            A(
                "print('{0.__self__}'.format(len), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__self__' is not allowed",
            ),
            A(
                "print('{x.gi_frame}'.format(x=(i for i in [1])), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute 'gi_frame' is not allowed",
            ),
            A(
                "print('{0:{1.__class__.__doc__[0]}}'.format('x', ''), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__doc__' is not allowed",
            ),
            A("print(''.format.__self__, 'ESCAPED')", "L2-validate", "attribute '__self__' is not allowed"),
            A(
                "print(str.format('{0.__class__}', 1), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute 'format' is allowed only on a string",
            ),
            A(
                "print(list(map(str.format, ['{0.__class__}'], [1])), 'ESCAPED')",
                "L4-runtime-guard",
                "attribute 'format' is allowed only on a string",
            ),
            # an f-string's expressions are compiled like any other: the guard reads `__class__`
            A("print(f'{(1).__class__.__base__}', 'ESCAPED')", "L2-validate", "attribute '__base__' is not allowed"),
            A(
                "x = 1\nprint(f'{getattr(x.__class__, \"__base__\")!r}', 'ESCAPED')",
                "L4-runtime-guard",
                "attribute '__base__' is not allowed",
            ),
            N(
                "def f():\n    pass\nprint(f'{f.__class__!r} {type(f.__class__).__name__}')",
                "<class 'function'> TypeView\n",
            ),
        ],
        mode,
    )
    run_benign(
        "x = 3.14159\nname = 'pi'\nprint(f'{name}: {x:.2f} {x!r:>10}', '%s=%d' % (name, 3))\n",
        mode,
        "pi: 3.14    3.14159 pi=3\n",
    )


# 8 -- generators: frames and code objects behind gi_*/cr_*/ag_*.
@pytest.mark.parametrize("mode", ALL_MODES)
def test_generator_frames(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "def g():\n    yield 1\nx = g()\nprint('ESCAPED', x.gi_frame)",
                "L2-validate",
                "attribute 'gi_frame' is not allowed",
            ),
            A(
                "def g():\n    yield 1\nx = g()\nprint('ESCAPED', x.gi_code)",
                "L2-validate",
                "attribute 'gi_code' is not allowed",
            ),
            A(
                "x = (i for i in [1])\nprint('ESCAPED', x.gi_frame.f_back)",
                "L2-validate",
                "attribute 'f_back' is not allowed",
            ),
            A(
                "def g():\n    yield 1\nx = g()\nprint('ESCAPED', x.gi_yieldfrom)",
                "L2-validate",
                "attribute 'gi_yieldfrom' is not allowed",
            ),
            A("def f():\n    pass\nprint('ESCAPED', f.__code__)", "L2-validate", "attribute '__code__' is not allowed"),
            A(
                "def f():\n    pass\nprint('ESCAPED', f.__globals__)",
                "L2-validate",
                "attribute '__globals__' is not allowed",
            ),
            A("print('ESCAPED', (lambda: 1).__closure__)", "L2-validate", "attribute '__closure__' is not allowed"),
        ],
        mode,
    )
    run_benign(
        "def g(n):\n    for i in range(n):\n        yield i * i\nx = g(3)\nfirst = [v for v in x][0]\n"
        "print(first, list(g(3))[1:], sum(i for i in range(4)))\n",
        mode,
        "0 [1, 4] 6\n",
    )


# 9 -- exceptions: __traceback__ (frames), __context__/__cause__ chains, with_traceback.
@pytest.mark.parametrize("mode", ALL_MODES)
def test_exception_traceback_and_context_walking(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "try:\n    1 / 0\nexcept Exception as e:\n    print('ESCAPED', e.__traceback__.tb_frame)",
                "L2-validate",
                "attribute 'tb_frame' is not allowed",
            ),
            A(
                "try:\n    try:\n        1 / 0\n    except Exception:\n        {}['x']\nexcept Exception as e:\n"
                "    print('ESCAPED', e.__context__.__traceback__)",
                "L2-validate",
                "attribute '__traceback__' is not allowed",
            ),
            A(
                "try:\n    1 / 0\nexcept Exception as e:\n    print('ESCAPED', e.__cause__)",
                "L2-validate",
                "attribute '__cause__' is not allowed",
            ),
            A(
                "try:\n    1 / 0\nexcept Exception as e:\n    t = e.with_traceback(e.__traceback__)\n"
                "    print('ESCAPED', t.__traceback__.tb_frame)",
                "L2-validate",
                "attribute '__traceback__' is not allowed",
            ),
            A(
                "try:\n    len(1)\nexcept TypeError as e:\n    print('ESCAPED', getattr(e.args.__class__, '__base__'))",
                "L4-runtime-guard",
                "attribute '__base__' is not allowed",
            ),
            A(
                "try:\n    len(1)\nexcept TypeError as e:\n    print('ESCAPED', e.__class__.__init__)",
                "L2-validate",
                "attribute '__init__' is not allowed",
            ),
            A(
                "try:\n    len(1)\nexcept TypeError as e:\n    print('ESCAPED', getattr(type(e), '__init__'))",
                "L4-runtime-guard",
                "attribute '__init__' is not allowed",
            ),
        ],
        mode,
    )
    run_benign(
        "def risky(d):\n    return d['k']\n"
        "try:\n    try:\n        risky({})\n    except KeyError as e:\n        raise ValueError('wrapped') from e\n"
        "except ValueError as e:\n    out = (str(e), e.args[0], isinstance(e, ValueError))\n"
        "print(out)\n",
        mode,
        "('wrapped', 'wrapped', True)\n",
    )


# 10 -- __reduce__ / pickling protocols hand out constructors and callables.
@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_reduce_protocol(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "import collections\nprint('ESCAPED', collections.Counter('a').__reduce__())",
                "L2-validate",
                "attribute '__reduce__' is not allowed",
            ),
            A(
                "import datetime\nprint('ESCAPED', datetime.date(2024, 1, 1).__reduce_ex__(2))",
                "L2-validate",
                "attribute '__reduce_ex__' is not allowed",
            ),
            A("import pickle\nprint('ESCAPED')", "L2-validate", "import of 'pickle' is not allowed"),
            A("import copyreg\nprint('ESCAPED')", "L2-validate", "import of 'copyreg' is not allowed"),
            A(
                "import decimal\nprint('ESCAPED', decimal.Decimal(1).__reduce__()[0])",
                "L2-validate",
                "attribute '__reduce__' is not allowed",
            ),
        ],
        mode,
    )
    run_benign(
        "import collections, json\nc = collections.Counter('aab')\nprint(json.dumps(c, sort_keys=True), dict(c))\n",
        mode,
        "{\"a\": 2, \"b\": 1} {'a': 2, 'b': 1}\n",
    )


# 11 -- thermal cannot be mutated: attributes, class, functions, records, and not for
# later cells of a session either.
@pytest.mark.parametrize("mode", ALL_MODES)
def test_thermal_cannot_be_mutated_across_cells(mode: Mode, memory_api: ApiSpec) -> None:
    # the oracle is also the state after the attacks (the same answers as before); plain
    # CPython refuses most of these writes on the real API too, so they are not run unguarded
    attacks = [
        A("thermal.search = len", "L4-runtime-guard", "cannot modify objects of type 'ApiObject'"),
        A("del thermal.search", "L4-runtime-guard", "cannot modify objects of type 'ApiObject'"),
        A("thermal.extra = 1", "L4-runtime-guard", "cannot modify objects of type 'ApiObject'"),
        A("thermal.search.cache = 1", "L4-runtime-guard", "cannot modify objects of type 'ApiMethod'"),
        A("thermal.__class__ = int", "L2-validate", "attribute '__class__' may be read, never set or deleted"),
        A("setattr(thermal, '__class__', int)", "L4-runtime-guard", "attribute '__class__' is not allowed"),
        A("setattr(thermal, 'search', len)", "L4-runtime-guard", "cannot modify objects of type 'ApiObject'"),
        A("thermal.__class__.search = len", "L4-runtime-guard", "cannot modify objects of type 'TypeView'"),
        A("setattr(type(thermal), 'search', len)", "L4-runtime-guard", "cannot modify objects of type 'TypeView'"),
        A("delattr(thermal.search, 'x')", "L4-runtime-guard", "cannot modify objects of type 'ApiMethod'"),
        A("print(thermal.__class__.search)", "AttributeError", "'TypeView' object has no attribute 'search'"),
        A("print(thermal.search.__call__)", "L2-validate", "attribute '__call__' is not allowed"),
        A("thermal.search.__self__", "L2-validate", "attribute '__self__' is not allowed"),
        A(
            "r = thermal.search_results('deploy')\nr.total = 0",
            "L4-runtime-guard",
            "cannot modify objects of type 'ResultList'",
        ),
        A(
            "r = thermal.search_results('deploy')\nr.hits[0].memory.tags = ['x']",
            "L4-runtime-guard",
            "cannot modify objects of type 'Record'",
        ),
        A(
            "r = thermal.search_results('deploy')\nr.hits[0].memory.title = 'x'",
            "L4-runtime-guard",
            "cannot modify objects of type 'Record'",
        ),
        A(
            "r = thermal.search_results('deploy')\ndel r.total",
            "L4-runtime-guard",
            "cannot modify objects of type 'ResultList'",
        ),
        A("r = thermal.record('u0')\nr['title'] = 'x'", "L4-runtime-guard", "cannot modify objects of type 'Record'"),
        A(
            "class Evil:\n    search = len\nthermal.search = Evil.search",
            "L4-runtime-guard",
            "cannot modify objects of type 'ApiObject'",
        ),
    ]
    with ExecutorSession(cfg(mode), memory_api) as session:
        before = session.run("base = thermal.search_results('deploy')\nprint(base.total, base.hits[0].memory.title)")
        assert before.success, before.error
        for attack in attacks:
            result = session.run(attack.code)
            assert refused(result, attack.layer, attack.reason), f"{mode}: {attack} -> {result.error}"
        # its class reads as a stand-in (a name, nothing to call, read or modify)
        view = session.run("print(type(thermal.__class__).__name__, thermal.__class__.__name__, type(thermal))")
        assert view.success and view.stdout == "TypeView ApiObject <class 'ApiObject'>\n", view
        # a copy is the caller's own: changing it leaves the API and its records alone
        copy = session.run(
            "d = base.to_dict()\nd['total'] = 0\nd['hits'].clear()\nprint(d['total'], base.total, len(base.hits))"
        )
        assert copy.success, copy.error
        after = session.run("r2 = thermal.search_results('deploy')\nprint(r2.total, r2.hits[0].memory.title)")
        assert after.success, after.error
        assert after.stdout == before.stdout
        assert copy.stdout == f"0 {before.stdout.split()[0]} {before.stdout.split()[0]}\n"
        assert session.run("print(sorted(thermal.get('u0').tags))").stdout == "['db', 'infra']\n"
        # `tags` is a list (the seed's), and a fresh one: changing it leaves the record alone
        own = session.run("m = thermal.get('u0')\nm.tags.append('x')\nprint(m.tags, isinstance(m.tags, list))")
        assert own.success and own.stdout == "['db', 'infra', 'x'] True\n", own.error
        assert session.run("print(thermal.get('u0').tags)").stdout == "['db', 'infra']\n"
        # the seed's record: a field is set once, its class is a stand-in, and what a program
        # does to its copy (a new attribute, a deleted field) stays in that copy
        for code in (
            "m = thermal.get('u0')\nm.title = 'x'",
            "m = thermal.get('u0')\nsetattr(m, 'title', 'x')",
            "m = thermal.get('u0')\nobject.__setattr__(m, 'title', 'x')",
            "m = thermal.get('u0')\nm.__class__ = dict",
            "m = thermal.get('u0')\nm.__dict__['title'] = 'x'",
            "m = thermal.get('u0')\ntype(m)('u0', '', '', '', '', [], '', 1.0).__init__.__globals__",
        ):
            assert not session.run(code).success, code
        own_copy = session.run(
            "m = thermal.get('u0')\nm.note = 1\ndel m.title\nprint(m.note, thermal.get('u0').title != '')"
        )
        assert own_copy.success and own_copy.stdout == "1 True\n", own_copy.error
        if mode != "strict":  # strict mode has no imports
            seen = session.run(
                "import dataclasses\nm = thermal.get('u0')\nc = dataclasses.replace(m, title='x')\n"
                "print(type(type(m)).__name__, c.title, thermal.get('u0').title == m.title != 'x', c == m)"
            )
            assert seen.success and seen.stdout == "TypeView x True False\n", (seen.error, seen.stdout)


# 12 -- module proxies are read-only for the whole session.
@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_module_proxy_mutation(mode: Mode) -> None:
    proxy = "cannot modify objects of type 'ModuleProxy'"
    attacks = [
        A("import math\nmath.pi = 3", "L4-runtime-guard", proxy),
        A("import math\ndel math.sqrt", "L4-runtime-guard", proxy),
        A("import json\njson.dumps = str", "L4-runtime-guard", proxy),
        A("import json\njson.loads.cache = 1", "L4-runtime-guard", "cannot modify objects of type 'SafeCallable'"),
        A(
            "import collections\ncollections.Counter.most_common = 1",
            "L4-runtime-guard",
            "cannot modify objects of type 'ClassFactory'",
        ),
        A("import math\nprint(math._attrs)", "L2-validate", "attribute '_attrs' is not allowed"),
        A("from math import _attrs", "L2-validate", "name '_attrs' may not be bound"),
        A("import math\nprint('ESCAPED', math.__dict__)", "L2-validate", "attribute '__dict__' is not allowed"),
        A("import re\nre.compile.flags = 1", "L4-runtime-guard", "cannot modify objects of type 'SafeCallable'"),
        # setattr/delattr follow the same rules as the statements above
        A("import math\nsetattr(math, 'pi', 3)", "L4-runtime-guard", proxy),
        A("import math\ndelattr(math, 'sqrt')", "L4-runtime-guard", proxy),
        A(
            "import json\nsetattr(json, '__getattr__', str)",
            "L4-runtime-guard",
            "attribute '__getattr__' is not allowed",
        ),
        A(
            "import collections\nsetattr(collections.Counter, 'most_common', len)",
            "L4-runtime-guard",
            "cannot modify objects of type 'ClassFactory'",
        ),
        A(
            "import collections\nsetattr(type(collections.Counter()), 'most_common', len)",
            "L4-runtime-guard",
            "cannot modify objects of type 'TypeView'",
        ),
        A(
            "import json\nsetattr(json.dumps, 'x', 1)",
            "L4-runtime-guard",
            "cannot modify objects of type 'SafeCallable'",
        ),
        A("import json\nprint(type(json).__name__, json.__name__, json.__class__.dumps)", "AttributeError", "TypeView"),
    ]
    with ExecutorSession(cfg(mode)) as session:
        for attack in attacks:
            result = session.run(attack.code)
            assert refused(result, attack.layer, attack.reason), f"{mode}: {attack} -> {result.error}"
        after = session.run("import math, json\npi = 3\nprint(math.pi > 3.14, json.dumps([1]), pi)")
        assert after.success and after.stdout == "True [1] 3\n", after.error


# 13 -- random: the per-run generator only; no shared state, no way to the instance.
@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_random_state(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "import random\nprint('ESCAPED', random.random.__self__)",
                "L2-validate",
                "attribute '__self__' is not allowed",
            ),
            A(
                "import random\nprint('ESCAPED', random.getstate())",
                "AttributeError",
                "module 'random' exposes only: choice, choices, gauss, randint, random, randrange",
            ),
            A("import random\nprint('ESCAPED', random._inst)", "L2-validate", "attribute '_inst' is not allowed"),
            A(
                "import random\nrandom.random = lambda: 4\nprint('ESCAPED', random.random())",
                "L4-runtime-guard",
                "cannot modify objects of type 'ModuleProxy'",
            ),
            A(
                "import random\nprint('ESCAPED', random.Random)",
                "AttributeError",
                "module 'random' exposes only: choice, choices, gauss, randint, random, randrange",
            ),
            A(
                "import random\nprint('ESCAPED', random.seed.__func__)",
                "L2-validate",
                "attribute '__func__' is not allowed",
            ),
        ],
        mode,
    )
    seeded = "import random\nrandom.seed(7)\nprint(random.random())"
    first, second = execute(seeded, cfg(mode)), execute(seeded, cfg(mode))
    assert first.success and first.stdout == second.stdout  # seeding is the run's own
    unseeded = "import random\nprint(random.random())"
    assert execute(unseeded, cfg(mode)).stdout != first.stdout  # and does not leak to the next run
    run_benign(
        "import random\nrandom.seed(1)\nx = [1, 2, 3]\nrandom.shuffle(x)\n"
        "print(sorted(x), random.choice([5]), 1 <= random.randint(1, 3) <= 3, len(random.sample(range(10), 3)))\n",
        mode,
        "[1, 2, 3] 5 True 3\n",
    )


# 14 -- json hooks: what the decoder and encoder pass to user callbacks is plain data,
# and the hooks cannot swap in a class of the attacker's choosing.
@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_json_object_hooks(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "import json\n"
                "json.loads('{\"a\": 1}',"
                " object_hook=lambda d: print('ESCAPED', getattr(d.__class__, '__init_subclass__')))",
                "L4-runtime-guard",
                "attribute '__init_subclass__' is not allowed",
            ),
            A(
                "import json\ncls = json.JSONDecodeError\nprint('ESCAPED', cls.__init__)",
                "L2-validate",
                "attribute '__init__' is not allowed",
            ),
            A(
                "import json\njson.loads('1', cls=json.JSONDecoder)\nprint('ESCAPED')",
                "AttributeError",
                "module 'json' exposes only: JSONDecodeError, dump, dumps, load, loads",
            ),
            A(
                "import json\nprint('ESCAPED', json.decoder)",
                "AttributeError",
                "module 'json' exposes only: JSONDecodeError, dump, dumps, load, loads",
            ),
            A(
                "import json\njson.dumps(object(), default=lambda o: o.__class__.__name__)\nprint('ESCAPED')",
                "L2-validate",
                "name 'object' is not allowed",
            ),
            A(
                "import json\nseen = []\n"
                "json.loads('[1]', parse_int=lambda s: seen.append(getattr(s.__class__, '__base__')))\n"
                "print('ESCAPED')",
                "L4-runtime-guard",
                "attribute '__base__' is not allowed",
            ),
        ],
        mode,
    )
    run_benign(
        "import json\n"
        "seen = []\n"
        'data = json.loads(\'{"a": {"b": 1.5}}\', object_hook=lambda d: (seen.append(isinstance(d, dict)), d)[1],'
        " parse_float=lambda s: round(float(s)))\n"
        "class Point:\n    def __init__(self, x):\n        self.x = x\n"
        "out = json.dumps({'p': Point(1)}, default=lambda o: {'x': o.x}, sort_keys=True)\n"
        "print(data, seen, out)\n",
        mode,
        "{'a': {'b': 2}} [True, True] {\"p\": {\"x\": 1}}\n",
    )


# 15 -- re callbacks: the Match handed to a replacement function exposes only C methods.
@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_re_callbacks(mode: Mode) -> None:
    run_attacks(
        [
            # the classes of re's objects are host classes: the program gets a stand-in
            N(
                "import re\nre.sub('a', lambda m: print(type(m.__class__).__name__, m.__class__.__name__) or '', 'a')",
                "TypeView Match\n",
            ),
            A(
                "import re\nre.sub('a', lambda m: print('ESCAPED', getattr(m.re.__class__, 'mro')()) or '', 'a')",
                "L4-runtime-guard",
                "attribute 'mro' is not allowed",
            ),
            A(
                "import re\nprint('ESCAPED', type(re.compile('a')).search)",
                "AttributeError",
                "'TypeView' object has no attribute 'search'",
            ),
            A("import re\nprint('ESCAPED', re._compile)", "L2-validate", "attribute '_compile' is not allowed"),
            N(
                "import re\nc = re.compile('a').scanner('a').__class__\nprint(type(c).__name__, c)",
                "TypeView <class 'SRE_Scanner'>\n",
            ),
        ],
        mode,
    )
    run_benign(
        "import re\n"
        "out = re.sub(r'(?P<w>\\w+)', lambda m: m.group('w').upper() + str(m.start()), 'ab cd')\n"
        "p = re.compile('c', re.I)\n"
        "print(out, bool(p.search('C')), p.flags & re.I == re.I, re.findall('[a-c]', 'abz'))\n",
        mode,
        "AB0 CD3 True True ['a', 'b']\n",
    )


# 16 -- sorted/min/max key callbacks and iteration protocols handed user functions.
@pytest.mark.parametrize("mode", ALL_MODES)
def test_sorted_key_callbacks(mode: Mode, memory_api: ApiSpec) -> None:
    run_attacks(
        [
            A(
                "sorted([1, 2], key=lambda x: print('ESCAPED', getattr(x.__class__, '__subclasses__')))",
                "L4-runtime-guard",
                "attribute '__subclasses__' is not allowed",
            ),
            A(
                "def k(x):\n    raise ValueError(x)\ntry:\n    sorted([1, 2], key=k)\nexcept ValueError as e:\n"
                "    print('ESCAPED', e.__traceback__)",
                "L2-validate",
                "attribute '__traceback__' is not allowed",
            ),
            A(
                "max([1], key=lambda x: x.__reduce__)\nprint('ESCAPED')",
                "L2-validate",
                "attribute '__reduce__' is not allowed",
            ),
            # a record's class is a host class: its name, and nothing to call or read
            N(
                "r = thermal.search_results('deploy')\nnames = sorted({h.memory.__class__.__name__ for h in r.hits})\n"
                "print(names, type(r.hits[0].memory.__class__).__name__)",
                "['Record'] TypeView\n",
            ),
            A(
                "print('ESCAPED', thermal.__class__.search)",
                "AttributeError",
                "'TypeView' object has no attribute 'search'",
            ),
            A(
                "r = thermal.search_results('deploy')\n"
                "sorted(r.hits, key=lambda h: str(h.__reduce_ex__(2)))\nprint('ESCAPED')",
                "L2-validate",
                "attribute '__reduce_ex__' is not allowed",
            ),
        ],
        mode,
        memory_api,
    )
    run_benign(
        "r = thermal.search_results('deploy')\n"
        "titles = [h.memory.title for h in sorted(r.hits, key=lambda h: h.memory.date)]\n"
        "print(titles[0], max([3, 1, 2], key=lambda v: -v), sorted(['b', 'A'], key=str.lower))\n",
        mode,
        "Deploy failed 1 ['A', 'b']\n",
        memory_api,
    )


# 17 -- what a wrapper itself exposes: SafeCallable, ClassFactory, print, import.
@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_wrappers_expose_nothing(mode: Mode) -> None:
    run_attacks(
        [
            A(
                "import statistics\nprint('ESCAPED', statistics.mean.__code__)",
                "L2-validate",
                "attribute '__code__' is not allowed",
            ),
            A(
                "import statistics\nprint('ESCAPED', statistics.mean.__defaults__)",
                "L2-validate",
                "attribute '__defaults__' is not allowed",
            ),
            A(
                "import statistics\nstatistics.mean.x = 1\nprint('ESCAPED')",
                "L4-runtime-guard",
                "cannot modify objects of type 'SafeCallable'",
            ),
            A(
                "import collections\nprint('ESCAPED', collections.Counter.copy)",
                "AttributeError",
                "'collections.Counter' exposes only: ",
            ),
            A(
                "import collections\ncollections.Counter.fromkeys = 1\nprint('ESCAPED')",
                "L4-runtime-guard",
                "cannot modify objects of type 'ClassFactory'",
            ),
            A(
                "import fractions\nprint('ESCAPED', fractions.Fraction.from_float.__func__)",
                "L2-validate",
                "attribute '__func__' is not allowed",
            ),
            A(
                "import collections\nfrom collections import namedtuple\nprint('ESCAPED', namedtuple.__kwdefaults__)",
                "L2-validate",
                "attribute '__kwdefaults__' is not allowed",
            ),
        ],
        mode,
    )
    run_benign(
        "import statistics, collections, fractions, decimal, datetime\n"
        "print(statistics.mean([1, 2, 3]), collections.Counter('ab')['a'], fractions.Fraction(1, 3) * 3,"
        " decimal.Decimal('0.1') + decimal.Decimal('0.2'),"
        " datetime.datetime.strptime('2024-01-05', '%Y-%m-%d').strftime('%d %b %Y'))\n",
        mode,
        "2 1 1 0.3 05 Jan 2024\n",
    )


# 18 -- the red team's second finding end to end: `type` from the class leak, a metaclass
# whose __prepare__ pre-loads `_write_`, a class body that then rewrites thermal.search
# for the rest of the session.
RED_TEAM_PREPARE = """
import collections
T = collections.Counter.copy(int)
def prep(name, bases):
    return {'_write_': lambda o: T(o)}
M = T('M', (T,), {'__prepare__': prep})
Base = M('Base', (), {})
class X(Base):
    thermal.search = len
print('ESCAPED')
"""


@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_red_team_prepare_chain(mode: Mode, memory_api: ApiSpec) -> None:
    with ExecutorSession(cfg(mode), memory_api) as session:
        attack = session.run(RED_TEAM_PREPARE)
        assert refused(attack, "AttributeError", "'collections.Counter' exposes only"), (attack.error, attack.stdout)
        later = session.run("print(thermal.search_results('deploy').total)")
        assert later.success and later.stdout == "3\n", later.error


# 19 -- defence in depth for the class statement itself: even if a class with a custom
# metaclass leaked into the namespace, the guarded __build_class__ refuses it before the
# metaclass's __prepare__ could run. (In-process: the leaked object cannot be sent to a
# child through any public entry point, which is the point of the walk.)
def test_build_class_refuses_a_leaked_metaclass() -> None:
    from RestrictedPython.compile import compile_restricted
    from terminai_apts.executor.python_layer import module_proxies, output, sandbox_globals, wrappers

    prepared: list[str] = []

    class Meta(type):
        @classmethod
        def __prepare__(cls, name: str, bases: tuple[type, ...], **kw: object) -> dict[str, object]:
            prepared.append(name)
            return {"_write_": lambda obj: obj}

    leaked = Meta("Leaked", (), {})
    glb = sandbox_globals.build_globals(
        "high", module_proxies.build_proxies("high"), output.OutputBuffer(1000), {"leaked": leaked}
    )
    code = compile_restricted("class X(leaked):\n    pass\n", filename="<sandbox>", mode="exec")
    with pytest.raises(wrappers.SandboxViolation, match="plain classes"):
        exec(code, glb)
    assert prepared == []
    plain = compile_restricted("class Y(ValueError):\n    z = [1]\n", filename="<sandbox>", mode="exec")
    exec(plain, glb)
    assert glb["Y"].z == [1] and type(glb["Y"]) is type


# The oracle itself: every snippet above and in test_relaxation_attacks reaches its
# ESCAPED line under plain CPython (real builtins and modules, no validation, no
# compile_restricted, no runtime guards), so each refusal asserted above is the Python
# layer's doing and a snippet that can never fail cannot hide in the lists. A neutralised
# snippet (``N``) prints something else under plain CPython than its safe value (the real
# object), so the stand-in it asserts is the Python layer's doing too.
def _listed_attacks() -> list[tuple[str, str, str | None]]:
    """(where, code, the neutralised stdout or None for a refusal)."""
    import ast

    found: list[tuple[str, str, str | None]] = []
    for name in ("test_python_layer_attacks.py", "test_relaxation_attacks.py"):
        tree = ast.parse((Path(__file__).parent / name).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "run_attacks":
                for element in node.args[0].elts:  # type: ignore[attr-defined]
                    assert isinstance(element, ast.Call) and isinstance(element.func, ast.Name), ast.dump(element)
                    kind = element.func.id
                    assert kind in ("A", "N"), f"{name}:{element.lineno}: an attack without its refusal"
                    stdout = ast.literal_eval(element.args[1]) if kind == "N" else None
                    found.append((f"{name}:{element.lineno}", ast.literal_eval(element.args[0]), stdout))
    return found


def test_attacks_escape_unguarded(memory_api: ApiSpec) -> None:
    import json
    import subprocess
    import sys

    attacks = _listed_attacks()
    assert len(attacks) > 120
    assert sum(stdout is not None for _, _, stdout in attacks) >= 10
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.executor.unguarded", memory_api.args[0]],
        input=json.dumps([{"code": code, "thermal": "thermal" in code} for _, code, _ in attacks]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    outputs = json.loads(done.stdout.splitlines()[-1])
    dead = [
        f"{where}: {code!r} -> {out[:200]!r}"
        for (where, code, stdout), (escaped, out) in zip(attacks, outputs, strict=True)
        if (not escaped if stdout is None else out == stdout)
    ]
    assert not dead, "refused (or neutralised) by CPython itself, so the assertion cannot fail:\n" + "\n".join(dead)


def test_the_unguarded_check_can_fail() -> None:
    """A snippet CPython refuses on its own (the kind the lists used to hold) is reported."""
    import json
    import subprocess
    import sys

    snippets = [
        {"code": "class C(metaclass=dict):\n    pass\nprint('ESCAPED')"},
        {"code": "print('{:{0.__class__}}'.format(1), 'ESCAPED')"},
        {"code": "print((1).format, 'ESCAPED')"},
        {"code": "print('ESCAPED', (1).__class__)"},
    ]
    done = subprocess.run(
        [sys.executable, "-m", "tests.unit.executor.unguarded"],
        input=json.dumps(snippets),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    outputs = json.loads(done.stdout.splitlines()[-1])
    assert [escaped for escaped, _ in outputs] == [False, False, False, True]
    assert outputs[3][1] == "ESCAPED <class 'int'>\n"
