"""The vector index options and what each costs, computed rather than measured: IVF list
counts, the settings of a run, training points, index bytes and build work by option and size
(``benchmarks.vector_index`` measures them; its report projects them)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

OPTIONS = ("flat", "ivf", "hnsw", "ivfpq", "ivfsq8")
VECTOR_INDEX_OPTIONS = ("flat", "ivf", "hnsw")  # through the project's VectorIndex
STREAM = "flat-stream"
HNSW_M = 32  # VectorIndex's
MEMORY_SHARE = 0.8  # of MemAvailable: an option computed to need more is not run
PILOT = 20_000  # a larger size's build time is projected from a build of this many
GIB = 1024 ** 3
DOCS_BEGIN, DOCS_END = "<!-- vector_index:begin -->", "<!-- vector_index:end -->"


def nlist_for(n: int) -> int:
    """IVF lists for n vectors: VectorIndex's rule (retrieval/store/vectors.py)."""
    return max(1, min(4 * int(np.sqrt(n)), n // 39 or 1))


@dataclass
class Settings:
    dim: int
    k: int = 10
    nprobe: tuple[int, ...] = (16, 64)
    ef_search: tuple[int, ...] = (64, 256)
    pq_m: int = 64
    train_per_list: int = 64  # plain-faiss IVF training sample: vectors per list
    max_seconds: float = 3600.0


def train_points(option: str, n: int, s: Settings) -> int:
    if option == "ivf":  # VectorIndex trains on every vector; faiss samples 256 a list
        return min(n, 256 * nlist_for(n))
    if option in ("ivfpq", "ivfsq8"):
        return min(n, max(s.train_per_list * nlist_for(n), 256 if option == "ivfpq" else 0))
    return 0


def computed_bytes(option: str, n: int, s: Settings) -> dict[str, int]:
    """Computed (not measured) sizes: ``index`` what the option's own structure holds,
    ``resident`` what stays in memory once built (VectorIndex keeps its flat index beside a
    derived one), ``peak`` the most held while building."""
    d, nl = s.dim, nlist_for(n)
    flat = n * (4 * d + 8)  # IndexIDMap2: the vectors and an int64 id each
    centroids = nl * d * 4
    if option in ("flat", STREAM):
        index = flat if option == "flat" else 0
        return {"index": index, "resident": index, "peak": index + (0 if option == "flat"
                                                                      else 2 * 50_000 * d * 4)}
    if option == "ivf":
        index = n * (4 * d + 8) + centroids
        return {"index": index, "resident": flat + index, "peak": flat + n * 4 * d + index}
    if option == "hnsw":
        index = n * (4 * d + 8 + 2 * HNSW_M * 4 + 8)  # vectors, id, level-0 links, offsets
        return {"index": index, "resident": flat + index, "peak": flat + n * 4 * d + index}
    code = s.pq_m if option == "ivfpq" else d
    index = n * (code + 8) + centroids + (256 * d * 4 if option == "ivfpq" else 2 * d * 4)
    return {"index": index, "resident": index,
            "peak": index + train_points(option, n, s) * d * 4 + 50_000 * d * 4}


def build_work(option: str, n: int, s: Settings) -> float:
    """Build work in arbitrary units, to project a build's seconds from a smaller one's."""
    nl, t = nlist_for(n), train_points(option, n, s)
    if option == "flat":
        return n
    if option == "hnsw":
        return n * math.log2(max(n, 2))
    if option in ("ivf", "ivfpq", "ivfsq8"):  # k-means (10 iterations) + assigning every vector
        return 10 * t * nl + n * nl + (25 * t * 256 if option == "ivfpq" else 0)
    raise ValueError(option)
