"""The demo questions, answered from the facts the filings print."""

from __future__ import annotations

from typing import Any

from finrag.serving.cli.demo_corpus.figures import _usd

# (doc_id, metric, question, tags). Questions name companies as a user would, including the
# former name of the renamed company and the January fiscal year end of the retailer.
QUESTIONS = (
    ("LUMENFIELD_2023_10K", "revenue", "What was Lumenfield Software's total revenue in fiscal 2023?",
     ["look-alike"]),
    ("BRIGHTQUARRY_2023_10K", "revenue", "What was Brightquarry Software's total revenue in fiscal 2023?",
     ["look-alike"]),
    ("LUMENFIELD_2024_10K", "net income", "What was Lumenfield's net income in fiscal 2024?", ["look-alike"]),
    ("BRIGHTQUARRY_2024_10K", "net income", "What was Brightquarry's net income in fiscal 2024?", ["look-alike"]),
    ("LUMENFIELD_2022_10K", "diluted eps", "What were Lumenfield's diluted earnings per share for fiscal 2022?",
     ["look-alike"]),
    ("BRIGHTQUARRY_2022_10K", "diluted eps",
     "What were Brightquarry's diluted earnings per share for fiscal 2022?", ["look-alike"]),
    ("HARLOWFINCH_2024_10K", "revenue",
     "What was Harlow & Finch's total revenue for the fiscal year ended January 31, 2024?",
     ["non-december-fiscal-year"]),
    ("HARLOWFINCH_2023_10K", "operating income", "What was Harlow & Finch's operating income in fiscal 2023?",
     ["non-december-fiscal-year"]),
    ("QUILLON_2022_10K", "operating income",
     "What was Quillon Pump & Valve Company's operating income in fiscal 2022?", ["former-name"]),
    ("QUILLON_2024_10K", "gross profit", "What was Quillon Flow Technologies' gross profit in fiscal 2024?",
     ["renamed-company"]),
    ("LUMENFIELD_2024Q2_10Q", "revenue", "What was Lumenfield's revenue for the second quarter of fiscal 2024?",
     ["10-Q"]),
    ("HARLOWFINCH_2025Q1_10Q", "net income",
     "What was Harlow & Finch's net income for the quarter ended April 30, 2024 (the first quarter of "
     "fiscal 2025)?", ["10-Q", "non-december-fiscal-year"]),
)


def _answer(value: int | float, unit: str) -> str:
    return f"${value:.2f}" if unit == "USD" else f"{_usd(int(value))} million"


def build_questions(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for number, (doc_id, metric, question, tags) in enumerate(QUESTIONS, start=1):
        matching = [f for f in facts if f["doc_id"] == doc_id and f["metric"] == metric]
        narrative = next(f for f in matching if f["source"] == "text")
        out.append({
            "id": f"demo-{number:02d}", "question": question, "doc_id": doc_id,
            "answer": _answer(narrative["value"], narrative["unit"]), "value": narrative["value"],
            "unit": narrative["unit"], "evidence_page": narrative["page"],
            "evidence_pages": sorted({f["page"] for f in matching}), "tags": tags,
        })
    return out
