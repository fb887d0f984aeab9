"""Each retrieval stage on and off: HDRR's evidence ranking on the FinanceBench dev questions
with their filing indexed, per profile option, with paired bootstrap CIs against the baseline.

A configuration is a ``+``-joined list of stage names (``baseline`` = the profile with every
stage below off, whatever the profile itself turns on). For each configuration and question
HDRR retrieves without generating (facts routes off: every question is answered from the
filings, so every question has a ranking to score) and we record hit@5, hit@10, the reciprocal rank of the first evidence
chunk (MRR), NDCG@10 (binary gains; the ideal ranking holds every chunk of the gold filing that
covers an evidence page), the LLM tokens spent and each stage's time. Rows are appended to
rows.jsonl as they are computed (a rerun resumes). The report gives every figure on the
``tune`` half, the ``test`` half and all questions (benchmarks/splits.py): settings are chosen
on tune, claims are made on test.

The light stage's passage token vectors are cached by passage text across configurations unless
``--timed`` (then every stage runs in full and its time counts; run it alone on the machine).

    python -m finrag.benchmarks.retrieval_stages --index var/fb-index --profile cpu \\
        --configs baseline,prior,prior+stmt1,prior+stmt1+sect1

The stages this benchmark measured off and that no profile turned on (query normalisation,
the weighted FTS query, k-reciprocal refinement, table records, HyDE query expansion) were
taken out of the pipeline (#60); their reports stay in benchmarks/results/ as the record of
why.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "financebench"
METRICS = (("hit5", "hit@5"), ("hit10", "hit@10"), ("rr", "MRR"), ("ndcg10", "NDCG@10"))

# stage name → the pipeline/cascade settings it turns on
STAGES: dict[str, dict] = {
    "prior": {"cascade": {"prior_fusion": True}},
    "nolight": {"pipeline": {"light_rerank": False}},
    # the pages of the primary statements the question reads join the candidates; the best
    # chunk of the first 2 leads (stmt<N>: of the first N)
    "stmt": {"pipeline": {"statement_pages": 2}},
    # the pages where the sections the question asks about open (legal proceedings,
    # segments, risk factors, customers) join the candidates; the best chunk of the first 2
    # leads (sect<N>: of the first N)
    "sect": {"pipeline": {"section_pages": 2}},
    "pool100": {"pipeline": {"fts_k": 50, "dense_k": 60}, "cascade": {"light_top_n": 100}},
    # the large stage named by --large (kind:model), over the light stage's top M
    "large": {"pipeline": {"large_rerank": True}},
    # the large stage's order fused with the order it was given (RRF)
    "lfuse": {"cascade": {"large_fusion": True}},
}


# every stage off: the baseline, whatever the profile's own settings are
OFF: dict = {"pipeline": {"light_rerank": True, "large_rerank": False, "statement_pages": 0,
                          "section_pages": 0},
             "cascade": {"prior_fusion": False, "large_fusion": False}}


def parse_config(name: str) -> dict:
    """``prior+stmt1`` → the merged settings of its stages (``baseline``: none)."""
    out: dict = {"pipeline": {}, "cascade": {}}
    for part in name.split("+"):
        if part == "baseline":
            continue
        if part.startswith("stmt") and part[4:].isdigit():  # stmt3: the first 3 pages lead
            out["pipeline"].update(statement_pages=int(part[4:]))
            continue
        if part.startswith("sect") and part[4:].isdigit():  # sect1: the first page leads
            out["pipeline"].update(section_pages=int(part[4:]))
            continue
        if part.startswith("top") and part[3:].isdigit():  # top12: the large stage sees 12
            out["cascade"].update(large_top_m=int(part[3:]))
            continue
        if part not in STAGES:
            raise ValueError(f"unknown stage {part!r}; known: baseline, {', '.join(STAGES)}, "
                             "stmt<N>, sect<N>, top<M>")
        for key, values in STAGES[part].items():
            out[key].update(values)
    return out


def cached_maxsim(reranker):
    """The MaxSim light stage with each passage's token vectors remembered by its text: every
    configuration and every rewording of a question reuses the passages already encoded (the
    scores are the same as without the cache; only the time is not)."""
    from finrag.models.rerankers import MaxSimReranker

    if not isinstance(reranker, MaxSimReranker):
        return reranker

    class CachedMaxSim(MaxSimReranker):
        def __init__(self):
            self.__dict__.update(reranker.__dict__)
            self.vectors: dict[str, object] = {}

        def _token_vectors(self, texts: list[str]) -> list:
            todo = [t for t in dict.fromkeys(texts) if t not in self.vectors]
            if todo:
                for t, v in zip(todo, MaxSimReranker._token_vectors(self, todo)):
                    self.vectors[t] = v
            return [self.vectors[t] for t in texts]

    return CachedMaxSim()


class CachedScores:
    """A pointwise large stage (each passage's score depends on the query and that passage
    alone: bi-encoder, MaxSim, cross-encoder) with its scores remembered by (query, passage),
    so configurations that differ after it (``lfuse``) or give it more candidates (``top20``)
    score each passage once. LLM scorers are not wrapped: their token counts are a figure."""

    KINDS = ("bi-encoder", "maxsim", "cross-encoder")

    def __init__(self, reranker):
        self.reranker, self.scores = reranker, {}

    def __getattr__(self, name):
        return getattr(self.reranker, name)

    def score(self, query: str, passages: list[str]) -> list[float]:
        todo = [t for t in dict.fromkeys(passages) if (query, t) not in self.scores]
        for t, v in zip(todo, self.reranker.score(query, todo) if todo else []):
            self.scores[(query, t)] = v
        return [self.scores[(query, t)] for t in passages]


def configure(pipe, base_profile, config: dict) -> None:
    """Point ``pipe`` at the base profile with ``config``'s settings (components shared)."""
    from finrag.retrieval.systems.cascade import Cascade

    profile = base_profile.model_copy(update={
        "pipeline": base_profile.pipeline.model_copy(update=config["pipeline"]),
        "cascade": base_profile.cascade.model_copy(update=config["cascade"])})
    pipe.profile, pipe.settings = profile, profile.pipeline
    light = pipe.light if profile.pipeline.light_rerank else None
    large = pipe.large if profile.pipeline.large_rerank else None
    if profile.pipeline.large_rerank and large is None:
        raise ValueError("a configuration with the large stage needs --large KIND:MODEL")
    pipe.cascade = (Cascade(light=light, large=large, **profile.cascade.model_dump())
                    if light or large else None)


