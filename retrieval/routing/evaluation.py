"""How well routing does on labelled questions: exact, covering and precision against the gold
filings, wrong-company routes, and the report lines a person reads
(``finrag eval routing``, ``benchmarks/router_eval.py``)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Callable, Iterable

from rapidfuzz import fuzz

from finrag.retrieval.routing.companies import Company, normalize_name
from finrag.retrieval.routing.router import Router


def names_company(question: str, company: Company) -> bool:
    """Whether a question writes a company's name, an alias or a ticker (a misspelling within
    one edit or so counts; a description such as "the Minnesota conglomerate" does not)."""
    words = " " + " ".join(normalize_name(re.sub(r"['’]s?\b", "", question)).split()) + " "
    for name in company.names:
        normal = normalize_name(name)
        if not normal:
            continue
        if f" {normal} " in words or (len(normal) >= 5 and normal.replace(" ", "") in words.replace(" ", "")):
            return True
        if len(normal) >= 6 and fuzz.partial_ratio(normal, words) >= 90:
            return True
    return any(re.search(rf"(?<!\w){re.escape(t)}(?!\w)", question) for t in company.tickers)


def evaluate_routing(router: Router, questions: Iterable[dict[str, Any]],
                     gold_company: Callable[[str], "str | None"] | None = None) -> dict[str, Any]:
    """Route labelled questions and score the routed sets against the gold filings.

    A question names its gold filing(s) as ``doc_name`` (FinanceBench), ``doc_id`` or
    ``doc_names`` (several, or none where nothing should be routed); ``pdf_present`` says whether
    they are indexed (default: whether the catalog has them) and ``names_company`` whether the
    question names the company (default: whether its text writes a name, alias or ticker of the
    gold company, ``names_company``). ``gold_company`` maps a doc id that is not indexed to its
    company key (a file-name reader); without it only indexed filings are known.

    Over the indexed questions that name a company: **exact** (the routed set is the gold set),
    **covering** (every gold filing is routed) and **precision** (the share of routed filings
    that are gold, over all filings routed). Questions that name no company and questions whose
    filing is not indexed are counted apart; a routed filing of a company the question is not
    about is a **wrong-company** route, counted over every question.
    """
    dictionary = router.resolver.dictionary
    catalog = router.resolver.doc_ids

    def company_of(doc_id: str) -> str | None:
        if doc_id in dictionary.doc_company:
            return dictionary.doc_company[doc_id]
        return gold_company(doc_id) if gold_company else None

    rows, statuses = [], Counter()
    for q in questions:
        gold = q.get("doc_names")
        gold = list(gold) if gold is not None else [q.get("doc_name") or q.get("doc_id")]
        gold = [g for g in gold if g]
        companies = {c for c in map(company_of, gold) if c}
        present = bool(q.get("pdf_present", bool(gold) and set(gold) <= catalog)) and bool(gold)
        named = q.get("names_company")
        if named is None:
            named = any(names_company(q["question"], dictionary.company(c)) for c in companies
                        if dictionary.table.by_key(c))
        routing = router.route(q["question"])
        statuses[routing.status] += 1
        routed = routing.doc_ids if routing.routed else []
        wrong = sorted(d for d in routed if companies and company_of(d) not in companies)
        rows.append({
            "id": q.get("financebench_id") or q.get("id"), "question": q["question"],
            "doc_name": gold[0] if len(gold) == 1 else None, "gold": gold, "pdf_present": present,
            "names_company": bool(named), "status": routing.status, "doc_ids": routed,
            "detail": routing.detail, "llm_called": routing.llm_called,
            "exact": bool(routed) and set(routed) == set(gold),
            "covering": bool(routed) and bool(gold) and set(gold) <= set(routed),
            "gold_routed": len(set(routed) & set(gold)), "wrong_company": wrong,
        })
    return {**routing_summary(rows), "router_stats": dict(router.stats), "rows": rows}


def routing_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of ``evaluate_routing`` over its rows (or a subset of them: one split)."""
    present = [r for r in rows if r["pdf_present"]]
    named = [r for r in present if r["names_company"]]
    apart = [r for r in present if not r["names_company"]]
    absent = [r for r in rows if not r["pdf_present"]]
    routed = sum(len(r["doc_ids"]) for r in named)
    exact = sum(r["exact"] for r in present)

    def share(a: int, b: int) -> float | None:
        return a / b if b else None

    return {
        "questions": len(rows), "present": len(present), "exact": exact,
        "exact_rate": share(exact, len(present)),
        "named": {
            "questions": len(named), "exact": sum(r["exact"] for r in named),
            "covering": sum(r["covering"] for r in named), "routed_filings": routed,
            "gold_routed": sum(r["gold_routed"] for r in named),
            "exact_rate": share(sum(r["exact"] for r in named), len(named)),
            "covering_rate": share(sum(r["covering"] for r in named), len(named)),
            "precision": share(sum(r["gold_routed"] for r in named), routed),
        },
        "no_company": {"questions": len(apart), "routed": sum(bool(r["doc_ids"]) for r in apart),
                       "exact": sum(r["exact"] for r in apart),
                       "statuses": dict(Counter(r["status"] for r in apart))},
        "not_indexed": {"questions": len(absent),
                        "told_not_in_corpus": sum(r["status"] == "fallback_not_in_corpus" for r in absent),
                        "routed": sum(bool(r["doc_ids"]) for r in absent),
                        "statuses": dict(Counter(r["status"] for r in absent))},
        "wrong_company": sum(bool(r["wrong_company"]) for r in rows),
        "statuses": dict(Counter(r["status"] for r in rows)),
        "misses": [r for r in rows if r["wrong_company"]
                   or (r["pdf_present"] and r["names_company"] and not r["exact"])],
    }


def format_routing_report(report: dict[str, Any]) -> str:
    """``evaluate_routing``'s figures as lines a person reads, with their denominators."""
    def pct(a, b):
        return f"{a}/{b} ({100 * a / b:.1f}%)" if b else f"{a}/0"

    n, nc, ni = report["named"], report["no_company"], report["not_indexed"]
    lines = [
        f"{report['questions']} questions; {report['present']} with their filing(s) indexed, "
        f"{n['questions']} of which name a company",
        f"  exact     {pct(n['exact'], n['questions'])}  routed set = gold",
        f"  covering  {pct(n['covering'], n['questions'])}  gold among the routed",
        f"  precision {pct(n['gold_routed'], n['routed_filings'])}  routed filings that are gold",
        f"  exact over every indexed question: {pct(report['exact'], report['present'])}; "
        f"over all questions: {pct(report['exact'], report['questions'])}",
        f"no company named (counted apart): {nc['questions']}, routed {nc['routed']}, "
        f"statuses {nc['statuses']}",
        f"filing not indexed: {ni['questions']}, told not in corpus {ni['told_not_in_corpus']}, "
        f"routed to another filing {ni['routed']}",
        f"wrong-company routes: {report['wrong_company']}",
        f"statuses {report['statuses']}; router {report.get('router_stats', {})}",
    ]
    return "\n".join(lines)
