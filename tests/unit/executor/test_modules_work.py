"""Every allowed module works inside the hardened run, not just imports: each cell calls
the documented functions of one module (in one session per mode, so the lazily loaded
parts must have been loaded before hardening, when the zygote built the proxies).

Also: the per-cell limit is the cell's own wall clock; the run's CPU limit is a budget
for the whole session.
"""

from __future__ import annotations

import pytest
from terminai_apts.executor import ExecutorSession, SandboxConfig
from terminai_apts.executor.policy import MODES, Mode, modules_for

# module -> (program, expected stdout)
HIGH_PROGRAMS: dict[str, tuple[str, str]] = {
    "datetime": (
        "from datetime import datetime, date, timedelta, timezone\n"
        "d = datetime.strptime('2025-12-05 14:30', '%Y-%m-%d %H:%M')\n"
        "print(d.isoformat(), d.strftime('%a %d %b %Y'), (d + timedelta(days=30)).date())\n"
        "print(date.fromisoformat('2026-01-04').weekday(), datetime(2026, 1, 1, tzinfo=timezone.utc).isoformat())\n"
        "print(datetime.fromisoformat('2026-01-04T10:00:00+00:00').year,"
        " (date(2026, 1, 4) - date(2025, 12, 5)).days)\n",
        "2025-12-05T14:30:00 Fri 05 Dec 2025 2026-01-04\n6 2026-01-01T00:00:00+00:00\n2026 30\n",
    ),
    "re": (
        "import re\n"
        "pat = re.compile(r'(?P<key>[A-Z]+)-(\\d+)', re.IGNORECASE)\n"
        "m = pat.search('see proj-1234 and OPS-7')\n"
        "print(m.group('key'), m.group(2), m.span(), pat.findall('a-1 b-2'), re.sub(r'\\s+', ' ', 'a  b\\n c'))\n"
        "print(re.split(r'[,;]', 'a,b;c'), [x.group(0) for x in re.finditer(r'\\d+', 'x1y22')],"
        " bool(re.fullmatch(r'\\w+', 'abc')), re.escape('a.b'))\n",
        "proj 1234 (4, 13) [('a', '1'), ('b', '2')] a b c\n['a', 'b', 'c'] ['1', '22'] True a\\.b\n",
    ),
    "json": (
        "import json\n"
        "s = json.dumps({'b': [1, 2.5, None, True], 'a': 'é'}, sort_keys=True, indent=None)\n"
        "print(s, json.loads(s)['b'][1], json.dumps('é', ensure_ascii=False))\n"
        "try:\n    json.loads('{bad')\nexcept json.JSONDecodeError as e:\n    print('bad json at', e.pos)\n",
        '{"a": "\\u00e9", "b": [1, 2.5, null, true]} 2.5 "é"\nbad json at 1\n',
    ),
    "statistics": (
        "import statistics as st\n"
        "xs = [2, 4, 4, 4, 5, 5, 7, 9]\n"
        "print(st.mean(xs), st.median(xs), st.mode(xs), round(st.pstdev(xs), 3), round(st.stdev(xs), 3))\n"
        "print(st.quantiles(xs, n=4), st.multimode([1, 1, 2, 2]), round(st.fmean(xs), 2), st.median_low(xs))\n",
        "5 4.5 4 2.0 2.138\n[4.0, 4.5, 6.5] [1, 2] 5.0 4\n",
    ),
    "collections": (
        "from collections import Counter, defaultdict, OrderedDict, deque, namedtuple\n"
        "c = Counter('abracadabra')\nd = defaultdict(list)\nd['x'].append(1)\n"
        "q = deque([1, 2, 3], maxlen=3)\nq.append(4)\nP = namedtuple('P', 'x y')\np = P(1, y=2)\n"
        "o = OrderedDict(a=1)\no['b'] = 2\no.move_to_end('a')\n"
        "print(c.most_common(2), dict(d), list(q), p.x + p.y, tuple(p), list(o))\n",
        "[('a', 5), ('b', 2)] {'x': [1]} [2, 3, 4] 3 (1, 2) ['b', 'a']\n",
    ),
    "decimal": (
        "from decimal import Decimal, ROUND_HALF_UP, localcontext, getcontext\n"
        "x = Decimal('1.005').quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)\n"
        "with localcontext() as ctx:\n    ctx.prec = 5\n    y = Decimal(1) / Decimal(7)\n"
        "print(x, y, Decimal('0.1') + Decimal('0.2'), getcontext().prec)\n",
        "1.01 0.14286 0.3 28\n",
    ),
    "fractions": (
        "from fractions import Fraction\n"
        "f = Fraction(3, 4) + Fraction(1, 6)\n"
        "print(f, f.numerator, float(f), Fraction('0.25'), Fraction.from_float(0.5), f.limit_denominator(5))\n",
        "11/12 11 0.9166666666666666 1/4 1/2 1\n",
    ),
    "itertools": (
        "import itertools as it\n"
        "print(list(it.islice(it.count(5), 3)), list(it.chain([1], [2])), list(it.combinations('abc', 2))[:2],"
        " [(k, len(list(g))) for k, g in it.groupby('aabbb')], list(it.accumulate([1, 2, 3])),"
        " list(it.pairwise([1, 2, 3])), list(it.zip_longest([1], [2, 3], fillvalue=0)),"
        " len(list(it.product('ab', repeat=2))), list(it.takewhile(lambda x: x < 3, [1, 2, 5])))\n",
        "[5, 6, 7] [1, 2] [('a', 'b'), ('a', 'c')] [('a', 2), ('b', 3)] [1, 3, 6] [(1, 2), (2, 3)]"
        " [(1, 2), (0, 3)] 4 [1, 2]\n",
    ),
    "heapq": (
        "import heapq\nh = []\nfor x in [5, 1, 4]:\n    heapq.heappush(h, x)\n"
        "print(heapq.heappop(h), heapq.nlargest(2, [3, 9, 1]), heapq.nsmallest(1, [3, 9, 1]),"
        " list(heapq.merge([1, 4], [2, 3])))\n",
        "1 [9, 3] [1] [1, 2, 3, 4]\n",
    ),
    "bisect": (
        "import bisect\nxs = [1, 3, 5]\nbisect.insort(xs, 4)\n"
        "print(xs, bisect.bisect_left(xs, 3), bisect.bisect_right(xs, 3), bisect.bisect(xs, 10))\n",
        "[1, 3, 4, 5] 1 2 4\n",
    ),
    "random": (
        "import random\nrandom.seed(7)\na = [random.random() for _ in range(3)]\nrandom.seed(7)\n"
        "b = [random.random() for _ in range(3)]\nxs = list(range(10))\nrandom.shuffle(xs)\n"
        "print(a == b, 1 <= random.randint(1, 6) <= 6, random.choice('abc') in 'abc', sorted(xs) == list(range(10)),"
        " len(random.sample(xs, 3)), len(random.choices('ab', k=5)), 0 <= random.uniform(0, 1) <= 1,"
        " isinstance(random.gauss(0, 1), float), random.randrange(0, 10, 5) in (0, 5))\n",
        "True True True True 3 5 True True True\n",
    ),
    "textwrap": (
        "import textwrap\nprint(textwrap.shorten('a long line of words here', width=12), textwrap.wrap('aa bb cc', 5),"
        " repr(textwrap.dedent('  x\\n  y')), repr(textwrap.indent('x', '> ')), len(textwrap.fill('w ' * 20, 10)))\n",
        "a long [...] ['aa bb', 'cc'] 'x\\ny' '> x' 39\n",
    ),
    "hashlib": (
        "import hashlib\nprint(hashlib.sha256(b'abc').hexdigest()[:16], hashlib.md5(b'').hexdigest()[:8],"
        " hashlib.sha1(b'x').hexdigest()[:8], len(hashlib.sha512(b'x').digest()),"
        " hashlib.blake2b(b'x', digest_size=8).hexdigest())\n",
        "ba7816bf8f01cfea d41d8cd9 11f6ad8e 64 4adf4367f96e584f\n",
    ),
    "calendar": (
        "import calendar\nprint(calendar.isleap(2024), calendar.monthrange(2026, 2), calendar.weekday(2026, 1, 4),"
        " calendar.leapdays(2000, 2025), calendar.month_name[3], calendar.day_abbr[0],"
        " calendar.monthcalendar(2026, 2)[0])\n",
        "True (6, 28) 6 7 March Mon [0, 0, 0, 0, 0, 0, 1]\n",
    ),
    "functools": (
        "import functools\nfrom functools import lru_cache, partial, reduce, cmp_to_key, wraps\n"
        "@lru_cache(maxsize=None)\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n"
        "@functools.cache\ndef sq(n):\n    return n * n\n"
        "def logged(fn):\n    @wraps(fn)\n    def inner(*a):\n        return fn(*a)\n    return inner\n"
        "@logged\ndef add(a, b):\n    return a + b\n"
        "print(fib(40), fib.cache_info().hits, sq(4), reduce(lambda a, b: a * b, [1, 2, 3, 4]),"
        " partial(int, base=2)('101'), sorted([3, 1, 2], key=cmp_to_key(lambda a, b: b - a)), add(1, 2))\n",
        "102334155 38 16 24 5 [3, 2, 1] 3\n",
    ),
    "operator": (
        "import operator\nfrom operator import itemgetter, attrgetter, methodcaller\n"
        "rows = [('b', 2), ('a', 3)]\nclass P:\n    def __init__(self, n):\n        self.n = n\n"
        "print(sorted(rows, key=itemgetter(0)), max(rows, key=itemgetter(1)), [attrgetter('n')(P(4))],"
        " methodcaller('upper')('x'), operator.add(1, 2), operator.mul(3, 4), operator.getitem([5], 0))\n",
        "[('a', 3), ('b', 2)] ('a', 3) [4] X 3 12 5\n",
    ),
    "string": (
        "import string\nfrom string import Template\n"
        "print(string.ascii_lowercase[:5], string.digits, string.capwords('hello big world'),"
        " Template('$who likes $what').substitute(who='tim', what='kung pao'), len(string.punctuation))\n",
        "abcde 0123456789 Hello Big World tim likes kung pao 32\n",
    ),
    "csv": (
        "import csv, io\nbuf = io.StringIO()\nw = csv.writer(buf)\nw.writerow(['id', 'title'])\n"
        "w.writerow([1, 'a, b'])\nd = csv.DictWriter(buf, fieldnames=['x', 'y'])\nd.writeheader()\n"
        "d.writerow({'x': 1, 'y': 'q'})\nprint(repr(buf.getvalue()))\n"
        "rows = list(csv.DictReader(io.StringIO('a,b\\n1,2\\n3,4\\n')))\n"
        "print(rows, list(csv.reader(['x;y'], delimiter=';')), csv.QUOTE_ALL)\n",
        "'id,title\\r\\n1,\"a, b\"\\r\\nx,y\\r\\n1,q\\r\\n'\n"
        "[{'a': '1', 'b': '2'}, {'a': '3', 'b': '4'}] [['x', 'y']] 1\n",
    ),
    "io": (
        "from io import StringIO, BytesIO\ns = StringIO()\ns.write('a')\nprint('b', end='')\n"
        "s.write('c')\nb = BytesIO(b'xyz')\nb.seek(1)\nprint(s.getvalue(), b.read(), b.getvalue())\n"
        "try:\n    b.getbuffer()\nexcept Exception:\n    print('no buffer')\n",
        "bac b'yz' b'xyz'\nno buffer\n",
    ),
    "time": (
        "import time\nt0 = time.perf_counter()\ntime.sleep(0.01)\n"
        "print(time.perf_counter() - t0 >= 0.009, time.time() > 1.7e9, time.strftime('%Y', time.gmtime(0)),"
        " time.monotonic() > 0, time.gmtime(86400).tm_mday, isinstance(time.time_ns(), int))\n",
        "True True 1970 True 2 True\n",
    ),
    "typing": (
        "from __future__ import annotations\nfrom typing import Any, Dict, List, Optional, NamedTuple, cast\n"
        "import typing\nRow = Dict[str, Optional[int]]\nPoint = NamedTuple('Point', [('x', int), ('y', int)])\n"
        "def total(xs: List[int], scale: Optional[float] = None) -> float:\n    return sum(xs) * (scale or 1)\n"
        "print(total([1, 2]), Point(1, 2).y, cast(int, '3'), typing.TYPE_CHECKING, Row is not None)\n",
        "3 2 3 False True\n",
    ),
    "dataclasses": (
        "from dataclasses import dataclass, field, asdict, astuple, replace, fields, is_dataclass\n"
        "import dataclasses\n"
        "@dataclass(order=True)\nclass Item:\n    score: float\n    title: str = ''\n"
        "    tags: list[str] = field(default_factory=list)\n"
        "    def __post_init__(self):\n        self.title = self.title.strip()\n"
        "@dataclass(frozen=True)\nclass Key:\n    name: str\n"
        "a = Item(2.5, ' gpu ', ['x'])\nprint(a, asdict(a), astuple(Key('k')), [f.name for f in fields(a)])\n"
        "print(replace(a, score=1.0) < a, is_dataclass(a), Key('k') == Key('k'), len({Key('k'), Key('k')}))\n"
        "try:\n    Key('k').name = 'z'\nexcept dataclasses.FrozenInstanceError:\n    print('frozen')\n",
        "Item(score=2.5, title='gpu', tags=['x']) {'score': 2.5, 'title': 'gpu', 'tags': ['x']} ('k',)"
        " ['score', 'title', 'tags']\nTrue True True 1\nfrozen\n",
    ),
    "enum": (
        "from enum import Enum, IntEnum, auto\n"
        "class Status(Enum):\n    OPEN = 'open'\n    DONE = 'done'\n    def label(self):\n"
        "        return self.value.upper()\n"
        "class Priority(IntEnum):\n    LOW = auto()\n    HIGH = auto()\n"
        "print(Status.OPEN, Status('done').name, Status.DONE.label(), Status.OPEN == Status.OPEN,"
        " Priority.HIGH > Priority.LOW, Priority.HIGH.value, repr(Status.OPEN), Priority(1) is Priority.LOW,"
        " Status['DONE'] is Status.DONE)\n",
        "Status.OPEN DONE DONE True True 2 <Status.OPEN: 'open'> True True\n",
    ),
    "abc": (
        "from abc import ABC, abstractmethod\n"
        "class Shape(ABC):\n    @abstractmethod\n    def area(self):\n        ...\n"
        "class Sq(Shape):\n    def __init__(self, s):\n        self.s = s\n    def area(self):\n"
        "        return self.s ** 2\n"
        "print(Sq(3).area(), isinstance(Sq(1), Shape))\n",
        "9 True\n",
    ),
    "copy": (
        "import copy\na = {'k': [1, 2]}\nb = copy.copy(a)\nc = copy.deepcopy(a)\na['k'].append(3)\n"
        "class P:\n    def __init__(self):\n        self.xs = [1]\np = P()\nq = copy.deepcopy(p)\nq.xs.append(2)\n"
        "print(b, c, p.xs, q.xs)\n",
        "{'k': [1, 2, 3]} {'k': [1, 2]} [1] [1, 2]\n",
    ),
    "pprint": (
        "import pprint\nfrom pprint import pformat\n"
        "pprint.pprint({'b': list(range(3)), 'a': {'x': 1}})\nprint(pformat([1, 2], width=3))\n",
        "{'a': {'x': 1}, 'b': [0, 1, 2]}\n[1,\n 2]\n",
    ),
    "logging": (
        "import logging\nlog = logging.getLogger('agent')\nlog.info('hidden')\nlog.warning('shown %d', 1)\n"
        "logging.basicConfig(level=logging.DEBUG, format='%(levelname)s %(message)s')\n"
        "logging.debug('now %s', 'visible')\nlog.error('bad')\n",
        "WARNING:agent:shown 1\nDEBUG now visible\nERROR bad\n",
    ),
    "warnings": (
        "import warnings\nwarnings.warn('old API', DeprecationWarning)\n"
        "with warnings.catch_warnings():\n    warnings.simplefilter('ignore')\n    warnings.warn('quiet')\n"
        "warnings.warn('loud')\nwarnings.filterwarnings('ignore')\nwarnings.warn('quiet')\nprint('done')\n",
        "DeprecationWarning: old API\nUserWarning: loud\ndone\n",
    ),
    "math": (
        "import math\n"
        "print(math.sqrt(16), math.floor(2.7), math.ceil(2.1), round(math.log(math.e), 6), math.gcd(12, 18),"
        " math.isclose(0.1 + 0.2, 0.3), math.comb(5, 2), round(math.pi, 4), math.fsum([0.1] * 10), math.inf > 1e308)\n",
        "4.0 2 3 1.0 6 True 10 3.1416 1.0 True\n",
    ),
}

