"""``finrag bench facts-fb``: the facts route on FinanceBench's metric questions.

FinanceBench's filings are PDFs; ``finrag facts extract`` (or ingest) reads their primary
statements' tables into the facts store. This benchmark answers each ``metrics-generated``
question the way system ``hdrr`` does before any LLM call: companies from the deterministic
company pass (``routing.extract_mentions``, no router LLM), route and metric from
``facts.classify``, the answer from ``FactsAnswerer`` — and counts an answer as the facts
route's when the route is structured and the facts hold a value (otherwise ``hdrr`` would fall
back to the documents). Every answer is judged by the deterministic scorer
(``benchmarks.scorer``), as are the same questions' HDRR text answers read from a committed
quality report's per-question records (no generation runs here).

Splits (``benchmarks.splits``): the label phrases, the formula language and the ratios were
developed looking at ``tune`` questions only; ``test`` is reported as the held-out figure.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from finrag.benchmarks import report as R
from finrag.benchmarks.scorer import score
from finrag.benchmarks.splits import split_of

NAME = "facts_fb"
QUESTION_TYPE = "metrics-generated"
STRUCTURED = ("metric_lookup", "timeseries", "full_statement")
DEFAULT_HDRR = R.RESULTS / "quality_cpu" / "per_question.jsonl"


def facts_answers(index: Path, questions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per question: route, whether the facts route answered, its text, verdict."""
    from finrag.retrieval.store.catalog import Catalog
    from finrag.retrieval.routing.companies import CompanyTable
    from finrag.retrieval.facts.answer import FactsAnswerer
    from finrag.retrieval.facts.classify import classify
    from finrag.retrieval.facts.concepts import default_concepts
    from finrag.retrieval.facts.store import FactStore
    from finrag.retrieval.routing.mentions import CompanyDictionary, extract_mentions

    catalog = Catalog(index / "catalog.sqlite", readonly=True)
    try:
        store = FactStore(catalog.db, readonly=True)
        if not store.available:
            raise SystemExit(f"error: {index}: the index holds no facts table; run "
                             f"`finrag facts extract --index {index}` first")
        concepts = default_concepts()
        answerer = FactsAnswerer(store, concepts)
        dictionary = CompanyDictionary(CompanyTable.load(), catalog.documents())
        out = []
        for q in questions:
            t0 = time.perf_counter()
            query = classify(q["question"], concepts)
            keys = [m.key for m in extract_mentions(q["question"], dictionary).companies]
            companies = [c for c in (store.company(k) for k in keys) if c is not None]
            text, values, missing = "", [], []
            if query.route in STRUCTURED and companies:
                result = answerer.answer(query, companies)
                text, values, missing = result.text, result.values, result.missing
            answered = bool(values)
            verdict = score(str(q["answer"]), text, q["question"]) if answered else None
            out.append({
                "id": q["financebench_id"], "doc_name": q.get("doc_name"),
                "pdf_present": bool(q.get("pdf_present", True)), "route": query.route,
                "metrics": [m.key for m in query.metrics], "companies": keys,
                "answered": answered, "gold": q["answer"], "answer": text,
                "label": verdict.label if verdict else None,
                "rule": verdict.rule if verdict else None, "missing": missing,
                "cited": sorted({f"{v.doc_id} p.{v.page}" for v in values if v.doc_id}),
                "ms": round((time.perf_counter() - t0) * 1000, 2)})
        return out
    finally:
        catalog.close()


def hdrr_labels(path: Path) -> dict[str, dict[str, Any]]:
    """question id → the HDRR record (answer, label) of a quality report's per-question file."""
    return {r["id"]: r for r in R.read_jsonl(path) if r.get("system") == "hdrr"}


def summarise(rows: list[dict[str, Any]], hdrr: dict[str, dict[str, Any]]) -> dict[str, Any]:
    def block(sub: list[dict[str, Any]]) -> dict[str, Any]:
        answered = [r for r in sub if r["answered"]]
        labels = Counter(r["label"] or "undecided" for r in answered)
        with_hdrr = [r for r in sub if r["id"] in hdrr]
        h_labels = Counter(hdrr[r["id"]].get("label") or "unlabelled" for r in with_hdrr)
        combined = Counter(  # the facts answer where there is one, else HDRR's text answer
            (r["label"] or "undecided") if r["answered"] else
            (hdrr[r["id"]].get("label") or "unlabelled") for r in with_hdrr)
        return {
            "questions": len(sub), "answered": len(answered),
            "correct": labels["correct"], "incorrect": labels["incorrect"],
            "refusal": labels["refusal"], "undecided": labels["undecided"],
            "accuracy_of_answered": labels["correct"] / len(answered) if answered else None,
            "hdrr_questions": len(with_hdrr), "hdrr_correct": h_labels["correct"],
            "hdrr_incorrect": h_labels["incorrect"], "hdrr_refusal": h_labels["refusal"],
            "hdrr_unlabelled": h_labels["unlabelled"],
            "hdrr_accuracy": h_labels["correct"] / len(with_hdrr) if with_hdrr else None,
            "facts_then_hdrr_correct": combined["correct"],
            "routes": dict(Counter(r["route"] for r in sub)),
        }
    return {"all": block(rows), "pdf_indexed": block([r for r in rows if r["pdf_present"]])}


