"""The systems over the indexed demo corpus with the tiny profile (its random tiny LLM,
MiniLM + MaxSim; SmolLM2-135M where a test checks the model's judgement), and the
context/fusion rules they share."""

import json

import pytest

from finrag.retrieval.systems.context import (NOT_FOUND, Block, all_blocks, build_blocks, cite,
                                              fair_shares, fit, mark_pages, states_nothing)
from finrag.retrieval.systems import stages
from finrag.retrieval.systems.generation import part_findings
from finrag.retrieval.systems.run import QuestionError


def words(text: str) -> int:
    return len(text.split())


# context rules -----------------------------------------------------------------------------
def test_fair_shares_split_equally_and_hand_on_what_is_not_needed():
    assert fair_shares(900, [1000, 1000, 1000]) == [300, 300, 300]
    # the first filing needs only 100: the other two share the rest equally
    assert fair_shares(900, [100, 1000, 1000]) == [100, 400, 400]
    assert fair_shares(900, [100, 200, 1000]) == [100, 200, 600]
    assert fair_shares(900, [100, 200, 300]) == [100, 200, 300]  # all fit
    assert fair_shares(10, [0, 50]) == [0, 10]
    for total, demands in [(7, [5, 5, 5]), (1000, [1, 999, 3]), (0, [4, 4])]:
        shares = fair_shares(total, demands)
        assert sum(shares) <= total
        assert all(0 <= s <= d for s, d in zip(shares, demands))
    assert max(fair_shares(7, [5, 5, 5])) - min(fair_shares(7, [5, 5, 5])) <= 1


def test_blocks_fit_the_budget_and_mark_page_breaks():
    class C:
        def __init__(self, cid, text, first, last):
            self.chunk_id, self.doc_id, self.text = cid, "ACME_2023_10K", text
            self.first_page, self.last_page = first, last

    chunks = [C(1, "alpha beta\ngamma delta", 4, 5), C(2, " ".join(["w"] * 500), 6, 6),
              C(3, "never reached", 7, 7)]
    assert mark_pages("alpha beta\ngamma delta", 4) == "alpha beta [p.5] gamma delta"
    blocks = build_blocks(chunks, words, budget=200)
    assert [b.chunk_id for b in blocks] == [1, 2]
    assert blocks[0].tag == "[ACME_2023_10K p.4]" and "[p.5]" in blocks[0].text
    assert sum(b.tokens for b in blocks) <= 200
    assert words(blocks[1].text) < 500  # the second chunk was cut to what was left
    # counted once, cut to any budget after: the same blocks as building them for it
    counted: list[str] = []
    every = all_blocks(chunks, lambda t: (counted.append(t), words(t))[1])
    assert len(counted) == len(every) == 3
    assert fit(every, 200, words) == blocks
    assert fit(every, 10**9, words) == every and fit(every, 0, words) == []


def test_citations_only_point_into_the_context():
    blocks = [Block("ACME_2023_10K", 7, 8, "revenue was 3,793", 5, 11),
              Block("ACME_2022_10K", 3, 3, "revenue was 3,100", 5, 12)]
    text = ("Revenue was $3,793 million [ACME_2023_10K p.8]. See also [OTHER_2023_10K p.8] "
            "and [ACME_2023_10K p.40] and [../../etc/passwd p.1].")
    cites = cite(text, blocks)
    assert [(c.doc_id, c.page, c.chunk_id) for c in cites] == [("ACME_2023_10K", 8, 11)]
    # no valid tag: the answer rests on the blocks it was given
    assert [c.chunk_id for c in cite("Revenue was $3,793 million.", blocks)] == [11, 12]
    assert cite(NOT_FOUND, blocks) == []


