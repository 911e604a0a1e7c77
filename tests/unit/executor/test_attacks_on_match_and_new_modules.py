"""Red team, fourth round: the seed's newly allowed modules and constructs, attacked.

Three holes were found and closed here:

* ``match`` bound the items of sequence and mapping patterns, and the attributes a class
  pattern reads through ``__match_args__``, in C, past the item and attribute guards:
  ``case {'_cls': t}`` took whatever a container held. Every name a pattern binds now
  passes the value check first (``transform._captures``).
* ``copy.deepcopy(x, memo)`` filled the program's own memo dict with the reduce state of
  the sandbox's wrappers (``{'_cls': type}`` of a class view, ``{'_fn': <function>}`` of a
  callable stand-in) before the copy failed: with the match hole, the real ``type``, then
  a host function's ``__globals__``, ``sys.modules`` and the real builtins. The sandbox's
  ``deepcopy`` takes no memo.
* The host's stand-in classes (the ``Enum``/``IntEnum``/``ABC`` bases, ``CacheInfo``) carry
  the sandbox's module name so programs can subclass them, and the write guard took them for
  the program's own: ``setattr(enum.Enum, ...)`` changed them for every later cell of the
  session. They are refused now (``wrappers.STAND_INS``).

Each has a companion showing the route open without its check. The other attacks of the
round were refused already; the ones below keep them refused, each by the layer and for
the reason it names (as in ``test_python_layer_attacks``).
"""

from __future__ import annotations

import copy
import json
import types
from typing import Any

import pytest
from RestrictedPython.compile import compile_restricted
from terminai_apts.executor.policy import Mode
from terminai_apts.executor.python_layer import (
    guards,
    module_proxies,
    output,
    sandbox_builtins,
    shims_classes,
    transform,
    wrappers,
)
from terminai_apts.executor.python_layer import sandbox_globals as globals_
from terminai_apts.executor.python_layer.transform import SandboxTransformer
from terminai_apts.executor.python_layer.wrappers import SafeCallable, SandboxViolation

from tests.unit.executor.test_python_layer_attacks import ALL_MODES, IMPORT_MODES, A, Attack, run_attacks, run_benign

# -- the two holes ---------------------------------------------------------------------------

# The program that escaped (standard and high): the memo gives the real `type` and a host
# function, match takes them out of the memo's dicts, and a class pattern whose class
# has `__match_args__ = ('__globals__',)` (and a metaclass whose `__instancecheck__` says
# yes) reads the function's globals in C.
ESCAPE_CHAIN = """\
import copy, json
memo = {}
for target in (type(type), json.dumps):
    try:
        copy.deepcopy(target, memo)
    except Exception:
        pass
for v in memo.values():
    match v:
        case {'_cls': T}:
            pass
        case {'_fn': host_fn}:
            pass
U = '_' * 2
Meta = T('Meta', (T,), {U + 'instancecheck' + U: lambda cls, obj: True})
G = Meta('G', (Exception,), {U + 'match_args' + U: (U + 'globals' + U,)})
match host_fn:
    case G(glb):
        pass
match glb:
    case {'sys': sysmod}:
        print('ESCAPED', sysmod)
"""

DEEPCOPY_MEMO = "import copy\nmemo = {}\ncopy.deepcopy(type(type), memo)\nprint('ESCAPED', memo)"


def _globals(mode: Mode = "high", *, real_deepcopy: bool = False) -> tuple[dict[str, Any], output.OutputBuffer]:
    buffer = output.OutputBuffer(100_000)
    proxies = module_proxies.build_proxies(mode)
    if real_deepcopy:  # the proxy as it was: the real function, memo and all
        proxies["copy"] = module_proxies.ModuleProxy("copy", {"deepcopy": SafeCallable(copy.deepcopy, "copy.deepcopy")})
    return globals_.build_globals(mode, proxies, buffer, {}), buffer


def _exec(code: str, glb: dict[str, Any]) -> None:
    exec(compile_restricted(code, filename="<sandbox>", mode="exec", policy=SandboxTransformer), glb)