def write_report(out: Path, command: str, chash: str, per_split: dict[str, Any],
                 rows: list[dict[str, Any]], hdrr_path: Path, index: Path,
                 seen: str | None = None, others: list[dict[str, Any]] = (),
                 n_others: int = 0) -> None:
    lines = R.header("Facts route on FinanceBench metric questions (PDF statement tables)",
                     command, chash)
    lines += [
        f"Questions: the `{QUESTION_TYPE}` questions of the FinanceBench dev set, split by "
        "`benchmarks/splits.py`. The statement-table reader, its label phrases, the formula "
        "language and the ratio table were developed on the **tune** split only; **test** is "
        "the held-out figure (nothing was tuned on it). Index `" + R.shown_path(index) + "`. "
        "Answers are judged by the deterministic scorer (`benchmarks/scorer.py`); an answer it "
        "cannot decide is counted as undecided, never as correct. HDRR's text answers of the "
        "same questions come from `" + R.shown_path(hdrr_path) + "` (profile `cpu`, "
        "generated earlier; only the test split was run there).", "",
        "**Answered** = the route is structured (metric lookup / time series / statement) and "
        "the facts hold every value a formula needs; otherwise `hdrr` falls back to the "
        "documents, as it would. **Wrong** = answered and the scorer marks it incorrect — "
        "a wrong structured answer is worse than a refusal.", ""]
    if seen:
        lines += [f"**The test split is no longer held out in this run**: its failures in the "
                  f"earlier run `{seen}` were read and fixed (generic fixes, see the commit "
                  f"log); the held-out test figures are those of `{seen}`.", ""]
    for split in ("test", "tune"):
        s = per_split[split]
        tag = ("held out: nothing was tuned on it" if split == "test" and not seen
               else f"seen: its failures in run `{seen}` were inspected" if split == "test"
               else "the split the reader was developed and tuned on")
        lines += [f"## Split `{split}` ({tag})", "",
                  "| questions | n | facts route answered | correct | wrong | undecided | "
                  "accuracy of its answers | HDRR text answers (n) | HDRR correct | "
                  "facts, else HDRR: correct |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for key, name in (("pdf_indexed", "filing indexed"), ("all", "all")):
            b = s[key]
            lines.append(
                f"| {name} | {b['questions']} | {b['answered']} | {b['correct']} | "
                f"{b['incorrect']} | {b['undecided']} | {R.pct(b['accuracy_of_answered'])} | "
                f"{b['hdrr_questions']} | {b['hdrr_correct']} | "
                f"{b['facts_then_hdrr_correct'] if b['hdrr_questions'] else '–'} |")
        lines.append("")
    lines += ["## Per question", "",
              "| split | id | filing | route | metric | facts answer | scorer | HDRR (scorer) |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        first = (r["answer"].split("\n")[0][:140].replace("|", "/") if r["answered"]
                 else ("— " + "; ".join(r["missing"])[:100].replace("|", "/")
                       if r["missing"] else "—"))
        lines.append(f"| {r['split']} | {r['id'][-5:]} | {r['doc_name']}"
                     f"{'' if r['pdf_present'] else ' (not indexed)'} | {r['route']} | "
                     f"{', '.join(r['metrics'])} | {first} | {r['label'] or '–'} | "
                     f"{r.get('hdrr_label') or '–'} |")
    lines += ["", "## The other FinanceBench questions the facts route now answers", "",
              "The same route runs on every question `hdrr` gets: these non-metric questions "
              "(domain-relevant, novel-generated) get a structured answer from the statement "
              "facts instead of a generated one. Their gold answers are mostly prose, so the "
              "scorer rarely decides; read them — an answer to a question that asked *why*, or "
              "*which line is largest*, is a regression even when its numbers are right.", "",
              f"{len(others)} of {n_others} other questions answered by the facts route.", "",
              "| split | id | type | route | question | facts answer (first line) | scorer |",
              "|---|---|---|---|---|---|---|"]
    for r in others:
        lines.append(f"| {r['split']} | {r['id'][-5:]} | {r['question_type']} | {r['route']} | "
                     f"{r['question'][:90].replace('|', '/')} | "
                     f"{r['answer'].split(chr(10))[0][:110].replace('|', '/')} | "
                     f"{r['label'] or '–'} |")
    lines += ["", "![facts route](facts_fb.png)", ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")


def plot(out: Path, per_split: dict[str, Any]) -> str:
    plt = R.pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.2))
    names, correct, wrong, other, hdrr = [], [], [], [], []
    for split in ("test", "tune"):
        b = per_split[split]["pdf_indexed"]
        names.append(f"{split}\n(filing indexed, n={b['questions']})")
        correct.append(b["correct"])
        wrong.append(b["incorrect"])
        other.append(b["questions"] - b["correct"] - b["incorrect"])
        hdrr.append(b["hdrr_correct"])
    x = range(len(names))
    ax.barh([i + 0.2 for i in x], correct, 0.35, color="#2a9d8f", label="facts route: correct")
    ax.barh([i + 0.2 for i in x], wrong, 0.35, left=correct, color="#e76f51",
            label="facts route: wrong")
    ax.barh([i + 0.2 for i in x], other, 0.35, left=[c + w for c, w in zip(correct, wrong)],
            color="#dddddd", label="not answered / undecided")
    ax.barh([i - 0.2 for i in x], hdrr, 0.35, color="#264653", label="HDRR text: correct")
    ax.set_yticks(list(x), names)
    ax.set_xlabel("questions")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("FinanceBench metric questions: facts route vs HDRR text answers", fontsize=9)
    return R.savefig(fig, out, "facts_fb.png")