STANDARD_PROGRAMS: dict[str, tuple[str, str]] = {
    "difflib": (
        "import difflib\nprint(round(difflib.SequenceMatcher(None, 'abcd', 'abed').ratio(), 2),"
        " difflib.get_close_matches('appel', ['apple', 'peach']),"
        " list(difflib.unified_diff(['a'], ['b'], lineterm=''))[2:], list(difflib.ndiff(['a'], ['a'])))\n",
        "0.75 ['apple'] ['@@ -1 +1 @@', '-a', '+b'] ['  a']\n",
    ),
    "unicodedata": (
        "import unicodedata as u\nprint(u.normalize('NFC', 'e\\u0301') == '\\u00e9', u.category('A'), u.name('é'),"
        " u.lookup('LATIN SMALL LETTER A'), u.numeric('½'), u.decimal('7'))\n",
        "True Lu LATIN SMALL LETTER E WITH ACUTE a 0.5 7\n",
    ),
    "base64": (
        "import base64\nprint(base64.b64encode(b'hi'), base64.b64decode('aGk='),"
        " base64.urlsafe_b64encode(b'\\xff\\xfe'),"
        " base64.b16encode(b'a'), base64.b32decode(base64.b32encode(b'ok')))\n",
        "b'aGk=' b'hi' b'__4=' b'61' b'ok'\n",
    ),
    "html": (
        "import html\nprint(html.escape('<a href=\"x\">'), html.unescape('&lt;&amp;&gt;'))\n",
        "&lt;a href=&quot;x&quot;&gt; <&>\n",
    ),
    "zlib": (
        "import zlib\nz = zlib.compress(b'abc' * 100)\n"
        "print(len(z) < 100, zlib.decompress(z)[:6], zlib.crc32(b'abc'), zlib.adler32(b'abc'))\n",
        "True b'abcabc' 891568578 38600999\n",
    ),
    "uuid": (
        "import uuid\nu = uuid.uuid5(uuid.NAMESPACE_DNS, 'example.org')\nr = uuid.uuid4()\n"
        "print(str(u), u.version, r.version, str(uuid.UUID(str(u))) == str(u), len(r.hex))\n",
        "aad03681-8b63-5304-89e0-8ca8f49461b5 5 4 True 32\n",
    ),
}

