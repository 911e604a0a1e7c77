"""Layer 3: RestrictedPython's transformer, extended for ordinary agent code.

Everything RestrictedPython checks is still checked; on top of it this policy
  * accepts more special methods in class bodies (``SPECIAL_METHODS``);
  * rewrites augmented assignment to attributes and items (``self.n += 1``,
    ``counts[k] += 1``) into the guarded read, ``_inplacevar_`` and a guarded write;
  * drops type annotations (they are never evaluated, so they cannot run code);
  * lets ``super().<special method>`` through (the runtime guard accepts such a name only
    on the sandbox's own ``super`` proxy), and compiles the reads ``x.__class__`` and
    ``x.__name__`` to ``_getattr_(x, '__class__')`` (the guard answers a sandbox-safe
    value; a store or delete of either is still refused);
  * walks ``if/elif`` chains iteratively (a 500-branch chain is not 500 nested calls);
  * keeps annotations of class bodies as plain strings (``x: 'int' = 0``: what
    ``from __future__ import annotations`` does), so ``@dataclass`` sees its fields;
  * accepts ``nonlocal`` and ``match`` (value patterns such as ``case Color.RED:`` become
    a capture plus a guard that reads the value through the attribute guard);
  * blanks the traceback a class's ``__exit__`` receives before its body runs;
  * checks every value C code hands to the program's own code: parameters at a function's
    entry, what a ``yield`` receives, a ``with`` target, a ``match`` capture
    (``executor.python_layer.entry_guard``);
  * compiles list targets (``[a, b] = x``) as the tuple targets they mean, which
    RestrictedPython unpacks through ``_getiter_``.
"""

from __future__ import annotations

import ast
import itertools
from typing import Any

from RestrictedPython.transformer import IOPERATOR_TO_STR, RestrictingNodeTransformer

from terminai_apts.executor.policy import SAFE_SPECIAL_READS
from terminai_apts.executor.python_layer.call_guard import CallGuardMixin
from terminai_apts.executor.python_layer.entry_guard import EntryGuardMixin, captured, held

# Special methods a class body may define. Each is called by C code only in ways Python
# code could call it too (comparisons, len(), iter(), str(), repr(), `in`); what they return
# is checked by the interpreter (len() must get a non-negative int that fits, iter() an
# iterator, str()/repr() a str). `__index__`, `__getattr__`, `__set_name__`, `__init_subclass__`,
# `__class_getitem__`, `__reduce__`, `__del__`, `__format__` stay refused.
# `__enter__`/`__exit__` are called by `with` (the traceback argument of `__exit__` is
# replaced by None before its body runs), `__post_init__` by a dataclass's `__init__`.
# The arithmetic operators (`a + b`, `-a`, `b + a` when `a` does not know `b`, `a += b`) are
# called by C code only with the operands the expression holds, whose values the entry check
# admits like any parameter's; what they return is the expression's value.
_OPERATORS = (
    "add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift", "and", "xor", "or",
)  # fmt: skip
ARITHMETIC_METHODS = frozenset(
    {f"__{prefix}{op}__" for op in _OPERATORS for prefix in ("", "r", "i")}
    | {"__divmod__", "__rdivmod__", "__neg__", "__pos__", "__abs__", "__invert__"}
)
SPECIAL_METHODS = frozenset(
    {"__init__", "__repr__", "__str__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
     "__len__", "__iter__", "__contains__", "__getitem__", "__bool__", "__next__", "__hash__",
     "__enter__", "__exit__", "__post_init__"}
) | ARITHMETIC_METHODS  # fmt: skip
# Special methods readable through `super()` (and only there).
SUPER_METHODS = SPECIAL_METHODS

_COUNTER = itertools.count()


def is_object_base(node: ast.expr) -> bool:
    """The base ``object`` in a class statement: what every class has already."""
    return isinstance(node, ast.Name) and node.id == "object"


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


