"""Reachability walk: every object sandboxed code can obtain through the names the runtime
guards allow, and the ones among them it must never hold.

The attacker model is the one the Python layer defends: user code reaches objects through
the restricted builtins, the module proxies, the injected API and what RestrictedPython's
generated code passes around; from any object it may read every attribute that
``guards.guarded_getattr`` returns, every item of a container, and call what it holds.
Attribute names starting with ``_`` are refused both by validation and by the guard, so
dunder links (``__globals__``, ``__self__``, ``__class__``) are never followed: the walk
proves that no *allowed* path leads to an object from which the Python layer would
depend on those refusals alone.

An offender is a reachable
  * class outside ``ALLOWED_BUILTIN_TYPES`` and ``policy.SAFE_MODULE_CLASSES`` (C types)
    that is neither an exception class nor a class the sandbox made itself (``type``,
    ``object``, ``super``, ``property``... never): a class hands out
    unbound methods that accept any ``self`` (``Counter.copy(int)`` returned ``type``),
    and subclassing it picks its metaclass;
  * Python function not compiled from sandbox source (it carries ``__globals__``);
  * frame, code object, traceback, module or ``types.GenericAlias``;
  * descriptor (property, classmethod, staticmethod, member/getset descriptors, ...);
  * bound method whose ``__self__`` is a class or module (a Python method), a Python
    method whose function was not compiled from sandbox source (``Record.to_dict``: the
    guard hands it out wrapped), or a builtin method bound to a class that is itself an
    offender.
The rules are ``wrappers.refusal`` restated independently here, so a change that weakens
the guard does not weaken the walk.

Calls are not enumerated blindly: ``SAMPLES`` are small restricted programs (run with the
real ``compile_restricted`` and the same globals) whose ``result`` is walked, covering the
documented constructors and results of every allowed module and of ``thermal``.
"""

from __future__ import annotations

import builtins
import dataclasses
import decimal
import functools
import importlib
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from RestrictedPython.compile import compile_restricted
from terminai_apts.executor.policy import (
    CLASS_HELPERS,
    FORBIDDEN_ATTR_PREFIXES,
    FORBIDDEN_ATTRS,
    SAFE_MODULE_CLASSES,
    THERMAL_METHODS,
    Mode,
    modules_for,
)
from terminai_apts.executor.python_layer import guards, module_proxies, output, wrappers
from terminai_apts.executor.python_layer import sandbox_globals as globals_
from terminai_apts.executor.python_layer.sandbox_builtins import (
    SandboxClassMethod,
    SandboxProperty,
    SandboxStaticMethod,
    TypeView,
)
from terminai_apts.executor.python_layer.transform import SandboxTransformer
from terminai_apts.memory import records

# Names in the globals and builtins user code cannot spell (validation and
# compile_restricted refuse every name starting with "_"); generated code calls them.
INTERNAL_NAMES = frozenset({*globals_.GUARD_NAMES, "__build_class__", "__import__", "__metaclass__", "__name__"})
# Internal names whose contents are not walked: `_kinds_` is the set of classes the compiled
# entry test reads (`_type_(a) in _kinds_`, ``executor.python_layer.entry_guard``); only generated code
# names it and nothing hands it (or an item of it) out, so its items are classes by design.
UNWALKED_NAMES = frozenset({"_kinds_"})

_C_ROUTINES = (
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.ClassMethodDescriptorType,
)
_CONTAINERS = (list, tuple, set, frozenset)
MAX_ITEMS = 40
MAX_DEPTH = 8


@dataclass(frozen=True, slots=True)
class Offender:
    path: str
    kind: str
    value: str

    def __str__(self) -> str:
        return f"{self.path}: {self.kind} ({self.value})"