# Codecs through str.encode / bytes.decode: no module, so every mode (strict included).
CODECS = (
    "text = 'café – naïve €'\nout = []\n"
    "for enc in ('utf-8', 'utf-16', 'latin-1', 'cp1252', 'ascii', 'utf-8-sig', 'iso-8859-15', 'cp437'):\n"
    "    data = text.encode(enc, errors='replace')\n"
    "    out.append(enc + ':' + str(len(data)) + ':' + data.decode(enc, errors='replace')[:4])\n"
    "print(out)\nprint(b'caf\\xe9'.decode('latin-1'), b'\\x80'.decode('cp1252'), 'x'.encode('ascii'),"
    " b'\\xff'.decode('utf-8', 'replace'), 'é'.encode('utf-8').hex())\n"
)
CODECS_OUT = (
    "['utf-8:20:café', 'utf-16:30:café', 'latin-1:14:café', 'cp1252:14:café', 'ascii:14:caf?',"
    " 'utf-8-sig:23:café', 'iso-8859-15:14:café', 'cp437:14:café']\n"
    "café € b'x' \ufffd c3a9\n"
)


def _programs(mode: Mode) -> dict[str, tuple[str, str]]:
    if mode == "strict":
        return {}
    found = dict(HIGH_PROGRAMS)
    if mode == "standard":
        found.update(STANDARD_PROGRAMS)
    return found


