"""Layer 3 hook for layer 4: values C code hands to the program's own code.

A program function receives its arguments from whoever calls it; when C code calls it
(``sorted(key=f)``, ``map(f, xs)``, ``re.sub(p, f, s)``, json hooks, ``__eq__`` called by
``in``, ``__exit__`` called by ``with``), no attribute read, item read, iteration or call
in the program's code is involved, so no guard saw those values. This policy checks
them where they enter instead, whoever the caller is:

* every ``def`` starts with ``a, b = _enter_(a, b)`` over its named parameters, then
  ``args = _enter_star_(args)`` and ``kw = _enter_kw_(kw)`` for ``*args``/``**kw``;
* every ``lambda a: body`` becomes ``lambda a: (lambda a: body)(*_enter_(a))``;
* the value of a ``yield`` expression (what ``send`` passed) and of ``yield from`` (what
  the inner iterator returned) pass ``_bind_``; a ``yield`` statement's value is unused.

The guards (``guards.guarded_enter`` …) apply the one value check, ``guards.admit``, and
rebind each parameter to what it answers. Names starting with ``_`` cannot be spelled
by the program, so it can neither call nor shadow them.
"""

from __future__ import annotations

import ast
from typing import Any

ENTER = "_enter_"
ENTER_STAR = "_enter_star_"
ENTER_KW = "_enter_kw_"
BIND = "_bind_"
ENTRY_GUARD_NAMES = (ENTER, ENTER_STAR, ENTER_KW, BIND)


def _load(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Load())


def _store(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Store())


def _call(func: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=_load(func), args=list(args), keywords=[])


def bind(value: ast.expr) -> ast.Call:
    """``_bind_(value)``."""
    return _call(BIND, value)


def _named(args: ast.arguments) -> list[str]:
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def entry_statements(args: ast.arguments) -> list[ast.stmt]:
    """The statements that admit a function's parameters at its entry."""
    stmts: list[ast.stmt] = []
    named = _named(args)
    if named:
        target = ast.Tuple(elts=[_store(n) for n in named], ctx=ast.Store())
        stmts.append(ast.Assign(targets=[target], value=_call(ENTER, *(_load(n) for n in named))))
    if args.vararg is not None:
        name = args.vararg.arg
        stmts.append(ast.Assign(targets=[_store(name)], value=_call(ENTER_STAR, _load(name))))
    if args.kwarg is not None:
        name = args.kwarg.arg
        stmts.append(ast.Assign(targets=[_store(name)], value=_call(ENTER_KW, _load(name))))
    return stmts


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


class EntryGuardMixin(ast.NodeTransformer):
    """Mixed in before ``RestrictingNodeTransformer``: adds the entry checks after the
    policy has checked the function (so the generated names are never refused)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # statements the entry check must follow (the `__exit__` traceback blanking: the
        # traceback is never admitted, so it is dropped before the parameters are checked)
        self._entry_after: set[int] = set()

    def run_entry_after(self, stmt: ast.stmt) -> None:
        self._entry_after.add(id(stmt))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        visited = super().visit_FunctionDef(node)
        if not isinstance(visited, ast.FunctionDef):
            return visited
        stmts = entry_statements(visited.args)
        if not stmts:
            return visited
        body = visited.body
        after = self._entry_after
        position = 1 if body and _is_docstring(body[0]) else 0
        for index, stmt in enumerate(body[:3]):
            if id(stmt) in after:
                position = index + 1
        for stmt in stmts:
            ast.copy_location(stmt, visited)
            ast.fix_missing_locations(stmt)
        body[position:position] = stmts
        return visited

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        """``lambda a, *r: body`` becomes ``lambda a, *r: (lambda a, r: body)(*_enter_(a),
        _enter_star_(r))``: a lambda has no statements, and an assignment expression
        would be a syntax error inside a comprehension's iterable."""
        visited = super().visit_Lambda(node)
        if not isinstance(visited, ast.Lambda):
            return visited
        args = visited.args
        named = _named(args)
        if not named and args.vararg is None and args.kwarg is None:
            return visited
        inner_args = [ast.arg(arg=name) for name in named]
        call_args: list[ast.expr] = []
        if named:
            call_args.append(ast.Starred(value=_call(ENTER, *(_load(n) for n in named)), ctx=ast.Load()))
        if args.vararg is not None:
            inner_args.append(ast.arg(arg=args.vararg.arg))
            call_args.append(_call(ENTER_STAR, _load(args.vararg.arg)))
        if args.kwarg is not None:
            inner_args.append(ast.arg(arg=args.kwarg.arg))
            call_args.append(_call(ENTER_KW, _load(args.kwarg.arg)))
        inner = ast.Lambda(
            args=ast.arguments(posonlyargs=[], args=inner_args, kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=visited.body,
        )
        body = ast.Call(func=inner, args=call_args, keywords=[])
        visited.body = ast.fix_missing_locations(ast.copy_location(body, visited.body))
        return visited

    # -- what a generator receives ----------------------------------------------------
    def visit_Expr(self, node: ast.Expr) -> Any:
        if isinstance(node.value, (ast.Yield, ast.YieldFrom)):  # a statement: its value is unused
            if node.value.value is not None:
                node.value.value = self.visit(node.value.value)
            return node
        return super().visit_Expr(node)

    def _bound(self, node: ast.Yield | ast.YieldFrom) -> Any:
        if node.value is not None:
            node.value = self.visit(node.value)
        return ast.fix_missing_locations(ast.copy_location(bind(node), node))

    def visit_Yield(self, node: ast.Yield) -> Any:
        return self._bound(node)

    def visit_YieldFrom(self, node: ast.YieldFrom) -> Any:
        return self._bound(node)

    # -- `with ... as name`: what `__enter__` returned -------------------------------------
    def visit_With(self, node: ast.With) -> Any:
        visited = super().visit_With(node)
        if not isinstance(visited, ast.With):
            return visited
        checks: list[ast.stmt] = []
        for item in visited.items:
            target = item.optional_vars
            if isinstance(target, ast.Name):  # a tuple target is unpacked through `_getiter_`
                checks.append(ast.Assign(targets=[_store(target.id)], value=bind(_load(target.id))))
        for stmt in checks:
            ast.copy_location(stmt, visited)
            ast.fix_missing_locations(stmt)
        visited.body[0:0] = checks
        return visited
