"""Red team, fifth round: the function-entry check and the stand-in write guard, attacked.

Three holes were found and closed here:

* A decorated ``def`` or ``class`` bound what its last decorator returned without any
  check: applying a decorator is a call, but not an ``ast.Call``, so ``_call_`` never saw
  it. With ``functools.partial`` (or, in every mode, stacked decorators such as
  ``@d.get`` over ``@(lambda f: 'k')``, or ``@next`` over ``@(lambda f: it)``) that is an
  unchecked read of any container's items: a list or dict the program holds is admitted
  without looking inside, its items are checked when read, and this read was not. No
  container holding a forbidden object is known in the program's reach (the reachability
  walk finds none), so the container is planted here, as in ``test_callback_routes``.
  Decorated definitions are now followed by ``name = _call_(name)``
  (``entry_guard.EntryGuardMixin.check_decorated``).
* ``dataclasses.dataclass`` accepted the host's ``CacheInfo`` (a class of the sandbox's
  module, shared by every cell of a session) and added methods to it: its new
  ``__init__`` took no argument, so every later ``cache_info()`` in the session failed.
  The decorator now refuses every stand-in (``wrappers.STAND_INS``).
* A list target (``[a] = x``, ``for [a] in xs``, ``with cm as [a]``, nested in a tuple,
  in a comprehension) unpacked its items in C: RestrictedPython guards only tuple targets.
  Every list target is now compiled as the tuple target it means
  (``transform.list_targets_as_tuples``).

Each has a companion showing the route open without its check. The other attacks of the
round were refused already; the ones below keep them refused, each by the layer and for
the reason it names.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from RestrictedPython.compile import compile_restricted
from terminai_apts.executor.policy import Mode
from terminai_apts.executor.python_layer import module_proxies, output, stdlib_shims
from terminai_apts.executor.python_layer import sandbox_globals as globals_
from terminai_apts.executor.python_layer.transform import SandboxTransformer
from terminai_apts.executor.python_layer.wrappers import SandboxViolation

from tests.unit.executor import reachability
from tests.unit.executor.test_callback_routes import FORBIDDEN
from tests.unit.executor.test_python_layer_attacks import ALL_MODES, IMPORT_MODES, A, run_attacks, run_benign


class _NoDecoratorCheck(SandboxTransformer):
    """The compile policy as it was: a decorated definition binds its decorator's result."""

    def check_decorated(self, node: Any) -> Any:
        return node


# route -> a program binding `out` to the first item of `leak` (a list the program holds)
# through a decorator; `strict` says whether it needs no import
DECORATOR_ROUTES: dict[str, tuple[str, bool]] = {
    "partial(dict.get)": (
        "import functools\nd = dict(zip(['k'], leak))\n@functools.partial(d.get, 'k')\ndef out():\n    pass",
        False,
    ),
    "partial(next)": ("import functools\n@functools.partial(next, iter(leak))\nclass out:\n    pass", False),
    "stacked dict.get": ("d = dict(zip(['k'], leak))\n@d.get\n@(lambda f: 'k')\ndef out():\n    pass", True),
    "stacked next": ("@next\n@(lambda c: iter(leak))\nclass out:\n    pass", True),
    "global name": (
        "d = dict(zip(['k'], leak))\ndef g():\n    global out\n    @d.get\n    @(lambda f: 'k')\n"
        "    def out():\n        pass\ng()",
        True,
    ),
    "class body": (
        "d = dict(zip(['k'], leak))\nclass K:\n    @d.get\n    @(lambda f: 'k')\n    def m(self):\n        pass\n"
        "    out = m",
        True,
    ),
}


def _run(code: str, leaked: object, mode: Mode, policy: type[SandboxTransformer] = SandboxTransformer) -> Any:
    scope = dict(reachability.sandbox_globals(mode, {"leak": [leaked]}))
    exec(compile_restricted(code, filename="<sandbox>", mode="exec", policy=policy), scope)
    return scope.get("out", scope.get("K"))


def _out(value: Any) -> Any:
    return value.out if isinstance(value, type) and value.__name__ == "K" else value


