"""The SQLite catalog: documents, their pages, tables and chunks, an FTS5 index over the chunks,
and the chunks' vectors — everything about one document is written in one transaction.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from finrag.retrieval.documents import (DEFAULT_COLLECTION, Chunk, DocumentMeta, ParsedDocument,
                                        check_collections)

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY,
    doc_id TEXT NOT NULL UNIQUE,
    company TEXT NOT NULL,
    ticker TEXT,
    aliases TEXT NOT NULL DEFAULT '[]',
    doc_type TEXT NOT NULL,
    fiscal_year INTEGER,
    fiscal_quarter INTEGER,
    period_end TEXT,
    filing_date TEXT,
    sector TEXT,
    source_path TEXT NOT NULL,
    sha256 TEXT NOT NULL UNIQUE,
    page_count INTEGER NOT NULL,
    char_count INTEGER NOT NULL,
    chunk_count INTEGER NOT NULL,
    ingested_at TEXT NOT NULL DEFAULT (datetime('now'))
);
CREATE TABLE IF NOT EXISTS pages (
    doc INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    number INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (doc, number)
);
CREATE TABLE IF NOT EXISTS tables (
    id INTEGER PRIMARY KEY,
    doc INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    page INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    header TEXT NOT NULL,
    rows TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    doc INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    text TEXT NOT NULL,
    first_page INTEGER NOT NULL,
    last_page INTEGER NOT NULL,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    embedding BLOB NOT NULL,
    UNIQUE (doc, seq)
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc);
CREATE TABLE IF NOT EXISTS companies (
    name TEXT PRIMARY KEY,
    ticker TEXT,
    aliases TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS collections (
    doc INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    PRIMARY KEY (doc, name)
);
CREATE INDEX IF NOT EXISTS collections_name ON collections(name);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, content='chunks', content_rowid='id', tokenize='porter unicode61'
);
"""

_STOPWORDS = frozenset(
    """a an and are as at be by did do does for from had has have how in is it its of on or
    per than that the their this to was were what when which who whom why will with
    """.split()
)


def fts_query(text: str) -> str | None:
    """A safe FTS5 OR-query of the words in free text (operators and quotes neutralised)."""
    words = re.findall(r"[A-Za-z0-9]+(?:[.'&][A-Za-z0-9]+)*", text)
    terms = []
    for w in words:
        w = w.lower()
        if w in _STOPWORDS or (len(w) == 1 and not w.isdigit()):
            continue
        if w not in terms:
            terms.append(w)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', "") + '"' for t in terms)


@dataclass
class DocumentRecord:
    pk: int
    doc_id: str
    company: str
    ticker: str | None
    aliases: list[str]
    doc_type: str
    fiscal_year: int | None
    fiscal_quarter: int | None
    period_end: str | None
    filing_date: str | None
    sector: str | None
    source_path: str
    sha256: str
    page_count: int
    char_count: int
    chunk_count: int
    collections: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d.pop("pk")
        return d


@dataclass
class ChunkRecord:
    chunk_id: int
    doc_id: str
    seq: int
    text: str
    first_page: int
    last_page: int


class CatalogReader(Protocol):
    """The read side of a catalog the pipeline uses: filings, their pages and chunks, who may
    read what, and each filing's content hash."""

    def document(self, doc_id: str) -> Any:
        """The ``DocumentRecord`` of a filing, or None."""
        ...

    def pages(self, doc_id: str) -> list[tuple[int, str]]:
        """(page number, text) of every page, in order."""
        ...

    def page_chunks(self, doc_id: str, pages: list[int]) -> list[Any]:
        """The ``ChunkRecord``s of a filing that cover any of ``pages``, in document order."""
        ...

    def readable(self, collections: frozenset[str] | None) -> list[str] | None:
        """The doc ids of the documents in any of ``collections`` (None: all, so None)."""
        ...

    def fingerprints(self) -> dict[str, str]:
        """{doc id: sha256 of its file} of every document: what a variant index holds of a
        filing counts only while its file is the one the main index holds."""
        ...


