"""Matching for ``grep`` and ``find``: RE2 in linear time, Python ``re`` only where RE2 cannot.

RE2 (``google-re2``) never backtracks, so ``(-|--)+>`` or ``(.|\\s|\\w)*Q`` cost time in
proportion to the text. Patterns that need backtracking (back-references such as ``(a)\\1``,
look-around such as ``foo(?=bar)``) fall back to ``re``, which can run for hours on one
record and cannot be interrupted by another thread. For those, :func:`hard_limit` arms a
kernel interval timer: ``re``'s matching loop checks for signals every few thousand steps,
so the ``SIGALRM`` handler's exception aborts the match at the deadline (main thread only,
since only it runs Python signal handlers).

Both engines match case-insensitively. RE2 folds case by Unicode simple folding (``ſ`` is
``s``, the Kelvin sign is ``k``) and its ``\\w``, ``\\d``, ``\\s`` and ``\\b`` are ASCII;
``\\pL``, ``\\p{Greek}`` and ``[[:alpha:]]`` name Unicode classes.
"""

from __future__ import annotations

import importlib
import re
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import re2  # type: ignore[import-untyped]  # no stubs published

from terminai_apts.errors import MemoryQueryError
from terminai_apts.memory import inputs

_RE2 = re2.Options()
_RE2.case_sensitive = False
_RE2.log_errors = False  # RE2 reports errors by exception; its own log would go to stderr
_LITERAL = re2.Options()
_LITERAL.case_sensitive = False
_LITERAL.log_errors = False
_LITERAL.literal = True


_UNANCHORED = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)


class RegexTimeout(Exception):
    """A fallback (``re``) match ran past its deadline and was aborted."""


class Matcher:
    """A compiled pattern: ``search(text)`` gives the ``(start, end)`` of the first match or None."""

    __slots__ = ("_raw", "_re", "_re2", "_state", "engine")

    def __init__(self, compiled_re2: Any = None, compiled_re: re.Pattern[str] | None = None, engine: str = "") -> None:
        self._re2 = compiled_re2
        # The wrapper's search() maps offsets through Python code (about 10 us a call, 6x
        # re's); the compiled RE2 object it wraps answers byte spans in about 1.5 us.
        self._raw = getattr(compiled_re2, "_regexp", None) if _UNANCHORED is not None else None
        self._re = compiled_re
        self._state: _Alarm | None = None
        self.engine = engine

    @property
    def backtracking(self) -> bool:
        """True when ``re`` runs this pattern, so it must run under :func:`hard_limit`."""
        return self._re is not None

    def search(self, text: str) -> tuple[int, int] | None:
        if self._raw is not None:
            data = text.encode()
            start, end = self._raw.Match(_UNANCHORED, data, 0, len(data))[0]
            if start < 0:
                return None
            if len(data) == len(text):  # ASCII: byte offsets are character offsets
                return start, end
            return len(data[:start].decode()), len(data[:end].decode())
        if self._re is None:
            m = self._re2.search(text)
            return None if m is None else (m.start(), m.end())
        state = self._state
        if state is None:
            raise MemoryQueryError("internal: a backtracking pattern ran without its time limit")
        state.matching = True
        try:
            if state.fired:
                raise RegexTimeout
            found = self._re.search(text)
        finally:
            state.matching = False
        return None if found is None else (found.start(), found.end())