def test_part_answers_that_state_nothing():
    for answer in ("", NOT_FOUND, "[ACME_2023_10K p.4]", "[DOC_ID p.10] p.10",
                   "[ACME_2023_10K p.4] [ACME_2023_10K p.9] pages 9-10.",
                   "The passages do not contain the revenue for Q2 [ACME_2023_10K p.4].",
                   "The provided context does not mention a dividend.",
                   "There is no information about capital expenditure in this part.",
                   "The operating margin cannot be determined from the passages."):
        assert states_nothing(answer), answer
    for answer in ("Revenue was $3,793 million [ACME_2023_10K p.8].",
                   "No, ACME does not pay a dividend [ACME_2023_10K p.4].",
                   "Yes. The company did not provide guidance for 2024 [ACME_2023_10K p.3].",
                   "3,793"):
        assert not states_nothing(answer), answer


def test_sfr_map_step_keeps_findings_in_document_order_within_the_budget():
    parts = [Block("D", p, p + 3, "x", 6000, None) for p in (1, 5, 9, 13)]
    answers = ["[D p.1]", "Revenue was $3,793 million [D p.6].", NOT_FOUND,
               "Revenue was $3,100 million [D p.13]."]
    found = part_findings(answers, parts, words, budget=100)
    assert [(f.first_page, f.last_page, part.first_page) for f, part in found] == [
        (5, 8, 5), (13, 16, 13)]
    assert found[0][0].tag == "[D p.5]" and found[0][0].text == answers[1]
    assert found[0][0].tokens == words(f"[D p.5]\n{answers[1]}")
    # what does not fit the reduce call's budget is left out, never cut
    assert [f.first_page for f, _ in part_findings(answers, parts, words, budget=8)] == [5]
    assert part_findings([NOT_FOUND, "[D p.5]"], parts[:2], words, budget=100) == []


# the systems on the demo corpus ----------------------------------------------------------
@pytest.fixture(scope="module")
def pipe(demo_index):
    from finrag.retrieval.systems.pipelines import Pipeline

    p = Pipeline.load(demo_index, profile="tiny")
    yield p
    p.close()


def kept_ids(answer):
    return {r["chunk_id"] for r in answer.retrieved["context"]}


@pytest.mark.slow
def test_cbr_answers_with_citations_from_its_own_context(pipe, demo_corpus):
    q = json.loads(demo_corpus.questions_path.read_text().splitlines()[0])["question"]
    a = pipe.answer(q, "cbr")
    assert a.answer.strip()
    assert a.citations and {c.chunk_id for c in a.citations} <= kept_ids(a)
    u = a.usage
    assert u["llm_calls"] == 1 and u["calls"][0]["role"] == "generator"
    assert u["prompt_tokens"] > a.context_tokens > 0 and u["completion_tokens"] > 0
    for stage in ("embed_query", "search", "rerank_light", "generate", "total"):
        assert a.timings_ms[stage] >= 0
    assert a.energy["source"] in ("nvml", "rapl", "unavailable")
    assert (a.energy["joules"] is None) == (a.energy["source"] == "unavailable")
    assert a.routing is None and a.profile == "tiny"
    assert json.loads(json.dumps(a.to_dict()))["usage"]["llm_calls"] == 1


@pytest.mark.slow
def test_hdrr_keeps_only_the_routed_filing(pipe):
    q = "What was Lumenfield Software's total revenue in fiscal 2023?"
    a = pipe.answer(q, "hdrr", generate=False)
    assert a.routing.routed and a.routing.doc_ids == ["LUMENFIELD_2023_10K"]
    assert a.retrieved["context"] and {r["doc_id"] for r in a.retrieved["context"]} == {
        "LUMENFIELD_2023_10K"}
    assert {r["doc_id"] for r in a.retrieved["fused"]} == {"LUMENFIELD_2023_10K"}
    assert a.context_tokens <= pipe.settings.context_tokens


@pytest.mark.slow
def test_hdrr_gives_each_routed_filing_a_fair_share(pipe):
    q = "Compare Lumenfield Software's and Brightquarry Software's total revenue in fiscal 2023."
    encoded: list[list[str]] = []
    encode = pipe.embedder.encode
    pipe.embedder.encode = lambda texts: (encoded.append(list(texts)), encode(texts))[1]
    try:
        a = pipe.answer(q, "hdrr", generate=False)
    finally:
        del pipe.embedder.encode
    assert encoded == [[q]]  # the question embedded once for both filings' searches
    assert sorted(a.routing.doc_ids) == ["BRIGHTQUARRY_2023_10K", "LUMENFIELD_2023_10K"]
    assert {r["doc_id"] for r in a.retrieved["context"]} == set(a.routing.doc_ids)
    # ranked lists are merged round-robin, so both filings' best chunks lead
    assert {r["doc_id"] for r in a.retrieved["ranked"][:2]} == set(a.routing.doc_ids)
    assert a.context_tokens <= pipe.settings.context_tokens


