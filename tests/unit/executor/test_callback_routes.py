"""Values C code hands to the program's own code (``executor.python_layer.entry_guard``).

A callback receives what its caller passes: ``sorted(key=f)``, ``map``, ``filter``,
``functools.reduce``, ``itertools`` (``groupby`` keys, ``accumulate``, ``starmap``), json's
``default``, ``__eq__``/``__lt__`` called by ``in`` and ``sorted``, a generator's ``send``,
what ``yield from`` returns, a ``with`` target, a ``match`` capture. None of these passes
through an attribute read, item read, iteration or call of the program's code, so the
guards never saw those values; the entry check does.

Each route runs twice with the executor's real globals and compile policy (in this
process: the Python layer alone is under test), fed a container holding a forbidden object
(a host function, an unlisted class, a module, a frame, a code object, a descriptor; no
host code the program reaches builds one, so the container is planted here, standing for
the first that would):
  * as it is: refused by the runtime guard, the reason named, the program's callback
    never holding the object;
  * with the entry checks switched off (the four guard names bound to pass-throughs): the
    callback holds the forbidden object, so each route is a real way in.
Every route is also run end to end through ``execute()`` on plain values (it still works).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Generator
from typing import Any

import pytest
from RestrictedPython.compile import compile_restricted
from terminai_apts.executor import SandboxConfig, execute
from terminai_apts.executor.policy import Mode
from terminai_apts.executor.python_layer import guards
from terminai_apts.executor.python_layer.entry_guard import ENTRY_NAMES
from terminai_apts.executor.python_layer.transform import SandboxTransformer
from terminai_apts.executor.python_layer.wrappers import SandboxViolation

from tests.unit.executor import reachability
from tests.unit.executor.attack_generator import ENTRY_CHECKS_OFF


def _frame() -> object:
    return sys._getframe()


# kind (as `wrappers.refusal` names it) -> a forbidden object of that kind
FORBIDDEN: dict[str, object] = {
    "function": json.dumps,
    "class": sqlite3.Connection,
    "module": os,
    "frame": _frame(),
    "code": _frame.__code__,
    "descriptor": property(len),
}

PREAMBLE = """
import functools, itertools, heapq, json
got = []
def keep(o, *rest):
    got.append(o)
    return 0
def keep_star(*a):
    got.extend(a)
    return 0
class Eq:
    def __eq__(self, other):
        got.append(other)
        return False
class Lt:
    def __lt__(self, other):
        got.append(other)
        return False
    def __gt__(self, other):
        got.append(other)
        return False
def recv():
    while True:
        got.append((yield))
def outer(inner):
    got.append((yield from inner))
    yield 0
