"""Regression tests for the guard breaks found against the Python layer: each attack is
run with the guard as it is (refused, with the reason asserted) and with the fixed check
switched back to the old behaviour (it escapes, and the test shows what it reached).

"The old behaviour" is restored by monkeypatching, in this process, the two checks the
guard now applies in one place each:
  * ``guards.plain_name``: the old guard used the name object it was given, so a ``str``
    subclass answered ``startswith``/``__eq__``/``__hash__`` itself;
  * ``guards.admit``: the old guard returned call results, iteration and unpacking, and
    values of "plain" types unchecked.

The attacks run in this process with the executor's real globals and compile policy (no
child, no OS layer: the Python layer alone is under test), and again end to end through
``execute()`` for the refusal a user sees.
"""

from __future__ import annotations

import builtins
import sqlite3
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from RestrictedPython.compile import compile_restricted
from terminai_apts.executor import SandboxConfig, execute, policy
from terminai_apts.executor.policy import Mode
from terminai_apts.executor.python_layer import api_object, guards
from terminai_apts.executor.python_layer.transform import SandboxTransformer
from terminai_apts.executor.python_layer.wrappers import SandboxViolation
from terminai_apts.memory import store
from terminai_apts.memory.api import open_memory

from tests.unit.executor import reachability
from tests.unit.executor.test_python_layer_attacks import memory_api  # noqa: F401 - fixture
from tests.unit.memory.conftest import make_records

# A str subclass that lies about its prefix: the old guard asked the name itself.
LIAR = "class S(str):\n    def startswith(self, *a):\n        return False\nu = '_' * 2\n"

# function -> its globals -> the sandbox builtins -> the guarded __build_class__ (a host
# function) -> the guard module's globals -> the real builtins (open, __import__).
GLOBALS_CHAIN = (
    LIAR + "def f():\n    pass\n"
    "g = getattr(f, S(u + 'globals' + u))\n"
    "b = g.get(u + 'builtins' + u)\n"
    "bc = b.get(u + 'build_class' + u)\n"
    "hg = getattr(bc, S(u + 'globals' + u))\n"
    "result = hg.get(u + 'builtins' + u)\n"
)

# the same way in, then the guard module's own state rewritten for the rest of the run
GUARD_STATE = (
    LIAR + "def f():\n    pass\n"
    "g = getattr(f, S(u + 'globals' + u))\n"
    "bc = g.get(u + 'builtins' + u).get(u + 'build_class' + u)\n"
    "hg = getattr(bc, S(u + 'globals' + u))\n"
    "hg['FORBIDDEN_ATTR_PREFIXES'] = ('zz',)\n"
    "result = getattr(f, u + 'code' + u)\n"  # a plain name, now let through
)

# the memory API's private slots: method table -> real bound method -> ThermalMemory ->
# its shards (the host SQLite connection and the index's host path)
API_SLOTS = (
    LIAR + "m = getattr(thermal, S('_methods')).get('search')\n"
    "real = getattr(m, S('_bound'))\n"
    "memory = getattr(real, S(u + 'self' + u))\n"
    "result = getattr(memory, S('_shards'))[0]\n"
)

# a module proxy's wrapped function (a host function with __globals__)
PROXY_FUNCTION = LIAR + "import json\nresult = getattr(json.dumps, S('_fn'))\n"

# super(): the name passes `in SUPER_METHODS` once (spoofed hash and equality), then
# looks up `__reduce_ex__`, whose result hands out the real `object` and copyreg functions
SUPER_SPOOF = (
    "u = '_' * 2\n"
    "class S(str):\n"
    "    def __init__(self, v):\n        self.passed = False\n"
    "    def __hash__(self):\n"
    "        if not self.passed:\n            return hash(u + 'init' + u)\n"
    "        return hash(str(self))\n"
    "    def __eq__(self, o):\n"
    "        if not self.passed:\n            self.passed = True\n            return True\n"
    "        return str(self) == str(o)\n"
    "class A:\n    def f(self):\n        return getattr(super(), S(u + 'reduce_ex' + u))\n"
    "reduced = A().f()(1)\n"
    "maker, args = reduced[0], reduced[1]\n"
    "result = args[1]\n"
)


def run_here(code: str, mode: Mode = "high", injected: dict[str, object] | None = None) -> Any:
    """Run ``code`` with the executor's globals and compile policy in this process; its
    ``result``."""
    scope = dict(reachability.sandbox_globals(mode, injected))
    exec(compile_restricted(code, filename="<sandbox>", mode="exec", policy=SandboxTransformer), scope)
    return scope["result"]


def _old_plain_name(name: object) -> Any:
    if not isinstance(name, str):
        raise SandboxViolation("attribute names must be strings")
    return name  # the object itself: its own startswith/__eq__/__hash__ decide


def _old_admit(value: object, what: str) -> Any:
    return value


@pytest.fixture
def name_check_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guards, "plain_name", _old_plain_name)


@pytest.fixture
def value_check_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guards, "admit", _old_admit)


