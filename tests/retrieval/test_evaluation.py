"""Retrieval metrics on hand-made answer records."""

import json

from finrag.retrieval.systems.evaluation import (Question, evidence_hit, load_questions, score_row, summarize,
                                  wrong_document_share)


def row(doc, first, last, chunk_id=1):
    return {"chunk_id": chunk_id, "doc_id": doc, "first_page": first, "last_page": last,
            "score": None}


def record(system, ranked, context, routing=None, calls=0):
    return {"system": system, "retrieved": {"ranked": ranked, "context": context},
            "routing": routing, "context_tokens": 100, "timings_ms": {"total": 5.0},
            "usage": {"llm_calls": calls, "prompt_tokens": 10 * calls, "completion_tokens": calls}}


def test_hit_at_k_needs_the_gold_filing_and_an_evidence_page():
    ranked = [row("B_2023_10K", 7, 8), row("A_2022_10K", 7, 7), row("A_2023_10K", 3, 4),
              row("A_2023_10K", 6, 7)]
    a = record("cbr", ranked, ranked[:2])
    assert not evidence_hit(a, "A_2023_10K", [7], 3)  # p.7 of other filings does not count
    assert evidence_hit(a, "A_2023_10K", [7], 4)
    assert evidence_hit(a, "A_2023_10K", [4, 99], 3)
    assert wrong_document_share(a, "A_2023_10K") == 1.0
    assert wrong_document_share(record("cbr", [], []), "A_2023_10K") is None
    # the facts block of a hybrid answer is no filing's passage: neither wrong nor counted
    facts = row("XBRL", 1, 1)
    gold = row("A_2023_10K", 7, 7)
    assert wrong_document_share(record("hdrr", [gold], [facts, gold]), "A_2023_10K") == 0.0
    assert wrong_document_share(record("hdrr", [], [facts]), "A_2023_10K") is None
    # whole-document parts (SFR) are all in the context: k does not apply
    parts = [row("A_2023_10K", p, p + 4, None) for p in range(1, 40, 5)]
    assert evidence_hit(record("sfr", parts, parts), "A_2023_10K", [33], 1)


def test_summary_counts_routing_only_for_routed_systems(tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text("\n".join(json.dumps(r) for r in [
        {"financebench_id": "q1", "question": "A's 2023 revenue?", "doc_name": "A_2023_10K",
         "evidence": [{"evidence_page_num": 6}], "pdf_present": True},
        {"id": "q2", "question": "B's 2021 revenue?", "doc_name": "B_2021_10K",
         "evidence_pages": [3], "pdf_present": False},
    ]) + "\n")
    q1, q2 = load_questions(qs)
    assert (q1.id, q1.pages, q2.pages, q2.pdf_present) == ("q1", [7], [3], False)
    good = {"status": "exact", "doc_ids": ["A_2023_10K"], "routed": True, "llm_called": False}
    miss = {"status": "fallback_not_in_corpus", "doc_ids": [], "routed": False,
            "llm_called": True}
    rows = [
        score_row(q1, record("hdrr", [row("A_2023_10K", 7, 7)], [row("A_2023_10K", 7, 7)], good)),
        score_row(q2, record("hdrr", [row("A_2022_10K", 1, 1)], [row("A_2022_10K", 1, 1)], miss, 1)),
        score_row(q1, record("cbr", [row("B_2023_10K", 7, 7)], [row("B_2023_10K", 7, 7)])),
        score_row(q2, record("cbr", [], [])),
    ]
    s = summarize(rows, ["hdrr", "cbr"])
    assert s["hdrr"]["routing_accuracy"] == 1.0  # only questions with their filing on disk
    assert s["hdrr"]["routing_covering"] == 1.0 and s["hdrr"]["routing_precision"] == 1.0
    two = {"status": "exact", "doc_ids": ["A_2023_10K", "A_2021_10K"], "routed": True}
    superset = score_row(q1, record("hdrr", [], [], two))
    assert (superset["routed_exact"], superset["routed_covering"], superset["routed_filings"]) \
        == (False, True, 2)
    assert summarize([superset], ["hdrr"])["hdrr"]["routing_precision"] == 0.5
    assert s["hdrr"]["hit5"] == 1.0 and s["hdrr"]["wrong_doc_share_when_routed"] == 0.0
    assert s["hdrr"]["routing_statuses"] == {"exact": 1, "fallback_not_in_corpus": 1}
    assert s["hdrr"]["llm_calls"] == 0.5 and s["hdrr"]["llm_routed_share"] == 0.5
    assert s["cbr"]["routing_accuracy"] is None and s["cbr"]["hit5"] == 0.0
    assert s["cbr"]["wrong_doc_share"] == 1.0
    assert Question.from_record({"question": "x"}, 3).id == "3"
