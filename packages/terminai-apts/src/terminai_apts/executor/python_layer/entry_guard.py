"""Layer 3 hook for layer 4: values C code hands to the program's own code.

A program function receives its arguments from whoever calls it; when C code calls it
(``sorted(key=f)``, ``map(f, xs)``, ``re.sub(p, f, s)``, json hooks, ``__eq__`` called by
``in``, ``__exit__`` called by ``with``), no attribute read, item read, iteration or call
in the program's code is involved, so no guard saw those values. This policy checks
them where they enter instead, whoever the caller is:

* every ``def`` starts with ``if type(a) not in KINDS or type(b) not in KINDS: a, b =
  _enter_(a, b)`` over its named parameters (``KINDS``: the kinds the check admits as they
  are, so plain values cost one set lookup each and no call), then ``args =
  _enter_star_(args)`` and ``kw = _enter_kw_(kw)`` for ``*args``/``**kw``;
* every ``lambda a: body`` becomes ``lambda a: body if type(a) in KINDS or _entered_(a)
  else None`` (a lambda has no statements, and an assignment expression would be a syntax
  error inside a comprehension's iterable): ``_entered_`` answers True or refuses;
* the value of a ``yield`` expression (what ``send`` passed) and of ``yield from`` (what
  the inner iterator returned) pass ``_bind_``; a ``yield`` statement's value is unused;
* a ``with ... as name`` target (what ``__enter__`` returned) is checked first thing in
  the block (the compile policy does the same for ``match`` captures, in the guard);
* a decorated ``def`` or ``class`` is followed by the same check of its name as a call
  result: applying a decorator is a call the program's code makes, but not an
  ``ast.Call``, so what the last decorator returned (``@functools.partial(d.get, 'k')``,
  ``@next`` over ``@(lambda f: it)``: an item of a container, read in C) would otherwise
  be bound unchecked.

In those three places the interpreter binds a name before any check can run. A ``with``
target and a ``match`` capture are bound to a hidden name (``_bound_N``, which the program
cannot spell) and then ``name = _capture_(_bound_N)`` binds the program's name to the
admitted value or to an inert ``Refused`` marker, and ``_held_(name)`` raises the refusal:
a check that fails in any way (a ``RecursionError`` near the stack's end, before the
check could even start) leaves the program's name unbound. A decorated ``def``/``class``
binds its own name, so there the check is ``name = _capture_(name)`` then ``_held_``, and
a check that fails in any way deletes the name again (a bare ``except`` whose body is
``del name; raise``: bytecode only, nothing in it can fail). A check that raised at once
left the name holding the value for a program that catches the refusal.

The guards (``guards.guarded_enter`` …) apply the one value check, ``guards.admit``, and
rebind each parameter to what it answers. Names starting with ``_`` cannot be spelled
by the program, so it can neither call nor shadow them.
"""

from __future__ import annotations

import ast
import itertools
from typing import Any

ENTER = "_enter_"
ENTER_STAR = "_enter_star_"
ENTER_KW = "_enter_kw_"
BIND = "_bind_"
ENTERED = "_entered_"
CAPTURE = "_capture_"
HELD = "_held_"
TYPE = "_type_"  # the real `type` (the program's `type` is a stand-in it may rebind)
KINDS = "_kinds_"  # guards.ADMITTED_KINDS
_HIDDEN = itertools.count()  # numbers of the hidden names `with` targets are first bound to
# the checks, in the order the tests switch them off; then the names of the inline test
ENTRY_GUARD_NAMES = (ENTER, ENTER_STAR, ENTER_KW, BIND, ENTERED, CAPTURE, HELD)
ENTRY_NAMES = (*ENTRY_GUARD_NAMES, TYPE, KINDS)


def _load(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Load())


def _store(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Store())


def _delete(name: str) -> ast.Name:
    return ast.Name(id=name, ctx=ast.Del())


def _call(func: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=_load(func), args=list(args), keywords=[])


def bind(value: ast.expr) -> ast.Call:
    """``_bind_(value)``."""
    return _call(BIND, value)


def capture(name: str, *, call: bool = False) -> list[ast.stmt]:
    """``name = _capture_(name)`` then ``_held_(name)``: the name a statement bound before
    any check, rebound to what the check answers before a refusal is raised."""
    args: list[ast.expr] = [_load(name)]
    if call:
        args.append(ast.Constant(True))
    rebind = ast.Assign(targets=[_store(name)], value=_call(CAPTURE, *args))
    return [rebind, ast.Expr(value=_call(HELD, _load(name)))]


def captured(value: ast.expr) -> ast.Call:
    """``_capture_(value)`` (the first step, as an expression: a ``match`` case's guard)."""
    return _call(CAPTURE, value)


def held(value: ast.expr) -> ast.Call:
    """``_held_(value)`` (the second step, as an expression)."""
    return _call(HELD, value)


def _named(args: ast.arguments) -> list[str]:
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def _kind_test(name: str, op: ast.cmpop) -> ast.Compare:
    """``_type_(name) in _kinds_`` (or ``not in``)."""
    return ast.Compare(left=_call(TYPE, _load(name)), ops=[op], comparators=[_load(KINDS)])


def _any_of(tests: list[ast.expr], op: ast.boolop) -> ast.expr:
    return tests[0] if len(tests) == 1 else ast.BoolOp(op=op, values=tests)


