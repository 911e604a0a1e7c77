"""Policy: the executor's configuration, security modes and allowlists (pure data).

Everything here is data so the validator (host side) and the guards (child side) agree
on one source of truth.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from terminai_apts.errors import UsageError

Mode = Literal["standard", "high", "strict"]
MODES: tuple[Mode, ...] = ("standard", "high", "strict")

# Layer 1 caps: checked before the parser sees the code (a deep expression can exhaust
# the C parser's stack, so depth is estimated from the raw text first).
MAX_SOURCE_BYTES = 200_000
MAX_AST_NODES = 50_000
MAX_AST_DEPTH = 100
MAX_BRACKET_DEPTH = 60
MAX_INDENT_LEVEL = 40
# Replacement fields in one f-string: Python 3.11's parser rescans a literal from its
# start for each field (66,000 fields in 199 KB took 2.8-11 s), so the fields are
# counted from the tokens before parsing. Far above any real f-string.
MAX_FSTRING_FIELDS = 1_000


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiSpec:
    """How the child builds an injected API object (no host object ever crosses the fork).

    The child imports ``factory`` ("package.module:callable"), calls it with ``args``
    (plain strings) before its limits are applied, and wraps the result so sandboxed code
    sees only ``methods`` (all public callables when empty).
    """

    name: str
    factory: str
    args: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    max_calls: int = 1_000
    max_rows: int = 100_000
    max_bytes: int = 50_000_000

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "factory": self.factory,
            "args": list(self.args),
            "methods": list(self.methods),
            "max_calls": self.max_calls,
            "max_rows": self.max_rows,
            "max_bytes": self.max_bytes,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ApiSpec:
        args = data.get("args", [])
        methods = data.get("methods", [])
        assert isinstance(args, list) and isinstance(methods, list)
        return cls(
            name=str(data["name"]),
            factory=str(data["factory"]),
            args=tuple(str(a) for a in args),
            methods=tuple(str(m) for m in methods),
            max_calls=int(str(data.get("max_calls", 1_000))),
            max_rows=int(str(data.get("max_rows", 100_000))),
            max_bytes=int(str(data.get("max_bytes", 50_000_000))),
        )


THERMAL_METHODS: tuple[str, ...] = (
    "search", "grep", "filter", "count", "get", "summarize",
    "search_results", "ranked", "count_results", "grep_results", "filter_results", "record",
    "find", "around", "trace", "dupes", "facets", "scan",
)  # fmt: skip


# Methods that answer None for a missing id, by API factory: inside the sandbox they raise
# a LookupError instead, so `None.title` is never the first clue. Not `get`: the seed's
# `get(memory_id)` returns None for a missing id, and programs test for it.
NOT_FOUND_METHODS: dict[str, tuple[str, ...]] = {
    "terminai_apts.memory.api:open_for_run": ("trace", "record"),
}


def thermal_spec(db_path: str) -> ApiSpec:
    """The memory API (`thermal`) opened read-only inside the child from ``db_path``:
    ``immutable=1`` and pinned to the version it opened, so the run holds no lock.

    ``db_path`` is an index file, or a journal directory (its live index and sealed quarters).
    """
    return ApiSpec(
        name="thermal",
        factory="terminai_apts.memory.api:open_for_run",
        args=(os.path.abspath(db_path),),  # the child runs elsewhere: a relative path would miss
        methods=THERMAL_METHODS,
    )


# Full cells of CPU a run may use in total when ``cpu_seconds`` is not given.
SESSION_CPU_CELLS = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxConfig:
    """Limits and mode of one restricted run (or of each cell of a session).

    ``max_memory_mb`` is the address space granted to user code on top of the warm
    interpreter's own baseline (measured in the child just before the limit is set).
    ``cpu_seconds`` is the CPU budget of the whole run (a session's cells together);
    each cell is bounded by ``timeout_seconds`` of wall-clock time, enforced by the host.
    ``scratch`` gives the run a private writable directory (its working directory,
    removed when the run ends; each file at most ``scratch_file_mb``); without it the run
    cannot create or write any file. ``audit_path`` enables the hash-chained audit log;
    ``caller_id`` is recorded in it.
    """

    max_memory_mb: int = 256
    timeout_seconds: float = 30.0
    cpu_seconds: int | None = None
    max_output_bytes: int = 1_000_000
    security_mode: Mode = "high"
    max_open_files: int = 32
    unprivileged_uid: int = 65534
    unprivileged_gid: int = 65534
    seccomp: bool = True
    audit_path: str | None = None
    caller_id: str = "anonymous"
    extra: tuple[tuple[str, str], ...] = field(default=())
    scratch: bool = False
    scratch_file_mb: int = 16

    def __post_init__(self) -> None:
        if self.security_mode not in MODES:
            raise UsageError(
                f"unknown security mode {self.security_mode!r}",
                hint=f"use one of: {', '.join(MODES)}",
            )
        if self.max_memory_mb < 16:
            raise UsageError("max_memory_mb must be at least 16", hint="raise --memory-mb")
        if self.timeout_seconds <= 0:
            raise UsageError("timeout_seconds must be positive", hint="raise --timeout")
        if self.cpu_seconds is not None and self.cpu_seconds < 1:
            raise UsageError("cpu_seconds must be at least 1", hint="raise cpu_seconds")
        if self.max_output_bytes < 1:
            raise UsageError("max_output_bytes must be positive", hint="raise --max-output")
        if not self.seccomp:
            raise UsageError(
                "the seccomp filter cannot be switched off",
                hint="it is part of the executor's OS boundary (docs/SECURITY.md); the field stays for compatibility",
            )
        if self.scratch_file_mb < 1:
            raise UsageError("scratch_file_mb must be at least 1", hint="raise scratch_file_mb")

    @property
    def effective_cpu_seconds(self) -> int:
        """RLIMIT_CPU of the run: the CPU budget of everything it runs (one program, or
        every cell of a session together). Each cell's own limit is its wall-clock
        deadline, enforced by the host (the sandboxed process has one thread, so a cell
        never uses more CPU than wall-clock time). Unset, the budget is
        ``SESSION_CPU_CELLS`` full cells, so a session is not killed by the sum of
        ordinary cells (nine 0.6 s cells under a 5 s timeout)."""
        if self.cpu_seconds is not None:
            return self.cpu_seconds
        return max(1, int(self.timeout_seconds + 0.999)) * SESSION_CPU_CELLS

    def to_json(self) -> dict[str, object]:
        return {
            "max_memory_mb": self.max_memory_mb,
            "timeout_seconds": self.timeout_seconds,
            "cpu_seconds": self.effective_cpu_seconds,
            "max_output_bytes": self.max_output_bytes,
            "security_mode": self.security_mode,
            "max_open_files": self.max_open_files,
            "unprivileged_uid": self.unprivileged_uid,
            "unprivileged_gid": self.unprivileged_gid,
            "scratch": self.scratch,
            "scratch_file_bytes": self.scratch_file_mb * MIB,
        }

    @classmethod
    def from_json(cls, data: object) -> SandboxConfig:
        """The configuration :meth:`to_json` wrote, as the run's child reads it.

        Strict, since the object crosses a process boundary: a key missing or unknown, or a
        value of the wrong type (``True`` is not a number here), is a :class:`UsageError`
        rather than a limit silently left at its default. Fields that stay on the host
        (the audit log, the caller, ``extra``) take their defaults; ``cpu_seconds`` is the
        effective budget, so ``to_json`` of the result writes the same object again.
        """
        if not isinstance(data, dict):
            raise UsageError("a run's configuration must be a JSON object", hint=_WIRE_HINT)
        given, wanted = set(data), set(_WIRE_TYPES)
        if given != wanted:
            missing, unknown = sorted(wanted - given), sorted(given - wanted)
            raise UsageError(
                f"a run's configuration has missing keys {missing} and unknown keys {unknown}", hint=_WIRE_HINT
            )
        for key, kinds in _WIRE_TYPES.items():
            value = data[key]
            if isinstance(value, bool) is not (kinds == (bool,)) or not isinstance(value, kinds):
                raise UsageError(f"a run's configuration: {key} is {value!r}, not {kinds[0].__name__}", hint=_WIRE_HINT)
        file_mb, rest = divmod(data["scratch_file_bytes"], MIB)
        if rest:
            raise UsageError("a run's configuration: scratch_file_bytes is not a whole MiB", hint=_WIRE_HINT)
        return cls(
            max_memory_mb=data["max_memory_mb"],
            timeout_seconds=float(data["timeout_seconds"]),
            cpu_seconds=data["cpu_seconds"],
            max_output_bytes=data["max_output_bytes"],
            security_mode=data["security_mode"],
            max_open_files=data["max_open_files"],
            unprivileged_uid=data["unprivileged_uid"],
            unprivileged_gid=data["unprivileged_gid"],
            scratch=data["scratch"],
            scratch_file_mb=file_mb,
        )


MIB = 1024 * 1024
# The keys of SandboxConfig.to_json and the JSON types their values may have.
_WIRE_TYPES: dict[str, tuple[type, ...]] = {
    "max_memory_mb": (int,),
    "timeout_seconds": (int, float),
    "cpu_seconds": (int,),
    "max_output_bytes": (int,),
    "security_mode": (str,),
    "max_open_files": (int,),
    "unprivileged_uid": (int,),
    "unprivileged_gid": (int,),
    "scratch": (bool,),
    "scratch_file_bytes": (int,),
}
_WIRE_HINT = "the host and the run's child must come from the same toolset; reinstall it"


# Names sandboxed code may never mention (layer 2) and never receives (layer 4).
# `getattr`, `super`, `property`, `type`, `hasattr`, `setattr`, `delattr`, `staticmethod`
# and `classmethod` are not here: the sandbox holds its own versions of them
# (``executor.python_layer.sandbox_builtins``, ``executor.python_layer.guards``), never the real ones, in every mode.
FORBIDDEN_NAMES: frozenset[str] = frozenset(
    {
        "eval", "exec", "compile", "open", "__import__", "globals", "locals",
        "object", "breakpoint", "memoryview", "__builtins__", "__loader__", "__spec__",
    }
)  # fmt: skip

# Builtins the sandbox does not offer whose names ordinary programs use for their own
# values (a parameter `input`, a variable `dir`): a program may bind them, and until it
# does the name is a stand-in that says why the builtin is absent when called. The builtins
# themselves read a terminal the run does not have (`input`, `help`, `exit`, `quit`) or
# list and hand out what the guards hide (`dir`, `vars`).
SHADOWABLE_NAMES: dict[str, str] = {
    "input": "a run has no terminal to read from",
    "dir": "it would list what the sandbox's guards hide",
    "vars": "it would hand out an object's real namespace",
    "help": "a run has no terminal",
    "exit": "a run ends when its code does (raise an exception to stop early)",
    "quit": "a run ends when its code does (raise an exception to stop early)",
    "copyright": "a run has no terminal",
    "credits": "a run has no terminal",
    "license": "a run has no terminal",
}

# Special attributes a program may READ with attribute syntax (`type(e).__name__`,
# `obj.__class__.__name__`): the compile policy routes the read through `_getattr_`, whose
# answer is a sandbox-safe value (the class only when the program may hold it, otherwise
# a view with its name; a plain str). Writing or deleting them stays refused, and so does
# every other special attribute.
SAFE_SPECIAL_READS: frozenset[str] = frozenset({"__class__", "__name__"})

# Attribute names refused by name, and refused prefixes (frame/code/traceback/generator
# internals) — both at validation time and again by the runtime attribute guard.
# `format`/`format_map` are not here: on a str they return the safe formatter
# (``executor.python_layer.sandbox_builtins``), on anything else the runtime guard refuses them.
FORBIDDEN_ATTRS: frozenset[str] = frozenset({"mro", "obj"})
FORMAT_ATTRS: frozenset[str] = frozenset({"format", "format_map"})
FORBIDDEN_ATTR_PREFIXES: tuple[str, ...] = ("_", "f_", "gi_", "cr_", "ag_", "tb_", "co_")

# Modules that are never importable in any mode (documented refusal list). `io`,
# `functools`, `operator`, `typing`, `string` and `logging` are importable only as the
# reviewed subsets below (``executor.python_layer.stdlib_shims``), never as the real modules.
NEVER_MODULES: frozenset[str] = frozenset(
    {
        "os", "sys", "subprocess", "socket", "pathlib", "shutil", "ctypes",
        "importlib", "pickle", "marshal", "inspect", "gc", "types", "codecs", "builtins",
        "copyreg", "contextlib", "threading",
    }
)  # fmt: skip

_MATH = (
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "ceil", "comb",
    "copysign", "cos", "cosh", "degrees", "dist", "e", "erf", "erfc", "exp", "expm1",
    "fabs", "factorial", "floor", "fmod", "frexp", "fsum", "gamma", "gcd", "hypot", "inf",
    "isclose", "isfinite", "isinf", "isnan", "isqrt", "lcm", "ldexp", "lgamma", "log",
    "log10", "log1p", "log2", "modf", "nan", "perm", "pi", "pow", "prod", "radians",
    "remainder", "sin", "sinh", "sqrt", "tan", "tanh", "tau", "trunc",
)  # fmt: skip

# Module -> attributes the proxy exposes. A module is importable in a mode only if listed.
HIGH_MODULES: dict[str, tuple[str, ...]] = {
    "math": _MATH,
    "statistics": (
        "mean", "fmean", "geometric_mean", "harmonic_mean", "median", "median_low",
        "median_high", "median_grouped", "mode", "multimode", "quantiles", "pstdev",
        "pvariance", "stdev", "variance", "StatisticsError",
    ),
    "json": ("dumps", "loads", "dump", "load", "JSONDecodeError"),
    "re": (
        "compile", "search", "match", "fullmatch", "split", "findall", "finditer", "sub",
        "subn", "escape", "error", "A", "ASCII", "I", "IGNORECASE", "M", "MULTILINE",
        "S", "DOTALL", "X", "VERBOSE",
    ),
    "datetime": ("date", "datetime", "time", "timedelta", "timezone", "MINYEAR", "MAXYEAR"),
    "collections": ("Counter", "OrderedDict", "defaultdict", "deque", "namedtuple"),
    "itertools": (
        "accumulate", "chain", "combinations", "combinations_with_replacement", "compress",
        "count", "cycle", "dropwhile", "filterfalse", "groupby", "islice", "pairwise",
        "permutations", "product", "repeat", "starmap", "takewhile", "tee", "zip_longest",
    ),
    "heapq": ("heapify", "heappop", "heappush", "heappushpop", "heapreplace", "merge",
              "nlargest", "nsmallest"),
    "bisect": ("bisect", "bisect_left", "bisect_right", "insort", "insort_left",
               "insort_right"),
    "decimal": ("Decimal", "Context", "localcontext", "getcontext", "setcontext",
                "BasicContext", "ExtendedContext", "DefaultContext",
                "ROUND_HALF_UP", "ROUND_HALF_EVEN", "ROUND_HALF_DOWN", "ROUND_DOWN", "ROUND_UP",
                "ROUND_FLOOR", "ROUND_CEILING", "ROUND_05UP",
                "MAX_PREC", "MAX_EMAX", "MIN_EMIN", "MIN_ETINY",
                "DecimalException", "InvalidOperation", "DivisionByZero", "Inexact", "Rounded",
                "Subnormal", "Overflow", "Underflow", "Clamped", "FloatOperation"),
    "fractions": ("Fraction",),
    # `random` is special: a per-run Random instance, never the module-level state.
    "random": ("random", "randint", "randrange", "choice", "choices", "shuffle", "sample",
               "uniform", "gauss", "seed"),
    # The rest of seed 001's SAFE_IMPORTS. Those marked * are the sandbox's own versions
    # (``executor.python_layer.stdlib_shims``): the real objects reach too far.
    "functools": ("reduce", "partial", "cmp_to_key", "lru_cache", "cache", "wraps"),  # * caches, wraps
    "operator": (
        "abs", "add", "and_", "concat", "contains", "countOf", "eq", "floordiv", "ge", "gt",
        "index", "indexOf", "inv", "invert", "is_", "is_not", "le", "lshift", "lt", "matmul",
        "mod", "mul", "ne", "neg", "not_", "or_", "pos", "pow", "rshift", "sub", "truediv",
        "truth", "xor", "attrgetter", "itemgetter", "methodcaller", "getitem",  # * getters
    ),
    "string": ("ascii_letters", "ascii_lowercase", "ascii_uppercase", "digits", "hexdigits",
               "octdigits", "punctuation", "printable", "whitespace", "capwords", "Template"),
    "textwrap": ("wrap", "fill", "shorten", "dedent", "indent"),
    "csv": ("reader", "writer", "DictReader", "DictWriter", "QUOTE_ALL", "QUOTE_MINIMAL",
            "QUOTE_NONNUMERIC", "QUOTE_NONE", "Error"),
    "time": ("time", "time_ns", "perf_counter", "perf_counter_ns", "monotonic",
             "process_time", "sleep", "strftime", "gmtime", "localtime"),
    "calendar": ("isleap", "leapdays", "monthrange", "weekday", "monthcalendar", "month_name",
                 "month_abbr", "day_name", "day_abbr", "MONDAY", "TUESDAY", "WEDNESDAY",
                 "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"),
    "typing": (  # * inert markers: annotations are never evaluated
        "Any", "Callable", "ClassVar", "Counter", "DefaultDict", "Deque", "Dict", "Final",
        "FrozenSet", "Generator", "Generic", "Iterable", "Iterator", "List", "Literal",
        "Mapping", "MutableMapping", "MutableSequence", "NoReturn", "Optional", "Protocol",
        "Sequence", "Set", "Tuple", "Type", "TypeAlias", "Union", "TYPE_CHECKING", "cast",
        "TypeVar", "NamedTuple", "TypedDict",
    ),
    "dataclasses": ("dataclass", "field", "fields", "asdict", "astuple", "replace",
                    "is_dataclass", "FrozenInstanceError"),
    "enum": ("Enum", "IntEnum", "auto"),  # * plain base classes (no metaclass)
    "abc": ("ABC", "abstractmethod"),  # * a plain base class; abstract methods not enforced
    "copy": ("copy", "deepcopy", "Error"),
    "pprint": ("pprint", "pp", "pformat"),  # * prints to the run's output
    "logging": ("basicConfig", "getLogger", "debug", "info", "warning", "error", "exception",
                "critical", "log", "CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG",
                "NOTSET"),  # * records go to the run's output
    "warnings": ("warn", "filterwarnings", "simplefilter", "catch_warnings", "UserWarning",
                 "DeprecationWarning", "RuntimeWarning", "Warning"),  # * to the run's output
    "hashlib": ("sha256", "sha1", "md5", "sha512", "blake2b"),
    "io": ("StringIO", "BytesIO"),  # * BytesIO without getbuffer
}  # fmt: skip

STANDARD_EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "difflib": ("SequenceMatcher", "get_close_matches", "unified_diff", "ndiff"),
    "unicodedata": ("normalize", "category", "name", "lookup", "numeric", "decimal"),
    "base64": ("b64encode", "b64decode", "urlsafe_b64encode", "urlsafe_b64decode",
               "b32encode", "b32decode", "b16encode", "b16decode"),
    "html": ("escape", "unescape"),
    "zlib": ("crc32", "adler32", "compress", "decompress"),
    "uuid": ("uuid4", "uuid5", "UUID", "NAMESPACE_DNS", "NAMESPACE_URL"),
}  # fmt: skip


# Real classes the proxies hand out as they are: C types whose methods check the type of
# `self` (so they cannot be pointed at other objects) and whose metaclass is `type`. Every
# other class in an allowed module is handed out as an instance factory (see
# `executor.python_layer.wrappers.ClassFactory`), except exception classes, which `except` needs as
# classes. The reachability walk in the tests checks what each of them exposes.
SAFE_MODULE_CLASSES: dict[str, tuple[str, ...]] = {
    "collections": ("OrderedDict", "defaultdict", "deque"),
    "datetime": ("date", "datetime", "time", "timedelta", "timezone"),
    "decimal": ("Decimal", "Context"),
    "itertools": (
        "accumulate", "chain", "combinations", "combinations_with_replacement", "compress",
        "count", "cycle", "dropwhile", "filterfalse", "groupby", "islice", "pairwise",
        "permutations", "product", "repeat", "starmap", "takewhile", "zip_longest",
    ),
    "hashlib": ("blake2b",),
}  # fmt: skip

# Class-level helpers an instance factory keeps (as plain callables), by "module.Class".
CLASS_HELPERS: dict[str, tuple[str, ...]] = {
    "fractions.Fraction": ("from_float", "from_decimal"),
}


# Seed 001's ALLOWED_IMPORTS_STRICT is kept as a subset: strict mode has no imports at
# all (only `from __future__ import annotations`, which imports nothing).
STRICT_MODULES: dict[str, tuple[str, ...]] = {}

# `from __future__ import ...`: compile-time switches, the same in every mode. All but
# `annotations` are what Python 3 always does (kept so older programs compile unchanged).
FUTURE_FEATURES: tuple[str, ...] = (
    "annotations", "print_function", "division", "absolute_import", "unicode_literals",
    "generators", "nested_scopes", "with_statement", "generator_stop",
)  # fmt: skip


def modules_for(mode: Mode) -> dict[str, tuple[str, ...]]:
    """The import allowlist of ``mode`` (strict: none)."""
    if mode == "strict":
        return dict(STRICT_MODULES)
    if mode == "high":
        return dict(HIGH_MODULES)
    merged = dict(HIGH_MODULES)
    merged.update(STANDARD_EXTRA_MODULES)
    return merged


def allowed_imports_text(mode: Mode) -> str:
    names = sorted(modules_for(mode))
    return ", ".join(names) if names else "no imports in strict mode"