@pytest.mark.slow
def test_sfr_reads_whole_filings_from_the_catalog_only(pipe):
    doc = "LUMENFIELD_2024Q2_10Q"  # the shortest filings: fewest parts to answer
    parts = stages.document_parts(pipe.index.catalog, pipe.count_tokens,
                                  pipe.settings.sfr_part_tokens, doc)
    pages = pipe.index.catalog.pages(doc)
    assert len(parts) > 1  # the tiny profile's part size splits even a demo 10-Q
    assert all(p.tokens <= pipe.settings.sfr_part_tokens for p in parts)
    assert (parts[0].first_page, parts[-1].last_page) == (pages[0][0], pages[-1][0])
    for number, text in pages:
        assert any(" ".join(text.split())[:80] in p.text for p in parts), number
    with pytest.raises(KeyError):
        stages.document_parts(pipe.index.catalog, pipe.count_tokens, 100, "../../etc/passwd")
    a = pipe.answer("What was Lumenfield's revenue for the second quarter of fiscal 2024?", "sfr")
    assert a.routing.doc_ids == [doc]
    generator_calls = [c for c in a.usage["calls"] if c["role"] == "generator"]
    findings = a.retrieved["sfr_findings"]
    # one call per part, and one more to read the parts' findings when there are several
    assert len(generator_calls) == len(parts) + (len(findings) > 1)
    assert all(not states_nothing(f["answer"]) for f in findings)
    assert findings or a.answer == NOT_FOUND
    assert {c.doc_id for c in a.citations} <= {doc}
    assert a.context_tokens == sum(p.tokens for p in parts)


@pytest.mark.slow
def test_a_streamed_answer_is_the_final_answer_on_every_path(pipe):
    """What a stream sends is the answer, whether a generator call streamed it (one context,
    SFR's reduce call) or not (a map step's single finding, "not found"): served streams once
    sent nothing for SFR's map-reduce. Slow: four answers generated by the tiny profile's 135M
    LLM on transformers, the first SFR's map-reduce over a whole 10-Q, a call a part and one to
    join their findings (about 60 s on two cores)."""
    asked = [("What was Lumenfield's revenue for the second quarter of fiscal 2024?", "sfr"),
             ("What is the outlook for the widget industry?", "sfr"),
             ("What was Quillon's revenue in fiscal 2022?", "cbr")]
    for question, system in asked:
        pieces: list[str] = []
        a = pipe.answer(question, system, on_text=pieces.append)
        assert a.answer.strip() and "".join(pieces).strip() == a.answer.strip(), system
    # SFR falls back to CBR when routing does: one generation over the context, no map step
    unrouted = pipe.answer(asked[1][0], "sfr")
    assert not unrouted.routing.routed and "sfr_findings" not in unrouted.retrieved
    assert [c["role"] for c in unrouted.usage["calls"]].count("generator") == 1


@pytest.fixture(scope="module")
def judging_pipe(demo_index):
    """The tiny profile with SmolLM2-135M: its verifier's judgement is a model's, not noise."""
    from finrag.retrieval.systems.pipelines import Pipeline

    p = Pipeline.load(demo_index, profile="tiny-smollm2")
    yield p
    p.close()


