"""FAISS vectors keyed by chunk id, rebuilt from the catalog whenever the two disagree.

The SQLite catalog holds every chunk's vector, committed with the chunk; this file is a search
structure over them (``IndexIDMap2`` over inner product on unit vectors). It is saved by atomic
rename, and on open it is checked against the catalog's chunk ids, so a run killed between a
commit and a save is repaired instead of trusted.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import faiss
import numpy as np


class VectorIndex:
    def __init__(self, dim: int):
        self.dim = dim
        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    def ids(self) -> np.ndarray:
        return faiss.vector_to_array(self.index.id_map).astype(np.int64)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        if len(ids):
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                                    np.asarray(ids, dtype=np.int64))

    def remove(self, ids: Iterable[int]) -> None:
        ids = np.fromiter(ids, dtype=np.int64)
        if len(ids):
            self.index.remove_ids(faiss.IDSelectorBatch(ids))

    def search(self, query: np.ndarray, k: int, scope: np.ndarray | None = None):
        """Top-k (ids, scores) for one query vector, optionally only among ``scope`` ids."""
        if self.size == 0 or k <= 0 or (scope is not None and len(scope) == 0):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        params = None
        if scope is not None:
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(np.asarray(scope, dtype=np.int64)))
            k = min(k, len(scope))
        scores, ids = self.index.search(q, min(k, self.size), params=params)
        keep = ids[0] >= 0
        return ids[0][keep], scores[0][keep]

    def save(self, path: Path) -> None:
        """Write beside ``path``, flush to disk, then rename over it (and flush the rename):
        after a crash the file is the old one or the new one, never a torn one."""
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        try:
            faiss.write_index(self.index, str(tmp))
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)

    @classmethod
    def load(cls, path: Path, dim: int) -> "VectorIndex":
        vi = cls(dim)
        index = faiss.read_index(str(path))
        if index.d != dim:
            raise ValueError(f"{path}: vectors have dim {index.d}, the index expects {dim}")
        vi.index = faiss.downcast_index(index) if not isinstance(index, faiss.IndexIDMap2) else index
        return vi