def _scrub_exit_traceback(node: ast.FunctionDef) -> ast.stmt | None:
    """``def __exit__(self, exc_type, exc, tb)``: the first statement sets ``tb = None``
    (with ``*args``, its third item): a traceback leads to frames, never to user code."""
    params = [*node.args.posonlyargs, *node.args.args]
    stmt: ast.stmt | None = None
    if len(params) >= 4:
        stmt = ast.Assign(targets=[_name(params[3].arg, ast.Store())], value=ast.Constant(None))
    elif node.args.vararg is not None:
        rest = node.args.vararg.arg
        keep = 3 - len(params)  # items of *args before the traceback
        # rest = rest[:keep] + ((None,) if rest[keep:] else ()): plain syntax, no name a
        # program could rebind, on a tuple the interpreter built
        head = ast.Subscript(value=_name(rest, ast.Load()), slice=ast.Slice(upper=ast.Constant(keep)), ctx=ast.Load())
        tail = ast.Subscript(value=_name(rest, ast.Load()), slice=ast.Slice(lower=ast.Constant(keep)), ctx=ast.Load())
        none = ast.Tuple(elts=[ast.Constant(None)], ctx=ast.Load())
        blank = ast.IfExp(test=tail, body=none, orelse=ast.Tuple(elts=[], ctx=ast.Load()))
        stmt = ast.Assign(targets=[_name(rest, ast.Store())], value=ast.BinOp(left=head, op=ast.Add(), right=blank))
    if stmt is not None:
        node.body.insert(0, ast.fix_missing_locations(ast.copy_location(stmt, node)))
    return stmt


def _captures(pattern: ast.pattern) -> list[str]:
    """Names a pattern binds to parts of its subject (not the subject itself, which the
    program already holds: ``case x:`` stays irrefutable)."""
    while isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        pattern = pattern.pattern
    if isinstance(pattern, ast.MatchAs):
        return []
    if isinstance(pattern, ast.MatchOr):
        return [name for alt in pattern.patterns for name in _captures(alt)]
    names: list[str] = []
    for node in ast.walk(pattern):
        name = None
        if isinstance(node, (ast.MatchAs, ast.MatchStar)):
            name = node.name
        elif isinstance(node, ast.MatchMapping):
            name = node.rest
        if name is not None and name not in names:
            names.append(name)
    return names


def _hide_captures(pattern: ast.pattern, *, hide: bool = True) -> dict[str, str]:
    """Make the pattern bind each of :func:`_captures`' names to a hidden name (one the
    program cannot spell) instead; the real name -> its hidden one (``hide=False``: the
    names themselves, as the policy once compiled them; the tests' old behaviour)."""
    names = dict.fromkeys(_captures(pattern))
    hidden = {name: f"_bound_{next(_COUNTER)}" if hide else name for name in names}
    if not hide or not hidden:
        return hidden
    for node in ast.walk(pattern):
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name in hidden:
            node.name = hidden[node.name]
        elif isinstance(node, ast.MatchMapping) and node.rest in hidden:
            node.rest = hidden[node.rest]
    return hidden


def _rebind(hidden: dict[str, str]) -> list[ast.expr]:
    """``(a := _capture_(_bound_1)) is a and … and _held_(a) and …``: True once every value
    is admitted. The pattern bound only hidden names, so a check that fails in any way (a
    refusal, or a ``RecursionError`` near the stack's end before the check could even run)
    leaves the program's names unbound; every name is rebound to the check's answer before
    any refusal is raised: one raised at the first name left the others unchecked."""
    rebinds: list[ast.expr] = []
    for name, bound in hidden.items():
        named = ast.NamedExpr(target=_name(name, ast.Store()), value=captured(_name(bound, ast.Load())))
        rebinds.append(ast.Compare(left=named, ops=[ast.Is()], comparators=[_name(name, ast.Load())]))
    return rebinds + [held(_name(name, ast.Load())) for name in hidden]


def list_targets_as_tuples(tree: ast.AST) -> None:
    """``[a, b] = x`` unpacks exactly as ``(a, b) = x``, but RestrictedPython routes only
    tuple targets through ``_getiter_`` (``_unpack_sequence_``): a list target (in an
    assignment, a ``for``, a comprehension, a ``with``, nested in a tuple) took the items
    in C, past the value check. Every list target becomes the tuple target it means, in
    place (the two node classes have the same fields: ``elts``, ``ctx``). Iterative
    (``ast.walk``): a 500-branch ``elif`` chain is deeper than the recursion limit."""
    for node in ast.walk(tree):
        if type(node) is ast.List and type(node.ctx) is ast.Store:
            node.__class__ = ast.Tuple  # type: ignore[assignment]  # same fields, see above