@pytest.fixture
def guard_state_restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    # an escaping attack rewrites module state; put it back whatever happens
    monkeypatch.setattr(guards, "FORBIDDEN_ATTR_PREFIXES", guards.FORBIDDEN_ATTR_PREFIXES)
    yield


@pytest.fixture(scope="module")
def thermal(tmp_path_factory: pytest.TempPathFactory) -> object:
    path = tmp_path_factory.mktemp("regress") / "mem.db"
    store.build(path, make_records())
    return api_object.wrap_api(policy.thermal_spec(str(path)), open_memory(str(path)))


def _is_host_function(value: object) -> bool:
    return isinstance(value, types.FunctionType) and value.__code__.co_filename != "<sandbox>"


# ---- with the guard as it is: refused, with the reason --------------------------------


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (GLOBALS_CHAIN, "attribute '__globals__' is not allowed"),
        (GUARD_STATE, "attribute '__globals__' is not allowed"),
        (PROXY_FUNCTION, "attribute '_fn' is not allowed"),
        (SUPER_SPOOF, "attribute '__reduce_ex__' is not allowed"),
    ],
    ids=["globals-chain", "guard-state", "proxy-function", "super-spoof"],
)
def test_spoofed_names_are_refused(code: str, reason: str, guard_state_restored: None) -> None:
    with pytest.raises(SandboxViolation, match=reason.replace("(", r"\(")):
        run_here(code)
    assert guards.FORBIDDEN_ATTR_PREFIXES[0] == "_"


def test_api_private_slots_are_refused(thermal: object) -> None:
    with pytest.raises(SandboxViolation, match="attribute '_methods' is not allowed"):
        run_here(API_SLOTS, injected={"thermal": thermal})


def test_names_of_other_types_are_refused() -> None:
    for name in ("b'real'", "bytearray(b'real')", "1", "None"):
        with pytest.raises(SandboxViolation, match="attribute names must be strings"):
            run_here(f"result = getattr(1, {name})")
    # a str subclass that tells the truth reads what a plain str would
    assert run_here("class S(str):\n    pass\nresult = getattr(7, S('real'))") == 7


@pytest.mark.parametrize("mode", ["standard", "high", "strict"])
def test_end_to_end_refusal(mode: Mode) -> None:
    """The user sees the runtime guard's refusal (layer and reason), in every mode."""
    result = execute(GLOBALS_CHAIN + "print('ESCAPED', len(result))", SandboxConfig(security_mode=mode))
    assert not result.success and "ESCAPED" not in result.stdout
    assert result.refused_by == "L4-runtime-guard"
    assert result.error == "refused: attribute '__globals__' is not allowed"


def test_end_to_end_super_and_api(memory_api: policy.ApiSpec) -> None:  # noqa: F811 - fixture
    result = execute(SUPER_SPOOF + "print('ESCAPED', result)", SandboxConfig(security_mode="high"))
    assert (result.refused_by, result.error) == (
        "L4-runtime-guard",
        "refused: attribute '__reduce_ex__' is not allowed",
    )
    result = execute(API_SLOTS + "print('ESCAPED', result)", SandboxConfig(security_mode="high"), api=memory_api)
    assert (result.refused_by, result.error) == ("L4-runtime-guard", "refused: attribute '_methods' is not allowed")


# ---- each check alone also stops the chains that need a forbidden value ---------------


def test_value_check_alone_stops_the_globals_chain(name_check_off: None) -> None:
    with pytest.raises(SandboxViolation, match=r"call result is not allowed \(it is a function\)"):
        run_here(GLOBALS_CHAIN)


def test_value_check_alone_stops_the_super_chain(name_check_off: None) -> None:
    # the bound `__reduce_ex__` itself is refused (`object`'s attribute protocol applies to
    # every object); before that refusal, the value check stopped the chain at what it
    # answered: `item is not allowed (it is a class)`
    with pytest.raises(
        SandboxViolation,
        match=r"attribute '__reduce_ex__' is not allowed \(it is a routine of the generic attribute protocol\)",
    ):
        run_here(SUPER_SPOOF)


def test_value_check_alone_wraps_what_the_api_slots_hold(name_check_off: None, thermal: object) -> None:
    # the real bound method comes out as a SafeCallable, which has no `__self__`
    with pytest.raises(AttributeError):
        run_here(API_SLOTS, injected={"thermal": thermal})