@pytest.mark.parametrize("kind", sorted(FORBIDDEN))
@pytest.mark.parametrize("route", sorted(DECORATOR_ROUTES))
def test_a_decorator_result_passes_the_call_check(route: str, kind: str) -> None:
    code, strict = DECORATOR_ROUTES[route]
    for mode in ALL_MODES if strict else IMPORT_MODES:
        with pytest.raises(SandboxViolation, match=rf"call result is not allowed \(it is a {kind}\)"):
            _run(code, FORBIDDEN[kind], mode)


@pytest.mark.parametrize("route", sorted(DECORATOR_ROUTES))
def test_a_decorator_result_companion_bound_the_item_unchecked(route: str) -> None:
    """Not vacuous: without the check each route binds the planted object as it is."""
    code, _ = DECORATOR_ROUTES[route]
    for kind, leaked in FORBIDDEN.items():
        got = _out(_run(code, leaked, "high", _NoDecoratorCheck))
        assert got is leaked, f"{route}: the {kind} was not bound"
        assert reachability.classify(got) is not None


@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_decorators_programs_use_still_work(mode: Mode) -> None:
    code = (
        "import functools, dataclasses, abc\n"
        "def twice(f):\n    @functools.wraps(f)\n    def inner(*a):\n        return 2 * f(*a)\n    return inner\n"
        "@twice\n@twice\ndef one():\n    return 1\n"
        "@functools.lru_cache(maxsize=None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "@dataclasses.dataclass(frozen=True)\nclass P:\n    x: int = 0\n"
        "class B(abc.ABC):\n    @abc.abstractmethod\n    def area(self):\n        pass\n"
        "class K:\n    def __init__(self):\n        self.val = 1\n"
        "    @property\n    def v(self):\n        return self.val\n"
        "    @v.setter\n    def v(self, value):\n        self.val = value\n"
        "    @staticmethod\n    def s(a):\n        return a + 1\n"
        "    @classmethod\n    def make(cls):\n        return cls()\n"
        "k = K.make()\nk.v = 5\n"
        "def reg():\n    global hook\n    @twice\n    def hook():\n        return 3\nreg()\n"
        "print(one(), fib(20), P(3).x, k.v, K.s(1), hook(), one.__name__)\n"
    )
    run_benign(code, mode, "4 6765 3 5 2 6 one\n")


def test_plain_decorators_work_in_strict_mode() -> None:
    code = (
        "def twice(f):\n    def inner(*a):\n        return 2 * f(*a)\n    return inner\n"
        "@twice\n@twice\ndef one():\n    return 1\n"
        "def tag(c):\n    c.tagged = True\n    return c\n"
        "@tag\nclass C:\n    pass\n"
        "print(one(), C.tagged)\n"
    )
    run_benign(code, "strict", "4 True\n")


# -- @dataclass on a host stand-in ----------------------------------------------------------

CACHE_INFO_DATACLASS = (
    "import dataclasses, functools\nC = type(functools.lru_cache(len).cache_info())\n"
    "dataclasses.dataclass(C)\nprint('ESCAPED')"
)


def _globals(mode: Mode = "standard") -> tuple[dict[str, Any], output.OutputBuffer]:
    buffer = output.OutputBuffer(100_000)
    return globals_.build_globals(mode, module_proxies.build_proxies(mode), buffer, {}), buffer


def _exec(code: str, glb: dict[str, Any]) -> None:
    exec(compile_restricted(code, filename="<sandbox>", mode="exec", policy=SandboxTransformer), glb)


@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_dataclass_refuses_the_host_s_stand_ins(mode: Mode) -> None:
    reason = "@dataclass applies to the program's own classes only"
    run_attacks(
        [
            A(CACHE_INFO_DATACLASS, "L4-runtime-guard", reason),
            A(CACHE_INFO_DATACLASS.replace("dataclass(C)", "dataclass(order=True)(C)"), "L4-runtime-guard", reason),
            A(
                "import dataclasses, enum\ndataclasses.dataclass(enum.IntEnum)\nprint('ESCAPED')",
                "L4-runtime-guard",
                reason,
            ),
            A("import dataclasses, abc\ndataclasses.dataclass(abc.ABC)\nprint('ESCAPED')", "L4-runtime-guard", reason),
        ],
        mode,
    )