# The walk's own allowlist, kept apart from the implementation's (``safe_classes.SAFE_CLASSES``
# is derived from the builtins it installs, so adding a builtin would otherwise allow
# itself). Builtin data types and iterator types are C types whose methods check the
# type of ``self``; the module classes are the reviewed list in ``policy``.
ALLOWED_BUILTIN_TYPES: frozenset[type] = frozenset(
    {bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset,
     range, slice, enumerate, map, filter, zip, reversed}
)  # fmt: skip
# Never acceptable, whatever a list says: each one creates classes, reaches every class,
# or is a descriptor factory.
NEVER_TYPES: frozenset[type] = frozenset({type, object, super, property, classmethod, staticmethod, memoryview})


def allowed_classes() -> frozenset[type]:
    found = set(ALLOWED_BUILTIN_TYPES)
    for module_name, names in SAFE_MODULE_CLASSES.items():
        module = importlib.import_module(module_name)
        found.update(getattr(module, n) for n in names)
    return frozenset(found - NEVER_TYPES)


_ALLOWED_CLASSES = allowed_classes()


# `object`'s and `type`'s attribute protocol: applies to every object, wrappers included
_GENERIC_PROTOCOL = frozenset(
    {"__getattribute__", "__setattr__", "__delattr__", "__reduce__", "__reduce_ex__", "__getstate__", "__dir__"}
)
_C_SLOTS = (
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.ClassMethodDescriptorType,
)


def classify(value: object) -> str | None:
    """Why ``value`` must not be reachable, or None."""
    if isinstance(value, (types.ModuleType, types.FrameType, types.CodeType, types.TracebackType)):
        return type(value).__name__
    if isinstance(value, types.GenericAlias):
        return "generic alias"
    if isinstance(value, type):
        if value in NEVER_TYPES:
            return "class"
        if value in _ALLOWED_CLASSES or issubclass(value, BaseException):
            return None
        if type(value) is type and value.__dict__.get("__module__") == wrappers.SANDBOX_MODULE:
            return None
        return "class"
    if isinstance(value, types.FunctionType):
        return None if value.__code__.co_filename == "<sandbox>" else "python function"
    if isinstance(value, types.MethodType):
        func = value.__func__
        own = isinstance(func, types.FunctionType) and func.__code__.co_filename == "<sandbox>"
        if own and isinstance(value.__self__, type) and classify(value.__self__) is None:
            return None  # the program's classmethod, bound to a class it may hold anyway
        if isinstance(value.__self__, (type, types.ModuleType)):
            return "python method bound to a class or module"
        if not (isinstance(func, types.FunctionType) and func.__code__.co_filename == "<sandbox>"):
            return "python method of a host object (its function carries __globals__)"
        return None
    if isinstance(value, types.BuiltinFunctionType):
        owner = value.__self__
        if isinstance(owner, type) and classify(owner) is not None:
            return "method bound to an unlisted class"
        if value.__name__ in _GENERIC_PROTOCOL:
            return "generic attribute protocol"
        return None
    if isinstance(value, _C_SLOTS):
        if value.__name__ in _GENERIC_PROTOCOL:
            return "generic attribute protocol"  # `object.__setattr__` writes any slot
        owner = getattr(value, "__self__", None)
        objclass = value.__objclass__
        if isinstance(owner, type) and classify(owner) is not None:
            return "method bound to an unlisted class"
        if owner is None and classify(objclass) is not None:
            return "routine of an unlisted class"  # `type.__call__` builds any class
        return None
    if isinstance(value, (property, classmethod, staticmethod)):
        return "descriptor"
    if isinstance(value, (types.MemberDescriptorType, types.GetSetDescriptorType)):
        return "descriptor"
    if type(value) in (SandboxStaticMethod, SandboxClassMethod, TypeView):
        # staticmethod/classmethod: built only around functions compiled from the program's
        # source, read through a class they answer that function (or it bound to the
        # program's class), never themselves; a TypeView is a name, isinstance and
        # equality, with no public attribute and no way to call the class behind it.
        return None
    if type(value) is SandboxProperty:
        # The sandbox's own `property` (not the real descriptor type): it calls only
        # functions compiled from the program's source (checked when it is built), with
        # the instance it was read on; read on a class it raises instead of answering
        # itself; its only public attributes are getter/setter/deleter, which build another
        # one under the same check. It cannot read slots or apply C code to other objects.
        return None
    if type(value) is functools.partial:
        # Python 3.13 gave partial a __get__ that answers the partial itself (3.14: a method
        # of it, classified like any method); what it holds (func, args) is walked as well.
        return None
    if not isinstance(value, _C_ROUTINES) and hasattr(type(value), "__get__"):
        return "descriptor"
    return None


