"""Layers 1-2: the validator, including the seed validator's proposal checks."""

from __future__ import annotations

import pytest
from terminai_apts.executor import validate_code


def rules(code: str, **kw: object) -> set[str]:
    return {v.rule for v in validate_code(code, **kw).violations}  # type: ignore[arg-type]


def test_plain_code_is_ok() -> None:
    report = validate_code("import math\nx = [i * i for i in range(3)]\nprint(math.pi, x)")
    assert report.ok and report.violations == ()


@pytest.mark.parametrize(
    "name",
    ["eval", "exec", "open", "compile", "globals", "locals", "__import__", "breakpoint", "object", "memoryview"],
)
def test_blocked_builtins(name: str) -> None:
    report = validate_code(f"{name}('1')")
    assert not report.ok
    assert report.violations[0].line == 1


@pytest.mark.parametrize("mode", ["standard", "high", "strict"])
@pytest.mark.parametrize("name", ["type", "hasattr", "setattr", "delattr", "staticmethod", "classmethod"])
def test_the_sandbox_own_builtins_pass(name: str, mode: str) -> None:
    """The sandbox holds its own versions of these (``sandbox_builtins``, ``guards``):
    validation and the compile admit the names in every mode; the runtime guard decides."""
    assert validate_code(f"x = {name}\nprint({name}.__name__)", mode=mode).ok  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["standard", "high", "strict"])
def test_class_and_name_are_read_only(mode: str) -> None:
    code = "class C:\n    pass\nc = C()\nprint(c.__class__.__name__, type(c).__name__, C.__name__)"
    assert validate_code(code, mode=mode).ok  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "code",
    [
        "c.__class__ = D",
        "del c.__class__",
        "f.__name__ = 'g'",
        "del f.__name__",
        "C.__name__ += 'x'",
        "c.__class__, y = D, 1",
        "for c.__class__ in [D]:\n    pass",
        "with a as c.__class__:\n    pass",
        "setattr(c, 'n', 1)\nc.__class__.__base__",
        "c.__qualname__",
        "c.__module__",
        "c.__dict__",
        "c.__class__.__dict__",
        "type(c).__subclasses__()",
        "c.__class__.mro()",
        "match c:\n    case C(__class__=k):\n        pass",
        "match c:\n    case C(__name__=n):\n        pass",
    ],
)
def test_special_writes_and_other_dunders_stay_refused(code: str) -> None:
    report = validate_code(code)
    assert not report.ok, code
    assert {v.rule for v in report.violations} == {"L2-forbidden-attribute"}, report.summary()


def test_the_admitted_reads_are_the_ones_the_guard_answers() -> None:
    from terminai_apts.executor import policy
    from terminai_apts.executor.python_layer import guards

    assert set(guards._SAFE_SPECIALS) == set(policy.SAFE_SPECIAL_READS) == {"__class__", "__name__"}
    assert not policy.SAFE_SPECIAL_READS & policy.FORBIDDEN_NAMES


def test_special_reads_compile_to_the_attribute_guard() -> None:
    """`x.__class__` and `f.__name__` become `_getattr_(x, '__class__')` (the guard answers
    a sandbox-safe value); nothing reads them directly."""
    import ast

    from terminai_apts.executor.python_layer.transform import SandboxTransformer

    tree = ast.parse("k = c.__class__.__name__\nn = type(e).__name__\nm = super().__init__")
    errors: list[str] = []
    out = ast.unparse(SandboxTransformer(errors, [], {}).visit(tree))
    assert errors == []
    assert "_getattr_(_getattr_(c, '__class__'), '__name__')" in out
    assert "_getattr_(_call_(type(e)), '__name__')" in out
    assert "_getattr_(_call_(super()), '__init__')" in out
    assert ".__class__" not in out and ".__name__" not in out and ".__init__" not in out


def test_every_violation_with_lines() -> None:
    report = validate_code("import os\nx = 1\ny = ().__class__.__base__\neval('1')")
    assert [v.line for v in report.violations] == [1, 3, 4]


def test_import_allowlist_by_mode() -> None:
    assert rules("import math") == set()
    assert "L2-import" in rules("import os")
    assert "L2-import" in rules("import subprocess")
    assert "L2-import" in rules("import math", mode="strict")
    assert rules("import textwrap", mode="high") == set()
    assert rules("import difflib", mode="standard") == set()
    assert "L2-import" in rules("import difflib", mode="high")
    assert "L2-import" in rules("from json import codecs")
    report = validate_code("import os")
    assert "not allowed" in report.violations[0].message
    assert "math" in report.summary() and "dataclasses" in report.summary()


