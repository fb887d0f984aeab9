"""Rerankers: MaxSim on the packaged MiniLM, the LLM yes/no scorer on SmolLM2-135M, the
cross-encoder on a tiny random model built here, the adaptive cutoff and the cascade."""

import importlib.util
import math

import pytest

from tests.conftest import FINANCEBENCH, need_shared

from finrag.models.rerankers import CrossEncoderReranker, LLMRelevanceScorer, MaxSimReranker
from finrag.retrieval.systems.cascade import Cascade, adaptive_cutoff

QUERY = "What were 3M's total net sales in fiscal year 2018?"
RELEVANT = "3M reported total net sales of $32.8 billion for fiscal year 2018, up 3.5 percent."
PASSAGES = [
    "The cafeteria menu offers soup, salad and sandwiches on Fridays.",
    RELEVANT,
    "Our board of directors met eleven times during the year.",
    "Hurricane season brought heavy rain to the coastal towns.",
]


# --- MaxSim --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def maxsim(embedder):
    return MaxSimReranker(embedder)


def test_maxsim_ranks_relevant_first_and_is_bounded(maxsim):
    scores = maxsim.score(QUERY, PASSAGES)
    assert len(scores) == len(PASSAGES)
    assert max(range(len(scores)), key=scores.__getitem__) == 1
    assert all(-1.0 <= s <= 1.0 for s in scores)
    assert maxsim.name == "maxsim" and "MiniLM" in maxsim.model_id


def test_maxsim_edge_cases(maxsim):
    assert maxsim.score(QUERY, []) == []
    empty, long = maxsim.score(QUERY, ["", RELEVANT + " filler" * 2000])
    assert empty == -1.0  # nothing to match
    assert -1.0 <= long <= 1.0  # truncated to the model's window, still scored
    # the batch does not change a passage's score
    alone = maxsim.score(QUERY, [RELEVANT])[0]
    assert alone == pytest.approx(maxsim.score(QUERY, PASSAGES)[1], abs=1e-5)


# --- LLM relevance scorer ------------------------------------------------------------------

@pytest.fixture(scope="module")
def smollm_engine():
    from finrag.models.transformers_engine import TransformersEngine
    from finrag.models.weights import SMOLLM2_135M, transformers_dir

    return TransformersEngine(transformers_dir(SMOLLM2_135M), model_id=SMOLLM2_135M.model_id)


@pytest.mark.slow
def test_llm_scorer_probabilities_batch_and_usage(smollm_engine):
    scorer = LLMRelevanceScorer(smollm_engine, batch_size=4, max_passage_chars=400)
    passages = PASSAGES[:3] + ["x " * 1000]  # mixed lengths: the batch is left-padded
    batch = scorer.score(QUERY, passages)
    assert len(batch) == len(passages)
    assert all(0.0 <= p <= 1.0 and math.isfinite(p) for p in batch)
    usage = scorer.last_usage
    expected = [smollm_engine.count_tokens(scorer.build_prompt(QUERY, p)) for p in passages]
    assert usage["prompt_tokens_each"] == expected
    assert usage["prompt_tokens"] == sum(expected)
    assert usage["calls"] == 4 and usage["batches"] == 1
    single = [scorer.score(QUERY, [p])[0] for p in passages]
    assert batch == pytest.approx(single, abs=1e-4)
    assert scorer.last_usage["calls"] == 1
    assert scorer.model_id == "HuggingFaceTB/SmolLM2-135M-Instruct"


@pytest.mark.slow
def test_llm_scorer_prompt_and_tokens(smollm_engine):
    scorer = LLMRelevanceScorer(smollm_engine, max_passage_chars=10)
    prompt = scorer.build_prompt("q?", "0123456789TRUNCATED")
    assert "<Query>: q?\n<Document>: 0123456789<" in prompt  # passage cut at 10 chars
    assert '"yes" or "no"' in prompt
    assert prompt.startswith("<|im_start|>system\n")
    assert prompt.endswith("<|im_start|>assistant\n")  # the answer is the next token
    tok = smollm_engine.tokenizer
    for ids in (scorer.yes_ids, scorer.no_ids):
        assert ids and all(len(tok.decode([i]).strip()) > 0 for i in ids)
    assert tok.encode("yes", add_special_tokens=False)[0] in scorer.yes_ids
    assert scorer.score("q", []) == [] and scorer.last_usage["calls"] == 0