def compile_pattern(pattern: object) -> Matcher:
    """RE2 when it supports the pattern, else ``re`` (the ``engine`` attribute says which and why)."""
    text = str(inputs.text(pattern, "pattern"))
    try:
        return Matcher(compiled_re2=re2.compile(text, _RE2), engine="re2")
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    try:
        fallback = re.compile(text, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        raise MemoryQueryError(f"bad regular expression {text!r}: {exc}", hint="check escaping and brackets") from None
    return Matcher(compiled_re=fallback, engine=f"re (RE2: {reason}; time-limited)")


def literal_matcher(needle: object) -> Matcher:
    """Case-insensitive exact substring, with the same case folding as RE2 patterns."""
    text = str(inputs.text(needle, "substring"))
    return Matcher(compiled_re2=re2.compile(text, _LITERAL), engine="re2-literal")


def prefilter_literal(literal: str | None, *, backtracking: bool) -> str | None:
    """The part of a required literal the trigram index can look up without losing matches.

    Records are matched as ``title\\nsummary\\ncontent`` but indexed per column, so a piece
    with a newline could span two fields: only newline-free pieces are looked up. SQLite's
    trigram folding knows ASCII case (and ``ſ``, the Kelvin sign, as RE2 does) but not the
    rest of Unicode, so only ASCII runs are used; ``re`` also matches ``i`` against
    ``İ``/``ı``, so for it the runs stop at ``i`` too.
    """
    if not literal:
        return None
    stops = "[^\\x20-\\x7e]|[iI]" if backtracking else "[^\\x20-\\x7e]"
    runs = re.split(stops, literal)
    best = max(runs, key=len)
    return best if len(best.strip()) >= 3 else None


def piece_literal(literal: str | None) -> str | None:
    """The literal for the one- and two-character piece bitmaps when the trigram index cannot
    look it up (non-ASCII, or short): pieces that could span two fields (a newline) are cut."""
    if not literal:
        return None
    best = max(literal.split("\n"), key=len)
    return best or None


def case_variants(char: str, pool: Iterable[str], *, backtracking: bool) -> list[str]:
    """The characters of ``pool`` a case-insensitive match of ``char`` accepts, by the engine
    itself (RE2's or ``re``'s folding: ``s`` takes ``ſ``, ``k`` the Kelvin sign)."""
    # One pass of the engine over the pool: folding is one character to one, so each match
    # is one character of it.
    text = "".join(sorted(set(pool)))
    found = re.compile(re.escape(char), re.IGNORECASE) if backtracking else re2.compile(char, _LITERAL)
    return [m.group() for m in found.finditer(text)]


def required_literal(pattern: str) -> str | None:
    """The longest literal run every match must contain, or None (then grep scans).

    Walks the parsed pattern (``re._parser``): only top-level literal sequences count, so
    an alternation or an optional group never yields a literal that some match lacks.
    Patterns ``re`` cannot parse (RE2-only syntax such as ``\\pL``) get None.
    """
    try:
        parser: Any = importlib.import_module("re._parser")
        parsed = parser.parse(pattern)
    except Exception:  # RE2-only syntax, or an error compile_pattern reports
        return None
    literal_op = parser.LITERAL
    runs: list[str] = []
    current: list[str] = []
    for op, av in parsed:
        if op is literal_op:
            current.append(chr(av))
            continue
        runs.append("".join(current))
        current = []
    runs.append("".join(current))
    return max(runs, key=len) or None


class _Alarm:
    __slots__ = ("fired", "matching")

    def __init__(self) -> None:
        self.matching = False
        self.fired = False


@contextmanager
def hard_limit(matcher: Matcher, deadline: float) -> Iterator[None]:
    """Abort ``matcher``'s ``re`` matches at ``deadline`` (``time.monotonic()``): raises RegexTimeout.

    RE2 matchers need no limit (linear time; the caller checks its deadline between
    records). The previous ``SIGALRM`` handler and timer are restored afterwards.
    """
    if not matcher.backtracking:
        yield
        return
    if threading.current_thread() is not threading.main_thread():
        raise MemoryQueryError(
            f"this pattern needs Python's backtracking engine ({matcher.engine}),"
            " which can be time-limited only in the main thread",
            hint="rewrite it without back-references or look-around so RE2 can run it",
        )
    state = _Alarm()

    def on_alarm(_signum: int, _frame: object) -> None:
        state.fired = True
        if state.matching:
            raise RegexTimeout

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    earlier = signal.setitimer(signal.ITIMER_REAL, max(1e-4, deadline - started))
    matcher._state = state
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        matcher._state = None
        signal.signal(signal.SIGALRM, previous)
        if earlier[0] > 0:  # someone else's timer was running: give it back what is left
            signal.setitimer(signal.ITIMER_REAL, max(1e-6, earlier[0] - (time.monotonic() - started)), earlier[1])