@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_deepcopy_takes_no_memo(mode: Mode) -> None:
    run_attacks(
        [
            A(DEEPCOPY_MEMO, "L4-runtime-guard", "copy.deepcopy(x, memo) is not allowed"),
            A("import copy\ncopy.deepcopy([getattr], memo={})\nprint('ESCAPED')", "L4-runtime-guard", "memo"),
        ],
        mode,
    )
    run_benign("import copy\nx = [1, {'a': [2]}]\ny = copy.deepcopy(x)\ny[1]['a'].append(3)\nprint(x, y)", mode,
               "[1, {'a': [2]}] [1, {'a': [2, 3]}]\n")  # fmt: skip


@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_escape_chain_of_round_four_is_closed(mode: Mode) -> None:
    """The whole chain, as it ran: the memo stays empty, so nothing is bound to ``T``."""
    run_attacks([A(ESCAPE_CHAIN, "NameError", "'T' is not defined")], mode)


MEMO_PROGRAM = "import copy\nmemo = {}\ntry:\n    copy.deepcopy(type(type), memo)\nexcept Exception:\n    pass\n"


def test_deepcopy_memo_companion_the_real_memo_held_the_real_type() -> None:
    """With the real ``deepcopy`` (and the class view's own reduce protocol, which the
    sixth round made refuse: ``wrappers.Sealed``), the program's memo holds
    ``{'_cls': type}`` after the copy of ``type(type)`` (a class view) failed."""
    glb, _ = _globals(real_deepcopy=True)
    type.__delattr__(sandbox_builtins.TypeView, "__reduce_ex__")
    try:
        _exec(MEMO_PROGRAM, glb)
    finally:
        type.__setattr__(sandbox_builtins.TypeView, "__reduce_ex__", wrappers._not_copied)
    held = [v for v in glb["memo"].values() if isinstance(v, dict)]
    assert any(d.get("_cls") is type for d in held)


def test_deepcopy_memo_with_the_real_deepcopy_holds_nothing_now() -> None:
    """Either fix alone closes the route: with the real ``deepcopy`` back, the view refuses
    to be reduced before its state is read, and the memo holds no class."""
    glb, _ = _globals(real_deepcopy=True)
    _exec(MEMO_PROGRAM, glb)
    assert not any(isinstance(v, dict) and "_cls" in v for v in glb["memo"].values())


PLANTED = {"fn": json.dumps, "mod": json, "cls": types.FunctionType}
MATCH_ROUTES = [
    ("match planted:\n    case {'fn': f}:\n        print('ESCAPED', f)", "it is a function"),
    ("match planted:\n    case {'mod': m, **rest}:\n        print('ESCAPED', m)", "it is a module"),
    (
        "match [planted['x'] if 0 else 1, planted]:\n    case [_, {'cls': c}]:\n        print('ESCAPED', c)",
        "it is a class",
    ),
    ("match list(planted.values()):\n    case [f, *rest]:\n        print('ESCAPED', f)", "it is a function"),
    # a star capture is a plain list (admitted as such); its items are checked when read
    (
        "match list(planted.values()):\n    case [_, *rest]:\n        match rest:\n"
        "            case [m, _]:\n                print('ESCAPED', m)",
        "it is a module",
    ),
    (
        "match list(planted.values()):\n    case [(1 | 2) | _ as f, _, _] if f:\n        print('ESCAPED', f)",
        "it is a function",
    ),
]


@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize(("code", "reason"), MATCH_ROUTES)
def test_match_captures_pass_the_value_check(mode: Mode, code: str, reason: str) -> None:
    """A container that holds host objects (planted here: none is known to remain) gives
    none of them through a pattern."""
    glb, buffer = _globals(mode)
    glb["planted"] = dict(PLANTED)
    with pytest.raises(SandboxViolation, match=reason):
        _exec(code, glb)
    assert "ESCAPED" not in "".join(buffer.parts)


