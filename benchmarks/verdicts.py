"""Yes/no verdicts by gold class: where each candidate rule says Yes or No on the FinanceBench
dev questions whose reference is a yes/no (#59).

    python -m finrag.benchmarks.verdicts --index var/fb-index --profile cpu --split tune

Each question goes through HDRR's recipe to its context (routing, the facts route, scoped
search, reranking), as an answer would; nothing is generated. A question the facts decide
(a trend or a judgement of a computed figure: its answer opens with Yes or No) is counted as
the facts' verdict. For the others the generator reads the answer prompt once and its
next-token log-odds of Yes over No are read (``retrieval.systems.verdict``); the candidates
compared on the same passages are:

- ``prior``: the sign of the raw log-odds, what greedy generation opens with;
- ``calibrated``: the raw log-odds less the content-free offset (contextual calibration), the
  rule the pipeline uses;
- ``no-evidence``: the raw log-odds less the same question's with no passage (how far the
  passages move the model toward Yes).

Choose on ``tune``; ``test`` figures are labelled seen (that half has been read).
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

from finrag.benchmarks import report as R
from finrag.benchmarks.scorer import kind
from finrag.benchmarks.splits import split_of

RULES = ("prior", "calibrated", "no-evidence")


def yes_no_questions(path: Path) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    split = split_of(records)
    out = []
    for q in records:
        if kind(q["answer"], q["question"]) == "yes_no":
            gold = "yes" if q["answer"].strip().lower().startswith("yes") else "no"
            out.append({"id": q["financebench_id"], "question": q["question"], "gold": gold,
                        "doc_name": q["doc_name"], "split": split[q["financebench_id"]]})
    return out


def measure(pipe, questions: list[dict[str, Any]], engine=None) -> list[dict[str, Any]]:
    """``engine``: the LLM whose log-odds are read (default: the profile's generator)."""
    from finrag.retrieval.systems.recipes import RECIPES
    from finrag.retrieval.systems.run import Run
    from finrag.retrieval.systems.context import answer_messages
    from finrag.retrieval.systems.found import found_blocks
    from finrag.retrieval.systems.generation import said_without_generator
    from finrag.retrieval.systems.verdict import calibrate, log_odds, verdict_in

    engine = engine or pipe.engine("generator")
    cal = calibrate(engine)
    offset = cal.offset
    rows = []
    components = pipe.components(pipe.view.fresh())
    for i, q in enumerate(questions, 1):
        run = Run(q["question"], "hdrr", pipe.profile.name)
        found = RECIPES["hdrr"](components, run)
        blocks = found_blocks(found)
        row = {**q, "offset": offset, "blocks": len(blocks),
               "routed": list(run.answer.routing.doc_ids) if run.answer.routing else []}
        facts = verdict_in(said_without_generator(found))
        if facts:
            row["facts"] = facts
        if blocks:
            t0 = time.perf_counter()
            raw, bare = log_odds(engine, [answer_messages(q["question"], blocks),
                                           answer_messages(q["question"], [])], ids=cal.ids)
            row.update(raw=raw, bare=bare, seconds=round(time.perf_counter() - t0, 2))
        rows.append(row)
        print(f"[{i}/{len(questions)}] {q['split']} gold {q['gold']}: "
              f"facts {row.get('facts', '-')}, raw {row.get('raw', float('nan')):+.2f}",
              flush=True)
    return rows


def said(row: dict[str, Any], rule: str) -> str | None:
    """What ``rule`` answers for ``row``: the facts' verdict where they gave one."""
    if "facts" in row:
        return row["facts"]
    if "raw" not in row:
        return None  # no passage: the answer says what was looked for
    margin = {"prior": row["raw"], "calibrated": row["raw"] - row["offset"],
              "no-evidence": row["raw"] - row["bare"]}[rule]
    return "yes" if margin > 0 else "no"


def by_class(rows: list[dict[str, Any]], rule: str) -> dict[str, dict[str, int]]:
    out = {g: {"n": 0, "yes": 0, "no": 0, "neither": 0} for g in ("yes", "no")}
    for row in rows:
        cell = out[row["gold"]]
        cell["n"] += 1
        cell[said(row, rule) or "neither"] += 1
    return out


def write_report(rows: list[dict[str, Any]], out: Path, command: str,
                 timed: list[dict[str, Any]] | None = None, verdicts_from: str = "") -> None:
    """``verdicts_from``: the command of the run whose verdicts ``rows`` are, when the timed
    answers come from a later run (``--reuse-verdicts``)."""
    plt = R.pyplot()
    lines = R.header("Yes/no verdicts by gold class", command,
                     R.config_hash({"rows": [r["id"] for r in rows]}))
    if verdicts_from:
        lines += [f"The verdicts below are those of `{verdicts_from}`; this command timed the "
                  f"answers.", ""]
    lines += [f"{len(rows)} dev questions whose reference is a yes/no; the generator's "
              f"content-free log-odds of Yes over No: {rows[0]['offset']:+.2f}." if rows else "",
              "", "| split | rule | gold yes: says yes / no / neither | gold no: says yes / no / "
              "neither | right on gold yes | right on gold no |", "|---|---|---|---|---:|---:|"]
    for split in ("tune", "test"):
        part = [r for r in rows if r["split"] == split]
        label = "tune" if split == "tune" else "test (seen)"
        for rule in RULES:
            c = by_class(part, rule)
            y, n = c["yes"], c["no"]
            lines.append(f"| {label} | {rule} | {y['yes']} / {y['no']} / {y['neither']} | "
                         f"{n['yes']} / {n['no']} / {n['neither']} | "
                         f"{R.pct(y['yes'] / y['n'] if y['n'] else None)} | "
                         f"{R.pct(n['no'] / n['n'] if n['n'] else None)} |")
    lines += ["", "Per question (facts: the facts route's verdict; raw: log-odds of Yes with "
              "the passages; bare: the same with no passage):", "",
              "| split | gold | routed | facts | raw | calibrated | bare | s |",
              "|---|---|---|---|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['split']} | {r['gold']} | {', '.join(r['routed'][:2])} | "
                     f"{r.get('facts', '')} | {R.num(r.get('raw'), '{:+.2f}')} | "
                     f"{R.num(r['raw'] - r['offset'] if 'raw' in r else None, '{:+.2f}')} | "
                     f"{R.num(r.get('bare'), '{:+.2f}')} | {R.num(r.get('seconds'), '{:.1f}')} |")
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for k, gold in enumerate(("yes", "no")):
        pts = [(r["raw"], r["raw"] - r["offset"]) for r in rows
               if r["gold"] == gold and "raw" in r and "facts" not in r]
        ax.scatter([p[0] for p in pts], [k + 0.1] * len(pts), marker="o", label="raw" if k == 0 else None, color="grey")
        ax.scatter([p[1] for p in pts], [k - 0.1] * len(pts), marker="x", label="calibrated" if k == 0 else None, color="C0")
    ax.axvline(0, color="k", lw=0.8)
    ax.set_yticks([0, 1], ["gold yes", "gold no"])
    ax.set_xlabel("log-odds of Yes over No (generated questions)")
    ax.legend(loc="best", fontsize=8)
    lines += ["", f"![margins]({R.savefig(fig, out, 'margins.png')})", ""]
    if timed:
        lines += latency_lines(timed)
        fig, ax = plt.subplots(figsize=(6, 3.2))
        for on, label in ((False, "verdict off"), (True, "verdict on")):
            xs = sorted(r["total_ms"] / 1000 for r in verdict_rows(timed)
                        if r["verdict_on"] == on)
            ax.plot(xs, [(i + 1) / len(xs) for i in range(len(xs))], label=label)
        ax.set_xlabel("answer latency, s (questions with a verdict step)")
        ax.set_ylabel("share of answers")
        ax.legend(loc="lower right", fontsize=8)
        lines += [f"![latency]({R.savefig(fig, out, 'latency_cdf.png')})", ""]
        R.write_json(out / "latency.json", timed)
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    R.write_json(out / "results.json", rows)


def latency(pipe, questions: list[dict[str, Any]], repeats: int) -> list[dict[str, Any]]:
    """Each question answered by HDRR (generated) with the verdict step on and off, the same
    questions for both: every question once a side per repeat, one side's pass over all of
    them then the other's, the first side alternating between repeats (consecutive answers are
    other questions, so neither side reads the prompt the other just read). Routes are worked
    out before the timed answers, so both sides reuse them."""
    for q in questions:
        pipe.answer(q["question"], "hdrr", generate=False)
    base = pipe.settings
    rows = []
    for r in range(repeats):
        for on in ((True, False) if r % 2 == 0 else (False, True)):
            pipe.settings = base.model_copy(update={"yes_no_verdicts": on})
            for q in questions:
                a = pipe.answer(q["question"], "hdrr")
                rows.append({"id": q["id"], "split": q["split"], "repeat": r, "verdict_on": on,
                             "total_ms": a.timings_ms["total"],
                             "verdict_ms": a.timings_ms.get("verdict", 0.0),
                             "generated": any(c.role == "generator" for c in a.calls),
                             "answer": a.answer[:160]})
                print(f"repeat {r} verdict {'on ' if on else 'off'} {q['id']}: "
                      f"{a.timings_ms['total'] / 1000:.1f} s", flush=True)
    pipe.settings = base
    return rows


def verdict_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The timed answers of the questions the verdict step ran on (on the "on" side), both
    sides: a question the facts judge has no verdict step on either side, so it would only
    dilute the comparison."""
    asked = {r["id"] for r in rows if r["verdict_on"] and r["verdict_ms"] > 0}
    return [r for r in rows if r["generated"] and r["id"] in asked]


def latency_lines(rows: list[dict[str, Any]]) -> list[str]:
    import statistics

    lines = ["## What the verdict step costs", "",
             "HDRR answers generated on this profile, the same questions with the verdict step "
             "on and off in one run. Goal: the step adds at most 30% to the p50.", "",
             "| questions | side | answers | p50 s | p90 s |", "|---|---|---:|---:|---:|"]
    ratio = None
    for label, part in (("with a verdict step", verdict_rows(rows)),
                        ("every generated answer", [r for r in rows if r["generated"]])):
        on = [r["total_ms"] / 1000 for r in part if r["verdict_on"]]
        off = [r["total_ms"] / 1000 for r in part if not r["verdict_on"]]
        if not on or not off:
            lines.append(f"| {label} | – | 0 | – | – |")
            continue
        step = [r["verdict_ms"] / 1000 for r in part if r["verdict_on"]]
        lines += [f"| {label} | verdict off | {len(off)} | {statistics.median(off):.2f} | "
                  f"{_p90(off):.2f} |",
                  f"| {label} | verdict on | {len(on)} | {statistics.median(on):.2f} | "
                  f"{_p90(on):.2f} |",
                  f"| {label} | the verdict step alone | {len(step)} | "
                  f"{statistics.median(step):.2f} | {_p90(step):.2f} |"]
        ratio = ratio or statistics.median(on) / statistics.median(off)
    lines += ["", "Questions the facts judge (a trend, a rule of thumb) generate their explanation "
              "with no verdict step on either side; the first rows leave them out."]
    if ratio is not None:
        lines += ["", f"p50 on / off, questions with a verdict step: **{ratio:.3f}** "
                  f"(goal ≤ 1.30).", ""]
    return lines


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.verdicts",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--profile", default="cpu")
    p.add_argument("--questions", type=Path, default=R.SHARED / "questions.dev.jsonl")
    p.add_argument("--split", choices=("tune", "test", "all"), default="all")
    p.add_argument("--verdict-profile", default=None,
                   help="read the log-odds from this profile's generator instead (the passages "
                        "still come from --profile)")
    p.add_argument("--latency", type=int, default=0, metavar="REPEATS",
                   help="also answer every question, generated, with the verdict step on and "
                        "off, REPEATS times a side, and report the p50 of both")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--reuse-verdicts", action="store_true",
                   help="take the verdicts from the results folder's results.json (a run of "
                        "the same index and profile) instead of reading them again; with "
                        "--latency only the questions whose verdict the passages gave are timed")
    p.add_argument("--report-only", action="store_true",
                   help="redraw the report from the results folder's results.json and "
                        "latency.json (nothing is run; the command line shown is the run's)")
    args = p.parse_args(argv)
    args.prog, args.argv = "python -m finrag.benchmarks.verdicts", argv
    name = f"verdicts_{args.profile}" + (f"_{args.verdict_profile}" if args.verdict_profile else "")
    if args.report_only:
        out = R.results_dir(name, args.out)
        timed_file = out / "latency.json"
        commands = re.findall(r"`([^`]*finrag\.benchmarks\.verdicts[^`]*)`",
                              (out / "report.md").read_text())
        write_report(json.loads((out / "results.json").read_text()), out, commands[0],
                     json.loads(timed_file.read_text()) if timed_file.is_file() else None,
                     commands[1] if len(commands) > 1 else "")
        print(f"wrote {out / 'report.md'}")
        return 0
    from finrag.retrieval.systems.pipelines import Pipeline

    questions = [q for q in yes_no_questions(args.questions)
                 if args.split == "all" or q["split"] == args.split]
    pipe = Pipeline.load(args.index, profile=args.profile)
    engine = None
    if args.verdict_profile:
        from finrag.models.profiles import load_config, load_llm

        engine = load_llm(load_config().active(args.verdict_profile), "generator")
    timed: list[dict[str, Any]] = []
    out = R.results_dir(name, args.out)
    verdicts_from = ""
    try:
        if args.reuse_verdicts:
            verdicts_from = re.findall(r"`([^`]*finrag\.benchmarks\.verdicts[^`]*)`",
                                       (out / "report.md").read_text())[-1]
            wanted = {q["id"] for q in questions}
            rows = [r for r in json.loads((out / "results.json").read_text())
                    if r["id"] in wanted]
        else:
            rows = measure(pipe, questions, engine)
        if args.latency:
            # the step runs where the passages give the verdict: time those answers only
            read = {r["id"] for r in rows if "raw" in r and "facts" not in r}
            timed = latency(pipe, [q for q in questions if q["id"] in read], args.latency)
    finally:
        pipe.close()
    write_report(rows, out, R.command_line(args), timed, verdicts_from)
    print(f"wrote {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
