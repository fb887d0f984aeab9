"""What reading only some collections costs: scoped search and answers against unscoped, on
one index, the same questions, in one run.

    python -m finrag.benchmarks.access_overhead --index var/fb-index --profile cpu

The scoped side is ``Pipeline.scoped`` over every document of the index (a token that may read
all of it): the largest scope, so the filters (FTS5 rowid ranges over every document, a FAISS
ID selector over every chunk, the facts SQL over every source) cost the most. Per question the
two sides run in turn, A B then B A, so drift falls on both. Two timings: the hybrid search of
the question over the whole corpus (top 10), and the whole answer without generation (routing,
search, tables, statements, rerank, context; the router LLM off, so that the figure is the
retrieval path's), after one untimed answer on each side (the models load on first use).
Timed work: run it alone on the machine.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from finrag.benchmarks import report as R
from finrag.benchmarks import stats


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def run(index: Path, profile: str, questions: list[dict], progress: bool = True) -> dict[str, Any]:
    from finrag.retrieval.systems.pipelines import Pipeline

    pipe = Pipeline.load(index, profile=profile, use_llm_router=False)
    collections = sorted(pipe.index.catalog.collection_counts())
    view = pipe.scoped(collections)
    n_docs = len(view.index.readable)
    rows = []
    try:
        # models load on first use: one answer on each side before the clock, not counted
        for p in (pipe, view):
            p.answer(questions[0]["question"], "hdrr", generate=False)
        for i, q in enumerate(questions):
            text = q["question"]
            vector = pipe.embedder.encode([text])[0]
            sides = [("unscoped", pipe), ("scoped", view)]
            order = sides if i % 2 == 0 else sides[::-1]
            row: dict[str, Any] = {"id": q.get("id") or q.get("financebench_id") or str(i)}
            for name, p in order:
                row[f"search_{name}"] = _timed(lambda p=p: p.index.search(text, vector, k=10))
            for name, p in order:
                row[f"answer_{name}"] = _timed(lambda p=p: p.answer(text, "hdrr", generate=False))
            rows.append(row)
            if progress:
                print(f"{i + 1}/{len(questions)}  search {row['search_unscoped']:.0f} / "
                      f"{row['search_scoped']:.0f} ms  answer {row['answer_unscoped']:.0f} / "
                      f"{row['answer_scoped']:.0f} ms", flush=True)
    finally:
        pipe.close()
    return {"rows": rows, "collections": collections, "documents": n_docs}


def summarise(rows: list[dict]) -> dict[str, Any]:
    out = {}
    for what in ("search", "answer"):
        a = np.array([r[f"{what}_unscoped"] for r in rows])
        b = np.array([r[f"{what}_scoped"] for r in rows])
        ratio = b / a
        ci = stats.bootstrap_ci(ratio, np.median)
        out[what] = {"n": len(rows),
                     "unscoped_p50_ms": float(np.median(a)), "scoped_p50_ms": float(np.median(b)),
                     "unscoped_p95_ms": float(np.percentile(a, 95)) if len(a) >= 30 else None,
                     "scoped_p95_ms": float(np.percentile(b, 95)) if len(b) >= 30 else None,
                     "ratio_p50": float(np.median(ratio)), "ratio_ci": ci}
    return out


def _ms(v: float | None) -> str:
    return "– (under 30 questions)" if v is None else f"{v:.1f} ms"


def plot(rows: list[dict], out: Path) -> str:
    plt = R.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, what in zip(axes, ("search", "answer")):
        a = [r[f"{what}_unscoped"] for r in rows]
        b = [r[f"{what}_scoped"] for r in rows]
        ax.scatter(a, b, s=12, alpha=0.7)
        top = max(max(a), max(b)) * 1.05
        ax.plot([0, top], [0, top], color="grey", lw=1, ls="--", label="equal")
        ax.set_xlabel("unscoped (ms)")
        ax.set_ylabel("scoped to every document (ms)")
        ax.set_title("hybrid search, top 10" if what == "search"
                     else "whole answer, no generation")
        ax.legend(loc="upper left")
    return R.savefig(fig, out, "access_overhead.png")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.access_overhead",
                                description=__doc__.splitlines()[0])
    p.add_argument("--index", type=Path, required=True)
    p.add_argument("--profile", default="cpu")
    p.add_argument("--questions", type=Path, default=R.SHARED / "questions.dev.jsonl")
    p.add_argument("--limit", type=int, default=40, help="questions (40; 30+ for a p95)")
    p.add_argument("--name", default=None, help="results folder (access_overhead_<profile>)")
    args = p.parse_args(argv)
    questions = list(R.read_jsonl(args.questions))[: args.limit]
    result = run(args.index, args.profile, questions)
    figures = summarise(result["rows"])
    out = R.results_dir(args.name or f"access_overhead_{args.profile}")
    command = "python -m finrag.benchmarks.access_overhead " + " ".join(argv or __import__(
        "sys").argv[1:])
    chash = R.config_hash({"profile": args.profile, "limit": args.limit,
                           "code": R.code_version("retrieval")})
    png = plot(result["rows"], out)
    R.write_json(out / "results.json", {**result, "figures": figures, "command": command})
    lines = R.header("Access control: scoped against unscoped", command, chash, [
        "", f"Index `{R.shown_path(args.index)}`: {result['documents']} documents, collections "
            f"{', '.join(result['collections'])}; the scoped side reads all of them (the "
            f"largest scope). Profile `{args.profile}`, router LLM off, no generation; the same "
            f"{len(result['rows'])} questions on both sides, in turn (A B, B A), after one "
            f"untimed answer on each."])
    lines += ["| timing | unscoped p50 | scoped p50 | unscoped p95 | scoped p95 | scoped / "
              "unscoped, median per question [95% CI] |", "|---|---|---|---|---|---|"]
    for what, f in figures.items():
        lo, hi = f["ratio_ci"]["low"], f["ratio_ci"]["high"]
        lines.append(f"| {what} | {f['unscoped_p50_ms']:.1f} ms | {f['scoped_p50_ms']:.1f} ms | "
                     f"{_ms(f['unscoped_p95_ms'])} | {_ms(f['scoped_p95_ms'])} | "
                     f"{f['ratio_p50']:.3f} [{lo:.3f}, {hi:.3f}] |")
    lines += ["", f"![scoped against unscoped]({png})", ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
