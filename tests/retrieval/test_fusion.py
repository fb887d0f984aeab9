import pytest

from finrag.retrieval.store.fusion import rrf


def test_rrf_scores_and_order():
    fused = rrf([["a", "b", "c"], ["b", "d"]], k=60)
    scores = dict(fused)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["d"] == pytest.approx(1 / 62)
    assert [item for item, _ in fused] == ["b", "a", "d", "c"]


def test_rrf_ties_keep_first_appearance_and_empty_lists():
    assert [i for i, _ in rrf([["x"], ["y"]])] == ["x", "y"]
    assert rrf([[], []]) == []
    assert rrf([]) == []


def test_rrf_k_changes_weight_of_top_ranks():
    # with small k the single first place beats two mid ranks; with large k it does not
    lists = [["solo", "a", "m1"], ["b", "c", "m1"]]
    assert rrf(lists, k=0)[0][0] == "solo"
    assert rrf(lists, k=1000)[0][0] == "m1"
    with pytest.raises(ValueError):
        rrf(lists, k=-1)
