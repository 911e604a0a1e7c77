"""Layer 4: the restricted globals and builtins of one run."""

from __future__ import annotations

from typing import Any

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence, safe_builtins

from terminai_apts.executor.policy import FORBIDDEN_NAMES, SHADOWABLE_NAMES, Mode
from terminai_apts.executor.python_layer.guards import (
    ADMITTED_KINDS,
    DEFAULT_METACLASS,
    guarded_apply,
    guarded_bind,
    guarded_build_class,
    guarded_call,
    guarded_capture,
    guarded_delattr,
    guarded_enter,
    guarded_enter_kw,
    guarded_enter_star,
    guarded_entered,
    guarded_getattr,
    guarded_getitem,
    guarded_hasattr,
    guarded_held,
    guarded_inplacevar,
    guarded_iter,
    guarded_setattr,
    guarded_write,
    sandbox_type,
)
from terminai_apts.executor.python_layer.module_proxies import ModuleProxy, make_import
from terminai_apts.executor.python_layer.output import OutputBuffer, PrintFactory
from terminai_apts.executor.python_layer.safe_classes import EXTRA_BUILTINS
from terminai_apts.executor.python_layer.sandbox_builtins import (
    CLASSMETHOD,
    STATICMETHOD,
    PropertyFactory,
    SandboxGetattr,
    SandboxSuper,
    StandIn,
    TypeStandIn,
)
from terminai_apts.executor.python_layer.wrappers import SANDBOX_MODULE, SandboxViolation

# The sandbox's own versions of builtins whose real ones reach too far (see
# ``executor.python_layer.sandbox_builtins``); installed in every mode.
_SANDBOX_OWN: dict[str, Any] = {
    "getattr": SandboxGetattr(guarded_getattr),
    "super": SandboxSuper(),
    "property": PropertyFactory(),
    "staticmethod": STATICMETHOD,
    "classmethod": CLASSMETHOD,
    "type": TypeStandIn(sandbox_type, "type"),
    "hasattr": StandIn(guarded_hasattr, "hasattr"),
    "setattr": StandIn(guarded_setattr, "setattr"),
    "delattr": StandIn(guarded_delattr, "delattr"),
}

_STRICT_BUILTINS = frozenset(
    {"None", "True", "False", "abs", "bool", "divmod", "float", "int", "len", "max", "min",
     "pow", "range", "round", "sorted", "str", "sum", "list", "dict", "tuple", "set",
     "enumerate", "zip", "isinstance", "any", "all", "map", "filter", "repr", "reversed",
     "ValueError", "TypeError", "KeyError", "IndexError", "ZeroDivisionError",
     "Exception", "ArithmeticError", "__build_class__",
     # ordinary code catches and raises these; none of them reaches anything
     "LookupError", "AttributeError", "RuntimeError", "StopIteration", "AssertionError",
     "NotImplementedError", "OverflowError", "UnicodeError", "UnicodeDecodeError",
     "UnicodeEncodeError", "NameError", "RecursionError",
     # iteration over results (`next(iter(results), None)`)
     "iter", "next",
     # what an operator method returns when it does not know the other operand
     "NotImplemented"}
)  # fmt: skip


def _withheld(name: str, reason: str) -> StandIn:
    """A builtin's name kept for the program to bind; called, it says why it is absent."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise SandboxViolation(f"{name}() is not available in the sandbox: {reason}")

    return StandIn(refuse, name)


_WITHHELD: dict[str, Any] = {name: _withheld(name, reason) for name, reason in SHADOWABLE_NAMES.items()}


def build_builtins(mode: Mode, proxies: dict[str, ModuleProxy]) -> dict[str, Any]:
    builtins = dict(safe_builtins)
    builtins.update(EXTRA_BUILTINS)
    for name in list(builtins):
        if name in FORBIDDEN_NAMES or name in SHADOWABLE_NAMES or name == "_getattr_":
            del builtins[name]
    if mode == "strict":
        builtins = {k: v for k, v in builtins.items() if k in _STRICT_BUILTINS}
    builtins.update(_WITHHELD)
    builtins.update(_SANDBOX_OWN)
    builtins["__build_class__"] = guarded_build_class
    builtins["__import__"] = make_import(mode, proxies)
    return builtins


# The names RestrictedPython's generated code calls; user code can never spell them
# (names starting with "_" are refused by validation and by compile_restricted).
GUARD_NAMES: tuple[str, ...] = (
    "_getattr_", "_getitem_", "_getiter_", "_write_", "_inplacevar_",
    "_iter_unpack_sequence_", "_unpack_sequence_", "_print_", "_apply_",
    "_call_", "_enter_", "_enter_star_", "_enter_kw_", "_bind_", "_entered_", "_capture_", "_held_",
    "_type_", "_kinds_",
)  # fmt: skip


def build_globals(
    mode: Mode, proxies: dict[str, ModuleProxy], buffer: OutputBuffer, injected: dict[str, object]
) -> dict[str, Any]:
    """Fresh restricted globals for one child (layer 4)."""
    glb: dict[str, Any] = {
        "__builtins__": build_builtins(mode, proxies),
        "__name__": SANDBOX_MODULE,
        "__metaclass__": DEFAULT_METACLASS,  # RestrictedPython passes it to every class statement
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getiter_": guarded_iter,
        "_write_": guarded_write,
        "_inplacevar_": guarded_inplacevar,
        "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
        "_unpack_sequence_": guarded_unpack_sequence,
        "_print_": PrintFactory(buffer),
        "_apply_": guarded_apply,
        "_call_": guarded_call,
        "_enter_": guarded_enter,
        "_enter_star_": guarded_enter_star,
        "_enter_kw_": guarded_enter_kw,
        "_bind_": guarded_bind,
        "_entered_": guarded_entered,
        "_capture_": guarded_capture,
        "_held_": guarded_held,
        "_type_": type,  # the real one, for the inline test at a function's entry
        "_kinds_": ADMITTED_KINDS,
    }
    glb.update(injected)
    return glb