def _allowed_name(name: str) -> bool:
    return name not in FORBIDDEN_ATTRS and not name.startswith(FORBIDDEN_ATTR_PREFIXES)


# Attributes C types serve from their own __getattribute__ without listing them in dir().
_DYNAMIC_NAMES = ("traps", "flags")
_DYNAMIC_TYPES = (type(decimal.getcontext()),)


def vocabulary() -> frozenset[str]:
    """Names to try on objects that answer through ``__getattr__`` (``dir`` cannot list
    them): every name the policy exposes, the injected API's methods, record fields, and
    the public names of every builtin type."""
    names: set[str] = set(THERMAL_METHODS) | set(_DYNAMIC_NAMES)
    for mode in ("standard", "high", "strict"):
        for module, attrs in modules_for(mode).items():
            names.add(module)
            names.update(attrs)
    for helpers in CLASS_HELPERS.values():
        names.update(helpers)
    for record in (records.Memory, records.Hit, records.Results, records.Facet, records.Batch, records.Provenance):
        names.update(f.name for f in dataclasses.fields(record))
    for value in vars(builtins).values():
        if isinstance(value, type):
            names.update(dir(value))
    return frozenset(n for n in names if _allowed_name(n))


_VOCABULARY = vocabulary()


def _declared(obj: object) -> set[str]:
    """The names a wrapper serves from its private mapping (read here by the walker, which
    is not the attacker), so a missing ``__dir__`` cannot hide them."""
    found: set[str] = set()
    for slot in ("_attrs", "_methods", "_data", "_helpers"):
        try:
            mapping = object.__getattribute__(obj, slot)
        except (AttributeError, TypeError):
            continue
        if isinstance(mapping, Mapping):
            found.update(str(k) for k in mapping)
    return found


def _attributes(obj: object) -> Iterator[tuple[str, Any]]:
    # The default listing, not the object's own __dir__ (a wrapper must not be able to hide
    # a public attribute from the walk by listing fewer names).
    try:
        names = set(type.__dir__(obj) if isinstance(obj, type) else object.__dir__(obj))
    except Exception:
        names = set()
    names |= _declared(obj)
    kind = type(obj)
    if hasattr(kind, "__getattr__") or kind in _DYNAMIC_TYPES:
        names |= _VOCABULARY
    for name in sorted(names):
        if not _allowed_name(name):
            continue
        try:
            # `from module import name` reads a proxy without the attribute guard, so what a
            # proxy holds must be safe in itself; everything else goes through the guard.
            value = (
                getattr(obj, name) if isinstance(obj, module_proxies.ModuleProxy) else guards.guarded_getattr(obj, name)
            )
        except Exception:  # refused by the guard, or no such attribute
            continue
        yield name, value


def _items(obj: object) -> Iterator[tuple[str, Any]]:
    if isinstance(obj, dict):
        for i, (key, value) in enumerate(list(obj.items())[:MAX_ITEMS]):
            yield f"key{i}", key
            yield f"[{key!r}]", value
    elif isinstance(obj, _CONTAINERS):
        for i, value in enumerate(list(obj)[:MAX_ITEMS]):
            yield f"[{i}]", value


@dataclass
class WalkReport:
    offenders: list[Offender]
    visited: int
    paths: set[str]
    objects: dict[str, object]  # first path to each visited object