@pytest.mark.slow
def test_agentic_retries_are_capped(judging_pipe):
    pipe = judging_pipe
    cap = 1 + pipe.settings.agentic_max_retries
    # SmolLM2's verifier does not take this question's first passages: it retries
    q = "What was Lumenfield Software's net income in fiscal 2024?"
    a = pipe.answer(q, "agentic", generate=False)
    attempts = a.retrieved["agentic"]
    verifier_calls = [c for c in a.usage["calls"] if c["role"] == "verifier"]
    assert 2 <= len(attempts) == len(verifier_calls) <= cap
    # a retry happens only after a failed verification, the attempts stop at a verified one or
    # at the cap, and each retry is entity-anchored
    assert [x["verified"] for x in attempts[:-1]] == [False] * (len(attempts) - 1)
    assert attempts[-1]["verified"] or len(attempts) == cap
    anchors = [before["question_company"] for before in attempts[:-1]]
    assert all(anchors) and [after["query"] for after in attempts[1:]] == [
        f"{anchor} {q}" for anchor in anchors]
    # and this one's first passages are verified: no retry
    once = pipe.answer("What was Lumenfield's revenue for the second quarter of fiscal 2024?",
                       "agentic", generate=False)
    assert [x["verified"] for x in once.retrieved["agentic"]] == [True]


@pytest.mark.slow
def test_agentic_without_retries_verifies_once(pipe):
    from finrag.retrieval.systems.pipelines import Pipeline

    settings = pipe.profile.pipeline.model_copy(update={"agentic_max_retries": 0})
    strict = Pipeline(pipe.index, pipe.embedder, pipe.profile.model_copy(update={"pipeline": settings}),
                      light=pipe.light, engines=pipe._engines, meter=pipe.meter)
    a = strict.answer("What was Quillon's revenue in fiscal 2022?", "agentic", generate=False)
    assert len(a.retrieved["agentic"]) == 1
    assert [c["role"] for c in a.usage["calls"]] == ["verifier"]


def test_bad_questions_and_missing_variants_are_clear_errors(pipe):
    with pytest.raises(QuestionError, match="empty"):
        pipe.answer("   ", "cbr")
    with pytest.raises(QuestionError, match="limit"):
        pipe.answer("x" * 5000, "cbr")
    with pytest.raises(ValueError, match="unknown system"):
        pipe.answer("revenue?", "magic")
    with pytest.raises(FileNotFoundError, match="--variant meta"):
        pipe.answer("revenue?", "cbr_meta", generate=False)


def test_neighbouring_chunks_are_joined_once():
    from finrag.retrieval.ingest.chunking import chunk_pages
    from finrag.retrieval.systems.context import merge_neighbours
    from finrag.retrieval.documents import ParsedPage

    pages = [ParsedPage(n, " ".join(f"p{n}w{i}" for i in range(300))) for n in (1, 2, 3)]
    chunks = chunk_pages(pages, size=1000, overlap=500)

    class C:
        def __init__(self, ch, doc="ACME_2023_10K"):
            self.chunk_id, self.doc_id, self.text = 100 + ch.seq, doc, ch.text
            self.first_page, self.last_page = ch.first_page, ch.last_page

    c = [C(ch) for ch in chunks]
    # ranked: chunk 3, then its neighbours 4 and 2, an unrelated 9, another filing's 5
    spans = merge_neighbours([c[3], c[4], c[9], c[2], C(chunks[5], "OTHER_2023_10K")])
    assert [s.chunk_id for s in spans] == [103, 109, 105]
    joined = spans[0]
    assert joined.ids == (102, 104)
    whole = "\n".join(" ".join(p.text.split()) for p in pages)
    assert joined.text in whole  # one contiguous passage, nothing repeated
    assert joined.text.startswith(c[2].text) and joined.text.endswith(c[4].text)
    assert (joined.first_page, joined.last_page) == (c[2].first_page, c[4].last_page)
    blocks = build_blocks([c[3], c[4], c[2]], words, budget=10_000)
    assert len(blocks) == 1 and blocks[0].chunk_id == 103
    assert words(blocks[0].text) < sum(words(x.text) for x in (c[2], c[3], c[4]))


