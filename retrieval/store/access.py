"""An index as one caller may read it: only the documents of the collections its token names.

``ScopedIndex`` stands where the index stands (it is a ``SearchIndex``) and narrows every read
before it reaches the index: a search over the whole corpus becomes a search of the readable
documents, which the index applies inside FTS5 (rowid ranges) and FAISS (an ID selector); a
search, page or table of a document outside them fails exactly as for a document that does
not exist, so a caller learns nothing of what it may not read.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from finrag.retrieval.store.catalog import CatalogReader
from finrag.retrieval.store.index import SearchIndex, unknown_document


class ScopedCatalog(CatalogReader):
    """A catalog's read side narrowed to ``readable`` doc ids."""

    def __init__(self, catalog: CatalogReader, readable: frozenset[str]):
        self._catalog, self.doc_ids = catalog, frozenset(readable)

    def document(self, doc_id: str) -> Any:
        return self._catalog.document(doc_id) if doc_id in self.doc_ids else None

    def documents(self) -> list[Any]:
        return [d for d in self._catalog.documents() if d.doc_id in self.doc_ids]

    def pages(self, doc_id: str) -> list[tuple[int, str]]:
        return self._catalog.pages(doc_id) if doc_id in self.doc_ids else []

    def page_chunks(self, doc_id: str, pages: list[int]) -> list[Any]:
        return self._catalog.page_chunks(doc_id, pages) if doc_id in self.doc_ids else []

    def tables(self, doc_id: str, page: int | None = None) -> list[dict[str, Any]]:
        return self._catalog.tables(doc_id, page) if doc_id in self.doc_ids else []

    def readable(self, collections: frozenset[str] | None) -> list[str]:
        within = self._catalog.readable(collections)
        return sorted(self.doc_ids if within is None else self.doc_ids.intersection(within))

    def fingerprints(self) -> dict[str, str]:
        return {d: sha for d, sha in self._catalog.fingerprints().items() if d in self.doc_ids}

    def vectors(self, ids: Any = None, dim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        # chunk ids come from a scoped search; all of them at once would be the whole corpus
        if ids is None:
            raise PermissionError("a scoped catalog gives the vectors of chosen chunks only")
        return self._catalog.vectors(ids, dim)


class ScopedIndex(SearchIndex):
    """``index`` as a caller who may read only ``readable`` doc ids sees it."""

    def __init__(self, index: SearchIndex, readable: frozenset[str] | list[str]):
        self._index = index
        self.readable = frozenset(readable)
        self.settings = index.settings
        self.catalog = ScopedCatalog(index.catalog, self.readable)

    def search(self, query: str, query_vector: Any, **kwargs) -> list[Any]:
        doc_ids = kwargs.pop("doc_ids", None)
        if doc_ids is None:  # the whole corpus: the whole readable part of it
            doc_ids = sorted(self.readable)
        else:
            for doc_id in doc_ids:
                if doc_id not in self.readable:
                    raise unknown_document(doc_id)
        if not doc_ids:  # nothing readable: an empty scope must never widen to everything
            return []
        return self._index.search(query, query_vector, doc_ids=list(doc_ids), **kwargs)

    def documents(self) -> list[Any]:
        return self.catalog.documents()

    def generation(self) -> int:
        return self._index.generation()

    def close(self) -> None:
        """The index itself stays open: other callers share it."""
