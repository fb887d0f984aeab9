"""The retrieval stages that are profile options: query normalisation, the ranking FTS query,
k-reciprocal refinement of the light stage; and the ranking metrics that measure them."""

import numpy as np
import pytest

from finrag.retrieval.systems.cascade import Cascade
from finrag.retrieval.store.neighbours import k_reciprocal_scores
from finrag.retrieval.store.query import normalize_query, weighted_fts_query
from finrag.retrieval.store.tables import TableSearch, table_json
from finrag.retrieval.systems.evaluation import first_hit_rank, ndcg_at_k


# normalisation --------------------------------------------------------------------------
@pytest.mark.parametrize("question, expected", [
    ("What was FY2018 capex?",
     "What was FY2018 (fiscal year 2018) capex (capital expenditures)?"),
    ("YoY change in EPS", "YoY (year over year) change in EPS (earnings per share)"),
    ("D&A, SG&A and COGS in FY22", "D&A (depreciation and amortization), SG&A (selling, "
     "general and administrative) and COGS (cost of goods sold) in FY22 (fiscal year 2022)"),
    ("FCF in Q3", "FCF (free cash flow) in Q3 (third quarter)"),
    ("revenue above $5bn", "revenue above $5 billion"),
    ("(in USD millions)", "(in USD millions (in millions))"),
    ("1H FY 99 PP&E", "1H (first half) FY 99 (fiscal year 1999) PP&E (property, plant and "
     "equipment)"),
])
def test_normalisation_writes_abbreviations_out_and_keeps_the_original(question, expected):
    assert normalize_query(question) == expected


def test_normalisation_leaves_names_and_plain_words_alone():
    # 3M is a company, not three million; "capexes" and "epsilon" are not abbreviations
    q = "Did 3M's epsilon segment or AMD's Xilinx unit grow?"
    assert normalize_query(q) == q


# the ranking FTS query ------------------------------------------------------------------
def test_weighted_query_drops_stop_words_and_weights_phrases_and_numbers():
    match = weighted_fts_query("What is the net income of 3M in 2018 based on the filing?")
    terms = match.split(" OR ")
    assert terms.count('"net income"') == 2 and '"net"' not in terms and '"income"' not in terms
    assert terms.count('"2018"') == 2 and terms.count('"3m"') == 2
    assert terms.count('"filing"') == 1
    for stop in ("what", "is", "the", "of", "in", "based", "on"):
        assert f'"{stop}"' not in terms
    assert weighted_fts_query("what is the ?") is None
    assert weighted_fts_query('revenue" OR 1=1; DROP TABLE') == '"revenue" OR "1" OR "1" OR "drop" OR "table"'


def test_weighted_fts_ranks_the_chunk_with_the_phrase_and_the_number_first(demo_index):
    from finrag.retrieval.store.index import Index

    with Index.open(demo_index) as index:
        db = index.catalog.db
        doc = index.documents()[0].doc_id
        q = "net income in fiscal 2023"
        plain = index.search_fts(q, 10, [doc])
        weighted = index.search_fts(q, 10, [doc], weighted=True)
        assert weighted and plain
        texts = {cid: db.execute("SELECT text FROM chunks WHERE id = ?", (cid,)).fetchone()[0]
                 for cid, _ in weighted}
        top = texts[weighted[0][0]].lower()
        assert "net income" in top  # the phrase, not just the two words apart
        # every weighted hit holds a query term; the scores are sorted best first
        assert all(s1 >= s2 for (_, s1), (_, s2) in zip(weighted, weighted[1:]))
        # the scope still holds
        assert {index.catalog.chunks([c])[c].doc_id for c, _ in weighted} == {doc}


# k-reciprocal refinement ----------------------------------------------------------------
def _cluster_vectors():
    rng = np.random.default_rng(0)
    centre_a, centre_b = rng.normal(size=16), rng.normal(size=16)
    a = centre_a + 0.2 * rng.normal(size=(5, 16))
    b = centre_b + 0.2 * rng.normal(size=(5, 16))
    vecs = np.vstack([a, b]).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    query = (centre_a + 0.2 * rng.normal(size=16)).astype(np.float32)
    return query / np.linalg.norm(query), vecs


def test_k_reciprocal_lifts_the_query_s_neighbourhood_over_a_stage_mistake():
    query, vecs = _cluster_vectors()
    # the stage put cluster B (not the query's) on top by a small margin
    stage = [0.50, 0.49, 0.48, 0.47, 0.46, 0.55, 0.54, 0.53, 0.52, 0.51]
    refined = k_reciprocal_scores(query, vecs, stage, k1=5, k2=1, lam=0.3)
    order = sorted(range(10), key=lambda i: -refined[i])
    assert set(order[:5]) == {0, 1, 2, 3, 4}
    # lambda 1: the stage's own order stands
    same = k_reciprocal_scores(query, vecs, stage, k1=5, lam=1.0)
    assert sorted(range(10), key=lambda i: -same[i]) == sorted(range(10), key=lambda i: -stage[i])
    assert k_reciprocal_scores(query, vecs[:2], [0.1, 0.2]) == [0.1, 0.2]
    with pytest.raises(ValueError):
        k_reciprocal_scores(query, vecs[:4], [0.1] * 5)