def test_every_allowed_module_has_a_program() -> None:
    assert set(_programs("high")) == set(modules_for("high"))
    assert set(_programs("standard")) == set(modules_for("standard"))


@pytest.mark.parametrize("mode", MODES)
def test_allowed_modules_work_in_the_hardened_run(mode: Mode) -> None:
    failures: list[str] = []
    with ExecutorSession(SandboxConfig(timeout_seconds=10, security_mode=mode)) as session:
        for name, (code, expected) in {**_programs(mode), "codecs": (CODECS, CODECS_OUT)}.items():
            result = session.run(code)
            if not result.success or result.stdout != expected:
                failures.append(f"{name}: {result.error or ''}\n  got      {result.stdout!r}\n  expected {expected!r}")
    assert not failures, "\n".join(failures)


_BURN = "x = sum(i * i for i in range(6_000_000))\nprint(x > 0)"  # about 0.3 s of CPU


def test_the_cpu_limit_of_a_session_is_a_budget_not_per_cell() -> None:
    """Under a 3 s cell limit, fourteen 0.3 s cells used to be killed (RLIMIT_CPU was the
    cell limit, counted over the whole session: SIGKILL at 4 s)."""
    with ExecutorSession(SandboxConfig(timeout_seconds=3, security_mode="high")) as session:
        results = [session.run(_BURN) for _ in range(14)]
    assert [r.success for r in results] == [True] * 14, [r.error for r in results]


