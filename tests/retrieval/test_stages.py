"""The retrieval stages that are profile options (the cascade's prior and large fusion, the
light stage off), the ranking metrics that measure them, and the stage benchmark's
configurations."""

import numpy as np
import pytest

from finrag.retrieval.systems.cascade import Cascade
from finrag.retrieval.systems.evaluation import first_hit_rank, ndcg_at_k


def test_prior_fusion_keeps_the_retrievers_order_as_a_vote():
    # the light stage reverses the incoming order; fused with it, the ends tie and the
    # incoming order breaks the ties
    class Length:
        name = model_id = "length"

        def score(self, query, passages):
            return [float(len(p)) for p in passages]

    items = [(i, "x" * (i + 1)) for i in range(5)]
    light_only = Cascade(Length(), None, light_top_n=5, large_top_m=5, keep_k=5, min_keep=5)
    assert light_only.rerank("q", items).ids == [4, 3, 2, 1, 0]
    fused = Cascade(Length(), None, light_top_n=5, large_top_m=5, keep_k=5, min_keep=5,
                    prior_fusion=True).rerank("q", items)
    assert [s.stage for s in fused.stages] == ["light", "prior", "cutoff"]
    assert fused.ids == [0, 4, 1, 3, 2]


def test_large_fusion_votes_the_order_the_large_stage_was_given():
    # the light stage orders by length, the large stage reverses it; fused, the large stage's
    # order is a second vote and the given (light) order breaks the ties
    class Length:
        name = model_id = "length"

        def __init__(self, sign):
            self.sign = sign

        def score(self, query, passages):
            return [self.sign * float(len(p)) for p in passages]

    items = [(i, "x" * (i + 1)) for i in range(6)]
    kw = dict(light_top_n=6, large_top_m=4, keep_k=4, min_keep=4)
    plain = Cascade(Length(1), Length(-1), **kw).rerank("q", items)
    assert plain.ids == [2, 3, 4, 5]  # the large stage alone decides
    fused = Cascade(Length(1), Length(-1), large_fusion=True, **kw).rerank("q", items)
    assert [s.stage for s in fused.stages] == ["light", "large", "large_fusion", "cutoff"]
    assert fused.ids == [5, 2, 4, 3]
    assert fused.stage("large_fusion").n_in == 4


# ranking metrics ------------------------------------------------------------------------
def _answer(rows):
    return {"retrieved": {"ranked": [{"chunk_id": i, "doc_id": d, "first_page": f,
                                      "last_page": l} for i, (d, f, l) in enumerate(rows)]}}


def test_first_hit_rank_and_ndcg():
    a = _answer([("X", 1, 2), ("G", 3, 4), ("G", 9, 10), ("G", 11, 11)])
    assert first_hit_rank(a, "G", [10]) == 3
    assert first_hit_rank(a, "G", [50]) is None
    assert first_hit_rank(a, "X", [10]) is None  # the page of another filing does not count
    # one relevant chunk at rank 3 of a filing that holds one: 1/log2(4)
    assert ndcg_at_k(a, "G", [10], 10, n_relevant=1) == pytest.approx(0.5)
    # the filing holds two relevant chunks, the ranking found one of them
    assert ndcg_at_k(a, "G", [10], 10, n_relevant=2) == pytest.approx(
        0.5 / (1 + 1 / np.log2(3)))
    assert ndcg_at_k(a, "G", [10], 2, n_relevant=1) == 0.0
    assert ndcg_at_k(_answer([("G", 10, 10)]), "G", [10]) == 1.0


# the large stage's scorer -----------------------------------------------------------------
def test_bi_encoder_reads_the_whole_passage_in_windows(embedder):
    from finrag.models.rerankers import BiEncoderReranker

    scorer = BiEncoderReranker(embedder)
    filler = "The board met in the spring and discussed office furniture at length. " * 30
    late = filler + "Net income for fiscal 2023 was $1.2 billion, up from $950 million."
    assert len(late) > 2 * scorer.window_chars
    windows = scorer._windows(late)
    assert len(windows) > 2 and windows[-1].endswith("$950 million.")
    on_late, none = scorer.score("What was net income in fiscal 2023?", [late, filler])
    assert on_late > none + 0.1
    assert scorer.score("q", []) == []


