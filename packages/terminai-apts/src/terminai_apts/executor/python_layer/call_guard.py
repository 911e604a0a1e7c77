"""Layer 3 hook for layer 4: every call in the program's code, ``f(...)``, becomes
``_call_(f(...))``, so what a call returns passes the same value check as an attribute or
item read (``guards.guarded_call``). RestrictedPython guards only calls with
``*args``/``**kwargs`` (through ``_apply_``); a plain ``d.get(k)`` would otherwise hand its
result over unchecked.

The call itself stays in the program's frame (the check runs after it returns): recursion
depth is the program's own, and ``super()`` still finds its caller's frame.
"""

from __future__ import annotations

import ast
from typing import Any

CALL_GUARD = "_call_"


class CallGuardMixin(ast.NodeTransformer):
    """Mixed in before ``RestrictingNodeTransformer``: wraps each call after the policy
    has checked (and, for star arguments, rewritten) it."""

    def visit_Call(self, node: ast.Call) -> Any:
        visited = super().visit_Call(node)
        if not isinstance(visited, ast.Call):
            return visited
        func = visited.func
        # the guards' own calls (names the program cannot spell): their results are checked
        if isinstance(func, ast.Name) and func.id.startswith("_"):
            return visited
        guard = ast.Name(id=CALL_GUARD, ctx=ast.Load())
        wrapped = ast.Call(func=guard, args=[visited], keywords=[])
        return ast.fix_missing_locations(ast.copy_location(wrapped, visited))
