"""Red team, sixth round: the value check's shortcuts and its timing, attacked.

Two route classes were found and closed here. Both read a container's items past the
value check; no container holding a forbidden object is known in the program's reach (the
reachability walk finds none), so, as in ``test_callback_routes``, one is planted
(``leak``), standing for the first host code that would build one. Each has a companion
showing the route delivering the planted object with the old behaviour put back.

* **A container that grows while a loop runs.** ``_getiter_`` checked a list's, dict's or
  set's items by their types in one pass when the loop started, then handed the raw
  iterator over, reasoning that items the loop body adds are values the program already
  holds. They need not be: ``xs.extend(c)``, ``xs[i:j] = c``, ``xs += c`` and
  ``d.update(c)`` copy another container's items in C, and those were never checked (a
  container's items are checked when they are read). Only immutable containers (tuples,
  frozensets) keep the one-pass check now; the others are checked item by item
  (``guards._SCANNED``).
* **A name bound before its check keeps the value when the check raises.** A ``match``
  capture, a ``with ... as name`` target and a decorated ``def``/``class`` are bound by
  the interpreter first and checked after; the check raised, and a program that catches
  the refusal (``try: ... except Exception: pass``) then used the name, still holding the
  value. The name is now rebound to the check's answer (an inert ``Refused`` marker when it
  refuses) before the refusal is raised (``_capture_`` then ``_held_``), in every mode.
  So were a case's later captures once the first was refused, and a ``with`` target whose
  next item raised on entering (``with a as x, b as y`` is now compiled nested).

Hardened too: ``object``'s and ``type``'s own C routines were admitted as any C routine
("their methods check the type of ``self``"), but their ``self`` is every object:
``object.__setattr__`` writes a wrapper's private slots past its sealed ``__setattr__``
and ``type.__call__`` builds any class. None is in reach (only dunder names lead to them);
the value check now refuses the generic attribute protocol by name and unbound routines
of classes the program may not hold, and C routines are no longer learned per type by the
entry check (their verdict depends on the value). ``copy.copy``/``deepcopy`` of the sandbox's wrappers (the memory API's
methods among them) answered with their slots, and ``deepcopy`` walked the real API
object behind ``thermal.search`` until its SQLite connection refused to be pickled. Nothing
reached the program (the copy failed on the sealed ``setattr``), but every class of the
``Sealed`` metaclass now refuses the reduce protocol before its state is read.
"""

from __future__ import annotations

import sqlite3
import types
from pathlib import Path
from typing import Any

import pytest
from RestrictedPython.compile import compile_restricted
from terminai_apts.executor import policy
from terminai_apts.executor.policy import Mode
from terminai_apts.executor.python_layer import api_object, guards, wrappers
from terminai_apts.executor.python_layer.transform import SandboxTransformer
from terminai_apts.executor.python_layer.wrappers import SandboxViolation
from terminai_apts.memory import store
from terminai_apts.memory.api import open_memory

from tests.unit.executor import reachability
from tests.unit.executor.test_callback_routes import FORBIDDEN, _HostContext
from tests.unit.executor.test_python_layer_attacks import ALL_MODES, run_benign
from tests.unit.memory.conftest import make_records

# The one-pass shortcut as it was: every scanned kind, mutable ones included.
_OLD_SCANNED = frozenset({list, tuple, dict, set, frozenset, type({}.keys()), type({}.values())})


def _run(code: str, leaked: object, mode: Mode, **extra: object) -> dict[str, Any]:
    """The program's scope after it ran (``leak``: a list holding ``leaked``; ``leak_cm``:
    a host context manager whose ``__enter__`` returns it)."""
    scope = dict(reachability.sandbox_globals(mode, {"leak": [leaked], "leak_cm": _HostContext(leaked)}))
    scope.update(extra)
    exec(compile_restricted(code, filename="<sandbox>", mode="exec", policy=SandboxTransformer), scope)
    return scope


# -- a container that grows while a loop runs ----------------------------------------------

