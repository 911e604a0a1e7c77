"""Everyday constructs the guard now serves with sandbox-safe values: ``type(x)``,
``x.__class__`` and ``__name__`` reads (through ``getattr`` and format fields at run time),
``staticmethod``/``classmethod``, ``hasattr``, and ``setattr``/``delattr`` on the program's
own objects. Each has attack tests (refusal and reason asserted) and, where the real
builtin would escape, a companion running the attack with the real builtin installed.

They run in this process with the executor's real globals and compile policy; end to
end (validation admits the names and the ``__class__``/``__name__`` read syntax, which the
compile policy routes through ``_getattr_``) they are attacked in
``test_python_layer_attacks.test_type_and_special_reads_end_in_stand_ins``.
"""

from __future__ import annotations

import builtins
from typing import Any

import pytest
from RestrictedPython.compile import compile_restricted
from terminai_apts.executor import policy
from terminai_apts.executor.policy import Mode
from terminai_apts.executor.python_layer import api_object, guards
from terminai_apts.executor.python_layer.sandbox_builtins import TypeView
from terminai_apts.executor.python_layer.transform import SandboxTransformer
from terminai_apts.executor.python_layer.wrappers import SandboxViolation
from terminai_apts.memory import store
from terminai_apts.memory.api import open_memory

from tests.unit.executor import reachability
from tests.unit.memory.conftest import make_records

PROGRAM = """
class Err(ValueError):
    pass
class P:
    def __init__(self):
        self.v = 1
    @staticmethod
    def s(x):
        return x * 2
    @classmethod
    def make(cls):
        return cls()
    def twice(self, x):
        return x * 2
    helper = staticmethod(twice)
"""


def run_here(code: str, mode: Mode = "high", real: dict[str, Any] | None = None, **injected: object) -> Any:
    glb = reachability.sandbox_globals(mode, dict(injected))
    glb["__builtins__"] = {**glb["__builtins__"], **(real or {})}
    scope = dict(glb)
    exec(compile_restricted(code, filename="<sandbox>", mode="exec", policy=SandboxTransformer), scope)
    return scope["result"]


@pytest.fixture(scope="module")
def thermal(tmp_path_factory: pytest.TempPathFactory) -> object:
    path = tmp_path_factory.mktemp("constructs") / "mem.db"
    store.build(path, make_records())
    return api_object.wrap_api(policy.thermal_spec(str(path)), open_memory(str(path)))


@pytest.mark.parametrize("mode", ["standard", "high", "strict"])
def test_ordinary_uses_work(mode: Mode) -> None:
    code = PROGRAM + (
        "p = P()\nsetattr(p, 'w', 5)\ndelattr(p, 'v')\n"
        "try:\n    raise Err('x')\nexcept Exception as e:\n    caught = getattr(type(e), '__name__')\n"
        "result = [type(1) is int, type(p) is P, getattr(p, '__class__') is P, caught, hasattr(p, 'w'),"
        " hasattr(p, 'v'), P.s(2), p.s(3), isinstance(P.make(), P), p.helper(None, 4), getattr(P, '__name__'),"
        " '{0.__class__.__name__}'.format(p), type(len) == type(abs), p.w, isinstance(3, type(1)),"
        " hasattr([], '_' * 2 + 'iter' + '_' * 2), hasattr(1, '_' * 2 + 'len' + '_' * 2),"
        " hasattr(p, '_' * 2 + 'call' + '_' * 2)]"
    )
    expected = [True, True, True, "Err", True, False, 4, 6, True, 8, "P", "P", True, 5, True, True, False, False]
    assert run_here(code, mode) == expected


def test_type_of_a_host_object_is_a_view(thermal: object) -> None:
    code = (
        "import collections, json\nc = collections.Counter('ab')\nr = thermal.search_results('deploy')\n"
        "result = [type(c), type(c) == collections.Counter, isinstance(c, type(c)), getattr(type(c), '__name__'),"
        " type(r), type(r) is type(r), getattr(type(r), '__name__'), type(thermal), getattr(json.dumps, '__name__'),"
        " getattr(json, '__name__'), type(P), type(len)]"
    )
    values = run_here(PROGRAM + code, thermal=thermal)
    assert values[1:4] == [True, True, "Counter"] and values[5:7] == [True, "ResultList"]
    assert values[8:10] == ["dumps", "json"]
    for view in (values[0], values[4], values[7], values[10]):
        assert type(view) is TypeView and reachability.classify(view) is None
    assert repr(values[10]) == "<class 'type'>" and repr(values[11]) == "<class 'builtin_function_or_method'>"
    assert type(values[11]) is TypeView


