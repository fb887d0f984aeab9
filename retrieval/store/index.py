"""An index folder: the SQLite catalog (documents, pages, tables, chunks, FTS5, vectors) and a
FAISS file over the same chunk ids. Search can be scoped to a set of documents without
rebuilding anything: FTS5 by a rowid filter, FAISS by an ID selector.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from finrag.retrieval.store.catalog import Catalog, CatalogReader, DocumentRecord
from finrag.retrieval.store.fusion import rrf
from finrag.retrieval.store.lock import WriterLock
from finrag.retrieval.store.snapshot import PublishedIndex, is_publish_root
from finrag.retrieval.store.vectors import VectorIndex

CATALOG_FILE = "catalog.sqlite"
VECTORS_FILE = "vectors.faiss"


def default_index_dir() -> Path:
    """$FINRAG_INDEX, else the per-user data folder."""
    env = os.environ.get("FINRAG_INDEX")
    if env:
        return Path(env)
    data = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share")
    return Path(data) / "finrag" / "index"


@dataclass
class IndexSettings:
    """Fixed when an index is created; every later writer must agree with them."""

    chunk_size: int = 2500
    chunk_overlap: int = 1250
    embedder: str = "minilm"
    embedder_kind: str = "sentence-transformers"  # models.embedders.load_embedder(kind=...)
    embedder_model_id: str = ""
    dim: int = 0
    normalize: bool = True  # unit vectors (inner product = cosine)
    variant: str = "plain"  # retrieval.ingest.variants: "plain" | "meta" | "llmctx"
    context_model: str = ""  # llmctx: the LLM that wrote the chunk contexts


@dataclass
class Hit:
    chunk_id: int
    doc_id: str
    first_page: int
    last_page: int
    score: float
    rank: int
    text: str
    # the per-retriever ranks that RRF fused (None where the chunk was not in that list)
    fts_rank: int | None = None
    dense_rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class EmbedderMismatchError(ValueError):
    """The index's vectors were made by another embedder than the one at hand."""


def describe_embedder(model_id: str, kind: str, dim: int, normalize: bool) -> str:
    return f"{model_id} ({kind}, {dim}-d, {'normalised' if normalize else 'unnormalised'})"