def test_dataclass_stand_in_companion_broke_later_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the check the decorator added an ``__init__`` to the shared ``CacheInfo``:
    the next cell's ``cache_info()`` failed."""
    cache_info = stdlib_shims.CACHE_INFO
    saved = dict(cache_info.__dict__)
    monkeypatch.setattr(stdlib_shims, "STAND_INS", set())
    glb, buffer = _globals()
    try:
        _exec(CACHE_INFO_DATACLASS, glb)
        assert "ESCAPED" in "".join(buffer.parts)
        with pytest.raises(TypeError, match=r"CacheInfo\.__init__\(\) takes 1 positional argument"):
            _exec("import functools\nprint(functools.lru_cache(len).cache_info())", glb)
    finally:
        for name in set(cache_info.__dict__) - set(saved):
            type.__delattr__(cache_info, name)
        for name, value in saved.items():
            if cache_info.__dict__.get(name) is not value and name not in ("__dict__", "__weakref__", "__doc__"):
                type.__setattr__(cache_info, name, value)
    assert not dataclasses.is_dataclass(cache_info)
    glb, buffer = _globals()
    _exec("import functools\nprint(functools.lru_cache(len).cache_info().hits)", glb)
    assert "".join(buffer.parts) == "0\n"


def test_the_program_s_own_namedtuple_stays_a_dataclass_target() -> None:
    glb, buffer = _globals()
    _exec(
        "import dataclasses, collections\nP = collections.namedtuple('P', 'a')\ndataclasses.dataclass(P)\nprint('ok')",
        glb,
    )
    assert "".join(buffer.parts) == "ok\n"


# -- list targets: `[a] = x` unpacked in C ------------------------------------------------


class _NoListTargets(SandboxTransformer):
    """The compile policy as it was: list targets compiled as written."""

    def visit_Module(self, node: Any) -> Any:
        return super(SandboxTransformer, self).visit_Module(node)


# route -> a program binding `out` (or appending to `got`) to the first item of `leak`
LIST_TARGET_ROUTES: dict[str, str] = {
    "assignment": "[out] = leak",
    "two names": "[out, b] = leak + [1]",
    "nested in a tuple": "(a, [out]) = (1, leak)",
    "chained": "x = [out] = leak",
    "for": "for [out] in [leak]:\n    pass",
    "comprehension": "got = [a for [a] in [leak]]",
    "with": (
        "class CM:\n    def __enter__(self):\n        return leak\n    def __exit__(self, *a):\n        return False\n"
        "with CM() as [out]:\n    pass"
    ),
    "in a function": "def f():\n    [o] = leak\n    got.append(o)\ngot = []\nf()",
}


def _run_scope(code: str, leaked: object, mode: Mode, policy: type[SandboxTransformer] = SandboxTransformer) -> Any:
    scope = dict(reachability.sandbox_globals(mode, {"leak": [leaked]}))
    exec(compile_restricted(code, filename="<sandbox>", mode="exec", policy=policy), scope)
    return scope["out"] if "out" in scope else scope["got"][0]


@pytest.mark.parametrize("kind", sorted(FORBIDDEN))
@pytest.mark.parametrize("route", sorted(LIST_TARGET_ROUTES))
def test_a_list_target_unpacks_through_the_item_check(route: str, kind: str) -> None:
    for mode in ALL_MODES:
        with pytest.raises(SandboxViolation, match=rf"item is not allowed \(it is a {kind}\)"):
            _run_scope(LIST_TARGET_ROUTES[route], FORBIDDEN[kind], mode)


@pytest.mark.parametrize("route", sorted(LIST_TARGET_ROUTES))
def test_a_list_target_companion_bound_the_item_unchecked(route: str) -> None:
    """Not vacuous: compiled as written, each list target binds the planted object."""
    for kind, leaked in FORBIDDEN.items():
        got = _run_scope(LIST_TARGET_ROUTES[route], leaked, "high", _NoListTargets)
        assert got is leaked, f"{route}: the {kind} was not bound"


@pytest.mark.parametrize("mode", ALL_MODES)
def test_list_targets_programs_use_still_work(mode: Mode) -> None:
    code = (
        "[a, b] = [1, 2]\n[c, [d, e]] = (3, [4, 5])\n[f, *g] = 'xyz'\n"
        "pairs = [[k, v] for [k, v] in {'p': 1, 'q': 2}.items()]\n"
        "total = 0\nfor [k, v] in pairs:\n    total += v\n"
        "print(a, b, c, d, e, f, g, pairs, total)\n"
    )
    run_benign(code, mode, "1 2 3 4 5 x ['y', 'z'] [['p', 1], ['q', 2]] 3\n")


