"""The retrieval stages the systems are built from, in the order a question meets them:
route, expand, search (hybrid, then the filings' table records and statement pages), rerank
(the cascade, with k-reciprocal refinement), and the context blocks. Each takes the
``Pipeline`` (its components, settings and caches) and the answer's ``Run``, which records
every stage's candidates and time."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from finrag.retrieval.answer import LLMCall, Routing
from finrag.retrieval.facts.classify import statements_named
from finrag.retrieval.facts.statements import statement_pages
from finrag.retrieval.store.fusion import rrf
from finrag.retrieval.store.index import Hit
from finrag.retrieval.store.neighbours import k_reciprocal_scores
from finrag.retrieval.store.query import normalize_query
from finrag.retrieval.store.tables import TableSearch
from finrag.retrieval.systems.components import SearchIndex
from finrag.retrieval.systems.context import Block, build_blocks, truncate_to_tokens
from finrag.retrieval.systems.run import Run, bound
from finrag.retrieval.systems.sections import section_pages, sections_named

if TYPE_CHECKING:
    from finrag.retrieval.systems.pipelines import Pipeline


def route(pipe: Pipeline, run: Run) -> Routing:
    """The question's routing (computed once per pipeline), its cost charged to this answer."""
    expand = run.answer.system in ("hdrr", "hdrr_text") and pipe.settings.query_expansion
    routing = pipe.route(run.answer.query, expand)
    run.answer.routing = routing
    run.answer.calls.extend(routing.usage)
    run.add_time("route", routing.latency_ms or 0.0)
    return routing


def expansion(pipe: Pipeline, run: Run, routing: Routing) -> tuple[str, list[str]] | None:
    """The query expansion (``query_expansion``): (passage, keywords). From the router
    LLM's call when routing or the facts route made one (one call per question, not two),
    else one call of its own, made once per pipeline and charged to every answer that uses
    it. None when the option is off or the call failed (the search goes on without it)."""
    if not pipe.settings.query_expansion:
        return None
    extracted = routing.extracted or {}
    source, found = "router call", None
    if extracted.get("passage") is not None:
        found = extracted["passage"], list(extracted.get("keywords") or [])
    elif run.expansion is not None:
        found = run.expansion
    else:
        question, source = run.answer.query, "expansion call"
        cached = pipe.expansions.get(question)
        if cached is None:
            try:
                output, call = pipe.router.expand(question)
            except Exception as err:
                run.answer.retrieved["expansion"] = [
                    {"source": "failed", "error": f"{type(err).__name__}: {str(err)[:200]}"}]
                return None
            cached = pipe.expansions[question] = (output.passage, list(output.keywords), call)
            bound(pipe.expansions)
        passage, keywords, call = cached
        run.answer.calls.append(call)
        run.add_time("expand", call.latency_ms)
        found = passage, keywords
    run.answer.retrieved["expansion"] = [{"source": source, "passage": found[0],
                                          "keywords": found[1]}]
    return found


def search(pipe: Pipeline, run: Run, index: SearchIndex, query: str, doc_ids: list[str] | None,
           fts_extra: str = "", dense_query: str | None = None) -> list[Hit]:
    """Hybrid search: FTS5 and dense candidates fused by RRF (scoped to ``doc_ids``)."""
    s = pipe.settings
    with run.stage("embed_query"):
        vector = pipe.embedder.encode([dense_query or query])[0]
    run.query_vector = vector
    with run.stage("search"):
        hits = index.search(f"{query} {fts_extra}".strip(), vector, k=s.fts_k + s.dense_k,
                            doc_ids=doc_ids, fts_k=s.fts_k, dense_k=s.dense_k, rrf_k=s.rrf_k,
                            fts_weighted=s.fts_weighted)
    run.record("fused", hits)
    return hits