def walk(roots: dict[str, object], *, exempt: frozenset[str] = frozenset(), max_nodes: int = 200_000) -> WalkReport:
    """Breadth-first over attributes and items from ``roots``; ``exempt`` root names are
    not classified themselves (internal names user code cannot spell) but are walked."""
    offenders: list[Offender] = []
    seen: dict[int, object] = {}  # keeps every visited object alive so ids stay unique
    paths: set[str] = set()
    objects: dict[str, object] = {}
    queue: list[tuple[str, object, int]] = [(name, value, 0) for name, value in roots.items()]
    while queue:
        path, obj, depth = queue.pop(0)
        if id(obj) in seen:
            continue
        seen[id(obj)] = obj
        paths.add(path)
        objects[path] = obj
        if len(seen) > max_nodes:
            raise AssertionError(f"walk exceeded {max_nodes} objects; last path {path}")
        if path not in exempt:
            kind = classify(obj)
            if kind is not None:
                offenders.append(Offender(path, kind, repr(obj)[:120]))
                continue
        if depth >= MAX_DEPTH:
            continue
        for name, value in _attributes(obj):
            queue.append((f"{path}.{name}", value, depth + 1))
        for label, value in _items(obj):
            queue.append((f"{path}{label}", value, depth + 1))
    return WalkReport(offenders=offenders, visited=len(seen), paths=paths, objects=objects)


# ---- the sandbox namespace --------------------------------------------------------------


def sandbox_globals(mode: Mode, injected: dict[str, object] | None = None) -> dict[str, Any]:
    """The restricted globals exactly as the child builds them (minus the per-run RNG)."""
    proxies = module_proxies.build_proxies(mode)
    return globals_.build_globals(mode, proxies, output.OutputBuffer(100_000), injected or {})


def namespace_roots(glb: dict[str, Any], mode: Mode) -> dict[str, object]:
    """Builtins, globals (guards and injected objects) and, through ``__import__``, every
    module proxy of the mode."""
    roots: dict[str, object] = {}
    for name, value in glb["__builtins__"].items():
        roots[name] = value
    for name, value in glb.items():
        if name != "__builtins__":
            roots[name] = value
    importer = glb["__builtins__"]["__import__"]
    for module in sorted(modules_for(mode)):
        roots[f"import {module}"] = importer(module)
    printer = glb["_print_"](glb["_getattr_"])
    roots["_print_(_getattr_)"] = printer
    roots["printed"] = printer()
    return roots