class Catalog(CatalogReader):
    def __init__(self, path: Path, *, readonly: bool = False, immutable: bool = False):
        """``immutable`` (read-only): a file nothing will change (a published snapshot);
        SQLite then writes nothing beside it, no lock, journal, ``-wal`` or ``-shm``."""
        self.path = Path(path)
        self.readonly = readonly or immutable
        if immutable:
            self.db = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True,
                                      check_same_thread=False)
        elif readonly:
            # on a read-only mount a WAL database cannot even be read (no -shm file can be
            # made); there nothing can change it either, so it is opened as immutable. An
            # immutable open ignores the -wal file, so commits still in one would be silently
            # missing: refused instead (a writer that closes cleanly leaves the -wal empty)
            writable = os.access(self.path.parent, os.W_OK)
            wal = self.path.with_name(self.path.name + "-wal")
            if not writable and wal.is_file() and wal.stat().st_size > 0:
                raise RuntimeError(
                    f"the index at {self.path.parent} is on a read-only file system and its "
                    f"{wal.name} still holds commits (a writer did not close cleanly); open it "
                    f"once where it is writable (e.g. `finrag documents --index DIR`) and "
                    f"mount it again")
            flags = "mode=ro" if writable else "immutable=1"
            self.db = sqlite3.connect(f"file:{self.path}?{flags}", uri=True,
                                      check_same_thread=False)
        else:
            self.db = sqlite3.connect(self.path, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.executescript(_SCHEMA)
            with self.db:  # documents of an index made before collections: the default one
                self.db.execute("INSERT INTO collections(doc, name) SELECT id, ? FROM documents "
                                "WHERE id NOT IN (SELECT doc FROM collections)",
                                (DEFAULT_COLLECTION,))
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.execute("PRAGMA busy_timeout=10000")
        self._scopes: dict[tuple, tuple[np.ndarray, list[tuple[int, int]]]] = {}

    def close(self) -> None:
        if not self.readonly:
            try:  # fold the -wal into the database file, so a read-only copy sees everything
                self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error:
                pass  # readers still open: the next writer's close folds it
        self.db.close()

    # settings ---------------------------------------------------------------
    def get_settings(self) -> dict[str, Any]:
        return {k: json.loads(v) for k, v in self.db.execute("SELECT key, value FROM settings")}

    def put_settings(self, values: dict[str, Any]) -> None:
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO settings(key, value) VALUES (?, ?)",
                [(k, json.dumps(v)) for k, v in values.items()],
            )

    # what has changed ----------------------------------------------------------
    def generation(self) -> int:
        """A number that moves whenever a document is added or removed or its collections
        change, by any connection of any process (the header's ``user_version``, written in
        the change's own transaction): readers compare it to know what they must reread."""
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def _changed(self) -> None:  # inside a write transaction, after its first statement
        self.db.execute(f"PRAGMA user_version = {self.generation() + 1}")

    # documents --------------------------------------------------------------
    def add_document(
        self,
        meta: DocumentMeta,
        parsed: ParsedDocument,
        chunks: list[Chunk],
        vectors: np.ndarray,
        *,
        source_path: str,
        sha256: str,
        replace: bool = False,
    ) -> tuple[int, list[int]]:
        """Insert a document with everything that belongs to it, all or nothing; ``replace``:
        the document of the same id, if any, goes in the same transaction.
        Returns the document's key and its chunk ids."""
        if len(chunks) != len(vectors):
            raise ValueError("one vector per chunk is required")
        with self.db:  # one transaction: a crash leaves no part of the document behind
            if replace:
                self._delete(meta.doc_id)
            cur = self.db.execute(
                """INSERT INTO documents(doc_id, company, ticker, aliases, doc_type, fiscal_year,
                   fiscal_quarter, period_end, filing_date, sector, source_path, sha256,
                   page_count, char_count, chunk_count)
                   VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                (meta.doc_id, meta.company, meta.ticker, json.dumps(meta.aliases), meta.doc_type,
                 meta.fiscal_year, meta.fiscal_quarter, meta.period_end, meta.filing_date,
                 meta.sector, source_path, sha256, parsed.page_count, parsed.char_count,
                 len(chunks)),
            )
            pk = cur.lastrowid
            self._changed()
            self.db.executemany("INSERT INTO collections(doc, name) VALUES (?, ?)",
                                [(pk, c) for c in check_collections(meta.collections)])
            self.db.executemany(
                "INSERT INTO pages(doc, number, text) VALUES (?,?,?)",
                [(pk, p.number, p.text) for p in parsed.pages],
            )
            self.db.executemany(
                "INSERT INTO tables(doc, page, idx, header, rows) VALUES (?,?,?,?,?)",
                [(pk, t.page, t.index, json.dumps(t.header), json.dumps(t.rows))
                 for p in parsed.pages for t in p.tables],
            )
            ids = []
            for chunk, vec in zip(chunks, vectors):
                cur = self.db.execute(
                    """INSERT INTO chunks(doc, seq, text, first_page, last_page, start_char,
                       end_char, embedding) VALUES (?,?,?,?,?,?,?,?)""",
                    (pk, chunk.seq, chunk.text, chunk.first_page, chunk.last_page, chunk.start,
                     chunk.end, np.asarray(vec, dtype=np.float32).tobytes()),
                )
                ids.append(cur.lastrowid)
            self.db.executemany(
                "INSERT INTO chunks_fts(rowid, text) VALUES (?, ?)",
                [(i, c.text) for i, c in zip(ids, chunks)],
            )
            self.db.execute(
                "INSERT INTO companies(name, ticker, aliases) VALUES (?,?,?) ON CONFLICT(name) DO "
                "UPDATE SET ticker=coalesce(excluded.ticker, ticker), aliases=excluded.aliases",
                (meta.company, meta.ticker, json.dumps(meta.aliases)),
            )
        return pk, ids

    def remove_document(self, doc_id: str) -> list[int]:
        """Delete a document and everything it owns; returns the removed chunk ids."""
        with self.db:
            return self._delete(doc_id)

    def _delete(self, doc_id: str) -> list[int]:  # inside the caller's transaction
        rows = self.db.execute(
            "SELECT c.id, c.text FROM chunks c JOIN documents d ON c.doc = d.id "
            "WHERE d.doc_id = ?", (doc_id,)
        ).fetchall()
        self.db.executemany(
            "INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', ?, ?)", rows
        )
        if self.db.execute("DELETE FROM documents WHERE doc_id = ?", (doc_id,)).rowcount:
            self._changed()
        return [r[0] for r in rows]

    def _record(self, row) -> DocumentRecord:
        (pk, doc_id, company, ticker, aliases, doc_type, fy, fq, pe, fd, sector, src, sha,
         pages, chars, nchunks, collections) = row
        return DocumentRecord(pk, doc_id, company, ticker, json.loads(aliases), doc_type, fy, fq,
                              pe, fd, sector, src, sha, pages, chars, nchunks,
                              sorted(collections.split("\x1f")) if collections
                              else [DEFAULT_COLLECTION])

    @property
    def _doc_columns(self) -> str:
        # an index made before collections, opened read-only, has no such table: every
        # document is in the default collection
        names = ("(SELECT group_concat(name, char(31)) FROM collections WHERE doc = documents.id)"
                 if self._has_collections else "NULL")
        return ("id, doc_id, company, ticker, aliases, doc_type, fiscal_year, fiscal_quarter, "
                "period_end, filing_date, sector, source_path, sha256, page_count, "
                f"char_count, chunk_count, {names}")

    @property
    def _has_collections(self) -> bool:
        if getattr(self, "_collections_table", None) is None:
            self._collections_table = self.db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'collections'"
            ).fetchone() is not None
        return self._collections_table

    # collections ------------------------------------------------------------
    def collection_counts(self) -> dict[str, int]:
        """Documents per collection."""
        if not self._has_collections:
            n = self.counts()["documents"]
            return {DEFAULT_COLLECTION: n} if n else {}
        return dict(self.db.execute(
            "SELECT name, count(*) FROM collections GROUP BY name ORDER BY name"))

    def readable(self, collections: frozenset[str] | None) -> list[str] | None:
        """The doc ids a caller who reads ``collections`` may read (None: every collection,
        so every document)."""
        if collections is None:
            return None
        names = sorted(collections)
        if not self._has_collections:
            return ([r.doc_id for r in self.documents()] if DEFAULT_COLLECTION in names
                    else [])
        marks = ",".join("?" * len(names))
        return [r[0] for r in self.db.execute(
            "SELECT DISTINCT d.doc_id FROM documents d JOIN collections c ON c.doc = d.id "
            f"WHERE c.name IN ({marks}) ORDER BY d.doc_id", names)] if names else []

    def change_collections(self, doc_id: str, *, add: list[str] = (),
                           remove: list[str] = ()) -> list[str]:
        """Add a document to collections and take it out of others, in one transaction; a
        document stays in at least one. Returns its collections after."""
        add = check_collections(add) if add else []
        remove = check_collections(remove) if remove else []
        with self.db:
            rec = self.document(doc_id)
            if rec is None:
                raise KeyError(f"unknown document {doc_id!r} (see `finrag documents`)")
            after = sorted((set(rec.collections) | set(add)) - set(remove))
            if not after:
                raise ValueError(f"{doc_id} would be in no collection: a document stays in at "
                                 f"least one (add it to another first)")
            self.db.execute("DELETE FROM collections WHERE doc = ?", (rec.pk,))
            self._changed()
            self.db.executemany("INSERT INTO collections(doc, name) VALUES (?, ?)",
                                [(rec.pk, c) for c in after])
        return after

    def documents(self) -> list[DocumentRecord]:
        rows = self.db.execute(f"SELECT {self._doc_columns} FROM documents ORDER BY doc_id")
        return [self._record(r) for r in rows]

    def document(self, doc_id: str) -> DocumentRecord | None:
        row = self.db.execute(
            f"SELECT {self._doc_columns} FROM documents WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        return self._record(row) if row else None

    def fingerprints(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT doc_id, sha256 FROM documents"))

    def document_by_sha(self, sha256: str) -> DocumentRecord | None:
        row = self.db.execute(
            f"SELECT {self._doc_columns} FROM documents WHERE sha256 = ?", (sha256,)
        ).fetchone()
        return self._record(row) if row else None

    def pages(self, doc_id: str) -> list[tuple[int, str]]:
        return self.db.execute(
            "SELECT p.number, p.text FROM pages p JOIN documents d ON p.doc = d.id "
            "WHERE d.doc_id = ? ORDER BY p.number", (doc_id,)
        ).fetchall()

    def tables(self, doc_id: str, page: int | None = None) -> list[dict[str, Any]]:
        sql = ("SELECT t.page, t.idx, t.header, t.rows FROM tables t JOIN documents d "
               "ON t.doc = d.id WHERE d.doc_id = ?")
        args: list[Any] = [doc_id]
        if page is not None:
            sql += " AND t.page = ?"
            args.append(page)
        return [
            {"page": p, "index": i, "header": json.loads(h), "rows": json.loads(r)}
            for p, i, h, r in self.db.execute(sql + " ORDER BY t.page, t.idx", args)
        ]

    # chunks -----------------------------------------------------------------
    def chunk_ids(self, doc_pks: list[int] | None = None) -> np.ndarray:
        if doc_pks is None:
            rows = self.db.execute("SELECT id FROM chunks ORDER BY id")
            return np.fromiter((r[0] for r in rows), dtype=np.int64)
        return self._scope(doc_pks)[0]

    def _scope(self, doc_pks: list[int]) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """(chunk ids, their runs) of some documents, kept while the database is unchanged:
        a caller's scope (every document it may read) is the same on each of its searches, and
        reading its ids costs more than the search. The generation moves with every document
        written or removed, by this connection or another."""
        key = (self.generation(), tuple(sorted(doc_pks)))
        found = self._scopes.get(key)
        if found is None:
            marks = ",".join("?" * len(doc_pks))
            ids = np.fromiter((r[0] for r in self.db.execute(
                f"SELECT id FROM chunks WHERE doc IN ({marks}) ORDER BY id", doc_pks)),
                dtype=np.int64)
            runs: list[list[int]] = []
            for cid in ids.tolist():
                if runs and cid == runs[-1][1] + 1:
                    runs[-1][1] = cid
                else:
                    runs.append([cid, cid])
            ids.flags.writeable = False  # every caller of this scope gets this one array
            found = (ids, [(lo, hi) for lo, hi in runs])
            while len(self._scopes) >= 32:
                self._scopes.pop(next(iter(self._scopes)))
            self._scopes[key] = found
        return found

    def vectors(self, ids: np.ndarray | None = None, dim: int | None = None):
        """(ids, vectors) for the given chunk ids, or for all chunks."""
        if ids is None:
            rows = self.db.execute("SELECT id, embedding FROM chunks ORDER BY id").fetchall()
        else:
            rows = []
            ids = [int(i) for i in ids]
            for start in range(0, len(ids), 900):
                part = ids[start:start + 900]
                marks = ",".join("?" * len(part))
                rows += self.db.execute(
                    f"SELECT id, embedding FROM chunks WHERE id IN ({marks})", part
                ).fetchall()
        out_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        if not rows:
            return out_ids, np.zeros((0, dim or 0), dtype=np.float32)
        vecs = np.vstack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
        return out_ids, vecs

    def chunks(self, ids: list[int]) -> dict[int, ChunkRecord]:
        out: dict[int, ChunkRecord] = {}
        ids = [int(i) for i in ids]
        for start in range(0, len(ids), 900):
            part = ids[start:start + 900]
            marks = ",".join("?" * len(part))
            for cid, doc_id, seq, text, fp, lp in self.db.execute(
                f"SELECT c.id, d.doc_id, c.seq, c.text, c.first_page, c.last_page FROM chunks c "
                f"JOIN documents d ON c.doc = d.id WHERE c.id IN ({marks})", part
            ):
                out[cid] = ChunkRecord(cid, doc_id, seq, text, fp, lp)
        return out

    def page_chunks(self, doc_id: str, pages: list[int]) -> list[ChunkRecord]:
        """The chunks of a document that cover any of ``pages``, in document order."""
        if not pages:
            return []
        rows = self.db.execute(
            "SELECT DISTINCT c.id, d.doc_id, c.seq, c.text, c.first_page, c.last_page "
            "FROM chunks c JOIN documents d ON c.doc = d.id JOIN json_each(?) p "
            "ON p.value BETWEEN c.first_page AND c.last_page WHERE d.doc_id = ? ORDER BY c.seq",
            (json.dumps([int(p) for p in pages]), doc_id)).fetchall()
        return [ChunkRecord(*row) for row in rows]

    def id_runs(self, doc_pks: list[int]) -> list[tuple[int, int]]:
        """The chunk ids of some documents as runs of consecutive ids (one run per document,
        since a document's chunks are inserted together)."""
        return self._scope(doc_pks)[1]

    def fts_search(self, query: str, k: int, doc_pks: list[int] | None = None):
        """BM25 top-k as (chunk id, score) with higher = better; optionally only in doc_pks.

        A scope is searched as rowid ranges, which FTS5 applies inside its index scan (an
        `IN (subquery)` filter makes it run the full-text query once per candidate row).
        bm25 uses corpus-wide statistics, so scores from several ranges compare directly."""
        match = fts_query(query)
        if match is None or k <= 0:
            return []
        sql = "SELECT rowid, -bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?"
        tail = " ORDER BY bm25(chunks_fts) LIMIT ?"
        if doc_pks is None:
            return [(int(r), float(s)) for r, s in self.db.execute(sql + tail, (match, k))]
        hits: list[tuple[int, float]] = []
        for lo, hi in self.id_runs(doc_pks):
            hits += [(int(r), float(s)) for r, s in self.db.execute(
                sql + " AND rowid BETWEEN ? AND ?" + tail, (match, lo, hi, k))]
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits[:k]

    def counts(self) -> dict[str, int]:
        one = lambda sql: self.db.execute(sql).fetchone()[0]  # noqa: E731
        return {
            "documents": one("SELECT count(*) FROM documents"),
            "pages": one("SELECT count(*) FROM pages"),
            "tables": one("SELECT count(*) FROM tables"),
            "chunks": one("SELECT count(*) FROM chunks"),
        }