def relevant_chunks(index, doc_id: str, pages: list[int]) -> int:
    rows = index.catalog.db.execute(
        "SELECT c.first_page, c.last_page FROM chunks c JOIN documents d ON c.doc = d.id "
        "WHERE d.doc_id = ?", (doc_id,)).fetchall()
    return sum(any(fp <= p <= lp for p in pages) for fp, lp in rows)


def score(q, answer: dict, n_relevant: int) -> dict:
    from finrag.retrieval.systems.evaluation import evidence_hit, first_hit_rank, ndcg_at_k

    rank = first_hit_rank(answer, q.doc_name, q.pages)
    usage = answer["usage"]
    # where each recorded stage put the first evidence chunk (fused: the retrievers' RRF order)
    stage_ranks = {stage: first_hit_rank({"retrieved": {"ranked": rows}}, q.doc_name, q.pages)
                   for stage, rows in answer["retrieved"].items()
                   if stage in ("fused", "tables", "light", "refine", "large",
                                "large_fusion")}
    return {"hit5": float(evidence_hit(answer, q.doc_name, q.pages, 5)),
            "hit10": float(evidence_hit(answer, q.doc_name, q.pages, 10)),
            "rr": 0.0 if rank is None else 1.0 / rank, "first_rank": rank,
            "stage_first_ranks": stage_ranks,
            "ndcg10": ndcg_at_k(answer, q.doc_name, q.pages, 10, n_relevant),
            "routed": (answer.get("routing") or {}).get("doc_ids"),
            "candidates": len(answer["retrieved"].get("fused") or []),
            "llm_tokens": usage["prompt_tokens"] + usage["completion_tokens"],
            "llm_calls": usage["llm_calls"],
            "timings_ms": {k: v for k, v in answer.get("timings_ms", {}).items()}}


def retrieval_ms(row: dict) -> float:
    """Time of the retrieval stages proper (routing is shared by every configuration)."""
    return sum(v for k, v in row["timings_ms"].items() if k not in ("route", "total", "facts"))


