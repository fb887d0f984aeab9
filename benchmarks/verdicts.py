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
    from finrag.retrieval.systems.verdict import calibrate, log_odds, verdict_in

    engine = engine or pipe.engine("generator")
    cal = calibrate(engine)
    offset = cal.offset
    rows = []
    for i, q in enumerate(questions, 1):
        run = Run(q["question"], "hdrr", pipe.profile.name)
        blocks = RECIPES["hdrr"](pipe, run)
        row = {**q, "offset": offset, "blocks": len(blocks),
               "routed": list(run.answer.routing.doc_ids) if run.answer.routing else []}
        facts = verdict_in(run.answer.answer if run.done else run.preface)
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
                 timed: list[dict[str, Any]] | None = None) -> None:
    plt = R.pyplot()
    lines = R.header("Yes/no verdicts by gold class", command,
                     R.config_hash({"rows": [r["id"] for r in rows]}))
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
            xs = sorted(r["total_ms"] / 1000 for r in timed if r["generated"] and r["verdict_on"] == on)
            ax.plot(xs, [(i + 1) / len(xs) for i in range(len(xs))], label=label)
        ax.set_xlabel("answer latency, s")
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


def latency_lines(rows: list[dict[str, Any]]) -> list[str]:
    import statistics

    gen = [r for r in rows if r["generated"]]
    on = [r["total_ms"] / 1000 for r in gen if r["verdict_on"]]
    off = [r["total_ms"] / 1000 for r in gen if not r["verdict_on"]]
    step = [r["verdict_ms"] / 1000 for r in gen if r["verdict_on"]]
    if not on or not off:
        return ["No generated answer on one side: nothing to compare."]
    p50_on, p50_off = statistics.median(on), statistics.median(off)
    return [
        "## What the verdict step costs", "",
        f"HDRR answers generated on this profile, the same questions with the verdict step on "
        f"and off in one run ({len(on)} answers a side; answers from the facts alone, which no "
        f"verdict touches, left out). Goal: the step adds at most 30% to the p50.", "",
        "| | answers | p50 s | p90 s |", "|---|---:|---:|---:|",
        f"| verdict off | {len(off)} | {p50_off:.2f} | {_p90(off):.2f} |",
        f"| verdict on | {len(on)} | {p50_on:.2f} | {_p90(on):.2f} |",
        f"| the verdict step alone | {len(step)} | {statistics.median(step):.2f} | "
        f"{_p90(step):.2f} |", "",
        f"p50 on / off: **{p50_on / p50_off:.3f}** (goal ≤ 1.30).", ""]


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
    args = p.parse_args(argv)
    args.prog, args.argv = "python -m finrag.benchmarks.verdicts", argv
    from finrag.retrieval.systems.pipelines import Pipeline

    questions = [q for q in yes_no_questions(args.questions)
                 if args.split == "all" or q["split"] == args.split]
    pipe = Pipeline.load(args.index, profile=args.profile)
    engine = None
    if args.verdict_profile:
        from finrag.models.profiles import load_config, load_llm

        engine = load_llm(load_config().active(args.verdict_profile), "generator")
    timed: list[dict[str, Any]] = []
    try:
        rows = measure(pipe, questions, engine)
        if args.latency:
            timed = latency(pipe, questions, args.latency)
    finally:
        pipe.close()
    name = f"verdicts_{args.profile}" + (f"_{args.verdict_profile}" if args.verdict_profile else "")
    out = R.results_dir(name, args.out)
    write_report(rows, out, R.command_line(args), timed)
    print(f"wrote {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