def test_match_companion_captures_were_unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the capture check, the same patterns hand out the planted function."""
    monkeypatch.setattr(transform, "_captures", lambda pattern: [])
    glb, buffer = _globals()
    glb["planted"] = dict(PLANTED)
    _exec(MATCH_ROUTES[0][0], glb)
    assert "ESCAPED <function dumps" in "".join(buffer.parts)


@pytest.mark.parametrize("mode", ALL_MODES)
def test_match_still_binds_what_the_program_may_hold(mode: Mode) -> None:
    code = (
        "class P:\n    def __init__(self):\n        self.x = 3\n"
        "match {'a': [1, 2, 3], 'b': 'x', 'c': len}:\n"
        "    case {'a': [first, *rest], 'c': f, **others} if first == 1:\n"
        "        print(first, rest, others, f('ab'))\n"
        "match P():\n    case P(x=v) as p if v == 3:\n        print('kw', v, type(p).__name__)\n"
        "match (1, 'a'):\n    case (int(n), str() as s):\n        print(n, s)\n"
    )
    run_benign(code, mode, "1 [2, 3] {'b': 'x'} 2\nkw 3 P\n1 a\n")


# -- the round's other attacks: refused already, kept refused --------------------------------

RUNTIME_ALL_MODES: list[Attack] = [
    A("X = type('X', (), {})\nprint('ESCAPED', X)", "L4-runtime-guard", "type() with three arguments is not allowed"),
    A("t = type(type)\nprint('ESCAPED', t('X', (), {}))", "TypeError", "'TypeView' object is not callable"),
    A("class M(type(type)):\n    pass\nprint('ESCAPED', M)", "L4-runtime-guard", "base classes must be plain classes"),
    A("class C(type(len)):\n    pass\nprint('ESCAPED')", "L4-runtime-guard", "base classes must be plain classes"),
    A("class A:\n    pass\nsetattr(A, '__init__', print)\nprint('ESCAPED')", "L4-runtime-guard",
      "attribute '__init__' is not allowed"),
    A("setattr(len, 'x', 1)\nprint('ESCAPED')", "L4-runtime-guard",
      "cannot modify objects of type 'builtin_function_or_method'"),
    A("class A:\n    pass\ndelattr(A, '__init__')\nprint('ESCAPED')", "L4-runtime-guard",
      "attribute '__init__' is not allowed"),
    A("print(hasattr(len, '__self__'))\nprint('ESCAPED', getattr(len, '__self__', 2))", "L4-runtime-guard",
      "attribute '__self__' is not allowed"),
    A("class A:\n    @property\n    def p(self):\n        return 1\nprint('ESCAPED', A.p)", "AttributeError",
      "a property is read on an instance"),
    A("print('ESCAPED', property(len))", "L4-runtime-guard",
      "property() accepts only functions defined in the program"),
    A("print('ESCAPED', staticmethod(len))", "L4-runtime-guard",
      "staticmethod() accepts only functions defined in the program"),
    A("print('ESCAPED', classmethod(print))", "L4-runtime-guard",
      "classmethod() accepts only functions defined in the program"),
    A("class S(str):\n    def __hash__(self):\n        return hash('__init__')\n"
      "    def __eq__(self, o):\n        return True\n"
      "class A:\n    def f(self):\n        return getattr(super(), S('__reduce_ex__'))\nprint('ESCAPED', A().f())",
      "L4-runtime-guard", "attribute '__reduce_ex__' is not allowed"),
    A("class S(str):\n    def startswith(self, *a):\n        return False\n"
      "print('ESCAPED', getattr(len, S('__self__')))",
      "L4-runtime-guard", "attribute '__self__' is not allowed"),
    A("def g():\n    yield 1\nprint('ESCAPED', getattr(g(), 'gi' + '_frame'))", "L4-runtime-guard",
      "attribute 'gi_frame' is not allowed"),
    A("try:\n    (1).foo\nexcept AttributeError as e:\n    print('ESCAPED', getattr(e, 'o' + 'bj'))",
      "L4-runtime-guard", "attribute 'obj' is not allowed"),
    A("print('ESCAPED', getattr(type, 'mro'))", "L4-runtime-guard", "attribute 'mro' is not allowed"),
    A("print('ESCAPED', getattr(zip([1]), '__reduce__'))", "L4-runtime-guard", "attribute '__reduce__' is not allowed"),
    A("def f():\n    pass\nprint('ESCAPED', getattr(f, '__defaults__'))", "L4-runtime-guard",
      "attribute '__defaults__' is not allowed"),
    A("print('ESCAPED', '{0.gi_frame}'.format((i for i in [1])))", "L4-runtime-guard",
      "attribute 'gi_frame' is not allowed"),
    A("print('ESCAPED', '{0.__class__.__base__}'.format(1))", "L4-runtime-guard",
      "attribute '__base__' is not allowed"),
    A("class P:\n    pass\nmatch (i for i in [1]):\n    case P(gi_frame=f):\n        print('ESCAPED', f)",
      "L2-validate", "attribute 'gi_frame' is not allowed"),
    A("class C:\n    def __enter__(self):\n        return self\n    def __exit__(self, t, v, *rest):\n"
      "        print('ESCAPED', getattr(rest[0], 'tb_' + 'frame'))\n        return True\nwith C():\n    1/0",
      "L4-runtime-guard", "attribute 'tb_frame' is not allowed"),
    A("class A:\n    def __init_subclass__(cls):\n        pass\nprint('ESCAPED')", "L2-validate",
      "'__init_subclass__' may not be bound"),
    A("class A:\n    def __set_name__(self, o, n):\n        pass\nprint('ESCAPED')", "L2-validate",
      "'__set_name__' may not be bound"),
    A("class A:\n    def __class_getitem__(cls, i):\n        pass\nprint('ESCAPED')", "L2-validate",
      "'__class_getitem__' may not be bound"),
    A("class F:\n    def __format__(self, spec):\n        return spec\nprint('ESCAPED', f'{F():x}')", "L2-validate",
      "'__format__' may not be bound"),
    A("try:\n    raise ExceptionGroup('x', [ValueError(1)])\nexcept* ValueError as eg:\n    print('ESCAPED', eg)",
      "L2-validate", "except* is not allowed"),
]  # fmt: skip

RUNTIME_IMPORT_MODES: list[Attack] = [
    A("import operator\nclass S(str):\n    pass\nprint('ESCAPED', operator.attrgetter(S('__class__.__base__'))(1))",
      "TypeError", "attribute name must be a string"),
    A("import operator\nprint('ESCAPED', operator.methodcaller('__getattribute__', '__class__')(1))",
      "L4-runtime-guard", "attribute '__getattribute__' is not allowed"),
    A("import operator\nprint('ESCAPED', operator.attrgetter('gi_frame')((i for i in [1])))",
      "L4-runtime-guard", "attribute 'gi_frame' is not allowed"),
    A("import operator\nprint('ESCAPED', operator.methodcaller('mro')(int))", "L4-runtime-guard",
      "attribute 'mro' is not allowed"),
    A("import functools\np = functools.partial(len)\np.func = print\nprint('ESCAPED')", "L4-runtime-guard",
      "cannot modify objects of type 'partial'"),
    A("import dataclasses\n@dataclasses.dataclass\nclass R:\n    a: int = 0\nf = dataclasses.fields(R)[0]\n"
      "f.name = '__class__'\nprint('ESCAPED')", "L4-runtime-guard", "cannot modify objects of type 'Field'"),
    A("import dataclasses\n@dataclasses.dataclass\nclass R:\n    a: int = 0\n"
      "d = dataclasses.asdict(R(a=type(len)), dict_factory=lambda kv: kv)\nprint('ESCAPED', d[0][1](1))",
      "TypeError", "'TypeView' objects cannot be copied in the sandbox"),
    A("import typing\nclass C(typing.Generic):\n    pass\nprint('ESCAPED')", "L4-runtime-guard",
      "base classes must be plain classes"),
    A("import io\nprint('ESCAPED', io.BytesIO(b'abc').getbuffer())", "L4-runtime-guard",
      "BytesIO.getbuffer is not allowed"),
    A("import io\nclass B(io.BytesIO):\n    pass\nprint('ESCAPED')", "L4-runtime-guard", "cannot be subclassed"),
    A("import csv, io\nw = csv.DictWriter(io.StringIO(), ['a'])\nw.writer = 1\nprint('ESCAPED')", "L4-runtime-guard",
      "cannot modify objects of type 'DictWriter'"),
    A("import hashlib\nclass H(hashlib.blake2b):\n    pass\nprint('ESCAPED', H)", "TypeError",
      "is not an acceptable base type"),
    A("import pprint\nclass C:\n    def __repr__(self):\n        return type(len)\n"
      "pprint.pprint(C())\nprint('ESCAPED')",
      "TypeError", "__repr__ returned non-string"),
]  # fmt: skip


@pytest.mark.parametrize("mode", ALL_MODES)
def test_round_four_constructs_stay_refused(mode: Mode) -> None:
    run_attacks(RUNTIME_ALL_MODES, mode)


@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_round_four_modules_stay_refused(mode: Mode) -> None:
    run_attacks(RUNTIME_IMPORT_MODES, mode)


class _Host:
    """A host object whose public method returns a host function (as a planted stand-in
    for any method whose result only the program's call guard would have checked)."""

    def get(self) -> object:
        return json.dumps


def test_methodcaller_admits_what_the_method_returns() -> None:
    """``@operator.methodcaller(...)`` applies as a decorator, whose call the program's
    code does not wrap: the shim checks the result itself."""
    methodcaller = module_proxies.build_proxies("high")["operator"].methodcaller
    with pytest.raises(SandboxViolation, match="it is a function"):
        methodcaller("get")(_Host())
    assert methodcaller("upper")("ab") == "AB"


class _NoDecoratorCheck(SandboxTransformer):
    """The compile policy as it was before decorated definitions were call-checked."""

    def check_decorated(self, node: Any) -> Any:
        return node


def test_decorator_results_are_not_call_guarded_companion() -> None:
    """Why the shim checks: without the compile policy's check of decorated definitions
    (``entry_guard.check_decorated``, a later defence), a decorator's result is bound
    without ``_call_`` (a decorator that hands back a planted host function binds it as is)."""
    glb, buffer = _globals()
    glb["planted"] = SafeCallable(lambda fn: json.dumps, "planted")
    code = "@planted\ndef f():\n    pass\nprint('ESCAPED', f)"
    exec(compile_restricted(code, filename="<sandbox>", mode="exec", policy=_NoDecoratorCheck), glb)
    assert "ESCAPED <function dumps" in "".join(buffer.parts)
    with pytest.raises(SandboxViolation, match=r"call result is not allowed \(it is a function\)"):
        _exec(code, glb)


@pytest.mark.parametrize("mode", ALL_MODES)
def test_match_captures_keep_their_scopes(mode: Mode) -> None:
    """The capture check rebinds each name where the pattern bound it: a ``global`` or
    ``nonlocal`` name, a class body's name, a name bound in each ``|`` alternative (the
    output is what plain CPython prints)."""
    code = (
        "x = None\ndef f(v):\n    global x\n    match v:\n        case [x, *_]:\n            return x\n"
        "class K:\n    match (1, 2):\n        case (a, b):\n            s = a + b\n"
        "def g(v):\n    y = 0\n    def h():\n        nonlocal y\n        match v:\n"
        "            case {'k': y} | {'j': y}:\n                pass\n        return y\n    return h()\n"
        "print(f([5, 6]), x, K.s, g({'j': 7}), g({'k': 8}))\n"
    )
    run_benign(code, mode, "5 5 3 7 8\n")


# -- the host's stand-in classes are shared by every cell: no program may modify them ------

STAND_IN_WRITES = [
    "import enum\nsetattr(enum.Enum, 'flag', 'set by cell 1')",
    "import enum\nenum.IntEnum.flag = 1",
    "import abc\nabc.ABC.flag = 1",
    "import enum\ndelattr(enum.Enum, 'flag')",
]


@pytest.mark.parametrize("code", STAND_IN_WRITES)
def test_a_stand_in_class_refuses_writes(code: str) -> None:
    glb, _ = _globals("standard")
    with pytest.raises(SandboxViolation, match="cannot modify objects of type 'type'"):
        _exec(code, glb)


def test_a_stand_in_companion_was_writable_for_later_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the check the write lands on the class every later cell of the session sees."""
    monkeypatch.setattr(guards, "STAND_INS", set())
    glb, buffer = _globals("standard")
    _exec(STAND_IN_WRITES[0], glb)
    _exec("import enum\nprint(enum.Enum.flag)", glb)
    assert "set by cell 1" in "".join(buffer.parts)
    monkeypatch.delattr(shims_classes.Enum, "flag")


def test_the_program_s_own_subclasses_stay_writable() -> None:
    glb, buffer = _globals("standard")
    code = "import enum\nclass Color(enum.Enum):\n    RED = 1\nColor.note = 'ok'\nprint(Color.note, Color.RED.value)"
    _exec(code, glb)
    assert "".join(buffer.parts) == "ok 1\n"