# (modules or builtin names needed, restricted program setting `result`)
SAMPLES: dict[str, tuple[tuple[str, ...], str]] = {
    "builtin results": (
        ("iter", "bytearray", "frozenset", "complex", "slice", "Ellipsis", "divmod"),
        "result = [iter([1]), iter({1: 2}), enumerate([1]), map(abs, [1]), filter(None, [1]),"
        " zip([1], [2]), reversed([1, 2]), range(3), slice(1, 2), {1: 2}.items(), {1: 2}.keys(),"
        " 'ab'.split(), b'x', bytearray(b'x'), frozenset([1]), 1.5, 2 ** 70, complex(1, 2),"
        " sorted([2, 1]), divmod(7, 2), Ellipsis]",
    ),
    "strict builtin results": (
        (),
        "result = [enumerate([1]), map(abs, [1]), filter(None, [1]), zip([1], [2]), reversed([1, 2]),"
        " range(3), {1: 2}.items(), 'ab'.split(), 1.5, 2 ** 70, sorted([2, 1]), divmod(7, 2)]",
    ),
    "exception and generator": (
        (),
        "def gen():\n    yield 1\n"
        "try:\n    {}['k']\nexcept KeyError as exc:\n    caught = exc\n"
        "result = [caught, gen(), (x for x in [1]), ValueError('v')]",
    ),
    "types and views": (
        ("type", "staticmethod", "classmethod"),
        "class K:\n    @staticmethod\n    def s():\n        return 1\n"
        "    @classmethod\n    def c(cls):\n        return cls\n"
        "result = [type(1), type(K()), type(K), type(len), type(iter([])), type(print), K.s, K.c, K().c, K.c(),"
        " staticmethod(lambda: 1), classmethod(lambda c: c)]",
    ),
    "user class": (
        (),
        "class Box:\n    def __init__(self, v):\n        self.v = v\n    def get(self):\n        return self.v\n"
        "class Err(ValueError):\n    pass\n"
        "result = [Box, Box(1), Box(1).get, Err, Err('x')]",
    ),
    "collections": (
        ("collections",),
        "import collections\n"
        "P = collections.namedtuple('P', 'x y')\n"
        "result = [collections.Counter('aab'), collections.Counter('a').most_common(1),"
        " collections.defaultdict(list), collections.OrderedDict(a=1), collections.deque([1]),"
        " P, P(1, 2), collections.Counter()]",
    ),
    "decimal and fractions": (
        ("decimal", "fractions"),
        "import decimal, fractions\n"
        "result = [decimal.Decimal(1), decimal.Decimal('1.5').quantize(decimal.Decimal('0.1')),"
        " decimal.getcontext(), decimal.localcontext(), fractions.Fraction(1, 2),"
        " fractions.Fraction.from_float(0.5), fractions.Fraction(3, 4).limit_denominator(2)]",
    ),
    "datetime": (
        ("datetime",),
        "import datetime\n"
        "now = datetime.datetime.now()\n"
        "result = [now, now.date(), now.time(), datetime.timedelta(days=1), datetime.timezone.utc,"
        " datetime.datetime.strptime('2024-01-05', '%Y-%m-%d'), datetime.date(2024, 1, 5),"
        " datetime.datetime.now(datetime.timezone.utc).tzinfo]",
    ),
    "re": (
        ("re",),
        "import re\n"
        "p = re.compile('(a)(?P<n>b)?', re.I)\n"
        "result = [p, p.match('ab'), p.finditer('ab'), p.scanner('ab'), re.search('a', 'a'), re.split('a', 'bab'),"
        " re.sub('a', lambda m: m.group(0), 'a')]",
    ),
    "json and statistics": (
        ("json", "statistics"),
        "import json, statistics\n"
        "try:\n    json.loads('{bad')\nexcept json.JSONDecodeError as exc:\n    bad = exc\n"
        "try:\n    statistics.mean([])\nexcept statistics.StatisticsError as exc:\n    empty = exc\n"
        "result = [json.loads('{\"a\": [1, 2.5, null]}'), bad, empty, statistics.quantiles([1, 2, 3, 4])]",
    ),
    "itertools heapq bisect random math": (
        ("itertools", "heapq", "bisect", "random", "math"),
        "import itertools, heapq, bisect, random, math\n"
        "result = [itertools.chain([1], [2]), itertools.groupby('aab'), itertools.tee([1]),"
        " itertools.count(), heapq.merge([1], [2]), bisect.bisect([1], 1), random.random(), math.pi,"
        " itertools.chain.from_iterable([[1]]), list(itertools.groupby('aab'))]",
    ),
    "standard-only modules": (
        ("difflib", "uuid", "hashlib", "textwrap", "base64", "zlib", "html", "calendar", "unicodedata"),
        "import difflib, uuid, hashlib, textwrap, base64, zlib, html, calendar, unicodedata\n"
        "sm = difflib.SequenceMatcher(None, 'abc', 'abd')\n"
        "result = [sm, sm.get_matching_blocks(), sm.get_opcodes(), list(difflib.ndiff(['a'], ['b'])),"
        " difflib.unified_diff(['a'], ['b']), uuid.uuid4(), uuid.uuid5(uuid.NAMESPACE_DNS, 'x'),"
        " uuid.UUID(int=1), hashlib.sha256(b'x'), hashlib.blake2b(b'x'), textwrap.wrap('a b'),"
        " base64.b64encode(b'x'), zlib.compress(b'x'), html.escape('<'), calendar.monthrange(2024, 1),"
        " unicodedata.name('a')]",
    ),
    "seed 001 allowlist": (
        (
            "functools",
            "operator",
            "string",
            "csv",
            "io",
            "dataclasses",
            "enum",
            "abc",
            "typing",
            "copy",
            "pprint",
            "logging",
            "warnings",
            "time",
            "calendar",
            "hashlib",
            "textwrap",
        ),
        "import functools, operator, string, csv, io, dataclasses, enum, abc, typing, copy, pprint, logging\n"
        "import warnings, time, calendar, hashlib, textwrap\n"
        "@functools.lru_cache(maxsize=8)\ndef sq(n):\n    return n * n\n"
        "@functools.cache\ndef cube(n):\n    return n ** 3\n"
        "def deco(fn):\n    @functools.wraps(fn)\n    def inner(*a):\n        return fn(*a)\n    return inner\n"
        "@dataclasses.dataclass(order=True)\nclass Row:\n    a: int\n"
        "    b: list = dataclasses.field(default_factory=list)\n"
        "class Color(enum.Enum):\n    RED = 1\n    BLUE = enum.auto()\n"
        "class Level(enum.IntEnum):\n    LOW = 1\n"
        "class Base(abc.ABC):\n    @abc.abstractmethod\n    def run(self):\n        return 1\n"
        "out = io.StringIO()\nw = csv.writer(out)\nw.writerow([1, 'a'])\n"
        "dw = csv.DictWriter(out, fieldnames=['x'])\ndw.writeheader()\n"
        "rd = csv.DictReader(io.StringIO('x,y\\n1,2\\n'))\nfirst = next(rd)\n"
        "bio = io.BytesIO(b'abc')\nrow = Row(1)\n"
        "result = [sq, sq(3), sq.cache_info(), cube, deco(sq), functools.partial(max, 1),"
        " functools.cmp_to_key(lambda a, b: 0),"
        " functools.cmp_to_key(lambda a, b: 0)(1), functools.reduce(operator.add, [1, 2]), operator.attrgetter('real'),"
        " operator.itemgetter(0), operator.methodcaller('upper'), string.Template('$a'),"
        " string.Template('$a').substitute(a=1), w, dw, rd, first, out, bio, bio.getvalue(), Row, row,"
        " dataclasses.fields(row), dataclasses.asdict(row), dataclasses.astuple(row), dataclasses.replace(row, a=2),"
        " dataclasses.field(default=1), Color, Color.RED, Color(2), Level.LOW, Base, copy.copy(row),"
        " copy.deepcopy(row),"
        " pprint.pformat(row), logging.getLogger('x'), logging.getLogger('x').info, warnings.catch_warnings(),"
        " typing.Optional[int], typing.Dict[str, int], typing.NamedTuple('P', [('x', int)]), typing.TypedDict('T', {}),"
        " time.gmtime(0), calendar.month_name, calendar.monthcalendar(2025, 1), hashlib.md5(b'x'),"
        " textwrap.wrap('a b')]",
    ),
    "sandbox builtins": (
        ("super", "property", "getattr"),
        "class Base:\n    def __init__(self):\n        self.n = 0\n    def __repr__(self):\n        return 'b'\n"
        "class Kid(Base):\n    def __init__(self):\n        super().__init__()\n        self.n += 1\n"
        "    def sup(self):\n        return super()\n    def init(self):\n        return super().__init__\n"
        "    @property\n    def p(self):\n        return self.n\n"
        "k = Kid()\nq = property(lambda s: 1)\n"
        "result = [k, k.sup(), k.init(), k.p, q, q.setter(lambda s, v: None), 'x{}'.format, '{a}'.format_map,"
        " getattr(k, 'n', 0), getattr(k, 'missing', None)]",
    ),
    "thermal": (
        ("thermal",),
        "res = thermal.search('deploy')\n"
        "result = [res, thermal.grep('deploy'), thermal.find('deploy'), thermal.filter(limit=2),"
        " thermal.count('deploy'), thermal.get(res[0].id), thermal.get('missing'), thermal.summarize('deploy'),"
        " thermal.around(res[0].id), thermal.trace(res[0].id), thermal.dupes(res[0].id), thermal.facets(),"
        " thermal.scan(), thermal.search_results('deploy'), thermal.grep_results('deploy'),"
        " thermal.filter_results(limit=2), thermal.count_results('deploy'), thermal.record(res[0].id),"
        " thermal.ranked('deploy'), res[0].tags, thermal.get(res[0].id).tags]",
    ),
    "thermal result set": (
        ("thermal",),
        "res = thermal.search_results('deploy')\n"
        "result = [res[0], res[:2], list(res), res.ids, res.to_dict(), res.to_list(), res[0].to_dict(),"
        " res[0].get('title'), res['total'], sorted(res, key=lambda m: m.date), reversed(res), iter(res)]",
    ),
}