def summarize(rows: list[dict], configs: list[str], splits: dict[str, str]) -> dict:
    import numpy as np

    from finrag.benchmarks.stats import bootstrap_ci, paired_difference

    out: dict = {}
    by = {(r["config"], r["id"]): r for r in rows if not r.get("error")}
    for split in ("tune", "test", "all"):
        ids = sorted({r["id"] for r in rows if split == "all" or splits.get(r["id"]) == split})
        base = {i: by[("baseline", i)] for i in ids if ("baseline", i) in by}
        out[split] = {}
        for config in configs:
            mine = {i: by[(config, i)] for i in ids if (config, i) in by}
            if not mine:
                continue
            entry: dict = {"n": len(mine)}
            for key, _ in METRICS:
                ci = bootstrap_ci([r[key] for r in mine.values()])
                entry[key] = ci
                if config != "baseline" and base:
                    entry[f"{key}_diff"] = paired_difference(
                        {i: r[key] for i, r in mine.items()}, {i: r[key] for i, r in base.items()})
            ms = [retrieval_ms(r) for r in mine.values()]
            entry["retrieval_ms_mean"] = float(np.mean(ms))
            entry["retrieval_ms_p50"] = float(np.median(ms))
            if base:
                entry["added_ms_mean"] = float(np.mean(
                    [retrieval_ms(r) - retrieval_ms(base[i]) for i, r in mine.items() if i in base]))
            entry["llm_tokens_mean"] = float(np.mean([r["llm_tokens"] for r in mine.values()]))
            entry["llm_calls_mean"] = float(np.mean([r["llm_calls"] for r in mine.values()]))
            out[split][config] = entry
    return out


def choose(summary: dict, configs: list[str]) -> str | None:
    """The configuration with the best tune hit@5 (ties: hit@10, then MRR, then the fewer
    stages): chosen on tune only, so its test figures are a fair claim."""
    tune = summary.get("tune", {})
    ranked = sorted((c for c in configs if c in tune), key=lambda c: (
        -tune[c]["hit5"]["estimate"], -tune[c]["hit10"]["estimate"], -tune[c]["rr"]["estimate"],
        len(c.split("+")), configs.index(c)))
    return ranked[0] if ranked else None


def _plots(summary: dict, configs: list[str], out: Path, timed: bool) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from finrag.benchmarks.stats import pareto_front

    test = summary["test"]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    pts = [{"config": c, "quality": test[c]["hit5"]["estimate"],
            "cost": test[c]["retrieval_ms_mean"]} for c in configs if c in test]
    front = {p["config"] for p in pareto_front(pts, maximize=("quality",), minimize=("cost",))}
    for p in pts:
        on = p["config"] in front
        ax.scatter(p["cost"] / 1000, p["quality"], color="#c0392b" if on else "#7f8c8d", s=30)
        ax.annotate(p["config"], (p["cost"] / 1000, p["quality"]), fontsize=7,
                    xytext=(3, 3), textcoords="offset points")
    line = sorted((p for p in pts if p["config"] in front), key=lambda p: p["cost"])
    ax.plot([p["cost"] / 1000 for p in line], [p["quality"] for p in line], color="#c0392b",
            lw=1, label="quality/cost frontier")
    ax.set_xlabel("retrieval seconds per question (mean; " +
                  ("timed run" if timed else "shared CPU, scores cached: indicative") + ")")
    ax.set_ylabel("evidence hit@5, test half")
    ax.set_title("HDRR retrieval stages: quality against cost")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "frontier.png", dpi=120)
    plt.close(fig)

    others = [c for c in configs if c != "baseline" and c in test]
    fig, axes = plt.subplots(1, len(METRICS), figsize=(3.2 * len(METRICS), 0.5 + 0.35 *
                                                      max(len(others), 2)), sharey=True)
    for ax, (key, label) in zip(axes, METRICS):
        for y, c in enumerate(others):
            for split, color, dy in (("tune", "#2471a3", -0.15), ("test", "#c0392b", 0.15)):
                d = summary[split].get(c, {}).get(f"{key}_diff")
                if not d or d["mean_diff"] is None:
                    continue
                ax.errorbar(d["mean_diff"], y + dy, xerr=[[d["mean_diff"] - d["low"]],
                                                          [d["high"] - d["mean_diff"]]],
                            fmt="o", color=color, ms=3, capsize=2,
                            label=split if (y == 0 and key == "hit5") else None)
        ax.axvline(0, color="black", lw=0.6)
        ax.set_title(f"{label} − baseline", fontsize=9)
        ax.set_yticks(range(len(others)), others, fontsize=7)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "paired_differences.png", dpi=120)
    plt.close(fig)


