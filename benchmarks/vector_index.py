"""Vector index options past one machine's RAM: flat, IVF-Flat, HNSW, IVF-PQ and IVF-SQ8 on
generated vectors of the gpu profile's dimension (BAAI/bge-m3: 1024, unit vectors, inner
product): build time, memory, recall@10 against exact search, p50/p95 single-query search,
and the index size and query cost projected to a larger corpus (20M chunks by default).

    python -m finrag.benchmarks.vector_index --sizes 1000000,5000000      # alone on the machine
    python -m finrag.benchmarks.vector_index --report-only [--write-docs docs/benchmarks.md]

Vectors are clustered, not uniform: 1,024 centres on the unit sphere, each cluster spread
widely over 24 local directions of its own plus a little isotropic noise, then normalized
(float32, seeded; see ``Generator``). They are made block by block (each block from its own
seed), so the base set never sits in RAM whole and a smaller size is a prefix of a larger one.
Queries come from the same generator on another seed, never from the base set.

Exact top-10 (the ground truth) is computed by streaming the base blocks through an
``IndexFlatIP`` and merging; the same pass times exact single-query search by streaming
(``flat-stream``: per query, the sum of its searches over the blocks), so flat search is timed
at sizes whose flat index does not fit. flat, ivf and hnsw are the project's ``VectorIndex``
(``retrieval/store/vectors.py``: it keeps the flat index and derives IVF/HNSW from it); ivfpq
and ivfsq8 are plain faiss (``VectorIndex`` has no compressed option). An option whose
computed peak memory exceeds the memory available, or whose build is projected past
``--max-seconds``, is not run and the report says why, with the computed figure. Timed work:
run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from finrag.benchmarks import report as R

OPTIONS = ("flat", "ivf", "hnsw", "ivfpq", "ivfsq8")
VECTOR_INDEX_OPTIONS = ("flat", "ivf", "hnsw")  # through the project's VectorIndex
STREAM = "flat-stream"
HNSW_M = 32  # VectorIndex's
MEMORY_SHARE = 0.8  # of MemAvailable: an option computed to need more is not run
PILOT = 20_000  # a larger size's build time is projected from a build of this many
GIB = 1024 ** 3
DOCS_BEGIN, DOCS_END = "<!-- vector_index:begin -->", "<!-- vector_index:end -->"


def _bar(**kw):
    from tqdm import tqdm

    return tqdm(file=sys.stderr, dynamic_ncols=True, **kw)


# ---------------------------------------------------------------------------------------------
# generated vectors


@dataclass(frozen=True)
class Generator:
    """Clustered unit vectors: point = centre + local offset + noise, normalized. Each of
    ``centres`` clusters (sizes log-normal, so uneven) spreads over ``local_dims`` directions of
    its own drawn from a shared pool (real embeddings have a low intrinsic dimension: isotropic
    noise alone in 1024 dimensions makes every neighbour equidistant); ``spread`` and ``noise``
    are the norms of the local offset and of the isotropic noise against the centre's 1.

    The defaults were set (before any index figure at 1M/5M existed) so that faiss IVF-Flat on
    100,000 of them at 1,024 dims (nlist = 4√n) finds recall@10 0.66 / 0.80 / 0.84 at nprobe
    4 / 16 / 64, near the project's real corpus (47,732 MiniLM chunk vectors,
    benchmarks/results/vector_recall_cpu: 0.65 / 0.82 / 0.93): 4,096 tight clusters gave 0.97+
    at nprobe 4 (every neighbour in the query's own list), too easy to say anything."""

    dim: int
    seed: int = 0
    centres: int = 1024
    local_dims: int = 24
    pool: int = 1024
    spread: float = 2.5
    noise: float = 0.3
    block: int = 50_000

    def __post_init__(self):
        rng = np.random.default_rng([self.seed, 0])
        c = rng.standard_normal((self.centres, self.dim), dtype=np.float32)
        p = rng.standard_normal((self.pool, self.dim), dtype=np.float32)
        w = np.exp(rng.normal(0.0, 0.7, self.centres))
        local = np.argsort(rng.random((self.centres, self.pool)), axis=1)[:, :self.local_dims]
        object.__setattr__(self, "_c", c / np.linalg.norm(c, axis=1, keepdims=True))
        object.__setattr__(self, "_p", p / np.linalg.norm(p, axis=1, keepdims=True))
        object.__setattr__(self, "_w", w / w.sum())
        object.__setattr__(self, "_local", local)

    def settings(self) -> dict[str, Any]:
        return asdict(self)

    def _draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        labels = rng.choice(self.centres, size=n, p=self._w)
        z = rng.standard_normal((n, self.local_dims), dtype=np.float32)
        z *= self.spread / math.sqrt(self.local_dims)
        x = rng.standard_normal((n, self.dim), dtype=np.float32)
        x *= self.noise / math.sqrt(self.dim)
        x += self._c[labels]
        order = np.argsort(labels, kind="stable")
        cuts = np.flatnonzero(np.diff(labels[order])) + 1
        for rows in np.split(order, cuts):
            x[rows] += z[rows] @ self._p[self._local[labels[rows[0]]]]
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        return x

    def block_at(self, b: int) -> np.ndarray:
        return self._draw(np.random.default_rng([self.seed, 1, b]), self.block)

    def base(self, n: int, start: int = 0, desc: str | None = None):
        """The base vectors [start, n) in block-sized pieces: (offset, float32 array)."""
        bar = _bar(total=n - start, desc=desc, unit="vec", unit_scale=True) if desc else None
        b = start // self.block
        while b * self.block < n:
            lo = b * self.block
            x = self.block_at(b)[max(start - lo, 0):n - lo]
            yield max(lo, start), x
            if bar is not None:
                bar.update(len(x))
            b += 1
        if bar is not None:
            bar.close()

    def queries(self, n: int) -> np.ndarray:
        return self._draw(np.random.default_rng([self.seed, 2]), n)


# ---------------------------------------------------------------------------------------------
# ground truth (and exact search timed by streaming)


def ground_truth(gen: Generator, sizes: list[int], queries: np.ndarray, k: int,
                 timed: int) -> dict[int, dict[str, Any]]:
    """Exact top-k ids of every query at each size, by one pass over the base blocks (each
    block searched by an IndexFlatIP, merged with the running top k); and, for the first
    ``timed`` queries, each one's single-query search time summed over the blocks (exact
    search by streaming, the generation of the blocks not counted)."""
    import faiss

    nq = len(queries)
    best_s = np.full((nq, k), -np.inf, dtype=np.float32)
    best_i = np.full((nq, k), -1, dtype=np.int64)
    spent = np.zeros(timed)
    out: dict[int, dict[str, Any]] = {}
    todo = sorted(set(sizes))
    for offset, x in _split(gen.base(todo[-1], desc="exact top-k (streamed)"), todo):
        flat = faiss.IndexFlatIP(gen.dim)
        flat.add(x)
        s, i = flat.search(queries, min(k, len(x)))
        for j in range(timed):
            t0 = time.perf_counter()
            flat.search(queries[j:j + 1], min(k, len(x)))
            spent[j] += time.perf_counter() - t0
        both_s = np.concatenate([best_s, s], axis=1)
        both_i = np.concatenate([best_i, i + offset], axis=1)
        top = np.argsort(-both_s, axis=1, kind="stable")[:, :k]
        best_s = np.take_along_axis(both_s, top, axis=1)
        best_i = np.take_along_axis(both_i, top, axis=1)
        end = offset + len(x)
        if end in todo:
            out[end] = {"ids": best_i.copy(), "stream_ms": (spent * 1000).tolist()}
    return out


def _split(pieces, cuts: list[int]):
    """The (offset, block) pieces cut again at each of ``cuts``."""
    for offset, x in pieces:
        inside = [c - offset for c in cuts if offset < c < offset + len(x)]
        for lo, hi in zip([0, *inside], [*inside, len(x)]):
            yield offset + lo, x[lo:hi]


def recall_at_k(found: list[np.ndarray], truth: np.ndarray) -> float:
    """Mean share of the exact top k (rows of ``truth``) that each search returned."""
    k = truth.shape[1]
    return float(np.mean([len(set(f[:k].tolist()) & set(t.tolist())) / k
                          for f, t in zip(found, truth)]))


def percentiles(ms: list[float]) -> dict[str, float | None]:
    """p50, and p95 from 30 samples or more only."""
    return {"p50_ms": float(np.percentile(ms, 50)) if ms else None,
            "p95_ms": float(np.percentile(ms, 95)) if len(ms) >= 30 else None}


# ---------------------------------------------------------------------------------------------
# measuring


class PeakRss:
    """Process resident memory before, at its peak during, and after a block. The peak is the
    kernel's high-water mark (VmHWM, reset through /proc/self/clear_refs) where that works,
    else the highest of samples every 20 ms."""

    def __enter__(self):
        self.before = _status("VmRSS")
        self._hwm = False
        try:
            Path("/proc/self/clear_refs").write_text("5")
            self._hwm = _status("VmHWM") is not None
        except OSError:
            pass
        self.peak = self.before or 0
        self._stop = threading.Event()
        if not self._hwm:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _status("VmRSS") or 0)

    def __exit__(self, *exc):
        self._stop.set()
        if not self._hwm:
            self._thread.join()
        self.after = _status("VmRSS")
        self.peak = max(self.peak, _status("VmHWM") if self._hwm else 0, self.after or 0)
        return False

    def figures(self) -> dict[str, int | None]:
        if self.before is None:
            return {"rss_peak_delta": None, "rss_retained_delta": None}
        return {"rss_peak_delta": self.peak - self.before,
                "rss_retained_delta": self.after - self.before}


