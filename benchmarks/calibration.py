"""``finrag bench judge-calibration``: how far the scorer and each profile's judge agree with
people, on held-out questions.

FinanceBench's human-labelled answers of one split of the dev questions (``--split``, default
``test``: the half the scorer's rules were *not* written on, ``benchmarks.splits``) are labelled
by the deterministic scorer (``benchmarks.scorer``) where it decides and by the profile's LLM
judge (``benchmarks.judge``) where it does not; the labels (correct / incorrect / refusal) are
compared with the people's: accuracy and Cohen's kappa with bootstrap intervals that resample
questions, the confusion matrix, per decider and per labelled configuration, and the judge's
1..10 scores by human label. LLM verdicts are cached per (row, judge configuration) in the
results folder, so a killed run resumes and a finished one only redraws the report.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from finrag.benchmarks import judge as J
from finrag.benchmarks import report as R
from finrag.benchmarks import scorer, stats
from finrag.benchmarks.splits import seeded_rank, split_ids

# Landis & Koch's reading of kappa
KAPPA_BANDS = ((0.0, "poor"), (0.20, "slight"), (0.40, "fair"), (0.60, "moderate"),
               (0.80, "substantial"), (1.01, "almost perfect"))


def kappa_band(kappa: float | None) -> str:
    if kappa is None:
        return "undefined"
    for bound, name in KAPPA_BANDS:
        if kappa <= bound:
            return name
    return KAPPA_BANDS[-1][1]


SAMPLE_SEED = "finrag-calibration-sample-1"


def select_rows(rows: list[dict], configurations: list[str] | None, limit: int | None,
                sample: int | None = None) -> list[dict]:
    """The labelled rows of the chosen configurations (all when None), at most ``limit`` per
    configuration, in file order; with ``sample``, a fixed random sample of that many of them
    (seeded hash order of question and configuration: it does not depend on file order, and a
    larger sample adds rows rather than replacing them), kept in file order."""
    chosen = _select(rows, configurations, limit)
    if sample is None:
        return chosen
    if sample < 1:
        raise ValueError("--sample must be >= 1")
    keep = {id(r) for r in sorted(chosen, key=lambda r: seeded_rank(
        SAMPLE_SEED, r.get("financebench_id"), r["configuration"]))[:sample]}
    return [r for r in chosen if id(r) in keep]


def _select(rows: list[dict], configurations: list[str] | None, limit: int | None) -> list[dict]:
    known = sorted({r["configuration"] for r in rows})
    if configurations:
        unknown = [c for c in configurations if c not in known]
        if unknown:
            raise ValueError(f"unknown configuration(s) {', '.join(unknown)}; the labelled "
                             f"answers have: {', '.join(known)}")
    chosen, seen = [], Counter()
    for r in rows:
        c = r["configuration"]
        if configurations and c not in configurations:
            continue
        if limit is not None and seen[c] >= limit:
            continue
        seen[c] += 1
        chosen.append(r)
    return chosen


def row_key(row: dict) -> str:
    return R.config_hash([row["financebench_id"], row["configuration"], row["model_answer"]], 16)


def trust_statement(result: dict[str, Any]) -> list[str]:
    """Plain sentences on how far the judge can be trusted, from its agreement figures."""
    conf = result["confusion"]
    lines = [f"Overall the judge agrees with the people on {R.pct(result['accuracy'])} of "
             f"{result['n']} answers; Cohen's kappa {R.num(result['kappa'], '{:.2f}')} is "
             f"**{kappa_band(result['kappa'])}** agreement beyond chance (Landis & Koch)."]
    for label in J.LABELS:
        total = sum(conf.get(label, {}).values())
        if total:
            hit = conf[label].get(label, 0) / total
            worst = max((k for k in J.LABELS if k != label), key=lambda k: conf[label].get(k, 0))
            other = (f"; its most common other verdict was {worst} "
                     f"({conf[label][worst]})" if conf[label].get(worst) else "")
            lines.append(f"Of the answers people labelled *{label}*, the judge said {label} for "
                         f"{R.pct(hit)} (n={total}){other}.")
    said_correct = sum(conf.get(h, {}).get("correct", 0) for h in J.LABELS)
    if said_correct:
        precision = conf.get("correct", {}).get("correct", 0) / said_correct
        lines.append(f"When the judge says *correct*, people agree {R.pct(precision)} of the time "
                     f"({said_correct} verdicts): read its correctness rate as "
                     f"{'close to' if precision >= 0.8 else 'an upper bound on'} the true one.")
    kappa = result["kappa"] or 0.0
    precision = (conf.get("correct", {}).get("correct", 0) / said_correct) if said_correct else 0
    wrong = sum(conf.get("incorrect", {}).values())
    missed = conf.get("incorrect", {}).get("correct", 0) / wrong if wrong else 0.0
    if kappa > 0.6 and precision >= 0.8:
        use = "fit to compare systems and to report absolute label rates."
    elif kappa > 0.2:
        use = ("fit to compare systems judged by the same judge (paired differences); its "
               f"correct rate overstates the true one (it called {R.pct(missed)} of the "
               "answers people found incorrect correct).")
    else:
        use = "not fit to rank systems; look at retrieval figures and hand-check answers instead."
    lines.append("Use: " + use)
    return lines


def confusion_heatmap(ax, conf: dict, who: str, title: str) -> None:
    """People's labels (rows) against ``who``'s (columns), counts written in the cells."""
    import numpy as np

    m = np.array([[conf.get(h, {}).get(j, 0) for j in J.LABELS] for h in J.LABELS])
    ax.imshow(m, cmap="Blues")
    for (i, j), v in np.ndenumerate(m):
        ax.text(j, i, str(v), ha="center", va="center",
                color="white" if v > m.max() / 2 else "black")
    ax.set_xticks(range(3), J.LABELS)
    ax.set_yticks(range(3), J.LABELS)
    ax.set_xlabel(who)
    ax.set_ylabel("people")
    ax.set_title(title)


def plots(result: dict[str, Any], records: list[dict], out: Path, title: str) -> list[str]:
    import numpy as np

    plt = R.pyplot()
    files = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    confusion_heatmap(axes[0], result["confusion"], "judge", "confusion (all configurations)")
    ax = axes[1]
    per = result["per_configuration"]
    names = list(per)
    y = np.arange(len(names))
    ax.barh(y - 0.2, [per[c]["accuracy"] or 0 for c in names], 0.4, label="accuracy")
    ax.barh(y + 0.2, [per[c]["kappa"] or 0 for c in names], 0.4, label="Cohen's kappa")
    ax.set_yticks(y, names, fontsize=8)
    ax.set_xlim(min(0, min((per[c]["kappa"] or 0) for c in names)) if names else 0, 1)
    ax.axvline(0, color="grey", lw=0.5)
    ax.legend(fontsize=8)
    ax.set_title("agreement per labelled configuration")
    fig.suptitle(title)
    files.append(R.savefig(fig, out, "agreement.png"))

    fig, ax = plt.subplots(figsize=(7, 3.8))
    bins = np.arange(0.5, 11.5, 1)
    for label in J.LABELS:
        scores = [r["score"] for r in records if r["human"] == label and r["score"] is not None]
        if scores:
            ax.hist(scores, bins=bins, alpha=0.55, label=f"people: {label} (n={len(scores)})")
    ax.set_xticks(range(1, 11))
    ax.set_xlabel("judge score (1 wrong … 10 fully correct)")
    ax.set_ylabel("answers")
    ax.set_title("judge scores by the people's label")
    ax.legend(fontsize=8)
    files.append(R.savefig(fig, out, "scores_by_label.png"))
    return files


def split_rows(rows: list[dict], split: str, questions: Path) -> list[dict]:
    """The labelled rows whose question is in ``split`` (``all``: every row)."""
    if split == "all":
        return rows
    import json

    records = [json.loads(line) for line in questions.read_text(encoding="utf-8").splitlines()
               if line.strip()]
    wanted = split_ids(records)[split]
    return [r for r in rows if r["financebench_id"] in wanted]


def _with_ci(human: list[str], judged: list[str], clusters: list[str]) -> dict[str, Any]:
    out = J.agreement(human, judged)
    out["ci"] = stats.agreement_ci(human, judged, clusters, labels=J.LABELS)
    out["questions"] = len(set(clusters))
    return out


def _ci_text(ci: dict, pct: bool) -> str:
    if ci.get("estimate") is None:
        return "–"
    fmt = (lambda v: f"{100 * v:.1f}%") if pct else (lambda v: f"{v:.2f}")
    low = "–" if ci["low"] is None else fmt(ci["low"])
    high = "–" if ci["high"] is None else fmt(ci["high"])
    return f"{fmt(ci['estimate'])} [{low}, {high}]"


def scorer_section(rows: list[dict]) -> tuple[dict[str, Any], list[str]]:
    """The scorer alone: coverage, and agreement with CIs on the rows it decides."""
    verdicts = [scorer.score(r["gold_answer"], r["model_answer"], r["question"]) for r in rows]
    decided = [(r, v) for r, v in zip(rows, verdicts) if v is not None]
    res = _with_ci([r["label"] for r, _ in decided], [v.label for _, v in decided],
                   [r["financebench_id"] for r, _ in decided])
    by_kind: dict[str, list] = {}
    for r, v in decided:
        by_kind.setdefault(v.rule.split(":")[0], []).append((r["label"], v.label))
    res["coverage"] = len(decided) / len(rows) if rows else None
    res["by_rule"] = {k: {"n": len(p), "accuracy": stats.accuracy([h for h, _ in p],
                                                                  [j for _, j in p])}
                      for k, p in sorted(by_kind.items())}
    lines = [f"## The deterministic scorer (`benchmarks/scorer.py`, version {scorer.VERSION})",
             "",
             f"It decides {len(decided)} of {len(rows)} answers ({R.pct(res['coverage'])}); on "
             f"those, agreement with people {_ci_text(res['ci']['accuracy'], True)}, Cohen's "
             f"kappa {_ci_text(res['ci']['kappa'], False)} "
             f"({kappa_band(res['kappa'])}; 95% bootstrap intervals resampling the "
             f"{res['questions']} questions). Its rules were written on the `tune` questions' "
             "labelled answers only.", "",
             "| rule | answers | agreement |", "|---|---:|---:|"]
    lines += [f"| {k} | {v['n']} | {R.pct(v['accuracy'])} |" for k, v in res["by_rule"].items()]
    lines += ["", "Confusion (rows: people, columns: scorer):", "",
              "| people \\ scorer | " + " | ".join(J.LABELS) + " |", "|---|---:|---:|---:|"]
    for h in J.LABELS:
        lines.append(f"| {h} | " + " | ".join(str(res["confusion"].get(h, {}).get(j, 0))
                                              for j in J.LABELS) + " |")
    return res, lines + [""]


def scorer_plot(res: dict[str, Any], out: Path, title: str) -> str:
    """The scorer's confusion against people, and its agreement per rule."""
    plt = R.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    confusion_heatmap(axes[0], res["confusion"], "scorer",
                      f"confusion on the {res['n']} answers it decides")
    ax = axes[1]
    rules = list(res["by_rule"])
    ax.barh(range(len(rules)), [res["by_rule"][r]["accuracy"] or 0 for r in rules])
    ax.set_yticks(range(len(rules)), [f"{r} (n={res['by_rule'][r]['n']})" for r in rules])
    ax.set_xlim(0, 1)
    ax.set_xlabel("agreement with people")
    ci = res["ci"]["accuracy"]
    ax.axvspan(ci["low"] or 0, ci["high"] or 0, color="grey", alpha=0.2,
               label="all rules, 95% CI")
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title(f"decides {100 * (res['coverage'] or 0):.0f}% of the answers")
    fig.suptitle(title)
    return R.savefig(fig, out, "scorer.png")


