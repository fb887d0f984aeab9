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
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from finrag.benchmarks import report as R
from finrag.benchmarks.memory import PeakRss, mem_available
from finrag.benchmarks.vector_index_options import (GIB, MEMORY_SHARE, OPTIONS, PILOT, STREAM,
                                                    VECTOR_INDEX_OPTIONS, Settings, build_work,
                                                    computed_bytes, nlist_for, train_points)
from finrag.benchmarks.vector_index_report import render

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


if __name__ == "__main__":
    raise SystemExit(main())