def test_a_cell_is_still_bounded_by_its_own_deadline_and_the_session_by_its_budget() -> None:
    with ExecutorSession(SandboxConfig(timeout_seconds=2, security_mode="high")) as session:
        assert session.run(_BURN).success
        late = session.run("while True:\n    pass")
    assert late.timed_out and not late.success
    with ExecutorSession(SandboxConfig(timeout_seconds=5, cpu_seconds=1, security_mode="high")) as session:
        # RLIMIT_CPU: SIGXCPU at 1 s, SIGKILL at 2 s. Cells until one is stopped: on a fast
        # core a burn takes well under 0.3 s, and nine of them stayed under the budget.
        results = []
        for _ in range(40):
            results.append(session.run(_BURN))
            if not results[-1].success:
                break
    assert results[0].success
    assert any(r.timed_out and "CPU" in (r.error or "") for r in results), [r.error for r in results]


def test_the_repl_does_not_kill_the_ninth_ordinary_cell() -> None:
    """`terminai-apts repl --json` as a process: fourteen 0.3 s cells (4.2 s of CPU in all)
    under a 3 s cell limit (a limit counted over the session would kill the eleventh); each
    cell has ten times its CPU as wall time, so a loaded machine does not time it out."""
    import json
    import subprocess
    import sys

    cells = "".join(json.dumps({"code": _BURN}) + "\n" for _ in range(14))
    done = subprocess.run(
        [sys.executable, "-m", "terminai_apts.cli", "repl", "--json", "--timeout", "3"],
        input=cells,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and len(results) == 14, done.stderr[-2000:]
    assert all(r["success"] for r in results), [r["error"] for r in results]
