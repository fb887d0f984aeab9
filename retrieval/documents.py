"""What a parsed filing looks like before it is chunked and indexed.

Parsers (PDF, SEC HTML) produce a ``ParsedDocument``; metadata comes from a sidecar file or
from the file name (``retrieval.ingest.metadata``) and is carried as ``DocumentMeta``.
Pages are numbered from 1, as a person sees them in a viewer.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

# a document ingested without a collection is in this one: not `public`, so that a file
# ingested without thought is readable only by all-collections tokens
DEFAULT_COLLECTION = "default"
PUBLIC_COLLECTION = "public"  # filings fetched from EDGAR
_COLLECTION_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def check_collections(names) -> list[str]:
    """Collection names, checked (1-64 lowercase letters, digits, '.', '_', '-'), deduplicated
    and sorted; an empty list stands for DEFAULT_COLLECTION."""
    if isinstance(names, str):
        names = [names]
    bad = [n for n in names if not isinstance(n, str) or not _COLLECTION_RE.match(n)]
    if bad:
        raise ValueError(f"collection name(s) {bad!r}: 1 to 64 lowercase letters, digits, "
                         f"'.', '_' or '-', starting with a letter or digit")
    return sorted(set(names)) or [DEFAULT_COLLECTION]

DOC_TYPES = ("10-K", "10-Q", "8-K", "earnings", "annual report")


class DocumentError(Exception):
    """A file that cannot be read as a filing (corrupt, encrypted, empty, wrong format)."""


@dataclass
class Table:
    """A table found on a page, stored as JSON rows keyed by their column headers."""

    page: int
    index: int  # position of the table on its page, from 0
    header: list[str]
    rows: list[dict[str, str]]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ParsedPage:
    number: int  # 1-based
    text: str
    tables: list[Table] = field(default_factory=list)


@dataclass
class ParsedDocument:
    pages: list[ParsedPage]
    # Facts the file states about itself (e.g. inline-XBRL dei: tags); keys as in DocumentMeta.
    hints: dict[str, Any] = field(default_factory=dict)

    @property
    def page_count(self) -> int:
        return len(self.pages)

    @property
    def char_count(self) -> int:
        return sum(len(p.text) for p in self.pages)


@dataclass
class DocumentMeta:
    doc_id: str
    company: str
    doc_type: str  # one of DOC_TYPES
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    ticker: str | None = None
    aliases: list[str] = field(default_factory=list)
    period_end: str | None = None  # ISO date
    filing_date: str | None = None  # ISO date
    sector: str | None = None
    # who may read it: a caller reads the documents of the collections its token names; none
    # given at ingest: DEFAULT_COLLECTION
    collections: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Chunk:
    seq: int  # position in the document, from 0
    text: str
    first_page: int
    last_page: int
    start: int  # character offsets into the joined document text
    end: int
