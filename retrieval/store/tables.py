"""Tables as searchable records: the tables the catalog holds from ingest, each one record of
JSON rows (its page, column headers, the unit and period words found in its headers, and one
row per line item), ranked for a question by BM25 over the tables of the routed filing.

The records are read from the catalog at question time, so an index built before this stage
needs no rebuild. A table record carries a negative id, ``-(table row id)``, so it can never be
taken for a chunk.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass

from finrag.retrieval.store.query import STOPWORDS, _words

_UNIT_RE = re.compile(r"\b(?:in\s+)?(?:thousands|millions|billions)\b|\$|%|per share", re.I)
_PERIOD_RE = re.compile(r"\b(?:19|20)\d{2}\b|\b(?:q[1-4]|quarter|fiscal|year|months?)\b", re.I)


@dataclass
class TableRecord:
    id: int  # negative: -(the catalog's table row id)
    doc_id: str
    page: int
    text: str  # the JSON shown to the rerankers and the generator


def table_json(page: int, header: list[str], rows: list[dict]) -> str:
    """One table as compact JSON: columns, units and periods named in them, rows by label."""
    columns = [h for h in header if h != "label"]
    head = " ".join(columns)
    record = {"page": page, "columns": columns}
    units = sorted({m.group(0).lower() for m in _UNIT_RE.finditer(head)})
    periods = sorted({m.group(0) for m in _PERIOD_RE.finditer(head)})
    if units:
        record["units"] = units
    if periods:
        record["periods"] = periods
    lines = []
    for row in rows:
        label = str(row.get("label", "")).strip()
        values = [str(row[c]) for c in columns if c in row and str(row[c]).strip()]
        if label or values:
            lines.append([label, *values])
    record["rows"] = lines
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


class TableSearch:
    """BM25 over the table records of one filing at a time (each filing read once)."""

    def __init__(self, catalog, *, k1: float = 1.2, b: float = 0.75):
        self.catalog = catalog
        self.k1, self.b = k1, b
        self._docs: dict[str, tuple[list[TableRecord], list[Counter], float]] = {}

    def records(self, doc_id: str) -> tuple[list[TableRecord], list[Counter], float]:
        if doc_id not in self._docs:
            records = [TableRecord(-tid, doc_id, page, table_json(page, header, rows))
                       for tid, page, header, rows in self.catalog.table_rows(doc_id)]
            terms = [Counter(_words(rec.text)) for rec in records]
            avg = sum(sum(t.values()) for t in terms) / max(len(terms), 1)
            self._docs[doc_id] = (records, terms, avg)
        return self._docs[doc_id]

    def search(self, query: str, doc_id: str, k: int) -> list[tuple[TableRecord, float]]:
        """The ``k`` best tables of a filing for a query, best first (none matching: [])."""
        records, terms, avg = self.records(doc_id)
        words = [w for w in dict.fromkeys(_words(query))
                 if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]
        if not records or not words or k <= 0:
            return []
        n = len(records)
        df = {w: sum(1 for t in terms if w in t) for w in words}
        scored = []
        for rec, t in zip(records, terms):
            length = sum(t.values())
            s = 0.0
            for w in words:
                f = t.get(w, 0)
                if f:
                    idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                    s += idf * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b *
                                                                   length / max(avg, 1e-9)))
            if s > 0:
                scored.append((rec, s))
        scored.sort(key=lambda rs: (-rs[1], -rs[0].id))
        return scored[:k]