# route -> a program whose loop body adds the items of `leak` to the container it iterates,
# then reads them as the loop's next items into `got`; plain Python, so every mode
GROWING_ROUTES: dict[str, str] = {
    "list.extend": "xs = [0]\nfor x in xs:\n    if x == 0:\n        xs.extend(leak)\n    else:\n        got.append(x)",
    "slice assignment": (
        "xs = [0, 1]\nfor x in xs:\n    if x == 0:\n        xs[1:2] = leak\n    elif x != 1:\n        got.append(x)"
    ),
    "augmented assignment": (
        "xs = [0]\nfor x in xs:\n    if x == 0:\n        xs += leak\n    else:\n        got.append(x)"
    ),
    "dict.update, values": (
        "d = {'a': 0, 'k': 0}\nfor v in d.values():\n    if v == 0 and not got:\n"
        "        d.update(zip(['k'], leak))\n        got.append(0)\n    elif v != 0:\n        got.append(v)"
    ),
    "dict keys replaced": (
        "d = {'a': 0, 'b': 0}\nfor k in d:\n    if k == 'a':\n        d.pop('b')\n"
        "        d.update(zip(leak, [0]))\n    else:\n        got.append(k)"
    ),
    "comprehension": "xs = [0]\ngot = [x for x in xs if (xs.extend(leak) if x == 0 else True)]",
}
_PRELUDE = "got = []\n"


@pytest.mark.parametrize("kind", sorted(FORBIDDEN))
@pytest.mark.parametrize("route", sorted(GROWING_ROUTES))
def test_items_added_while_a_loop_runs_pass_the_item_check(route: str, kind: str) -> None:
    for mode in ALL_MODES:
        with pytest.raises(SandboxViolation, match=rf"^item is not allowed \(it is a {kind}\)$"):
            _run(_PRELUDE + GROWING_ROUTES[route], FORBIDDEN[kind], mode)


