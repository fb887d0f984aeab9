"""The AUC gap of the reranker benchmark: paired by question, refused across different pages."""

import pytest

from finrag.benchmarks.reranker_auc import auc_gap, pooled_auc, roc_auc


def _row(qid, labels, light, large):
    return {"id": qid, "pages": list(range(len(labels))), "labels": labels, "light": light,
            "large": large}


ROWS = [_row(f"q{i}", [1, 0, 0], [0.9, 0.5, 0.1], [0.4, 0.6, 0.2]) for i in range(6)] + \
       [_row(f"p{i}", [1, 0], [0.2, 0.8], [0.7, 0.3]) for i in range(6)]


def test_roc_auc_counts_ties_half_and_needs_both_labels():
    assert roc_auc([1, 0, 0], [0.5, 0.5, 0.1]) == 0.75
    assert roc_auc([1, 1], [0.3, 0.2]) is None


def test_gap_is_the_difference_of_pooled_aucs_with_an_interval_around_it():
    g = auc_gap(ROWS, "large", "light", n=500)
    assert g["gap"] == pytest.approx(pooled_auc(ROWS, "large") - pooled_auc(ROWS, "light"))
    assert g["low"] <= g["gap"] <= g["high"]
    assert g["low"] < g["high"]  # the two kinds of question disagree, so resamples vary
    assert g["questions"] == 12


def test_gap_against_another_run_pairs_the_same_pages_and_refuses_others():
    other = [dict(r, large=[1 - s for s in r["large"]]) for r in ROWS]
    g = auc_gap(ROWS, "large", "large", other, n=200)
    assert g["gap"] == pytest.approx(pooled_auc(ROWS, "large") - pooled_auc(other, "large"))
    moved = [dict(r, pages=[p + 1 for p in r["pages"]]) for r in ROWS]
    with pytest.raises(ValueError, match="not paired"):
        auc_gap(ROWS, "large", "large", moved)
