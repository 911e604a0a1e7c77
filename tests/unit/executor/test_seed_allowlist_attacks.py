"""Seed 001's allowlist and the ordinary constructs (match, nonlocal, with, class-body
annotations), attacked: each module's known routes to host objects (``sys.modules``,
``__globals__``, ``__init_subclass__``, ``__reduce__``, attribute reads in C) end in a
refusal, in the hardened run; each sandbox version that closes a route has a companion
showing the route open on the real object.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import traceback
import types
from pathlib import Path
from typing import Any

import pytest
from RestrictedPython.compile import compile_restricted
from terminai_apts.executor import ExecutionResult, SandboxConfig, execute
from terminai_apts.executor.policy import Mode
from terminai_apts.executor.python_layer import module_proxies, output, transform
from terminai_apts.executor.python_layer import sandbox_globals as globals_
from terminai_apts.executor.python_layer.transform import SandboxTransformer
from terminai_apts.executor.python_layer.wrappers import SafeCallable, SandboxViolation

from tests.unit.executor import reachability
from tests.unit.executor.attack_generator import ENTRY_CHECKS_OFF

IMPORT_MODES: tuple[Mode, ...] = ("standard", "high")


def cfg(mode: Mode) -> SandboxConfig:
    return SandboxConfig(timeout_seconds=10, security_mode=mode)


def refused(result: ExecutionResult, layer: str, reason: str) -> bool:
    """Refused by ``layer`` (the result's ``refused_by``, or the error a wrapper raises) for
    ``reason``, never reaching the line that proves an escape: an incidental failure (a
    ``NameError``, a typo) does not count as a refusal."""
    got = result.refused_by or result.error_type
    return not result.success and "ESCAPED" not in result.stdout and got == layer and reason in (result.error or "")


# module -> (program, the layer that refuses it, a piece of its reason): never prints ESCAPED
ATTACKS: dict[str, list[tuple[str, str, str]]] = {
    "functools": [
        (
            "import functools\nprint('ESCAPED', functools.reduce(getattr, ['__class__', '__base__'], 1))",
            "L4-runtime-guard",
            "attribute '__base__' is not allowed",
        ),
        (
            "import functools\ng = functools.partial(getattr, len)\nprint('ESCAPED', g('__self__'))",
            "L4-runtime-guard",
            "attribute '__self__' is not allowed",
        ),
        (
            "import functools\nc = functools.lru_cache(maxsize=2)\nprint('ESCAPED', getattr(c, 'cache_parameters'))",
            "AttributeError",
            "'SafeCallable' object has no attribute 'cache_parameters'",
        ),
        (
            "import functools\nf = functools.lru_cache(len)\nprint('ESCAPED', f.cache_parameters())",
            "AttributeError",
            "'CachedFunction' object has no attribute 'cache_parameters'",
        ),
        (
            "import functools\nprint('ESCAPED', functools.lru_cache(maxsize=None)(getattr)(1, '__globals__'))",
            "L4-runtime-guard",
            "attribute '__globals__' is not allowed",
        ),
        (
            "import functools\nw = functools.wraps(len)\nprint('ESCAPED', w.func)",
            "AttributeError",
            "'SafeCallable' object has no attribute 'func'",
        ),
        (
            "import functools\nprint('ESCAPED', functools.update_wrapper)",
            "AttributeError",
            "module 'functools' exposes only: cache, cmp_to_key, lru_cach",
        ),
        (
            "from functools import partial\nclass P(partial):\n    pass\nprint('ESCAPED')",
            "L4-runtime-guard",
            "<class functools.partial> cannot be subclassed in the sandbo",
        ),
    ],
    "operator": [
        (
            "import operator\nprint('ESCAPED', operator.attrgetter('__class__.__base__')(1))",
            "L4-runtime-guard",
            "attribute '__base__' is not allowed",
        ),
        (
            "import operator\nprint('ESCAPED', operator.attrgetter('real.__class__.__subclasses__')(1)())",
            "L4-runtime-guard",
            "attribute '__subclasses__' is not allowed",
        ),
        (
            "import operator\nprint('ESCAPED', operator.methodcaller('__reduce_ex__', 2)(1))",
            "L4-runtime-guard",
            "attribute '__reduce_ex__' is not allowed",
        ),
        (
            "import operator\nimport fractions\n"
            "print('ESCAPED', operator.attrgetter('from_float')(fractions.Fraction(1)))",
            "L4-runtime-guard",
            "attribute 'from_float' is not allowed (it is a method bound",
        ),
        (
            "import operator\nprint('ESCAPED', operator.setitem)",
            "AttributeError",
            "module 'operator' exposes only: abs, add, and_, attrgetter,",
        ),
        (
            "import operator\nimport collections\n"
            "print('ESCAPED', operator.getitem({'k': collections.deque}, 'k')[int])",
            "L4-runtime-guard",
            "item is not allowed (it is a GenericAlias)",
        ),
    ],
    "string": [
        (
            "import string\nprint('ESCAPED', string.Formatter().format('{0.__class__}', 1))",
            "AttributeError",
            "module 'string' exposes only: Template, ascii_letters, ascii",
        ),
        (
            "import string\nprint('ESCAPED', getattr(string, 'Formatter'))",
            "AttributeError",
            "module 'string' exposes only: Template, ascii_letters, ascii",
        ),
        (
            "import string\nprint('ESCAPED', string.Template.pattern)",
            "AttributeError",
            "'string.Template' exposes only:",
        ),
        (
            "import string\nclass T(string.Template):\n    pass\nprint('ESCAPED')",
            "L4-runtime-guard",
            "<class string.Template> cannot be subclassed in the sandbox;",
        ),
    ],
    "typing": [
        (
            "import typing\nprint('ESCAPED', typing.get_type_hints)",
            "AttributeError",
            "module 'typing' exposes only: Any, Callable, ClassVar, Count",
        ),
        (
            "import typing\nprint('ESCAPED', typing.List.copy_with)",
            "AttributeError",
            "'TypingMarker' object has no attribute 'copy_with'",
        ),
        (
            "from typing import NamedTuple\nprint('ESCAPED', NamedTuple._build)",
            "L2-validate",
            "attribute '_build' is not allowed",
        ),
        (
            "from typing import NamedTuple\nclass P(NamedTuple, int):\n    x: int\nprint('ESCAPED')",
            "L4-runtime-guard",
            "base classes must be plain classes",
        ),
        (
            "from typing import NamedTuple\nclass P(NamedTuple):\n    x: int\n"
            "    def __init__(self):\n        pass\nprint('ESCAPED')",
            "AttributeError",
            "Cannot overwrite NamedTuple attribute __init__",
        ),
        (
            "from typing import TypedDict\nclass P(TypedDict, metaclass=type):\n    x: int\nprint('ESCAPED')",
            "L2-validate",
            "class keywords (metaclass=...) are not allowed",
        ),
        ("import typing\nprint('ESCAPED', typing.Any())", "TypeError", "typing.Any cannot be called in the sandbox"),
    ],
    "dataclasses": [
        (
            "import dataclasses\nprint('ESCAPED', dataclasses.dataclass(int))",
            "L4-runtime-guard",
            "@dataclass applies to the program's own classes only",
        ),
        (
            "import dataclasses, enum\nprint('ESCAPED', dataclasses.dataclass(enum.Enum))",
            "L4-runtime-guard",
            "@dataclass applies to the program's own classes only",
        ),
        (
            "import dataclasses\n@dataclasses.dataclass\nclass R:\n    a: int\n"
            "print('ESCAPED', getattr(R, '__init__'))",
            "L4-runtime-guard",
            "attribute '__init__' is not allowed",
        ),
        (
            "import dataclasses\n@dataclasses.dataclass\nclass R:\n    a: int\n"
            "print('ESCAPED', getattr(dataclasses.fields(R)[0].type.__class__, '__base__'))",
            "L4-runtime-guard",
            "attribute '__base__' is not allowed",
        ),
        (
            "import dataclasses\n@dataclasses.dataclass\nclass R:\n    a: int\n"
            "print('ESCAPED', type(dataclasses.fields(R)[0])('x'))",
            "TypeError",
            "'TypeView' object is not callable",
        ),
        (
            "import dataclasses\n@dataclasses.dataclass\nclass R:\n    a: int\n"
            "print('ESCAPED', dataclasses.fields(R)[0].__class__.__init__)",
            "L2-validate",
            "attribute '__init__' is not allowed",
        ),
        (
            "import dataclasses\nprint('ESCAPED', dataclasses.MISSING)",
            "AttributeError",
            "module 'dataclasses' exposes only: FrozenInstanceError, asdi",
        ),
        (
            "import dataclasses\n@dataclasses.dataclass\nclass R:\n    a: int\n"
            "print('ESCAPED', R.__dataclass_fields__)",
            "L2-validate",
            "attribute '__dataclass_fields__' is not allowed",
        ),
    ],
    "enum": [
        (
            "from enum import Enum\nclass C(Enum):\n    A = 1\n"
            "print('ESCAPED', getattr(getattr(C.A, '__class__'), '__mro__'))",
            "L4-runtime-guard",
            "attribute '__mro__' is not allowed",
        ),
        (
            "from enum import Enum\nclass C(Enum):\n    A = 1\nC.A.name = 'B'\nprint('ESCAPED')",
            "AttributeError",
            "enum members are read-only",
        ),
        (
            "from enum import Enum\nclass C(Enum):\n    def __init_subclass__(cls):\n        pass\nprint('ESCAPED')",
            "L2-validate",
            "name '__init_subclass__' may not be bound",
        ),
        ("from enum import Enum\nprint('ESCAPED', Enum.__new__)", "L2-validate", "attribute '__new__' is not allowed"),
        (
            "from enum import Enum\nclass C(Enum):\n    A = 1\nprint('ESCAPED', getattr(C, '_value2member_'))",
            "L4-runtime-guard",
            "attribute '_value2member_' is not allowed",
        ),
        (
            "from enum import Enum\nclass C(Enum):\n    A = 1\nprint('ESCAPED', C['_value2member_'])",
            "KeyError",
            "'_value2member_'",
        ),
        (
            "from enum import Enum\nclass C(Enum):\n    A = 1\nprint('ESCAPED', C['__init_subclass__'])",
            "KeyError",
            "'__init_subclass__'",
        ),
    ],
    "abc": [
        (
            "import abc\nprint('ESCAPED', abc.ABCMeta)",
            "AttributeError",
            "module 'abc' exposes only: ABC, abstractmethod",
        ),
        (
            "import abc\nclass B(abc.ABC, metaclass=abc.ABC):\n    pass\nprint('ESCAPED')",
            "L2-validate",
            "class keywords (metaclass=...) are not allowed",
        ),
    ],
    "copy": [
        (
            "import copy\nprint('ESCAPED', copy.copy(copy).deepcopy.__globals__)",
            "L2-validate",
            "attribute '__globals__' is not allowed",
        ),
        (
            "import copy, json\nprint('ESCAPED', copy.copy(json).dumps)",
            "TypeError",
            "'ModuleProxy' objects cannot be copied in the sandbox",
        ),
        (
            "import copy, functools\nf = copy.copy(functools.lru_cache(len))\nprint('ESCAPED', f)",
            "TypeError",
            "'CachedFunction' objects cannot be copied in the sandbox",
        ),
        (
            "import copy\nprint('ESCAPED', copy.deepcopy(len.__self__))",
            "L2-validate",
            "attribute '__self__' is not allowed",
        ),
        (
            "import copy\nprint('ESCAPED', copy.dispatch_table)",
            "AttributeError",
            "module 'copy' exposes only: Error, copy, deepcopy",
        ),
        (
            "import copy\nclass C:\n    def __reduce_ex__(self, p):\n        return (print, ('ESCAPED',))\n"
            "copy.copy(C())",
            "L2-validate",
            "name '__reduce_ex__' may not be bound",
        ),
        (
            "import copy\nclass C:\n    def __deepcopy__(self, memo):\n        return memo\n"
            "print('ESCAPED', copy.deepcopy(C()))",
            "L2-validate",
            "name '__deepcopy__' may not be bound",
        ),
    ],
    "pprint": [
        (
            "import pprint\nimport io\npprint.pprint({'a': 1}, stream=io.StringIO())\nprint('ESCAPED')",
            "L4-runtime-guard",
            "pprint(stream=...) is not allowed; it prints to the output",
        ),
        (
            "import pprint\nprint('ESCAPED', pprint.PrettyPrinter)",
            "AttributeError",
            "module 'pprint' exposes only: pformat, pp, pprint",
        ),
        (
            "import pprint\nprint('ESCAPED', pprint.pformat.__wrapped__)",
            "L2-validate",
            "attribute '__wrapped__' is not allowed",
        ),
    ],
    "logging": [
        (
            "import logging\nprint('ESCAPED', logging.getLogger('x').manager)",
            "AttributeError",
            "'Logger' object has no attribute 'manager'",
        ),
        (
            "import logging\nprint('ESCAPED', logging.root)",
            "AttributeError",
            "module 'logging' exposes only: CRITICAL, DEBUG, ERROR, INFO,",
        ),
        (
            "import logging\nprint('ESCAPED', logging.getLogger('x').handlers)",
            "AttributeError",
            "'Logger' object has no attribute 'handlers'",
        ),
        (
            "import logging\nlog = logging.getLogger('x')\nlog.name = 'y'\nprint('ESCAPED')",
            "L4-runtime-guard",
            "cannot modify objects of type 'Logger'",
        ),
    ],
    "warnings": [
        (
            "import warnings\nprint('ESCAPED', warnings.showwarning)",
            "AttributeError",
            "module 'warnings' exposes only: DeprecationWarning, RuntimeW",
        ),
        (
            "import warnings\nprint('ESCAPED', warnings.catch_warnings().saved)",
            "AttributeError",
            "'_CatchWarnings' object has no attribute 'saved'",
        ),
    ],
    "io": [
        (
            "import io\nprint('ESCAPED', io.BytesIO(b'x').getbuffer())",
            "L4-runtime-guard",
            "BytesIO.getbuffer is not allowed; use getvalue()",
        ),
        ("import io\nprint('ESCAPED', io.open)", "AttributeError", "module 'io' exposes only: BytesIO, StringIO"),
        (
            "from io import FileIO\nprint('ESCAPED')",
            "L2-validate",
            "'io.FileIO' is not exposed; io exposes: StringIO, BytesIO [L",
        ),
        (
            "import io\nprint('ESCAPED', io.StringIO().buffer)",
            "AttributeError",
            "'_io.StringIO' object has no attribute 'buffer'",
        ),
        (
            "import io\nclass B(io.BytesIO):\n    pass\nprint('ESCAPED', B().getbuffer())",
            "L4-runtime-guard",
            "<class io.BytesIO> cannot be subclassed in the sandbox; wrap",
        ),
    ],
    "csv": [
        (
            "import csv\nprint('ESCAPED', csv.field_size_limit(1))",
            "AttributeError",
            "module 'csv' exposes only: DictReader, DictWriter, Error, QU",
        ),
        (
            "import csv\nprint('ESCAPED', csv.register_dialect)",
            "AttributeError",
            "module 'csv' exposes only: DictReader, DictWriter, Error, QU",
        ),
        (
            "import csv\nclass W(csv.DictWriter):\n    pass\nprint('ESCAPED')",
            "L4-runtime-guard",
            "<class csv.DictWriter> cannot be subclassed in the sandbox;",
        ),
    ],
    "json": [
        # issue 23.3: the encoder class got the proxy's own `default=` function
        (
            "import json\nclass Enc:\n    def __init__(self, **kw):\n        self.kw = kw\n"
            "    def encode(self, o):\n        d = self.kw['default']\n"
            "        print('ESCAPED', getattr(d, 'func'))\n        return ''\njson.dumps(1, cls=Enc)",
            "AttributeError",
            "'JsonDefault' object has no attribute 'func'",
        ),
        (
            "import json\nclass Enc:\n    def __init__(self, **kw):\n        self.kw = kw\n"
            "    def encode(self, o):\n        return self.kw['default'](getattr)\n"
            "json.dumps(1, cls=Enc)\nprint('ESCAPED')",
            "TypeError",
            "Object of type SandboxGetattr is not JSON serializable",
        ),
    ],
    "hashlib": [
        (
            "import hashlib\nprint('ESCAPED', hashlib.new)",
            "AttributeError",
            "module 'hashlib' exposes only: blake2b, md5, sha1, sha256, s",
        ),
        # the hash object's class is a stand-in: a name, nothing to call or read
        (
            "import hashlib\nprint('ESCAPED', hashlib.sha256(b'x').__class__.copy)",
            "AttributeError",
            "'TypeView' object has no attribute 'copy'",
        ),
        (
            "import hashlib\nprint('ESCAPED', type(hashlib.sha256(b'x'))(b'y'))",
            "TypeError",
            "'TypeView' object is not callable",
        ),
        (
            "import hashlib\nprint('ESCAPED', getattr(type(hashlib.sha256(b'x')), '__subclasses__'))",
            "L4-runtime-guard",
            "attribute '__subclasses__' is not allowed",
        ),
    ],
    "time": [
        (
            "import time\nprint('ESCAPED', time.get_clock_info)",
            "AttributeError",
            "module 'time' exposes only: gmtime, localtime, monotonic, pe",
        )
    ],
    "calendar": [
        (
            "import calendar\nprint('ESCAPED', calendar.month_name.__class__('%B'))",
            "TypeError",
            "'TypeView' object is not callable",
        ),
        (
            "import calendar\nprint('ESCAPED', type(calendar.month_name).__getitem__)",
            "L2-validate",
            "attribute '__getitem__' is not allowed",
        ),
        (
            "import calendar\nprint('ESCAPED', calendar.month_name.__class__.__dict__)",
            "L2-validate",
            "attribute '__dict__' is not allowed",
        ),
    ],
}


@pytest.mark.parametrize("mode", IMPORT_MODES)
@pytest.mark.parametrize("module", sorted(ATTACKS))
def test_each_module_resists_its_known_routes(module: str, mode: Mode) -> None:
    for code, layer, reason in ATTACKS[module]:
        result = execute(code, cfg(mode))
        assert refused(result, layer, reason), (
            f"{mode}/{module}: not refused by {layer} ({reason}):\n{code}\n-> {result.refused_by} {result.error!r}"
        )


# -- companions: the route each sandbox version closes is open on the real object ---------


def _globals() -> tuple[dict[str, Any], output.OutputBuffer]:
    buffer = output.OutputBuffer(100_000)
    return globals_.build_globals("high", module_proxies.build_proxies("high"), buffer, {}), buffer


def _run(code: str, glb: dict[str, Any]) -> dict[str, Any]:
    scope = dict(glb)
    exec(compile_restricted(code, filename="<sandbox>", mode="exec", policy=SandboxTransformer), scope)
    return scope


def _proxy_with(module: str, name: str, value: object) -> module_proxies.ModuleProxy:
    """A proxy as it would be without the sandbox version (raw object, unwrapped)."""
    proxy = object.__new__(module_proxies.ModuleProxy)
    object.__setattr__(proxy, "_name", module)
    object.__setattr__(proxy, "_attrs", {name: value})
    return proxy


_ENCODER_SPY = (
    "import json\nseen = []\nclass Enc:\n    def __init__(self, default=None, **kw):\n        seen.append(default)\n"
    "    def encode(self, o):\n        return ''\njson.dumps([1], cls=Enc)\n"
)


def test_json_encoder_class_gets_no_host_function() -> None:
    """Issue 23.3: what a program's encoder class receives as ``default=`` is a sealed
    object, not a function of the proxy's module."""
    glb, _ = _globals()
    seen = _run(_ENCODER_SPY, glb)["seen"]
    assert len(seen) == 1 and reachability.classify(seen[0]) is None
    assert not isinstance(seen[0], types.FunctionType)
    assert reachability.walk({"default": seen[0]}).offenders == []


def test_json_encoder_companion_the_old_default_was_a_host_function() -> None:
    """The proxy as it was: ``dumps`` injected ``default=<a function of module_proxies>``
    and the program's class received it (with ``__globals__`` behind it)."""

    def plain_default(value: object) -> object:
        raise TypeError

    def old_dumps(obj: object, **kwargs: object) -> str:
        kwargs.setdefault("default", plain_default)
        return json.dumps(obj, **kwargs)  # type: ignore[arg-type]

    glb, _ = _globals()
    glb["__builtins__"] = dict(glb["__builtins__"])
    old = _proxy_with("json", "dumps", SafeCallable(old_dumps, "json.dumps"))
    real_import = glb["__builtins__"]["__import__"]
    glb["__builtins__"]["__import__"] = lambda name, *a: old if name == "json" else real_import(name, *a)
    glb.update(ENTRY_CHECKS_OFF)  # the parameter check at the class's entry would refuse it too
    seen = _run(_ENCODER_SPY, glb)["seen"]
    assert reachability.classify(seen[0]) == "python function"
    assert "json" in seen[0].__globals__  # the module's globals: the route to everything


def test_json_default_still_writes_records_and_the_programs_own_default() -> None:
    glb, buffer = _globals()
    _run(
        "import json\nclass P:\n    pass\nprint(json.dumps({'p': P()}, default=lambda o: 'P'))\n"
        "print(json.dumps([1], indent=1, sort_keys=True))",
        glb,
    )
    assert buffer.text() == '{"p": "P"}\n[\n 1\n]\n'


@pytest.mark.parametrize(
    ("name", "attack"),
    [
        ("attrgetter", "from operator import attrgetter\nresult = attrgetter('__class__.__base__')(1)"),
        ("methodcaller", "from operator import methodcaller\nresult = methodcaller('__reduce_ex__', 2)(1)"),
    ],
)
def test_operator_companion_real_getters_read_past_the_guard(name: str, attack: str) -> None:
    import operator

    glb, _ = _globals()
    refused = {"attrgetter": "__base__", "methodcaller": "__reduce_ex__"}[name]
    with pytest.raises(SandboxViolation, match=rf"^attribute '{refused}' is not allowed$"):  # the L4 guard
        _run(attack, glb)
    # the real getter, with nothing but itself between the program and the object
    scope = {"__builtins__": {"__import__": lambda *a, **k: _proxy_with("operator", name, getattr(operator, name))}}
    exec(compile(attack, "<sandbox>", "exec"), scope)
    leaked = scope["result"]
    assert reachability.classify(leaked if name == "attrgetter" else leaked[0]) is not None


def test_functools_companion_real_lru_cache_returns_a_closure() -> None:
    import functools

    glb, _ = _globals()
    code = "from functools import lru_cache\nresult = lru_cache(maxsize=2)"
    assert reachability.classify(_run(code, glb)["result"]) is None
    scope = {"__builtins__": {"__import__": lambda *a, **k: _proxy_with("functools", "lru_cache", functools.lru_cache)}}
    exec(compile(code, "<sandbox>", "exec"), scope)
    assert reachability.classify(scope["result"]) == "python function"


def test_bytesio_companion_real_getbuffer_is_a_memoryview() -> None:
    import io

    assert isinstance(io.BytesIO(b"x").getbuffer(), memoryview)
    glb, _ = _globals()
    with pytest.raises(SandboxViolation, match=r"^BytesIO\.getbuffer is not allowed; use getvalue\(\)$"):
        _run("import io\nresult = io.BytesIO(b'x').getbuffer()", glb)


_COPY_SCRIPT = """
import copy, json, sys
from terminai_apts.executor import policy
from terminai_apts.executor.python_layer import api_object
from terminai_apts.memory.api import open_memory
from tests.unit.executor import reachability as r
db = sys.argv[1]
glb = r.sandbox_globals("high", {"thermal": api_object.wrap_api(policy.thermal_spec(db), open_memory(db))})
roots = r.namespace_roots(glb, "high")
roots.update(r.sample_roots(glb, "high"))
report = r.walk(roots, exempt=r.INTERNAL_NAMES)
offenders, copied = [], 0
for path, obj in list(report.objects.items()):
    if path.split(".", 1)[0].split("[", 1)[0] in r.INTERNAL_NAMES:
        continue
    for how in (copy.copy, copy.deepcopy):
        try:
            result = how(obj)
        except BaseException:
            continue
        copied += 1
        label = f"{how.__name__}({path})"
        kind = r.classify(result)
        if kind is not None:
            offenders.append(f"{label}: {kind}")
            continue
        for name, value in r._attributes(result):
            kind = r.classify(value)
            if kind is not None:
                offenders.append(f"{label}.{name}: {kind}")
print(json.dumps({"copied": copied, "offenders": offenders[:20]}))
"""


def test_copying_anything_reachable_reaches_nothing_new(tmp_path: Path) -> None:
    """``copy``/``deepcopy`` run the reduce protocol in host code: a copy of every object
    the walk reaches (wrappers, proxies, records, the new modules' objects) is walked in
    turn and holds nothing forbidden (in a throwaway process: copies run arbitrary
    ``__reduce_ex__`` of the standard library)."""
    from terminai_apts.memory import store

    from tests.unit.memory.conftest import make_records

    db = tmp_path / "mem.db"
    store.build(db, make_records())
    done = subprocess.run(
        [sys.executable, "-c", _COPY_SCRIPT, str(db)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["offenders"] == []
    assert result["copied"] > 1_000


# -- constructs ------------------------------------------------------------------------------

CONSTRUCTS = (
    "from __future__ import annotations\n"
    "def counter():\n    n = 0\n    def inc():\n        nonlocal n\n        n += 1\n        return n\n    return inc\n"
    "c = counter()\nc()\n"
    "class Span:\n    def __init__(self, label):\n        self.label = label\n"
    "    def __enter__(self):\n        print('open', self.label)\n        return self\n"
    "    def __exit__(self, exc_type, exc, tb):\n"
    "        print('close', exc_type is KeyError, tb)\n        return True\n"
    "with Span('s') as s:\n    {}['missing']\n"
    "def kind(v):\n    match v:\n"
    "        case {'type': 'memory', 'id': ident}:\n            return f'memory {ident}'\n"
    "        case [first, *rest]:\n            return f'list {first} +{len(rest)}'\n"
    "        case str() | bool():\n            return 'text'\n"
    "        case int(x) if x > 10:\n            return 'big'\n"
    "        case _:\n            return 'other'\n"
    "print(c(), kind({'type': 'memory', 'id': 'm1'}), kind([1, 2, 3]), kind('x'), kind(11), kind(1.5))\n"
)


@pytest.mark.parametrize("mode", ["standard", "high", "strict"])
def test_ordinary_constructs_run_in_every_mode(mode: Mode) -> None:
    result = execute(CONSTRUCTS, cfg(mode))
    assert result.success, result.error
    assert result.stdout == "open s\nclose True None\n2 memory m1 list 1 +2 text big other\n"


def test_exit_receives_no_traceback_in_any_form() -> None:
    glb, buffer = _globals()
    _run(
        "class A:\n    def __enter__(self):\n        return self\n    def __exit__(self, *args):\n"
        "        print(len(args), args[2])\n        return True\n"
        "class B:\n    def __enter__(self):\n        return self\n    def __exit__(self, t, *rest):\n"
        "        print(len(rest), rest[1])\n        return True\n"
        "with A():\n    1 / 0\nwith B():\n    1 / 0\nwith A():\n    pass\n",
        glb,
    )
    assert buffer.text() == "3 None\n2 None\n3 None\n"


def test_exit_scrub_cannot_be_undone_by_shadowing_builtins() -> None:
    """The scrub is plain syntax on the interpreter's own tuple (``BUILD_SLICE``, no name
    lookup): rebinding ``slice``, ``len`` or ``tuple`` changes nothing."""
    result = execute(
        "real = slice\ndef slice(*a):\n    return real(None, None, None)\nlen = lambda x: 0\ntuple = list\n"
        "class A:\n    def __enter__(self):\n        return self\n    def __exit__(self, *args):\n"
        "        print('ESCAPED' if args[2] is not None or args[3:] else 'ok')\n        return True\n"
        "with A():\n    1 / 0\n",
        cfg("high"),
    )
    assert result.success and result.stdout == "ok\n", (result.stdout, result.error)


def test_exit_companion_without_the_scrub_a_traceback_arrives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transform, "_scrub_exit_traceback", lambda node: None)
    glb, _ = _globals()
    glb.update(ENTRY_CHECKS_OFF)  # the parameter check at `__exit__`'s entry would refuse it too
    scope = _run(
        "got = []\nclass A:\n    def __enter__(self):\n        return self\n"
        "    def __exit__(self, t, e, tb):\n        got.append(tb)\n        return True\nwith A():\n    1 / 0\n",
        glb,
    )
    assert isinstance(scope["got"][0], types.TracebackType)
    assert reachability.classify(scope["got"][0]) == "traceback"
    traceback.clear_frames(scope["got"][0])


_VALUE_PATTERN = (
    "from fractions import Fraction\nf = Fraction(1, 2)\ngot = []\n"
    "class Grab:\n    def __eq__(self, other):\n        got.append(other)\n        return True\n"
    "match Grab():\n    case f.from_float:\n        pass\n"
)


def test_match_value_patterns_read_through_the_guard() -> None:
    """``case obj.attr:`` reads the attribute in C and hands it to the subject's
    ``__eq__``: the rewrite reads it through the attribute guard instead."""
    glb, _ = _globals()
    with pytest.raises(SandboxViolation, match=r"^attribute 'from_float' is not allowed \(it is a method bound"):
        _run(_VALUE_PATTERN, glb)


def test_match_value_pattern_companion_plain_compile_leaks_the_value() -> None:
    glb, _ = _globals()
    scope = dict(glb)
    exec(compile(_VALUE_PATTERN, "<sandbox>", "exec"), scope)  # no policy: the pattern as written
    leaked = scope["got"][0]
    assert reachability.classify(leaked) == "python method bound to a class or module"


_CLASS_PATTERN = (
    "from collections import Counter\nimport re\ngot = []\n"
    "match Counter('ab'):\n    case dict(most_common=m, fromkeys=f):\n        got.append(m)\n        got.append(f)\n"
    "match re.I:\n    case int(from_bytes=b):\n        got.append(b)\n"
)


def test_match_class_pattern_keywords_read_through_the_guard() -> None:
    """``case dict(most_common=m)`` on a ``Counter`` read a host method (and a classmethod
    bound to the class) in C: the rewrite reads each keyword through the attribute guard,
    which refuses or wraps what it must."""
    glb, _ = _globals()
    try:
        got = _run(_CLASS_PATTERN, glb)["got"]
    except SandboxViolation as exc:  # the L4 attribute guard, never an incidental error
        assert " is not allowed" in str(exc) and str(exc).startswith("attribute '")
    else:
        assert got and all(reachability.classify(v) is None for v in got), got


def test_match_class_pattern_companion_plain_compile_leaks_host_methods() -> None:
    glb, _ = _globals()
    scope = dict(glb)
    exec(compile(_CLASS_PATTERN, "<sandbox>", "exec"), scope)
    kinds = {reachability.classify(v) for v in scope["got"]}
    assert "python method bound to a class or module" in kinds


def test_match_class_patterns_keep_their_meaning() -> None:
    glb, buffer = _globals()
    _run(
        "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\n    y: int = 0\n"
        "def where(p):\n    match p:\n        case P(x=0, y=0):\n            return 'origin'\n"
        "        case P(x=0, y=y):\n            return f'on y at {y}'\n"
        "        case P(x, _):\n            return f'x={x}'\n"
        "        case int(n) | float(n):\n            return f'number {n}'\n"
        "        case _:\n            return 'other'\n"
        "print(where(P(0)), where(P(0, 5)), where(P(3, 4)), where(2), where('s'))\n",
        glb,
    )
    assert buffer.text() == "origin on y at 5 x=3 number 2 other\n"


def test_match_class_pattern_attribute_names_are_checked() -> None:
    from terminai_apts.executor import validate_code

    for code in (
        "match 1:\n    case int(__class__=c):\n        pass",
        "try:\n    x\nexcept AttributeError as e:\n    match e:\n        case AttributeError(obj=o):\n            pass",
    ):
        assert not validate_code(code).ok, code


def test_compile_refusals_happen_before_any_run() -> None:
    """A refusal of the restricted compile (layer 3) no longer waits for a sandbox start:
    no run was opened (no isolation report), and the message says where the allowed
    constructs are listed."""
    result = execute("x__roles__ = 1\nprint(x__roles__)", cfg("high"))
    assert not result.success and result.refused_by == "L3-validate", result
    assert result.isolation == ()
    assert "__roles__" in (result.error or "") and "AGENT_API.md" in (result.error or "")


def test_refused_imports_name_the_allowlist_once() -> None:
    result = execute("import os\nimport sys\nimport subprocess", cfg("high"))
    assert not result.success and result.isolation == ()
    error = result.error or ""
    assert error.count("dataclasses") == 1 and "import of 'os'" in error and "import of 'subprocess'" in error


def test_dataclass_generated_methods_never_cross_raw() -> None:
    """``@dataclass`` writes ``__init__``/``__repr__``/``__eq__`` with ``exec`` (functions of
    no sandbox source, whose globals hold the real builtins): ``super().__init__`` of a
    dataclass is refused, or crosses only wrapped."""
    glb, _ = _globals()
    code = (
        "import dataclasses\n@dataclasses.dataclass\nclass R:\n    a: int = 0\ngot = []\n"
        "class S(R):\n    def __init__(self):\n        got.append(super().__init__)\nS()\n"
    )
    try:
        got = _run(code, glb)["got"]
    except SandboxViolation as exc:  # the L4 attribute guard, never an incidental error
        assert " is not allowed" in str(exc) and str(exc).startswith("attribute '")
    else:
        assert reachability.classify(got[0]) is None and not isinstance(got[0], types.FunctionType)


def test_deepcopy_keeps_enum_members_and_seals_copies() -> None:
    from terminai_apts.executor.python_layer import stdlib_shims

    glb, _ = _globals()
    scope = _run("from enum import Enum\nclass C(Enum):\n    A = 1\nm = C.A", glb)
    assert copy.deepcopy(scope["m"]) is scope["m"]
    cached = stdlib_shims.CachedFunction(len, 2, False)
    with pytest.raises(TypeError, match="'CachedFunction' objects cannot be copied in the sandbox"):
        copy.copy(cached)
