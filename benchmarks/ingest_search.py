"""Ingest-and-search benchmark: parsing pages/s, passages embedded/s, and the latency of
document-scoped search against whole-corpus search on one index, measured in one run.

    python -m finrag.benchmarks.ingest_search --index DIR [--pdfs DIR --sample N] [--questions FILE]

On a 2-core machine only the ratios mean much; absolute times are reported beside them.
Writes benchmarks/results/ingest_search/{report.md, results.json, *.png}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "financebench"
OUT = REPO / "benchmarks" / "results" / "ingest_search"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def measure_ingest(pdfs: list[Path], metadata: Path | None, embedder) -> dict:
    """Ingest a sample into a throwaway index and split the time by stage."""
    from finrag.retrieval.indexer import Ingestor

    with tempfile.TemporaryDirectory() as tmp:
        ing = Ingestor(Path(tmp) / "idx", embedder, metadata=metadata)
        report = ing.run(pdfs, progress=True)
        ing.close()
    s = report.summary()
    s["pages_per_s_parse"] = round(report.pages / report.parse_seconds, 2) if report.parse_seconds else None
    s["documents"] = [p.name for p in pdfs]
    return s


def measure_search(index_dir: Path, questions: list[dict], embedder, repeats: int) -> dict:
    """Per question: hybrid/FTS/dense search over the whole corpus vs inside its filing."""
    from finrag.retrieval.store.index import Index

    with Index.open(index_dir) as index:
        docs = {d.doc_id for d in index.documents()}
        qs = [q for q in questions if q["doc_name"] in docs]
        t = time.perf_counter()
        vectors = embedder.encode([q["question"] for q in qs])
        embed_ms = (time.perf_counter() - t) * 1000 / max(len(qs), 1)
        modes = {
            "hybrid": lambda q, v, s: index.search(q, v, k=10, doc_ids=s),
            "fts": lambda q, v, s: index.search_fts(q, 20, s),
            "dense": lambda q, v, s: index.search_dense(v, 30, s),
        }
        lat: dict[str, list[float]] = {f"{m}_{w}": [] for m in modes for w in ("full", "scoped")}
        hits_at_10 = {"full": 0, "scoped": 0}
        for q, v in zip(qs, vectors):  # warm caches once per question
            modes["hybrid"](q["question"], v, None)
        for _ in range(repeats):
            for q, v in zip(qs, vectors):
                for mode, fn in modes.items():
                    for where, scope in (("full", None), ("scoped", [q["doc_name"]])):
                        t = time.perf_counter()
                        fn(q["question"], v, scope)
                        lat[f"{mode}_{where}"].append((time.perf_counter() - t) * 1000)
        evidence = 0
        for q, v in zip(qs, vectors):
            pages = {e["evidence_page_num"] + 1 for e in q.get("evidence", [])}
            for where, scope in (("full", None), ("scoped", [q["doc_name"]])):
                hits = index.search(q["question"], v, k=10, doc_ids=scope)
                hits_at_10[where] += any(h.doc_id == q["doc_name"] and
                                         any(h.first_page <= p <= h.last_page for p in pages)
                                         for h in hits)
            evidence += 1
        counts = index.catalog.counts()
        size = index.size_bytes()
    summary = {k: {"p50_ms": round(pct(v, 0.5), 3), "p95_ms": round(pct(v, 0.95), 3),
                   "mean_ms": round(statistics.fmean(v), 3)} for k, v in lat.items()}
    ratios = {m: round(summary[f"{m}_scoped"]["p50_ms"] / summary[f"{m}_full"]["p50_ms"], 3)
              for m in modes}
    return {"questions": len(qs), "repeats": repeats, "query_embed_ms": round(embed_ms, 2),
            "latency": summary, "scoped_over_full_p50": ratios,
            "evidence_hit_at_10": {k: round(v / max(evidence, 1), 3) for k, v in hits_at_10.items()},
            "index": counts, "index_bytes": size, "raw_ms": lat}


def plot(results: dict, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    raw = results["search"]["raw_ms"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True)
    for ax, mode in zip(axes, ("hybrid", "fts", "dense")):
        for where, colour in (("full", "#c0392b"), ("scoped", "#2471a3")):
            xs = sorted(raw[f"{mode}_{where}"])
            ys = [(i + 1) / len(xs) for i in range(len(xs))]
            ax.plot(xs, ys, color=colour, label=f"{where} corpus" if where == "full" else "one filing")
        ax.set_xscale("log")
        ax.set_title(f"{mode} search")
        ax.set_xlabel("latency (ms, log)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of queries")
    axes[0].legend(loc="lower right")
    fig.suptitle("Search latency: whole corpus vs scoped to one filing "
                 f"({results['search']['index']['chunks']:,} chunks)")
    fig.tight_layout()
    fig.savefig(out / "search_latency_cdf.png", dpi=120)
    plt.close(fig)
    files.append("search_latency_cdf.png")

    ing = results["ingest"]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    stages = ["parse", "embed", "write"]
    secs = [ing["parse_seconds"], ing["embed_seconds"], ing["write_seconds"]]
    ax.barh(stages, secs, color=["#7d3c98", "#d68910", "#229954"])
    for y, s in enumerate(secs):
        ax.text(s, y, f" {s:.1f}s", va="center")
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title(f"Ingest of {ing['added']} filings, {ing['pages']} pages, {ing['chunks']} chunks: "
                 "where the time goes")
    fig.tight_layout()
    fig.savefig(out / "ingest_stages.png", dpi=120)
    plt.close(fig)
    files.append("ingest_stages.png")
    return files


def report(results: dict, command: str, plots: list[str]) -> str:
    ing, se = results["ingest"], results["search"]
    lines = [
        "# Ingest and search benchmark", "",
        f"Command: `{command}`", "",
        f"Machine: {results['machine']}. Figures are from one run; on this CPU the ratios are "
        "the result, absolute times are for orientation only.", "",
        "## Ingest", "",
        f"Sample: {ing['added']} filings ({', '.join(ing['documents'])}).", "",
        "| pages | chunks | wall s | pages/s (end to end) | pages/s (parse only) | passages embedded/s |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {ing['pages']} | {ing['chunks']} | {ing['seconds']} | {ing['pages_per_s']} | "
        f"{ing['pages_per_s_parse']} | {ing['chunks_embedded_per_s']} |", "",
        f"Time by stage: parse {ing['parse_seconds']} s, embed {ing['embed_seconds']} s, "
        f"write {ing['write_seconds']} s.", "",
    ]
    if results.get("full_ingest"):
        fi = results["full_ingest"]
        lines += [f"Full corpus ingest (from `{fi.get('command', 'finrag ingest')}`): "
                  f"{fi['added']} documents, {fi['pages']} pages, {fi['chunks']} chunks in "
                  f"{fi['seconds']} s ({fi['pages_per_s']} pages/s, {fi['chunks_embedded_per_s']} "
                  f"passages/s embedding), index {fi.get('index_bytes', 0) / 1e6:.0f} MB.", ""]
    lines += [
        "## Search latency: whole corpus vs one filing", "",
        f"Index: {se['index']['documents']} documents, {se['index']['chunks']:,} chunks, "
        f"{se['index_bytes'] / 1e6:.0f} MB. {se['questions']} questions × {se['repeats']} "
        f"repeats, query embedding excluded ({se['query_embed_ms']} ms per query, measured apart).", "",
        "| search | full p50 ms | full p95 ms | scoped p50 ms | scoped p95 ms | scoped / full (p50) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for m in ("hybrid", "fts", "dense"):
        f, s = se["latency"][f"{m}_full"], se["latency"][f"{m}_scoped"]
        lines.append(f"| {m} | {f['p50_ms']} | {f['p95_ms']} | {s['p50_ms']} | {s['p95_ms']} | "
                     f"{se['scoped_over_full_p50'][m]} |")
    hit = se["evidence_hit_at_10"]
    lines += ["", f"Evidence page in the hybrid top 10 (no reranker): whole corpus {hit['full']:.0%}, "
              f"scoped to the right filing {hit['scoped']:.0%}.", ""]
    lines += [f"![{p}]({p})" for p in plots]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from finrag.models.embedders import load_embedder

    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.ingest_search", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", type=Path, required=True, help="a built index (e.g. the 124 PDFs)")
    p.add_argument("--pdfs", type=Path, default=SHARED / "pdfs", help="PDFs to sample for ingest")
    p.add_argument("--metadata", type=Path, default=SHARED / "documents.jsonl")
    p.add_argument("--sample", type=int, default=4, help="filings ingested for throughput (4)")
    p.add_argument("--questions", type=Path, default=SHARED / "questions.dev.jsonl")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--full-ingest", type=Path, help="JSON summary of a full `finrag ingest --json`")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)

    embedder = load_embedder("minilm")
    pdfs = sorted(args.pdfs.glob("*.pdf"))
    if not pdfs:
        print(f"error: no PDFs in {args.pdfs}", file=sys.stderr)
        return 2
    sample = sorted(random.Random(0).sample(pdfs, min(args.sample, len(pdfs))))
    results = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                          f"{platform.python_version()}"}
    print(f"ingesting a sample of {len(sample)} filings …", file=sys.stderr)
    results["ingest"] = measure_ingest(sample, args.metadata if args.metadata.exists() else None,
                                       embedder)
    questions = [json.loads(l) for l in args.questions.read_text().splitlines() if l.strip()]
    print(f"timing search over {args.index} …", file=sys.stderr)
    results["search"] = measure_search(args.index, questions, embedder, args.repeats)
    if args.full_ingest:
        results["full_ingest"] = json.loads(args.full_ingest.read_text())
    args.out.mkdir(parents=True, exist_ok=True)
    plots = plot(results, args.out)
    command = "python -m finrag.benchmarks.ingest_search " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    (args.out / "results.json").write_text(json.dumps({"command": command, **results}, indent=2))
    (args.out / "report.md").write_text(report(results, command, plots))
    print(f"wrote {args.out / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
