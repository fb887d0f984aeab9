"""Do the rerankers tell a question's evidence page from the other pages of the same filing?

For each FinanceBench dev question whose filing is indexed: its evidence page(s) and a seeded
sample of other pages of that filing are scored by the light stage (MaxSim over MiniLM token
vectors) and the large stage of a profile (LLM yes/no relevance; ``--large KIND:MODEL`` names
another, e.g. ``bi-encoder:sentence-transformers/all-mpnet-base-v2``). Reports ROC-AUC per stage
(pooled, and the mean of per-question AUCs), and the scoring time of the cascade (light on
all, large on the light top M) against large-only on the same candidates, in one run.

The gap between two scorers' pooled AUCs comes with a 95% bootstrap interval that resamples
questions (every page of a drawn question goes with it): large minus light within the run, and
with ``--against DIR`` this run's large stage minus another run's, on the same pages.

    python -m finrag.benchmarks.reranker_auc --index DIR [--profile cpu] [--questions N]
        [--large-model MODEL | --large KIND:MODEL] [--against RESULTS_DIR]
    python -m finrag.benchmarks.reranker_auc --report-only --out RESULTS_DIR [--against RESULTS_DIR]
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


def pooled_auc(rows: list[dict], key: str) -> float | None:
    return roc_auc([l for r in rows for l in r["labels"]], [s for r in rows for s in r[key]])


def auc_gap(rows: list[dict], a: str, b: str, other: list[dict] | None = None,
            n: int = 2000, seed: int = 0) -> dict:
    """Pooled AUC of ``a`` minus that of ``b`` (``b`` read from ``other``'s rows when given, the
    same questions and pages), with a bootstrap interval resampling questions."""
    from finrag.benchmarks.stats import bootstrap_ci

    other = rows if other is None else other
    if [(r["id"], r["pages"]) for r in rows] != [(r["id"], r["pages"]) for r in other]:
        raise ValueError("the two runs scored different questions or pages; their AUCs are not "
                         "paired")

    def gap(picks) -> float:
        picks = [int(i) for i in picks]
        first = pooled_auc([rows[i] for i in picks], a)
        second = pooled_auc([other[i] for i in picks], b)
        return float("nan") if first is None or second is None else first - second

    ci = bootstrap_ci(range(len(rows)), gap, n=n, seed=seed)
    return {"gap": ci["estimate"], "low": ci["low"], "high": ci["high"], "questions": ci["n"],
            "resamples": n}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.reranker_auc", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", type=Path, default=None, help="the index (not with --report-only)")
    p.add_argument("--profile", default="cpu")
    p.add_argument("--questions", type=int, default=50)
    p.add_argument("--negatives", type=int, default=5, help="other pages per question (5)")
    p.add_argument("--top-m", type=int, default=2, help="light top M sent to the large stage")
    p.add_argument("--max-chars", type=int, default=1500, help="page text cut to this length")
    p.add_argument("--large-model", default=None,
                   help="score the large stage with this model instead of the profile's "
                        "large_reranker (e.g. Qwen/Qwen2.5-Coder-1.5B-Instruct)")
    p.add_argument("--large", default=None, metavar="KIND:MODEL",
                   help="the large stage as another reranker kind and model, e.g. "
                        "bi-encoder:sentence-transformers/all-mpnet-base-v2")
    p.add_argument("--against", type=Path, default=None, metavar="RESULTS_DIR",
                   help="another run on the same pages: report this large stage minus its")
    p.add_argument("--report-only", action="store_true",
                   help="score nothing: redraw the report from --out's results.json")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    out = args.out or REPO / "benchmarks" / "results" / f"reranker_auc_{args.profile}"
    command = "python -m finrag.benchmarks.reranker_auc " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    if args.report_only:
        data = json.loads((out / "results.json").read_text())
        data["redrawn_by"] = command
    else:
        if args.index is None:
            p.error("--index is required unless --report-only")
        if args.large and args.large_model:
            p.error("--large names the kind and the model: give it or --large-model, not both")
        data = {"command": command, **measure(args)}
    against = json.loads((args.against / "results.json").read_text()) if args.against else None
    data["gaps"] = {"large_minus_light": auc_gap(data["rows"], "large", "light")}
    if against is not None:
        data["gaps"]["large_minus_other_large"] = {
            **auc_gap(data["rows"], "large", "large", against["rows"]),
            "other": str(args.against), "other_model": against["large_model"],
            "other_kind": against.get("large_kind", "llm-yesno")}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(data, indent=2))
    write_report(out, data)
    print(json.dumps({k: v for k, v in data.items() if k != "rows"}, indent=2))
    return 0


def measure(args) -> dict:
    """Score every question's candidates with both stages; the summary and per-question rows."""
    from tqdm import tqdm

    from finrag.models.embedders import load_embedder
    from finrag.models.profiles import RoleSpec, load_config, load_reranker, resolve_role
    from finrag.models.rerankers import MaxSimReranker
    from finrag.retrieval.store.index import Index

    env = dict(os.environ, FINRAG_PROFILE=args.profile)
    if args.large_model:  # the profiles' own override of a role's model
        env["FINRAG_LARGE_RERANKER_MODEL"] = args.large_model
    profile = load_config(env=env).active(args.profile)
    if args.large:
        kind, _, model = args.large.partition(":")
        profile = profile.model_copy(update={"roles": dict(
            profile.roles, large_reranker=RoleSpec(kind=kind, model=model))})
    light = MaxSimReranker(load_embedder("minilm"))
    resolve_role(profile, "large_reranker", prepare=True, progress=True)
    large = load_reranker(profile, "large_reranker")
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

    per_q = lambda key: [a for r in rows if (a := roc_auc(r["labels"], r[key])) is not None]  # noqa
    return {
        "profile": args.profile, "questions": len(rows), "negatives": args.negatives,
        "max_chars": args.max_chars,
        "candidates_per_question": round(sum(len(r["labels"]) for r in rows) / len(rows), 2),
        "light_model": light.model_id, "large_model": large.model_id, "large_kind": large.name,
        "auc_pooled": {"light": pooled_auc(rows, "light"), "large": pooled_auc(rows, "large")},
        "auc_mean_per_question": {k: sum(v) / len(v) for k in ("light", "large")
                                  if (v := per_q(k))},
        "cascade_top_m": args.top_m,
        "cascade_top_m_recall": sum(r["cascade_top_m_has_evidence"] for r in rows) / len(rows),
        "seconds": {k: round(v, 2) for k, v in timing.items()},
        "cascade_over_large_only_time": round(
            (timing["light_s"] + timing["large_top_m_s"]) / timing["large_all_s"], 3),
        "rows": rows,
    }


