"""Do the rerankers tell a question's evidence page from the other pages of the same filing?

For each FinanceBench dev question whose filing is indexed: its evidence page(s) and a seeded
sample of other pages of that filing are scored by the light stage (MaxSim over MiniLM token
vectors) and the large stage (LLM yes/no relevance) of a profile. Reports ROC-AUC per stage
(pooled, and the mean of per-question AUCs), and the scoring time of the cascade (light on
all, large on the light top M) against large-only on the same candidates, in one run.

    python -m benchmarks.reranker_auc --index DIR [--profile cpu] [--questions N]
        [--large-model MODEL]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "financebench"


def roc_auc(labels: list[int], scores: list[float]) -> float | None:
    """Probability that a random positive outscores a random negative (ties count half)."""
    pos = [s for l, s in zip(labels, scores) if l]
    neg = [s for l, s in zip(labels, scores) if not l]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    from models.embedders import load_embedder
    from models.profiles import load_config, resolve_role
    from models.rerankers import LLMRelevanceScorer, MaxSimReranker
    from models.transformers_engine import TransformersEngine
    from retrieval.store.index import Index

    p = argparse.ArgumentParser(prog="python -m benchmarks.reranker_auc", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", type=Path, required=True)
    p.add_argument("--profile", default="cpu")
    p.add_argument("--questions", type=int, default=50)
    p.add_argument("--negatives", type=int, default=5, help="other pages per question (5)")
    p.add_argument("--top-m", type=int, default=2, help="light top M sent to the large stage")
    p.add_argument("--max-chars", type=int, default=1500, help="page text cut to this length")
    p.add_argument("--large-model", default=None,
                   help="score the large stage with this model instead of the profile's "
                        "large_reranker (e.g. Qwen/Qwen2.5-Coder-1.5B-Instruct)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    out = args.out or REPO / "benchmarks" / "results" / f"reranker_auc_{args.profile}"
    out.mkdir(parents=True, exist_ok=True)

    profile = load_config().active(args.profile)
    if args.large_model:
        profile.roles["large_reranker"] = profile.role("large_reranker").model_copy(
            update={"model": args.large_model})
    light = MaxSimReranker(load_embedder("minilm"))
    weights = resolve_role(profile, "large_reranker", prepare=True, progress=True)
    large = LLMRelevanceScorer(TransformersEngine(weights.path),
                               model_id=profile.role("large_reranker").model)
    rng = random.Random(0)
    questions = [json.loads(l) for l in (SHARED / "questions.dev.jsonl").read_text().splitlines()]
    rows = []
    timing = {"light_s": 0.0, "large_all_s": 0.0, "large_top_m_s": 0.0}
    with Index.open(args.index) as index:
        indexed = {d.doc_id for d in index.documents()}
        todo = [q for q in questions if q["doc_name"] in indexed][: args.questions]
        for q in tqdm(todo, unit="q", desc="scoring"):
            pages = dict(index.catalog.pages(q["doc_name"]))
            positives = sorted({e["evidence_page_num"] + 1 for e in q["evidence"]} & set(pages))
            others = [n for n in pages if n not in positives and pages[n].strip()]
            negatives = rng.sample(others, min(args.negatives, len(others)))
            cand = positives + negatives
            texts = [" ".join(pages[n].split())[: args.max_chars] for n in cand]
            labels = [1] * len(positives) + [0] * len(negatives)
            t = time.perf_counter()
            light_scores = light.score(q["question"], texts)
            timing["light_s"] += time.perf_counter() - t
            t = time.perf_counter()
            large_scores = large.score(q["question"], texts)
            timing["large_all_s"] += time.perf_counter() - t
            top = sorted(range(len(cand)), key=lambda i: -light_scores[i])[: args.top_m]
            t = time.perf_counter()
            large.score(q["question"], [texts[i] for i in top])
            timing["large_top_m_s"] += time.perf_counter() - t
            rows.append({"id": q["financebench_id"], "doc": q["doc_name"], "pages": cand,
                         "labels": labels, "light": light_scores, "large": large_scores,
                         "cascade_top_m_has_evidence": any(labels[i] for i in top)})

    pooled = lambda key: roc_auc([l for r in rows for l in r["labels"]],  # noqa: E731
                                 [s for r in rows for s in r[key]])
    per_q = lambda key: [a for r in rows if (a := roc_auc(r["labels"], r[key])) is not None]  # noqa
    summary = {
        "profile": args.profile, "questions": len(rows),
        "candidates_per_question": round(sum(len(r["labels"]) for r in rows) / len(rows), 2),
        "light_model": light.model_id, "large_model": large.model_id,
        "auc_pooled": {"light": pooled("light"), "large": pooled("large")},
        "auc_mean_per_question": {k: sum(v) / len(v) for k in ("light", "large")
                                  if (v := per_q(k))},
        "cascade_top_m": args.top_m,
        "cascade_top_m_recall": sum(r["cascade_top_m_has_evidence"] for r in rows) / len(rows),
        "seconds": {k: round(v, 2) for k, v in timing.items()},
        "cascade_over_large_only_time": round(
            (timing["light_s"] + timing["large_top_m_s"]) / timing["large_all_s"], 3),
    }
    command = "python -m benchmarks.reranker_auc " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    (out / "results.json").write_text(json.dumps({"command": command, **summary,
                                                  "rows": rows}, indent=2))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, key in zip(axes, ("light", "large")):
        pos = [s for r in rows for l, s in zip(r["labels"], r[key]) if l]
        neg = [s for r in rows for l, s in zip(r["labels"], r[key]) if not l]
        ax.hist([neg, pos], bins=20, label=["other pages", "evidence pages"],
                color=["#aab7b8", "#c0392b"], density=True)
        ax.set_title(f"{key}: AUC {summary['auc_pooled'][key]:.2f}")
        ax.set_xlabel("score")
    axes[0].legend()
    fig.suptitle(f"Evidence page vs other pages of the same filing ({len(rows)} questions)")
    fig.tight_layout()
    fig.savefig(out / "score_distributions.png", dpi=120)
    plt.close(fig)
    s = summary
    (out / "report.md").write_text(
        f"# Reranker separation — profile `{args.profile}`\n\nCommand: `{command}`\n\n"
        f"{s['questions']} FinanceBench dev questions; per question its evidence page(s) and "
        f"{args.negatives} other pages of the same filing (seeded sample), page text cut to "
        f"{args.max_chars} characters. ROC-AUC 0.5 is chance.\n\n"
        "| stage | model | pooled ROC-AUC | mean per-question ROC-AUC |\n|---|---|---:|---:|\n"
        f"| light | {s['light_model']} (MaxSim) | {s['auc_pooled']['light']:.3f} | "
        f"{s['auc_mean_per_question'].get('light', float('nan')):.3f} |\n"
        f"| large | {s['large_model']} (yes/no) | {s['auc_pooled']['large']:.3f} | "
        f"{s['auc_mean_per_question'].get('large', float('nan')):.3f} |\n\n"
        f"Scoring time in this run: light on all candidates {s['seconds']['light_s']} s, large on "
        f"all {s['seconds']['large_all_s']} s, large on the light top {args.top_m} "
        f"{s['seconds']['large_top_m_s']} s. Cascade / large-only time = "
        f"{s['cascade_over_large_only_time']}; the light top {args.top_m} held an evidence page "
        f"for {s['cascade_top_m_recall']:.0%} of questions.\n\n"
        "![scores](score_distributions.png)\n")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