"""

# route -> a program handing the items of `leak` (a list the program holds) to its code
ROUTES: dict[str, str] = {
    "sorted key": "sorted(leak, key=keep)",
    "list.sort key": "xs = list(leak)\nxs.sort(key=keep)",
    "min key": "min(leak, key=keep)",
    "max key": "max(leak, key=keep)",
    "lambda key": "sorted(leak, key=lambda o: got.append(o) or 0)",
    "lambda *args": "list(map(lambda *a: got.extend(a), leak))",
    "map": "list(map(keep, leak))",
    "filter": "list(filter(keep, leak))",
    "functools.reduce": "functools.reduce(lambda a, b: got.append(b), leak, 0)",
    "functools.partial": "list(map(functools.partial(keep), leak))",
    "functools.cmp_to_key": "sorted(leak + leak, key=functools.cmp_to_key(lambda a, b: keep(a)))",
    "itertools.groupby key": "list(itertools.groupby(leak, key=keep))",
    "itertools.accumulate func": "list(itertools.accumulate([0] + leak, lambda a, b: got.append(b)))",
    "itertools.starmap": "list(itertools.starmap(keep_star, [leak]))",
    "itertools.dropwhile": "list(itertools.dropwhile(keep, leak))",
    "heapq.nsmallest key": "heapq.nsmallest(1, leak + leak, key=keep)",
    "json default": "json.dumps(leak, default=keep)",
    "__eq__ by in": "Eq() in leak",
    "__eq__ by list.count": "leak.count(Eq())",
    "__lt__ by sorted": "sorted(leak + [Lt()])",
    "generator send": "g = recv()\nnext(g)\nlist(map(g.send, leak))",
    "yield from result": "list(outer(leak_gen))",
    "with target": "with leak_cm as m:\n    got.append(m)",
    "match sequence capture": "match leak:\n    case [m]:\n        got.append(m)",
    "match mapping capture": "match dict(zip(['k'], leak)):\n    case {'k': m}:\n        got.append(m)",
}


def _host_gen(value: object) -> Generator[int, None, object]:
    yield 1
    return value  # what `yield from` evaluates to


class _HostContext:
    def __init__(self, value: object) -> None:
        self.value = value

    def __enter__(self) -> object:
        return self.value

    def __exit__(self, *exc: object) -> None:
        return None


def run_here(code: str, leaked: object, hook: bool = True, mode: Mode = "high") -> dict[str, Any]:
    """Run the route; its scope (also when a guard refused, as ``scope["refusal"]``)."""
    injected = {"leak": [leaked], "leak_gen": _host_gen(leaked), "leak_cm": _HostContext(leaked)}
    scope = dict(reachability.sandbox_globals(mode, injected))
    if not hook:
        scope.update(ENTRY_CHECKS_OFF)
    byte_code = compile_restricted(PREAMBLE + code, filename="<sandbox>", mode="exec", policy=SandboxTransformer)
    try:
        exec(byte_code, scope)
    except SandboxViolation as refusal:  # e.g. `max` returning the object: after the callback
        scope["refusal"] = refusal
    return scope


def test_the_entry_guard_names_are_guard_names() -> None:
    glb = reachability.sandbox_globals("high")
    assert set(ENTRY_NAMES) <= set(glb)
    assert set(ENTRY_NAMES) <= reachability.INTERNAL_NAMES


@pytest.mark.parametrize("kind", sorted(FORBIDDEN))
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_callback_route_is_refused(route: str, kind: str) -> None:
    scope = run_here(ROUTES[route], FORBIDDEN[kind])
    expected = f"a value passed to the program's code is not allowed (it is a {kind})"
    assert str(scope.get("refusal")) == expected
    assert all(reachability.classify(x) is None for x in scope["got"])


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_callback_route_delivers_with_the_entry_check_off(route: str) -> None:
    """Not vacuous: each route hands the forbidden object to the program's code when the
    entry checks are pass-throughs (the guards of reads, iteration and calls still on)."""
    for kind, leaked in FORBIDDEN.items():
        scope = run_here(ROUTES[route], leaked, hook=False)
        held = [x for x in scope["got"] if x is leaked]
        assert held, f"{route}: the program's code never received the {kind}"
        assert reachability.classify(held[0]) is not None


# -- every way a program function takes parameters, called by host code (as C would) ------
FUNCTIONS = """
got = []
def pos(a):
    got.append(a)
def default(a, b=1):
    got.append(b)
def kwonly(*, k):
    got.append(k)
def posonly(a, /):
    got.append(a)
def star(*a):
    got.extend(a)
def starstar(**kw):
    got.extend(kw.values())
lam = lambda a: got.append(a)
lam_star = lambda *a: got.extend(a)
lam_kw = lambda **k: got.extend(k.values())
class C:
    def method(self, a):
        got.append(a)
    def __exit__(self, t, e, tb):
        got.append(tb)
