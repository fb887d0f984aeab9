"""Dense search paths on a real index: recall@10 of the approximate indexes (IVF, HNSW) against
exact flat search, and whether scoped search by gathering the scope's vectors (the GPU path:
GPU indexes take no ID selector) returns exactly what the ID-selector search returns.

    python -m finrag.benchmarks.vector_recall --index var/fb-index            # accuracy only
    python -m finrag.benchmarks.vector_recall --index var/fb-index --timing   # + ms per query (alone)

Queries are the FinanceBench dev questions embedded with the index's own embedder (the
``--profile``'s, checked against the index). Scoped searches are scoped to each question's
gold filing where it is indexed, and to ten random filings besides. ``--timing`` adds the
median milliseconds per query of every path; time it on an otherwise idle machine. Writes
``benchmarks/results/vector_recall_<profile>/`` (report.md, recall.png, recall.json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

IVF_NPROBE = (1, 4, 16, 64)
HNSW_EF = (16, 64, 256)


def _ms(fn, queries) -> float:
    times = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    from finrag.benchmarks.report import SHARED, config_hash, header, results_dir, shown_path, write_json
    from finrag.models.profiles import load_config, load_profile_embedder
    from finrag.retrieval.store.index import Index
    from finrag.retrieval.store.vectors import VectorIndex

    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.vector_recall", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", type=Path, required=True)
    p.add_argument("--profile", default="cpu", help="its embedder embeds the questions (cpu)")
    p.add_argument("--questions", type=Path, default=SHARED / "questions.dev.jsonl")
    p.add_argument("-k", type=int, default=10)
    p.add_argument("--timing", action="store_true", help="also median ms per query per path")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    k = args.k

    questions = [json.loads(line) for line in args.questions.read_text().splitlines() if line]
    profile = load_config().active(args.profile)
    embedder = load_profile_embedder(profile)
    with Index.open(args.index) as index:
        index.check_embedder(embedder)
        docs = {d.doc_id: d.pk for d in index.documents()}
        scopes = {doc: index.catalog.chunk_ids([pk]) for doc, pk in docs.items()}
        ids = index.vectors.ids()
        vectors = index.vectors.index.index.reconstruct_n(0, index.vectors.size)
    queries = embedder.encode([q["question"] for q in questions])
    print(f"{len(ids):,} vectors of {vectors.shape[1]} dims, {len(queries)} queries",
          file=sys.stderr)

    def built(**settings) -> VectorIndex:
        vi = VectorIndex(vectors.shape[1], gpu=False, **settings)
        vi.add(ids, vectors)
        return vi

    flat, gather = built(scoped="selector"), built(scoped="gather")
    truth = [list(flat.search(q, k)[0]) for q in queries]
    rows = [{"index": "flat", "setting": "exact", "recall": 1.0}]
    timing = {"flat": _ms(lambda q: flat.search(q, k), queries)} if args.timing else {}
    for kind, name, values in (("ivf", "nprobe", IVF_NPROBE), ("hnsw", "ef_search", HNSW_EF)):
        approx = built()
        for value in values:
            approx.configure(approximate=kind, **{name: value})
            approx.search(queries[0], k)  # builds (and, for IVF, trains) the structure
            found = [list(approx.search(q, k)[0]) for q in queries]
            recall = float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth)]))
            rows.append({"index": kind, "setting": f"{name}={value}", "recall": recall})
            if args.timing:
                timing[f"{kind} {name}={value}"] = _ms(lambda q: approx.search(q, k), queries)
            print(f"{kind} {name}={value}: recall@{k} {recall:.4f}", file=sys.stderr)

    rng = np.random.default_rng(0)
    scoped_cases = [(q, scopes[rec["doc_name"]]) for q, rec in zip(queries, questions)
                    if rec.get("doc_name") in scopes]
    gold_cases = len(scoped_cases)
    doc_list = sorted(scopes)
    for q in queries:
        picked = rng.choice(len(doc_list), size=min(10, len(doc_list)), replace=False)
        scoped_cases.append((q, np.concatenate([scopes[doc_list[i]] for i in picked])))
    same = sum(list(flat.search(q, k, s)[0]) == list(gather.search(q, k, s)[0])
               for q, s in scoped_cases)
    if args.timing:
        timing["scoped: ID selector"] = _ms(lambda c: flat.search(c[0], k, c[1]), scoped_cases)
        timing["scoped: gather"] = _ms(lambda c: gather.search(c[0], k, c[1]), scoped_cases)

    out = results_dir(f"vector_recall_{args.profile}", args.out)
    command = "python -m finrag.benchmarks.vector_recall " + " ".join(
        argv if argv is not None else sys.argv[1:])
    settings = {"index": shown_path(args.index), "profile": args.profile, "k": k,
                "vectors": len(ids), "questions": shown_path(args.questions)}
    lines = header("Dense search paths: approximate recall and exact scoped search", command,
                   config_hash(settings),
                   [f"Index `{shown_path(args.index)}`: {len(ids):,} chunk vectors, "
                    f"{vectors.shape[1]} dims ({embedder.model_id}); queries: the "
                    f"{len(queries)} FinanceBench dev questions (no setting was tuned on them)."])
    lines += [f"## Whole-corpus recall@{k} against flat", "",
              f"Recall@{k} = share of flat's top {k} that the approximate index also returns, "
              f"averaged over the {len(queries)} questions.", "",
              "| index | setting | recall@10 |" + (" median ms / query |" if timing else ""),
              "|---|---|---:|" + ("---:|" if timing else "")]
    for r in rows:
        key = "flat" if r["index"] == "flat" else f"{r['index']} {r['setting']}"
        lines.append(f"| {r['index']} | {r['setting']} | {r['recall']:.4f} |"
                     + (f" {timing[key]:.3f} |" if timing else ""))
    lines += ["", "## Scoped search stays exact", "",
              f"Top {k} of the gather path (the scope's vectors ranked by inner product: what a "
              f"GPU index, which takes no ID selector, uses) against the ID-selector search on "
              f"the flat index: identical ids in the same order for **{same} of "
              f"{len(scoped_cases)}** scoped searches ({gold_cases} scoped to the question's "
              f"gold filing where it is indexed, {len(queries)} to ten random filings each)."]
    if timing:
        lines += ["", f"Median ms per scoped query: ID selector "
                      f"{timing['scoped: ID selector']:.3f}, gather {timing['scoped: gather']:.3f}."]
    else:
        lines += ["", "No timings in this run (`--timing` measures them; run it alone)."]
    try:
        from finrag.benchmarks.report import pyplot, savefig

        plt = pyplot()
        fig, ax = plt.subplots(figsize=(6, 3))
        for kind in ("ivf", "hnsw"):
            pts = [r for r in rows if r["index"] == kind]
            ax.plot([r["setting"].split("=")[1] for r in pts], [r["recall"] for r in pts],
                    marker="o", label=kind)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--", label="flat")
        ax.set_xlabel("nprobe (IVF) / efSearch (HNSW)")
        ax.set_ylabel(f"recall@{k} vs flat")
        ax.legend()
        lines += ["", f"![recall]({savefig(fig, out, 'recall.png')})"]
    except ImportError:
        pass
    (out / "report.md").write_text("\n".join(lines) + "\n")
    write_json(out / "recall.json", {"settings": settings, "rows": rows, "timing_ms": timing,
                                     "scoped_identical": same, "scoped_total": len(scoped_cases)})
    print((out / "report.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