def test_subclasses_escape_refused() -> None:
    assert "L2-forbidden-attribute" in rules("().__class__.__bases__[0].__subclasses__()")


@pytest.mark.parametrize(
    "code",
    [
        "def g():\n    yield 1\ng().gi_frame",
        "try:\n    1/0\nexcept Exception as e:\n    e.tb_frame",
        "f = lambda: 0\nf.co_code",
        "int.mro()",
        "def f(a: ().__class__.__base__): pass",
        "def f() -> __import__('os'): pass",
        "class C:\n    def __index__(self):\n        return 0",
        "class C:\n    def __getattr__(self, n):\n        return 0",
        "super().__class__.__base__",
        "super().__dict__",
        "x.__init__()",
        "async def f(): pass",
        "match 1:\n    case int(real=r): pass\nmatch 1:\n    case int(__class__=c): pass",
        "match x:\n    case m.Cls(): pass",
        "from __future__ import braces",
        "from __future__ import annotations as a",
        "try:\n    pass\nexcept* ValueError:\n    pass",
        "class A(metaclass=int): pass",
        "from . import x",
        "from math import *",
    ],
)
def test_refused_constructs(code: str) -> None:
    assert not validate_code(code).ok, code


@pytest.mark.parametrize(
    "code",
    [
        # ordinary code an agent writes (layer 3 and the runtime guards keep each safe)
        "'{:.2f}'.format(1.0)",
        "'{a}'.format_map({'a': 1})",
        "x: int = 1",
        "def f(a: 'str') -> int:\n    return 1",
        "class C:\n    def __init__(self):\n        super().__init__()\n    def __repr__(self):\n        return ''",
        "class C:\n    def __len__(self):\n        return 0\n    def __iter__(self):\n        return iter([])",
        "getattr(x, 'name', None)",
        "class C:\n    @property\n    def n(self):\n        return 1",
        "if x == 0:\n    y = 0\n" + "".join(f"elif x == {i}:\n    y = {i}\n" for i in range(1, 500)),
    ],
)
def test_ordinary_constructs_accepted(code: str) -> None:
    report = validate_code(code)
    assert report.ok, report.summary()


def test_size_checks_before_parsing() -> None:
    assert "L1-nesting" in rules("x = " + "(" * 500 + "1" + ")" * 500)
    assert "L1-source-size" in rules("x = 1\n" * 50_000)
    assert "L1-ast-nodes" in rules("x = [" + "1," * 60_000 + "]")
    assert "L1-syntax" in rules("def (")


@pytest.mark.parametrize(
    "code",
    [
        "import subprocess\nsubprocess.run('ls', shell=True)",
        "import subprocess as sp\nsp.Popen('ls', shell=1)",
        "from subprocess import run\nrun('ls', shell=True)",
        "from subprocess import check_output as co\nco('ls', shell=True)",
        "import subprocess\nsubprocess.call('ls', **{'shell': True})",
        "import subprocess\nkw = {'shell': True}\nsubprocess.call('ls', **kw)",
        "import subprocess\nflag = True\nsubprocess.run('ls', shell=flag)",
        "import os\nos.system('ls')",
    ],
)
def test_proposal_shell_true_every_form(code: str) -> None:
    assert "P-shell" in rules(code, proposal=True)


def test_proposal_shell_false_is_fine() -> None:
    assert "P-shell" not in rules("import subprocess\nsubprocess.run(['ls'], shell=False)", proposal=True)


def test_proposal_dynamic_import_and_writes() -> None:
    assert "P-dynamic-import" in rules("import importlib\nimportlib.import_module('os')", proposal=True)
    assert "P-dynamic-import" in rules("__import__('os')", proposal=True)
    assert "P-path-write" in rules("import pathlib\npathlib.Path('x').write_text('y')", proposal=True)
    assert "P-open-write" in rules("open('x', 'w')", proposal=True)
    assert "P-open-write" in rules("open('x', mode='a')", proposal=True)
    assert "P-open-write" not in rules("open('x')", proposal=True)
    assert "P-open-write" not in rules("open('x', 'r')", proposal=True)


@pytest.mark.parametrize(
    "code",
    [
        "nonlocal x",
        "match 1:\n    case x:\n        pass\n    case 2:\n        pass",
        "def f():\n    x = 1\n    global x",
        "return 5",
        "x__roles__ = 1",
        "def f():\n    nonlocal _y",
    ],
)
def test_compile_time_refusals_are_reports_not_exceptions(code: str) -> None:
    """What only the compiler (or RestrictedPython's policy) finds is a violation with a
    line, found on the host."""
    report = validate_code(code)
    assert not report.ok and report.violations[0].line >= 1, report.summary()