def with_tables(pipe: Pipeline, run: Run, index: SearchIndex, query: str, doc_ids: list[str],
                hits: list[Hit]) -> list[Hit]:
    """The filings' best table records (JSON rows) fused into the candidates by RRF."""
    table_search = pipe.table_searches.setdefault(id(index), TableSearch(index.catalog))
    with run.stage("search_tables"):
        found = [t for d in doc_ids
                 for t in table_search.search(query, d, pipe.settings.table_records)]
    tables = {rec.id: Hit(rec.id, rec.doc_id, rec.page, rec.page, score, 0, rec.text)
              for rec, score in found}
    run.table_texts.update({i: h.text for i, h in tables.items()})
    by_id = {h.chunk_id: h for h in hits} | tables
    fused = rrf([[h.chunk_id for h in hits], list(tables)], k=pipe.settings.rrf_k)
    out = []
    for rank, (cid, score) in enumerate(fused, start=1):
        h = by_id[cid]
        h.rank, h.score = rank, score
        out.append(h)
    run.record("tables", list(tables.values()))
    return out


def with_statements(pipe: Pipeline, run: Run, index: SearchIndex, query: str,
                    doc_ids: list[str], hits: list[Hit]
                    ) -> tuple[list[Hit], list[tuple[str, int]]]:
    """The routed filings' pages of the primary statements the question reads: their
    chunks join the candidates (room is kept for them in the light stage's pool).
    Returns the candidates and the (filing, page) pairs in the order the question reads
    the statements."""
    with run.stage("statements"):
        pages = _pages_of(index, doc_ids, statements_named(query, pipe.facts.concepts),
                          pipe.statement_page_kinds,
                          lambda texts: {n: [k] for n, k in statement_pages(texts).items()})
        return _with_pages(pipe, run, index, doc_ids, hits, pages, "statements"), pages


def with_sections(pipe: Pipeline, run: Run, index: SearchIndex, query: str,
                  doc_ids: list[str], hits: list[Hit]
                  ) -> tuple[list[Hit], list[tuple[str, int]]]:
    """The routed filings' pages where the sections the question asks about open (legal
    proceedings, segments, risk factors, customer concentration: ``sections``), joined to
    the candidates like the statement pages; with the (filing, page) pairs in the order the
    question names the sections."""
    with run.stage("sections"):
        pages = _pages_of(index, doc_ids, sections_named(query), pipe.section_page_kinds,
                          section_pages)
        return _with_pages(pipe, run, index, doc_ids, hits, pages, "sections"), pages


def _pages_of(index: SearchIndex, doc_ids: list[str], kinds: list[str], cache: dict,
              find) -> list[tuple[str, int]]:
    """The (filing, page) pairs of ``doc_ids`` where each of ``kinds`` opens, in the order of
    ``kinds``: ``find(pages) -> {page: [kinds]}`` works out a filing's once, kept in
    ``cache``."""
    pages: list[tuple[str, int]] = []
    for doc_id in doc_ids if kinds else []:
        key = (id(index), doc_id)
        if key not in cache:
            cache[key] = find(index.catalog.pages(doc_id))
            bound(cache)
        found = cache[key]
        pages += [(doc_id, n) for kind in kinds for n in sorted(found) if kind in found[n]]
    return pages


def _with_pages(pipe: Pipeline, run: Run, index: SearchIndex, doc_ids: list[str],
                hits: list[Hit], pages: list[tuple[str, int]], stage: str) -> list[Hit]:
    """``hits`` with the chunks of ``pages`` they lack, room kept for them in the light
    stage's pool; recorded as ``stage``."""
    have = {h.chunk_id for h in hits}
    extra = [Hit(c.chunk_id, c.doc_id, c.first_page, c.last_page, 0.0, 0, c.text)
             for doc_id in doc_ids
             for c in index.catalog.page_chunks(doc_id, [n for d, n in pages if d == doc_id])
             if c.chunk_id not in have]
    if not extra:
        return hits
    hits = hits[:max(pipe.profile.cascade.light_top_n - len(extra), 0)] + extra
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


def refiner(pipe: Pipeline, run: Run, index: SearchIndex):
    """The k-reciprocal refinement of the light stage (None when the profile has it off)."""
    s = pipe.settings
    if not s.k_reciprocal or run.query_vector is None:
        return None

    def refine(ids: list, scores: list[float]) -> list[float]:
        got, vecs = index.catalog.vectors(ids, dim=index.settings.dim)
        row = {int(i): n for n, i in enumerate(got)}
        missing = [i for i in ids if int(i) not in row]  # table records: embedded now
        if missing:
            extra = pipe.embedder.encode([run.table_texts[i] for i in missing])
            vecs = np.vstack([vecs, extra]) if len(vecs) else extra
            row |= {int(i): len(got) + n for n, i in enumerate(missing)}
        return k_reciprocal_scores(run.query_vector, vecs[[row[int(i)] for i in ids]],
                                   scores, k1=s.k_reciprocal_k1, lam=s.k_reciprocal_lambda)
    return refine