def test_only_yes_no_questions_are_asked_for_yes_or_no_first():
    from finrag.retrieval.systems.context import YES_NO_RULE, answer_messages, is_yes_no

    assert is_yes_no("Is 3M a capital-intensive business based on FY2022 data?")
    assert is_yes_no("Does Adobe have an improving operating margin profile as of FY2022?")
    assert not is_yes_no("What drove operating margin change as of FY2022 for 3M?")
    assert not is_yes_no("Which segment dragged down 3M's overall growth in 2022?")
    assert is_yes_no("As of Q2'2023, is Pfizer spinning off any large business segments?")
    assert is_yes_no("Looking at VaR, did the risk that JPM faced decrease?")
    assert not is_yes_no("In FY2022, what was 3M's capex?")
    assert not is_yes_no("What drove revenue, and did margins hold?")
    ask = lambda q: answer_messages(q, [])[0]["content"]  # noqa: E731
    assert ask("Has Best Buy paid dividends?").endswith(YES_NO_RULE)
    assert YES_NO_RULE not in ask("What is the FY2018 capital expenditure amount for 3M?")


@pytest.mark.slow
def test_a_yes_no_answer_opens_with_the_verdict_its_passages_give(pipe):
    """The verdict is read from the passages before the answer is written, calibrated by the
    content-free offset, and the generated answer goes on from it (streamed the same); other
    questions get none, and a yes/no question with no passage says what was looked for."""
    from finrag.retrieval.systems.verdict import Calibration, calibrate, decide

    q = "Did Lumenfield Software report any legal proceedings in its 2023 annual report?"
    pieces: list[str] = []
    a = pipe.answer(q, "hdrr", on_text=pieces.append)
    assert a.routing.doc_ids == ["LUMENFIELD_2023_10K"]
    v = a.verdict
    assert v and v["from"] == "passages" and v["word"] in ("Yes", "No")
    assert v["word"] == ("Yes" if v["margin"] > 0 else "No")
    assert abs(v["margin"] - (v["raw"] - v["offset"])) < 1e-3
    assert a.answer.startswith(v["word"]) and "".join(pieces).strip() == a.answer
    roles = [c["role"] for c in a.usage["calls"]]
    assert roles == ["verdict", "generator"] and a.timings_ms["verdict"] > 0
    assert a.usage["calls"][0]["prompt_tokens"] > a.context_tokens > 0

    # the same passages decide the other way only when the offset moves past the raw log-odds
    engine = pipe.engine("generator")
    cal = calibrate(engine)
    assert pipe.verdict_calibrations[engine.model_id].offset == pytest.approx(cal.offset,
                                                                              abs=1e-3)
    from finrag.retrieval.systems.recipes import RECIPES
    from finrag.retrieval.systems.run import Run

    blocks = RECIPES["hdrr"](pipe.components(pipe.view), Run(q, "hdrr", "tiny")).blocks
    assert decide(engine, q, blocks, Calibration(cal.ids, v["raw"] - 1)).word == "Yes"
    assert decide(engine, q, blocks, Calibration(cal.ids, v["raw"] + 1)).word == "No"

    other = pipe.answer("What was Lumenfield Software's total revenue in fiscal 2023?", "cbr")
    assert other.verdict is None and "verdict" not in [c["role"] for c in other.usage["calls"]]


def test_a_yes_no_question_with_no_passage_says_what_was_looked_for():
    from finrag.retrieval.answer import Routing
    from finrag.retrieval.systems.generation import nothing_found
    from finrag.retrieval.systems.run import Run

    run = Run("Did Acme pay dividends in 2023?", "hdrr", "cpu")
    run.answer.routing = Routing("exact", ["ACME_2023_10K"])
    said = nothing_found(run)
    assert said.startswith(NOT_FOUND) and "ACME_2023_10K" in said and "Yes or No" in said
    assert states_nothing(said)
    assert nothing_found(Run("What was Acme's revenue?", "hdrr", "cpu")) == NOT_FOUND