def cmd(args) -> int:
    records = [json.loads(line) for line in Path(args.questions).read_text().splitlines()
               if line.strip()]
    splits = split_of(records)
    questions = [q for q in records if q.get("question_type") == QUESTION_TYPE]
    rows = facts_answers(Path(args.index), questions)
    rest = [q for q in records if q.get("question_type") != QUESTION_TYPE]
    others = [r for r in facts_answers(Path(args.index), rest) if r["answered"]]
    by_id = {q["financebench_id"]: q for q in rest}
    for r in others:
        r["split"] = splits[r["id"]]
        r["question_type"] = by_id[r["id"]].get("question_type")
        r["question"] = by_id[r["id"]]["question"]
    hdrr = hdrr_labels(Path(args.hdrr_from))
    for r in rows:
        r["split"] = splits[r["id"]]
        r["hdrr_label"] = hdrr.get(r["id"], {}).get("label")
    per_split = {name: summarise([r for r in rows if r["split"] == name], hdrr)
                 for name in ("test", "tune")}
    out = R.results_dir(args.name, args.out)
    chash = R.config_hash({"code": R.code_version("retrieval", "benchmarks"),
                           "questions": R.shown_path(args.questions),
                           "hdrr": R.shown_path(args.hdrr_from)})
    command = R.command_line(args)
    R.write_json(out / "results.json", {"command": command, "config_hash": chash,
                                        "test_held_out": not args.test_seen_in,
                                        "test_seen_in": args.test_seen_in, "splits": per_split,
                                        "other_questions": len(rest),
                                        "other_answered_by_facts": [
                                            {k: r[k] for k in ("id", "split", "question_type",
                                                               "route", "label")}
                                            for r in others]})
    with (out / "per_question.jsonl").open("w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, default=str) + "\n")
    plot(out, per_split)
    write_report(out, command, chash, per_split, rows, Path(args.hdrr_from), Path(args.index),
                 args.test_seen_in, others, len(rest))
    if not args.quiet:
        for name in ("test", "tune"):
            b = per_split[name]["pdf_indexed"]
            print(f"{name}: {b['answered']}/{b['questions']} answered by the facts route "
                  f"(filing indexed), {b['correct']} correct, {b['incorrect']} wrong; "
                  f"HDRR text correct {b['hdrr_correct']}/{b['hdrr_questions']}")
        print(f"report: {R.shown_path(out / 'report.md')}")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("facts-fb", help="facts route on FinanceBench metric questions",
                       description=__doc__.split("\n\n")[1])
    p.add_argument("--index", type=Path, required=True, help="index with statement facts")
    p.add_argument("--questions", type=Path, default=R.SHARED / "questions.dev.jsonl",
                   help="FinanceBench questions JSONL (default: the shared dev set)")
    p.add_argument("--hdrr-from", type=Path, default=DEFAULT_HDRR,
                   help="a quality report's per_question.jsonl with HDRR answers")
    p.add_argument("--name", default=NAME, help="results folder name (%(default)s)")
    p.add_argument("--out", type=Path, help="results folder (benchmarks/results/<name>)")
    p.add_argument("--test-seen-in", metavar="RUN",
                   help="an earlier run whose test-split failures were inspected before this "
                        "one: the report then says its test figures are not held out")
    p.add_argument("-q", "--quiet", action="store_true")
    p.set_defaults(func=cmd)