def test_cached_large_scores_equal_the_scorer_s_and_score_each_passage_once(embedder):
    from finrag.benchmarks.retrieval_stages import CachedScores
    from finrag.models.rerankers import BiEncoderReranker

    scorer = BiEncoderReranker(embedder)
    seen: list[str] = []
    real = scorer.score
    scorer.score = lambda q, ps: (seen.extend(ps), real(q, ps))[1]
    cached = CachedScores(scorer)
    passages = ["Net income was $1.2 billion.", "The board met in spring.", "Revenue grew 4%."]
    assert cached.name == "bi-encoder" and cached.model_id == scorer.model_id
    first = cached.score("What was net income?", passages[:2])
    again = cached.score("What was net income?", passages[::-1])
    assert again == pytest.approx([real("What was net income?", [p])[0] for p in passages[::-1]])
    assert again[1:] == pytest.approx(first[::-1])
    assert seen == passages  # the third passage scored once, the first two not again
    assert cached.score("Another question?", passages[:1]) != first[:1]


# the pipeline with the light stage off -------------------------------------------------------
@pytest.mark.slow
def test_pipeline_without_the_light_stage_ranks_by_the_retrievers_order(demo_index):
    from finrag.retrieval.systems.pipelines import Pipeline

    pipe = Pipeline.load(demo_index, profile="tiny")
    try:
        q = "What was Lumenfield Software's net income in FY2023?"
        on = pipe.answer(q, "hdrr", generate=False)
        assert "rerank_light" in on.timings_ms and on.retrieved["light"]
        assert {r["doc_id"] for r in on.retrieved["ranked"]} == {"LUMENFIELD_2023_10K"}
        # the light stage off: the retrievers' fused order is the ranking
        plain = pipe.settings.model_copy(update={"light_rerank": False})
        no_light = Pipeline(pipe.index, pipe.embedder,
                            pipe.profile.model_copy(update={"pipeline": plain}),
                            light=pipe.light, use_llm_router=False)
        assert no_light.cascade is None
        bare = no_light.answer(q, "hdrr", generate=False)
        assert "rerank_light" not in bare.timings_ms and bare.retrieved["kept"]
        fused = [r["chunk_id"] for r in bare.retrieved["fused"]]
        assert [r["chunk_id"] for r in bare.retrieved["ranked"]][:3] == fused[:3]
    finally:
        pipe.close()


# the stage benchmark's configurations and choice -------------------------------------------
def test_stage_configurations_compose_and_the_choice_is_made_on_tune():
    from finrag.benchmarks.retrieval_stages import _stages_named, choose, parse_config

    cfg = parse_config("prior+lfuse+sect")
    assert cfg["pipeline"] == {"section_pages": 2}
    assert cfg["cascade"] == {"prior_fusion": True, "large_fusion": True}
    assert parse_config("baseline") == {"pipeline": {}, "cascade": {}}
    assert parse_config("prior+stmt3") == {"pipeline": {"statement_pages": 3},
                                           "cascade": {"prior_fusion": True}}
    assert parse_config("stmt")["pipeline"] == {"statement_pages": 2}
    assert parse_config("nolight+large+top50") == {
        "pipeline": {"light_rerank": False, "large_rerank": True},
        "cascade": {"large_top_m": 50}}
    # the report names every stage its configurations use, parametrised ones too
    assert _stages_named(["baseline", "prior+stmt1", "stmt1"]) == {
        "prior": {"cascade": {"prior_fusion": True}},
        "stmt1": {"pipeline": {"statement_pages": 1}}}
    with pytest.raises(ValueError, match="unknown stage"):
        parse_config("prior+splade")
    with pytest.raises(ValueError, match="unknown stage"):
        parse_config("prior+hyde")  # measured off, used by no profile: gone (#60)

    def e(h5, h10, rr):
        return {"hit5": {"estimate": h5}, "hit10": {"estimate": h10}, "rr": {"estimate": rr}}

    summary = {"tune": {"baseline": e(0.4, 0.6, 0.3), "a": e(0.5, 0.6, 0.3),
                        "a+b": e(0.5, 0.6, 0.3), "c": e(0.5, 0.7, 0.2)},
               "test": {"baseline": e(0.9, 0.9, 0.9)}}  # test never decides
    assert choose(summary, ["baseline", "a", "a+b", "c"]) == "c"
    summary["tune"]["c"] = e(0.5, 0.6, 0.3)
    assert choose(summary, ["baseline", "a+b", "a", "c"]) == "a"  # fewer stages first
