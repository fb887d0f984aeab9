"""Retrieval evaluation of the systems on questions with a gold filing and evidence pages
(FinanceBench's ``questions.dev.jsonl`` shape): routing accuracy, evidence hit@k, the share of
kept chunks from the wrong filing, context tokens, LLM calls and latency per stage.

Each (question, system) result is appended to a JSONL file as soon as it is computed, so an
interrupted run resumes where it stopped.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from finrag.retrieval.answer import FACTS_DOC_ID, Answer

ROUTED_SYSTEMS = ("hdrr", "sfr", "hdrr_text")


@dataclass
class Question:
    id: str
    question: str
    doc_name: str | None  # the gold filing's doc id
    pages: list[int]  # evidence pages, 1-based
    pdf_present: bool = True
    gold_answer: str | None = None  # the reference answer, for judging generated answers
    question_type: str | None = None  # FinanceBench's: metrics-generated, domain-relevant, …

    @classmethod
    def from_record(cls, rec: dict[str, Any], n: int) -> "Question":
        if not str(rec.get("question", "")).strip():
            raise ValueError(f"question {n}: no 'question' text")
        pages = sorted({int(e["evidence_page_num"]) + 1 for e in rec.get("evidence") or []
                        if e.get("evidence_page_num") is not None})
        # finrag's own question files give 1-based pages
        pages += [int(p) for p in rec.get("evidence_pages", []) if int(p) not in pages]
        gold = rec.get("answer", rec.get("gold_answer"))
        return cls(str(rec.get("financebench_id") or rec.get("id") or n), rec["question"],
                   rec.get("doc_name") or rec.get("doc_id"), pages,
                   bool(rec.get("pdf_present", True)), None if gold is None else str(gold),
                   rec.get("question_type"))


def load_questions(path: str | Path, limit: int | None = None) -> list[Question]:
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if line.strip():
                try:
                    out.append(Question.from_record(json.loads(line), n))
                except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
                    raise ValueError(f"{path}:{n}: not a question record ({e})") from None
            if limit and len(out) >= limit:
                break
    return out


def evidence_hit(answer: Answer | dict, gold_doc: str, pages: list[int], k: int) -> bool:
    """A chunk among the first ``k`` of the final ranking is from the gold filing and covers
    one of the evidence pages (1-based). Whole-document parts (SFR, no chunk id) all go to the
    generator, so for them k does not apply: any part covering the page is a hit."""
    retrieved = answer["retrieved"] if isinstance(answer, dict) else answer.retrieved
    ranked = retrieved.get("ranked") or []
    whole = bool(ranked) and all(r["chunk_id"] is None for r in ranked)
    for row in ranked if whole else ranked[:k]:
        if row["doc_id"] == gold_doc and any(row["first_page"] <= p <= row["last_page"]
                                             for p in pages):
            return True
    return False


def _relevant(row: dict, gold_doc: str, pages: list[int]) -> bool:
    return row["doc_id"] == gold_doc and any(row["first_page"] <= p <= row["last_page"]
                                             for p in pages)


def first_hit_rank(answer: Answer | dict, gold_doc: str, pages: list[int]) -> int | None:
    """The 1-based rank of the first evidence chunk in the final ranking (None: not there);
    1 / rank is the question's reciprocal rank (MRR's term)."""
    retrieved = answer["retrieved"] if isinstance(answer, dict) else answer.retrieved
    for rank, row in enumerate(retrieved.get("ranked") or [], start=1):
        if _relevant(row, gold_doc, pages):
            return rank
    return None


def ndcg_at_k(answer: Answer | dict, gold_doc: str, pages: list[int], k: int = 10,
              n_relevant: int | None = None) -> float:
    """Binary-gain NDCG@k of the final ranking: a chunk of the gold filing covering an
    evidence page has gain 1. The ideal ranking puts ``n_relevant`` such chunks first (all
    the filing holds; default: as many as the ranking holds, which flatters a short list)."""
    import math

    retrieved = answer["retrieved"] if isinstance(answer, dict) else answer.retrieved
    ranked = (retrieved.get("ranked") or [])[:k]
    gains = [_relevant(r, gold_doc, pages) for r in ranked]
    dcg = sum(1 / math.log2(i + 2) for i, g in enumerate(gains) if g)
    ideal_n = min(k, n_relevant if n_relevant is not None else sum(gains))
    idcg = sum(1 / math.log2(i + 2) for i in range(ideal_n))
    return dcg / idcg if idcg else 0.0


def wrong_document_share(answer: Answer | dict, gold_doc: str) -> float | None:
    """The share of the context's passages that come from another filing than the gold one. The
    block of reported figures a hybrid answer adds is not a passage of a filing: not counted."""
    retrieved = answer["retrieved"] if isinstance(answer, dict) else answer.retrieved
    rows = [r for r in retrieved.get("context") or [] if r["doc_id"] != FACTS_DOC_ID]
    if not rows:
        return None
    return sum(r["doc_id"] != gold_doc for r in rows) / len(rows)


def context_hit(answer: Answer | dict, gold_doc: str, pages: list[int]) -> bool:
    """The context the generator reads covers an evidence page of the gold filing."""
    retrieved = answer["retrieved"] if isinstance(answer, dict) else answer.retrieved
    return any(r["doc_id"] == gold_doc and any(r["first_page"] <= p <= r["last_page"]
                                               for p in pages)
               for r in retrieved.get("context") or [])


def score_row(q: Question, a: dict[str, Any]) -> dict[str, Any]:
    """The per-question figures of one system's answer record."""
    routing = a.get("routing") or {}
    on_disk = q.pdf_present and q.doc_name is not None
    row = {
        "id": q.id, "system": a["system"], "doc_name": q.doc_name, "pdf_present": q.pdf_present,
        "routing_status": routing.get("status"), "routed_doc_ids": routing.get("doc_ids"),
        "llm_routed": routing.get("llm_called"),
        "routed_exact": (set(routing.get("doc_ids") or []) == {q.doc_name}
                         and bool(routing.get("routed"))) if routing else None,
        # covering: the gold filing is among those routed; the count of routed filings makes
        # precision (gold routed / routed) summable over questions
        "routed_covering": (q.doc_name in (routing.get("doc_ids") or [])
                            and bool(routing.get("routed"))) if routing else None,
        "routed_filings": len(routing.get("doc_ids") or []) if routing.get("routed") else 0,
        "hit5": evidence_hit(a, q.doc_name, q.pages, 5) if on_disk and q.pages else None,
        "hit10": evidence_hit(a, q.doc_name, q.pages, 10) if on_disk and q.pages else None,
        "context_hit": context_hit(a, q.doc_name, q.pages) if on_disk and q.pages else None,
        "wrong_doc_share": wrong_document_share(a, q.doc_name) if on_disk else None,
        "context_tokens": a.get("context_tokens"),
        "llm_calls": a["usage"]["llm_calls"],
        "prompt_tokens": a["usage"]["prompt_tokens"],
        "completion_tokens": a["usage"]["completion_tokens"],
        "timings_ms": a.get("timings_ms", {}),
        "error": a.get("error"),
    }
    return row