@pytest.mark.slow
def test_llm_scorer_uses_only_the_engine_contract(smollm_engine):
    """The scorer reads no model or tokenizer of its engine: an engine offering only the
    contract (token ids, chat rendering, next-token log-probabilities) scores the same."""

    class ContractOnly:
        model_id = "contract-only"

        def __init__(self, inner):
            self._inner = inner

        def token_ids(self, text):
            return self._inner.token_ids(text)

        def render(self, prompt):
            return self._inner.render(prompt)

        def prompt_token_ids(self, prompt):
            return self._inner.prompt_token_ids(prompt)

        def next_token_logprobs(self, prompts, token_ids, **kw):
            return self._inner.next_token_logprobs(prompts, token_ids, **kw)

    direct = LLMRelevanceScorer(smollm_engine).score(QUERY, PASSAGES)
    wrapped = LLMRelevanceScorer(ContractOnly(smollm_engine))
    assert wrapped.score(QUERY, PASSAGES) == pytest.approx(direct, abs=1e-6)
    assert wrapped.model_id == "contract-only"


# --- LLM listwise ranker ------------------------------------------------------------------

def test_listwise_permutation_mends_what_the_model_returns():
    from finrag.models.rerankers import _permutation

    assert _permutation([3, 1, 2], 3) == [2, 0, 1]
    # repeats and numbers out of range dropped, the passages left out appended in order
    assert _permutation([2, 2, 9, 0, 4], 5) == [1, 3, 0, 2, 4]


@pytest.mark.slow
def test_listwise_prompt_carries_the_examples_as_earlier_turns(smollm_engine):
    from finrag.models.rerankers import LLMListwiseRanker, listwise_examples

    examples = listwise_examples()
    ranker = LLMListwiseRanker(smollm_engine, max_passage_chars=20, examples=examples)
    messages = ranker.build_messages("q?", ["first passage text here", "second"])
    assert [m["role"] for m in messages] == ["system"] + ["user", "assistant"] * len(examples) + [
        "user"]
    assert messages[-1]["content"] == "Question: q?\n\nPassages:\n[1] first passage text h\n[2] second"
    assert messages[2]["content"] == '{"ranking": %s}' % examples[0]["ranking"]
    with pytest.raises(ValueError, match="step"):
        LLMListwiseRanker(smollm_engine, window=4, step=5)


def test_listwise_examples_are_tune_questions_with_a_full_ranking():
    import json
    from pathlib import Path

    from finrag.benchmarks.splits import split_of
    from finrag.models.rerankers import listwise_examples

    questions = need_shared(FINANCEBENCH / "questions.dev.jsonl")
    split = split_of([json.loads(line) for line in questions.read_text().splitlines() if line])
    examples = listwise_examples()
    assert len(examples) >= 1
    assert {split[e["id"]] for e in examples} == {"tune"}  # no scored question is shown
    assert all(sorted(e["ranking"]) == list(range(1, len(e["passages"]) + 1)) for e in examples)


@pytest.mark.slow
def test_listwise_ranker_slides_its_window_and_counts_tokens(smollm_engine):
    from finrag.models.rerankers import LLMListwiseRanker

    ranker = LLMListwiseRanker(smollm_engine, window=4, step=2, max_passage_chars=120)
    passages = PASSAGES + ["Net income rose to $5.3 billion.", "Capital spending was $1.6 billion."]
    scores = ranker.score(QUERY, passages)
    assert sorted(scores) == [float(v) for v in range(1, len(passages) + 1)]  # a full order
    usage = ranker.last_usage
    assert usage["calls"] == 2  # windows [2, 6) then [0, 4)
    assert len(usage["prompt_tokens_each"]) == len(usage["completion_tokens_each"]) == 2
    assert usage["prompt_tokens"] == sum(usage["prompt_tokens_each"]) > 0
    assert all(n > 0 for n in usage["completion_tokens_each"])
    assert ranker.score(QUERY, [RELEVANT]) == [1.0] and ranker.last_usage["calls"] == 0