class UnknownDocumentError(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def unknown_document(doc_id: str) -> UnknownDocumentError:
    """The error for a document id that is not in the index; a caller who may not read the
    document gets this same one (``retrieval.store.access``)."""
    return UnknownDocumentError(f"unknown document {doc_id!r} (see `finrag documents`)")


class SearchIndex(Protocol):
    """A read-only hybrid index: its settings, catalog and search."""

    settings: Any
    catalog: CatalogReader

    def search(self, query: str, query_vector: Any, **kwargs) -> list[Any]:
        """Hybrid search (``Index.search``'s keywords: k, doc_ids, fts_k, dense_k, rrf_k) →
        ``Hit``s."""
        ...

    def generation(self) -> int:
        """``Catalog.generation``: moves when documents or their collections change."""
        ...

    def close(self) -> None:
        ...


class Index(SearchIndex):
    """Open with ``Index.open(dir)``; pass an embedder to search densely or to add documents."""

    def __init__(self, folder: Path, catalog: Catalog, settings: IndexSettings,
                 vectors: VectorIndex, readonly: bool):
        self.folder = folder
        self.catalog = catalog
        self.settings = settings
        self.vectors = vectors
        self.readonly = readonly
        self._dirty = False
        self._lock: WriterLock | None = None
        self._generation = catalog.generation()  # what the vectors hold

    # lifecycle --------------------------------------------------------------
    @classmethod
    def create_or_open(cls, folder: str | Path, settings: IndexSettings) -> "Index":
        """Open an index for writing, creating it with ``settings`` if it does not exist.
        An existing index must have been built with the same chunking and embedder."""
        folder = Path(folder)
        _refuse_published(folder)
        folder.mkdir(parents=True, exist_ok=True)
        lock = WriterLock(folder).acquire()
        try:
            catalog = Catalog(folder / CATALOG_FILE)
        except BaseException:
            lock.release()
            raise
        stored = catalog.get_settings()
        if not stored:
            catalog.put_settings(asdict(settings))
        else:
            have = IndexSettings(**stored)
            try:
                _check_embedder(folder, have, settings.embedder_model_id or settings.embedder,
                                settings.embedder_kind, settings.dim, settings.normalize)
            except EmbedderMismatchError:
                catalog.close()
                lock.release()
                raise
            for field in ("chunk_size", "chunk_overlap", "dim", "variant", "context_model"):
                if getattr(settings, field) and getattr(settings, field) != getattr(have, field):
                    catalog.close()
                    lock.release()
                    raise ValueError(
                        f"index {folder} was built with {field}={getattr(have, field)!r}; "
                        f"this run asks for {getattr(settings, field)!r}. Use another --index "
                        "folder or the index's own settings."
                    )
            settings = have
        return cls._finish_open(folder, catalog, settings, readonly=False, lock=lock)

    @classmethod
    def open(cls, folder: str | Path, *, readonly: bool = True,
             immutable: bool = False) -> "Index | PublishedIndex":
        """The index in ``folder``; a folder of published snapshots (``finrag publish``) opens
        as its current version, which follows the newer ones published later
        (``retrieval.store.snapshot.PublishedIndex``). ``immutable``: a folder nothing changes
        (one snapshot), opened so that nothing is written beside its files."""
        folder = Path(folder)
        if not (folder / CATALOG_FILE).is_file():
            if is_publish_root(folder):
                if not readonly:
                    _refuse_published(folder)
                return PublishedIndex.open(folder, lambda f: cls.open(f, immutable=True))
            raise FileNotFoundError(
                f"no index at {folder} (expected {CATALOG_FILE}); build one with `finrag ingest`"
            )
        lock = None if readonly else WriterLock(folder).acquire()
        try:
            catalog = Catalog(folder / CATALOG_FILE, readonly=readonly, immutable=immutable)
        except BaseException:
            if lock:
                lock.release()
            raise
        settings = IndexSettings(**catalog.get_settings())
        return cls._finish_open(folder, catalog, settings, readonly=readonly, lock=lock)

    @classmethod
    def _finish_open(cls, folder, catalog, settings, *, readonly, lock=None) -> "Index":
        if lock is not None:  # the only writer: what a killed one left half-written goes
            for tmp in folder.glob(VECTORS_FILE + ".*.tmp"):
                tmp.unlink(missing_ok=True)
        vectors = None
        path = folder / VECTORS_FILE
        if settings.dim and path.is_file():
            try:
                vectors = VectorIndex.load(path, settings.dim)
            except Exception:
                vectors = None  # unreadable: rebuilt from the catalog below
        index = cls(folder, catalog, settings, vectors or VectorIndex(max(settings.dim, 1)), readonly)
        index._lock = lock
        try:
            index._sync_vectors(vectors is None)
        except BaseException:
            index.close()
            raise
        return index

    def _sync_vectors(self, force: bool) -> None:
        """Make the FAISS ids equal the catalog's chunk ids: the missing ones are read from the
        stored vectors and those of removed chunks dropped (``force``: all rebuilt)."""
        want = self.catalog.chunk_ids()
        have = np.sort(self.vectors.ids())
        if not force and len(want) == len(have) and np.array_equal(want, have):
            return
        if force:
            self.vectors = VectorIndex(max(self.settings.dim, 1)).configure(
                **{k: getattr(self.vectors, k) for k in ("approximate", "nprobe", "ef_search")})
            have = have[:0]
        self.vectors.remove(np.setdiff1d(have, want, assume_unique=True).tolist())
        missing = np.setdiff1d(want, have, assume_unique=True)
        if len(missing):
            self.vectors.add(*self.catalog.vectors(missing, dim=self.settings.dim))
        if not self.readonly:
            self._dirty = True
            self.save()

    def generation(self) -> int:
        return self.catalog.generation()

    def refresh(self) -> bool:
        """Catch up with what other processes wrote since (a served index that an ingest
        grows): FAISS gets the chunks added and loses those removed; the catalog itself is
        read live. True when anything had changed."""
        now = self.catalog.generation()
        if now == self._generation:
            return False
        self._sync_vectors(False)
        self._generation = now
        return True

    def save(self) -> None:
        if self._dirty and not self.readonly:
            self.vectors.save(self.folder / VECTORS_FILE)
            self._dirty = False

    def close(self) -> None:
        try:
            self.save()
            self.catalog.close()
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> "Index":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def check_embedder(self, embedder) -> None:
        """Refuse an embedder other than the one the index's vectors were made with (model,
        kind, dimension, normalisation), naming both."""
        check_embedder(self.folder, self.settings, embedder)

    # writing ----------------------------------------------------------------
    def add_document(self, meta, parsed, chunks, vectors, *, source_path: str, sha256: str,
                     replace: bool = False) -> int:
        """Add a document; ``replace``: the one of the same id goes in the same transaction."""
        if self.readonly:
            raise PermissionError("index opened read-only")
        if vectors.ndim != 2 or vectors.shape[1] != self.settings.dim:
            raise ValueError(f"vectors must be (n, {self.settings.dim})")
        old = self.catalog.document(meta.doc_id) if replace else None
        old_ids = self.catalog.chunk_ids([old.pk]) if old is not None else []
        pk, ids = self.catalog.add_document(meta, parsed, chunks, vectors,
                                            source_path=source_path, sha256=sha256,
                                            replace=replace)
        self.vectors.remove(int(i) for i in old_ids)
        self.vectors.add(np.asarray(ids, dtype=np.int64), vectors)
        self._dirty = True
        self._generation = self.catalog.generation()
        return pk

    def remove_document(self, doc_id: str) -> bool:
        """Delete a document with its pages, tables, chunks and vectors; False if unknown."""
        if self.readonly:
            raise PermissionError("index opened read-only")
        if self.catalog.document(doc_id) is None:
            return False
        ids = self.catalog.remove_document(doc_id)
        self.vectors.remove(ids)
        self._generation = self.catalog.generation()
        self._dirty = True
        self.save()
        return True

    # reading ----------------------------------------------------------------
    def documents(self) -> list[DocumentRecord]:
        return self.catalog.documents()

    def scope(self, doc_ids: list[str] | None) -> list[int] | None:
        """Catalog keys for doc ids; an unknown id is an error (never silently widened)."""
        if doc_ids is None:
            return None
        pks = []
        for doc_id in doc_ids:
            rec = self.catalog.document(doc_id)
            if rec is None:
                raise unknown_document(doc_id)
            pks.append(rec.pk)
        return pks

    def search_fts(self, query: str, k: int = 20, doc_ids: list[str] | None = None):
        return self.catalog.fts_search(query, k, self.scope(doc_ids))

    def search_dense(self, query_vector: np.ndarray, k: int = 30, doc_ids: list[str] | None = None):
        pks = self.scope(doc_ids)
        scope = None if pks is None else self.catalog.chunk_ids(pks)
        ids, scores = self.vectors.search(query_vector, k, scope)
        return [(int(i), float(s)) for i, s in zip(ids, scores)]

    def search(
        self,
        query: str,
        query_vector: np.ndarray | None,
        *,
        k: int = 10,
        doc_ids: list[str] | None = None,
        fts_k: int = 20,
        dense_k: int = 30,
        rrf_k: int = 60,
    ) -> list[Hit]:
        """Hybrid search: FTS5 BM25 top ``fts_k`` and dense top ``dense_k``, fused by RRF.
        With ``doc_ids`` only chunks of those documents can be returned."""
        fts = self.search_fts(query, fts_k, doc_ids)
        dense = self.search_dense(query_vector, dense_k, doc_ids) if query_vector is not None else []
        fts_rank = {cid: r for r, (cid, _) in enumerate(fts, start=1)}
        dense_rank = {cid: r for r, (cid, _) in enumerate(dense, start=1)}
        fused = rrf([[c for c, _ in fts], [c for c, _ in dense]], k=rrf_k)[:k]
        records = self.catalog.chunks([c for c, _ in fused])
        hits = []
        for rank, (cid, score) in enumerate(fused, start=1):
            rec = records[cid]
            hits.append(Hit(cid, rec.doc_id, rec.first_page, rec.last_page, score, rank, rec.text,
                            fts_rank.get(cid), dense_rank.get(cid)))
        return hits

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.folder.iterdir() if p.is_file())