def _status(field: str) -> int | None:
    """A /proc/self/status figure in bytes (None off Linux)."""
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    m = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    return int(m.group(1)) * 1024 if m else None


def mem_available() -> int | None:
    try:
        m = re.search(r"^MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text(), re.M)
    except OSError:
        return None
    return int(m.group(1)) * 1024 if m else None


def index_bytes(index) -> int:
    """The index's serialized size, counted as faiss writes it (no copy is held)."""
    import faiss

    total = [0]

    def count(chunk: bytes) -> int:
        total[0] += len(chunk)
        return len(chunk)

    writer = faiss.PyCallbackIOWriter(count)
    faiss.write_index(index, writer)
    del writer
    return total[0]


def time_searches(search: Callable[[np.ndarray], np.ndarray], queries: np.ndarray,
                  truth: np.ndarray, warm: int = 5) -> dict[str, Any]:
    """One query at a time: recall@k against ``truth`` and the per-query milliseconds."""
    for q in queries[:warm]:
        search(q)
    found, ms = [], []
    for q in queries:
        t0 = time.perf_counter()
        ids = search(q)
        ms.append((time.perf_counter() - t0) * 1000)
        found.append(np.asarray(ids))
    return {"recall": recall_at_k(found, truth), **percentiles(ms), "queries": len(queries)}


# ---------------------------------------------------------------------------------------------
# the options


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


def build(option: str, gen: Generator, n: int, s: Settings):
    """Build ``option`` over the first n base vectors. Returns (search(q) -> ids, the
    structures to size, implementation, seconds spent in faiss: train and add)."""
    import faiss

    if option in VECTOR_INDEX_OPTIONS:
        from finrag.retrieval.store.vectors import VectorIndex

        vi = VectorIndex(s.dim, approximate=None if option == "flat" else option,
                         nprobe=s.nprobe[-1], ef_search=s.ef_search[-1], gpu=False)
        spent = 0.0
        for offset, x in gen.base(n, desc=f"{option} add n={n:,}"):
            t0 = time.perf_counter()
            vi.add(np.arange(offset, offset + len(x), dtype=np.int64), x)
            spent += time.perf_counter() - t0
        train = 0.0
        if option != "flat":  # the derived structure is built (IVF: trained) on first search
            print(f"{option}: building the derived index over {n:,} vectors", file=sys.stderr)
            t0 = time.perf_counter()
            vi.search(gen.queries(1)[0], s.k)
            train = time.perf_counter() - t0
        parts = {"flat": vi.index} | ({} if option == "flat" else {option: vi._whole()})
        return vi, parts, "VectorIndex", {"add_s": spent, "derive_s": train}

    nl = nlist_for(n)
    quantizer = faiss.IndexFlatIP(s.dim)
    if option == "ivfpq":
        index = faiss.IndexIVFPQ(quantizer, s.dim, nl, s.pq_m, 8, faiss.METRIC_INNER_PRODUCT)
    else:
        index = faiss.IndexIVFScalarQuantizer(quantizer, s.dim, nl, faiss.ScalarQuantizer.QT_8bit,
                                              faiss.METRIC_INNER_PRODUCT)
    index.cp.max_points_per_centroid = max(s.train_per_list, 1)
    t = train_points(option, n, s)
    sample = np.concatenate([x for _, x in gen.base(t, desc=f"{option} training sample")])
    print(f"{option}: training {nl:,} lists on {t:,} vectors", file=sys.stderr)
    t0 = time.perf_counter()
    index.train(sample)
    train = time.perf_counter() - t0
    del sample
    spent = 0.0
    for _, x in gen.base(n, desc=f"{option} add n={n:,}"):
        t0 = time.perf_counter()
        index.add(x)
        spent += time.perf_counter() - t0
    return index, {option: index}, "faiss", {"train_s": train, "add_s": spent}


def searches(option: str, built, s: Settings) -> list[tuple[str, Callable]]:
    """(setting, search(q) -> ids) for each search setting of ``option``."""
    import faiss

    k = s.k
    if option in VECTOR_INDEX_OPTIONS:
        vi = built
        if option == "flat":
            return [("exact", lambda q: vi.search(q, k)[0])]
        name, values = ("nprobe", s.nprobe) if option == "ivf" else ("ef_search", s.ef_search)
        out = []
        for v in values:
            def search(q, v=v):
                if getattr(vi, name) != v:  # set in place: configure() would drop the index
                    setattr(vi, name, v)
                    inner = faiss.downcast_index(vi._whole().index)
                    if option == "ivf":
                        inner.nprobe = v
                    else:
                        inner.hnsw.efSearch = v
                return vi.search(q, k)[0]
            out.append((f"{name}={v}", search))
        return out
    out = []
    for v in s.nprobe:
        def search(q, v=v):
            built.nprobe = v
            return built.search(q.reshape(1, -1), k)[1][0]
        out.append((f"nprobe={v}", search))
    return out


# ---------------------------------------------------------------------------------------------
# the run


def run(sizes: list[int], options: list[str], s: Settings, gen: Generator, queries: int,
        timed_queries: int, memory_limit: int | None = None,
        save: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Every option at every size; ``save`` is given the result so far after each row (a
    run killed later keeps them)."""
    import faiss

    sizes = sorted(set(sizes))
    rows: list[dict[str, Any]] = []
    result = {"settings": asdict(s) | {"sizes": sizes, "options": options, "queries": queries,
                                       "timed_stream_queries": min(timed_queries, queries),
                                       "faiss": faiss.__version__,
                                       "threads": faiss.omp_get_max_threads(),
                                       "memory_limit": memory_limit},
              "generator": gen.settings(), "rows": rows}
    q = gen.queries(queries)
    timed_queries = min(timed_queries, queries)
    truth = ground_truth(gen, sizes, q, s.k, timed_queries)
    for n in sizes:
        rows.append({"option": STREAM, "size": n, "status": "measured",
                     "implementation": "faiss IndexFlatIP per block",
                     "computed": computed_bytes(STREAM, n, s),
                     "searches": [{"setting": "exact", "recall": 1.0,
                                   **percentiles(truth[n]["stream_ms"]),
                                   "queries": timed_queries}]})
    for option in options:
        previous: dict[str, Any] | None = None
        for n in sizes:
            row: dict[str, Any] = {"option": option, "size": n,
                                   "implementation": "VectorIndex" if option in
                                   VECTOR_INDEX_OPTIONS else "faiss",
                                   "computed": computed_bytes(option, n, s)}
            if option in ("ivf", "ivfpq", "ivfsq8"):
                row["nlist"] = nlist_for(n)
                row["train_points"] = train_points(option, n, s)
            rows.append(row)
            why = _cannot_run(option, n, s, previous, gen, row, memory_limit)
            if why:
                row.update(status="not run", reason=why)
                print(f"{option} n={n:,}: not run: {why}", file=sys.stderr)
                if save:
                    save(result)
                continue
            _measure(option, n, s, gen, q, truth[n]["ids"], row)
            previous = row
            if save:
                save(result)
    return result


def _measure(option: str, n: int, s: Settings, gen: Generator, q: np.ndarray,
             truth: np.ndarray, row: dict[str, Any]) -> None:
    """Build, size and search one option at one size into ``row``. Its own function so that
    the index (gigabytes) is freed on return, before the next option is built."""
    with PeakRss() as rss:
        t0 = time.perf_counter()
        built, parts, _, spent = build(option, gen, n, s)
        row["wall_s"] = time.perf_counter() - t0  # with generating the vectors
    row.update(status="measured", **spent, **rss.figures())
    row["build_s"] = sum(spent.values())  # faiss time only: generation not counted
    row["index_bytes"] = {name: index_bytes(ix) for name, ix in parts.items()}
    own = row["index_bytes"].get(option, row["index_bytes"].get("flat"))
    row["bytes_per_vector"] = own / n
    row["searches"] = []
    for setting, fn in searches(option, built, s):
        got = time_searches(fn, q, truth)
        row["searches"].append({"setting": setting, **got})
        print(f"{option} n={n:,} {setting}: recall@{s.k} {got['recall']:.4f}, "
              f"p50 {got['p50_ms']:.3f} ms", file=sys.stderr)


def _cannot_run(option, n, s, previous, gen, row, memory_limit) -> str | None:
    need = row["computed"]["peak"]
    available = mem_available()
    limit = memory_limit if memory_limit is not None else (
        None if available is None else int(MEMORY_SHARE * available))
    row["memory_limit"] = limit
    if limit is not None and need > limit:
        return (f"needs about {need / GIB:.1f} GiB at its peak (computed: "
                f"{_peak_words(option, n, s)}), over the limit of {limit / GIB:.1f} GiB"
                + ("" if memory_limit is not None else
                   f" ({MEMORY_SHARE:.0%} of the {available / GIB:.1f} GiB available)"))
    pilot = previous if previous and previous.get("status") == "measured" else None
    if pilot is None and n <= PILOT:
        return None  # small: built without a projection
    if pilot is None:  # time a pilot build of PILOT vectors
        small = PILOT
        t0 = time.perf_counter()
        _, _, _, spent = build(option, gen, small, s)
        pilot = {"size": small, "build_s": sum(spent.values())}
        row["pilot"] = {"size": small, "build_s": pilot["build_s"],
                        "total_s": time.perf_counter() - t0}
    projected = pilot["build_s"] * build_work(option, n, s) / build_work(option, pilot["size"], s)
    row["projected_build_s"] = projected
    if projected > s.max_seconds:
        return (f"build projected at {projected:,.0f} s (from {pilot['build_s']:.1f} s at "
                f"{pilot['size']:,}, scaled by the build's work), over --max-seconds "
                f"{s.max_seconds:,.0f}")
    return None


def _peak_words(option: str, n: int, s: Settings) -> str:
    d = s.dim
    if option == "flat":
        return f"{n:,} × ({4 * d:,} + 8) bytes"
    if option in ("ivf", "hnsw"):
        return (f"VectorIndex holds its flat index ({n:,} × {4 * d + 8:,} bytes), a copy of the "
                f"vectors ({n:,} × {4 * d:,}) while building, and the {option} index")
    code = s.pq_m if option == "ivfpq" else d
    return (f"{n:,} × ({code} + 8) bytes of codes and ids, and a training sample of "
            f"{train_points(option, n, s):,} × {4 * d:,} bytes")


# ---------------------------------------------------------------------------------------------
# projection


def _fixed_bytes(option: str, n: int, d: int) -> float:
    """What of an index does not grow with n: IVF centroids (plus PQ codebooks)."""
    if option in ("ivf", "ivfpq", "ivfsq8"):
        return nlist_for(n) * d * 4 + (256 * d * 4 if option == "ivfpq" else 0)
    return 0.0


def project(result: dict[str, Any], target: int) -> list[dict[str, Any]]:
    """Per option and search setting, from its measured rows: the index size at ``target``
    (measured bytes per vector less the fixed part, times target, plus the target's fixed
    part; VectorIndex's resident size adds its flat index) and p50 (a power law through the
    two largest measured sizes where two exist; else flat ∝ n, IVF ∝ √n (nlist = 4√n at a
    fixed nprobe), HNSW ∝ log n)."""
    d = result["settings"]["dim"]
    measured = [r for r in result["rows"] if r.get("status") == "measured"]
    out = []
    for option in [STREAM, *OPTIONS]:
        mine = sorted((r for r in measured if r["option"] == option), key=lambda r: r["size"])
        if not mine:
            continue
        last = mine[-1]
        size: dict[str, Any] = {}
        if option != STREAM:
            own = last["index_bytes"].get(option, last["index_bytes"].get("flat"))
            per = (own - _fixed_bytes(option, last["size"], d)) / last["size"]
            size = {"bytes_per_vector": per,
                    "index_bytes": per * target + _fixed_bytes(option, target, d)}
            size["resident_bytes"] = size["index_bytes"]
            if option in ("ivf", "hnsw"):  # VectorIndex keeps the flat index beside it
                flat_per = last["index_bytes"]["flat"] / last["size"]
                size["resident_bytes"] += flat_per * target
        for search in last["searches"]:
            pts = [(r["size"], x["p50_ms"]) for r in mine for x in r["searches"]
                   if x["setting"] == search["setting"] and x["p50_ms"]]
            alpha = None
            if len(pts) >= 2 and pts[-1][0] > pts[-2][0] and pts[-2][1] > 0:
                (n1, t1), (n2, t2) = pts[-2], pts[-1]
                alpha = math.log(t2 / t1) / math.log(n2 / n1)
            if alpha is not None and 0.0 <= alpha <= 1.2:
                p50, how = t2 * (target / n2) ** alpha, (f"power law through n={n1:,} and "
                                                         f"n={n2:,} (exponent {alpha:.2f})")
            else:
                n2, t2 = pts[-1]
                odd = "" if alpha is None else f" (fitted exponent {alpha:.2f} rejected)"
                if option in ("flat", STREAM):
                    p50, how = t2 * target / n2, f"∝ n from n={n2:,}{odd}"
                elif option == "hnsw":
                    p50, how = (t2 * math.log(target) / math.log(n2),
                                f"∝ log n from n={n2:,}{odd}")
                else:
                    p50, how = t2 * math.sqrt(target / n2), f"∝ √n from n={n2:,}{odd}"
            out.append({"option": option, "setting": search["setting"], "from_size": last["size"],
                        "from_sizes": [n for n, _ in pts], "recall_at_from": search["recall"],
                        "p50_ms": p50, "p50_how": how, **size})
    return out


# ---------------------------------------------------------------------------------------------
# report


def _gb(v: float | None) -> str:
    return "–" if v is None else f"{v / 1e9:,.2f} GB"


def _ms(v: float | None) -> str:
    return "–" if v is None else f"{v:,.3f}"


def _short(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n / 1e3:g}k" if n >= 1000 else str(n)


def plot(result: dict[str, Any], out: Path) -> list[str]:
    plt = R.pyplot()
    rows = [r for r in result["rows"] if r.get("status") == "measured"]
    sizes = result["settings"]["sizes"]
    names = []
    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4), squeeze=False)
    for ax, n in zip(axes[0], sizes):
        for r in (r for r in rows if r["size"] == n):
            xs = [x["p50_ms"] for x in r["searches"]]
            ys = [x["recall"] for x in r["searches"]]
            ax.plot(xs, ys, marker="o", label=r["option"])
            for x in r["searches"]:
                ax.annotate(x["setting"].split("=")[-1], (x["p50_ms"], x["recall"]),
                            fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        R.plain_log_ticks(ax)
        ax.set_xlabel("p50 ms / query (single query)")
        ax.set_ylabel(f"recall@{result['settings']['k']} vs exact")
        ax.set_title(f"n = {n:,}")
        ax.legend(fontsize=8)
    names.append(R.savefig(fig, out, "recall_latency.png"))

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for option in OPTIONS:
        mine = sorted((r for r in rows if r["option"] == option), key=lambda r: r["size"])
        if mine:
            axes[0].plot([r["size"] for r in mine], [r["bytes_per_vector"] for r in mine],
                         marker="o", label=option)
            axes[1].plot([r["size"] for r in mine], [r["build_s"] for r in mine], marker="o",
                         label=option)
    for ax, label in zip(axes, ("index bytes / vector", "build s (train + add)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("vectors")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
    names.append(R.savefig(fig, out, "size_build.png"))
    return names


def write_report(result: dict[str, Any], out: Path) -> str:
    s, g = result["settings"], result["generator"]
    target = result["target"]
    lines = R.header(
        "Vector index options past one machine's RAM", result["command"],
        R.config_hash({"settings": {k: v for k, v in s.items() if k != "memory_limit"},
                       "generator": g}),
        [f"Generated vectors: {s['dim']} dims (the gpu profile's BAAI/bge-m3), unit length, "
         f"inner product; {g['centres']:,} clusters (log-normal sizes), each over "
         f"{g['local_dims']} local directions (spread {g['spread']}) plus isotropic noise "
         f"{g['noise']}, seed {g['seed']}; {s['queries']} queries from the same generator, "
         f"not in the base set. faiss {s['faiss']}, {s['threads']} threads. Times are of faiss "
         f"alone (generating the vectors is not counted); search is one query at a time, "
         f"p95 from 30 queries or more. Recall@{s['k']}: share of the exact top {s['k']} "
         f"returned, averaged over the queries."])
    if result.get("partial"):
        lines += ["**Partial: the run stopped before its end; these are the rows it finished.**",
                  ""]
    lines += ["## Measured", "",
              "Memory: `index` is the structure's serialized size (what it holds in RAM); "
              "`RSS peak / kept` are the process's resident memory growth during the build and "
              "after it. `computed peak` is the formula the run checks, before building, "
              "against " + (f"{s['memory_limit'] / GIB:.1f} GiB (`--max-memory-gb`)"
                            if s.get("memory_limit") else
                            f"{MEMORY_SHARE:.0%} of the memory available then") + ".", "",
              "| vectors | option | implementation | build s (train/derive + add) | index | "
              "bytes/vector | RSS peak / kept | computed peak | setting | recall@10 | p50 ms | "
              "p95 ms |", "|---:|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|"]
    for r in result["rows"]:
        head = f"| {r['size']:,} | {r['option']} | {r['implementation']} |"
        peak = _gb(r["computed"]["peak"])
        if r.get("status") != "measured":
            lines.append(f"{head} **not run**: {r['reason']} | | | | {peak} | | | | |")
            continue
        if r["option"] == STREAM:
            x = r["searches"][0]
            lines.append(f"{head} – (no index: blocks streamed) | – | – | – | {peak} | "
                         f"exact ({x['queries']} queries timed) | 1 (by definition) | "
                         f"{_ms(x['p50_ms'])} | {_ms(x['p95_ms'])} |")
            continue
        parts = " + ".join(f"{k} {_gb(v)}" for k, v in r["index_bytes"].items())
        first = r.get("train_s", r.get("derive_s", 0.0))
        build = f"{r['build_s']:,.1f} ({first:,.1f} + {r['add_s']:,.1f})"
        rss = (f"{_gb(r['rss_peak_delta'])} / {_gb(r['rss_retained_delta'])}"
               if r.get("rss_peak_delta") is not None else "–")
        for j, x in enumerate(r["searches"]):
            lead = (f"{head} {build} | {parts} | {r['bytes_per_vector']:,.1f} | {rss} | {peak} |"
                    if j == 0 else "| | | | | | | | |")
            lines.append(f"{lead} {x['setting']} | {x['recall']:.4f} | {_ms(x['p50_ms'])} | "
                         f"{_ms(x['p95_ms'])} |")
    lines += ["", "IVF lists: VectorIndex's rule, nlist = min(4√n, n/39). ivf is VectorIndex's "
              "(trained by faiss on up to 256 vectors a list; its `derive` time is the training "
              "and add of the derived index, its `add` the flat index's); ivfpq "
              f"(m = {s['pq_m']}, 8 bits) and ivfsq8 are plain faiss trained on "
              f"{s['train_per_list']} vectors a list. hnsw: M = {HNSW_M}, faiss's "
              "efConstruction 40. VectorIndex's resident memory is its flat index plus the "
              "derived one (both are listed under `index`). flat-stream: exact search with "
              "the base streamed block by block, each query's time the sum of its single-query "
              "searches over the blocks."]
    for r in result["rows"]:
        if r.get("pilot"):
            lines.append(f"- {r['option']} at {r['size']:,}: build projected at "
                         f"{r['projected_build_s']:,.0f} s from a pilot of {r['pilot']['size']:,}.")
    proj = project(result, target)
    lines += ["", f"## Projected to {target:,} vectors of {s['dim']} dims", "",
              "A projection, not a measurement: index size from the measured bytes per vector "
              "of the largest measured row (less the IVF centroids, which are added back at "
              "the projected nlist); p50 as stated per row. Recall is the measured one at that "
              "row's size: at a fixed nprobe recall tends to fall as nlist grows.", ""]
    lines += projection_table(proj, result)
    lines += ["", f"Computed by formula alone (not measured; `computed_bytes`) at "
                  f"{target:,} vectors:", "", *computed_table(_settings_of(result), target)]
    lines += ["", *[f"![{n}]({n})" for n in plot(result, Path(result["out"]))], ""]
    return "\n".join(lines)


def projection_table(proj: list[dict[str, Any]], result: dict[str, Any]) -> list[str]:
    target = result["target"]
    lines = [f"| option | setting | projected index at {_short(target)} | resident (with "
             f"VectorIndex's flat) | projected p50 ms | p50 projected by | recall@10 measured "
             f"at |", "|---|---|---:|---:|---:|---|---|"]
    for p in proj:
        size = _gb(p.get("index_bytes")) if "index_bytes" in p else "– (streamed)"
        res = _gb(p.get("resident_bytes")) if "resident_bytes" in p else "–"
        lines.append(f"| {p['option']} | {p['setting']} | {size} | {res} | {_ms(p['p50_ms'])} | "
                     f"{p['p50_how']} | {p['recall_at_from']:.4f} at {p['from_size']:,} |")
    not_run = sorted({r["option"] for r in result["rows"] if r.get("status") != "measured"}
                     - {p["option"] for p in proj})
    for option in not_run:
        lines.append(f"| {option} | – | never measured in this run: no projection | | | | |")
    return lines


def computed_table(s: Settings, target: int) -> list[str]:
    """Sizes at ``target`` by formula alone (``computed_bytes``): no measurement in them."""
    lines = [f"| option | computed index at {_short(target)} | computed resident | computed "
             f"peak while building |", "|---|---:|---:|---:|"]
    for option in OPTIONS:
        c = computed_bytes(option, target, s)
        lines.append(f"| {option} | {_gb(c['index'])} | {_gb(c['resident'])} | "
                     f"{_gb(c['peak'])} |")
    return lines


def _settings_of(result: dict[str, Any]) -> Settings:
    keep = Settings.__dataclass_fields__
    return Settings(**{k: (tuple(v) if isinstance(v, list) else v)
                       for k, v in result["settings"].items() if k in keep})


def docs_snippet(result: dict[str, Any]) -> str:
    s = result["settings"]
    proj = project(result, result["target"])
    lines = [DOCS_BEGIN, "",
             f"From `{R.shown_path(Path(result['out']) / 'report.md')}` (written by "
             f"`python -m finrag.benchmarks.vector_index --report-only --write-docs "
             f"docs/benchmarks.md`; measured sizes {', '.join(f'{n:,}' for n in s['sizes'])}, "
             f"{s['dim']} dims, {s['threads']} threads). Projected, not measured:", "",
             *projection_table(proj, result), "",
             "Computed by formula (`computed_bytes`: vectors, codes, ids, links, centroids; "
             "IVF's nlist = 4√n), for comparison:", "",
             *computed_table(_settings_of(result), result["target"]), "", DOCS_END]
    return "\n".join(lines)


def write_docs(path: Path, snippet: str) -> None:
    text = path.read_text(encoding="utf-8")
    a, b = text.find(DOCS_BEGIN), text.find(DOCS_END)
    if a < 0 or b < a:
        raise SystemExit(f"{path}: no {DOCS_BEGIN} … {DOCS_END} block to replace")
    path.write_text(text[:a] + snippet + text[b + len(DOCS_END):], encoding="utf-8")


# ---------------------------------------------------------------------------------------------


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(float(v)) for v in text.split(",") if v)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.vector_index",
                                description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000000,5000000", help="base set sizes (comma-separated)")
    p.add_argument("--dim", type=int, default=1024)
    p.add_argument("--options", default=",".join(OPTIONS), help=f"of {', '.join(OPTIONS)}")
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--stream-queries", type=int, default=100,
                   help="queries timed for exact search by streaming (flat-stream)")
    p.add_argument("--nprobe", default="16,64")
    p.add_argument("--ef-search", default="64,256")
    p.add_argument("--pq-m", type=int, default=64, help="IVF-PQ bytes a vector (8-bit codes)")
    p.add_argument("--train-per-list", type=int, default=64,
                   help="training vectors per IVF list (ivfpq, ivfsq8)")
    p.add_argument("--max-seconds", type=float, default=3600.0,
                   help="skip a build projected to take longer (saying so)")
    p.add_argument("--max-memory-gb", type=float, default=None,
                   help="skip an option whose computed peak is larger (default: MemAvailable)")
    p.add_argument("--project", type=int, default=20_000_000, help="projected corpus size")
    p.add_argument("--threads", type=int, default=None,
                   help="faiss (OpenMP) threads (default: faiss's, the machine's cores)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--centres", type=int, default=1024)
    p.add_argument("--out", type=Path, default=None,
                   help="results folder (default benchmarks/results/vector_index)")
    p.add_argument("--report-only", action="store_true",
                   help="write the report again from the run's results.json")
    p.add_argument("--write-docs", type=Path, default=None,
                   help="replace the vector_index block of this docs page with the projection")
    args = p.parse_args(argv)
    out = R.results_dir("vector_index", args.out)
    if args.report_only:
        result = json.loads((out / "results.json").read_text(encoding="utf-8"))
    else:
        options = [o for o in args.options.split(",") if o]
        unknown = set(options) - set(OPTIONS)
        if unknown:
            p.error(f"unknown options {sorted(unknown)}: of {', '.join(OPTIONS)}")
        s = Settings(dim=args.dim, nprobe=_ints(args.nprobe), ef_search=_ints(args.ef_search),
                     pq_m=args.pq_m, train_per_list=args.train_per_list,
                     max_seconds=args.max_seconds)
        gen = Generator(dim=args.dim, seed=args.seed, centres=args.centres)
        if args.threads:
            import faiss

            faiss.omp_set_num_threads(args.threads)
        limit = int(args.max_memory_gb * GIB) if args.max_memory_gb else None
        command = "python -m finrag.benchmarks.vector_index " + " ".join(
            argv if argv is not None else sys.argv[1:])
        extra = {"command": command, "target": args.project, "out": str(out)}

        def save(partial):
            R.write_json(out / "results.json", partial | extra | {"partial": True})

        result = run(list(_ints(args.sizes)), options, s, gen, args.queries,
                     args.stream_queries, limit, save) | extra
        R.write_json(out / "results.json", result)
    print(render(result, out, args.write_docs))
    return 0


def render(result: dict[str, Any], out: Path, docs: Path | None = None) -> str:
    """Write report.md, its plots and docs_snippet.md into ``out`` (and the snippet into the
    ``docs`` page's block); returns the report."""
    result["out"] = str(out)
    text = write_report(result, out)
    (out / "report.md").write_text(text, encoding="utf-8")
    snippet = docs_snippet(result)
    (out / "docs_snippet.md").write_text(snippet + "\n", encoding="utf-8")
    if docs:
        write_docs(docs, snippet)
    return text


if __name__ == "__main__":
    raise SystemExit(main())