def run_sample(glb: dict[str, Any], code: str) -> object:
    """Run a benign restricted program in ``glb`` (in this process: no limits needed for
    the fixed samples above) and return its ``result``."""
    scope = dict(glb)
    # the executor's own compile policy, as the child uses it
    exec(compile_restricted(code, filename="<sandbox>", mode="exec", policy=SandboxTransformer), scope)
    return scope["result"]


def sample_roots(glb: dict[str, Any], mode: Mode) -> dict[str, object]:
    available = set(modules_for(mode)) | set(glb) | set(glb["__builtins__"])
    roots: dict[str, object] = {}
    for label, (needs, code) in SAMPLES.items():
        if set(needs) <= available:
            roots[f"<{label}>"] = run_sample(glb, code)
    return roots


def walk_sandbox(mode: Mode, injected: dict[str, object] | None = None) -> WalkReport:
    """The full walk for one mode: namespace roots plus the sample results."""
    glb = sandbox_globals(mode, injected)
    roots = namespace_roots(glb, mode)
    roots.update(sample_roots(glb, mode))
    for name in UNWALKED_NAMES:
        del roots[name]
    return walk(roots, exempt=INTERNAL_NAMES)


# ---- calling what is reachable ------------------------------------------------------------

FUZZ_SOURCE = """
class Box:
    def __init__(self, *args, **kwargs):
        self.args = args
box = Box()
"""


