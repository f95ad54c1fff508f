"""Every documented method and function has the docstring sections its signature calls for.

The site's reference renders ``Args:`` as "Parameters" and ``Keyword Args:`` as "Keyword
Arguments", as the seed page separates them; a parameter missing from its section would be
missing from the page. The objects are those that get a page (``scripts/api_pages.py``).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from conftest import load_script

ROOT = Path(__file__).resolve().parent.parent
SECTION = re.compile(r"^(Args|Arguments|Keyword Args|Keyword Arguments|[A-Z][A-Za-z ]*):\s*$")
ENTRY = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:")
POSITIONAL_SECTIONS = ("Args", "Arguments")
KEYWORD_SECTIONS = ("Keyword Args", "Keyword Arguments")


def described(doc: str) -> dict[str, set[str]]:
    """The names each Google-style section of ``doc`` describes (``{"Args": {"key", ...}}``)."""
    sections: dict[str, set[str]] = {}
    current = None
    for line in doc.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0:
            match = SECTION.match(line)
            current = match[1] if match else None
            if current:
                sections.setdefault(current, set())
        elif current and indent == 4 and (entry := ENTRY.match(line.strip())):
            sections[current].add(entry[1])
    return sections


def problems(obj) -> list[str]:
    """What the docstring of ``obj`` lacks for its signature, one phrase per parameter."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    sections = described(inspect.getdoc(obj) or "")
    positional = set().union(*(sections.get(s, set()) for s in POSITIONAL_SECTIONS))
    keyword = set().union(*(sections.get(s, set()) for s in KEYWORD_SECTIONS))
    found = []
    for parameter in signature.parameters.values():
        name = parameter.name
        if name in ("self", "cls") or name.startswith("_"):
            continue
        if parameter.kind is parameter.VAR_POSITIONAL:
            name = f"*{name}"
        elif parameter.kind is parameter.VAR_KEYWORD:
            name = f"**{name}"
        if parameter.kind is parameter.KEYWORD_ONLY:
            if name in keyword:
                continue
            found.append(
                f"keyword-only {name!r} listed under Args"
                if name in positional
                else f"keyword-only {name!r} not described under Keyword Args"
            )
        elif parameter.kind is parameter.VAR_KEYWORD:
            # Described as such, or through the keywords it takes, one by one.
            if name not in positional and not keyword:
                found.append(f"{name!r} not described")
        elif name not in positional:
            found.append(
                f"positional {name!r} listed under Keyword Args"
                if name in keyword
                else f"{name!r} not described under Args"
            )
    return found


def test_the_section_reader_reads_google_style():
    """The reader finds each entry under its section, types or not, and ignores prose."""
    doc = (
        "Summary.\n\nArgs:\n    key (NestedKey): the key.\n        More: prose.\n"
        "    *args: more.\n\nKeyword Args:\n    dtype: the dtype.\n\nReturns:\n    x: y.\n"
    )
    assert described(doc) == {"Args": {"key", "*args"}, "Keyword Args": {"dtype"}, "Returns": {"x"}}

    def sample(key, *args, dtype=None, **kwargs):
        """Summary.

        Args:
            key: the key.
            dtype: the dtype.
        """

    assert problems(sample) == [
        "'*args' not described under Args",
        "keyword-only 'dtype' listed under Args",
        "'**kwargs' not described",
    ]


def test_every_parameter_is_described_in_its_section():
    """Each parameter of each documented callable is under Args, or Keyword Args if keyword-only."""
    callables = load_script("api_pages").documented_callables()
    assert len(callables) >= 400
    failures = []
    for title, obj in callables:
        failures += [f"{title}: {problem}" for problem in problems(obj)]
    assert not failures, f"{len(failures)} docstring problems:\n" + "\n".join(failures)
