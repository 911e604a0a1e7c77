"""Memory records as text for a person at a terminal (``--json`` is for programs).

The output is stable (no timings, no scores' noise beyond two decimals) and safe to print:
a memory's text is whatever was recorded, so control characters (an ANSI escape, a
carriage return that would overwrite the line, C1 controls), the bidirectional overrides
that reorder what a terminal shows, and lone surrogates (invalid UTF-8 that came in as
text) are shown as Python-style escapes (``\\x1b``, ``\\u202e``, ``\\udcff``) instead of
being acted on. Newlines and tabs are kept only in a record's full content (``get``).
"""

from __future__ import annotations

import re

from terminai_apts.memory.records import Hit, Memory, Results

SNIPPET = 160  # characters of content shown under each match

# C0 and C1 controls and DEL; the bidirectional marks, embeddings, overrides and isolates;
# lone surrogates (U+D800–U+DFFF never stand for themselves in a str that is valid text).
_MARKS = "\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_UNSAFE = re.compile(f"[\x00-\x1f{_MARKS}]")
_UNSAFE_KEEP_LINES = re.compile(f"[\x00-\x08\x0b-\x1f{_MARKS}]")  # keeps \t and \n


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0A:
        return "\\n"
    if code == 0x09:
        return "\\t"
    if code == 0x0D:
        return "\\r"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def line(text: str) -> str:
    """``text`` on one line: every control character escaped, newlines included."""
    return _UNSAFE.sub(_escape, text)


def block(text: str) -> str:
    """``text`` as a block: newlines and tabs kept, every other control character escaped."""
    return _UNSAFE_KEEP_LINES.sub(_escape, text)


def _snippet(text: str) -> str:
    flat = " ".join(text.split())  # newlines and runs of blanks read as one space here
    return line(flat if len(flat) <= SNIPPET else flat[: SNIPPET - 3] + "...")


def _meta(memory: Memory) -> str:
    parts = []
    if memory.tags:
        parts.append("tags: " + ", ".join(line(t) for t in memory.tags))
    if memory.source:
        parts.append(f"source: {line(memory.source)}")
    return "; ".join(parts)


def hit(found: Hit) -> str:
    """``id  date  title``, then tags and source, then a snippet of the content."""
    memory = found.memory
    rows = [f"{line(memory.id)}  {line(memory.date)}  {line(memory.title) or '(untitled)'}"]
    meta = _meta(memory)
    if meta:
        rows.append(f"    {meta}")
    text = found.snippet or memory.content
    if text:
        rows.append(f"    {_snippet(text)}")
    return "\n".join(rows)


def results(res: Results) -> str:
    """A count line, then each match; says when there are more than were shown."""
    if not res.hits:
        return "no matches"
    if res.total < 0:  # not counted (a cap or the time budget stopped the count): never "-1 matches"
        return "\n\n".join(
            [f"{len(res.hits)} matches shown, more not counted ('memory count' gives the total)"]
            + [hit(h) for h in res.hits]
        )
    head = f"{res.total} match{'es' if res.total != 1 else ''}"
    if res.truncated or res.total > len(res.hits):
        head += f", showing {len(res.hits)} (raise --limit to see more)"
    return "\n\n".join([head, *(hit(h) for h in res.hits)])


def record(memory: Memory) -> str:
    """One record in full: its fields, a blank line, its content as written."""
    fields = [
        ("id", memory.id),
        ("date", memory.date),
        ("title", memory.title),
        ("tags", ", ".join(memory.tags)),
        ("source", memory.source),
        ("confidence", f"{memory.confidence:g}"),
        ("kind", memory.kind),
        ("tier", memory.tier),
    ]
    if memory.superseded_by:
        fields.append(("superseded by", memory.superseded_by))
    head = "\n".join(f"{name + ':':<12}{line(value)}" for name, value in fields if value)
    if memory.summary:
        head += f"\n{'summary:':<12}{line(memory.summary)}"
    return f"{head}\n\n{block(memory.content)}" if memory.content else head
