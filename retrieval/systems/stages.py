"""The retrieval stages the systems are built from, in the order a question meets them: route,
embed, search (hybrid, then the pages a question leads with), rerank (the cascade), and the
context blocks. Each takes the components and settings it uses and the answer's ``Run``,
which records every stage's candidates and time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from finrag.retrieval.answer import LLMCall, Routing
from finrag.retrieval.facts.classify import statements_named
from finrag.retrieval.facts.statements import statement_pages
from finrag.retrieval.store.index import Hit
from finrag.retrieval.systems.cascade import Cascade
from finrag.retrieval.systems.components import (CatalogReader, Components, QueryEmbedder,
                                                 SearchIndex)
from finrag.retrieval.systems.context import Block, build_blocks, truncate_to_tokens
from finrag.retrieval.systems.run import Run
from finrag.retrieval.systems.sections import section_pages, sections_named


def route(c: Components, run: Run) -> Routing:
    """The question's routing (computed once per view), its cost charged to this answer."""
    routing = c.caches.route(run.answer.query, lambda q: c.router().route(q))
    run.answer.routing = routing
    run.answer.calls.extend(routing.usage)
    run.add_time("route", routing.latency_ms or 0.0)
    return routing


def embed(embedder: QueryEmbedder, run: Run, text: str):
    """The query's embedding: once per question, whatever number of filings it searches."""
    with run.stage("embed_query"):
        return embedder.encode([text])[0]


def search(index: SearchIndex, c: Components, run: Run, query: str, vector,
           doc_ids: list[str] | None, fts_extra: str = "") -> list[Hit]:
    """Hybrid search: FTS5 and dense candidates fused by RRF (scoped to ``doc_ids``)."""
    s = c.settings
    with run.stage("search"):
        hits = index.search(f"{query} {fts_extra}".strip(), vector, k=s.fts_k + s.dense_k,
                            doc_ids=doc_ids, fts_k=s.fts_k, dense_k=s.dense_k, rrf_k=s.rrf_k)
    run.record("fused", hits)
    return hits


# --- the pages a question leads with ---------------------------------------------------------
@dataclass(frozen=True)
class PageLead:
    """Pages of a routed filing that a question reads first: ``named(question)`` gives the
    kinds it asks about (statements, sections), ``find(pages)`` where each kind opens in a
    filing (``{page: [kinds]}``); the best-ranked chunk of the first ``count`` leads."""

    stage: str
    count: int
    named: Callable[[str], list[str]]
    find: Callable[[list[tuple[int, str]]], dict[int, list[str]]]


def page_leads(c: Components) -> list[PageLead]:
    """The leads the settings turn on: the primary statements a question reads
    (``statement_pages``), the sections it asks about (``section_pages``: legal proceedings,
    segments, risk factors, customer concentration)."""
    leads = [PageLead("statements", c.settings.statement_pages,
                      lambda q: statements_named(q, c.facts().concepts),
                      lambda texts: {n: [k] for n, k in statement_pages(texts).items()}),
             PageLead("sections", c.settings.section_pages, sections_named, section_pages)]
    return [lead for lead in leads if lead.count > 0]


def lead_pages(lead: PageLead, c: Components, index: SearchIndex, query: str,
               doc_ids: list[str]) -> list[tuple[str, int]]:
    """The (filing, page) pairs of ``doc_ids`` where each kind the question names opens, in
    the order it names them."""
    kinds = lead.named(query)
    pages: list[tuple[str, int]] = []
    for doc_id in doc_ids if kinds else []:
        found = c.caches.page_kinds(lead.stage, index, doc_id, lead.find)
        pages += [(doc_id, n) for kind in kinds for n in sorted(found) if kind in found[n]]
    return pages


def with_pages(catalog: CatalogReader, light_top_n: int, run: Run, doc_ids: list[str],
               hits: list[Hit], pages: list[tuple[str, int]], stage: str) -> list[Hit]:
    """``hits`` with the chunks of ``pages`` they lack, room kept for them in the light
    stage's pool; recorded as ``stage``."""
    have = {h.chunk_id for h in hits}
    extra = [Hit(ch.chunk_id, ch.doc_id, ch.first_page, ch.last_page, 0.0, 0, ch.text)
             for doc_id in doc_ids
             for ch in catalog.page_chunks(doc_id, [n for d, n in pages if d == doc_id])
             if ch.chunk_id not in have]
    if not extra:
        return hits
    hits = hits[:max(light_top_n - len(extra), 0)] + extra
    for rank, h in enumerate(hits, start=1):
        h.rank = rank
    run.record(stage, extra)
    return hits