def rerank(pipe: Pipeline, run: Run, query: str, hits: list[Hit],
           refine=None) -> tuple[list[Hit], list[Hit]]:
    """The light → large cascade: (all candidates in their final order, the kept ones)."""
    if not hits or pipe.cascade is None:
        return hits, hits[: pipe.profile.cascade.keep_k]
    by_id = {h.chunk_id: h for h in hits}
    result = pipe.cascade.rerank(query, [(h.chunk_id, h.text) for h in hits], refine=refine)
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


def retrieve(pipe: Pipeline, run: Run, index: SearchIndex, query: str,
             doc_ids: list[str] | None = None, fts_extra: str = "",
             passage: str | None = None) -> list[Hit]:
    """Search, tables, statements and rerank: the kept chunks. ``passage``: the query
    expansion's hypothetical passage, embedded for the dense side (with the question or
    alone, ``expansion_dense``); the rerankers see the question."""
    if pipe.settings.normalize_query:
        query = normalize_query(query)
    dense = None
    if passage:
        dense = passage if pipe.settings.expansion_dense == "passage" else f"{query}\n{passage}"
    hits = search(pipe, run, index, query, doc_ids, fts_extra, dense)
    if pipe.settings.table_records and doc_ids:
        hits = with_tables(pipe, run, index, f"{query} {fts_extra}", doc_ids, hits)
    pages: list[tuple[str, int]] = []
    if pipe.settings.statement_pages and doc_ids:
        hits, pages = with_statements(pipe, run, index, query, doc_ids, hits)
    sections: list[tuple[str, int]] = []
    if pipe.settings.section_pages and doc_ids:
        hits, sections = with_sections(pipe, run, index, query, doc_ids, hits)
    ranked, kept = rerank(pipe, run, query, hits, refiner(pipe, run, index))
    if pages:
        ranked, kept = pages_first(pages, pipe.settings.statement_pages, ranked, kept)
    if sections:  # what the question asks to find leads what it reads figures from
        ranked, kept = pages_first(sections, pipe.settings.section_pages, ranked, kept)
    run.record("ranked", ranked, [None] * len(ranked))
    run.record("kept", kept, [None] * len(kept))
    return kept


def blocks(pipe: Pipeline, hits: list[Hit], budget: int | None = None,
           index: SearchIndex | None = None) -> list[Block]:
    """The context: kept chunks as blocks within ``budget`` tokens (the profile's context
    budget by default), with their pages' tables when ``context_tables`` is on."""
    tables = None
    if pipe.settings.context_tables:
        catalog = (index or pipe.index).catalog

        def tables(doc_id: str, first: int, last: int) -> list[dict]:
            return [t for page in range(first, last + 1) for t in catalog.tables(doc_id, page)]
    return build_blocks(hits, pipe.count_tokens, budget or pipe.settings.context_tokens, tables)


def document_parts(pipe: Pipeline, doc_id: str) -> list[Block]:
    """A whole filing as consecutive parts of at most ``sfr_part_tokens`` tokens each. The
    text comes from the catalog's pages of a catalog document — never from a file path."""
    record = pipe.index.catalog.document(doc_id)
    if record is None:
        raise KeyError(f"unknown document {doc_id!r}")
    budget = pipe.settings.sfr_part_tokens
    parts: list[Block] = []
    texts: list[str] = []
    first = used = 0

    def flush(last: int) -> None:
        if texts:
            parts.append(Block(doc_id, first, last, " ".join(texts), used, None))

    last = 0
    for number, text in pipe.index.catalog.pages(doc_id):
        piece = f"[p.{number}] {' '.join(text.split())}"
        tokens = pipe.count_tokens(piece)
        if tokens > budget:  # one page longer than a part: keep what fits
            piece = truncate_to_tokens(piece, budget, pipe.count_tokens)
            tokens = pipe.count_tokens(piece)
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