def write_report(out: Path, s: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = s["rows"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, key in zip(axes, ("light", "large")):
        pos = [v for r in rows for l, v in zip(r["labels"], r[key]) if l]
        neg = [v for r in rows for l, v in zip(r["labels"], r[key]) if not l]
        ax.hist([neg, pos], bins=20, label=["other pages", "evidence pages"],
                color=["#aab7b8", "#c0392b"], density=True)
        ax.set_title(f"{key}: AUC {s['auc_pooled'][key]:.2f}")
        ax.set_xlabel("score")
    axes[0].legend()
    fig.suptitle(f"Evidence page vs other pages of the same filing ({len(rows)} questions)")
    fig.tight_layout()
    fig.savefig(out / "score_distributions.png", dpi=120)
    plt.close(fig)
    negatives, max_chars = s["negatives"], s["max_chars"]
    top_m = s["cascade_top_m"]
    lines = [
        f"# Reranker separation — profile `{s['profile']}`", "", f"Command: `{s['command']}`", "",
        *([f"Report redrawn from this run's `results.json` with `{s['redrawn_by']}`.", ""]
          if s.get("redrawn_by") else []),
        f"{s['questions']} FinanceBench dev questions; per question its evidence page(s) and "
        f"{negatives} other pages of the same filing (seeded sample), page text cut to "
        f"{max_chars} characters. ROC-AUC 0.5 is chance.", "",
        "| stage | model | pooled ROC-AUC | mean per-question ROC-AUC |", "|---|---|---:|---:|",
        f"| light | {s['light_model']} (MaxSim) | {s['auc_pooled']['light']:.3f} | "
        f"{s['auc_mean_per_question'].get('light', float('nan')):.3f} |",
        f"| large | {s['large_model']} ({s.get('large_kind', 'llm-yesno')}) | "
        f"{s['auc_pooled']['large']:.3f} | "
        f"{s['auc_mean_per_question'].get('large', float('nan')):.3f} |", "",
        "Gaps in pooled ROC-AUC, with 95% bootstrap intervals resampling the questions "
        "(each drawn question brings all its pages):", "",
        "| gap | pooled ROC-AUC difference [95% CI] | questions |", "|---|---:|---:|"]
    gaps = s["gaps"]
    kind = s.get("large_kind", "llm-yesno")
    names = {"large_minus_light": f"large ({s['large_model']}, {kind}) − light (MaxSim)"}
    if "large_minus_other_large" in gaps:
        other = gaps["large_minus_other_large"]
        names["large_minus_other_large"] = (
            f"large ({s['large_model']}, {kind}) − large ({other['other_model']}, "
            f"{other.get('other_kind', 'llm-yesno')}, `{other['other']}`)")
    for key, name in names.items():
        g = gaps[key]
        lines.append(f"| {name} | {g['gap']:+.3f} [{g['low']:+.3f}, {g['high']:+.3f}] | "
                     f"{g['questions']} |")
    lines += [
        "", f"Scoring time in this run: light on all candidates {s['seconds']['light_s']} s, "
        f"large on all {s['seconds']['large_all_s']} s, large on the light top {top_m} "
        f"{s['seconds']['large_top_m_s']} s. Cascade / large-only time = "
        f"{s['cascade_over_large_only_time']}; the light top {top_m} held an evidence page "
        f"for {s['cascade_top_m_recall']:.0%} of questions.", "",
        "![scores](score_distributions.png)", ""]
    (out / "report.md").write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