def _report(summary: dict, configs: list[str], meta: dict) -> str:
    def ci(e):
        return f"{e['estimate']:.3f} [{e['low']:.3f}, {e['high']:.3f}]"

    def diff(e):
        if not e or e["mean_diff"] is None:
            return "–"
        return f"{e['mean_diff']:+.3f} [{e['low']:+.3f}, {e['high']:+.3f}]"

    lines = [f"# Retrieval stages, each on and off — profile `{meta['profile']}`", "",
             f"Command: `{meta['command']}`", "",
             f"HDRR retrieval (no generation; facts routes off, so every question is answered "
             f"from the filings) on the {meta['questions']} FinanceBench dev questions whose "
             f"filing is in `{meta['index']}` and that name evidence pages: tune half "
             f"n={meta['n_tune']}, test half n={meta['n_test']} (benchmarks/splits.py). A hit: "
             "a chunk of the gold filing covering an evidence page. MRR: mean of 1/rank of the "
             "first such chunk in the final ranking (0 when absent). NDCG@10: binary gains, the "
             "ideal ranking holds every chunk of the gold filing that covers an evidence page. "
             "Brackets: 95% bootstrap intervals (2,000 resamples of questions); differences are "
             "paired against `baseline` on the same questions. Settings were chosen on tune; "
             "test is the claim.", "",
             "Stages: " + "; ".join(f"`{k}` = {v}" for k, v in meta["stages"].items()), ""]
    if not meta["timed"]:
        lines += ["Times below come from a run on a CPU shared with other work and with the "
                  "light stage's passage token vectors (and a bi-encoder, MaxSim or "
                  "cross-encoder large stage's scores) cached across configurations: the first "
                  "configuration to score a passage pays for it, so they are indicative only. "
                  f"The timed figures come from `{meta['timed_command']}` run alone.", ""]
    for split in ("test", "tune", "all"):
        s = summary[split]
        lines += [f"## {split} ({next(iter(s.values()))['n'] if s else 0} questions)", "",
                  "| configuration | hit@5 | hit@10 | MRR | NDCG@10 | retrieval ms (mean) "
                  "| LLM tokens / q | LLM calls / q |", "|---|---|---|---|---|---:|---:|---:|"]
        for c in configs:
            if c in s:
                e = s[c]
                lines.append(f"| {c} | {ci(e['hit5'])} | {ci(e['hit10'])} | {ci(e['rr'])} | "
                             f"{ci(e['ndcg10'])} | {e['retrieval_ms_mean']:,.0f} | "
                             f"{e['llm_tokens_mean']:,.0f} | {e['llm_calls_mean']:.2f} |")
        lines += ["", "Paired differences against baseline:", "",
                  "| configuration | Δ hit@5 | Δ hit@10 | Δ MRR | Δ NDCG@10 | added ms (mean) |",
                  "|---|---|---|---|---|---:|"]
        for c in configs:
            if c in s and c != "baseline":
                e = s[c]
                lines.append(f"| {c} | {diff(e.get('hit5_diff'))} | {diff(e.get('hit10_diff'))} "
                             f"| {diff(e.get('rr_diff'))} | {diff(e.get('ndcg10_diff'))} | "
                             f"{e.get('added_ms_mean', 0):+,.0f} |")
        lines.append("")
    chosen = choose(summary, configs)
    if chosen:
        t, u = summary["test"].get(chosen), summary["tune"][chosen]
        lines += ["## Choice", "",
                  f"Best on tune (hit@5, then hit@10, then MRR, then fewer stages): "
                  f"`{chosen}` — tune hit@5 {u['hit5']['estimate']:.3f}, hit@10 "
                  f"{u['hit10']['estimate']:.3f}" + (
                      f"; on the untouched test half hit@5 {ci(t['hit5'])}, hit@10 "
                      f"{ci(t['hit10'])}, MRR {ci(t['rr'])}, NDCG@10 {ci(t['ndcg10'])}; "
                      f"paired against baseline on test: Δhit@5 {diff(t.get('hit5_diff'))}, "
                      f"Δhit@10 {diff(t.get('hit10_diff'))}." if t else "."), ""]
        lines += ["Each stage alone against baseline (tune | test Δhit@5):", ""]
        for stage in [c for c in configs if "+" not in c and c != "baseline"]:
            d_u = summary["tune"].get(stage, {}).get("hit5_diff")
            d_t = summary["test"].get(stage, {}).get("hit5_diff")
            verdict = "in the chosen configuration" if stage in chosen.split("+") else "off"
            lines.append(f"- `{stage}`: {diff(d_u)} | {diff(d_t)} — {verdict}")
        lines.append("")
    if meta.get("note"):
        lines += [f"Run note: {meta['note']}", ""]
    lines += ["![frontier](frontier.png)", "", "![differences](paired_differences.png)", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    from finrag.benchmarks.splits import split_of
    from finrag.retrieval.systems.evaluation import load_questions
    from finrag.retrieval.systems.pipelines import Pipeline

    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.retrieval_stages", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", type=Path, required=True)
    p.add_argument("--questions", type=Path, default=SHARED / "questions.dev.jsonl")
    p.add_argument("--profile", default="cpu")
    p.add_argument("--configs", default="baseline,prior,prior+stmt1,prior+stmt1+sect1")
    p.add_argument("--split", default="all", choices=("all", "tune", "test"),
                   help="run only one half (the report still shows what rows.jsonl holds)")
    p.add_argument("--timed", action="store_true",
                   help="no score cache: every stage's time counts (run alone on the machine)")
    p.add_argument("--limit", type=int, default=None, help="the first N questions only")
    p.add_argument("--large", default=None, metavar="KIND:MODEL",
                   help="the large stage of configurations that name `large`, e.g. "
                        "bi-encoder:sentence-transformers/all-mpnet-base-v2 or "
                        "llm-scorer:Qwen/Qwen2.5-Coder-1.5B-Instruct or llm-listwise:…")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--note", default="")
    p.add_argument("--report-only", action="store_true",
                   help="compute nothing: the report over the rows already in rows.jsonl, on "
                        "the questions that have a row for every configuration run on their "
                        "half (a run stopped part-way, paired on the same questions)")
    args = p.parse_args(argv)
    configs = [c for c in args.configs.split(",") if c]
    if "baseline" not in configs:
        configs.insert(0, "baseline")
    parsed = {c: parse_config(c) for c in configs}
    out = args.out or REPO / "benchmarks" / "results" / (
        f"retrieval_stages_{args.profile}" + ("_timed" if args.timed else ""))
    out.mkdir(parents=True, exist_ok=True)

    records = [json.loads(l) for l in args.questions.read_text().splitlines() if l.strip()]
    splits = split_of(records)
    questions = [q for q in load_questions(args.questions) if q.pdf_present and q.pages
                 and q.doc_name]
    if args.split != "all":
        questions = [q for q in questions if splits.get(q.id) == args.split]

    if args.report_only:
        return _report_only(args, argv, configs, parsed, questions, splits, out)
    pipe = Pipeline.load(args.index, profile=args.profile)
    # baseline: the profile with every stage option off, whatever the profile turns on
    base = pipe.profile.model_copy(update={
        "pipeline": pipe.profile.pipeline.model_copy(update={"facts_routes": False, **OFF["pipeline"]}),
        "cascade": pipe.profile.cascade.model_copy(update=OFF["cascade"])})
    indexed = {d.doc_id for d in pipe.index.documents()}
    questions = [q for q in questions if q.doc_name in indexed][: args.limit]
    if args.large:
        from finrag.models.devices import LLM_KINDS
        from finrag.models.profiles import RoleSpec, load_reranker

        kind, _, model = args.large.partition(":")
        roles = dict(base.roles, large_reranker=RoleSpec(kind=kind, model=model))
        large_profile = base.model_copy(update={"roles": roles})
        engine = None
        if kind in LLM_KINDS:  # the engine of the named model, not the profile's
            from finrag.models.profiles import load_llm

            engine = load_llm(large_profile, "large_reranker")
        pipe.large = load_reranker(large_profile, "large_reranker", engine=engine)
        base = large_profile
    if not args.timed and pipe.light is not None:
        pipe.light = cached_maxsim(pipe.light)
    if not args.timed and getattr(pipe.large, "name", None) in CachedScores.KINDS:
        pipe.large = CachedScores(pipe.large)
    n_relevant = {q.id: relevant_chunks(pipe.index, q.doc_name, q.pages) for q in questions}

    rows_path = out / "rows.jsonl"
    done = _read_rows(rows_path)
    rows = []
    try:
        with open(rows_path, "a", encoding="utf-8") as sink:
            todo = [(c, q) for q in questions for c in configs]  # every configuration advances together
            bar = tqdm(todo, unit="q", file=sys.stderr, dynamic_ncols=True)
            for config, q in bar:
                bar.set_postfix_str(f"{config} {q.id}"[:40])
                if (config, q.id) in done:
                    rows.append(done[(config, q.id)])
                    continue
                configure(pipe, base, parsed[config])
                t0 = time.perf_counter()
                try:
                    answer = pipe.answer(q.question, "hdrr", generate=False).to_dict()
                    row = {"config": config, "id": q.id, "split": splits.get(q.id),
                           **score(q, answer, n_relevant[q.id])}
                except Exception as e:  # one failing question must not lose the run
                    row = {"config": config, "id": q.id, "split": splits.get(q.id),
                           "error": f"{type(e).__name__}: {e}"}
                row["wall_ms"] = round((time.perf_counter() - t0) * 1000, 1)
                rows.append(row)
                sink.write(json.dumps(row) + "\n")
                sink.flush()
    finally:
        pipe.close()

    _write(args, argv, configs, parsed, questions, splits, rows, out)
    return 0