@pytest.mark.parametrize(
    "extract",
    [
        "result = box.get('k')",
        "result = list(box.values()).pop()",
        "for v in box.values():\n    result = v",
        "(result,) = box.values()",
        "result = [v for v in box.values()][0]",
        "result = next(iter(box.values()))",
        "result = max(box.values(), key=lambda v: 1)",
        "def f(a):\n    return a\nresult = f(*box.values())",
    ],
)
def test_values_leaving_a_container_are_checked(extract: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A container holding a host function (planted: nothing reachable holds one) cannot
    hand it over through a call, iteration, unpacking or a star call."""
    box = {"k": guards.guarded_build_class}
    with pytest.raises(SandboxViolation, match=r"is not allowed \(it is a function\)"):
        run_here(extract, injected={"box": box})
    monkeypatch.setattr(guards, "admit", _old_admit)
    assert run_here(extract, injected={"box": box}) is guards.guarded_build_class


# ---- with the old checks: each attack really escapes -----------------------------------


def test_globals_chain_escaped_before(name_check_off: None, value_check_off: None) -> None:
    real = run_here(GLOBALS_CHAIN)
    assert real is vars(builtins) and real["open"] is open and real["__import__"] is builtins.__import__


def test_guard_state_was_rewritable_before(
    name_check_off: None, value_check_off: None, guard_state_restored: None
) -> None:
    code = run_here(GUARD_STATE)
    assert isinstance(code, types.CodeType)
    assert guards.FORBIDDEN_ATTR_PREFIXES == ("zz",)  # for every later read of this run


def test_proxy_function_escaped_before(name_check_off: None, value_check_off: None) -> None:
    leaked = run_here(PROXY_FUNCTION)
    assert _is_host_function(leaked) and "json" in leaked.__globals__


def test_api_slots_escaped_before(name_check_off: None, value_check_off: None, thermal: object) -> None:
    shard = run_here(API_SLOTS, injected={"thermal": thermal})
    assert type(shard).__module__.startswith("terminai_apts.memory")
    reachable = [
        v for v in (getattr(shard, s, None) for s in dir(shard)) if isinstance(v, (sqlite3.Connection, Path, str))
    ]
    assert reachable, "the shard exposes its connection or host path"


def test_super_spoof_escaped_before(name_check_off: None, value_check_off: None) -> None:
    assert run_here(SUPER_SPOOF) is object


def test_the_call_check_adds_no_frame() -> None:
    """Calls stay in the program's frame (``_call_`` checks the returned value after the
    call): a recursion as deep as plain Python allows here still works."""
    import sys

    depth = sys.getrecursionlimit() - len(__import__("inspect").stack()) - 50
    code = f"def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\nresult = f({depth})"
    assert run_here(code) == depth


def test_the_hot_path_skips_only_what_admit_accepts() -> None:
    """``guarded_getattr`` returns public attributes of the builtin data types without
    calling ``admit``; every such attribute, on an instance and nested in containers,
    is one ``admit`` accepts, so the shortcut changes no answer."""
    samples = ["s", 1, 1.5, b"b", bytearray(b"b"), (1,), [1], {"k": 1}, {1}, frozenset({1})]
    assert {type(s) for s in samples} == guards._PLAIN_OWNERS
    checked = 0
    for sample in samples:
        for name in dir(sample):
            if name.startswith(guards.FORBIDDEN_ATTR_PREFIXES) or name in guards._NOT_FAST:
                continue
            value = guards.guarded_getattr(sample, name)
            assert guards.admit(value, name) is value, (type(sample), name)
            checked += 1
    assert checked > 150


def test_iteration_checks_items_of_every_container_kind() -> None:
    """The one-pass scan and the per-item check both refuse a host function, whatever
    container holds it."""
    leak = guards.guarded_build_class
    for container in ([1, leak], (leak,), {leak: 1}, {leak}, frozenset({leak}), {"k": leak}.values(), iter([leak])):
        with pytest.raises(SandboxViolation, match=r"item is not allowed \(it is a function\)"):
            list(guards.guarded_iter(container))
    assert list(guards.guarded_iter([1, "a", (2,)])) == [1, "a", (2,)]


JSON_CLS = (
    LIAR + "import json\ngot = []\nclass Enc:\n"
    "    def __init__(self, skipkeys=False, ensure_ascii=True, check_circular=True, allow_nan=True,"
    " sort_keys=False, indent=None, separators=None, default=None):\n"
    "        got.append(default)\n"
    "        got.append(getattr(default, S(u + 'globals' + u)))\n"
    "    def encode(self, o):\n        return 'x'\n"
    "json.dumps(1, cls=Enc)\nresult = got\n"
)


def test_what_an_encoder_class_receives_leads_nowhere() -> None:
    """`json.dumps(cls=...)` hands the encoder's keyword arguments to the program's class
    from C code, past every guard; whatever `default` is, its globals stay out of reach
    and it cannot be read back out of a container as a host function."""
    with pytest.raises(SandboxViolation, match="attribute '__globals__' is not allowed"):
        run_here(JSON_CLS)
    held = run_here(JSON_CLS.replace("        got.append(getattr(default, S(u + 'globals' + u)))\n", ""))
    assert len(held) == 1
    try:
        first = run_here(
            JSON_CLS.replace("        got.append(getattr(default, S(u + 'globals' + u)))\n", "").replace(
                "result = got\n", "result = got[0]\n"
            )
        )
    except SandboxViolation as refused:
        assert "(it is a function)" in str(refused)
    else:
        assert not _is_host_function(first)