def _refuse_published(folder: Path) -> None:
    if is_publish_root(folder):
        raise PermissionError(
            f"{folder} holds published snapshots, which are read-only: write to the index "
            f"they were published from, then `finrag publish` it again")


def check_embedder(folder: Path, settings: IndexSettings, embedder) -> None:
    """``Index.check_embedder`` where the index is not open (a worker given its settings)."""
    _check_embedder(folder, settings, embedder.model_id,
                    getattr(embedder, "kind", "sentence-transformers"), embedder.dim,
                    getattr(embedder, "normalize", True), name=getattr(embedder, "name", ""))


def _check_embedder(folder: Path, have: IndexSettings, model_id: str, kind: str, dim: int,
                    normalize: bool, name: str = "") -> None:
    # an index from before model ids were recorded is known by its short name ("minilm")
    built = have.embedder_model_id or have.embedder
    same_model = model_id in (built, have.embedder) or (name and name == have.embedder)
    if same_model and kind == have.embedder_kind and (not have.dim or dim == have.dim) \
            and normalize == have.normalize:
        return
    raise EmbedderMismatchError(
        f"index {folder} was built with the embedder "
        f"{describe_embedder(built, have.embedder_kind, have.dim, have.normalize)}; this run "
        f"uses {describe_embedder(model_id, kind, dim, normalize)}. Search it with the "
        "embedder it was built with (a profile whose embedder role names it, or "
        "$FINRAG_EMBEDDER_MODEL), or ingest into another --index")
