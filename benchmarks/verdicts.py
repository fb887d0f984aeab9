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
    from finrag.retrieval.systems.verdict import (log_odds, content_free_offset, verdict_in,
                                                  verdict_messages)

    engine = engine or pipe.engine("generator")
    offset = content_free_offset(engine)
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
            raw, bare = log_odds(engine, [verdict_messages(q["question"], blocks),
                                           verdict_messages(q["question"], [])])
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


def write_report(rows: list[dict[str, Any]], out: Path, command: str) -> None:
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
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    R.write_json(out / "results.json", rows)


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
    try:
        rows = measure(pipe, questions, engine)
    finally:
        pipe.close()
    name = f"verdicts_{args.profile}" + (f"_{args.verdict_profile}" if args.verdict_profile else "")
    out = R.results_dir(name, args.out)
    write_report(rows, out, R.command_line(args))
    print(f"wrote {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
