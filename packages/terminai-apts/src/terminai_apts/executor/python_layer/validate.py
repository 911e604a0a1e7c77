"""Layers 1-3 on the host, before any run starts: size checks before parsing, AST
validation, then RestrictedPython's compile with the sandbox's policy (the run compiles
again; a refusal found here never costs a sandbox start).

What a refusal reports is bounded whatever the program: at most ``MAX_REPORTED``
violations (and how many there were), names cut to ``MAX_NAME_CHARS``, the allowlist
once.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
import warnings
from dataclasses import dataclass

from RestrictedPython.compile import compile_restricted_exec

from terminai_apts.executor.policy import (
    FORBIDDEN_ATTR_PREFIXES,
    FORBIDDEN_ATTRS,
    FORBIDDEN_NAMES,
    FUTURE_FEATURES,
    MAX_AST_DEPTH,
    MAX_AST_NODES,
    MAX_BRACKET_DEPTH,
    MAX_FSTRING_FIELDS,
    MAX_INDENT_LEVEL,
    MAX_SOURCE_BYTES,
    SAFE_SPECIAL_READS,
    Mode,
    allowed_imports_text,
    modules_for,
)
from terminai_apts.executor.python_layer.transform import (
    SPECIAL_METHODS,
    SUPER_METHODS,
    SandboxTransformer,
    is_object_base,
    is_super_call,
)

# Bounds of a refusal's report (issue: a 100 KB program printed 43.6 MB of violations).
MAX_REPORTED = 20
MAX_NAME_CHARS = 60
MAX_MESSAGE_CHARS = 300
# Where the full list of what programs may use is written.
ALLOWED_DOC = "docs/AGENT_API.md, 'What programs may use'"

_PATH_WRITES = frozenset(
    {"write_text", "write_bytes", "touch", "mkdir", "unlink", "rename", "replace",
     "rmdir", "chmod", "symlink_to", "hardlink_to", "link_to"}
)  # fmt: skip


# Special methods a class body may define, and the ones `super()` may read (layer 3
# accepts the same names: see ``executor.python_layer.transform``).
_DUNDER_METHODS = SPECIAL_METHODS


@dataclass(frozen=True, slots=True, kw_only=True)
class Violation:
    rule: str
    message: str
    line: int = 0
    col: int = 0

    def to_json(self) -> dict[str, object]:
        return {"rule": self.rule, "message": self.message, "line": self.line, "col": self.col}


def _short(name: str) -> str:
    return name if len(name) <= MAX_NAME_CHARS else name[:MAX_NAME_CHARS] + "…"


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationReport:
    """The first ``MAX_REPORTED`` violations, how many there were in all, and (once) what
    is allowed instead."""

    violations: tuple[Violation, ...]
    total: int = 0
    allowed: str = ""

    @property
    def ok(self) -> bool:
        return not self.violations

    def summary(self) -> str:
        text = "; ".join(f"line {v.line}: {v.message} [{v.rule}]" for v in self.violations)
        more = max(self.total, len(self.violations)) - len(self.violations)
        if more:
            text += f"; and {more} more"
        if self.allowed:
            text += f". {self.allowed}"
        return text


def _report(found: list[Violation], allowed: str = "") -> ValidationReport:
    return ValidationReport(violations=tuple(found[:MAX_REPORTED]), total=len(found), allowed=allowed)


def _text_depth(code: str) -> tuple[int, int]:
    """Bracket nesting and indentation level, estimated without parsing (layer 1)."""
    depth = best = 0
    for ch in code:
        if ch in "([{":
            depth += 1
            best = max(best, depth)
        elif ch in ")]}":
            depth = max(0, depth - 1)
    indent = 0
    for line in code.splitlines():
        stripped = line.lstrip(" \t")
        if stripped:
            indent = max(indent, (len(line) - len(stripped)) // 2)
    return best, indent


def size_violation(size: int) -> Violation:
    """Code of ``size`` bytes (or more) is larger than the limit."""
    return Violation(rule="L1-source-size", message=f"code is {size} bytes or more (limit {MAX_SOURCE_BYTES})")


def _source_size(code: str) -> tuple[int, int | None]:
    """The UTF-8 size of ``code`` (without encoding it when its length decides) and where its
    first lone surrogate is (None: it has none), from one encoding."""
    if len(code) > MAX_SOURCE_BYTES:  # every character is at least one byte
        return len(code), None
    try:
        return len(code.encode("utf-8")), None
    except UnicodeEncodeError as exc:  # a lone surrogate (a JSON "\\udcff" escape, os.fsdecode)
        return len(code.encode("utf-8", "surrogatepass")), exc.start


def _fstring_token_fields(text: str) -> int:
    """Replacement fields in one f-string token of Python 3.11 (``{{`` is a brace, not a field)."""
    quote = min((i for i in (text.find("'"), text.find('"')) if i >= 0), default=0)
    if "f" not in text[:quote].lower():
        return 0
    return text.count("{") - 2 * text.count("{{")


def _fstring_fields(code: str) -> Violation | None:
    """The first f-string with more than ``MAX_FSTRING_FIELDS`` replacement fields (or
    the field past what the node limit allows in all), found from the tokens in one
    linear pass before the parser sees the code: Python 3.11's parser costs fields ×
    length per literal, and parses each field on its own. Only a program with more
    braces than the limit is tokenized at all."""
    if code.count("{") <= MAX_FSTRING_FIELDS:
        return None
    fields: list[int] = []  # per open f-string (3.12+: f-strings nest as tokens)
    # Each field is two nodes at least (its value and the expression), each parsed on its
    # own: more than the node limit allows is refused before any of them is parsed.
    total, most = 0, MAX_AST_NODES // 2
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            count = 0  # the fields of the f-string this token is in (or is), so far
            if token.type == tokenize.STRING and sys.version_info < (3, 12):
                count = _fstring_token_fields(token.string)  # a whole f-string in one token
                total += count
            elif sys.version_info >= (3, 12) and token.type == tokenize.FSTRING_START:
                fields.append(0)
            elif sys.version_info >= (3, 12) and token.type == tokenize.FSTRING_END and fields:
                fields.pop()
            elif fields and token.type == tokenize.OP and token.string == "{":
                fields[-1] += 1
                count = fields[-1]
                total += 1
            if count > MAX_FSTRING_FIELDS:
                message = (
                    f"an f-string holds more than {MAX_FSTRING_FIELDS} replacement fields (limit"
                    f" {MAX_FSTRING_FIELDS} per f-string); split it, or build the text with ''.join(...)"
                )
                return Violation(rule="L1-fstring-fields", message=message, line=token.start[0], col=token.start[1])
            if total > most:
                message = f"the f-strings hold more than {most} replacement fields in all (limit {MAX_AST_NODES} nodes)"
                return Violation(rule="L1-ast-nodes", message=message, line=token.start[0], col=token.start[1])
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError, MemoryError):
        pass  # malformed: the parser reports it (what was read so far was counted)
    return None


def _size_checks(code: str) -> list[Violation]:
    # The size first and alone: nothing scans an oversized program.
    size, surrogate = _source_size(code)
    if size > MAX_SOURCE_BYTES:
        return [size_violation(size)]
    if surrogate is not None:
        line = code.count("\n", 0, surrogate) + 1
        col = surrogate - code.rfind("\n", 0, surrogate)
        char = f"U+{ord(code[surrogate]):04X}"
        message = f"the code holds a lone surrogate ({char}), which is not text; write it as an escape"
        return [Violation(rule="L1-encoding", message=message, line=line, col=col)]
    out: list[Violation] = []
    brackets, indent = _text_depth(code)
    if brackets > MAX_BRACKET_DEPTH:
        out.append(Violation(rule="L1-nesting", message=f"brackets nested {brackets} deep (limit {MAX_BRACKET_DEPTH})"))
    if indent > MAX_INDENT_LEVEL * 4:
        out.append(Violation(rule="L1-nesting", message="indentation too deep"))
    fstring = _fstring_fields(code)
    if fstring is not None:
        out.append(fstring)
    return out


def _ast_size(tree: ast.AST) -> Violation | None:
    count = 0
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_AST_NODES:
            return Violation(rule="L1-ast-nodes", message=f"more than {MAX_AST_NODES} nodes")
        if depth > MAX_AST_DEPTH:
            return Violation(
                rule="L1-ast-depth",
                message=f"syntax nested deeper than {MAX_AST_DEPTH}",
                line=getattr(node, "lineno", 0),
            )
        for child in ast.iter_child_nodes(node):
            # an `elif` is the sole If of its parent's orelse: a chain is not nesting
            elif_link = isinstance(node, ast.If) and isinstance(child, ast.If) and node.orelse == [child]
            stack.append((child, depth if elif_link else depth + 1))
    return None


def _bad_attr(name: str) -> bool:
    return name in FORBIDDEN_ATTRS or name.startswith(FORBIDDEN_ATTR_PREFIXES)


class _Checker(ast.NodeVisitor):
    def __init__(self, mode: Mode, proposal: bool) -> None:
        self.mode = mode
        self.proposal = proposal
        self.allowed = modules_for(mode)
        self.found: list[Violation] = []
        self.import_refused = False
        self.annotation_depth = 0
        # proposal checks: local names bound to subprocess / importlib / pathlib things
        self.aliases: dict[str, str] = {}

    def add(self, node: ast.AST, rule: str, message: str) -> None:
        self.found.append(
            Violation(
                rule=rule,
                message=message[:MAX_MESSAGE_CHARS],
                line=getattr(node, "lineno", 0),
                col=getattr(node, "col_offset", 0),
            )
        )
        if rule == "L2-import":
            self.import_refused = True

    # -- names and attributes ---------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "object" and self.annotation_depth:
            pass  # `def f(x: object)`: annotations are dropped, never evaluated
        elif node.id in FORBIDDEN_NAMES:
            self.add(node, "L2-forbidden-name", f"name '{node.id}' is not allowed")
        elif node.id.startswith("_") and node.id != "_":  # `_` alone is the throwaway name
            self.add(node, "L2-underscore-name", f"names starting with '_' are not allowed: '{_short(node.id)}'")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in SUPER_METHODS and is_super_call(node.value):
            self.generic_visit(node)
            return
        if node.attr in SAFE_SPECIAL_READS:
            if not isinstance(node.ctx, ast.Load):  # `x.__class__ = C`, `del f.__name__`
                self.add(node, "L2-forbidden-attribute", f"attribute '{node.attr}' may be read, never set or deleted")
        elif _bad_attr(node.attr):
            self.add(node, "L2-forbidden-attribute", f"attribute '{_short(node.attr)}' is not allowed")
        self.generic_visit(node)

    def _check_binding(self, node: ast.AST, name: str | None) -> None:
        if name and ((name.startswith("_") and name != "_") or name in FORBIDDEN_NAMES):
            self.add(node, "L2-forbidden-name", f"name '{_short(name)}' may not be bound")

    # Annotations are dropped before compiling (never evaluated), but what they contain is
    # still checked like any expression.
    def visit_arg(self, node: ast.arg) -> None:
        self._check_binding(node, node.arg)
        self._visit_annotation(node.annotation)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.visit(node.target)
        self._visit_annotation(node.annotation)
        if node.value is not None:
            self.visit(node.value)

    def _visit_annotation(self, annotation: ast.expr | None) -> None:
        if annotation is not None:
            self.annotation_depth += 1
            try:
                self.visit(annotation)
            finally:
                self.annotation_depth -= 1

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg and node.arg.startswith("_"):
            self.add(node, "L2-forbidden-name", f"keyword '{_short(node.arg)}' is not allowed")
        self.generic_visit(node)

    # -- definitions ------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name not in _DUNDER_METHODS:
            self._check_binding(node, node.name)
        for child in (*node.decorator_list, node.args, *node.body):
            self.visit(child)
        self._visit_annotation(node.returns)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._check_binding(node, node.name)
        if node.keywords:
            self.add(node, "L2-class-keywords", "class keywords (metaclass=...) are not allowed")
        # `class T(object)` is `class T`: layer 3 drops the base, so the name is never loaded.
        for base in node.bases:
            if not is_object_base(base):
                self.visit(base)
        for child in (*node.decorator_list, *node.keywords, *node.body):
            self.visit(child)

    def visit_If(self, node: ast.If) -> None:
        """An if/elif chain, walked as a list (a 500-branch chain is not 500 nested calls)."""
        chain = [node]
        while len(chain[-1].orelse) == 1 and isinstance(chain[-1].orelse[0], ast.If):
            chain.append(chain[-1].orelse[0])
        for link in chain:
            self.visit(link.test)
            for stmt in link.body:
                self.visit(stmt)
        for stmt in chain[-1].orelse:
            self.visit(stmt)

    def _async(self, node: ast.AST) -> None:
        self.add(node, "L2-async", "async constructs are not allowed")
        self.generic_visit(node)

    visit_AsyncFunctionDef = _async  # noqa: N815 - NodeVisitor's naming
    visit_AsyncFor = _async  # noqa: N815
    visit_AsyncWith = _async  # noqa: N815
    visit_Await = _async  # noqa: N815

    def visit_comprehension(self, node: ast.comprehension) -> None:
        if node.is_async:
            self.add(node.target, "L2-async", "async comprehensions are not allowed")
        self.generic_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        """``case Point(x=0)`` reads attributes in C: their names are checked here."""
        if not isinstance(node.cls, ast.Name):
            self.add(node, "L2-match-class", "a class pattern names its class directly (from m import Cls)")
        for attr in node.kwd_attrs:
            if _bad_attr(attr):
                self.add(node, "L2-forbidden-attribute", f"attribute '{_short(attr)}' is not allowed")
        self.generic_visit(node)

    def visit_TryStar(self, node: ast.AST) -> None:
        self.add(node, "L2-except-star", "except* is not allowed")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        for n in node.names:
            self._check_binding(node, n)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        for n in node.names:
            self._check_binding(node, n)

    # Names bound by plain strings in the AST (not Name nodes): a class body must not be
    # able to bind a guard name (`_write_`, `__metaclass__`...) through any of them.
    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._check_binding(node, node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self._check_binding(node, node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self._check_binding(node, node.name)
        self.generic_visit(node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self._check_binding(node, node.rest)
        self.generic_visit(node)

    # -- imports ----------------------------------------------------------------------
    def _import(self, node: ast.AST, module: str) -> None:
        root = module.split(".", maxsplit=1)[0]
        if self.proposal:
            self.aliases.setdefault("__mod__" + root, root)
        if module not in self.allowed:
            self.add(node, "L2-import", f"import of '{_short(module)}' is not allowed in {self.mode} mode")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(node, alias.name)
            self._check_binding(node, alias.asname)
            self.aliases[alias.asname or alias.name.split(".")[0]] = alias.name
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if module == "__future__" and not node.level:
            for alias in node.names:
                if alias.name not in FUTURE_FEATURES or alias.asname:
                    self.add(
                        node,
                        "L2-import",
                        f"'from __future__ import {_short(alias.name)}' is not allowed;"
                        f" allowed: {', '.join(FUTURE_FEATURES)}",
                    )
            return
        if node.level:
            self.add(node, "L2-import", "relative imports are not allowed")
        else:
            self._import(node, module)
        allowed = self.allowed.get(module, ())
        for alias in node.names:
            self._check_binding(node, alias.asname or alias.name)
            if alias.name == "*":
                self.add(node, "L2-import", "star imports are not allowed")
            elif module in self.allowed and alias.name not in allowed:
                self.add(
                    node,
                    "L2-import",
                    f"'{module}.{_short(alias.name)}' is not exposed; {module} exposes: {', '.join(allowed)}",
                )
            self.aliases[alias.asname or alias.name] = f"{module}.{alias.name}"
        self.generic_visit(node)

    # -- proposal checks (the seed validator's job) -------------------------------------
    def _qualname(self, func: ast.expr) -> str:
        if isinstance(func, ast.Name):
            return self.aliases.get(func.id, func.id)
        if isinstance(func, ast.Attribute):
            return f"{self._qualname(func.value)}.{func.attr}"
        return ""

    def visit_Call(self, node: ast.Call) -> None:
        if self.proposal:
            self._proposal_call(node)
        self.generic_visit(node)

    def _proposal_call(self, node: ast.Call) -> None:
        qual = self._qualname(node.func)
        shell_call = qual in {"os.system", "os.popen"}
        if shell_call or (qual.startswith("subprocess.") and self._shell_true(node)):
            self.add(node, "P-shell", f"{qual} with a shell is not allowed")
        if qual in {"importlib.import_module", "__import__", "importlib.__import__"}:
            self.add(node, "P-dynamic-import", f"dynamic import via {qual} is not allowed")
        if isinstance(node.func, ast.Attribute) and node.func.attr in _PATH_WRITES:
            self.add(node, "P-path-write", f"filesystem write '.{node.func.attr}()' is not allowed")
        if qual == "open" or (isinstance(node.func, ast.Attribute) and node.func.attr == "open"):
            mode = node.args[1] if len(node.args) > 1 else None
            for kw in node.keywords:
                if kw.arg == "mode":
                    mode = kw.value
            if mode is not None and not (
                isinstance(mode, ast.Constant) and isinstance(mode.value, str) and not set(mode.value) & set("wax+")
            ):
                self.add(node, "P-open-write", "open() for writing is not allowed")

    def _shell_true(self, node: ast.Call) -> bool:
        for kw in node.keywords:
            if kw.arg == "shell":
                return not (isinstance(kw.value, ast.Constant) and not kw.value.value)
            if kw.arg is None:  # **mapping: refuse unless provably shell-free
                value = kw.value
                if isinstance(value, ast.Dict):
                    for key, val in zip(value.keys, value.values, strict=True):
                        if key is None:
                            return True
                        if isinstance(key, ast.Constant) and key.value == "shell":
                            return not (isinstance(val, ast.Constant) and not val.value)
                    continue
                return True
        return False


def _compile_check(tree: ast.Module) -> list[Violation]:
    """Layer 3 on the host: RestrictedPython's compile with the sandbox's policy, on the
    tree layer 2 checked (parsed once; the policy rewrites it, and nothing reads it after)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "prints, but never reads 'printed'" and the like
        try:
            result = compile_restricted_exec(tree, filename="<sandbox>", policy=SandboxTransformer)
        except SyntaxError as exc:  # found by the compiler itself (`nonlocal` at module level)
            message = f"SyntaxError: {exc.msg}"[:MAX_MESSAGE_CHARS]
            return [Violation(rule="L3-compile", message=message, line=exc.lineno or 0, col=exc.offset or 0)]
        except (RecursionError, MemoryError, ValueError, TypeError) as exc:
            return [Violation(rule="L3-compile", message=f"code could not be compiled ({type(exc).__name__})")]
    out: list[Violation] = []
    for error in result.errors:
        line = 0
        text = str(error)
        if text.startswith("Line "):
            head, _, rest = text.partition(":")
            digits = head[5:]
            line = int(digits) if digits.isdigit() else 0
            text = rest.strip()
        out.append(Violation(rule="L3-compile", message=text[:MAX_MESSAGE_CHARS], line=line))
    if not out and result.code is None:
        out.append(Violation(rule="L3-compile", message="code could not be compiled"))
    return out


def _allowed_text(mode: Mode, import_refused: bool) -> str:
    if import_refused:
        return f"Allowed imports in {mode} mode: {allowed_imports_text(mode)}"
    return f"What programs may use: {ALLOWED_DOC}"


def validate_code(code: str, *, mode: Mode = "high", proposal: bool = False) -> ValidationReport:
    """Layers 1-3: size caps, then the AST's violations (the first ``MAX_REPORTED`` with
    their line numbers, and how many in all), then the restricted compile."""
    # Layer 1: size checks before parsing (the size alone first).
    size = _size_checks(code)
    if size:
        return _report(size)
    try:
        tree = ast.parse(code, filename="<sandbox>", mode="exec")
    except SyntaxError as exc:
        return _report(
            [
                Violation(
                    rule="L1-syntax",
                    message=f"SyntaxError: {exc.msg}"[:MAX_MESSAGE_CHARS],
                    line=exc.lineno or 0,
                    col=exc.offset or 0,
                )
            ]
        )
    except (RecursionError, MemoryError, ValueError) as exc:
        return _report([Violation(rule="L1-syntax", message=f"code too complex to parse ({type(exc).__name__})")])
    too_big = _ast_size(tree)
    if too_big is not None:
        return _report([too_big])
    # Layer 2: AST validation.
    checker = _Checker(mode, proposal)
    checker.visit(tree)
    if checker.found:
        return _report(checker.found, "" if proposal else _allowed_text(mode, checker.import_refused))
    if proposal:
        return _report([])
    # Layer 3: the restricted compile, here too, so its refusals never wait for a run.
    return _report(_compile_check(tree), _allowed_text(mode, False))
