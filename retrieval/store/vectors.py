"""FAISS vectors keyed by chunk id, rebuilt from the catalog whenever the two disagree.

The SQLite catalog holds every chunk's vector, committed with the chunk; this file is a search
structure over them (``IndexIDMap2`` over inner product on unit vectors). It is saved by atomic
rename, and on open it is checked against the catalog's chunk ids, so a run killed between a
commit and a save is repaired instead of trusted.

Searching. The file always holds the exact flat index; two faster structures are built from it
in memory when asked for, and used for whole-corpus searches only:

- on the GPU, when faiss reports GPUs (faiss-gpu): a GPU copy of the flat index (exact);
- ``approximate="ivf"`` or ``"hnsw"``: an approximate index for large corpora (past ~1M
  chunks), with its recall@10 against flat measured by ``benchmarks.vector_recall``.

A scoped search (chunks of chosen documents) is always exact: on the CPU flat index through an
ID selector; where the whole-corpus index lives on a GPU, which takes no ID selector, by
gathering the scope's own vectors and ranking them by inner product (``scoped="gather"``; a
routed scope is a few hundred to a few thousand chunks). Adding or removing vectors drops the
derived structures; they are rebuilt on the next search.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import faiss
import numpy as np


APPROXIMATE = ("ivf", "hnsw")


def faiss_gpus() -> int:
    """GPUs faiss can use (0 with faiss-cpu)."""
    return faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0


class VectorIndex:
    # nprobe 64 / efSearch 256: recall@10 against flat 0.93 / 0.99 on the 95 FinanceBench dev
    # questions over var/fb-index (benchmarks/results/vector_recall_cpu)
    def __init__(self, dim: int, *, approximate: str | None = None, nprobe: int = 64,
                 ef_search: int = 256, gpu: bool | None = None, scoped: str | None = None):
        if approximate not in (None, *APPROXIMATE):
            raise ValueError(f"approximate index {approximate!r}: none, ivf or hnsw")
        self.dim = dim
        self.index = faiss.IndexIDMap2(faiss.IndexFlatIP(dim))
        self.approximate, self.nprobe, self.ef_search = approximate, nprobe, ef_search
        self.gpu = faiss_gpus() > 0 if gpu is None else gpu
        if scoped not in (None, "selector", "gather"):
            raise ValueError(f"scoped search {scoped!r}: selector or gather")
        self.scoped = scoped or ("gather" if self.gpu else "selector")
        self._fast = None  # the whole-corpus search structure derived from the flat index
        self._rows: tuple[np.ndarray, np.ndarray] | None = None  # sorted ids, their rows

    def configure(self, **settings) -> "VectorIndex":
        """Change the search settings (approximate, nprobe, ef_search, gpu, scoped)."""
        other = VectorIndex(self.dim, **{k: getattr(self, k) for k in
                                         ("approximate", "nprobe", "ef_search", "gpu")}
                            | {"scoped": self.scoped} | settings)
        self.approximate, self.nprobe, self.ef_search = (other.approximate, other.nprobe,
                                                         other.ef_search)
        self.gpu, self.scoped, self._fast = other.gpu, other.scoped, None
        return self

    @property
    def size(self) -> int:
        return int(self.index.ntotal)

    def ids(self) -> np.ndarray:
        return faiss.vector_to_array(self.index.id_map).astype(np.int64)

    def add(self, ids: np.ndarray, vectors: np.ndarray) -> None:
        self._fast, self._rows = None, None
        if len(ids):
            self.index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32),
                                    np.asarray(ids, dtype=np.int64))

    def remove(self, ids: Iterable[int]) -> None:
        ids = np.fromiter(ids, dtype=np.int64)
        self._fast, self._rows = None, None
        if len(ids):
            self.index.remove_ids(faiss.IDSelectorBatch(ids))

    def search(self, query: np.ndarray, k: int, scope: np.ndarray | None = None):
        """Top-k (ids, scores) for one query vector, optionally only among ``scope`` ids
        (exactly, whatever the whole-corpus structure is)."""
        if self.size == 0 or k <= 0 or (scope is not None and len(scope) == 0):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        if scope is not None:
            scope = np.asarray(scope, dtype=np.int64)
            if self.scoped == "gather":
                return self._search_gathered(q[0], k, scope)
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(scope))
            scores, ids = self.index.search(q, min(k, len(scope), self.size), params=params)
        else:
            scores, ids = self._whole().search(q, min(k, self.size))
        keep = ids[0] >= 0
        return ids[0][keep], scores[0][keep]

    def _search_gathered(self, q: np.ndarray, k: int, scope: np.ndarray):
        """Exact top-k among ``scope``: the scope's vectors gathered from the flat index and
        ranked by inner product (ties by id, as the flat index orders them)."""
        if self._rows is None:
            ids = self.ids()
            order = np.argsort(ids, kind="stable")
            self._rows = ids[order], order
        sorted_ids, rows = self._rows
        at = np.searchsorted(sorted_ids, scope)
        found = (at < len(sorted_ids)) & (sorted_ids[np.minimum(at, len(sorted_ids) - 1)] == scope)
        members, member_rows = scope[found], rows[at[found]]
        if not len(members):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores = self.index.index.reconstruct_batch(member_rows) @ q
        top = np.lexsort((members, -scores))[:k]
        return members[top], scores[top].astype(np.float32)

    def _whole(self):
        """The whole-corpus search structure: approximate, on the GPU, or the flat index."""
        if self._fast is not None:
            return self._fast
        if self.approximate is None and not self.gpu:
            return self.index
        flat = self.index.index
        vectors = flat.reconstruct_n(0, flat.ntotal)
        if self.approximate == "ivf":
            nlist = max(1, min(4 * int(np.sqrt(flat.ntotal)), flat.ntotal // 39 or 1))
            inner = faiss.IndexIVFFlat(faiss.IndexFlatIP(self.dim), self.dim, nlist,
                                       faiss.METRIC_INNER_PRODUCT)
            inner.train(vectors)
            inner.nprobe = self.nprobe
        elif self.approximate == "hnsw":
            inner = faiss.IndexHNSWFlat(self.dim, 32, faiss.METRIC_INNER_PRODUCT)
            inner.hnsw.efSearch = self.ef_search
        else:
            inner = faiss.IndexFlatIP(self.dim)
        fast = faiss.IndexIDMap2(inner)
        fast.add_with_ids(vectors, self.ids())
        if self.gpu and self.approximate != "hnsw":  # faiss has no GPU HNSW
            fast = faiss.index_cpu_to_all_gpus(fast)
        self._fast = fast
        return fast

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