# -- kept: the round's other attacks, refused already --------------------------------------

# routes that read the items of `leak` (planted) and were refused by a guard
KEPT_PLANTED: dict[str, str] = {
    "tuple target of a host with": (
        "class CM:\n    def __enter__(self):\n        return tuple(leak)\n    def __exit__(self, *a):\n"
        "        return False\nwith CM() as (out,):\n    pass"
    ),
    "starred for target": "for a, *b in [[1] + leak]:\n    out = b",
    "starred assignment": "a, *out = [1] + leak",
    "walrus in a comprehension": "out = [y for x in leak if (y := x)]",
    "star call of a program function": "def f(*a):\n    return a\nout = f(*leak)",
    "double-star call": "def f(**k):\n    return k\nout = f(**dict(zip(['k'], leak)))",
    "a generator's return value": (
        "def g():\n    yield 1\n    return leak\nit = g()\nnext(it)\ntry:\n    next(it)\n"
        "except StopIteration as e:\n    out = e.value[0]"
    ),
    "an exception's args by match": (
        "try:\n    raise ValueError(*leak)\nexcept ValueError as e:\n    match e.args:\n        case (out,):\n"
        "            pass"
    ),
    "format field": "out = '{0[0]}'.format(leak)",
    "generator expression": "got = []\ng = (got.append(x) for x in leak)\nnext(g)",
    "nested comprehension": "out = [y for x in [leak] for y in x]",
    "dict comprehension over zip": "out = {k: v for k, v in zip(['k'], leak)}",
    "generator expression send": "g = (x for x in leak)\nout = g.send(None)",
}


@pytest.mark.parametrize("route", sorted(KEPT_PLANTED))
def test_kept_planted_routes_stay_refused(route: str) -> None:
    with pytest.raises(SandboxViolation, match=r"is not allowed \(it is a function\)"):
        _run_scope(KEPT_PLANTED[route], FORBIDDEN["function"], "high")


EXIT_TRACEBACK = "a value passed to the program's code is not allowed (it is a traceback)"


@pytest.mark.parametrize("mode", ALL_MODES)
def test_kept_exit_and_construct_refusals(mode: Mode) -> None:
    """``__exit__`` shapes the compile policy does not blank (nested in an ``if``, a static
    method, a decorator's replacement) still never hold the traceback; ``except*``,
    ``async`` and the exception chain's dunders stay refused."""
    exit_tail = "with C():\n    1/0\n"
    enter = "    def __enter__(self):\n        return self\n"
    run_attacks(
        [
            A(
                "class C:\n    if True:\n        def __exit__(self, t, v, tb):\n            print('ESCAPED', tb)\n"
                "            return True\n" + enter + exit_tail,
                "L4-runtime-guard",
                EXIT_TRACEBACK,
            ),
            A(
                "class C:\n" + enter + "    @staticmethod\n    def __exit__(t, v, tb):\n        print('ESCAPED', tb)\n"
                "        return True\n" + exit_tail,
                "L4-runtime-guard",
                EXIT_TRACEBACK,
            ),
            A(
                "class C:\n" + enter + "    @staticmethod\n    def __exit__(*a):\n        print('ESCAPED', a)\n"
                "        return True\n" + exit_tail,
                "L4-runtime-guard",
                EXIT_TRACEBACK,
            ),
            A(
                "def deco(f):\n    def g(self, t, v, tb):\n        print('ESCAPED', tb)\n        return True\n"
                "    return g\nclass C:\n"
                + enter
                + "    @deco\n    def __exit__(self, t, v, tb):\n        pass\n"
                + exit_tail,
                "L4-runtime-guard",
                EXIT_TRACEBACK,
            ),
            A(
                "try:\n    raise ExceptionGroup('g', [ValueError(1)])\nexcept* ValueError as eg:\n    print('ESCAPED')",
                "L2-validate",
                "except* is not allowed",
            ),
            A("async def f():\n    pass\nprint('ESCAPED')", "L2-validate", "async constructs are not allowed"),
            A(
                "try:\n    raise KeyError(1) from ValueError(2)\nexcept KeyError as e:\n"
                "    print('ESCAPED', getattr(e, '__cause__'))",
                "L4-runtime-guard",
                "attribute '__cause__' is not allowed",
            ),
        ],
        mode,
    )
