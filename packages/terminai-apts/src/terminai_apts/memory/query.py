"""Pure helpers: safe FTS5 query text, time expressions and regex literal extraction.

Agent text must never reach FTS5 as syntax: ``PROJ-1234`` is "no such column: 1234" and
``v2.1`` a syntax error there, so every token is double-quoted unless ``raw=True``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from terminai_apts.errors import MemoryQueryError

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
    """A trigram MATCH for a substring (case-insensitive, ≥ 3 characters): every trigram of it.

    The trigram index keeps no positions (``detail='none'``: a seventh of the size), so
    it names the records holding all of the literal's trigrams anywhere; each candidate
    is then checked against the literal itself.
    """
    grams = dict.fromkeys(literal[i : i + 3] for i in range(len(literal) - 2))
    return " AND ".join('"' + g.replace('"', '""') + '"' for g in grams)


def normalize_date(text: str | None, *, what: str = "date") -> str:
    """Any ISO 8601 date/datetime (naive means UTC) as ``YYYY-MM-DDTHH:MM:SSZ``."""
    if text is None or not str(text).strip():
        raise MemoryQueryError(f"{what} is empty", hint="use ISO 8601, e.g. 2024-05-01 or 2024-05-01T12:00:00Z")
    raw = str(text).strip().replace(" ", "T", 1)
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise MemoryQueryError(
            f"{what} {text!r} is not a valid date",
            hint="use ISO 8601 (2024-05-01, 2024-05-01T12:00:00Z) or a relative form like 7d",
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return stamp(moment.astimezone(UTC))


def stamp(moment: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SSZ`` with a four-digit year: glibc's ``%Y`` writes year 999 as
    ``999``, which sorts after ``2025`` and would put such a record outside every window."""
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}Z"


def parse_bound(text: str | None, *, end: bool, now: datetime | None = None, what: str = "") -> str | None:
    """A ``since``/``until`` bound as a normalised timestamp; ``end`` bounds are exclusive.

    Date-only values are whole days (``until="2024-05-01"`` includes all of May 1st);
    relative values (``7d``, ``12h``, ``2w``, ``3m``, ``1y``) count back from now. An end
    on the calendar's last day (``9999-12-31``) bounds nothing and is left open (None).
    """
    if text is None:
        return None
    value = str(text).strip()
    what = what or ("until" if end else "since")
    rel = _RELATIVE.match(value)
    try:
        if rel:
            moment = (now or datetime.now(UTC)) - int(rel.group(1)) * _UNITS[rel.group(2)]
            return stamp(moment)
        normal = normalize_date(value, what=what)
        if end:
            # A whole day ends at the next midnight; an explicit instant is inclusive, so
            # move one second on and "< bound" keeps it.
            step = timedelta(days=1) if len(value) == 10 else timedelta(seconds=1)
            try:
                return stamp(datetime.fromisoformat(normal[:-1]) + step)
            except OverflowError:
                return None  # the end of the calendar's last day: no bound at all
    except OverflowError:
        raise MemoryQueryError(
            f"{what} {value!r} reaches past the calendar (years 1 to 9999)"[:200],
            hint=f"leave {what} out for no bound on that side",
        ) from None
    return normal