def test_figures_are_traced_by_the_scorers_matching_rule():
    from finrag.retrieval.systems.figures import figures_written, unsupported

    context = ["Total revenue (in millions) 1,616 and 1,432; operating margin 34.6%."]
    answer = ("Revenue was $1.6 billion [ACME_2023_10K p.4], up 12.9% in 2023, across 3 "
              "segments; margin 34.6%, net income $812 million.")
    assert [w for w, _ in figures_written(answer)] == ["$1.6 billion", "12.9%", "34.6%",
                                                       "$812 million"]
    # 1,616 million written as $1.6 billion traces; a growth rate the passages do not state,
    # and a figure found nowhere, do not; years, citation tags and a bare count are no figures
    assert unsupported(answer, context) == ["12.9%", "$812 million"]
    assert unsupported("No figures here.", context) == []


@pytest.mark.slow
def test_every_generated_answer_carries_its_unsupported_figures(pipe):
    from finrag.retrieval.systems.figures import figures_written

    a = pipe.answer("What was Lumenfield Software's total revenue in fiscal 2023?", "cbr")
    written = [w for w, _ in figures_written(a.answer)]
    assert isinstance(a.unsupported_figures, list) and set(a.unsupported_figures) <= set(written)
    assert a.to_dict()["unsupported_figures"] == a.unsupported_figures


def test_a_generated_figure_keeps_the_scale_its_source_states():
    from finrag.retrieval.systems.figures import ScaledStream, with_stated_scale

    statement = ("CONSOLIDATED STATEMENTS OF OPERATIONS (In millions, except per share data)\n"
                 "Total revenue 3,793 3,253\nDiluted net income per share 2.15 1.10")
    assert (with_stated_scale("Total revenue in fiscal 2023 was $3,793.", [statement])
            == "Total revenue in fiscal 2023 was $3,793 million.")
    # written with a scale, a per-share row or sentence, two sources that disagree, a
    # source that states none: left as written
    for answer, sources in [("Revenue was $3,793 million.", [statement]),
                            ("Diluted EPS was $2.15.", [statement]),
                            ("It earned $1.10 in 2022.", [statement]),
                            ("Revenue was $3,793.", [statement, "(in thousands) sales 3,793"]),
                            ("Revenue was $3,793.", ["revenue of 3,793 was recorded"])]:
        assert with_stated_scale(answer, sources) == answer
    assert (with_stated_scale("Up from $3,253.", ["(Dollars in thousands) 3,253"])
            == "Up from $3,253 thousand.")
    # a passage whose table lost its line breaks, as a context block holds it
    flat = " ".join(statement.split())
    assert with_stated_scale("Revenue was $3,253.", [flat]) == "Revenue was $3,253 million."
    assert with_stated_scale("It earned $1.10 in 2022.", [flat]) == "It earned $1.10 in 2022."
    # streamed in pieces, the text is the same as the answer's
    text = "Revenue was $3,793. Diluted EPS was $2.15 per share. In 2022 it was $3,253."
    pieces: list[str] = []
    stream = ScaledStream(pieces.append, [statement])
    for i in range(0, len(text), 4):
        stream(text[i:i + 4])
    stream.flush()
    assert "".join(pieces) == with_stated_scale(text, [statement]) == (
        "Revenue was $3,793 million. Diluted EPS was $2.15 per share. In 2022 it was "
        "$3,253 million.")


@pytest.mark.slow
def test_an_existence_question_reads_the_section_it_asks_about_first(pipe):
    from finrag.retrieval.systems.sections import section_pages

    q = "Has Lumenfield Software reported any legal proceedings in fiscal 2023?"
    opened = [n for n, kinds in section_pages(pipe.index.catalog.pages("LUMENFIELD_2023_10K"))
              .items() if "legal" in kinds]
    assert opened  # the filing's "Item 3. Legal Proceedings" page
    on = pipe.settings.section_pages
    try:
        pipe.settings.section_pages = 1
        a = pipe.answer(q, "hdrr", generate=False)
        first = a.retrieved["context"][0]
        assert first["first_page"] <= opened[0] <= first["last_page"], a.retrieved["context"]
        assert a.retrieved.get("sections") or any(  # joined, unless search had found it
            r["first_page"] <= opened[0] <= r["last_page"] for r in a.retrieved["fused"])
        assert "sections" in a.timings_ms
    finally:
        pipe.settings.section_pages = on
