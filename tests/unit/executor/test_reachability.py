"""The reachability walk over the whole sandbox namespace, in every mode (see
``reachability.py`` for the attacker model and what counts as an offender)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from terminai_apts.executor import policy
from terminai_apts.executor.policy import MODES, Mode
from terminai_apts.executor.python_layer import api_object, guards, module_proxies, safe_classes, wrappers
from terminai_apts.executor.python_layer.validate import validate_code
from terminai_apts.executor.python_layer.wrappers import SafeCallable
from terminai_apts.memory import store
from terminai_apts.memory.api import open_memory

from tests.unit.executor import reachability
from tests.unit.memory.conftest import make_records


@pytest.fixture(scope="module")
def thermal(tmp_path_factory: pytest.TempPathFactory) -> object:
    path = tmp_path_factory.mktemp("walk") / "mem.db"
    store.build(path, make_records())
    return api_object.wrap_api(policy.thermal_spec(str(path)), open_memory(str(path)))


@pytest.mark.parametrize("mode", MODES)
def test_nothing_dangerous_is_reachable(mode: Mode, thermal: object) -> None:
    report = reachability.walk_sandbox(mode, {"thermal": thermal})
    assert not report.offenders, "\n".join(str(o) for o in report.offenders)
    # the walk really went through the surface it claims to cover
    assert "thermal.search" in report.paths and "<thermal>[13].hits" in report.paths  # search_results
    assert any(p.startswith("<thermal>[13].hits[0].") for p in report.paths)
    assert "<thermal>[0][0].confidence" in report.paths  # into the seed's Memory
    if mode != "strict":
        for path in (
            "import collections.Counter",
            "import fractions.Fraction",
            "import datetime.datetime.now",
            "<collections>[0].most_common",
            "<re>[1].span",
            "<seed 001 allowlist>[0].cache_info",
            "<seed 001 allowlist>[22].b",
            "<seed 001 allowlist>[18].getvalue",
        ):
            assert path in report.paths, path
        assert any(p.endswith(".traps") for p in report.paths)
    assert report.visited > (500 if mode == "strict" else 3000)


def raw_proxy(name: str, attrs: dict[str, object]) -> module_proxies.ModuleProxy:
    """A proxy holding raw module attributes, as proxies did before they wrapped them."""
    proxy = object.__new__(module_proxies.ModuleProxy)
    object.__setattr__(proxy, "_name", name)
    object.__setattr__(proxy, "_attrs", dict(attrs))
    return proxy


def test_walk_catches_each_kind_of_offender() -> None:
    """The classifier is not vacuous: each forbidden kind, planted as a root, is reported."""
    import collections
    import fractions
    import sys

    def python_function() -> None:
        pass

    planted: dict[str, object] = {
        "cls": collections.Counter,
        "fn": python_function,
        "module": sys,
        "frame": sys._getframe(),
        "code": python_function.__code__,
        "prop": fractions.Fraction.__dict__["numerator"],
        "classmethod": collections.Counter.__dict__["fromkeys"],
        "getset": int.__dict__["real"],
        "bound_to_class": collections.Counter.fromkeys,
        "alias": list[int],
    }
    report = reachability.walk(planted)
    assert {o.path for o in report.offenders} == set(planted)
    # and reached through an attribute, with the path that leads there
    proxy = raw_proxy("fake", {"leak": collections.Counter})
    assert [str(o).split(":")[0] for o in reachability.walk({"fake": proxy}).offenders] == ["fake.leak"]


def test_walk_reproduces_the_original_class_leak() -> None:
    """Without the wrappers (a proxy holding the raw module attributes, as before), the
    walk finds the class that handed out `type`, and the Fraction property."""
    import collections
    import fractions

    raw = {
        "collections": raw_proxy("collections", {"Counter": collections.Counter}),
        "fractions": raw_proxy("fractions", {"Fraction": fractions.Fraction}),
    }
    found = {o.path: o.kind for o in reachability.walk(raw).offenders}
    assert found == {"collections.Counter": "class", "fractions.Fraction": "class"}


@pytest.mark.parametrize("mode", MODES)
def test_internal_names_cannot_be_spelled(mode: Mode) -> None:
    """The walk exempts the guard callables themselves because user code cannot name them:
    every use of such a name, in any binding or load position, is refused."""
    for name in sorted(reachability.INTERNAL_NAMES - {"__name__"}):
        for code in (
            f"x = {name}",
            f"{name} = 1",
            f"class C:\n    {name} = 1",
            f"for {name} in []:\n    pass",
            f"def f({name}):\n    pass",
            f"import json as {name}",
            f"try:\n    pass\nexcept Exception as {name}:\n    pass",
            f"with x as {name}:\n    pass",
            f"[{name} for {name} in []]",
            f"({name} := 1)",
            f"global {name}",
            f"match 1:\n    case {name}:\n        pass",
            f"match [1]:\n    case [*{name}]:\n        pass",
            f"match {{}}:\n    case {{**{name}}}:\n        pass",
            f"lambda {name}: 1",
        ):
            assert not validate_code(code, mode=mode).ok, code


def test_proxies_wrap_whatever_they_are_given() -> None:
    """The child builds its per-run `random` proxy from a Random instance's bound methods;
    ModuleProxy wraps them itself, so no caller can hand out a raw method by mistake."""
    import random

    rng = random.Random(1)
    proxy = module_proxies.ModuleProxy("random", {a: getattr(rng, a) for a in policy.modules_for("high")["random"]})
    report = reachability.walk({"random": proxy})
    assert not report.offenders and report.visited > len(policy.modules_for("high")["random"])
    assert repr(proxy.randint) == "<function random.randint>"
    assert 1 <= proxy.randint(1, 3) <= 3


def test_guard_refuses_each_kind_even_when_reached() -> None:
    """Defence in depth behind the walk: if a class leaked anyway, the attribute and item
    guards still refuse what it would hand out; instances keep their ordinary methods."""
    import collections
    import fractions
    import sys

    refused = [
        (collections.Counter, "copy"),  # a Python function with any `self`
        (collections.Counter, "fromkeys"),  # a Python classmethod bound to the class
        (fractions.Fraction(1, 2), "from_float"),  # the same, reached through an instance
        (fractions.Fraction, "numerator"),  # a property
        (int, "real"),  # a getset descriptor
        (sys, "path"),  # anything on a module
    ]
    for obj, name in refused:
        with pytest.raises(wrappers.SandboxViolation):
            guards.guarded_getattr(obj, name)
    with pytest.raises(wrappers.SandboxViolation):
        guards.guarded_getitem({"k": collections.Counter}, "k")
    with pytest.raises(wrappers.SandboxViolation):
        guards.guarded_getitem(collections.deque, int)  # types.GenericAlias
    counter = collections.Counter("aab")
    assert guards.guarded_getattr(counter, "most_common")(1) == [("a", 2)]
    assert guards.guarded_getattr(fractions.Fraction(3, 4), "numerator") == 3


def test_wrapper_classes_are_sealed(thermal: object) -> None:
    """The objects user code holds cannot be changed through their classes either (a path
    that needs `__class__`, which the guards refuse; this is the layer below)."""
    search = guards.guarded_getattr(thermal, "search")
    proxy = module_proxies.build_proxies("high")["statistics"]
    for obj in (thermal, search, proxy, guards.guarded_getattr(proxy, "mean")):
        with pytest.raises(wrappers.SandboxViolation):
            type(obj).search = len
        with pytest.raises(wrappers.SandboxViolation):
            delattr(type(obj), "__call__" if callable(obj) else "__getattr__")
        with pytest.raises(wrappers.SandboxViolation):
            obj.search = len
    assert guards.guarded_getattr(thermal, "count")("deploy") == 3


_FUZZ_SCRIPT = """
import json, sys
from terminai_apts.executor import policy
from terminai_apts.executor.python_layer import api_object
from terminai_apts.memory.api import open_memory
from tests.unit.executor import reachability as r
mode, db = sys.argv[1], sys.argv[2]
glb = r.sandbox_globals(mode, {"thermal": api_object.wrap_api(policy.thermal_spec(db), open_memory(db))})
roots = r.namespace_roots(glb, mode)
roots.update(r.sample_roots(glb, mode))
report = r.fuzz_calls(r.walk(roots, exempt=r.INTERNAL_NAMES), glb)
print(json.dumps({"calls": report.calls, "returned": report.returned, "offenders": [str(o) for o in report.offenders]}))
"""


@pytest.mark.parametrize("mode", MODES)
def test_calling_what_is_reachable_returns_nothing_dangerous(mode: Mode, tmp_path: Path) -> None:
    """The red team found `type` by calling a reachable method with a class argument.
    Every reachable callable is called with such argument patterns (in a throwaway
    process: the calls mutate shared state such as the decimal context)."""
    db = tmp_path / "mem.db"
    store.build(db, make_records())
    done = subprocess.run(
        [sys.executable, "-c", _FUZZ_SCRIPT, mode, str(db)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["offenders"] == []
    assert result["calls"] > (3_000 if mode == "strict" else 30_000) and result["returned"] > 500


def test_fuzzing_finds_a_planted_class_factory() -> None:
    """Not vacuous: a callable that returns its argument's class is caught."""
    glb = reachability.sandbox_globals("high")
    planted = {"leaky": SafeCallable(type, "leaky")}
    report = reachability.fuzz_calls(reachability.walk(planted), glb)
    assert any(o.path == "leaky(int)" and o.kind == "class" for o in report.offenders), report.offenders


def test_implementation_allowlist_is_within_the_walks() -> None:
    """The guard's class allowlist can only shrink the walk's, never widen it."""
    non_exceptions = {c for c in safe_classes.SAFE_CLASSES if not issubclass(c, BaseException)}
    assert non_exceptions <= reachability.allowed_classes()
    assert not safe_classes.SAFE_CLASSES & reachability.NEVER_TYPES


def test_a_wrapper_cannot_hide_attributes_from_the_walk() -> None:
    class Hiding:
        __slots__ = ()
        data = ("kept",)

        def __dir__(self) -> list[str]:
            return []

    report = reachability.walk({"w": Hiding()})
    assert {"w.data", "w.data[0]"} <= report.paths