@pytest.mark.slow
def test_listwise_ranker_as_a_profile_role_and_cascade_stage(maxsim, smollm_engine):
    from finrag.models.profiles import RoleSpec, load_config, load_reranker
    from finrag.models.rerankers import LLMListwiseRanker

    prof = load_config().active("cpu")
    roles = dict(prof.roles, large_reranker=RoleSpec(kind="llm-listwise",
                                                     model=smollm_engine.model_id))
    ranker = load_reranker(prof.model_copy(update={"roles": roles}), "large_reranker",
                           engine=smollm_engine)
    assert isinstance(ranker, LLMListwiseRanker) and ranker.examples
    result = Cascade(maxsim, ranker, light_top_n=4, large_top_m=3, keep_k=2).rerank(
        QUERY, [(f"p{i}", p) for i, p in enumerate(PASSAGES)])
    large = result.stage("large")
    assert large.n_in == 3 and large.usage["calls"] == 1
    assert sorted(large.ids) == sorted(result.stage("light").ids[:3])


# --- cross-encoder -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory):
    """A randomly initialised BERT cross-encoder with MiniLM's tokenizer, built offline."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from finrag.models.weights import MINILM_L6_V2, resolve_packaged

    tokenizer = AutoTokenizer.from_pretrained(resolve_packaged(MINILM_L6_V2))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, num_labels=1,
                        max_position_embeddings=512)
    folder = tmp_path_factory.mktemp("tiny-cross-encoder")
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.parametrize("backend", ["auto", "transformers"])
def test_cross_encoder_scores(tiny_cross_encoder, backend):
    reranker = CrossEncoderReranker(tiny_cross_encoder, batch_size=2, max_length=64,
                                    backend=backend, device="cpu")
    if backend == "auto":
        has_flag = importlib.util.find_spec("FlagEmbedding") is not None
        assert reranker.backend == ("flag" if has_flag else "transformers")
    scores = reranker.score(QUERY, PASSAGES + [RELEVANT * 20])  # the last one is truncated
    assert len(scores) == 5 and all(isinstance(s, float) and math.isfinite(s) for s in scores)
    assert reranker.score(QUERY, PASSAGES + [RELEVANT * 20]) == scores
    assert reranker.score(QUERY, []) == []


def test_cross_encoder_backends_agree(tiny_cross_encoder):
    pytest.importorskip("FlagEmbedding")
    flag = CrossEncoderReranker(tiny_cross_encoder, backend="flag", device="cpu")
    plain = CrossEncoderReranker(tiny_cross_encoder, backend="transformers", device="cpu")
    assert flag.score(QUERY, PASSAGES) == pytest.approx(plain.score(QUERY, PASSAGES), abs=1e-5)


# --- adaptive cutoff -----------------------------------------------------------------------

def test_adaptive_cutoff_cliff():
    # normalised [1, .5, .45, 0]: the 0.5 drop after the first item stops it there
    assert adaptive_cutoff([1.0, 0.5, 0.45, 0.0]) == 1
    # normalised [1, .9, .8, .3, .2, 0]: cumulative would want 3, the cliff is after 3 anyway
    assert adaptive_cutoff([10, 9, 8, 3, 2, 0], cumulative=0.9) == 3


def test_adaptive_cutoff_cumulative():
    # normalised [1, .95, .9, .85, .8, .75, 0] sum 5.25; 55% = 2.8875: 2.85 after three items,
    # 3.7 after four
    scores = [1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.0]
    assert adaptive_cutoff(scores) == 4
    assert adaptive_cutoff(scores, cumulative=0.8) == 5  # 4.2 -> 4.5 after five


def test_adaptive_cutoff_edges():
    assert adaptive_cutoff([]) == 0
    assert adaptive_cutoff([0.3]) == 1
    assert adaptive_cutoff([0.7] * 10) == 6  # all equal: each counts 1, 55% of 10 -> 6
    assert adaptive_cutoff([0.7] * 10, max_keep=4) == 4
    assert adaptive_cutoff([1.0, 0.0], min_keep=2) == 2
    assert adaptive_cutoff([1.0, 0.0], min_keep=5) == 2  # never more than there are
    # raw negative logits: normalised [1, .98, .96, .94, 0] would keep 3
    assert adaptive_cutoff([-2.0, -2.02, -2.04, -2.06, -3.0]) == 3
    assert adaptive_cutoff([-2.0, -2.02, -2.04, -2.06, -3.0], max_keep=2) == 2


# --- cascade -------------------------------------------------------------------------------

class KeywordReranker:
    """A fake reranker: the number of query words in the passage (plus a tiny tie-breaker)."""

    def __init__(self, name):
        self.name = self.model_id = name
        self.seen: list[int] = []

    def score(self, query, passages):
        self.seen.append(len(passages))
        words = query.lower().split()
        return [sum(w in p.lower() for w in words) - 0.001 * len(p) for p in passages]


CANDIDATES = [(f"c{i}", text) for i, text in enumerate([
    "nothing here", "revenue", "revenue growth 2018", "net revenue growth in 2018 for 3M",
    "growth", "unrelated text about weather", "3M revenue", "2018",
])]
QUERY_WORDS = "3M net revenue growth 2018"


def test_cascade_both_stages():
    light, large = KeywordReranker("light"), KeywordReranker("large")
    cascade = Cascade(light, large, light_top_n=7, large_top_m=4, keep_k=3)
    result = cascade.rerank(QUERY_WORDS, CANDIDATES)
    assert light.seen == [7] and large.seen == [4]  # c7 never entered
    lit, big, cut = (result.stage(s) for s in ("light", "large", "cutoff"))
    assert (lit.n_in, lit.n_out, big.n_in, big.n_out, cut.n_in) == (7, 4, 4, 4, 4)
    assert lit.ids[:4] == ["c3", "c2", "c6", "c4"] and len(lit.ids) == 7
    assert lit.scores == sorted(lit.scores, reverse=True)
    assert set(big.ids) == set(lit.ids[:4]) and big.ids[0] == "c3"
    assert result.ids == cut.ids and result.ids[0] == "c3" and 1 <= len(result.ids) <= 3
    assert cut.n_out == len(result.ids) and result.scores == big.scores[:len(result.ids)]
    for rec in result.stages:
        assert rec.seconds >= 0 and rec.cpu_seconds >= 0
    assert "c7" not in lit.ids


def test_cascade_single_stage():
    light_only = Cascade(KeywordReranker("light"), None, light_top_n=8, large_top_m=3, keep_k=5)
    result = light_only.rerank(QUERY_WORDS, CANDIDATES)
    assert [s.stage for s in result.stages] == ["light", "cutoff"]
    assert result.stage("cutoff").n_in == 3 and result.ids[0] == "c3"

    large = KeywordReranker("large")
    large_only = Cascade(None, large, light_top_n=8, large_top_m=5, keep_k=5)
    result = large_only.rerank(QUERY_WORDS, CANDIDATES)
    assert [s.stage for s in result.stages] == ["large", "cutoff"]
    assert large.seen == [5] and set(result.stage("large").ids) == {f"c{i}" for i in range(5)}
    assert result.ids[0] == "c3"

    with pytest.raises(ValueError):
        Cascade(None, None)
    assert Cascade(KeywordReranker("l"), None).rerank("q", []).ids == []


@pytest.mark.slow
def test_cascade_with_real_rerankers(maxsim, smollm_engine):
    llm = LLMRelevanceScorer(smollm_engine, max_passage_chars=300)
    cascade = Cascade(maxsim, llm, light_top_n=4, large_top_m=2, keep_k=2)
    result = cascade.rerank(QUERY, [(f"p{i}", p) for i, p in enumerate(PASSAGES)])
    assert result.stage("light").ids[0] == "p1"
    large = result.stage("large")
    assert large.n_in == 2 and large.usage["calls"] == 2 and large.usage["prompt_tokens"] > 0
    assert large.model_id == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert 1 <= len(result.ids) <= 2