"""

CALLS: dict[str, tuple[str, tuple[object, ...], dict[str, object]]] = {
    "positional": ("pos", ("X",), {}),
    "keyword for a default": ("default", (1,), {"b": "X"}),
    "keyword-only": ("kwonly", (), {"k": "X"}),
    "positional-only": ("posonly", ("X",), {}),
    "*args": ("star", (1, "X"), {}),
    "**kwargs": ("starstar", (), {"x": "X"}),
    "lambda": ("lam", ("X",), {}),
    "lambda *args": ("lam_star", ("X",), {}),
    "lambda **kwargs": ("lam_kw", (), {"x": "X"}),
}


def _call(name: str, args: tuple[object, ...], kwargs: dict[str, object], leaked: object, hook: bool) -> list[Any]:
    scope = dict(reachability.sandbox_globals("high"))
    if not hook:
        scope.update(ENTRY_CHECKS_OFF)
    exec(compile_restricted(FUNCTIONS, filename="<sandbox>", mode="exec", policy=SandboxTransformer), scope)
    swap = {"X": leaked}
    scope[name](*(swap.get(a, a) for a in args), **{k: swap.get(v, v) for k, v in kwargs.items()})  # type: ignore[call-overload]
    got: list[Any] = scope["got"]
    return got


@pytest.mark.parametrize("call", sorted(CALLS))
def test_every_parameter_kind_is_checked(call: str) -> None:
    name, args, kwargs = CALLS[call]
    for kind, leaked in FORBIDDEN.items():
        with pytest.raises(SandboxViolation, match=rf"\(it is a {kind}\)"):
            _call(name, args, kwargs, leaked, hook=True)
        assert any(x is leaked for x in _call(name, args, kwargs, leaked, hook=False)), (call, kind)


def test_a_method_and_exit_are_checked_the_traceback_dropped_first() -> None:
    scope = dict(reachability.sandbox_globals("high"))
    exec(compile_restricted(FUNCTIONS, filename="<sandbox>", mode="exec", policy=SandboxTransformer), scope)
    instance = scope["C"]()
    with pytest.raises(SandboxViolation, match=r"\(it is a module\)"):
        instance.method(os)
    try:
        raise ValueError("x")
    except ValueError as error:  # what `with` passes when its body raised
        instance.__exit__(ValueError, error, error.__traceback__)
    assert scope["got"] == [None]  # blanked before the check, so `with` keeps working


def test_a_host_python_method_arrives_wrapped() -> None:
    """The check's answer is what the parameter becomes: a Python method of a host object
    arrives in a def as a ``SafeCallable`` (callable, no ``__func__``), as when the program
    reads it; a lambda refuses it."""
    import collections

    counter = collections.Counter("aab")
    scope = dict(reachability.sandbox_globals("high"))
    exec(compile_restricted(FUNCTIONS, filename="<sandbox>", mode="exec", policy=SandboxTransformer), scope)
    scope["pos"](counter.most_common)
    (held,) = scope["got"]
    assert type(held).__name__ == "SafeCallable" and held(1) == [("a", 2)]
    assert reachability.classify(held) is None
    # a lambda cannot rebind its parameters: it refuses what a def receives wrapped
    with pytest.raises(SandboxViolation, match=r"not allowed in a lambda \(it is a method of a host object\)"):
        scope["lam"](counter.most_common)
    assert len(scope["got"]) == 1


def test_plain_values_keep_their_identity() -> None:
    """The fast path: parameters of plain kinds (and admitted kinds, learned once) are
    passed on as they are, the same tuple and dict objects."""
    values = (1, "s", [1], {"k": 1}, None, 1.5)
    assert guards.guarded_enter(*values) == values
    args = (1, [2])
    assert guards.guarded_enter_star(args) is args
    kwargs: dict[str, object] = {"a": 1}
    assert guards.guarded_enter_kw(kwargs) is kwargs


def test_special_methods_c_would_call_with_its_own_values_stay_refused() -> None:
    """``__missing__``, ``__init_subclass__``, ``__set_name__``, ``__class_getitem__``,
    ``__format__``, ``__get__``/``__set__`` (descriptors), ``__getattr__``: C calls each with
    values of its own choosing, so a class body may not define them."""
    for name in (
        "__missing__", "__init_subclass__", "__set_name__", "__class_getitem__", "__format__", "__get__",
        "__set__", "__delete__", "__getattr__", "__getattribute__", "__reduce__", "__del__",
    ):  # fmt: skip
        result = execute(f"class A:\n    def {name}(self, *a):\n        return 0\nprint('ESCAPED')", _cfg("high"))
        assert not result.success and "ESCAPED" not in result.stdout, name
        assert result.refused_by in ("L2-validate", "L3-compile"), (name, result.refused_by)


def _cfg(mode: Mode) -> SandboxConfig:
    return SandboxConfig(timeout_seconds=20, security_mode=mode)


BENIGN = """
import functools, itertools, heapq, json, re, collections
out = []
out.append(sorted([3, 1, 2], key=lambda x: -x))
xs = [3, 1]
xs.sort(key=abs)
out.append((xs, min([1, -5], key=abs), max([1, -5], key=lambda v: abs(v))))
out.append((list(map(lambda *a: sum(a), [1], [2])), list(filter(None, [0, 1]))))
out.append(functools.reduce(lambda a, b: a * b, [1, 2, 3], 1))
out.append([k for k, g in itertools.groupby('aab', key=str.upper)])
out.append(list(itertools.accumulate([1, 2, 3], lambda a, b: a + b)))
out.append(list(itertools.starmap(lambda a, b=0, *r, **kw: a + b, [(1, 2)])))
out.append(heapq.nsmallest(1, [5, 4], key=lambda v: v))
out.append(re.sub('a', lambda m: m.group(0).upper(), 'banana'))
out.append(json.loads('{"a": [1.5]}', object_hook=lambda d: sorted(d), parse_float=lambda s: 'f' + s))
out.append(json.dumps({1, 2} and [1], default=str))
d = collections.defaultdict(lambda: 'new')
out.append(d['k'])
class P:
    def __init__(self, n, *, tag='t', **extra):
        self.n = n
        self.tag = tag
    def __lt__(self, other):
        return self.n < other.n
    def __eq__(self, other):
        return isinstance(other, P) and self.n == other.n
    def __enter__(self):
        return self
    def __exit__(self, t, e, tb):
        return t is KeyError
