"""Layer 3: RestrictedPython's transformer, extended for ordinary agent code.

Everything RestrictedPython checks is still checked; on top of it this policy
  * accepts more special methods in class bodies (``SPECIAL_METHODS``);
  * rewrites augmented assignment to attributes and items (``self.n += 1``,
    ``counts[k] += 1``) into the guarded read, ``_inplacevar_`` and a guarded write;
  * drops type annotations (they are never evaluated, so they cannot run code);
  * lets ``super().<special method>`` through (the runtime guard accepts such a name only
    on the sandbox's own ``super`` proxy);
  * walks ``if/elif`` chains iteratively (a 500-branch chain is not 500 nested calls).
"""

from __future__ import annotations

import ast
import itertools
from typing import Any

from RestrictedPython.transformer import IOPERATOR_TO_STR, RestrictingNodeTransformer

from terminai_apts.executor.call_guard import CallGuardMixin

# Special methods a class body may define. Each is called by C code only in ways Python
# code could call it too (comparisons, len(), iter(), str(), repr(), `in`); what they return
# is checked by the interpreter (len() must get a non-negative int that fits, iter() an
# iterator, str()/repr() a str). `__index__`, `__getattr__`, `__set_name__`, `__init_subclass__`,
# `__class_getitem__`, `__reduce__`, `__del__`, `__format__` stay refused.
SPECIAL_METHODS = frozenset(
    {"__init__", "__repr__", "__str__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
     "__len__", "__iter__", "__contains__", "__getitem__", "__bool__", "__next__", "__hash__"}
)  # fmt: skip
# Special methods readable through `super()` (and only there).
SUPER_METHODS = SPECIAL_METHODS

_COUNTER = itertools.count()


def is_super_call(node: ast.expr) -> bool:
    """``super()`` with no arguments: the only form the sandbox accepts."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "super"
        and not node.args
        and not node.keywords
    )


def _name(name: str, ctx: ast.expr_context) -> ast.Name:
    return ast.Name(id=name, ctx=ctx)


class SandboxTransformer(CallGuardMixin, RestrictingNodeTransformer):
    """The compile policy of the executor (``compile_restricted(..., policy=...)``)."""

    def check_name(self, node: Any, name: str | None, allow_magic_methods: bool = False) -> None:
        if allow_magic_methods and name in SPECIAL_METHODS and getattr(node, "col_offset", 0) != 0:
            return
        super().check_name(node, name, allow_magic_methods=allow_magic_methods)

    # -- annotations: never evaluated --------------------------------------------------
    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:  # noqa: N802 - NodeTransformer naming
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        assign = ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)
        return self.visit(assign)

    def _strip_annotations(self, node: ast.FunctionDef | ast.Lambda) -> None:
        args = node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if arg is not None:
                arg.annotation = None

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:  # noqa: N802 - NodeTransformer naming
        self._strip_annotations(node)
        node.returns = None
        return super().visit_FunctionDef(node)

    # -- super().__init__() ---------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> Any:  # noqa: N802 - NodeTransformer naming
        if node.attr in SUPER_METHODS and isinstance(node.ctx, ast.Load) and is_super_call(node.value):
            value = self.visit(node.value)
            call = ast.Call(func=_name("_getattr_", ast.Load()), args=[value, ast.Constant(node.attr)], keywords=[])
            return ast.fix_missing_locations(ast.copy_location(call, node))
        return super().visit_Attribute(node)

    # -- augmented assignment to attributes and items ------------------------------------
    def visit_AugAssign(self, node: ast.AugAssign) -> Any:  # noqa: N802 - NodeTransformer naming
        target = node.target
        if not isinstance(target, (ast.Attribute, ast.Subscript)):
            return super().visit_AugAssign(node)
        if isinstance(target, ast.Attribute) and target.attr.startswith("_"):
            return super().visit_AugAssign(node)  # refused with RestrictedPython's message
        if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Slice):
            return super().visit_AugAssign(node)  # `x[a:b] += y`: refused, rare in practice
        n = next(_COUNTER)
        obj_name = f"_aug_obj_{n}"
        stmts: list[ast.stmt] = [ast.Assign(targets=[_name(obj_name, ast.Store())], value=self.visit(target.value))]
        op = ast.Constant(IOPERATOR_TO_STR[type(node.op)])
        if isinstance(target, ast.Attribute):
            read: ast.expr = ast.Call(
                func=_name("_getattr_", ast.Load()),
                args=[_name(obj_name, ast.Load()), ast.Constant(target.attr)],
                keywords=[],
            )
            store: ast.expr = ast.Attribute(
                value=ast.Call(func=_name("_write_", ast.Load()), args=[_name(obj_name, ast.Load())], keywords=[]),
                attr=target.attr,
                ctx=ast.Store(),
            )
        else:
            key_name = f"_aug_key_{n}"
            stmts.append(ast.Assign(targets=[_name(key_name, ast.Store())], value=self.visit(target.slice)))
            read = ast.Call(
                func=_name("_getitem_", ast.Load()),
                args=[_name(obj_name, ast.Load()), _name(key_name, ast.Load())],
                keywords=[],
            )
            store = ast.Subscript(
                value=ast.Call(func=_name("_write_", ast.Load()), args=[_name(obj_name, ast.Load())], keywords=[]),
                slice=_name(key_name, ast.Load()),
                ctx=ast.Store(),
            )
        value = ast.Call(func=_name("_inplacevar_", ast.Load()), args=[op, read, self.visit(node.value)], keywords=[])
        stmts.append(ast.Assign(targets=[store], value=value))
        for stmt in stmts:
            ast.copy_location(stmt, node)
            ast.fix_missing_locations(stmt)
        return stmts

    # -- long if/elif chains ----------------------------------------------------------------
    def _visit_body(self, body: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in body:
            new = self.visit(stmt)
            if new is None:
                continue
            if isinstance(new, list):
                out.extend(new)
            else:
                out.append(new)
        return out

    def visit_If(self, node: ast.If) -> Any:  # noqa: N802 - NodeTransformer naming
        chain = [node]
        while len(chain[-1].orelse) == 1 and isinstance(chain[-1].orelse[0], ast.If):
            chain.append(chain[-1].orelse[0])
        for link in chain:
            link.test = self.visit(link.test)
            link.body = self._visit_body(link.body)
        chain[-1].orelse = self._visit_body(chain[-1].orelse)
        return node
