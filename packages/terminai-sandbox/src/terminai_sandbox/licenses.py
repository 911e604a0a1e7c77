"""Licence names as SPDX expressions: Debian's DEP-5 short names and Python core metadata.

Every name is first looked up in the SPDX licence list that ``license-expression`` ships
(case-insensitive, with SPDX's deprecated aliases such as ``GPL-2.0+``). Names the list does
not know go through the DEP-5 rules below; anything still unknown becomes a
``LicenseRef-Debian-<name>`` (SPDX's own form for a licence that is not on its list), so an
expression always parses and nothing Debian says is dropped.

DEP-5 rules (https://dep-team.pages.debian.net/deps/dep5/, "Short name"):

* ``NAME-V`` is version V only and ``NAME-V+`` is "V or any later version": ``GPL-2`` is
  ``GPL-2.0-only``, ``LGPL-2.1+`` is ``LGPL-2.1-or-later``, ``Apache-2`` is ``Apache-2.0``
  (a bare major version gets SPDX's ``.0``).
* ``GFDL-NIV`` is the GFDL with no invariant sections (``GFDL-1.3-no-invariants-only``).
* A name with no version means any version was offered (GNU licences, section 9/14):
  ``GPL`` is ``GPL-1.0-or-later``, ``LGPL`` is ``LGPL-2.0-or-later``, ``GFDL`` is
  ``GFDL-1.1-or-later``.
* ``A or B`` / ``A and B`` / ``A or B, and C`` (the comma binds loosest) and
  ``A with X exception``. ``and/or`` offers either licence, so it is ``OR``. An exception
  SPDX does not list is dropped, keeping the base licence (the stricter reading).

Names DEP-5 defines that are not SPDX identifiers: :data:`DEP5_NAMES`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from license_expression import ExpressionError, Licensing, get_spdx_licensing

#: DEP-5 short names (and common-licenses file names) that are not SPDX identifiers.
DEP5_NAMES = {
    "expat": "MIT",
    "artistic": "Artistic-1.0-Perl",  # /usr/share/common-licenses/Artistic is Perl's licence text
    "perl": "GPL-1.0-or-later OR Artistic-1.0-Perl",
    "cc0": "CC0-1.0",
    "gpl": "GPL-1.0-or-later",
    "lgpl": "LGPL-2.0-or-later",
    "gfdl": "GFDL-1.1-or-later",
    "gfdl-niv": "GFDL-1.1-no-invariants-or-later",
    "psf-2": "PSF-2.0",
    "zope": "ZPL-2.1",
    "mpl": "MPL-1.1",
}

#: Exceptions Debian names in ``with X exception``, by their SPDX identifiers.
DEP5_EXCEPTIONS = {
    "autoconf": {"GPL-2": "Autoconf-exception-2.0", "GPL-3": "Autoconf-exception-3.0"},
    "bison": {"GPL-2": "Bison-exception-2.2", "GPL-3": "Bison-exception-2.2"},
    "bison-2.2": {"GPL-2": "Bison-exception-2.2", "GPL-3": "Bison-exception-2.2"},
    "texinfo": {"GPL-2": "Texinfo-exception", "GPL-3": "Texinfo-exception"},
    "linux-syscall-note": {"GPL-2": "Linux-syscall-note"},
    "openssl": {"GPL-2": "openvpn-openssl-exception"},
    "binary library-like packages": {"BSD-3": "PCRE2-exception"},
}

#: Trove classifiers for distributions that declare neither License-Expression nor an SPDX License.
CLASSIFIERS = {
    "Apache Software License": "Apache-2.0",
    "BSD License": "BSD-3-Clause",
    "MIT License": "MIT",
    "ISC License (ISCL)": "ISC",
    "Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0",
    "Python Software Foundation License": "PSF-2.0",
    "Zope Public License": "ZPL-2.1",
    "GNU General Public License v2 (GPLv2)": "GPL-2.0-only",
    "GNU General Public License v2 or later (GPLv2+)": "GPL-2.0-or-later",
    "GNU General Public License v3 (GPLv3)": "GPL-3.0-only",
    "GNU General Public License v3 or later (GPLv3+)": "GPL-3.0-or-later",
    "GNU Lesser General Public License v2 or later (LGPLv2+)": "LGPL-2.0-or-later",
    "GNU Lesser General Public License v3 (LGPLv3)": "LGPL-3.0-only",
    "GNU Lesser General Public License v3 or later (LGPLv3+)": "LGPL-3.0-or-later",
}

_VERSIONED = re.compile(r"^(?P<family>[A-Za-z][A-Za-z0-9-]*?)-(?P<version>\d+(?:\.\d+)*)(?P<plus>\+?)$")
_GNU = {"gpl": "GPL", "lgpl": "LGPL", "agpl": "AGPL", "gfdl": "GFDL"}
_ATOM = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9.+_/-]*$")
_WITH = re.compile(r"^(?P<base>\S+)\s+with\s+(?P<exception>.+?)\s+exception$", re.IGNORECASE)
_COMMON_LICENSE = re.compile(r"/usr/share/common-licenses/([A-Za-z0-9][A-Za-z0-9.+_-]*[A-Za-z0-9+])")


@cache
def spdx() -> Licensing:
    return get_spdx_licensing()


def _known(text: str) -> str | None:
    """``text`` as a validated SPDX expression (canonical keys), or None."""
    try:
        parsed = spdx().parse(text, validate=True, strict=True)
    except ExpressionError:
        return None
    return None if parsed is None else str(parsed.render("{symbol.key}"))


def license_ref(name: str, scope: str = "Debian") -> str:
    """SPDX's form for a licence not on its list; ``+`` (or later) survives as ``-or-later``.

    ``scope`` says whose name it is (``Debian`` for DEP-5 names, ``Python`` for core metadata).
    """
    cleaned = re.sub(r"[^A-Za-z0-9.-]+", "-", name.replace("+", "-or-later-"))
    return f"LicenseRef-{scope}-" + (re.sub(r"-{2,}", "-", cleaned).strip("-.") or "unnamed")


def _versioned(name: str) -> str | None:
    match = _VERSIONED.match(name)
    if match is None:
        return None
    family, version, plus = match["family"], match["version"], match["plus"]
    if "." not in version:
        version += ".0"
    lower = family.lower()
    if lower in _GNU:
        return _known(f"{_GNU[lower]}-{version}-{'or-later' if plus else 'only'}")
    if lower == "gfdl-niv":
        return _known(f"GFDL-{version}-no-invariants-{'or-later' if plus else 'only'}")
    found = _known(f"{family}-{version}")
    if found is not None and plus:
        return _known(f"{found}+")
    return found


def dep5_name(name: str) -> str:
    """One DEP-5 short name (no operators) as an SPDX expression."""
    return _known(name) or DEP5_NAMES.get(name.lower()) or _versioned(name) or license_ref(name)


def _with_exception(base: str, exception: str) -> str:
    spdx_base = dep5_name(base)
    family = re.sub(r"^([A-Za-z]+-\d+).*$", r"\1", spdx_base)
    known = DEP5_EXCEPTIONS.get(exception.lower(), {}).get(family)
    if known is not None and " " not in spdx_base:
        expression = _known(f"{spdx_base} WITH {known}")
        if expression is not None:
            return expression
    return spdx_base


def _atom(text: str) -> str | None:
    text = text.strip().strip("()")
    with_match = _WITH.match(text)
    if with_match:
        return _with_exception(with_match["base"], with_match["exception"])
    if not _ATOM.match(text):
        return None  # free text where a short name belongs: not a licence name
    return dep5_name(text)


def _group(parts: Iterable[str | None], operator: str) -> str | None:
    found = sorted({part for part in parts if part})
    if not found:
        return None
    if len(found) == 1:
        return found[0]
    return f" {operator} ".join(f"({part})" if " " in part else part for part in found)


def dep5_expression(value: str) -> str | None:
    """A DEP-5 ``License:`` value (first line) as an SPDX expression; None for free text."""
    loose = re.split(r",\s*(?=and\s|or\s)", value.strip())
    groups = []
    for chunk in loose:
        operator = "AND" if chunk.lower().startswith("and ") else "OR"
        body = re.sub(r"^(and|or)\s+", "", chunk, flags=re.IGNORECASE)
        alternatives = re.split(r"\s+(?:and/or|or)\s+", body, flags=re.IGNORECASE)
        conjunctions = (re.split(r"\s+and\s+", alt, flags=re.IGNORECASE) for alt in alternatives)
        expression = _group((_group(map(_atom, names), "AND") for names in conjunctions), "OR")
        if expression is None:
            return None
        groups.append((operator, expression))
    if len(groups) == 1:
        return groups[0][1]
    # "A or B, and C": every comma-joined group is combined with the operator it starts with
    combined = groups[0][1]
    for operator, expression in groups[1:]:
        combined = f"({combined}) {operator} ({expression})"
    return normalise(combined)


def common_license_names(text: str) -> tuple[str, ...]:
    """``/usr/share/common-licenses/NAME`` references in a copyright file that is not DEP-5."""
    return tuple(sorted({match.rstrip(".") for match in _COMMON_LICENSE.findall(text)}))


def normalise(expression: str) -> str:
    """Parse, validate (SPDX keys or ``LicenseRef-``), de-duplicate and render one expression."""
    parsed = spdx().parse(expression, validate=False)
    if parsed is None:
        raise ValueError("empty licence expression")
    unknown = [key for key in spdx().unknown_license_keys(parsed) if not key.startswith("LicenseRef-")]
    if unknown:
        raise ValueError(f"not SPDX licence identifiers: {', '.join(sorted(unknown))}")
    return str(spdx().dedup(parsed).render("{symbol.key}"))


def conjunction(expressions: Iterable[str]) -> str | None:
    """All of ``expressions`` at once (a package whose files carry each of them), or None."""
    found = sorted(set(expressions))
    if not found:
        return None
    return normalise(" AND ".join(f"({item})" for item in found))


def python_expression(license_expression: str | None, license_field: str | None, classifiers: list[str]) -> str | None:
    """A distribution's licence: PEP 639 ``License-Expression``, an SPDX ``License``, or classifiers."""
    for candidate in (license_expression, license_field):
        if candidate and "\n" not in candidate.strip():
            found = _known(candidate.strip()) or _known(candidate.strip().replace(" ", "-"))
            if found is not None:
                return found
    mapped = sorted({CLASSIFIERS[c] for c in classifiers if c in CLASSIFIERS})
    if mapped:
        return normalise(" AND ".join(mapped))
    plain = (license_field or "").strip()
    if plain and "\n" not in plain and len(plain) <= 64:
        return license_ref(plain, scope="Python")
    return None


def is_single_id(expression: str) -> bool:
    """True when ``expression`` is one SPDX identifier (CycloneDX ``license.id``), not an expression."""
    return " " not in expression and not expression.startswith("LicenseRef-") and _known(expression) == expression