@pytest.mark.parametrize("route", sorted(GROWING_ROUTES))
def test_items_added_while_a_loop_runs_companion_went_unchecked(route: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: with the one-pass check of mutable containers back, the loop reads the
    planted object as it is."""
    monkeypatch.setattr(guards, "_SCANNED", _OLD_SCANNED)
    for kind, leaked in FORBIDDEN.items():
        got = _run(_PRELUDE + GROWING_ROUTES[route], leaked, "strict")["got"]
        assert any(item is leaked for item in got), f"{route}: the {kind} was not read"
        assert reachability.classify(leaked) is not None


@pytest.mark.parametrize("mode", ALL_MODES)
def test_loops_over_growing_containers_still_work(mode: Mode) -> None:
    """Programs that add to what they iterate (a work queue, a dict updated in place) see
    the same items as in CPython; checked through the hardened run."""
    code = (
        "class Node:\n    def __init__(self, n):\n        self.n = n\n"
        "queue = [Node(3)]\nseen = []\n"
        "for node in queue:\n    seen.append(node.n)\n    if node.n:\n        queue.append(Node(node.n - 1))\n"
        "xs = [1, 2]\nfor x in xs:\n    if x < 5:\n        xs.extend([x + 2])\n"
        "ys = [1, 2, 3]\nfor y in ys:\n    if y == 1:\n        ys[1:3] = ['a', 'b']\n"
        "d = {'a': 1, 'b': 2}\nvals = []\nfor v in d.values():\n    vals.append(v)\n    d.update(b=20)\n"
        "print(seen, xs, ys, vals, sum(v for v in (1, 2, 3)), sorted({3, 1}), [k for k in d])\n"
    )
    run_benign(code, mode, "[3, 2, 1, 0] [1, 2, 3, 4, 5, 6] [1, 'a', 'b'] [1, 20] 6 [1, 3] ['a', 'b']\n")


# -- a name bound before its check -----------------------------------------------------------

# route -> (a program that catches the refusal, then sets `out` (or, in a class body, the
# class attribute `held`) to the name the interpreter bound first; the message the
# refusal carries)
_CAUGHT = "except Exception as e:\n    why.append(str(e))\n"
BOUND_FIRST_ROUTES: dict[str, tuple[str, str]] = {
    "match capture": ("try:\n    match leak:\n        case [m]:\n            pass\n" + _CAUGHT + "out = m", "passed"),
    "match capture in a function": (
        "def f():\n    global out\n    try:\n        match dict(zip(['k'], leak)):\n            case {'k': m}:\n"
        "                pass\n    except Exception as e:\n        why.append(str(e))\n    out = m\nf()",
        "passed",
    ),
    "with target": ("try:\n    with leak_cm as m:\n        pass\n" + _CAUGHT + "out = m", "passed"),
    "decorated def": (
        "d = dict(zip(['k'], leak))\ntry:\n    @d.get\n    @(lambda f: 'k')\n    def m():\n        pass\n"
        + _CAUGHT
        + "out = m",
        "call",
    ),
    "decorated class": (
        "try:\n    @next\n    @(lambda c: iter(leak))\n    class m:\n        pass\n" + _CAUGHT + "out = m",
        "call",
    ),
    "decorated def in a class body": (
        "d = dict(zip(['k'], leak))\nclass K:\n    try:\n        @d.get\n        @(lambda f: 'k')\n"
        "        def m(self):\n            pass\n    except Exception as e:\n        why.append(str(e))\n"
        "    held = m",
        "call",
    ),
}
BOUND_FIRST_ROUTES.update(
    {
        # the second capture was left bound when the first one's check raised
        "two match captures": (
            "try:\n    match list(leak) + list(leak):\n        case [a, m]:\n            pass\n" + _CAUGHT + "out = m",
            "passed",
        ),
        # the second item's `__enter__` raised before the first target was checked
        "two with items, the second raising": (
            "class Boom:\n    def __enter__(self):\n        raise ValueError('boom')\n"
            "    def __exit__(self, *a):\n        return False\n"
            "try:\n    with leak_cm as m, Boom() as n:\n        pass\n" + _CAUGHT + "out = m",
            "passed",
        ),
    }
)
_MESSAGES = {"passed": "a value passed to the program's code is not allowed", "call": "call result is not allowed"}


def _out(scope: dict[str, Any]) -> object:
    return scope["out"] if "out" in scope else vars(scope["K"])["held"]


@pytest.mark.parametrize("kind", sorted(FORBIDDEN))
@pytest.mark.parametrize("route", sorted(BOUND_FIRST_ROUTES))
def test_a_name_bound_before_its_check_never_keeps_a_refused_value(route: str, kind: str) -> None:
    code, message = BOUND_FIRST_ROUTES[route]
    for mode in ALL_MODES:
        scope = _run("why = []\n" + code, FORBIDDEN[kind], mode)
        assert scope["why"] == [f"{_MESSAGES[message]} (it is a {kind})"]
        out = _out(scope)
        assert out is not FORBIDDEN[kind]
        assert type(out) is guards.Refused and reachability.classify(out) is None
        with pytest.raises(SandboxViolation, match=rf"^{_MESSAGES[message]} \(it is a {kind}\)$"):
            guards.guarded_held(out)


def _raising_check(value: object, call: bool = False, /) -> object:
    """The check as it was: it refused by raising while the name already held the value."""
    return guards.guarded_call(value) if call else guards.guarded_bind(value)


@pytest.mark.parametrize("route", sorted(BOUND_FIRST_ROUTES))
def test_a_name_bound_before_its_check_companion_kept_the_value(route: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: with a check that raises at once, and names bound before their check as
    they once were, the refusal is caught and the name still holds the planted object."""
    code, message = BOUND_FIRST_ROUTES[route]
    monkeypatch.setattr(SandboxTransformer, "hide_bound_names", False)
    for kind, leaked in FORBIDDEN.items():
        scope = _run("why = []\n" + code, leaked, "strict", _capture_=_raising_check)
        assert scope["why"] == [f"{_MESSAGES[message]} (it is a {kind})"]
        assert _out(scope) is leaked, f"{route}: the {kind} was not kept"


class _OneBodyForAllWithItems(SandboxTransformer):
    """The compile policy as it was for `with a as x, b as y`: every target checked at the
    start of the one body, after every item was entered (and bound to the program's names)."""

    hide_bound_names = False

    def split_with(self, node: Any) -> Any:
        return node


def test_with_items_companion_the_second_item_raised_before_the_check() -> None:
    """Not vacuous: unsplit, the second item's `__enter__` raises before the body (and the
    first target's check) runs, and the name keeps the planted object."""
    code, _ = BOUND_FIRST_ROUTES["two with items, the second raising"]
    for kind, leaked in FORBIDDEN.items():
        scope = dict(reachability.sandbox_globals("strict", {"leak_cm": _HostContext(leaked)}))
        source = "why = []\n" + code
        exec(compile_restricted(source, filename="<sandbox>", mode="exec", policy=_OneBodyForAllWithItems), scope)
        assert scope["why"] == ["boom"] and scope["out"] is leaked, kind


def test_a_refused_with_target_enters_no_further_item() -> None:
    code = "try:\n    with leak_cm as a, leak_cm as m:\n        pass\nexcept Exception:\n    pass\n"
    scope = _run(code, FORBIDDEN["function"], "strict")
    assert type(scope["a"]) is guards.Refused and "m" not in scope


def test_the_refused_marker_is_inert() -> None:
    marker = guards.guarded_capture(FORBIDDEN["function"])
    assert type(marker) is guards.Refused
    assert guards.admit(marker, "value") is marker  # nothing behind it: a name and a message
    assert reachability.classify(marker) is None
    with pytest.raises(SandboxViolation, match=r"^cannot modify objects of type 'Refused'$"):
        guards.guarded_write(marker)
    with pytest.raises(SandboxViolation, match="not allowed"):
        guards.guarded_getattr(marker, "_reason")
    assert guards.guarded_capture(5) == 5 and guards.guarded_held(5) is True


@pytest.mark.parametrize("mode", ALL_MODES)
def test_captures_targets_and_decorators_still_work(mode: Mode) -> None:
    code = (
        "class CM:\n    def __enter__(self):\n        return [1, 2]\n"
        "    def __exit__(self, *a):\n        return False\n"
        "with CM() as got:\n    first = got[0]\n"
        "with CM() as one_, CM() as (p, q), CM() as two_:\n    pair = (one_[1], p, q, two_[0])\n"
        "def tag(f):\n    return f\n"
        "@tag\ndef one():\n    return 1\n"
        "match {'k': [3, 4], 'n': 5}:\n    case {'k': [a, *rest], **others} if a == 3:\n"
        "        found = (a, rest, others)\n"
        "print(first, one(), found, pair)\n"
    )
    run_benign(code, mode, "1 1 (3, [4], {'n': 5}) (2, 1, 2, 1)\n")


# -- the reduce protocol on the sandbox's wrappers ------------------------------------------


class _Spy:
    """Private state that counts how often the reduce protocol reached it."""

    reached = 0

    def __reduce_ex__(self, protocol: object) -> object:
        _Spy.reached += 1
        return (_Spy, ())


def _copy_wrapped_spy(mode: Mode) -> str:
    _Spy.reached = 0
    wrapped = wrappers.SafeCallable(_Spy(), "spy")
    code = "import copy\ntry:\n    copy.deepcopy(w)\nexcept Exception as e:\n    why.append(str(e))\n"
    scope = _run("why = []\n" + code, 0, mode, w=wrapped)
    return str(scope["why"][0])


def test_copies_of_the_wrappers_never_read_their_private_state() -> None:
    for mode in ("standard", "high"):
        assert _copy_wrapped_spy(mode) == "'SafeCallable' objects cannot be copied in the sandbox"
        assert _Spy.reached == 0


def test_copies_of_the_wrappers_companion_walked_the_private_state() -> None:
    """Not vacuous: with the object's own reduce protocol back, deepcopy copied the
    wrapper's slots (and failed only when setting them on the copy)."""
    type.__delattr__(wrappers.SafeCallable, "__reduce_ex__")
    try:
        assert _copy_wrapped_spy("high") == "functions are read-only"
        assert _Spy.reached == 1
    finally:
        type.__setattr__(wrappers.SafeCallable, "__reduce_ex__", wrappers._not_copied)


def test_the_memory_api_cannot_be_copied(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    store.build(db, make_records())
    thermal = api_object.wrap_api(policy.thermal_spec(str(db)), open_memory(str(db)))
    results = thermal.search_results("deploy")
    for target in (thermal, thermal.search, results, results[0]):
        for how in ("copy", "deepcopy"):
            with pytest.raises(TypeError, match="objects cannot be copied in the sandbox"):
                _run(f"import copy\ncopy.{how}(x)", 0, "high", x=target)
    sealed = [cls for cls in vars(wrappers).values() if isinstance(cls, wrappers.Sealed)]
    assert wrappers.SafeCallable in sealed and all("__reduce_ex__" in vars(cls) for cls in sealed)


# -- C routines of `object` and `type` ---------------------------------------------------

GENERIC_ROUTINES: dict[str, tuple[object, str]] = {
    "object.__setattr__": (object.__setattr__, "routine of the generic attribute protocol"),
    "object.__getattribute__": (object.__getattribute__, "routine of the generic attribute protocol"),
    "bound __setattr__": ((1).__setattr__, "routine of the generic attribute protocol"),
    "bound __reduce_ex__": (object().__reduce_ex__, "routine of the generic attribute protocol"),
    "type.__call__": (type.__call__, "routine of a class"),
    "Connection.cursor, unbound": (sqlite3.Connection.cursor, "routine of a class"),
    "type.__call__ bound to a class": (type.__call__.__get__(sqlite3.Connection), "method bound to a class"),
}
# how the program takes the routine: an item read, and a callback's parameter (the entry
# check, after the kind of an admitted method-wrapper was learned)
_TAKE = {
    "item": "r = leak[0]",
    "callback": (
        "class K:\n    def m(self):\n        return super().__init__\n"
        "def keep(f):\n    return f\nkeep(K().m())\nr = list(map(keep, leak))"
    ),
}


@pytest.mark.parametrize("how", sorted(_TAKE))
@pytest.mark.parametrize("routine", sorted(GENERIC_ROUTINES))
def test_routines_of_object_and_type_are_refused(routine: str, how: str) -> None:
    value, reason = GENERIC_ROUTINES[routine]
    what = "item" if how == "item" else "a value passed to the program's code"
    for mode in ALL_MODES:
        with pytest.raises(SandboxViolation, match=rf"^{what} is not allowed \(it is a {reason}\)$"):
            _run(_TAKE[how], value, mode)
    assert reachability.classify(value) is not None  # the oracle flags them too


def _old_refusal(value: object, allowed: frozenset[type]) -> str | None:
    """The value check as it was for C routines: any method-wrapper or unbound routine."""
    if isinstance(value, wrappers._C_ROUTINES) and not isinstance(value, types.BuiltinFunctionType):
        return None
    return wrappers.refusal(value, allowed)


def test_routines_of_object_and_type_companion_rewrote_a_wrapper(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: admitted, `object.__setattr__` replaces a sealed wrapper's function and
    `type.__call__` builds an instance of a class the program may not hold."""
    monkeypatch.setattr(guards, "refusal", _old_refusal)
    victim = wrappers.SafeCallable(str.upper, "upper")
    scope = _run(
        "set_ = leak[0]\nset_(victim, '_fn', len)\nout = victim('abc')", object.__setattr__, "strict", victim=victim
    )
    assert scope["out"] == 3
    scope = _run("out = leak[0](sqlite3, ':memory:')", type.__call__, "strict", sqlite3=sqlite3.Connection)
    assert type(scope["out"]) is sqlite3.Connection
    scope["out"].close()
