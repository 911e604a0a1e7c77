"""Pure helpers: safe FTS5 query text, time expressions and regex literal extraction.

Agent text must never reach FTS5 as syntax: ``PROJ-1234`` is "no such column: 1234" and
``v2.1`` a syntax error there, so every token is double-quoted unless ``raw=True``.
"""

from __future__ import annotations

import importlib
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from terminai_apts.errors import UsageError

_RELATIVE = re.compile(r"^\s*(\d{1,6})\s*([hdwmy])\s*$")
_UNITS = {
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
    "m": timedelta(days=30),
    "y": timedelta(days=365),
}
ISO = "%Y-%m-%dT%H:%M:%SZ"


def fts_tokens(text: str) -> list[str]:
    """Split agent text into quoted FTS5 phrases; tokens without a letter or digit are dropped."""
    out: list[str] = []
    # NUL ends the string inside SQLite's FTS5 parser ("unterminated string"): drop controls.
    cleaned = "".join(ch if ch.isprintable() or ch.isspace() else " " for ch in text)
    for token in cleaned.split():
        if not any(ch.isalnum() for ch in token):
            continue
        out.append('"' + token.replace('"', '""') + '"')
    return out


def fts_and(text: str) -> str:
    """All tokens required (FTS5 implicit AND), each quoted."""
    return " ".join(fts_tokens(text))


def fts_or(text: str) -> str:
    """Any token (used when the AND form found nothing)."""
    return " OR ".join(fts_tokens(text))


def trigram_phrase(literal: str) -> str:
    """A trigram MATCH phrase for a substring (case-insensitive, ≥ 3 characters)."""
    return '"' + literal.replace('"', '""') + '"'


def normalize_date(text: str | None, *, what: str = "date") -> str:
    """Any ISO 8601 date/datetime (naive means UTC) as ``YYYY-MM-DDTHH:MM:SSZ``."""
    if text is None or not str(text).strip():
        raise UsageError(f"{what} is empty", hint="use ISO 8601, e.g. 2024-05-01 or 2024-05-01T12:00:00Z")
    raw = str(text).strip().replace(" ", "T", 1)
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise UsageError(
            f"{what} {text!r} is not a valid date",
            hint="use ISO 8601 (2024-05-01, 2024-05-01T12:00:00Z) or a relative form like 7d",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime(ISO)


def parse_bound(text: str | None, *, end: bool, now: datetime | None = None) -> str | None:
    """A ``since``/``until`` bound as a normalised timestamp; ``end`` bounds are exclusive.

    Date-only values are whole days (``until="2024-05-01"`` includes all of May 1st);
    relative values (``7d``, ``12h``, ``2w``, ``3m``, ``1y``) count back from now.
    """
    if text is None:
        return None
    value = str(text).strip()
    rel = _RELATIVE.match(value)
    if rel:
        moment = (now or datetime.now(UTC)) - int(rel.group(1)) * _UNITS[rel.group(2)]
        return moment.strftime(ISO)
    stamp = normalize_date(value, what="until" if end else "since")
    if end and len(value) == 10:
        day = datetime.strptime(stamp, ISO).replace(tzinfo=UTC) + timedelta(days=1)
        return day.strftime(ISO)
    if end:
        # An explicit instant is inclusive: move one second on so "< bound" keeps it.
        return (datetime.strptime(stamp, ISO) + timedelta(seconds=1)).strftime(ISO)
    return stamp


def compile_regex(pattern: str) -> re.Pattern[str]:
    """Compile an agent regex case-insensitively, turning errors into a usage error."""
    try:
        return re.compile(pattern, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError) as exc:
        raise UsageError(f"bad regular expression {pattern!r}: {exc}", hint="check escaping and brackets") from None


def required_literal(pattern: str) -> str | None:
    """The longest literal run every match must contain, or None (then grep scans).

    Walks the parsed pattern (``re._parser``): only top-level literal sequences count, so
    an alternation or an optional group never yields a literal that some match lacks.
    """
    try:
        parser: Any = importlib.import_module("re._parser")
        parsed = parser.parse(pattern)
    except Exception:  # an unparsable pattern is reported by compile_regex
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
    best = max(runs, key=len)
    return best if len(best.strip()) >= 3 else None


def refuse_catastrophic(pattern: str) -> None:
    """Refuse nested unbounded repetition (``(a+)+``, ``(a*)*b``): ``re`` cannot be interrupted."""
    try:
        parser: Any = importlib.import_module("re._parser")
        parsed = parser.parse(pattern)
    except Exception:  # compile_regex reports syntax errors
        return
    repeats = {parser.MAX_REPEAT, parser.MIN_REPEAT, getattr(parser, "POSSESSIVE_REPEAT", None)}

    def walk(items: Any, inside: bool) -> None:
        for op, av in items:
            if op in repeats:
                unbounded = av[1] is parser.MAXREPEAT or av[1] > 50
                if unbounded and inside:
                    raise UsageError(
                        f"regular expression {pattern!r} nests repetition and could run for hours",
                        hint="remove the nested quantifier, e.g. (a+)+ → a+",
                    )
                walk(av[2], inside or unbounded)
            elif op is parser.SUBPATTERN:
                walk(av[3], inside)
            elif op is parser.BRANCH:
                for branch in av[1]:
                    walk(branch, inside)

    walk(parsed, False)