def fuzz_arguments(glb: dict[str, Any]) -> list[tuple[object, ...]]:
    """Argument patterns an attacker would try: classes in place of instances is how
    ``Counter.copy(int)`` returned ``type``."""
    scope = dict(glb)
    exec(compile_restricted(FUZZ_SOURCE, filename="<sandbox>", mode="exec"), scope)
    box_class, box = scope["Box"], scope["box"]
    return [(), (1,), ("a",), (int,), (dict,), (box_class,), (box,), (1, 2), ("a", int), (box_class, box)]


@dataclass
class FuzzReport:
    offenders: list[Offender]
    calls: int
    returned: int


def fuzz_calls(report: WalkReport, glb: dict[str, Any], *, per_call_seconds: int = 2) -> FuzzReport:
    """Call every reachable callable (outside the internal roots) with each argument
    pattern and classify what comes back, one attribute level deep. Meant to run in a
    throwaway process: calls mutate what they are given and the decimal context."""
    import signal

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError

    signal.signal(signal.SIGALRM, stop)
    offenders: list[Offender] = []
    calls = returned = 0
    arguments = fuzz_arguments(glb)
    for path, obj in list(report.objects.items()):
        if path.split(".", 1)[0].split("[", 1)[0] in INTERNAL_NAMES or not callable(obj):
            continue
        for args in arguments:
            signal.alarm(per_call_seconds)
            calls += 1
            try:
                result = obj(*args)
            except BaseException:
                continue
            finally:
                signal.alarm(0)
            returned += 1
            label = f"{path}({', '.join(getattr(a, '__name__', repr(a)) for a in args)})"
            kind = classify(result)
            if kind is not None:
                offenders.append(Offender(label, kind, repr(result)[:120]))
                continue
            for name, value in _attributes(result):
                kind = classify(value)
                if kind is not None:
                    offenders.append(Offender(f"{label}.{name}", kind, repr(value)[:120]))
    return FuzzReport(offenders=offenders, calls=calls, returned=returned)
