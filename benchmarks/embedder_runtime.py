"""The embedder on OpenVINO against sentence-transformers (torch): chunks a second on the same
chunks in one run, how close the vectors are, and what retrieval gets from them.

    python -m finrag.benchmarks.embedder_runtime --index var/fb-index [--precision int8]

1. Speed: chunks sampled evenly from the index, embedded in blocks by each runtime in turn
   (A B, then B A), the same texts on both sides; chunks a second per block.
2. Vectors: cosine of each OpenVINO vector to the index's stored one (torch-made).
3. Retrieval on the dev questions, dense search within each question's filing (as HDRR scopes
   it): today's vectors and torch queries (the reference); the index's vectors queried by
   OpenVINO (an existing index served by the new runtime); and the filing re-embedded by
   OpenVINO and queried by it (an index built by it). recall@10 against the reference's top
   10, and evidence hit@5 (a top-5 chunk covers an evidence page), over all questions and per
   half of the fixed dev split (``benchmarks/splits``): a choice of runtime or precision is
   made on the tune half; the test half has been read before and is "seen".
Timed work: run it alone on the machine.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from finrag.benchmarks import report as R
from finrag.benchmarks.splits import SPLITS, split_of


def _rate(embedder, texts: list[str]) -> tuple[float, np.ndarray]:
    t = time.perf_counter()
    vectors = embedder.encode(texts)
    return len(texts) / (time.perf_counter() - t), vectors


def _stored(catalog, ids: np.ndarray, dim: int) -> np.ndarray:
    """The stored vectors of ``ids``, in that order."""
    got, vectors = catalog.vectors(ids, dim=dim)
    row = {int(i): k for k, i in enumerate(got)}
    return vectors[[row[int(i)] for i in ids]]


def speed(runtimes: dict, texts: list[str], blocks: int) -> list[dict[str, float]]:
    size = max(1, len(texts) // blocks)
    rows = []
    names = list(runtimes)
    for b in range(blocks):
        part = texts[b * size:(b + 1) * size]
        order = names if b % 2 == 0 else names[::-1]
        rows.append({name: _rate(runtimes[name], part)[0] for name in order})
    return rows


def retrieval(index, questions, torch_embedder, ov_embedder, progress=print) -> dict[str, Any]:
    """Per question within its filing: the top-10 chunk ids of each side and whether its top 5
    covers an evidence page."""
    docs = sorted({q.doc_name for q in questions if q.doc_name and q.pages
                   and index.catalog.document(q.doc_name) is not None})
    chunks: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[int, int]]]] = {}
    embed_seconds, embedded = 0.0, 0
    for n, doc in enumerate(docs, 1):
        rows = index.catalog.page_chunks(doc, list(range(1, index.catalog.document(doc)
                                                         .page_count + 1)))
        ids = np.array([r.chunk_id for r in rows], dtype=np.int64)
        stored = _stored(index.catalog, ids, index.settings.dim)
        t = time.perf_counter()
        fresh = ov_embedder.encode([r.text for r in rows])
        embed_seconds += time.perf_counter() - t
        embedded += len(rows)
        chunks[doc] = (ids, stored, fresh, [(r.first_page, r.last_page) for r in rows])
        progress(f"{n}/{len(docs)} {doc}: {len(rows)} chunks re-embedded")
    per_question = []
    for q in questions:
        if q.doc_name not in chunks:
            continue
        ids, stored, fresh, spans = chunks[q.doc_name]
        qt, qo = torch_embedder.encode([q.question])[0], ov_embedder.encode([q.question])[0]
        sides = {"torch index, torch query": stored @ qt, "torch index, OpenVINO query":
                 stored @ qo, "OpenVINO index, OpenVINO query": fresh @ qo}
        row: dict[str, Any] = {"id": q.id, "doc": q.doc_name}
        for name, scores in sides.items():
            top = np.lexsort((ids, -scores))[:10]
            row[name] = {"top10": ids[top].tolist(), "hit5": any(
                lo <= p <= hi for i in top[:5] for p in q.pages for lo, hi in [spans[i]])}
        per_question.append(row)
    return {"questions": per_question, "documents": len(docs), "embedded": embedded,
            "embed_seconds": embed_seconds}


SIDES = ("torch index, torch query", "torch index, OpenVINO query",
         "OpenVINO index, OpenVINO query")


def summarise(rows: list[dict]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    if not rows:
        return out
    for side in SIDES:
        # a filing of fewer than 10 chunks has a shorter top 10
        recall = [len(set(r[side]["top10"]) & set(r[SIDES[0]]["top10"]))
                  / len(r[SIDES[0]]["top10"]) for r in rows]
        out[side] = {"recall10": float(np.mean(recall)),
                     "hit5": float(np.mean([r[side]["hit5"] for r in rows]))}
    return out


def plot(speed_rows: list[dict], cosines: np.ndarray, out: Path) -> str:
    plt = R.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name in speed_rows[0]:
        axes[0].plot(range(1, len(speed_rows) + 1), [r[name] for r in speed_rows], marker="o",
                     label=name)
    axes[0].set_xlabel("block (sides in turn)")
    axes[0].set_ylabel("chunks / s")
    axes[0].set_ylim(bottom=0)
    axes[0].legend()
    axes[0].set_title("embedding speed, the same chunks")
    axes[1].hist(cosines, bins=40)
    axes[1].set_xlabel("cosine, OpenVINO vector to the stored one")
    axes[1].set_title("vector closeness")
    return R.savefig(fig, out, "embedder_runtime.png")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.embedder_runtime",
                                description=__doc__.splitlines()[0])
    p.add_argument("--index", type=Path, required=True)
    p.add_argument("--questions", type=Path, default=R.SHARED / "questions.dev.jsonl")
    p.add_argument("--sample", type=int, default=1024, help="chunks for the speed test")
    p.add_argument("--blocks", type=int, default=8)
    p.add_argument("--precision", default="auto", help="OpenVINO's: auto, f32, bf16 or int8")
    p.add_argument("--name", help="results folder name (default embedder_runtime_cpu, "
                                  "with _PRECISION unless auto)")
    p.add_argument("--report-only", action="store_true",
                   help="write the report again from the run's results.json")
    args = p.parse_args(argv)
    args.name = args.name or "embedder_runtime_cpu" + (
        "" if args.precision == "auto" else f"_{args.precision}")
    out = R.results_dir(args.name)
    command = "python -m finrag.benchmarks.embedder_runtime " + " ".join(argv or __import__(
        "sys").argv[1:])
    if args.report_only:
        result = json.loads((out / "results.json").read_text())
    else:
        result = run(args) | {"command": command}
        R.write_json(out / "results.json", result)
    write_report(result, args, out)
    return 0


def run(args) -> dict[str, Any]:
    from finrag.models.embedders import load_embedder
    from finrag.models.openvino_embedder import OpenVinoEmbedder
    from finrag.retrieval.store.index import Index
    from finrag.retrieval.systems.evaluation import load_questions

    torch_embedder = load_embedder("minilm")
    ov_embedder = OpenVinoEmbedder.packaged(precision=args.precision)
    ov_embedder.name = "minilm"
    runtimes = {"sentence-transformers (torch)": torch_embedder,
                f"OpenVINO ({ov_embedder.precision}, {_streams(ov_embedder.streams)})":
                    ov_embedder}
    if ov_embedder.streams > 1:  # what the streams add: the same model on one request
        one = OpenVinoEmbedder.packaged(precision=args.precision, streams=1)
        runtimes[f"OpenVINO ({one.precision}, {_streams(1)})"] = one
    with Index.open(args.index) as index:
        all_ids = index.catalog.chunk_ids()
        picked = all_ids[np.linspace(0, len(all_ids) - 1, args.sample).astype(int)]
        texts = [t for (t,) in (index.catalog.db.execute(
            "SELECT text FROM chunks WHERE id = ?", (int(i),)).fetchone() for i in picked)]
        stored = _stored(index.catalog, picked, index.settings.dim)
        for e in runtimes.values():  # warm: the first batch loads and compiles
            e.encode(texts[:8])
        speed_rows = speed(runtimes, texts, args.blocks)
        cosines = np.sum(ov_embedder.encode(texts) * stored, axis=1)
        found = retrieval(index, load_questions(args.questions), torch_embedder, ov_embedder)
    found["split"] = split_of(R.read_jsonl(args.questions))
    return {"precision": ov_embedder.precision, "sample": len(texts), "blocks": args.blocks,
            "speed": speed_rows,
            "cosines": cosines.tolist(), "retrieval": found}


def _streams(n: int) -> str:
    return "1 stream" if n == 1 else f"{n} streams"


def write_report(result: dict[str, Any], args, out: Path) -> None:
    speed_rows, found = result["speed"], result["retrieval"]
    cosines = np.array(result["cosines"])
    figures = summarise(found["questions"])
    split = found.get("split", {})
    halves = {name: summarise([q for q in found["questions"] if split.get(q["id"]) == name])
              for name in SPLITS} if split else {}
    names = list(speed_rows[0])
    ratios = [r[names[1]] / r[names[0]] for r in speed_rows]
    chash = R.config_hash({"sample": result["sample"], "blocks": result["blocks"],
                           "precision": result.get("precision", "bf16"),
                           "code": R.code_version("models")})
    png = plot(speed_rows, cosines, out)
    lines = R.header("Embedder runtime: OpenVINO against sentence-transformers",
                     result["command"], chash, [
        "", f"Index `{R.shown_path(args.index)}`, MiniLM-L6 (max 256 tokens a chunk). Speed: "
            f"{result['sample']} chunks sampled evenly from the index, {result['blocks']} "
            f"blocks, the runtimes in turn on each block (reversed on every other); threads: "
            f"the machine's cores." + (" OpenVINO runs a long list on one stream a thread (the "
                                       "default) and, to compare, on one request of them all."
                                       if len(names) > 2 else "")])
    lines += ["| runtime | chunks/s, median of blocks | min | max |", "|---|---|---|---|"]
    for name in names:
        v = [r[name] for r in speed_rows]
        lines.append(f"| {name} | {np.median(v):.1f} | {min(v):.1f} | {max(v):.1f} |")
    lines += [""] + [f"{names[1]} / {name} per block: median {np.median(v):.2f}x (min "
                     f"{min(v):.2f}, max {max(v):.2f})." for name, v in (
                         (n, [r[names[1]] / r[n] for r in speed_rows]) for n in names[2:])]
    lines += ["", f"OpenVINO / torch per block: median **{np.median(ratios):.2f}x** "
                  f"(min {min(ratios):.2f}, max {max(ratios):.2f}). Re-embedding the "
                  f"{found['documents']} filings of the questions ({found['embedded']} chunks) "
                  f"with OpenVINO took {found['embed_seconds']:.0f} s, "
                  f"{found['embedded'] / found['embed_seconds']:.1f} chunks/s.", "",
              f"Vectors: cosine to the stored (torch) vector over the {len(cosines)} chunks: "
              f"min {cosines.min():.6f}, mean {cosines.mean():.6f}.", "",
              f"Retrieval, {len(found['questions'])} dev questions whose filing is indexed and "
              f"that name evidence pages (dense search within the question's filing):", "",
              "| index, query | recall@10 against torch, torch | evidence hit@5 | "
              + " | ".join(f"{h} half: recall@10, hit@5" for h in halves) + " |",
              "|---|---|---|" + "---|" * len(halves)]
    for side, f in figures.items():
        lines.append(f"| {side} | {f['recall10']:.3f} | {R.pct(f['hit5'])} | " + " | ".join(
            f"{h[side]['recall10']:.3f}, {R.pct(h[side]['hit5'])}" for h in halves.values()
            if h) + (" |" if halves else ""))
    if halves:
        counts = {name: sum(split.get(q["id"]) == name for q in found["questions"])
                  for name in halves}
        lines += ["", "Questions per half: " + ", ".join(f"{n} {c}" for n, c in counts.items())
                  + ". A precision is chosen on the tune half; the test half is seen."]
    lines += ["", f"![speed and closeness]({png})", ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