def _read_rows(path: Path) -> dict[tuple[str, str], dict]:
    done: dict[tuple[str, str], dict] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            done[(row["config"], row["id"])] = row
    return done


def _report_only(args, argv, configs, parsed, questions, splits, out: Path) -> int:
    from finrag.retrieval.store.index import Index

    with Index.open(args.index) as index:
        indexed = {d.doc_id for d in index.documents()}
    questions = [q for q in questions if q.doc_name in indexed][: args.limit]
    done = _read_rows(out / "rows.jsonl")
    # the configurations run on each half: a question counts when it has a row for each
    ran = {half: [c for c in configs if any((c, q.id) in done for q in questions
                                            if splits.get(q.id) == half)]
           for half in ("tune", "test")}
    questions = [q for q in questions
                 if all((c, q.id) in done for c in ran.get(splits.get(q.id), configs))]
    rows = [done[(c, q.id)] for q in questions for c in configs if (c, q.id) in done]
    _write(args, argv, configs, parsed, questions, splits, rows, out)
    return 0


def _stages_named(configs: list[str]) -> dict[str, dict]:
    """Each stage the configurations name, with its settings (``stmt1`` as well as ``prior``)."""
    stages: dict[str, dict] = {}
    for part in (p for c in configs for p in c.split("+") if p != "baseline"):
        stages[part] = {k: v for k, v in parse_config(part).items() if v}
    return stages


def _write(args, argv, configs, parsed, questions, splits, rows, out: Path) -> None:
    summary = summarize(rows, configs, splits)
    command = "python -m finrag.benchmarks.retrieval_stages " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    timed_command = (f"python -m finrag.benchmarks.retrieval_stages --index {args.index} --profile "
                     f"{args.profile} --configs {','.join(configs)} --timed")
    meta = {"command": command, "timed_command": timed_command, "profile": args.profile,
            "index": str(args.index), "questions": len(questions),
            "n_tune": sum(splits.get(q.id) == "tune" for q in questions),
            "n_test": sum(splits.get(q.id) == "test" for q in questions),
            "timed": args.timed, "note": args.note,
            "stages": _stages_named(configs),
            "configs": {c: parsed[c] for c in configs},
            "errors": sum(1 for r in rows if r.get("error"))}
    (out / "results.json").write_text(json.dumps({**meta, "summary": summary}, indent=2))
    _plots(summary, configs, out, args.timed)
    (out / "report.md").write_text(_report(summary, configs, meta))
    print((out / "report.md").read_text())


if __name__ == "__main__":
    sys.exit(main())
