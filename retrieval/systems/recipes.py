"""The systems, each a recipe over the same stages (``retrieval.systems.stages``) that returns
what it found (``retrieval.systems.found``): an answer, the context blocks to generate from, or
the parts of whole filings to map and reduce.

- ``cbr``: hybrid search over the whole corpus → rerank cascade → context.
- ``hdrr``: route → the facts route (an answer, or the facts beside the passages) → hybrid
  search scoped to the routed filings, a rerank pass per filing, a fair share of the context
  budget per filing; CBR when routing falls back.
- ``hdrr_text``: HDRR with the facts route off (the ablation row of what the facts add).
- ``sfr``: route → the whole routed filing(s) as context, in parts when too long for the
  generator (mapped, then the answers that state something reduced).
- ``cbr_meta`` / ``cbr_llmctx``: CBR over the metadata-prefixed (V-A) / LLM-contextualised
  (V-B) index variants.
- ``agentic``: CBR, one LLM verification of the top chunks' company, at most
  ``agentic_max_retries`` entity-anchored retries.

``RECIPES`` is the table of them, by name.
"""

from __future__ import annotations

from typing import Callable

from pydantic import BaseModel, Field

from finrag.models.llm import SamplingParams
from finrag.retrieval.answer import Routing
from finrag.retrieval.systems import stages
from finrag.retrieval.systems.components import Components, SearchIndex
from finrag.retrieval.systems.context import Block, all_blocks, fair_shares, fit, mark_pages
from finrag.retrieval.systems.facts_route import check_facts, facts_route
from finrag.retrieval.systems.found import Answered, Context, Found, Parts
from finrag.retrieval.systems.run import Run, check_fan_out

VARIANT_OF = {"cbr_meta": "meta", "cbr_llmctx": "llmctx"}


def cbr(c: Components, run: Run, index: SearchIndex | None = None) -> Context:
    index = index or c.index
    vector = stages.embed(c.embedder, run, run.answer.query)
    kept = stages.retrieve(c, run, index, run.answer.query, vector)
    return Context(stages.blocks(c, kept))


def variant(c: Components, run: Run) -> Context:
    name = VARIANT_OF[run.answer.system]
    index = c.variants.get(name)
    if index is None:
        raise FileNotFoundError(
            f"system {run.answer.system} needs the {name!r} index variant; build it with "
            f"`finrag ingest PATHS --variant {name} --index DIR` and pass its folder")
    return cbr(c, run, index)


def hdrr(c: Components, run: Run) -> Found:
    routing = stages.route(c, run)
    facts = facts_route(c, run, routing) if c.settings.facts_routes else None
    if isinstance(facts, Answered):
        return facts
    blocks = hdrr_documents(c, run, routing)
    if facts is None:
        return Context(blocks)
    if facts.blocks:  # hybrid: the facts, then the narrative they are checked against
        check_facts(c, run, blocks)
    return Context(facts.blocks + blocks, facts.preface)


def hdrr_text(c: Components, run: Run) -> Context:
    return Context(hdrr_documents(c, run, stages.route(c, run)))


def hdrr_documents(c: Components, run: Run, routing: Routing) -> list[Block]:
    """HDRR's passages: each routed filing searched and reranked on its own (the question
    embedded once), each given a fair share of the context budget."""
    if not routing.routed:
        return cbr(c, run).blocks
    check_fan_out(routing)
    keywords = " ".join((routing.extracted or {}).get("keywords") or [])
    vector = stages.embed(c.embedder, run, run.answer.query)
    kept_per_doc = [stages.retrieve(c, run, c.index, run.answer.query, vector, [d], keywords)
                    for d in routing.doc_ids]
    if len(kept_per_doc) == 1:
        return stages.blocks(c, kept_per_doc[0])
    stages.interleave_by_doc(run.answer.retrieved, ("ranked", "kept"))
    per_doc = [all_blocks(kept, c.count_tokens) for kept in kept_per_doc]
    shares = fair_shares(c.settings.context_tokens, [sum(b.tokens for b in bs) for bs in per_doc])
    return [b for bs, share in zip(per_doc, shares) if share > 0
            for b in fit(bs, share, c.count_tokens)]


def sfr(c: Components, run: Run) -> Context | Parts:
    routing = stages.route(c, run)
    if not routing.routed:
        return cbr(c, run)
    check_fan_out(routing)
    with run.stage("load_document"):
        parts = [p for doc_id in routing.doc_ids
                 for p in stages.document_parts(c.index.catalog, c.count_tokens,
                                                c.settings.sfr_part_tokens, doc_id)]
    run.record("ranked", parts, [None] * len(parts))
    run.record("kept", parts, [None] * len(parts))
    return Parts(parts)


class Verification(BaseModel):
    """Agentic: do the top passages come from the company the question asks about?"""

    question_company: str = Field(max_length=80)
    passages_company: str = Field(max_length=80)
    same_company: bool


_VERIFY_SYSTEM = ("You check retrieved passages. Name the company the question asks about, the "
                  "company the passages come from (the tag before each passage names the "
                  "filing), and whether they are the same company. Reply as JSON.")


def agentic(c: Components, run: Run) -> Context:
    query = run.answer.query
    kept = stages.retrieve(c, run, c.index, query, stages.embed(c.embedder, run, query))
    engine = c.generator()
    attempts = []
    for attempt in range(c.settings.agentic_max_retries + 1):
        shown = kept[: c.settings.verify_chunks]
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
        if attempt == c.settings.agentic_max_retries:
            break
        query = f"{anchor} {run.answer.query}"  # entity-anchored retry
        for stage in ("fused", "light", "large", "ranked", "kept"):
            run.answer.retrieved.pop(stage, None)
        kept = stages.retrieve(c, run, c.index, query, stages.embed(c.embedder, run, query),
                               fts_extra=anchor)
    run.answer.retrieved["agentic"] = attempts
    return Context(stages.blocks(c, kept))


Recipe = Callable[[Components, Run], Found]

# the systems by name, in the order they are listed to users
RECIPES: dict[str, Recipe] = {
    "hdrr": hdrr, "cbr": cbr, "sfr": sfr, "cbr_meta": variant, "cbr_llmctx": variant,
    "agentic": agentic, "hdrr_text": hdrr_text,
}
SYSTEMS = tuple(RECIPES)