def run(*, profiles: list[str], labelled: Path, configurations: list[str] | None,
        limit: int | None, out: Path, command: str, chunk: int = 8, rules: bool = True,
        progress: bool = True, split: str = "test", questions: Path | None = None,
        llm: bool = True, sample: int | None = None) -> dict[str, Any]:
    from finrag.models.profiles import load_config

    rows = split_rows(J.load_labelled(labelled), split,
                      questions or labelled.parent / "questions.dev.jsonl")
    available = len(rows)
    rows = select_rows(rows, configurations, limit, sample)
    if not rows:
        raise ValueError("no labelled answers selected")
    scorer_res, scorer_lines = scorer_section(rows)
    cache = R.JsonlCache(out / "verdicts.jsonl")
    results, records_all, configs = {}, [], {}
    for name in (profiles if llm else []):
        prof = load_config().active(name)
        engine = J.load_judge(name)
        jconf = J.judge_config(engine)
        jhash = R.config_hash(jconf)  # the LLM's verdicts are cached under it; the scorer's not
        configs[name] = {**jconf, "scorer": scorer.VERSION if rules else None,
                         "role": J.judge_role(prof), "hash": jhash}
        keys = [f"{jhash}:{row_key(r)}" for r in rows]
        run_ = J.judge_cached(engine, rows, keys, cache, chunk=chunk, progress=progress,
                              desc=f"judge ({name})", rules=rules)
        result = J.calibrate(engine, rows, run=run_)
        kept = [(r, res) for r, res in zip(rows, run_.results) if res.judgement is not None]
        result["ci"] = _with_ci([r["label"] for r, _ in kept],
                                [res.judgement.label for _, res in kept],
                                [r["financebench_id"] for r, _ in kept])["ci"]
        llm_rows = [(r, res) for r, res in kept if res.source == "llm"]
        result["llm_part"] = _with_ci([r["label"] for r, _ in llm_rows],
                                      [res.judgement.label for _, res in llm_rows],
                                      [r["financebench_id"] for r, _ in llm_rows])
        results[name] = result
        for row, res in zip(rows, run_.results):
            records_all.append({"profile": name, "financebench_id": row["financebench_id"],
                                "configuration": row["configuration"], "human": row["label"],
                                "judge": res.judgement.label if res.judgement else None,
                                "score": res.judgement.score if res.judgement else None,
                                "decided_by": res.source,
                                "reason": res.judgement.reason if res.judgement else res.error})
    chash = R.config_hash({"profiles": configs, "rows": [row_key(r) for r in rows],
                           "scorer": scorer.VERSION, "split": split})
    summary = {"command": command, "config_hash": chash, "labelled": R.shown_path(labelled),
               "split": split, "configurations": sorted({r["configuration"] for r in rows}),
               "rows": len(rows), "questions": len({r["financebench_id"] for r in rows}),
               "sample": None if sample is None else {"n": len(rows), "of": available,
                                                      "seed": SAMPLE_SEED},
               "scorer": scorer_res, "scorer_version": scorer.VERSION, "judges": configs,
               "results": results}
    R.write_json(out / "results.json", summary)
    R.write_json(out / "verdicts.json", records_all)
    lines = R.header("Scorer and judge calibration against FinanceBench's human labels",
                     command, chash)
    lines += [f"{len(rows)} human-labelled answers to the {summary['questions']} questions of "
              f"the `{split}` split ({', '.join(summary['configurations'])}) from "
              f"`{summary['labelled']}`"
              + (" — held out: no rule of the scorer and no prompt was written while reading "
                 "them." if split == "test" else ".")
              + (f" A fixed random sample of {len(rows)} of the split's {available} labelled "
                 f"answers (seed `{SAMPLE_SEED}`, `--sample`): every figure below is over the "
                 f"sample." if sample is not None else "")
              + " People's labels *Correct Answer / Incorrect Answer / Refusal* against ours. "
              "Raw verdicts: `verdicts.json`; figures: `results.json`.", ""]
    png = scorer_plot(scorer_res, out, f"deterministic scorer vs people, `{split}` questions")
    lines += scorer_lines + [f"![{png}]({png})", ""]
    for name, res in results.items():
        c = configs[name]
        jr = res["judge"]
        part = res["llm_part"]
        lines += [f"## Scorer + LLM judge `{c['model_id']}` (profile `{name}`, role "
                  f"{c['role']})", ""]
        lines += [f"- {s}" for s in trust_statement(res)]
        lines += ["", f"All answers: agreement {_ci_text(res['ci']['accuracy'], True)}, kappa "
                  f"{_ci_text(res['ci']['kappa'], False)}. The LLM's part alone (the "
                  f"{part['n']} answers the scorer leaves to it"
                  + (")" if rules else "; `--llm-only`: every answer)")
                  + f": agreement {_ci_text(part['ci']['accuracy'], True)}, kappa "
                  f"{_ci_text(part['ci']['kappa'], False)} ({kappa_band(part['kappa'])}).",
                  "", "| | n | accuracy | Cohen's kappa | agreement |", "|---|---:|---:|---:|---|",
                  f"| **all** | {res['n']} | {R.pct(res['accuracy'])} | "
                  f"{R.num(res['kappa'], '{:.3f}')} | {kappa_band(res['kappa'])} |"]
        for cfg, v in res["per_configuration"].items():
            lines.append(f"| {cfg} | {v['n']} | {R.pct(v['accuracy'])} | "
                         f"{R.num(v['kappa'], '{:.3f}')} | {kappa_band(v['kappa'])} |")
        lines += ["", "Confusion (rows: people, columns: scorer + judge):", "",
                  "| people \\ judge | " + " | ".join(J.LABELS) + " |", "|---|---:|---:|---:|"]
        for h in J.LABELS:
            lines.append(f"| {h} | " + " | ".join(str(res["confusion"].get(h, {}).get(j, 0))
                                                  for j in J.LABELS) + " |")
        lines += ["", "Mean score by the people's label: " + ", ".join(
            f"{k} {v:.2f}" for k, v in res["mean_score_by_label"].items()), "",
            f"Judge cost: {jr['usage'].get('calls', 0)} calls this run, "
            f"{jr['usage'].get('cached', 0)} verdicts from the cache; "
            f"{jr['failures']} answers without a valid verdict; {jr['note']}.", ""]
        mine = [r for r in records_all if r["profile"] == name]
        files = plots(res, mine, out, f"scorer + judge {c['model_id']} vs people ({split})")
        lines += [f"![{f}]({f})" for f in files] + [""]
    if not results:
        lines += ["No LLM judge was run (`--scorer-only`).", ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    return summary


def add_parser(sub) -> None:
    p = sub.add_parser("judge-calibration", help="agreement of each profile's judge with the "
                       "human labels of FinanceBench answers",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("--profiles", default="cpu", help="comma-separated profiles whose judge to "
                   "calibrate (default cpu)")
    p.add_argument("--labelled", type=Path, default=R.SHARED / "labelled_answers",
                   help="folder of labelled *.jsonl (default: the shared FinanceBench set)")
    p.add_argument("--configurations", default="", help="comma-separated "
                   "<model>_<eval_mode> names to score (default: all)")
    p.add_argument("--limit", type=int, default=None, help="at most N answers per configuration")
    p.add_argument("--sample", type=int, default=None, help="a fixed random sample of N of "
                   "the selected answers (seeded; a larger N adds answers to a smaller one's)")
    p.add_argument("--chunk", type=int, default=8, help="answers per judge call batch")
    p.add_argument("--split", choices=("test", "tune", "all"), default="test",
                   help="labelled answers of which questions (benchmarks/splits.py): test, the "
                   "held-out half (default); tune, the half the scorer was written on; all")
    p.add_argument("--questions", type=Path, default=R.SHARED / "questions.dev.jsonl",
                   help="the question records the split is computed from")
    p.add_argument("--llm-only", action="store_true", help="no deterministic scorer: the LLM "
                   "judges every answer")
    p.add_argument("--scorer-only", action="store_true", help="the deterministic scorer alone; "
                   "no LLM judge is loaded")
    p.add_argument("--name", default=None, help="results folder name (default "
                   "judge_calibration_<profiles>)")
    p.add_argument("--out", type=Path, default=None, help="results folder (overrides --name)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=main)


def main(args) -> int:
    profiles = [p for p in args.profiles.split(",") if p]
    out = R.results_dir(args.name or f"judge_calibration_{'_'.join(profiles)}", args.out)
    configs = [c for c in args.configurations.split(",") if c] or None
    if not args.labelled.is_dir():
        raise FileNotFoundError(f"no labelled answers folder {args.labelled}")
    summary = run(profiles=profiles, labelled=args.labelled, configurations=configs,
                  limit=args.limit, out=out, command=R.command_line(args), chunk=args.chunk,
                  rules=not args.llm_only, progress=not args.quiet, split=args.split,
                  questions=args.questions, llm=not args.scorer_only, sample=args.sample)
    sc = summary["scorer"]
    print(f"scorer: decides {R.pct(sc['coverage'])} of {summary['rows']} answers; agreement "
          f"{_ci_text(sc['ci']['accuracy'], True)}, kappa {_ci_text(sc['ci']['kappa'], False)}")
    for name, res in summary["results"].items():
        print(f"{name}: judge {summary['judges'][name]['model_id']} on {res['n']} answers — "
              f"accuracy {R.pct(res['accuracy'])}, kappa {R.num(res['kappa'], '{:.3f}')} "
              f"({kappa_band(res['kappa'])})")
    print(f"report: {out / 'report.md'}")
    return 0