ATTACKS = [
    ("result = type('X', (), {})", "type() with three arguments is not allowed"),
    ("result = getattr(type(thermal), '_cls')", "attribute '_cls' is not allowed"),
    ("result = getattr(type, '_fn')", "attribute '_fn' is not allowed"),
    ("result = getattr(type(type), '_cls')", "attribute '_cls' is not allowed"),
    ("result = getattr(getattr(1, '__class__'), '__base__')", "attribute '__base__' is not allowed"),
    ("result = getattr(type(thermal), '__base__')", "attribute '__base__' is not allowed"),
    ("setattr(type(thermal), 'search', len)", "cannot modify objects of type 'TypeView'"),
    ("result = '{0.__class__.__mro__}'.format(thermal)", "attribute '__mro__' is not allowed"),
    ("result = hasattr(len, '__globals__')", "attribute '__globals__' is not allowed"),
    (
        "class S(str):\n    def startswith(self, *a):\n        return False\n"
        "def f():\n    pass\nresult = hasattr(f, S('_' * 2 + 'globals' + '_' * 2))",
        "attribute '__globals__' is not allowed",
    ),
    ("def f(self):\n    return 0\nsetattr(P, '_' * 2 + 'index' + '_' * 2, f)", "attribute '__index__' is not allowed"),
    ("setattr(P(), '_' * 2 + 'class' + '_' * 2, Err)", "attribute '__class__' is not allowed"),
    (
        "class S(str):\n    def startswith(self, *a):\n        return False\n"
        "setattr(P, S('_' * 2 + 'len' + '_' * 2), len)",
        "attribute '__len__' is not allowed",
    ),
    ("setattr(thermal, 'search', len)", "cannot modify objects of type 'ApiObject'"),
    ("delattr(thermal, 'search')", "cannot modify objects of type 'ApiObject'"),
    ("import json\nsetattr(json, 'dumps', str)", "cannot modify objects of type 'ModuleProxy'"),
    ("setattr(len, 'x', 1)", "cannot modify objects of type 'builtin_function_or_method'"),
    ("setattr(getattr, 'x', 1)", "cannot modify objects of type 'SandboxGetattr'"),
    ("setattr(type, 'x', 1)", "cannot modify objects of type 'TypeStandIn'"),
    ("result = staticmethod(len)", "staticmethod() accepts only functions defined in the program"),
    ("result = classmethod(print)", "classmethod() accepts only functions defined in the program"),
    ("def f(c):\n    return c\nresult = getattr(classmethod(f), '_fn')", "attribute '_fn' is not allowed"),
    ("def f(c):\n    return c\nresult = getattr(staticmethod(f), '_' * 2 + 'get' + '_' * 2)", "attribute '__get__'"),
    ("def f(c):\n    return c\ncm = classmethod(f)\nsetattr(cm, 'x', 1)", "cannot modify objects of type 'Sandbox"),
]


@pytest.mark.parametrize(("code", "reason"), ATTACKS, ids=[str(i) for i in range(len(ATTACKS))])
def test_attacks_are_refused(code: str, reason: str, thermal: object) -> None:
    with pytest.raises(SandboxViolation) as refused:
        run_here(PROGRAM + code + "\nresult = 'ESCAPED'", thermal=thermal)
    assert reason in str(refused.value)


def test_views_and_names_expose_nothing(thermal: object) -> None:
    """A view has no attributes and cannot be called; ``__name__`` on an instance is an
    ordinary AttributeError, never the class's internals."""
    for code in (
        "result = getattr(type(thermal), 'search')",
        "result = getattr(P(), '__name__')",
        "result = getattr(thermal.search, '__name__')",
    ):
        with pytest.raises(AttributeError):
            run_here(PROGRAM + code, thermal=thermal)
    with pytest.raises(TypeError):
        run_here("import collections\nresult = type(collections.Counter())('ab')")


# ---- with the real builtins installed instead: the value check still stops what they
# hand out; with it off as well (the guard before), each of these escapes -----------------


def _admit_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guards, "admit", lambda value, what: value)


def test_real_type_hands_out_host_classes(thermal: object, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SandboxViolation, match=r"call result is not allowed \(it is a class\)"):
        run_here("result = type(thermal)", real={"type": type}, thermal=thermal)
    _admit_off(monkeypatch)
    leaked = run_here("result = type(thermal)", real={"type": type}, thermal=thermal)
    assert leaked is api_object.ApiObject and reachability.classify(leaked) == "class"
    made = run_here("result = type('X', (), {'y': 1})", real={"type": type})
    assert isinstance(made, type)  # class creation outside the class statement's checks


def test_real_setattr_defines_forbidden_special_methods() -> None:
    cls = run_here(
        PROGRAM + "def f(self):\n    return 0\nsetattr(P, '_' * 2 + 'index' + '_' * 2, f)\nresult = P",
        real={"setattr": builtins.setattr},
    )
    assert "__index__" in vars(cls)


def test_real_staticmethod_and_classmethod_are_descriptors(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, real in (("staticmethod", staticmethod), ("classmethod", classmethod)):
        with pytest.raises(SandboxViolation, match=r"\(it is a descriptor\)"):
            run_here(f"result = {name}(len)", real={name: real})
    _admit_off(monkeypatch)
    for name, real in (("staticmethod", staticmethod), ("classmethod", classmethod)):
        leaked = run_here(f"result = {name}(len)", real={name: real})
        assert reachability.classify(leaked) == "descriptor", name