def entry_statements(args: ast.arguments) -> list[ast.stmt]:
    """The statements that admit a function's parameters at its entry."""
    stmts: list[ast.stmt] = []
    named = _named(args)
    if named:
        target = ast.Tuple(elts=[_store(n) for n in named], ctx=ast.Store())
        enter = ast.Assign(targets=[target], value=_call(ENTER, *(_load(n) for n in named)))
        test = _any_of([_kind_test(n, ast.NotIn()) for n in named], ast.Or())
        stmts.append(ast.If(test=test, body=[enter], orelse=[]))
    if args.vararg is not None:
        name = args.vararg.arg
        stmts.append(ast.Assign(targets=[_store(name)], value=_call(ENTER_STAR, _load(name))))
    if args.kwarg is not None:
        name = args.kwarg.arg
        stmts.append(ast.Assign(targets=[_store(name)], value=_call(ENTER_KW, _load(name))))
    return stmts


def lambda_test(args: ast.arguments) -> ast.expr | None:
    """The test a lambda's body is guarded by: True, or a refusal."""
    named = _named(args)
    values: list[ast.expr] = [_load(n) for n in named]
    if args.vararg is not None:
        values.append(ast.Starred(value=_load(args.vararg.arg), ctx=ast.Load()))
    if args.kwarg is not None:
        kw_values = ast.Call(
            func=ast.Attribute(value=_load(args.kwarg.arg), attr="values", ctx=ast.Load()), args=[], keywords=[]
        )
        values.append(ast.Starred(value=kw_values, ctx=ast.Load()))
    if not values:
        return None
    entered = _call(ENTERED, *values)
    if len(values) != len(named):  # *args or **kw: the guard looks at every item
        return entered
    return ast.BoolOp(op=ast.Or(), values=[_any_of([_kind_test(n, ast.In()) for n in named], ast.And()), entered])


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


class EntryGuardMixin(ast.NodeTransformer):
    """Mixed in before ``RestrictingNodeTransformer``: adds the entry checks after the
    policy has checked the function (so the generated names are never refused)."""

    # A `with` target and a `match` capture are bound to a hidden name first, and a failed
    # check of a decorated definition unbinds its name (False: the program's own name is
    # bound, then checked; kept for the tests that show why not).
    hide_bound_names = True

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
        self._add_entry_checks(visited)
        return self.check_decorated(visited)

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        visited = super().visit_ClassDef(node)
        if not isinstance(visited, ast.ClassDef):
            return visited
        return self.check_decorated(visited)

    def check_decorated(self, node: ast.FunctionDef | ast.ClassDef) -> ast.stmt | list[ast.stmt]:
        """``@d def f`` binds ``d(f)`` as no call of the program's code would: unchecked. The
        statement is followed by the check every call result passes, in the same scope (so
        ``global f`` and a class body's namespace are respected), in two steps
        (:func:`capture`)."""
        if not node.decorator_list:
            return node
        rebind, hold = capture(node.name, call=True)
        checks: list[ast.stmt] = [rebind, hold]
        if self.hide_bound_names:
            # The interpreter bound the decorator's result before any check: if the check's own
            # call fails (a RecursionError at the stack's end), the name is unbound again. Only
            # bytecode runs in the handler (no call, no name lookup), so it cannot fail itself.
            unbind = ast.ExceptHandler(
                type=None, name=None, body=[ast.Delete(targets=[_delete(node.name)]), ast.Raise(exc=None, cause=None)]
            )
            checks[0] = ast.Try(body=[rebind], handlers=[unbind], orelse=[], finalbody=[])
        for check in checks:
            ast.fix_missing_locations(ast.copy_location(check, node))
        return [node, *checks]

    def _add_entry_checks(self, visited: ast.FunctionDef) -> None:
        stmts = entry_statements(visited.args)
        if not stmts:
            return
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

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        visited = super().visit_Lambda(node)
        if not isinstance(visited, ast.Lambda):
            return visited
        test = lambda_test(visited.args)
        if test is None:
            return visited
        body = ast.IfExp(test=test, body=visited.body, orelse=ast.Constant(None))
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
    def split_with(self, node: ast.With) -> ast.With:
        """``with a as x, b as y:`` is ``with a as x:`` around ``with b as y:`` (as the
        language defines it), nested here so that ``x`` is checked before ``b`` is entered
        (if ``b`` raised, ``x`` was left bound and unchecked) and before ``y`` is bound."""
        if len(node.items) > 1:
            inner = ast.With(items=node.items[1:], body=node.body, type_comment=None)
            node.items = node.items[:1]
            node.body = [ast.fix_missing_locations(ast.copy_location(inner, node))]
        return node

    def visit_With(self, node: ast.With) -> Any:
        visited = super().visit_With(self.split_with(node))
        if not isinstance(visited, ast.With):
            return visited
        checks: list[ast.stmt] = []
        for item in visited.items:  # one item, once split
            target = item.optional_vars
            if isinstance(target, ast.Name) and not self.hide_bound_names:
                checks.extend(capture(target.id))
            elif isinstance(target, ast.Name):  # a tuple target is unpacked through `_getiter_`
                # `__enter__`'s value goes to a name the program cannot spell; the program's
                # name is bound only to what the check answers (a check that fails in any
                # way, a RecursionError near the stack's end included, leaves it unbound)
                bound = f"_bound_{next(_HIDDEN)}"
                item.optional_vars = ast.copy_location(_store(bound), target)
                checks.append(ast.Assign(targets=[_store(target.id)], value=_call(CAPTURE, _load(bound))))
                checks.append(ast.Expr(value=_call(HELD, _load(target.id))))
        for stmt in checks:
            ast.copy_location(stmt, visited)
            ast.fix_missing_locations(stmt)
        visited.body[0:0] = checks
        return visited