out.append([p.n for p in sorted([P(2), P(1)])])
out.append((P(1) in [P(0), P(1)], [P(1)].index(P(1))))
with P(5) as p:
    raise KeyError('swallowed')
out.append(p.n)
def gen():
    total = 0
    while True:
        got = yield total
        total += got
g = gen()
next(g)
out.append([g.send(1), g.send(2)])
def outer():
    r = yield from inner()
    yield r
def inner():
    yield 1
    return 'done'
out.append(list(outer()))
match [1, (2, 3), {'k': 4}]:
    case [a, (b, *c), {'k': d, **rest}]:
        out.append((a, b, c, d, rest))
match P(7):
    case P(n=7) as q:
        out.append(q.n)
print(out)
"""
BENIGN_OUT = (
    "[[3, 2, 1], ([1, 3], 1, -5), ([3], [1]), 6, ['A', 'B'], [1, 3, 6], [3], [4], 'bAnAnA', ['a'], '[1]', 'new',"
    " [1, 2], (True, 0), 5, [1, 3], [1, 'done'], (1, 2, [3], 4, {}), 7]\n"
)


@pytest.mark.parametrize("mode", ["standard", "high"])
def test_every_route_still_works_end_to_end(mode: Mode) -> None:
    result = execute(BENIGN, _cfg(mode))
    assert result.success, result.error
    assert result.stdout == BENIGN_OUT


def test_routes_in_strict_mode() -> None:
    code = (
        "def k(x, *r, **kw):\n    return -x\n"
        "print(sorted([1, 2], key=k), list(map(lambda a: a + 1, [1])), list(filter(lambda a: a, [0, 2])),"
        " min([3, 4], key=lambda v: -v))\n"
    )
    result = execute(code, _cfg("strict"))
    assert result.success, result.error
    assert result.stdout == "[2, 1] [2] [2] 4\n"