def pages_first(pages: list[tuple[str, int]], count: int, ranked: list[Hit],
                kept: list[Hit]) -> tuple[list[Hit], list[Hit]]:
    """The best-ranked chunk of each of the first ``count`` of ``pages`` leads the ranking
    and the kept chunks (as many kept as the cutoff chose, or as lead)."""
    lead: list[Hit] = []
    for doc_id, page in pages:
        if len(lead) == count:
            break
        best = next((h for h in ranked if h.doc_id == doc_id
                     and h.first_page <= page <= h.last_page), None)
        if best is not None and best not in lead:
            lead.append(best)
    ids = {h.chunk_id for h in lead}
    ranked = lead + [h for h in ranked if h.chunk_id not in ids]
    kept = (lead + [h for h in kept if h.chunk_id not in ids])[:max(len(kept), len(lead))]
    return ranked, kept


# --- rerank --------------------------------------------------------------------------------------
def rerank(cascade: Cascade | None, keep_k: int, run: Run, query: str,
           hits: list[Hit]) -> tuple[list[Hit], list[Hit]]:
    """The light → large cascade: (all candidates in their final order, the kept ones)."""
    if not hits or cascade is None:
        return hits, hits[:keep_k]
    by_id = {h.chunk_id: h for h in hits}
    result = cascade.rerank(query, [(h.chunk_id, h.text) for h in hits])
    order: list[int] = []
    for st in result.stages:
        run.add_time(f"rerank_{st.stage}", st.seconds * 1000)
        if st.stage == "cutoff":
            continue
        run.record(st.stage, [by_id[i] for i in st.ids], st.scores)
        scored = set(st.ids)
        order = list(st.ids) + [i for i in order if i not in scored]
        if st.usage:
            each = st.usage.get("prompt_tokens_each") or []
            out = st.usage.get("completion_tokens_each") or [0] * len(each)
            for n, m in zip(each, out):
                run.answer.calls.append(LLMCall("large_reranker", st.model_id or "", n, m,
                                                round(st.seconds * 1000 / len(each), 3)))
    placed = set(order)
    order += [h.chunk_id for h in hits if h.chunk_id not in placed]
    return [by_id[i] for i in order], [by_id[i] for i in result.ids]


def retrieve(c: Components, run: Run, index: SearchIndex, query: str, vector,
             doc_ids: list[str] | None = None, fts_extra: str = "") -> list[Hit]:
    """Search, the pages the question leads with (routed filings only) and rerank: the kept
    chunks. ``vector``: the query's embedding (``embed``)."""
    hits = search(index, c, run, query, vector, doc_ids, fts_extra)
    leads = []
    for lead in page_leads(c) if doc_ids else []:
        with run.stage(lead.stage):
            pages = lead_pages(lead, c, index, query, doc_ids)
            hits = with_pages(index.catalog, c.cascade_settings.light_top_n, run, doc_ids,
                              hits, pages, lead.stage)
        leads.append((lead, pages))
    ranked, kept = rerank(c.cascade, c.cascade_settings.keep_k, run, query, hits)
    # each lead in turn: what a question asks to find leads what it reads figures from
    for lead, pages in leads:
        if pages:
            ranked, kept = pages_first(pages, lead.count, ranked, kept)
    run.record("ranked", ranked, [None] * len(ranked))
    run.record("kept", kept, [None] * len(kept))
    return kept


# --- the context ---------------------------------------------------------------------------------
def blocks(c: Components, hits: list[Hit], budget: int | None = None) -> list[Block]:
    """The context: kept chunks as blocks within ``budget`` tokens (the profile's context
    budget by default)."""
    return build_blocks(hits, c.count_tokens, budget or c.settings.context_tokens)


def document_parts(catalog: CatalogReader, count_tokens: Callable[[str], int], budget: int,
                   doc_id: str) -> list[Block]:
    """A whole filing as consecutive parts of at most ``budget`` tokens each. The text comes
    from the catalog's pages of a catalog document — never from a file path."""
    if catalog.document(doc_id) is None:
        raise KeyError(f"unknown document {doc_id!r}")
    parts: list[Block] = []
    texts: list[str] = []
    first = used = 0

    def flush(last: int) -> None:
        if texts:
            parts.append(Block(doc_id, first, last, " ".join(texts), used, None))

    last = 0
    for number, text in catalog.pages(doc_id):
        piece = f"[p.{number}] {' '.join(text.split())}"
        tokens = count_tokens(piece)
        if tokens > budget:  # one page longer than a part: keep what fits
            piece = truncate_to_tokens(piece, budget, count_tokens)
            tokens = count_tokens(piece)
        if used + tokens > budget:
            flush(last)
            texts, used = [], 0
        if not texts:
            first = number
        texts.append(piece)
        used += tokens
        last = number
    flush(last)
    return parts


def interleave_by_doc(retrieved: dict, stages: tuple[str, ...]) -> None:
    """Several filings searched one by one: merge their ranked lists round-robin, so each
    filing's best chunks come first."""
    for stage in stages:
        per_doc: dict[str, list] = {}
        for row in retrieved.get(stage, []):
            per_doc.setdefault(row["doc_id"], []).append(row)
        lists = list(per_doc.values())
        merged = [lst[i] for i in range(max(map(len, lists), default=0))
                  for lst in lists if i < len(lst)]
        retrieved[stage] = merged