class SandboxTransformer(EntryGuardMixin, CallGuardMixin, RestrictingNodeTransformer):
    """The compile policy of the executor (``compile_restricted(..., policy=...)``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._kept_annotations: set[int] = set()

    def visit_Module(self, node: ast.Module) -> Any:  # noqa: N802 - NodeTransformer naming
        list_targets_as_tuples(node)
        return super().visit_Module(node)

    def check_name(self, node: Any, name: str | None, allow_magic_methods: bool = False) -> None:
        if allow_magic_methods and name in SPECIAL_METHODS and getattr(node, "col_offset", 0) != 0:
            return
        super().check_name(node, name, allow_magic_methods=allow_magic_methods)

    # -- annotations: never evaluated --------------------------------------------------
    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:  # noqa: N802 - NodeTransformer naming
        if id(node) in self._kept_annotations:  # a class body's field: `x: 'int' = v`
            node.target = self.visit(node.target)
            if node.value is not None:
                node.value = self.visit(node.value)
            return node
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

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:  # noqa: N802 - NodeTransformer naming
        """Class-body annotations of plain names are kept, as the text of the annotation
        (never evaluated): ``dataclasses`` and ``NamedTuple`` read ``__annotations__``.
        A base ``object`` is dropped (the class has it anyway; the name is not offered)."""
        node.bases = [base for base in node.bases if not is_object_base(base)]
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.simple:
                stmt.annotation = ast.copy_location(ast.Constant(ast.unparse(stmt.annotation)), stmt.annotation)
                self._kept_annotations.add(id(stmt))
            elif isinstance(stmt, ast.FunctionDef) and stmt.name == "__exit__":
                scrub = _scrub_exit_traceback(stmt)
                if scrub is not None:  # the traceback is dropped before the entry check
                    self.run_entry_after(scrub)
        return super().visit_ClassDef(node)

    # -- nonlocal and match -----------------------------------------------------------------
    def visit_Nonlocal(self, node: ast.Nonlocal) -> Any:  # noqa: N802 - NodeTransformer naming
        for name in node.names:
            self.check_name(node, name)
        return node

    def visit_Match(self, node: ast.Match) -> Any:  # noqa: N802 - NodeTransformer naming
        node.subject = self.visit(node.subject)
        for case in node.cases:
            checks: list[ast.expr] = []
            case.pattern = self._pattern(case.pattern, checks)
            # what the pattern captured was taken apart in C (sequence items, mapping
            # values, `__match_args__` reads): each capture is admitted before the guard
            checks[0:0] = _rebind(_hide_captures(case.pattern, hide=self.hide_bound_names))
            if case.guard is not None:
                checks.append(self.visit(case.guard))
            if checks:
                case.guard = checks[0] if len(checks) == 1 else ast.BoolOp(op=ast.And(), values=checks)
                ast.copy_location(case.guard, case.pattern)
                ast.fix_missing_locations(case.guard)
            case.body = self._visit_body(case.body)
        return node

    def _keyword_reads(self, node: ast.MatchClass, checks: list[ast.expr]) -> ast.pattern:
        """``case C(a=v, b=0)`` reads ``a`` and ``b`` in C, past the value check: it becomes
        ``case C() as _m if (v := _getattr_(_m, 'a')) is v and _getattr_(_m, 'b') == 0``.
        A keyword's pattern is a name, ``_``, a literal or ``None``/``True``/``False``."""
        capture = f"_match_{next(_COUNTER)}"
        for attr, sub in zip(node.kwd_attrs, node.kwd_patterns, strict=True):
            self.check_name(node, attr)
            read = ast.Call(
                func=_name("_getattr_", ast.Load()), args=[_name(capture, ast.Load()), ast.Constant(attr)], keywords=[]
            )
            test: ast.expr
            if isinstance(sub, ast.MatchAs) and sub.pattern is None:
                target = sub.name or f"_match_{next(_COUNTER)}"
                if sub.name:
                    self.check_name(sub, sub.name)
                bound = ast.NamedExpr(target=_name(target, ast.Store()), value=read)
                test = ast.Compare(left=bound, ops=[ast.Is()], comparators=[_name(target, ast.Load())])
            elif isinstance(sub, ast.MatchValue) and isinstance(sub.value, ast.Constant):
                test = ast.Compare(left=read, ops=[ast.Eq()], comparators=[sub.value])
            elif isinstance(sub, ast.MatchSingleton):
                test = ast.Compare(left=read, ops=[ast.Is()], comparators=[ast.Constant(sub.value)])
            else:
                self.error(node, "match: a keyword of a class pattern takes a name, _ or a literal")
                continue
            checks.append(test)
        node.kwd_attrs = []
        node.kwd_patterns = []
        return ast.copy_location(ast.MatchAs(pattern=node, name=capture), node)

    def _pattern(self, node: ast.pattern, checks: list[ast.expr]) -> ast.pattern:
        """One pattern, checked; value patterns that read attributes (``Color.RED``) become
        a hidden capture compared in the guard with the value read through ``_getattr_``
        (a value pattern reads the attribute in C, past the guard)."""
        if isinstance(node, ast.MatchValue):
            if isinstance(node.value, ast.Attribute):
                capture = f"_match_{next(_COUNTER)}"
                compare = ast.Compare(
                    left=_name(capture, ast.Load()), ops=[ast.Eq()], comparators=[self.visit(node.value)]
                )
                checks.append(compare)
                return ast.copy_location(ast.MatchAs(name=capture), node)
            node.value = self.visit(node.value)
            return node
        if isinstance(node, ast.MatchSingleton):
            return node
        if isinstance(node, ast.MatchSequence):
            node.patterns = [self._pattern(p, checks) for p in node.patterns]
            return node
        if isinstance(node, ast.MatchStar):
            if node.name:
                self.check_name(node, node.name)
            return node
        if isinstance(node, ast.MatchAs):
            if node.name:
                self.check_name(node, node.name)
            if node.pattern is not None:
                node.pattern = self._pattern(node.pattern, checks)
            return node
        if isinstance(node, ast.MatchMapping):
            for key in node.keys:
                if not isinstance(key, ast.Constant):
                    self.error(node, "match: mapping keys must be literals")
            if node.rest:
                self.check_name(node, node.rest)
            node.patterns = [self._pattern(p, checks) for p in node.patterns]
            return node
        if isinstance(node, ast.MatchClass):
            if not isinstance(node.cls, ast.Name):
                self.error(node, "match: a class pattern names its class directly (from m import Cls)")
            else:
                self.check_name(node, node.cls.id)
            node.patterns = [self._pattern(p, checks) for p in node.patterns]
            if not node.kwd_attrs:
                return node
            return self._keyword_reads(node, checks)
        if isinstance(node, ast.MatchOr):
            values = [p.value for p in node.patterns if isinstance(p, ast.MatchValue)]
            if len(values) == len(node.patterns) and any(isinstance(v, ast.Attribute) for v in values):
                # `case A.X | A.Y:` — one capture, compared with each value
                capture = f"_match_{next(_COUNTER)}"
                tests: list[ast.expr] = [
                    ast.Compare(left=_name(capture, ast.Load()), ops=[ast.Eq()], comparators=[self.visit(v)])
                    for v in values
                ]
                checks.append(ast.BoolOp(op=ast.Or(), values=tests))
                return ast.copy_location(ast.MatchAs(name=capture), node)
            inner: list[ast.expr] = []
            node.patterns = [self._pattern(p, inner) for p in node.patterns]
            if inner:
                self.error(node, "match: attribute values (A.X) inside '|' must be the only alternatives")
            return node
        self.error(node, f"match: {type(node).__name__} patterns are not allowed")
        return node

    # -- super().__init__(), x.__class__, f.__name__ ---------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> Any:  # noqa: N802 - NodeTransformer naming
        reads_special = node.attr in SAFE_SPECIAL_READS or (node.attr in SUPER_METHODS and is_super_call(node.value))
        if reads_special and isinstance(node.ctx, ast.Load):
            # through the attribute guard, which answers a sandbox-safe value for these
            # names (``guards._SAFE_SPECIALS``) and only the proxy's reads after super();
            # stores and deletes fall through to RestrictedPython, which refuses them
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
