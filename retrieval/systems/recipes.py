"""The systems, each a recipe over the same stages (``retrieval.systems.stages``) that
returns the context blocks its answer is generated from:

- ``cbr``: hybrid search over the whole corpus → rerank cascade → context.
- ``hdrr``: route → the facts route (an answer, or the facts beside the passages) → hybrid
  search scoped to the routed filings, a rerank pass per filing, a fair share of the context
  budget per filing; CBR when routing falls back.
- ``hdrr_text``: HDRR with the facts route off (the ablation row of what the facts add).
- ``sfr``: route → the whole routed filing(s) as context, in parts when too long for the
  generator (the ``Pipeline`` maps the parts, then reduces the answers that state something).
- ``cbr_meta`` / ``cbr_llmctx``: CBR over the metadata-prefixed (V-A) / LLM-contextualised
  (V-B) index variants.
- ``agentic``: CBR, one LLM verification of the top chunks' company, at most
  ``agentic_max_retries`` entity-anchored retries.

``RECIPES`` is the table of them, by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from pydantic import BaseModel, Field

from finrag.models.llm import SamplingParams
from finrag.retrieval.answer import Routing
from finrag.retrieval.systems import stages
from finrag.retrieval.systems.components import SearchIndex
from finrag.retrieval.systems.context import Block, fair_shares, mark_pages
from finrag.retrieval.systems.facts_route import check_facts, facts_route
from finrag.retrieval.systems.run import Run, check_fan_out

if TYPE_CHECKING:
    from finrag.retrieval.systems.pipelines import Pipeline

VARIANT_OF = {"cbr_meta": "meta", "cbr_llmctx": "llmctx"}


def cbr(pipe: Pipeline, run: Run, index: SearchIndex | None = None,
        expansion: tuple[str, list[str]] | None = None) -> list[Block]:
    index = index or pipe.index
    passage, keywords = expansion or (None, [])
    kept = stages.retrieve(pipe, run, index, run.answer.query, None, " ".join(keywords), passage)
    return stages.blocks(pipe, kept, index=index)


def variant(pipe: Pipeline, run: Run) -> list[Block]:
    name = VARIANT_OF[run.answer.system]
    index = pipe.variants.get(name)
    if index is None:
        raise FileNotFoundError(
            f"system {run.answer.system} needs the {name!r} index variant; build it with "
            f"`finrag ingest PATHS --variant {name} --index DIR` and pass its folder")
    return cbr(pipe, run, index)


def hdrr(pipe: Pipeline, run: Run) -> list[Block]:
    routing = stages.route(pipe, run)
    facts = facts_route(pipe, run, routing) if pipe.settings.facts_routes else None
    if run.done:
        return []
    blocks = hdrr_documents(pipe, run, routing)
    if facts is not None:  # hybrid: the facts, then the narrative they are checked against
        check_facts(pipe, run, blocks)
        blocks = [facts, *blocks]
    return blocks


def hdrr_text(pipe: Pipeline, run: Run) -> list[Block]:
    return hdrr_documents(pipe, run, stages.route(pipe, run))


def hdrr_documents(pipe: Pipeline, run: Run, routing: Routing) -> list[Block]:
    """HDRR's passages: each routed filing searched and reranked on its own, each given a
    fair share of the context budget."""
    expansion = stages.expansion(pipe, run, routing)
    if not routing.routed:
        return cbr(pipe, run, expansion=expansion)
    check_fan_out(routing)
    extracted = routing.extracted or {}
    keywords = list(extracted.get("keywords") or [])
    passage = None
    if expansion is not None:
        passage = expansion[0]
        keywords = list(dict.fromkeys(keywords + expansion[1]))
    fts_extra = " ".join(keywords)
    kept_per_doc = [stages.retrieve(pipe, run, pipe.index, run.answer.query, [d], fts_extra,
                                    passage)
                    for d in routing.doc_ids]
    if len(kept_per_doc) == 1:
        return stages.blocks(pipe, kept_per_doc[0])
    stages.interleave_by_doc(run.answer.retrieved, ("ranked", "kept"))
    unlimited = 10**9
    demands = [sum(b.tokens for b in stages.blocks(pipe, kept, unlimited))
               for kept in kept_per_doc]
    shares = fair_shares(pipe.settings.context_tokens, demands)
    return [b for kept, share in zip(kept_per_doc, shares) if share > 0
            for b in stages.blocks(pipe, kept, share)]


def sfr(pipe: Pipeline, run: Run) -> list[Block]:
    routing = stages.route(pipe, run)
    if not routing.routed:
        return cbr(pipe, run)
    check_fan_out(routing)
    with run.stage("load_document"):
        parts = [p for doc_id in routing.doc_ids for p in stages.document_parts(pipe, doc_id)]
    run.parts = True
    run.record("ranked", parts, [None] * len(parts))
    run.record("kept", parts, [None] * len(parts))
    return parts


class Verification(BaseModel):
    """Agentic: do the top passages come from the company the question asks about?"""

    question_company: str = Field(max_length=80)
    passages_company: str = Field(max_length=80)
    same_company: bool


_VERIFY_SYSTEM = ("You check retrieved passages. Name the company the question asks about, the "
                  "company the passages come from (the tag before each passage names the "
                  "filing), and whether they are the same company. Reply as JSON.")


def agentic(pipe: Pipeline, run: Run) -> list[Block]:
    query = run.answer.query
    kept = stages.retrieve(pipe, run, pipe.index, query)
    engine = pipe.engine("generator")
    attempts = []
    for attempt in range(pipe.settings.agentic_max_retries + 1):
        shown = kept[: pipe.settings.verify_chunks]
        passages = "\n\n".join(f"[{h.doc_id} p.{h.first_page}] "
                               f"{mark_pages(h.text, h.first_page)[:600]}" for h in shown)
        messages = [{"role": "system", "content": _VERIFY_SYSTEM},
                    {"role": "user", "content": f"Question: {run.answer.query}\n\n"
                                                f"Passages:\n{passages}"}]
        with run.stage("verify"):
            [(verdict, completion)] = engine.generate_json(
                [messages], Verification, SamplingParams(max_tokens=96))
        run.call("verifier", engine.model_id, completion)
        anchor = verdict.question_company.strip()
        attempts.append({"attempt": attempt, "query": query, "verified": verdict.same_company,
                         "question_company": anchor,
                         "passages_company": verdict.passages_company.strip()})
        if verdict.same_company or not shown or not anchor:
            break
        if attempt == pipe.settings.agentic_max_retries:
            break
        query = f"{anchor} {run.answer.query}"  # entity-anchored retry
        for stage in ("fused", "light", "large", "ranked", "kept"):
            run.answer.retrieved.pop(stage, None)
        kept = stages.retrieve(pipe, run, pipe.index, query, fts_extra=anchor)
    run.answer.retrieved["agentic"] = attempts
    return stages.blocks(pipe, kept)


Recipe = Callable[["Pipeline", Run], list[Block]]

# the systems by name, in the order they are listed to users
RECIPES: dict[str, Recipe] = {
    "hdrr": hdrr, "cbr": cbr, "sfr": sfr, "cbr_meta": variant, "cbr_llmctx": variant,
    "agentic": agentic, "hdrr_text": hdrr_text,
}
SYSTEMS = tuple(RECIPES)
