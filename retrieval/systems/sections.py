"""The sections of a filing a question asks about, found by their headings.

An existence or trait question ("Has CVS reported any material legal battles?", "Is Pfizer
spinning off a segment?") is answered by finding the thing asked about, and a filing says
where it keeps such things: legal proceedings and contingencies, segment reporting and revenue
disaggregation, risk factors, customer concentration. ``sections_named`` reads which of those
a question names; ``section_pages`` finds the pages of a filing where each opens, a heading
alone on its line, table-of-contents pages left out.
"""

from __future__ import annotations

import re

# kind: (what a question says, the headings that open the section)
SECTIONS: dict[str, tuple[str, str]] = {
    "legal": (r"\b(?:legal|litigations?|lawsuits?|law\s?suits?|proceedings|courts?|antitrust"
              r"|class actions?|investigations?|settlements?)\b",
              r"legal proceedings|legal matters|litigation|(?:commitments and )?contingencies"),
    "segments": (r"\b(?:segments?|spin(?:ning)?[- ]?offs?|spin(?:ning)? off|divest\w*"
                 r"|business lines?|lines of business|divisions?)\b",
                 r"segment information|segment reporting|segment results|reportable segments"
                 r"|segments?|disaggregation of revenues?"),
    "risk": (r"\brisk factors?\b|\bsubject to\b",
             r"risk factors"),
    "customers": (r"\bcustomer concentration|\b(?:major|significant|largest|key) customers?\b"
                  r"|\bconcentrations? of (?:credit )?risk\b",
                  r"concentrations?(?: of (?:credit )?risk)?|major customers|significant customers"),
}
_ASKED = {kind: re.compile(asked, re.I) for kind, (asked, _) in SECTIONS.items()}
# a heading alone on its line, after an "Item 3." or "Note 16." and before a colon or period
_HEADING = {kind: re.compile(rf"(?im)^[\W_]{{0,3}}(?:(?:item|note)\s*\d+[a-z]?[\s.:—–-]*)?"
                             rf"(?:{heading})[\s.:]*$")
            for kind, (_, heading) in SECTIONS.items()}
_ITEM_LINE = re.compile(r"(?im)^[\W_]{0,3}item\s*\d+[a-z]?\b")
# a table of contents: at least this many "Item N" lines, with little text between them (a
# filing whose short items share a page has paragraphs between its headings)
TOC_ITEMS, TOC_CHARS_PER_ITEM = 4, 300


def sections_named(question: str) -> list[str]:
    """The section kinds ``question`` asks about, in the order it names them."""
    found = sorted((m.start(), kind) for kind, pattern in _ASKED.items()
                   if (m := pattern.search(question)))
    return [kind for _, kind in found]


def section_pages(pages) -> dict[int, list[str]]:
    """{page number: the section kinds whose heading opens on it} of a filing's (number, text)
    pages, table-of-contents pages left out."""
    out: dict[int, list[str]] = {}
    for number, text in pages:
        items = len(_ITEM_LINE.findall(text))
        if items >= TOC_ITEMS and len(text) < TOC_CHARS_PER_ITEM * items:
            continue
        kinds = [kind for kind, heading in _HEADING.items() if heading.search(text)]
        if kinds:
            out[number] = kinds
    return out
