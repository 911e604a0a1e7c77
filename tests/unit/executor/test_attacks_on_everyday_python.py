"""Red team, seventh round: the relaxations of the everyday-Python change attacked.

That change let programs define the arithmetic operator methods (plain, reflected and in
place, and read them through ``super()``), write ``class Row(NamedTuple)`` and
``class Row(TypedDict)``, iterate an ``Enum`` class, write ``class T(object)``, bind
``input``/``dir``/``vars``/``help``/``exit``/``quit``/``copyright``/``credits``/``license``
(unbound, each is a stand-in that refuses when called), and use ``id``, ``bytes``,
``format``, ``NotImplemented``, ``RecursionError``, the exception groups, the ``OSError``
subclasses and ``decimal.Context`` with more of ``decimal``.

Every attack below assumes the layer before it has fallen and reaches for what a program
must never hold: an unbound method of a real class, ``type``, a function's globals, a
frame, a module proxy's module, a guard or a stand-in's hidden function, the real
``typing``/``collections`` internals, a descriptor, a traceback or context of an
exception, decimal's private state. Each names the refusal it meets (``A``: layer and
reason), or, where the construct runs, the harmless output it must print (``N``); the
line that would prove an escape prints ``ESCAPED``. Host and C code calling the program's
operator methods (``sum``, ``functools.reduce``, ``itertools.accumulate``, ``operator``,
``statistics``, ``fractions``, ``datetime``, ``decimal``, ``collections``, ``random``,
``math.prod``, dict views and the ``collections.abc`` set views of ``decimal``'s signal
dicts, ``print`` itself) hands over only values the entry check admits: a host object
arrives as its safe form and its private attributes stay refused.

Two routes ESCAPE today. Each has a test named ``test_escape_...`` that asserts the safe
behaviour, so it fails until the executor is fixed:

* **A RecursionError inside the capture check leaves the name bound.** A ``with ... as
  name`` target and a ``match`` capture are bound by the interpreter before the check
  (``name = _capture_(name)`` then ``_held_(name)``). ``_capture_`` rebinds the name to an
  inert ``Refused`` only when the check raises ``SandboxViolation``; when the stack is
  nearly exhausted, calling the check raises ``RecursionError`` instead and the name keeps
  the raw value, which a program that catches ``RecursionError`` (a builtin in every
  mode, and a ``RuntimeError``) then uses. As in ``test_attacks_on_value_check_shortcuts`` no container
  holding a forbidden object is known in the program's reach, so one is planted
  (``leak``, ``leak_cm``) standing for the first host code that would build one.
* **decimal's module-wide contexts are handed out writable.** ``decimal.DefaultContext``
  (and ``BasicContext``, ``ExtendedContext``) are the module's own objects, shared by all
  the code of the run and every later cell of a session; ``decimal.Context`` is in the
  write guard's plain writable kinds (meant for "this run's own context", the one
  ``getcontext()``/``localcontext()`` hand out), so ``DefaultContext.prec = 3`` and
  ``DefaultContext.clear_traps()`` change what every later ``decimal.Context()`` starts
  from.

Seen on the way, not escapes (the tests pin the current answers):

* ``print(..., sep=S(" "))`` with a ``str`` subclass whose ``join`` keeps its argument
  hands the program the print function's own generator (its frame and code stay refused);
  a subclass whose ``encode`` (or, through ``end``, whose ``__radd__``) answers a short
  value makes the run's output buffer undercount what it keeps: the host still cuts
  ``stdout`` to ``max_output_bytes`` and says so, and the run's memory limit bounds the rest.
* A method of a ``NamedTuple`` class body that calls ``super()`` raises ``RuntimeError``
  (its ``__class__`` cell is the body's plain class, not the namedtuple made from it):
  refused, but ordinary code that CPython runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from RestrictedPython.compile import compile_restricted
from terminai_apts.executor import execute
from terminai_apts.executor.policy import Mode, SandboxConfig
from terminai_apts.executor.python_layer.transform import SandboxTransformer

from tests.unit.executor import reachability
from tests.unit.executor.test_callback_routes import FORBIDDEN, _HostContext
from tests.unit.executor.test_python_layer_attacks import (
    ALL_MODES,
    IMPORT_MODES,
    A,
    Attack,
    N,
    Neutralised,
    cfg,
    run_attacks,
)


def in_strict(attacks: list[Attack | Neutralised], layer: str, reason: str) -> list[Attack | Neutralised]:
    """The same snippets in strict mode, which refuses them before they reach the
    construct (the module is not importable there, or the builtin is not offered)."""
    return [A(attack.code, layer, reason) for attack in attacks]


# -- operator methods a class body may define ----------------------------------------------
OPERATORS: list[Attack | Neutralised] = [
    A(
        "class V:\n    def __radd__(self, o):\n        print('ESCAPED', getattr(o, '__self__'))\nprint + V()",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
    A(
        "class V:\n    def __rmul__(self, o):\n        print('ESCAPED', getattr(o, '__func__'))\nprint * V()",
        "L4-runtime-guard",
        "attribute '__func__' is not allowed",
    ),
    A(
        "class V:\n    def __ror__(self, o):\n        print('ESCAPED', getattr(o, '_fn'))\nhasattr | V()",
        "L4-runtime-guard",
        "attribute '_fn' is not allowed",
    ),
    A(
        "class V:\n    def __rand__(self, o):\n        print('ESCAPED', '{0._fn}'.format(o))\ndir & V()",
        "L4-runtime-guard",
        "attribute '_fn' is not allowed",
    ),
    A(
        "class V:\n    def __rsub__(self, o):\n        print('ESCAPED', getattr(o, '__dict__'))\nsetattr - V()",
        "L4-runtime-guard",
        "attribute '__dict__' is not allowed",
    ),
    A(
        "class V:\n    def __rmatmul__(self, o):\n        print('ESCAPED', getattr(o, '_cls'))\ntype(print) @ V()",
        "L4-runtime-guard",
        "attribute '_cls' is not allowed",
    ),
    A(
        "class V:\n"
        "    def __pow__(self, o, m=None):\n"
        "        print('ESCAPED', m)\n"
        "    def __rpow__(self, o, m=None):\n"
        "        print('ESCAPED', m)\n"
        "pow(2, 3, V())",
        "TypeError",
        "unsupported operand type(s) for ** or pow(): 'int', 'int', 'V'",
    ),
    A(
        "class V:\n    def __rpow__(self, o, m=None):\n        print('ESCAPED', m)\npow(2, V(), 5)",
        "TypeError",
        "unsupported operand type(s) for ** or pow(): 'int', 'V', 'int'",
    ),
    A(
        "class V:\n"
        "    def __radd__(self, o):\n"
        "        return getattr(o, '__globals__')\n"
        "print('ESCAPED', sum([V()], 0), (lambda: 0) + V())",
        "L4-runtime-guard",
        "attribute '__globals__' is not allowed",
    ),
    A(
        "class V:\n"
        "    def __rdivmod__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__code__'))\n"
        "divmod(lambda: 0, V())",
        "L4-runtime-guard",
        "attribute '__code__' is not allowed",
    ),
    A(
        "class V:\n"
        "    def __iadd__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__closure__'))\n"
        "        return self\n"
        "v = V()\n"
        "v += (lambda: 0)",
        "L4-runtime-guard",
        "attribute '__closure__' is not allowed",
    ),
    A(
        "class V:\n    def __neg__(self):\n        return getattr(self, '__class__').__base__\nprint('ESCAPED', -V())",
        "L2-validate",
        "attribute '__base__' is not allowed",
    ),
    A(
        "class V:\n    def __invert__(self):\n        return super().__subclasses__()\nprint('ESCAPED', ~V())",
        "L2-validate",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "class V:\n    def __abs__(self):\n        return super().__getattribute__\nprint('ESCAPED', abs(V()))",
        "L2-validate",
        "attribute '__getattribute__' is not allowed",
    ),
    A(
        "class V:\n    def __add__(self, o):\n        return super().__add__(o)\nprint('ESCAPED', V() + 1)",
        "AttributeError",
        "'super' object has no attribute '__add__'",
    ),
    A(
        "class V(int):\n    def __add__(self, o):\n        return super().__reduce_ex__\nprint('ESCAPED', V(1) + 1)",
        "L2-validate",
        "attribute '__reduce_ex__' is not allowed",
    ),
    A(
        "class V(int):\n"
        "    @classmethod\n"
        "    def leak(cls):\n"
        "        return super().__add__\n"
        "print('ESCAPED', V.leak())",
        "RuntimeError",
        "super(): the method's first argument is not an instance of its class",
    ),
    A(
        "class V(int):\n    @staticmethod\n    def leak():\n        return super().__add__\nprint('ESCAPED', V.leak())",
        "RuntimeError",
        "super(): no arguments (use it inside a method)",
    ),
    A(
        "class V:\n    def __add__(self, o):\n        return o\nf = V().__add__\nprint('ESCAPED', f)",
        "L2-validate",
        "attribute '__add__' is not allowed",
    ),
    A(
        "class V:\n    def __add__(self, o):\n        return o\nprint('ESCAPED', getattr(V, '__add__'))",
        "L4-runtime-guard",
        "attribute '__add__' is not allowed",
    ),
    A(
        "class V:\n    def __add__(self, o):\n        return o\nprint('ESCAPED', '{0.__add__}'.format(V()))",
        "L4-runtime-guard",
        "attribute '__add__' is not allowed",
    ),
    A(
        "class V:\n    __radd__ = print\nprint('ESCAPED', 1 + V())",
        "L2-validate",
        "names starting with '_' are not allowed: '__radd__'",
    ),
    A(
        "class V:\n    __radd__ = lambda self, o: getattr(o, '__self__')\nprint('ESCAPED', print + V())",
        "L2-validate",
        "names starting with '_' are not allowed: '__radd__'",
    ),
    A(
        "class V:\n    def __format__(self, spec):\n        return 'ESCAPED'\nprint(format(V(), 'x'))",
        "L2-validate",
        "name '__format__' may not be bound",
    ),
    A(
        "class V:\n    def __index__(self):\n        return 0\nprint('ESCAPED', [1][V()])",
        "L2-validate",
        "name '__index__' may not be bound",
    ),
    A(
        "class V:\n    def __getattr__(self, n):\n        return n\nprint('ESCAPED', V().x)",
        "L2-validate",
        "name '__getattr__' may not be bound",
    ),
    A(
        "class V:\n    def __set_name__(self, owner, name):\n        print('ESCAPED', owner)\n",
        "L2-validate",
        "name '__set_name__' may not be bound",
    ),
    A(
        "class V:\n"
        "    def __radd__(self, o):\n"
        "        return o\n"
        "class W:\n"
        "    pass\n"
        "w = W()\n"
        "w.x = print\n"
        "w.x += V()\n"
        "print('ESCAPED', getattr(w.x, '__self__'))",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
    A(
        "class V:\n"
        "    def __rmod__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__class__').__subclasses__())\n"
        "'%s' % V()",
        "L2-validate",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "class V(str):\n"
        "    def __rmod__(self, o):\n"
        "        return getattr(o, 'format')\n"
        "f = '{0.__class__.__subclasses__}' % V('x')\n"
        "print('ESCAPED', f(1))",
        "L4-runtime-guard",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "class V:\n"
        "    def __eq__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__self__'))\n"
        "        return False\n"
        "print(print == V())",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
]

# -- C and stdlib code calling a program's operator methods --------------------------------
STDLIB_OPERATORS: list[Attack | Neutralised] = [
    A(
        "d = {'a': 1}\n"
        "class V:\n"
        "    def __ror__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__class__').__subclasses__())\n"
        "d.keys() | V()",
        "L2-validate",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "class V:\n"
        "    def __rxor__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__class__').__subclasses__())\n"
        "{1} ^ V()",
        "L2-validate",
        "attribute '__subclasses__' is not allowed",
    ),
]

STDLIB_OPERATORS_IMPORTING: list[Attack | Neutralised] = [
    A(
        "import heapq, operator, functools, itertools\n"
        "class V:\n"
        "    def __lt__(self, o):\n"
        "        return getattr(o, '__self__') and False\n"
        "    def __radd__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__self__'))\n"
        "functools.reduce(operator.add, [print, V()])",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
    A(
        "import itertools\n"
        "class V:\n"
        "    def __radd__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__func__'))\n"
        "list(itertools.accumulate([print, V()]))",
        "L4-runtime-guard",
        "attribute '__func__' is not allowed",
    ),
    A(
        "import operator\n"
        "class V:\n"
        "    def __rxor__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__self__'))\n"
        "operator.xor(print, V())",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
    A(
        "import statistics\n"
        "class V(float):\n"
        "    def __rsub__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__class__').__mro__)\n"
        "        return 0.0\n"
        "print(statistics.variance([1.0, 2.0, 3.0], V(2.0)))",
        "L2-validate",
        "attribute '__mro__' is not allowed",
    ),
    N(
        "import statistics\n"
        "class V(int):\n"
        "    def __radd__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__globals__'))\n"
        "        return 0\n"
        "print(statistics.mean([V(1), V(2)]))",
        "1.5\n",
    ),
    A(
        "import fractions\n"
        "class V:\n"
        "    def __radd__(self, o):\n"
        "        print('ESCAPED', getattr(o, '_numerator'))\n"
        "fractions.Fraction(1, 2) + V()",
        "L4-runtime-guard",
        "attribute '_numerator' is not allowed",
    ),
    N(
        "import fractions\n"
        "class V(int):\n"
        "    def __rpow__(self, o, m=None):\n"
        "        print('ESCAPED', getattr(o, '__dict__'))\n"
        "print(fractions.Fraction(1, 2) ** V(2))",
        "1/4\n",
    ),
    A(
        "import datetime\n"
        "class V:\n"
        "    def __rmul__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__reduce__'))\n"
        "datetime.timedelta(1) * V()",
        "L4-runtime-guard",
        "attribute '__reduce__' is not allowed",
    ),
    A(
        "import datetime\n"
        "class V:\n"
        "    def __radd__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__class__').__subclasses__())\n"
        "datetime.datetime(2026, 1, 1) + V()",
        "L2-validate",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "import decimal\n"
        "class V:\n"
        "    def __radd__(self, o):\n"
        "        print('ESCAPED', getattr(o, '_exp'))\n"
        "decimal.Decimal(1) + V()",
        "L4-runtime-guard",
        "attribute '_exp' is not allowed",
    ),
    A(
        "import decimal\n"
        "class V(int):\n"
        "    def __radd__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__class__').__subclasses__())\n"
        "decimal.getcontext().add(V(1), 2)",
        "L2-validate",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "import collections\n"
        "class V:\n"
        "    def __radd__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__missing__'))\n"
        "collections.Counter('ab') + V()",
        "L4-runtime-guard",
        "attribute '__missing__' is not allowed",
    ),
    A(
        "import collections\n"
        "class V:\n"
        "    def __radd__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__class__').__mro__)\n"
        "collections.deque([1]) + V()",
        "L2-validate",
        "attribute '__mro__' is not allowed",
    ),
    A(
        "import random\n"
        "class V(float):\n"
        "    def __rmul__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__self__'))\n"
        "        return 0.5\n"
        "    def __add__(self, o):\n"
        "        return V(1.0)\n"
        "random.choices([1, 2], weights=[V(1.0), V(1.0)])",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
    A(
        "import random\n"
        "class V(int):\n"
        "    def __rmul__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__class__').__subclasses__())\n"
        "        return o\n"
        "random.sample([1, 2, 3], V(2))",
        "L2-validate",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "import random\n"
        "class V(int):\n"
        "    def __rmul__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__class__').__subclasses__())\n"
        "        return o\n"
        "print(len(random.sample([1, 2, 3], V(2))))",
        "L2-validate",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "import decimal\n"
        "kv = decimal.getcontext().flags.keys()\n"
        "class V:\n"
        "    def __rsub__(self, o):\n"
        "        print('ESCAPED', getattr(o, '_from_iterable'))\n"
        "print(kv - V())",
        "L4-runtime-guard",
        "attribute '_from_iterable' is not allowed",
    ),
    A(
        "import math\n"
        "class V:\n"
        "    def __rmul__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__self__'))\n"
        "        return 1\n"
        "math.prod([V()], start=print)",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
]

# -- print's sep and end as str subclasses -------------------------------------------------
PRINT_SUBCLASSES: list[Attack | Neutralised] = [
    A(
        "G = []\n"
        "class S(str):\n"
        "    def join(self, it):\n"
        "        G.append(it)\n"
        "        return ''\n"
        "print('a', sep=S(' '))\n"
        "print('ESCAPED', getattr(G[0], 'gi_frame'))",
        "L4-runtime-guard",
        "attribute 'gi_frame' is not allowed",
    ),
    A(
        "G = []\n"
        "class S(str):\n"
        "    def join(self, it):\n"
        "        G.append(it)\n"
        "        return ''\n"
        "print('a', sep=S(' '))\n"
        "print('ESCAPED', '{0.gi_code}'.format(G[0]))",
        "L4-runtime-guard",
        "attribute 'gi_code' is not allowed",
    ),
    A(
        "G = []\n"
        "class S(str):\n"
        "    def join(self, it):\n"
        "        G.append(it)\n"
        "        return ''\n"
        "print('a', sep=S(' '))\n"
        "for x in G[0]:\n"
        "    pass\n"
        "print('ESCAPED', getattr(G[0], 'gi_frame'))",
        "L4-runtime-guard",
        "attribute 'gi_frame' is not allowed",
    ),
    A(
        "class S(str):\n"
        "    def __radd__(self, o):\n"
        "        print('ESCAPED', getattr(o, '__class__').__subclasses__())\n"
        "print('a', end=S(''))",
        "L2-validate",
        "attribute '__subclasses__' is not allowed",
    ),
]

# -- NamedTuple class syntax ---------------------------------------------------------------
NAMED_TUPLES: list[Attack | Neutralised] = [
    A(
        "from typing import NamedTuple\nclass Row(NamedTuple):\n    x: int\nprint('ESCAPED', getattr(Row, '_make'))",
        "L4-runtime-guard",
        "attribute '_make' is not allowed",
    ),
    A(
        "from typing import NamedTuple\nclass Row(NamedTuple):\n    x: int\nprint('ESCAPED', getattr(Row, '__new__'))",
        "L4-runtime-guard",
        "attribute '__new__' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "print('ESCAPED', getattr(Row(1), '_asdict')())",
        "L4-runtime-guard",
        "attribute '_asdict' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "print('ESCAPED', '{0._fields}'.format(Row))",
        "L4-runtime-guard",
        "attribute '_fields' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "print('ESCAPED', '{0.__new__.__globals__}'.format(Row))",
        "L4-runtime-guard",
        "attribute '__new__' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "    def _make(cls, it):\n"
        "        return it\n"
        "print('ESCAPED')",
        "L2-validate",
        "name '_make' may not be bound",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "    def __new__(cls, x):\n"
        "        return 1\n"
        "print('ESCAPED')",
        "L2-validate",
        "name '__new__' may not be bound",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "    def __init__(self, x):\n"
        "        pass\n"
        "print('ESCAPED')",
        "AttributeError",
        "Cannot overwrite NamedTuple attribute __init__",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "    _fields = ('__class__',)\n"
        "print('ESCAPED')",
        "L2-validate",
        "names starting with '_' are not allowed: '_fields'",
    ),
    A(
        "from typing import NamedTuple\nclass Row(NamedTuple):\n    x: int\n    __slots__ = ()\nprint('ESCAPED')",
        "L2-validate",
        "names starting with '_' are not allowed: '__slots__'",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "    __class_getitem__ = print\n"
        "print('ESCAPED')",
        "L2-validate",
        "names starting with '_' are not allowed: '__class_getitem__'",
    ),
    A(
        "from typing import NamedTuple\nclass Row(NamedTuple):\n    x: int\n    _getattr_ = print\nprint('ESCAPED')",
        "L2-validate",
        "names starting with '_' are not allowed: '_getattr_'",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "    __metaclass__ = print\n"
        "print('ESCAPED')",
        "L2-validate",
        "names starting with '_' are not allowed: '__metaclass__'",
    ),
    A(
        "from typing import NamedTuple\nclass Row(NamedTuple):\n    _x: int\nprint('ESCAPED')",
        "L2-validate",
        "names starting with '_' are not allowed: '_x'",
    ),
    A(
        "from typing import NamedTuple\nclass Row(NamedTuple):\n    x: __import__('os')\nprint('ESCAPED')",
        "L2-validate",
        "name '__import__' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "setattr(Row, '_make', print)\n"
        "print('ESCAPED')",
        "L4-runtime-guard",
        "attribute '_make' is not allowed",
    ),
    A(
        "from typing import NamedTuple\nclass Row(NamedTuple):\n    x: int\nRow.__repr__ = print\nprint('ESCAPED')",
        "L2-validate",
        "attribute '__repr__' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "setattr(Row, '__format__', lambda s, f: 'ESCAPED')\n"
        "print(format(Row(1), 'x'))",
        "L4-runtime-guard",
        "attribute '__format__' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "    def __add__(self, o):\n"
        "        return super().__add__(o)\n"
        "print('ESCAPED', Row(1) + (2,))",
        "RuntimeError",
        "super(): the method's first argument is not an instance of its class",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "    def leak(self):\n"
        "        return super().__getattribute__\n"
        "print('ESCAPED', Row(1).leak())",
        "L2-validate",
        "attribute '__getattribute__' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "class Sub(Row):\n"
        "    def leak(self):\n"
        "        return super().__getnewargs__\n"
        "print('ESCAPED', Sub(1).leak())",
        "L2-validate",
        "attribute '__getnewargs__' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "class Sub(Row):\n"
        "    def __add__(self, o):\n"
        "        return getattr(super(), '_make')(o)\n"
        "print('ESCAPED', Sub(1) + (2,))",
        "L4-runtime-guard",
        "attribute '_make' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int\n"
        "class Two(Row, NamedTuple):\n"
        "    y: int\n"
        "print('ESCAPED')",
        "L4-runtime-guard",
        "base classes must be plain classes",
    ),
    A(
        "from typing import NamedTuple\nclass Row(NamedTuple, metaclass=type):\n    x: int\nprint('ESCAPED')",
        "L2-validate",
        "class keywords (metaclass=...) are not allowed",
    ),
    A(
        "from typing import NamedTuple\nclass Row(NamedTuple, int):\n    x: int\nprint('ESCAPED')",
        "L4-runtime-guard",
        "base classes must be plain classes",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(*[NamedTuple]):\n"
        "    x: int\n"
        "print('ESCAPED', getattr(Row, '_field_defaults'))",
        "L4-runtime-guard",
        "attribute '_field_defaults' is not allowed",
    ),
    A(
        "from typing import NamedTuple\nprint('ESCAPED', getattr(NamedTuple, '_build'))",
        "L4-runtime-guard",
        "attribute '_build' is not allowed",
    ),
    A(
        "from typing import NamedTuple\nprint('ESCAPED', '{0._fn}'.format(NamedTuple))",
        "L4-runtime-guard",
        "attribute '_fn' is not allowed",
    ),
    A(
        "from typing import NamedTuple\nprint('ESCAPED', getattr(type(NamedTuple), '__init__'))",
        "L4-runtime-guard",
        "attribute '__init__' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int = print\n"
        "r = Row()\n"
        "print('ESCAPED', getattr(r.x, '__self__'))",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int = print\n"
        "for v in Row():\n"
        "    print('ESCAPED', getattr(v, '__func__'))",
        "L4-runtime-guard",
        "attribute '__func__' is not allowed",
    ),
    A(
        "from typing import NamedTuple\n"
        "class Row(NamedTuple):\n"
        "    x: int = print\n"
        "a, = Row()\n"
        "print('ESCAPED', getattr(a, '__self__'))",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
]

# -- TypedDict class syntax ----------------------------------------------------------------
TYPED_DICTS: list[Attack | Neutralised] = [
    A(
        "from typing import TypedDict\nclass A(TypedDict):\n    x: int\nprint('ESCAPED', getattr(A, '_build'))",
        "L4-runtime-guard",
        "attribute '_build' is not allowed",
    ),
    A(
        "from typing import TypedDict\n"
        "class A(TypedDict):\n"
        "    x: int\n"
        "    def leak(self):\n"
        "        return 1\n"
        "print('ESCAPED', A().leak())",
        "AttributeError",
        "'dict' object has no attribute 'leak'",
    ),
    A(
        "from typing import TypedDict\n"
        "class A(TypedDict):\n"
        "    x: int\n"
        "class B(A):\n"
        "    y: int\n"
        "class C(B, int):\n"
        "    pass\n"
        "print('ESCAPED')",
        "L4-runtime-guard",
        "base classes must be plain classes",
    ),
    A(
        "from typing import TypedDict\nclass A(TypedDict, total=False):\n    x: int\nprint('ESCAPED')",
        "L2-validate",
        "class keywords (metaclass=...) are not allowed",
    ),
    A(
        "from typing import TypedDict\n"
        "class A(TypedDict):\n"
        "    x: int\n"
        "print('ESCAPED', '{0._fn.__globals__}'.format(A))",
        "L4-runtime-guard",
        "attribute '_fn' is not allowed",
    ),
    A(
        "from typing import TypedDict\n"
        "class A(TypedDict):\n"
        "    x: int\n"
        "print('ESCAPED', getattr(A(), '__class__').__subclasses__())",
        "L2-validate",
        "attribute '__subclasses__' is not allowed",
    ),
]

# -- iterating an Enum class ---------------------------------------------------------------
ENUMS: list[Attack | Neutralised] = [
    A(
        "from enum import Enum\nclass Color(Enum):\n    RED = 1\nColor._members_ = (print,)\nprint('ESCAPED')",
        "L2-validate",
        "attribute '_members_' is not allowed",
    ),
    A(
        "from enum import Enum\n"
        "class Color(Enum):\n"
        "    RED = 1\n"
        "setattr(Color, '_members_', (print,))\n"
        "print('ESCAPED')",
        "L4-runtime-guard",
        "attribute '_members_' is not allowed",
    ),
    A(
        "from enum import Enum\nclass Color(Enum):\n    _members_ = (1,)\nprint('ESCAPED')",
        "L2-validate",
        "names starting with '_' are not allowed: '_members_'",
    ),
    A(
        "from enum import Enum\n"
        "class Color(Enum):\n"
        "    RED = 1\n"
        "for c in Color:\n"
        "    print('ESCAPED', getattr(c, '__class__').__mro__)",
        "L2-validate",
        "attribute '__mro__' is not allowed",
    ),
    A(
        "from enum import Enum\nfor m in Enum:\n    print('ESCAPED', m)",
        "TypeError",
        "'type' object is not iterable",
    ),
    N(
        "from enum import Enum\n"
        "class Color(Enum):\n"
        "    RED = 1\n"
        "Color.RED = print\n"
        "for c in Color:\n"
        "    print(c.value)",
        "1\n",
    ),
    A(
        "from enum import Enum\n"
        "class Color(Enum):\n"
        "    RED = print\n"
        "for c in Color:\n"
        "    print('ESCAPED', getattr(c.value, '__self__'))",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
    A(
        "from enum import Enum\n"
        "class Color(Enum):\n"
        "    RED = 1\n"
        "for c in Color:\n"
        "    print('ESCAPED', getattr(c, '_value2member_'))",
        "L4-runtime-guard",
        "attribute '_value2member_' is not allowed",
    ),
    A(
        "from enum import Enum\nclass Color(Enum):\n    RED = 1\nprint('ESCAPED', getattr(Color, '_members_'))",
        "L4-runtime-guard",
        "attribute '_members_' is not allowed",
    ),
    A(
        "from enum import Enum\nclass Color(Enum):\n    RED = 1\nprint('ESCAPED', [m for m in iter(Color)])",
        "TypeError",
        "'type' object is not iterable",
    ),
]

# -- the bindable names and their stand-ins, class T(object) -------------------------------
SHADOWABLE: list[Attack | Neutralised] = [
    A(
        "print('ESCAPED', dir(1))",
        "L4-runtime-guard",
        "dir() is not available in the sandbox: it would list what the sandbox's guards hide",
    ),
    A(
        "print('ESCAPED', vars())",
        "L4-runtime-guard",
        "vars() is not available in the sandbox: it would hand out an object's real namespace",
    ),
    A(
        "print('ESCAPED', input('x'))",
        "L4-runtime-guard",
        "input() is not available in the sandbox: a run has no terminal to read from",
    ),
    A(
        "help(print)\nprint('ESCAPED')",
        "L4-runtime-guard",
        "help() is not available in the sandbox: a run has no terminal",
    ),
    A(
        "exit(0)\nprint('ESCAPED')",
        "L4-runtime-guard",
        "exit() is not available in the sandbox: a run ends when its code does (raise an exception ",
    ),
    A(
        "quit()\nprint('ESCAPED')",
        "L4-runtime-guard",
        "quit() is not available in the sandbox: a run ends when its code does (raise an exception ",
    ),
    A(
        "print('ESCAPED', copyright(), credits(), license())",
        "L4-runtime-guard",
        "copyright() is not available in the sandbox: a run has no terminal",
    ),
    A(
        "f = vars\nprint('ESCAPED', f(print))",
        "L4-runtime-guard",
        "vars() is not available in the sandbox: it would hand out an object's real namespace",
    ),
    A(
        "print('ESCAPED', getattr(dir, '_fn'))",
        "L4-runtime-guard",
        "attribute '_fn' is not allowed",
    ),
    A(
        "print('ESCAPED', '{0._fn.__closure__}'.format(vars))",
        "L4-runtime-guard",
        "attribute '_fn' is not allowed",
    ),
    A(
        "print('ESCAPED', getattr(dir, '__call__'))",
        "L4-runtime-guard",
        "attribute '__call__' is not allowed",
    ),
    A(
        "print('ESCAPED', getattr(type(dir), '__init__'))",
        "L4-runtime-guard",
        "attribute '__init__' is not allowed",
    ),
    A(
        "dir.x = 1\nprint('ESCAPED')",
        "L4-runtime-guard",
        "cannot modify objects of type 'StandIn'",
    ),
    A(
        "setattr(vars, '_fn', print)\nprint('ESCAPED')",
        "L4-runtime-guard",
        "attribute '_fn' is not allowed",
    ),
    A(
        "delattr(help, '_label')\nprint('ESCAPED')",
        "L4-runtime-guard",
        "attribute '_label' is not allowed",
    ),
    A(
        "def f(dir):\n    return dir\nprint(f(1))\nprint('ESCAPED', vars(f))",
        "L4-runtime-guard",
        "vars() is not available in the sandbox: it would hand out an object's real namespace",
    ),
    A(
        "class C:\n    vars = print\nprint(C().vars)\nvars(C)",
        "L4-runtime-guard",
        "vars() is not available in the sandbox: it would hand out an object's real namespace",
    ),
    A(
        "dir = 1\ndel dir\nprint('ESCAPED', dir())",
        "L4-runtime-guard",
        "dir() is not available in the sandbox: it would list what the sandbox's guards hide",
    ),
    A(
        "globals()\nprint('ESCAPED')",
        "L2-validate",
        "name 'globals' is not allowed",
    ),
    A(
        "locals()\nprint('ESCAPED')",
        "L2-validate",
        "name 'locals' is not allowed",
    ),
    A(
        "object = 1\nprint('ESCAPED')",
        "L2-validate",
        "name 'object' is not allowed",
    ),
    A(
        "class T(object):\n    pass\nprint(T)\nprint('ESCAPED', object)",
        "L2-validate",
        "name 'object' is not allowed",
    ),
    A(
        "class T(object[0]):\n    pass\nprint('ESCAPED')",
        "L2-validate",
        "name 'object' is not allowed",
    ),
    A(
        "class T(*[object]):\n    pass\nprint('ESCAPED')",
        "L2-validate",
        "name 'object' is not allowed",
    ),
    A(
        "def f(object):\n    class T(object):\n        pass\n    return T\nprint('ESCAPED', f(1))",
        "L2-validate",
        "name 'object' may not be bound",
    ),
    A(
        "class T(object, metaclass=type):\n    pass\nprint('ESCAPED')",
        "L2-validate",
        "class keywords (metaclass=...) are not allowed",
    ),
    A(
        "class T(object):\n    def leak(self):\n        return super().__init_subclass__\nprint('ESCAPED', T().leak())",
        "L2-validate",
        "attribute '__init_subclass__' is not allowed",
    ),
]

# -- the new builtins: id, bytes, format, NotImplemented, the OSError subclasses -----------
NEW_BUILTINS: list[Attack | Neutralised] = [
    A(
        "print('ESCAPED', bytes.__dict__)",
        "L2-validate",
        "attribute '__dict__' is not allowed",
    ),
    A(
        "class B(bytes):\n    def __bytes__(self):\n        return b'x'\nprint('ESCAPED')",
        "L2-validate",
        "name '__bytes__' may not be bound",
    ),
    A(
        "print('ESCAPED', getattr(NotImplemented, '__reduce__')())",
        "L4-runtime-guard",
        "attribute '__reduce__' is not allowed",
    ),
    A(
        "print('ESCAPED', getattr(type(NotImplemented), '__call__'))",
        "L4-runtime-guard",
        "attribute '__call__' is not allowed",
    ),
    A(
        "print('ESCAPED', type(NotImplemented)())",
        "TypeError",
        "'TypeView' object is not callable",
    ),
    A(
        "print('ESCAPED', b'%s' % (print,))",
        "TypeError",
        "%b requires a bytes-like object, or an object that implements __bytes__, not 'method'",
    ),
    A(
        "print('ESCAPED', getattr(RecursionError, '__subclasses__')())",
        "L4-runtime-guard",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "print('ESCAPED', getattr(OSError, 'errno').__get__)",
        "L2-validate",
        "attribute '__get__' is not allowed",
    ),
    A(
        "print('ESCAPED', memoryview(b'x'))",
        "L2-validate",
        "name 'memoryview' is not allowed",
    ),
    A(
        "print('ESCAPED', breakpoint())",
        "L2-validate",
        "name 'breakpoint' is not allowed",
    ),
]

NEW_BUILTINS_OUTSIDE_STRICT: list[Attack | Neutralised] = [
    A(
        "print('ESCAPED', format(print, '{0.__self__}'))",
        "TypeError",
        "unsupported format string passed to method.__format__",
    ),
    A(
        "print('ESCAPED', format(1, '{0.__class__}'))",
        "ValueError",
        "Invalid format specifier '{0.__class__}' for object of type 'int'",
    ),
    A(
        "print('ESCAPED', getattr(format, '__self__'))",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
    A(
        "print('ESCAPED', getattr(id, '__module__'))",
        "L4-runtime-guard",
        "attribute '__module__' is not allowed",
    ),
    A(
        "print('ESCAPED', getattr(bytes, '__subclasses__')())",
        "L4-runtime-guard",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "print('ESCAPED', getattr(bytes, 'mro')())",
        "L4-runtime-guard",
        "attribute 'mro' is not allowed",
    ),
    A(
        "print('ESCAPED', bytes(print))",
        "TypeError",
        "cannot convert 'method' object to bytes",
    ),
    A(
        "print('ESCAPED', '{0:{1.__doc__}}'.format(1, bytes))",
        "L4-runtime-guard",
        "attribute '__doc__' is not allowed",
    ),
    A(
        "print('ESCAPED', OSError.errno)",
        "L4-runtime-guard",
        "attribute 'errno' is not allowed (it is a descriptor)",
    ),
    A(
        "e = FileNotFoundError(2, 'x', 'y')\n"
        "print(e.filename, e.errno, type(e))\n"
        "print('ESCAPED', getattr(e, '__traceback__'))",
        "L4-runtime-guard",
        "attribute '__traceback__' is not allowed",
    ),
]

# -- exception groups ----------------------------------------------------------------------
EXCEPTION_GROUPS: list[Attack | Neutralised] = [
    A(
        "try:\n    raise ValueError('x')\nexcept* ValueError as eg:\n    print('ESCAPED', eg)",
        "L2-validate",
        "except* is not allowed",
    ),
    A(
        "class E(ExceptionGroup):\n"
        "    def derive(self, excs):\n"
        "        print('ESCAPED', getattr(excs, '__class__').__subclasses__())\n"
        "        return E(self.message, excs)\n"
        "E('m', [ValueError()]).split(ValueError)",
        "L2-validate",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "class E(ExceptionGroup):\n    def __new__(cls, m, e):\n        return 1\nprint('ESCAPED')",
        "L2-validate",
        "name '__new__' may not be bound",
    ),
    A(
        "class E(ExceptionGroup):\n    def __init_subclass__(cls):\n        pass\nprint('ESCAPED')",
        "L2-validate",
        "name '__init_subclass__' may not be bound",
    ),
    A(
        "class E(ExceptionGroup):\n    def __class_getitem__(cls, x):\n        return cls\nprint('ESCAPED')",
        "L2-validate",
        "name '__class_getitem__' may not be bound",
    ),
]

EXCEPTION_GROUPS_OUTSIDE_STRICT: list[Attack | Neutralised] = [
    A(
        "e = ExceptionGroup('m', [ValueError(1)])\nprint('ESCAPED', getattr(e, '__traceback__'))",
        "L4-runtime-guard",
        "attribute '__traceback__' is not allowed",
    ),
    A(
        "e = ExceptionGroup('m', [ValueError(1)])\nprint('ESCAPED', getattr(e, '__context__'))",
        "L4-runtime-guard",
        "attribute '__context__' is not allowed",
    ),
    A(
        "e = ExceptionGroup('m', [ValueError(1)])\nprint('ESCAPED', getattr(e, '__cause__'))",
        "L4-runtime-guard",
        "attribute '__cause__' is not allowed",
    ),
    A(
        "e = ExceptionGroup('m', [ValueError(1)])\nprint('ESCAPED', getattr(e, '__notes__'))",
        "L4-runtime-guard",
        "attribute '__notes__' is not allowed",
    ),
    A(
        "try:\n"
        "    try:\n"
        "        raise ValueError('v')\n"
        "    except ValueError:\n"
        "        raise ExceptionGroup('m', [TypeError('t')])\n"
        "except ExceptionGroup as eg:\n"
        "    m, r = eg.split(TypeError)\n"
        "    print('ESCAPED', '{0.__context__.__traceback__.tb_frame}'.format(m))",
        "L4-runtime-guard",
        "attribute '__context__' is not allowed",
    ),
    A(
        "try:\n"
        "    raise ExceptionGroup('m', [TypeError('t')])\n"
        "except ExceptionGroup as eg:\n"
        "    m, r = eg.split(lambda x: True)\n"
        "    print('ESCAPED', getattr(m, '__traceback__'))",
        "L4-runtime-guard",
        "attribute '__traceback__' is not allowed",
    ),
    A(
        "class E(ExceptionGroup):\n"
        "    def derive(self, excs):\n"
        "        return 5\n"
        "E('m', [ValueError()]).split(ValueError)\n"
        "print('ESCAPED')",
        "TypeError",
        "derive must return an instance of BaseExceptionGroup",
    ),
    A(
        "print('ESCAPED', ExceptionGroup[int])",
        "L4-runtime-guard",
        "item is not allowed (it is a GenericAlias)",
    ),
    A(
        "print('ESCAPED', getattr(ExceptionGroup, '__class_getitem__'))",
        "L4-runtime-guard",
        "attribute '__class_getitem__' is not allowed",
    ),
    A(
        "e = ExceptionGroup('m', [ValueError()])\nprint('ESCAPED', e.split(lambda x: getattr(x, '__traceback__')))",
        "L4-runtime-guard",
        "attribute '__traceback__' is not allowed",
    ),
    A(
        "e = ExceptionGroup('m', [ValueError()])\n"
        "print('ESCAPED', e.subgroup(lambda x: print(getattr(x, '__context__'))))",
        "L4-runtime-guard",
        "attribute '__context__' is not allowed",
    ),
    A(
        "e = ExceptionGroup('m', [print])\nprint('ESCAPED', e)",
        "ValueError",
        "Item 0 of second argument (exceptions) is not an exception",
    ),
    A(
        "e = BaseExceptionGroup('m', [ValueError()])\n"
        "print(type(e))\n"
        "print('ESCAPED', getattr(BaseExceptionGroup, '__new__'))",
        "L4-runtime-guard",
        "attribute '__new__' is not allowed",
    ),
    A(
        "raise BaseExceptionGroup('m', [SystemExit(0)])\nprint('ESCAPED')",
        "BaseExceptionGroup",
        "m (1 sub-exception)",
    ),
    A(
        "raise BaseExceptionGroup('m', [KeyboardInterrupt()])\nprint('ESCAPED')",
        "BaseExceptionGroup",
        "m (1 sub-exception)",
    ),
    A(
        "e = ExceptionGroup('m', [ValueError()])\ne.add_note(print)\nprint('ESCAPED')",
        "TypeError",
        "note must be a str, not 'method'",
    ),
    A(
        "e = ExceptionGroup('m', [ValueError()])\nprint('ESCAPED', e.with_traceback(print))",
        "TypeError",
        "__traceback__ must be a traceback or None",
    ),
    A(
        "try:\n"
        "    (1).nope\n"
        "except AttributeError as e:\n"
        "    g = ExceptionGroup('m', [e])\n"
        "    print('ESCAPED', getattr(g.exceptions[0], 'obj'))",
        "L4-runtime-guard",
        "attribute 'obj' is not allowed",
    ),
    A(
        "try:\n"
        "    (1).nope\n"
        "except AttributeError as e:\n"
        "    g = ExceptionGroup('m', [e])\n"
        "    print('ESCAPED', '{0.exceptions[0].obj}'.format(g))",
        "L4-runtime-guard",
        "attribute 'obj' is not allowed",
    ),
    A(
        "try:\n"
        "    len(dir())\n"
        "except Exception as e:\n"
        "    g = ExceptionGroup('m', [e])\n"
        "    print('ESCAPED', getattr(g.exceptions[0], '__traceback__'))",
        "L4-runtime-guard",
        "attribute '__traceback__' is not allowed",
    ),
]

# -- decimal contexts ----------------------------------------------------------------------
DECIMAL: list[Attack | Neutralised] = [
    A(
        "import decimal\nc = decimal.getcontext()\nprint('ESCAPED', getattr(c, '_clamp'))",
        "L4-runtime-guard",
        "attribute '_clamp' is not allowed",
    ),
    A(
        "import decimal\nc = decimal.getcontext()\nprint('ESCAPED', getattr(c, '__reduce__')())",
        "L4-runtime-guard",
        "attribute '__reduce__' is not allowed",
    ),
    A(
        "import decimal\nc = decimal.getcontext()\nc._clamp = 1\nprint('ESCAPED')",
        "L2-validate",
        "attribute '_clamp' is not allowed",
    ),
    A(
        "import decimal\nc = decimal.getcontext()\nsetattr(c, '_traps', 0)\nprint('ESCAPED')",
        "L4-runtime-guard",
        "attribute '_traps' is not allowed",
    ),
    A(
        "import decimal\nc = decimal.getcontext()\nc.flags[decimal.Inexact] = True\nprint('ESCAPED')",
        "L4-runtime-guard",
        "cannot modify objects of type 'SignalDict'",
    ),
    A(
        "import decimal\nc = decimal.getcontext()\nprint('ESCAPED', getattr(c.flags, '__class__').__mro__)",
        "L2-validate",
        "attribute '__mro__' is not allowed",
    ),
    A(
        "import decimal\nc = decimal.getcontext()\nprint('ESCAPED', getattr(c.flags.keys(), '_mapping'))",
        "L4-runtime-guard",
        "attribute '_mapping' is not allowed",
    ),
    A(
        "import decimal\nc = decimal.getcontext()\nprint('ESCAPED', getattr(c.flags.get, '__func__'))",
        "L4-runtime-guard",
        "attribute '__func__' is not allowed",
    ),
    A(
        "import decimal\nc = decimal.getcontext()\nprint('ESCAPED', '{0.get.__globals__}'.format(c.flags))",
        "L4-runtime-guard",
        "attribute '__globals__' is not allowed",
    ),
    A(
        "import decimal\nc = decimal.getcontext()\nprint('ESCAPED', '{0.__class__.__bases__}'.format(c.flags))",
        "L4-runtime-guard",
        "attribute '__bases__' is not allowed",
    ),
    A(
        "import decimal\n"
        "c = decimal.getcontext()\n"
        "class K:\n"
        "    def keys(self):\n"
        "        return [decimal.Inexact]\n"
        "    def __getitem__(self, k):\n"
        "        print('ESCAPED', getattr(k, '__subclasses__')())\n"
        "c.flags.update(K())",
        "L4-runtime-guard",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "import decimal\n"
        "c = decimal.getcontext()\n"
        "class K:\n"
        "    def __eq__(self, o):\n"
        "        print('ESCAPED', getattr(o, '_mapping'))\n"
        "        return False\n"
        "c.flags.items() == K()",
        "L4-runtime-guard",
        "attribute '_mapping' is not allowed",
    ),
    A(
        "import decimal\nprint('ESCAPED', decimal.Context.create_decimal(print, 1))",
        "TypeError",
        "descriptor 'create_decimal' for 'decimal.Context' objects doesn't apply to a 'method' obje",
    ),
    A(
        "import decimal\nprint('ESCAPED', decimal.Context.copy(decimal.Decimal(1)))",
        "TypeError",
        "descriptor 'copy' for 'decimal.Context' objects doesn't apply to a 'decimal.Decimal' objec",
    ),
    A(
        "import decimal\nprint('ESCAPED', getattr(decimal.Context, '__init__'))",
        "L4-runtime-guard",
        "attribute '__init__' is not allowed",
    ),
    A(
        "import decimal\nprint('ESCAPED', getattr(decimal.Context, '__subclasses__')())",
        "L4-runtime-guard",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "import decimal\nprint('ESCAPED', decimal.getcontext().create_decimal(print))",
        "TypeError",
        "conversion from method to Decimal is not supported",
    ),
    A(
        "import decimal\n"
        "class V:\n"
        "    def __index__(self):\n"
        "        return 3\n"
        "print('ESCAPED', decimal.Context(prec=V()))",
        "L2-validate",
        "name '__index__' may not be bound",
    ),
    N(
        "import decimal\n"
        "class K(dict):\n"
        "    def __getitem__(self, k):\n"
        "        print('ESCAPED', getattr(k, '__subclasses__')())\n"
        "c = decimal.Context(traps=K({s: 1 for s in decimal.getcontext().traps}))\n"
        "print(c.traps[decimal.Inexact])",
        "True\n",
    ),
    A(
        "import decimal\n"
        "class C(decimal.Context):\n"
        "    def leak(self):\n"
        "        return super().__reduce__\n"
        "print('ESCAPED', C().leak())",
        "L2-validate",
        "attribute '__reduce__' is not allowed",
    ),
    A(
        "import decimal\n"
        "class C(decimal.Context):\n"
        "    def __init__(self, p):\n"
        "        super().__init__(prec=p)\n"
        "    def leak(self):\n"
        "        return getattr(self, '_clamp')\n"
        "print('ESCAPED', C(3).leak())",
        "L4-runtime-guard",
        "attribute '_clamp' is not allowed",
    ),
    A(
        "import decimal\nclass C(decimal.Context, metaclass=type):\n    pass\nprint('ESCAPED')",
        "L2-validate",
        "class keywords (metaclass=...) are not allowed",
    ),
    A(
        "import decimal\nprint('ESCAPED', decimal.localcontext(print))",
        "TypeError",
        "optional argument must be a context",
    ),
    A(
        "import decimal\nwith decimal.localcontext() as c:\n    print('ESCAPED', getattr(c, '__exit__'))",
        "L4-runtime-guard",
        "attribute '__exit__' is not allowed",
    ),
    A(
        "import decimal\nprint('ESCAPED', decimal.setcontext(print))",
        "TypeError",
        "argument must be a context",
    ),
    A(
        "import decimal\nprint('ESCAPED', getattr(decimal, '_decimal'))",
        "L4-runtime-guard",
        "attribute '_decimal' is not allowed",
    ),
    A(
        "import decimal\nprint('ESCAPED', decimal.HAVE_THREADS, decimal.Decimal.from_float)",
        "AttributeError",
        "module 'decimal' exposes only: BasicContext, Clamped, Context, Decimal, DecimalException, ",
    ),
    A(
        "import decimal\nprint('ESCAPED', getattr(decimal.Decimal(1), '__reduce__')())",
        "L4-runtime-guard",
        "attribute '__reduce__' is not allowed",
    ),
    A(
        "import decimal\nprint('ESCAPED', getattr(decimal.DecimalException, '__subclasses__')())",
        "L4-runtime-guard",
        "attribute '__subclasses__' is not allowed",
    ),
    A(
        "import decimal\nprint('ESCAPED', '{0:{1._clamp}}'.format(decimal.Decimal(1), decimal.getcontext()))",
        "L4-runtime-guard",
        "attribute '_clamp' is not allowed",
    ),
]


# Each group of attacks, the modes it runs in, and (for the groups that import or use a
# builtin strict mode does not offer) what strict mode answers instead.
GROUPS: dict[str, tuple[list[Attack | Neutralised], tuple[Mode, ...], tuple[str, str] | None]] = {
    "operator methods a class body may define": (OPERATORS, ALL_MODES, None),
    "C and stdlib code calling operator methods": (STDLIB_OPERATORS, ALL_MODES, None),
    "stdlib modules calling operator methods": (
        STDLIB_OPERATORS_IMPORTING, IMPORT_MODES, ("L2-validate", "is not allowed in strict mode")
    ),
    "print's sep and end as str subclasses": (PRINT_SUBCLASSES, ALL_MODES, None),
    "NamedTuple class syntax": (NAMED_TUPLES, IMPORT_MODES, ("L2-validate", "import of 'typing' is not allowed")),
    "TypedDict class syntax": (TYPED_DICTS, IMPORT_MODES, ("L2-validate", "import of 'typing' is not allowed")),
    "iterating an Enum class": (ENUMS, IMPORT_MODES, ("L2-validate", "import of 'enum' is not allowed")),
    "bindable names, their stand-ins, class T(object)": (SHADOWABLE, ALL_MODES, None),
    "the new builtins": (NEW_BUILTINS, ALL_MODES, None),
    "the new builtins strict mode does not offer": (
        NEW_BUILTINS_OUTSIDE_STRICT, IMPORT_MODES, ("NameError", "is not defined")
    ),
    "exception groups": (EXCEPTION_GROUPS, ALL_MODES, None),
    "exception groups outside strict mode": (
        EXCEPTION_GROUPS_OUTSIDE_STRICT, IMPORT_MODES, ("NameError", "is not defined")
    ),
    "decimal contexts": (DECIMAL, IMPORT_MODES, ("L2-validate", "import of 'decimal' is not allowed")),
}  # fmt: skip
CASES = [
    (group, mode) for group, (_, modes, strict) in GROUPS.items() for mode in (*modes, *(["strict"] * bool(strict)))
]


@pytest.mark.parametrize(("group", "mode"), CASES, ids=[f"{g}-{m}" for g, m in CASES])
def test_every_attack_meets_its_refusal(group: str, mode: Mode) -> None:
    attacks, modes, strict = GROUPS[group]
    if mode in modes:
        run_attacks(attacks, mode)
    else:  # strict mode refuses the import (or has no such builtin) before the attack runs
        assert strict is not None
        run_attacks(in_strict(attacks, *strict), "strict")


@pytest.mark.parametrize("mode", ALL_MODES)
def test_str_subclasses_in_print_do_not_lift_the_output_cap(mode: Mode) -> None:
    """A ``str`` subclass that answers a short ``encode`` (through ``sep``'s ``join`` or
    ``end``'s ``__radd__``) makes the run's buffer undercount; the host's cap holds."""
    code = (
        "class T(str):\n    def encode(self, *a):\n        return b''\n"
        "class S(str):\n    def __radd__(self, o):\n        return T(o + '\\n')\n"
        "    def join(self, it):\n        return T('q' * 5000)\n"
        "for i in range(20):\n    print('x' * 5000, end=S(''))\n    print('a', sep=S(' '))\n"
    )
    result = execute(code, SandboxConfig(timeout_seconds=10, security_mode=mode, max_output_bytes=4096))
    assert result.success, result.error
    assert len(result.stdout.encode()) <= 4096
    assert result.output_truncated


# -- rebinding the names the guards look for (super, and the bindable builtins) ---------
# `super().__add__` passes layer 2 only as that spelling; at run time the guard accepts the
# special name only on the sandbox's own super proxy, whatever the name `super` holds.
SHADOWED_GUARD_NAMES: list[Attack | Neutralised] = [
    A(
        "super = lambda: print\nprint('ESCAPED', super().__add__)",
        "L4-runtime-guard",
        "attribute '__add__' is not allowed",
    ),
    A(
        "def f(super):\n    return super().__radd__\nprint('ESCAPED', f(lambda: print))",
        "L4-runtime-guard",
        "attribute '__radd__' is not allowed",
    ),
    A(
        "class V(int):\n    def __add__(self, super):\n        return super().__add__\n"
        "print('ESCAPED', V(1) + (lambda: print))",
        "L4-runtime-guard",
        "attribute '__add__' is not allowed",
    ),
    A(
        "dir = type\nprint('ESCAPED', getattr(dir(print), '__init__'))",
        "L4-runtime-guard",
        "attribute '__init__' is not allowed",
    ),
    A(
        "input = getattr\nprint('ESCAPED', input(print, '__self__'))",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
    A(
        "vars = lambda o: getattr(o, '__dict__')\nprint('ESCAPED', vars(print))",
        "L4-runtime-guard",
        "not allowed in a lambda (it is a method of a host object)",
    ),
    A(
        "class C:\n    help = getattr\nprint('ESCAPED', C().help(print, '__self__'))",
        "L4-runtime-guard",
        "attribute '__self__' is not allowed",
    ),
]
SHADOWED_IN_NAMED_TUPLES: list[Attack | Neutralised] = [
    A(
        "from typing import NamedTuple\nclass Row(NamedTuple):\n    x: int\n    def __add__(self, super):\n"
        "        return super().__add__\nprint('ESCAPED', Row(1) + (lambda: print))",
        "L4-runtime-guard",
        "attribute '__add__' is not allowed",
    ),
    A(
        "from typing import NamedTuple\nclass Row(NamedTuple):\n    obj: int\n    mro: int\n    gi_frame: int\n"
        "r = Row(1, 2, 3)\nmatch r:\n    case Row(a, b, c):\n        print(a, b, c)\n"
        "print('ESCAPED', getattr(r, 'obj'))",
        "L4-runtime-guard",
        "attribute 'obj' is not allowed",
    ),
]


@pytest.mark.parametrize("mode", ALL_MODES)
def test_shadowed_guard_names(mode: Mode) -> None:
    run_attacks(SHADOWED_GUARD_NAMES, mode)


@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_shadowed_names_in_named_tuples(mode: Mode) -> None:
    run_attacks(SHADOWED_IN_NAMED_TUPLES, mode)


# -- resources: work these features make cheap -----------------------------------------
# A run's own timeout and memory limit bound them; nothing is computed on the host (a
# validation-time check with a deep annotation is refused as too complex, before any work).
RESOURCES_IMPORTING: list[Attack | Neutralised] = [
    A(
        "import decimal\n"
        "c = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)\n"
        "decimal.setcontext(c)\n"
        "x = decimal.Decimal(1) / decimal.Decimal(3)\n"
        "print('ESCAPED', len(str(x)))",
        "L6-limits",
        "memory limit exceeded",
    ),
    A(
        "import decimal\n"
        "c = decimal.Context(prec=decimal.MAX_PREC)\n"
        "x = c.power(decimal.Decimal(7), decimal.Decimal(10) ** 15)\n"
        "print('ESCAPED', len(str(x)))",
        "Overflow",
        "decimal.Overflow",
    ),
]
RESOURCES_BUILTINS: list[Attack | Neutralised] = [
    A("x = bytes(10 ** 12)\nprint('ESCAPED', len(x))", "L6-limits", "memory limit exceeded"),
    A("print('ESCAPED', len(format(1.5, '.999999999f')))", "L6-limits", "memory limit exceeded"),
]
DEEP_ANNOTATIONS: list[Attack | Neutralised] = [
    A(
        "from typing import NamedTuple\nclass R(NamedTuple):\n    x: " + "+".join(["a"] * 30000) + "\nprint('ESCAPED')",
        "L1-validate",
        "code too complex to parse",
    ),
    A("class R:\n    x: " + " if a else ".join(["a"] * 3000) + "\nprint('ESCAPED')", "L1-validate", "too complex"),
    A("class R:\n    x: " + "[" * 150 + "]" * 150 + "\nprint('ESCAPED')", "L1-validate", "brackets nested 150 deep"),
]


@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_resources(mode: Mode) -> None:
    run_attacks([*RESOURCES_IMPORTING, *RESOURCES_BUILTINS], mode)


def test_resources_in_strict_mode() -> None:
    run_attacks(in_strict(RESOURCES_IMPORTING, "L2-validate", "import of 'decimal' is not allowed"), "strict")
    run_attacks(in_strict(RESOURCES_BUILTINS, "NameError", "is not defined"), "strict")


@pytest.mark.parametrize("mode", ALL_MODES)
def test_deep_annotations_are_refused_before_any_work(mode: Mode) -> None:
    run_attacks(DEEP_ANNOTATIONS, mode)


# -- ESCAPE 1: a RecursionError inside the capture check leaves the name bound ----------

# The program recurses to the stack's end; on the way back, each level binds `x` through a
# construct the interpreter binds before the check, and catches the RecursionError the
# check's call raises near the limit. `got` collects what `x` held then.
_DEEP = """
got = []
def deeper():
    try:
        deeper()
    except RecursionError:
        pass
    try:
{statement}
    except RecursionError:
        try:
            got.append(x)
        except Exception:
            pass
    except Exception:
        pass
deeper()
"""
CAPTURE_ROUTES: dict[str, str] = {
    "with target": "        with leak_cm as x:\n            pass",
    "match capture": "        match leak:\n            case [x]:\n                pass",
    "decorated def": "        @leak_deco\n        def x():\n            pass",
    "decorated class": "        @leak_deco\n        class x:\n            pass",
}


def _run_planted(code: str, leaked: object, mode: Mode) -> dict[str, Any]:
    """The program's scope after it ran (``leak``: a list holding ``leaked``; ``leak_cm``:
    a host context manager whose ``__enter__`` returns it)."""
    planted = {"leak": [leaked], "leak_cm": _HostContext(leaked), "leak_deco": lambda _defined: leaked}
    scope = dict(reachability.sandbox_globals(mode, planted))
    exec(compile_restricted(code, filename="<sandbox>", mode="exec", policy=SandboxTransformer), scope)
    return scope


@pytest.mark.parametrize("mode", ALL_MODES)
@pytest.mark.parametrize("kind", sorted(FORBIDDEN))
@pytest.mark.parametrize("route", sorted(CAPTURE_ROUTES))
def test_escape_recursion_error_in_the_capture_check_keeps_the_raw_value(route: str, kind: str, mode: Mode) -> None:
    """Found as an escape (now closed). ``_capture_`` (guards.guarded_capture) rebinds the name only
    when the check raises ``SandboxViolation``; a ``RecursionError`` raised by the call to
    the check itself (the interpreter has one or two frames left: enough to bind the name
    and for ``__enter__``, not for ``_capture_`` -> ``_admit_passed`` -> ``admit`` ->
    ``refusal``) propagates with the name still holding the raw object, and the program's
    ``except RecursionError`` reads it. Every forbidden kind (host function, class, module,
    frame, code object, descriptor) is delivered this way, in every mode.

    The fix: never let the interpreter bind a name the program can spell before the
    check. Compile ``with cm as x`` and ``case [x]`` to bind a hidden name (``_bound_N``)
    and then ``x = _capture_(_bound_N)`` followed by ``del _bound_N`` in a ``finally``, so
    a failure of any kind in the check leaves ``x`` unbound (or as it was); failing that,
    have ``_capture_`` catch ``BaseException`` (not only ``SandboxViolation``), though that
    alone cannot help when the call to ``_capture_`` itself cannot be made. A decorated
    ``def``/``class`` (the interpreter binds the decorator's result to the name the program
    spelled) had the same hole; there a failed check now deletes the name again."""
    leaked = FORBIDDEN[kind]
    scope = _run_planted(_DEEP.format(statement=CAPTURE_ROUTES[route]), leaked, mode)
    held = [x for x in scope["got"] if x is leaked]
    assert not held, f"{route}: the program held the {kind} after catching RecursionError"
    assert all(reachability.classify(x) is None for x in scope["got"])


# -- ESCAPE 2: decimal's module-wide contexts are writable ------------------------------

# Each writes the module's shared template in one of the ways the guards allow (an
# attribute through `_write_`, `setattr`, a mutating C method), catching a refusal, then
# reads what a fresh `decimal.Context()` starts from: CPython's defaults when safe.
SHARED_CONTEXT_WRITES: dict[str, str] = {
    "attribute": "decimal.DefaultContext.prec = 3",
    "setattr": "setattr(decimal.DefaultContext, 'rounding', decimal.ROUND_DOWN)",
    "clear_traps": "decimal.DefaultContext.clear_traps()",
}
_AFTER = (
    "c = decimal.Context()\n"
    "print(c.prec, c.rounding, c.traps[decimal.DivisionByZero])\n"
    "print(decimal.BasicContext.prec, decimal.ExtendedContext.Emax)"
)


@pytest.mark.parametrize("mode", IMPORT_MODES)
@pytest.mark.parametrize("how", sorted(SHARED_CONTEXT_WRITES))
def test_escape_decimal_module_contexts_are_not_the_programs_to_change(how: str, mode: Mode) -> None:
    """Found as an escape (now closed). ``decimal.DefaultContext``, ``BasicContext`` and
    ``ExtendedContext`` (offered since ``decimal`` was widened) are the real module's
    objects; the write guard admits every ``decimal.Context`` (``guards._PLAIN_WRITABLE``)
    and their mutating methods need no write guard, so a program rewrites the template
    ``decimal.Context()`` copies for all the code of the run and for every later cell of
    its session (``BasicContext.prec = 2``, ``ExtendedContext.Emax = 5`` likewise).

    The fix: offer the three as fresh copies made per read by the
    module proxy, or refuse them as values of the proxy and the write guard (admit as
    writable only contexts made by ``Context()``, ``getcontext()``, ``localcontext()``
    and ``copy()``, never the module's templates)."""
    code = (
        "import decimal\n"
        f"try:\n    {SHARED_CONTEXT_WRITES[how]}\n"
        "    decimal.BasicContext.prec = 2\n"
        "    decimal.ExtendedContext.Emax = 5\n"
        "except Exception:\n    pass\n" + _AFTER
    )
    result = execute(code, cfg(mode))
    assert result.success, result.error
    assert result.stdout == "28 ROUND_HALF_EVEN True\n9 999999\n", (
        f"{how}: the shared template changed: {result.stdout!r}"
    )


@pytest.mark.parametrize("mode", IMPORT_MODES)
def test_a_runs_own_decimal_context_stays_configurable(mode: Mode) -> None:
    """What the fixes must keep: the context of the run is the program's to configure."""
    code = (
        "import decimal\n"
        "decimal.getcontext().prec = 5\n"
        "with decimal.localcontext() as ctx:\n    ctx.prec = 3\n    print(decimal.Decimal(1) / decimal.Decimal(7))\n"
        "c = decimal.Context(prec=4)\n"
        "print(decimal.Decimal(1) / decimal.Decimal(7), c.divide(1, 7))"
    )
    result = execute(code, cfg(mode))
    assert result.success, result.error
    assert result.stdout == "0.143\n0.14286 0.1429\n"