def _mean(values: Iterable[float | None]) -> float | None:
    values = [float(v) for v in values if v is not None]
    return sum(values) / len(values) if values else None


def summarize(rows: list[dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for system in systems:
        mine = [r for r in rows if r["system"] == system and not r.get("error")]
        present = [r for r in mine if r["pdf_present"]]
        routed_ok = [r for r in present if r["routed_exact"]]
        stages: dict[str, list[float]] = {}
        for r in mine:
            for stage, ms in r["timings_ms"].items():
                stages.setdefault(stage, []).append(ms)
        out[system] = {
            "questions": len(mine),
            "on_disk": len(present),
            "errors": sum(1 for r in rows if r["system"] == system and r.get("error")),
            "routing_accuracy": (len(routed_ok) / len(present)
                                 if system in ROUTED_SYSTEMS and present else None),
            "routed_exact": len(routed_ok) if system in ROUTED_SYSTEMS else None,
            "routing_covering": (sum(bool(r.get("routed_covering")) for r in present) / len(present)
                                 if system in ROUTED_SYSTEMS and present else None),
            "routing_precision": (sum(bool(r.get("routed_covering")) for r in present)
                                  / sum(r.get("routed_filings", 0) for r in present)
                                  if system in ROUTED_SYSTEMS
                                  and sum(r.get("routed_filings", 0) for r in present) else None),
            "routing_accuracy_all": (len(routed_ok) / len(mine)
                                     if system in ROUTED_SYSTEMS and mine else None),
            "routing_statuses": _counts(r["routing_status"] for r in mine
                                        if r["routing_status"]),
            "llm_routed_share": (_mean(1.0 if r["llm_routed"] else 0.0 for r in mine)
                                 if system in ROUTED_SYSTEMS else None),
            "hit5": _mean(1.0 if r["hit5"] else 0.0 for r in present if r["hit5"] is not None),
            "hit10": _mean(1.0 if r["hit10"] else 0.0 for r in present if r["hit10"] is not None),
            "context_hit": _mean(1.0 if r["context_hit"] else 0.0 for r in present
                                 if r.get("context_hit") is not None),
            "wrong_doc_share": _mean(r["wrong_doc_share"] for r in present),
            "wrong_doc_share_when_routed": (_mean(r["wrong_doc_share"] for r in routed_ok)
                                            if system in ROUTED_SYSTEMS else None),
            "context_tokens": _mean(r["context_tokens"] for r in mine),
            "llm_calls": _mean(r["llm_calls"] for r in mine),
            "prompt_tokens": _mean(r["prompt_tokens"] for r in mine),
            "latency_ms": {stage: {"mean": statistics.fmean(v), "p50": statistics.median(v)}
                           for stage, v in stages.items()},
        }
    return out


def _counts(items: Iterable[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def evaluate_retrieval(pipeline, questions: list[Question], systems: list[str], *,
                       out: str | Path | None = None, progress: bool = True) -> dict[str, Any]:
    """Run every system on every question (no generation) and summarise. With ``out``, each
    answer's figures are appended to that JSONL and rows already there are not recomputed."""
    from tqdm import tqdm

    done: dict[tuple[str, str], dict] = {}
    if out and Path(out).is_file():
        for line in Path(out).read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a kill: recomputed below
                done[(row["id"], row["system"])] = row
    sink = open(out, "a", encoding="utf-8") if out else None
    rows = []
    try:
        todo = [(q, s) for q in questions for s in systems]
        bar = tqdm(todo, unit="answer", disable=not progress, file=sys.stderr, dynamic_ncols=True)
        for q, system in bar:
            bar.set_postfix_str(f"{system} {q.id}"[:40])
            if (q.id, system) in done:
                rows.append(done[(q.id, system)])
                continue
            try:
                answer = pipeline.answer(q.question, system, generate=False).to_dict()
                row = score_row(q, answer)
            except Exception as e:  # one failing question must not lose the run
                row = {"id": q.id, "system": system, "error": f"{type(e).__name__}: {e}",
                       "pdf_present": q.pdf_present, "timings_ms": {}}
            rows.append(row)
            if sink:
                sink.write(json.dumps(row) + "\n")
                sink.flush()
    finally:
        if sink:
            sink.close()
    return {"systems": summarize(rows, systems), "rows": rows}


def format_table(summary: dict[str, Any]) -> str:
    def pct(v):
        return "   -  " if v is None else f"{100 * v:5.1f}%"

    def num(v, fmt="{:7.0f}"):
        return "      -" if v is None else fmt.format(v)

    lines = [f"{'system':11} {'n':>3} {'route':>6} {'cover':>6} {'prec':>6} {'hit@5':>6} {'hit@10':>6} {'wrongdoc':>8} "
             f"{'ctx tok':>7} {'calls':>5} {'p50 ms':>8}"]
    for system, s in summary.items():
        total = s["latency_ms"].get("total", {}).get("p50")
        lines.append(f"{system:11} {s['questions']:>3} {pct(s['routing_accuracy'])} "
                     f"{pct(s.get('routing_covering'))} {pct(s.get('routing_precision'))} "
                     f"{pct(s['hit5'])} {pct(s['hit10'])}   {pct(s['wrong_doc_share'])} "
                     f"{num(s['context_tokens'])} {num(s['llm_calls'], '{:5.2f}')} "
                     f"{num(total, '{:8.0f}')}")
    lines.append("")
    lines.append("latency per stage, p50 ms:")
    for system, s in summary.items():
        parts = [f"{k}={v['p50']:.0f}" for k, v in s["latency_ms"].items() if k != "total"]
        lines.append(f"  {system:11} " + "  ".join(parts))
    return "\n".join(lines)
