"""Query expansion (HyDE, the ``query_expansion`` profile option): one grammar-constrained call
writes a hypothetical filing passage and keywords, merged into the router LLM's call when that
call is made anyway; the tiny profile's real model and the demo index."""

import json

import pytest

from finrag.retrieval.routing.schema import (EXPANSION_EXAMPLES, ROUTER_EXAMPLES, ExpandedRouterOutput,
                                  QueryExpansion, RouterOutput, expansion_messages,
                                  router_messages)


# the schema and prompts -------------------------------------------------------------------
def test_the_expanded_router_output_is_the_router_output_then_the_passage():
    fields = list(ExpandedRouterOutput.model_fields)
    assert fields[:-1] == list(RouterOutput.model_fields) and fields[-1] == "passage"
    assert list(QueryExpansion.model_fields) == ["passage", "keywords"]
    for schema in (ExpandedRouterOutput, QueryExpansion):
        with pytest.raises(ValueError):  # the grammar's bound is checked after the fact too
            schema.model_validate({**json.loads(ROUTER_EXAMPLES[0][1]), "passage": "x" * 401}
                                  if schema is ExpandedRouterOutput
                                  else {"passage": "x" * 401, "keywords": []})


def test_every_few_shot_answer_fits_its_schema_and_the_question_comes_last():
    plain, expanded = router_messages("Q?"), router_messages("Q?", expand=True)
    assert "passage" not in plain[0]["content"] and "- passage:" in expanded[0]["content"]
    answers = [m["content"] for m in expanded if m["role"] == "assistant"]
    assert len(answers) == len(ROUTER_EXAMPLES)
    for (q, _), answer in zip(EXPANSION_EXAMPLES, answers):
        out = ExpandedRouterOutput.model_validate_json(answer)
        assert out.passage == json.loads(dict(EXPANSION_EXAMPLES)[q])["passage"]
    alone = expansion_messages(" What was capex?  ")
    for m in alone:
        if m["role"] == "assistant":
            QueryExpansion.model_validate_json(m["content"])
    assert alone[-1] == {"role": "user", "content": "What was capex?"}
    assert expanded[-1] == plain[-1] == {"role": "user", "content": "Q?"}


# the pipeline -----------------------------------------------------------------------------
class _Recording:
    """The real embedder, with the texts it was asked to encode kept."""

    def __init__(self, inner):
        self.inner, self.texts = inner, []

    def encode(self, texts, *args, **kwargs):
        self.texts += list(texts)
        return self.inner.encode(texts, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.fixture(scope="module")
def tiny(demo_index):
    from finrag.retrieval.systems.pipelines import Pipeline

    pipe = Pipeline.load(demo_index, profile="tiny")
    yield pipe
    pipe.close()


def _pipeline(tiny, **settings):
    from finrag.retrieval.systems.pipelines import Pipeline

    profile = tiny.profile.model_copy(update={"pipeline": tiny.settings.model_copy(
        update={"facts_routes": False, **settings})})
    return Pipeline(tiny.index, _Recording(tiny.embedder), profile, light=tiny.light,
                    engines=tiny._engines)


ROUTED = "What was Lumenfield Software's net income in FY2023?"  # the rules route it alone
UNROUTED = "What was net income in fiscal 2023?"  # no company: the router LLM is called


@pytest.mark.slow
def test_option_off_makes_no_expansion_call(tiny):
    pipe = _pipeline(tiny)
    answer = pipe.answer(ROUTED, "hdrr", generate=False)
    assert answer.routing.routed and not answer.routing.llm_called
    assert answer.calls == [] and "expansion" not in answer.retrieved
    assert pipe.embedder.texts[-1] == ROUTED  # the question alone is embedded
    assert pipe.router.stats["expansion_calls"] == 0


@pytest.mark.slow
def test_the_deterministic_route_adds_the_expansion_call_alone(tiny):
    pipe = _pipeline(tiny, query_expansion=True)
    answer = pipe.answer(ROUTED, "hdrr", generate=False)
    assert answer.routing.routed and not answer.routing.llm_called
    [call] = answer.calls
    assert call.role == "expansion" and call.prompt_tokens > 0 and call.completion_tokens > 0
    [expansion] = answer.retrieved["expansion"]
    assert expansion["source"] == "expansion call" and isinstance(expansion["keywords"], list)
    assert pipe.embedder.texts[-1] == f"{ROUTED}\n{expansion['passage']}"
    assert answer.timings_ms["expand"] == pytest.approx(call.latency_ms, abs=1e-3)
    assert answer.retrieved["kept"]
    # made once per pipeline, its cost charged to every answer that uses it
    again = pipe.answer(ROUTED, "hdrr", generate=False)
    assert again.calls == [call] and pipe.router.stats["expansion_calls"] == 1
    # the passage alone on the dense side
    alone = _pipeline(tiny, query_expansion=True, expansion_dense="passage")
    answer = alone.answer(ROUTED, "hdrr", generate=False)
    assert alone.embedder.texts[-1] == answer.retrieved["expansion"][0]["passage"]


@pytest.mark.slow
def test_when_the_router_llm_runs_its_one_call_carries_the_expansion(tiny):
    """Two calls to the tiny profile's router LLM on transformers, each a JSON reply
    constrained to the router's schema, the first also writing the expansion's passage (about
    4 s on two cores)."""
    pipe = _pipeline(tiny, query_expansion=True)
    answer = pipe.answer(UNROUTED, "hdrr", generate=False)
    assert answer.routing.llm_called
    [call] = answer.calls  # one call, not two
    assert call.role == "router"
    assert pipe.router.stats["llm_calls"] == 1 and pipe.router.stats["expansion_calls"] == 0
    [expansion] = answer.retrieved["expansion"]
    assert expansion["source"] == "router call"
    assert expansion["passage"] == answer.routing.extracted["passage"]
    assert expansion["passage"] == answer.routing.extracted["llm"]["passage"]
    assert pipe.embedder.texts[-1] == f"{UNROUTED}\n{expansion['passage']}"
    # off: the same question's router call has no passage, and nothing else is called
    off = _pipeline(tiny)
    plain = off.answer(UNROUTED, "hdrr", generate=False)
    assert [c.role for c in plain.calls] == ["router"]
    assert "passage" not in plain.routing.extracted and "expansion" not in plain.retrieved