class _Keyword:
    name = "keyword"
    model_id = "keyword"

    def score(self, query, passages):
        words = query.lower().split()
        return [float(sum(w in p.lower() for w in words)) for p in passages]


def test_cascade_refine_reorders_the_light_ranking_before_the_cut():
    items = [(i, f"revenue {'net income' if i % 2 else 'cash'} {i}") for i in range(6)]
    plain = Cascade(_Keyword(), None, light_top_n=6, large_top_m=3, keep_k=3, min_keep=3)
    base = plain.rerank("net income", items)
    assert [s.stage for s in base.stages] == ["light", "cutoff"]
    assert set(base.ids) == {1, 3, 5}
    # a refinement that prefers even ids changes what survives the top-M cut
    flip = plain.rerank("net income", items,
                        refine=lambda ids, scores: [s + (10 if i % 2 == 0 else 0)
                                                    for i, s in zip(ids, scores)])
    assert [s.stage for s in flip.stages] == ["light", "refine", "cutoff"]
    assert set(flip.ids) == {0, 2, 4}
    assert flip.stage("refine").n_in == 6 and len(flip.stage("refine").ids) == 6


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


# tables as records ------------------------------------------------------------------------
def test_table_json_names_columns_units_periods_and_rows():
    import json

    text = table_json(7, ["label", "2023 (in millions)", "2022 (in millions)"],
                      [{"label": "Net income", "2023 (in millions)": "$1,200",
                        "2022 (in millions)": "$950"}, {"label": "Operating activities"}])
    record = json.loads(text)
    assert record["page"] == 7 and record["columns"] == ["2023 (in millions)", "2022 (in millions)"]
    assert record["units"] == ["in millions"] and record["periods"] == ["2022", "2023"]
    assert record["rows"] == [["Net income", "$1,200", "$950"], ["Operating activities"]]


def test_table_search_finds_the_statement_that_holds_the_line_item(demo_index):
    from finrag.retrieval.store.index import Index

    with Index.open(demo_index) as index:
        doc = index.documents()[0].doc_id
        search = TableSearch(index.catalog)
        found = search.search("net income and diluted earnings per share", doc, 3)
        assert found and all(rec.id < 0 and rec.doc_id == doc for rec, _ in found)
        best = found[0][0]
        assert "net income" in best.text.lower()
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        assert search.search("the of and", doc, 3) == []
        assert search.search("net income", doc, 0) == []


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


# the pipeline with every stage on -------------------------------------------------------
@pytest.mark.slow
def test_pipeline_runs_every_stage_when_the_profile_turns_it_on(demo_index):
    from finrag.retrieval.systems.pipelines import Pipeline

    pipe = Pipeline.load(demo_index, profile="tiny")
    try:
        q = "What was Lumenfield Software's net income in FY2023?"
        off = pipe.answer(q, "hdrr", generate=False)
        settings = pipe.settings.model_copy(update={
            "normalize_query": True, "fts_weighted": True, "k_reciprocal": True,
            "table_records": 4})
        on_pipe = Pipeline(pipe.index, pipe.embedder,
                           pipe.profile.model_copy(update={"pipeline": settings}),
                           light=pipe.light, use_llm_router=False)
        on = on_pipe.answer(q, "hdrr", generate=False)
        assert "rerank_refine" in on.timings_ms and "rerank_refine" not in off.timings_ms
        assert on.retrieved["refine"] and len(on.retrieved["refine"]) == len(on.retrieved["light"])
        assert {r["doc_id"] for r in on.retrieved["ranked"]} == {"LUMENFIELD_2023_10K"}
        assert on.retrieved["kept"]
        # table records joined the candidates (negative ids), were refined with the chunks
        assert on.retrieved["tables"] and all(r["chunk_id"] < 0 for r in on.retrieved["tables"])
        tables = {r["chunk_id"] for r in on.retrieved["tables"]}
        assert tables <= {r["chunk_id"] for r in on.retrieved["refine"]}
        assert "search_tables" in on.timings_ms
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

    cfg = parse_config("norm+fts+prior+krecip_l0.3")
    assert cfg["pipeline"] == {"normalize_query": True, "fts_weighted": True,
                               "k_reciprocal": True, "k_reciprocal_lambda": 0.3}
    assert cfg["cascade"] == {"prior_fusion": True}
    assert parse_config("baseline") == {"pipeline": {}, "cascade": {}}
    assert parse_config("prior+hydep") == {
        "pipeline": {"query_expansion": True, "expansion_dense": "passage"},
        "cascade": {"prior_fusion": True}}
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
        parse_config("norm+splade")

    def e(h5, h10, rr):
        return {"hit5": {"estimate": h5}, "hit10": {"estimate": h10}, "rr": {"estimate": rr}}

    summary = {"tune": {"baseline": e(0.4, 0.6, 0.3), "a": e(0.5, 0.6, 0.3),
                        "a+b": e(0.5, 0.6, 0.3), "c": e(0.5, 0.7, 0.2)},
               "test": {"baseline": e(0.9, 0.9, 0.9)}}  # test never decides
    assert choose(summary, ["baseline", "a", "a+b", "c"]) == "c"
    summary["tune"]["c"] = e(0.5, 0.6, 0.3)
    assert choose(summary, ["baseline", "a+b", "a", "c"]) == "a"  # fewer stages first
