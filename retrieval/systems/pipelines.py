"""The systems, all wired from the same components (DESIGN.md §5):

- ``cbr``: hybrid search over the whole corpus → rerank cascade → context → generate.
- ``hdrr``: route → hybrid search scoped to the routed filings, a rerank pass per filing, a
  fair share of the context budget per filing; CBR when routing falls back.
- ``sfr``: route → the whole routed filing(s) as context, in parts when too long for the
  generator; each part answered, then the answers that state something read by one more call.
- ``cbr_meta`` / ``cbr_llmctx``: CBR over the metadata-prefixed (V-A) / LLM-contextualised
  (V-B) index variants.
- ``agentic``: CBR, one LLM verification of the top chunks' company, at most
  ``agentic_max_retries`` entity-anchored retries.

``Pipeline.answer(question, system)`` returns an ``Answer``; with ``generate=False`` it stops
after the context is assembled (retrieval evaluation).
"""

from __future__ import annotations

import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from pydantic import BaseModel, Field

from retrieval.answer import FACTS_DOC_ID, Answer, Citation, LLMCall, Routing
from retrieval.systems.context import (NOT_FOUND, Block, answer_messages, build_blocks, cite,
                                       fair_shares, mark_pages, states_nothing,
                                       truncate_to_tokens)
from retrieval.systems.figures import figures_written, unsupported
from retrieval.store.index import Hit, Index
from retrieval.systems.components import (FactsSource, LLMEngine, QueryEmbedder, QuestionRouter,
                                          Reranker, SearchIndex)

# hdrr_text: HDRR with the facts route off (routing, scoped search and generation only), the
# ablation row that shows what the facts route adds
SYSTEMS = ("hdrr", "cbr", "sfr", "cbr_meta", "cbr_llmctx", "agentic", "hdrr_text")
VARIANT_OF = {"cbr_meta": "meta", "cbr_llmctx": "llmctx"}
MAX_QUESTION_CHARS = 2000
MAX_ROUTED_DOCUMENTS = 8  # filings one question may be answered from
ROUTES_CACHED = 4096  # routings kept per pipeline (the oldest go first)


class QuestionError(ValueError):
    """A question the systems cannot take (empty, too long)."""


def check_question(question: str) -> str:
    if not isinstance(question, str) or not question.strip():
        raise QuestionError("empty question: ask something about a filing")
    question = question.strip()
    if len(question) > MAX_QUESTION_CHARS:
        raise QuestionError(f"question is {len(question)} characters; the limit is "
                            f"{MAX_QUESTION_CHARS}")
    if _NOT_TEXT.search(question):
        raise QuestionError("the question holds characters that are not text (a control "
                            "character or a lone UTF-16 surrogate)")
    return question


# control characters other than tab and newlines, and halves of UTF-16 pairs (which cannot
# be encoded as UTF-8, so no reply could quote them)
_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def _check_fan_out(routing: Routing) -> None:
    """Each routed filing costs a search and a rerank (a whole read for SFR): bounded."""
    if len(routing.doc_ids) > MAX_ROUTED_DOCUMENTS:
        raise QuestionError(f"the question names {len(routing.doc_ids)} filings; at most "
                            f"{MAX_ROUTED_DOCUMENTS} are read for one question: ask about "
                            f"fewer companies or periods")


def variant_dir(index_dir: str | Path, variant: str) -> Path:
    """Where a variant index lives by default: beside the plain one, ``<dir>-<variant>``."""
    index_dir = Path(index_dir)
    return index_dir.with_name(f"{index_dir.name}-{variant}")


class Verification(BaseModel):
    """Agentic: do the top passages come from the company the question asks about?"""

    question_company: str = Field(max_length=80)
    passages_company: str = Field(max_length=80)
    same_company: bool


_VERIFY_SYSTEM = ("You check retrieved passages. Name the company the question asks about, the "
                  "company the passages come from (the tag before each passage names the "
                  "filing), and whether they are the same company. Reply as JSON.")


def part_findings(answers: list[str], parts: list[Block], count: Callable[[str], int],
                  budget: int) -> list[tuple[Block, Block]]:
    """SFR's map step, kept: (finding, part) for each part whose answer states something (not
    ``states_nothing``), in document order, while the findings fit in ``budget`` tokens. A
    finding is a block holding the part's answer under the part's tag, so the reduce call reads
    and cites it like a passage."""
    out, used = [], 0
    for answer, part in zip(answers, parts):
        if states_nothing(answer):
            continue
        text = " ".join(answer.split())
        tokens = count(f"{part.tag}\n{text}")
        if used + tokens > budget:
            break
        out.append((Block(part.doc_id, part.first_page, part.last_page, text, tokens), part))
        used += tokens
    return out


class _Run:
    """What one answer accumulates while the stages run."""

    def __init__(self, question: str, system: str, profile: str):
        self.answer = Answer(query=question, system=system, answer="", profile=profile)
        self.done = False  # answered without the generator (the facts route)
        self.preface = ""  # said before the generated text (the figures the facts hold)
        self.query_vector = None  # the last search's query embedding (k-reciprocal refinement)
        self.table_texts: dict[int, str] = {}  # table records among the candidates, by id
        self.expansion: tuple[str, list[str]] | None = None  # (passage, keywords) of a router call
        self.parts = False  # the blocks are SFR's parts of whole filings (map, then reduce)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add_time(name, (time.perf_counter() - t0) * 1000)

    def add_time(self, name: str, ms: float) -> None:
        self.answer.timings_ms[name] = round(self.answer.timings_ms.get(name, 0.0) + ms, 3)

    def record(self, stage: str, items: list, scores: list[float] | None = None) -> None:
        rows = self.answer.retrieved.setdefault(stage, [])
        for i, item in enumerate(items):
            score = scores[i] if scores is not None else getattr(item, "score", None)
            rows.append({"chunk_id": item.chunk_id, "doc_id": item.doc_id,
                         "first_page": item.first_page, "last_page": item.last_page,
                         "score": None if score is None else round(float(score), 6)})

    def call(self, role: str, model_id: str, completion) -> None:
        self.answer.calls.append(LLMCall(role, model_id, completion.prompt_tokens,
                                         completion.completion_tokens,
                                         round(completion.latency_s * 1000, 3)))


class Pipeline:
    """The shared components (index, embedder, rerankers, LLM engines, router) and the systems.

    Build it with ``Pipeline.load(index_dir, profile=...)``; models load on first use, and
    roles that name the same LLM share one engine. What it calls on each component is declared
    in ``retrieval.systems.components``, and nothing else: the served app hands it stand-ins.
    """

    def __init__(self, index: SearchIndex, embedder: QueryEmbedder, profile, *,
                 variants: dict[str, SearchIndex] | None = None, light: Reranker | None = None,
                 large: Reranker | None = None, engines: dict[str, LLMEngine] | None = None,
                 meter=None, companies=None, use_llm_router: bool = True,
                 router: QuestionRouter | None = None, facts: FactsSource | None = None):
        from models.rerankers import Cascade

        self.index = index
        self.embedder = embedder
        self.profile = profile
        self.settings = profile.pipeline
        self.variants = variants or {}
        self.light, self.large = light, large
        self._engines: dict[str, Any] = dict(engines or {})
        self.companies = companies
        self.use_llm_router = use_llm_router
        if meter is None:  # the counters of the devices this pipeline's models run on
            from models.devices import DeviceError, resolve_device
            from models.energy import meter_for

            try:
                devices = [resolve_device(s.device, role=r) for r, s in profile.roles.items()]
            except DeviceError:
                devices = []  # a role's device is missing: loading it says so
            meter = meter_for(devices)
        self.meter = meter
        stages = dict(light=light if self.settings.light_rerank else None,
                      large=large if self.settings.large_rerank else None)
        self.cascade = (Cascade(**stages, **profile.cascade.model_dump())
                        if any(stages.values()) else None)
        self._router = router  # built on first use unless given (serving passes a remote one)
        self._facts_answerer = facts  # likewise: the index's facts answerer
        self._routes: dict[tuple[str, bool], Routing] = {}
        # query expansion calls of their own: (passage, keywords, cost) per question
        self._expansions: dict[str, tuple[str, list[str], LLMCall]] = {}
        self._table_searches: dict[int, Any] = {}  # per index: its tables as records
        self._statement_pages: dict[tuple[int, str], dict[int, str]] = {}  # per filing

    # construction ---------------------------------------------------------------------
    @classmethod
    def load(cls, index_dir: str | Path, *, profile: str | None = None, config=None,
             variant_dirs: dict[str, str | Path] | None = None, large_rerank: bool | None = None,
             use_llm_router: bool = True, companies=None) -> "Pipeline":
        from models.devices import memory_shares
        from models.profiles import (load_config, load_profile_embedder, load_reranker,
                                     require_engine)

        prof = load_config(config).active(profile)
        require_engine(prof)  # before minutes of loading, not after
        if large_rerank is not None:
            prof = prof.model_copy(update={"pipeline": prof.pipeline.model_copy(
                update={"large_rerank": large_rerank})})
        # the models this process loads fit their devices: checked before any loads
        memory_shares(prof, ["embedder", "light_reranker", "generator"]
                      + ["router"] * use_llm_router
                      + ["large_reranker"] * bool(prof.pipeline.large_rerank))
        index = Index.open(index_dir)
        if prof.pipeline.vector_index != "flat":
            index.vectors.configure(approximate=prof.pipeline.vector_index)
        embedder = load_profile_embedder(prof)
        try:
            index.check_embedder(embedder)
        except ValueError:
            index.close()
            raise
        shared = embedder if prof.role("light_reranker").model == prof.role("embedder").model else None
        light = load_reranker(prof, "light_reranker", embedder=shared)
        variants = {}
        for variant, folder in (variant_dirs or {}).items():
            if folder and (Path(folder) / "catalog.sqlite").is_file():
                variants[variant] = Index.open(folder)
                variants[variant].check_embedder(embedder)
        pipe = cls(index, embedder, prof, variants=variants, light=light, meter=None,
                   companies=companies, use_llm_router=use_llm_router)
        if prof.pipeline.large_rerank:
            from models.devices import LLM_KINDS

            llm = prof.role("large_reranker").kind in LLM_KINDS
            pipe.large = load_reranker(prof, "large_reranker",
                                       engine=pipe.engine("large_reranker") if llm else None)
            from models.rerankers import Cascade

            pipe.cascade = Cascade(pipe.cascade.light if pipe.cascade else None, pipe.large,
                                   **prof.cascade.model_dump())
        return pipe

    def engine(self, role: str):
        """The LLM engine for a role, loaded on first use; one engine per model."""
        from models.profiles import load_llm

        model = self.profile.role(role).model
        if model not in self._engines:
            self._engines[model] = load_llm(self.profile, role)
        return self._engines[model]

    @property
    def router(self):
        if self._router is None:
            from retrieval.routing.router import Router, make_content_scorer

            llm = (lambda: self.engine("router")) if self.use_llm_router else None  # on first need
            self._router = Router(self.index, self.companies, llm=llm,
                                  content_scorer=make_content_scorer(self.index, self.embedder))
        return self._router

    def count_tokens(self, text: str) -> int:
        return self.engine("generator").count_tokens(text)

    def model_ids(self) -> dict[str, str]:
        ids = {role: spec.model for role, spec in self.profile.roles.items()}
        ids["embedder"] = self.index.settings.embedder_model_id or ids.get("embedder", "")
        if not self.settings.large_rerank:
            ids.pop("large_reranker", None)
        return ids

    def close(self) -> None:
        self.index.close()
        for v in self.variants.values():
            v.close()

    # the entry points -----------------------------------------------------------------
    def answer(self, question: str, system: str = "hdrr", *, generate: bool = True,
               on_text: Callable[[str], None] | None = None) -> Answer:
        """One question through ``system``. ``on_text`` receives the answer's text in pieces
        as the generator writes it (engines that cannot stream send it once, whole)."""
        return self.answer_many([question], system, generate=generate, on_text=on_text)[0]

    def answer_many(self, questions: list[str], system: str = "hdrr", *, generate: bool = True,
                    on_text: Callable[[str], None] | None = None) -> list[Answer]:
        """Several questions through ``system``: retrieval one by one, then every answer that
        needs one generation call in one batch of the generator (throughput for batch
        scoring). A shared call's time is each answer's ``generate`` time, and its energy is
        split among the answers it served by their share of its tokens (the energy scope says
        so)."""
        questions = [check_question(q) for q in questions]
        if system not in SYSTEMS:
            raise ValueError(f"unknown system {system!r}; choose from {', '.join(SYSTEMS)}")
        runs: list[tuple[_Run, list[Block], list]] = []
        for question in questions:
            run = _Run(question, system, self.profile.name)
            run.answer.model_ids = self.model_ids()
            with self.meter.measure() as m:
                blocks = getattr(self, f"_{system}")(run)
                run.answer.context_tokens = sum(b.tokens for b in blocks)
                run.record("context", blocks, [None] * len(blocks))
            runs.append((run, blocks, [(m.reading, 1)]))
        if generate:
            self._generate_all(runs, on_text)
        else:  # no generator: what the facts computed for a hybrid answer is still said
            for run, _, _ in runs:
                if run.preface and not run.done and not run.answer.answer:
                    run.answer.answer = run.preface
        for run, _, readings in runs:
            run.answer.timings_ms["total"] = round(
                sum(r.seconds for r, _ in readings) * 1000, 3)
            run.answer.energy = _energy(readings)
        return [run.answer for run, _, _ in runs]

    # steps --------------------------------------------------------------------------
    def route(self, question: str, expand: bool = False) -> Routing:
        """Routing for a question, computed once per pipeline (its cost is still charged to
        every answer that uses it). ``expand``: a router-LLM call also writes the query
        expansion's passage."""
        question = check_question(question)
        routing = self._routes.get((question, expand))
        if routing is None:
            routing = self._routes[question, expand] = (
                self.router.route(question, expand=True) if expand
                else self.router.route(question))
            _bound(self._routes)
        return routing

    def _route(self, run: _Run) -> Routing:
        expand = run.answer.system in ("hdrr", "hdrr_text") and self.settings.query_expansion
        routing = self.route(run.answer.query, expand)
        run.answer.routing = routing
        run.answer.calls.extend(routing.usage)
        run.add_time("route", routing.latency_ms or 0.0)
        return routing

    def _search(self, run: _Run, index: SearchIndex, query: str, doc_ids: list[str] | None,
                fts_extra: str = "", dense_query: str | None = None) -> list[Hit]:
        s = self.settings
        with run.stage("embed_query"):
            vector = self.embedder.encode([dense_query or query])[0]
        run.query_vector = vector
        with run.stage("search"):
            hits = index.search(f"{query} {fts_extra}".strip(), vector, k=s.fts_k + s.dense_k,
                                doc_ids=doc_ids, fts_k=s.fts_k, dense_k=s.dense_k, rrf_k=s.rrf_k,
                                fts_weighted=s.fts_weighted)
        run.record("fused", hits)
        return hits

    def _with_tables(self, run: _Run, index: SearchIndex, query: str, doc_ids: list[str],
                     hits: list[Hit]) -> list[Hit]:
        """The filings' best table records (JSON rows) fused into the candidates by RRF."""
        from retrieval.store.fusion import rrf
        from retrieval.store.tables import TableSearch

        search = self._table_searches.setdefault(id(index), TableSearch(index.catalog))
        with run.stage("search_tables"):
            found = [t for d in doc_ids for t in search.search(query, d,
                                                               self.settings.table_records)]
        tables = {rec.id: Hit(rec.id, rec.doc_id, rec.page, rec.page, score, 0, rec.text)
                  for rec, score in found}
        run.table_texts.update({i: h.text for i, h in tables.items()})
        by_id = {h.chunk_id: h for h in hits} | tables
        fused = rrf([[h.chunk_id for h in hits], list(tables)], k=self.settings.rrf_k)
        out = []
        for rank, (cid, score) in enumerate(fused, start=1):
            h = by_id[cid]
            h.rank, h.score = rank, score
            out.append(h)
        run.record("tables", list(tables.values()))
        return out

    def _with_statements(self, run: _Run, index: SearchIndex, query: str, doc_ids: list[str],
                         hits: list[Hit]) -> tuple[list[Hit], list[tuple[str, int]]]:
        """The routed filings' pages of the primary statements the question reads: their
        chunks join the candidates (room is kept for them in the light stage's pool).
        Returns the candidates and the (filing, page) pairs in the order the question reads
        the statements."""
        from retrieval.facts.classify import statements_named
        from retrieval.facts.statements import statement_pages

        with run.stage("statements"):
            kinds = statements_named(query, self.facts.concepts)
            pages: list[tuple[str, int]] = []
            for doc_id in doc_ids if kinds else []:
                key = (id(index), doc_id)
                if key not in self._statement_pages:
                    self._statement_pages[key] = statement_pages(index.catalog.pages(doc_id))
                    _bound(self._statement_pages)
                found = self._statement_pages[key]
                pages += [(doc_id, n) for kind in kinds for n in sorted(found) if found[n] == kind]
            have = {h.chunk_id for h in hits}
            extra = [Hit(c.chunk_id, c.doc_id, c.first_page, c.last_page, 0.0, 0, c.text)
                     for doc_id in doc_ids
                     for c in index.catalog.page_chunks(doc_id, [n for d, n in pages if d == doc_id])
                     if c.chunk_id not in have]
        if not extra:
            return hits, pages
        hits = hits[:max(self.profile.cascade.light_top_n - len(extra), 0)] + extra
        for rank, h in enumerate(hits, start=1):
            h.rank = rank
        run.record("statements", extra)
        return hits, pages

    def _statements_first(self, pages: list[tuple[str, int]], ranked: list[Hit],
                          kept: list[Hit]) -> tuple[list[Hit], list[Hit]]:
        """The best-ranked chunk of each of the first ``statement_pages`` statement pages
        leads the ranking and the kept chunks (as many kept as the cutoff chose)."""
        lead: list[Hit] = []
        for doc_id, page in pages:
            if len(lead) == self.settings.statement_pages:
                break
            best = next((h for h in ranked if h.doc_id == doc_id
                         and h.first_page <= page <= h.last_page), None)
            if best is not None and best not in lead:
                lead.append(best)
        ids = {h.chunk_id for h in lead}
        ranked = lead + [h for h in ranked if h.chunk_id not in ids]
        kept = (lead + [h for h in kept if h.chunk_id not in ids])[:max(len(kept), len(lead))]
        return ranked, kept

    def _refiner(self, run: _Run, index: SearchIndex):
        """The k-reciprocal refinement of the light stage (None when the profile has it off)."""
        s = self.settings
        if not s.k_reciprocal or getattr(run, "query_vector", None) is None:
            return None
        from retrieval.store.neighbours import k_reciprocal_scores

        def refine(ids: list, scores: list[float]) -> list[float]:
            got, vecs = index.catalog.vectors(ids, dim=index.settings.dim)
            row = {int(i): n for n, i in enumerate(got)}
            missing = [i for i in ids if int(i) not in row]  # table records: embedded now
            if missing:
                import numpy as np

                extra = self.embedder.encode([run.table_texts[i] for i in missing])
                vecs = np.vstack([vecs, extra]) if len(vecs) else extra
                row |= {int(i): len(got) + n for n, i in enumerate(missing)}
            return k_reciprocal_scores(run.query_vector, vecs[[row[int(i)] for i in ids]],
                                       scores, k1=s.k_reciprocal_k1, lam=s.k_reciprocal_lambda)
        return refine

    def _rerank(self, run: _Run, query: str, hits: list[Hit],
                refine=None) -> tuple[list[Hit], list[Hit]]:
        """(all candidates in their final order, the kept ones)."""
        if not hits or self.cascade is None:
            return hits, hits[: self.profile.cascade.keep_k]
        by_id = {h.chunk_id: h for h in hits}
        result = self.cascade.rerank(query, [(h.chunk_id, h.text) for h in hits], refine=refine)
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

    def _retrieve(self, run: _Run, index: SearchIndex, query: str, doc_ids: list[str] | None = None,
                  fts_extra: str = "", passage: str | None = None) -> list[Hit]:
        """``passage``: the query expansion's hypothetical passage, embedded for the dense
        side (with the question or alone, ``expansion_dense``); the rerankers see the question."""
        if self.settings.normalize_query:
            from retrieval.store.query import normalize_query

            query = normalize_query(query)
        dense = None
        if passage:
            dense = passage if self.settings.expansion_dense == "passage" else f"{query}\n{passage}"
        hits = self._search(run, index, query, doc_ids, fts_extra, dense)
        if self.settings.table_records and doc_ids:
            hits = self._with_tables(run, index, f"{query} {fts_extra}", doc_ids, hits)
        pages: list[tuple[str, int]] = []
        if self.settings.statement_pages and doc_ids:
            hits, pages = self._with_statements(run, index, query, doc_ids, hits)
        ranked, kept = self._rerank(run, query, hits, self._refiner(run, index))
        if pages:
            ranked, kept = self._statements_first(pages, ranked, kept)
        run.record("ranked", ranked, [None] * len(ranked))
        run.record("kept", kept, [None] * len(kept))
        return kept

    def _blocks(self, hits: list[Hit], budget: int | None = None,
                index: SearchIndex | None = None) -> list[Block]:
        tables = None
        if self.settings.context_tables:
            catalog = (index or self.index).catalog

            def tables(doc_id: str, first: int, last: int) -> list[dict]:
                return [t for page in range(first, last + 1)
                        for t in catalog.tables(doc_id, page)]
        return build_blocks(hits, self.count_tokens, budget or self.settings.context_tokens,
                            tables)

    def _generate_all(self, runs: list[tuple[_Run, list[Block], list]],
                      on_text: Callable[[str], None] | None) -> None:
        from models.llm import SamplingParams

        engine = self.engine("generator")
        params = SamplingParams(max_tokens=self.settings.answer_tokens)
        if on_text is not None and len(runs) == 1:
            # one answer streamed: what no generator call streams (an answer from the facts,
            # "not found", a map step's finding) is sent whole, so the stream is the answer;
            # with verify_figures the checked answer is sent whole, never a draft's pieces
            sent: list[str] = []
            stream = _streamed(on_text, sent)
            self._generate_runs(runs, engine, params,
                                None if self.settings.verify_figures else stream)
            if not sent and runs[0][0].answer.answer:
                stream(runs[0][0].answer.answer)
        else:
            self._generate_runs(runs, engine, params, None)

    def _generate_runs(self, runs: list[tuple[_Run, list[Block], list]], engine, params,
                       on_text: Callable[[str], None] | None) -> None:
        batch = []
        for run, blocks, readings in runs:
            if run.done:
                continue
            if not blocks:  # no passage: what the facts judged, else "not found"
                run.answer.answer = run.preface or NOT_FOUND
                run.preface = ""
            elif run.parts and len(blocks) > 1:
                with self.meter.measure() as m, run.stage("generate"):
                    self._generate_parts(run, engine, params, blocks, on_text)
                readings.append((m.reading, 1))
            else:
                batch.append((run, blocks, readings))
        if batch:
            self._generate_batch(batch, engine, params, on_text)
        for run, blocks, _ in runs:
            if not run.done and blocks:  # every figure written traced to what it was given
                run.answer.unsupported_figures = unsupported(
                    run.answer.answer, [b.text for b in blocks] + [run.preface])
        if batch and self.settings.verify_figures:
            self._verify_figures(batch, engine, params)
        for run, _, _ in runs:
            if run.preface and not run.done:
                run.answer.answer = f"{run.preface}\n{run.answer.answer}"

    def _generate_batch(self, batch: list[tuple[_Run, list[Block], list]], engine, params,
                        on_text: Callable[[str], None] | None) -> None:
        """One engine call over the batch's prompts; a lone prompt streams to ``on_text``."""
        prompts = [answer_messages(run.answer.query, blocks) for run, blocks, _ in batch]
        with self.meter.measure() as m:
            if on_text is not None and len(prompts) == 1:
                preface = batch[0][0].preface
                if preface:  # what the facts say comes first, as in the final answer
                    on_text(preface + "\n")
                completions = engine.generate(prompts, params,
                                              on_text=_lstripped(on_text) if preface else on_text)
            else:
                completions = engine.generate(prompts, params)
        # a shared batch's energy is charged by each answer's share of its tokens
        tokens = [c.prompt_tokens + c.completion_tokens for c in completions]
        for (run, blocks, readings), completion, n in zip(batch, completions, tokens):
            run.add_time("generate", m.reading.seconds * 1000)
            if completion.energy is not None:  # metered where the model ran: its own share
                readings.append((completion.energy, 1))
            else:
                readings.append((m.reading, n / sum(tokens) if len(batch) > 1 and sum(tokens)
                                 else 1))
            run.call("generator", engine.model_id, completion)
            run.answer.answer = completion.text.strip()
            run.answer.citations = cite(run.answer.answer, blocks)

    def _verify_figures(self, batch: list[tuple[_Run, list[Block], list]], engine,
                        params) -> None:
        """``verify_figures``: an answer whose headline (first) figure traces to nothing it was
        given is generated once more, told so and given the figures that do trace; still
        unsupported, it says the filing's figures do not support one."""
        again = []
        for run, blocks, readings in batch:
            written = [text for text, _ in figures_written(run.answer.answer)]
            if written and written[0] in run.answer.unsupported_figures:
                supported = [w for w in written if w not in run.answer.unsupported_figures]
                again.append((run, blocks, readings, written[0], supported))
        if not again:
            return
        prompts = []
        for run, blocks, _, head, supported in again:
            messages = answer_messages(run.answer.query, blocks)
            messages[-1]["content"] += (
                f"\n(A first answer stated {head}, which is in none of the passages. Quote only "
                f"figures the passages state"
                + (f"; these of its figures are there: {', '.join(supported)}" if supported
                   else "") + ".)")
            prompts.append(messages)
        with self.meter.measure() as m:
            completions = engine.generate(prompts, params)
        tokens = [c.prompt_tokens + c.completion_tokens for c in completions]
        for (run, blocks, readings, head, _), completion, n in zip(again, completions, tokens):
            run.add_time("generate", m.reading.seconds * 1000)
            readings.append((completion.energy, 1) if completion.energy is not None else
                            (m.reading, n / sum(tokens) if len(again) > 1 and sum(tokens) else 1))
            run.call("generator", engine.model_id, completion)
            text = completion.text.strip()
            sources = [b.text for b in blocks] + [run.preface]
            left = unsupported(text, sources)
            written = [w for w, _ in figures_written(text)]
            if written and written[0] in left:
                text = (f"The filing's figures do not support an answer with a figure here: "
                        f"{written[0]} is in none of the passages or facts given.")
            run.answer.answer = text
            run.answer.unsupported_figures = left
            run.answer.citations = cite(text, blocks)

    def _generate_parts(self, run: _Run, engine, params, blocks: list[Block],
                        on_text: Callable[[str], None] | None = None) -> None:
        """SFR past the context limit, map then reduce: every part is asked the question with
        the answer prompt; the part answers that state something (``part_findings``) are the
        answer when there is one, and are read together by one more call when there are
        several (it streams to ``on_text``); none → not found."""
        completions = engine.generate([answer_messages(run.answer.query, [b]) for b in blocks],
                                      params)
        for completion in completions:
            run.call("generator", engine.model_id, completion)
        found = part_findings([c.text for c in completions], blocks, self.count_tokens,
                              self.settings.context_tokens)
        run.answer.retrieved["sfr_findings"] = [
            {"doc_id": f.doc_id, "first_page": f.first_page, "last_page": f.last_page,
             "answer": f.text} for f, _ in found]
        if not found:
            run.answer.answer, run.answer.citations = NOT_FOUND, []
            return
        if len(found) == 1:
            text = found[0][0].text
        else:
            [completion] = engine.generate(
                [answer_messages(run.answer.query, [f for f, _ in found])], params,
                **({"on_text": _lstripped(on_text)} if on_text is not None else {}))
            run.call("generator", engine.model_id, completion)
            text = completion.text.strip()
        run.answer.answer = text
        run.answer.citations = cite(text, [part for _, part in found])

    # systems ------------------------------------------------------------------------
    def _cbr(self, run: _Run, index: SearchIndex | None = None,
             expansion: tuple[str, list[str]] | None = None) -> list[Block]:
        index = index or self.index
        passage, keywords = expansion or (None, [])
        return self._blocks(self._retrieve(run, index, run.answer.query, None,
                                           " ".join(keywords), passage), index=index)

    def _variant(self, run: _Run) -> list[Block]:
        variant = VARIANT_OF[run.answer.system]
        index = self.variants.get(variant)
        if index is None:
            raise FileNotFoundError(
                f"system {run.answer.system} needs the {variant!r} index variant; build it with "
                f"`finrag ingest PATHS --variant {variant} --index DIR` and pass its folder")
        return self._cbr(run, index)

    _cbr_meta = _variant
    _cbr_llmctx = _variant

    def _hdrr(self, run: _Run) -> list[Block]:
        routing = self._route(run)
        facts = self._facts(run, routing) if self.settings.facts_routes else None
        if run.done:
            return []
        blocks = self._hdrr_documents(run, routing)
        if facts is not None:  # hybrid: the facts, then the narrative they are checked against
            self._check_facts(run, facts, blocks)
            blocks = [facts, *blocks]
        return blocks

    def _hdrr_text(self, run: _Run) -> list[Block]:
        return self._hdrr_documents(run, self._route(run))

    def _hdrr_documents(self, run: _Run, routing: Routing) -> list[Block]:
        expansion = self._expansion(run, routing)
        if not routing.routed:
            return self._cbr(run, expansion=expansion)
        _check_fan_out(routing)
        extracted = routing.extracted or {}
        keywords = list(extracted.get("keywords") or [])
        passage = None
        if expansion is not None:
            passage = expansion[0]
            keywords = list(dict.fromkeys(keywords + expansion[1]))
        fts_extra = " ".join(keywords)
        kept_per_doc = [self._retrieve(run, self.index, run.answer.query, [d], fts_extra,
                                       passage)
                        for d in routing.doc_ids]
        if len(kept_per_doc) == 1:
            return self._blocks(kept_per_doc[0])
        _interleave_by_doc(run.answer.retrieved, ("ranked", "kept"))
        unlimited = 10**9
        demands = [sum(b.tokens for b in self._blocks(kept, unlimited)) for kept in kept_per_doc]
        shares = fair_shares(self.settings.context_tokens, demands)
        return [b for kept, share in zip(kept_per_doc, shares) if share > 0
                for b in self._blocks(kept, share)]

    def _expansion(self, run: _Run, routing: Routing) -> tuple[str, list[str]] | None:
        """The query expansion (``query_expansion``): (passage, keywords). From the router
        LLM's call when routing or the facts route made one (one call per question, not two),
        else one call of its own, made once per pipeline and charged to every answer that uses
        it. None when the option is off or the call failed (the search goes on without it)."""
        if not self.settings.query_expansion:
            return None
        extracted = routing.extracted or {}
        source, found = "router call", None
        if extracted.get("passage") is not None:
            found = extracted["passage"], list(extracted.get("keywords") or [])
        elif run.expansion is not None:
            found = run.expansion
        else:
            question, source = run.answer.query, "expansion call"
            cached = self._expansions.get(question)
            if cached is None:
                try:
                    output, call = self.router.expand(question)
                except Exception as err:
                    run.answer.retrieved["expansion"] = [
                        {"source": "failed", "error": f"{type(err).__name__}: {str(err)[:200]}"}]
                    return None
                cached = self._expansions[question] = (output.passage, list(output.keywords),
                                                       call)
                _bound(self._expansions)
            passage, keywords, call = cached
            run.answer.calls.append(call)
            run.add_time("expand", call.latency_ms)
            found = passage, keywords
        run.answer.retrieved["expansion"] = [{"source": source, "passage": found[0],
                                              "keywords": found[1]}]
        return found

    # the facts routes ---------------------------------------------------------------
    @property
    def facts(self):
        """The facts answerer over this index's XBRL facts (``facts.store.available`` is
        False for an index that holds none)."""
        if self._facts_answerer is None:
            from retrieval.facts.answer import FactsAnswerer
            from retrieval.facts.concepts import default_concepts
            from retrieval.facts.store import FactStore

            store = FactStore(getattr(getattr(self.index, "catalog", None), "db", None),
                              readonly=True)
            self._facts_answerer = FactsAnswerer(store, default_concepts())
        return self._facts_answerer

    def _facts(self, run: _Run, routing: Routing) -> Block | None:
        """Route the question (metric_lookup | timeseries | full_statement | narrative |
        hybrid) and answer a structured route from the facts: ``run.done`` when answered, a
        facts block for a hybrid answer, None to answer from the filings alone."""
        from retrieval.facts.checks import confidence
        from retrieval.facts.classify import STRUCTURED, apply_llm, classify

        facts = self.facts
        if not facts.store.available:
            return None
        with run.stage("facts"):
            query = classify(run.answer.query, facts.concepts)
            keys = [m["key"] for m in (routing.extracted or {}).get("companies", [])]
            companies = [c for c in (facts.store.company(k) for k in keys) if c is not None]
        if query.route == "undecided" and companies:
            query = apply_llm(query, *self._llm_route(run, routing), facts.concepts)
        route = "narrative" if query.route == "undecided" else query.route
        run.answer.route = route
        if query.definition_error and not query.metrics:  # said, never guessed around
            run.answer.facts_note = (f"The question's own definition does not read "
                                     f"({query.definition_error}); nothing was computed from it.")
        if routing.extracted is not None:
            routing.extracted["facts"] = query.to_dict() | {
                "companies_with_facts": [c.key for c in companies]}
        extracted = routing.extracted or {}
        if route in STRUCTURED and not companies and not routing.routed:
            named = [m["company"] for m in extracted.get("companies", [])]
            unknown = extracted.get("unknown_companies") or []
            if named or unknown:  # say so rather than read another company's filings
                run.answer.answer = (
                    f"This index holds no XBRL facts and no filings for "
                    f"{', '.join(named + unknown)}; ingest its companyfacts file or filings "
                    f"to ask about it.")
                run.done = True
                return None
        if route == "narrative" or not companies:
            return None
        with run.stage("facts"):
            result = facts.answer(query, companies)
        run.answer.facts = [v.to_dict() for v in result.values]
        run.answer.confidence = confidence(result.values, result.requested,
                                           len(result.missing), [], routing.routed)
        run.answer.citations = [  # a value read from a PDF statement table cites its page
            Citation(v.doc_id or f"EDGAR {v.accession or v.form}", v.page, None,
                     f"{v.concept} = {v.value:g} {v.unit}, {v.period_label}", v.url)
            for v in result.values]
        if route == "hybrid":
            if not result.values:
                run.answer.facts_note = result.text
                if result.verdicts:  # "not a useful metric here", judged from the facts
                    run.preface = "\n".join(result.verdicts)
                return None
            # the figures are stated from the facts, whatever the generator then writes
            run.preface = result.text
            text = ("Exact figures computed from the filings (quote them as given, do not "
                    "recompute them; the passages that follow explain them):\n" + result.text)
            return Block(FACTS_DOC_ID, 1, 1, text, self.count_tokens(text), None)
        if result.values or not routing.routed:
            run.answer.answer = result.text or "The facts hold no answer to this question."
            run.done = True
        else:  # nothing in the facts: answer from the routed filings, the miss noted beside
            run.answer.facts_note = result.text
            run.answer.citations = []
        return None

    def _llm_route(self, run: _Run, routing: Routing) -> tuple[str | None, str | None]:
        """The router LLM's route and metric: from its call if routing made one, else one
        call now (the same constrained call; never a second one per question)."""
        llm_out = (routing.extracted or {}).get("llm")
        if llm_out is None and self.use_llm_router and hasattr(self.router, "extract"):
            expand = self.settings.query_expansion  # the expansion rides on this call
            try:
                with run.stage("route"):
                    output, call = (self.router.extract(run.answer.query, expand=True) if expand
                                    else self.router.extract(run.answer.query))
            except Exception:  # the rules' answer (narrative) stands
                return None, None
            run.answer.calls.append(call)
            llm_out = output.model_dump()
            if expand:
                run.expansion = output.passage, list(output.keywords)
        if not llm_out:
            return None, None
        return llm_out.get("route"), llm_out.get("metric")

    def _check_facts(self, run: _Run, facts_block: Block, blocks: list[Block]) -> None:
        from retrieval.facts.answer import FactValue
        from retrieval.facts.checks import contradictions

        values = [FactValue(**v) for v in run.answer.facts]
        found = contradictions(values, [(b.doc_id, b.first_page, b.text) for b in blocks],
                               self.facts.concepts)
        run.answer.contradictions = found
        run.answer.confidence = max(0, (run.answer.confidence or 0) - sum(
            25 if c["severity"] == "high" else 15 for c in found))

    def _sfr(self, run: _Run) -> list[Block]:
        routing = self._route(run)
        if not routing.routed:
            return self._cbr(run)
        _check_fan_out(routing)
        with run.stage("load_document"):
            parts = [p for doc_id in routing.doc_ids for p in self.document_parts(doc_id)]
        run.parts = True
        run.record("ranked", parts, [None] * len(parts))
        run.record("kept", parts, [None] * len(parts))
        return parts

    def document_parts(self, doc_id: str) -> list[Block]:
        """A whole filing as consecutive parts of at most ``sfr_part_tokens`` tokens each. The
        text comes from the catalog's pages of a catalog document — never from a file path."""
        record = self.index.catalog.document(doc_id)
        if record is None:
            raise KeyError(f"unknown document {doc_id!r}")
        budget = self.settings.sfr_part_tokens
        parts: list[Block] = []
        texts: list[str] = []
        first = used = 0

        def flush(last: int) -> None:
            if texts:
                parts.append(Block(doc_id, first, last, " ".join(texts), used, None))

        last = 0
        for number, text in self.index.catalog.pages(doc_id):
            piece = f"[p.{number}] {' '.join(text.split())}"
            tokens = self.count_tokens(piece)
            if tokens > budget:  # one page longer than a part: keep what fits
                piece = truncate_to_tokens(piece, budget, self.count_tokens)
                tokens = self.count_tokens(piece)
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

    def _agentic(self, run: _Run) -> list[Block]:
        from models.llm import SamplingParams

        query = run.answer.query
        kept = self._retrieve(run, self.index, query)
        engine = self.engine("generator")
        attempts = []
        for attempt in range(self.settings.agentic_max_retries + 1):
            shown = kept[: self.settings.verify_chunks]
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
            if attempt == self.settings.agentic_max_retries:
                break
            query = f"{anchor} {run.answer.query}"  # entity-anchored retry
            for stage in ("fused", "light", "large", "ranked", "kept"):
                run.answer.retrieved.pop(stage, None)
            kept = self._retrieve(run, self.index, query, fts_extra=anchor)
        run.answer.retrieved["agentic"] = attempts
        return self._blocks(kept)


def _bound(cache: dict) -> None:
    """A per-pipeline cache kept to ROUTES_CACHED entries, the oldest going first."""
    while len(cache) > ROUTES_CACHED:
        cache.pop(next(iter(cache)), None)


def _streamed(on_text: Callable[[str], None], sent: list[str]) -> Callable[[str], None]:
    """``on_text`` that also keeps what it was given in ``sent``."""

    def emit(piece: str) -> None:
        sent.append(piece)
        on_text(piece)

    return emit


def _lstripped(on_text: Callable[[str], None]) -> Callable[[str], None]:
    """``on_text`` without the leading whitespace of the first pieces (the final answer's
    generated part is stripped the same way)."""
    started = False

    def emit(piece: str) -> None:
        nonlocal started
        if not started:
            piece = piece.lstrip()
            if not piece:
                return
            started = True
        on_text(piece)

    return emit


def _interleave_by_doc(retrieved: dict, stages: tuple[str, ...]) -> None:
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


def _energy(readings: list[tuple[Any, float]]) -> dict[str, Any]:
    """One answer's energy from its measured windows; ``(reading, share)`` charges this answer
    ``share`` of a window (a batched generation: its share of the batch's tokens). Windows of a
    meter that reads no counter (source unavailable: steps served elsewhere) are left out of
    the joules when others were measured, and the scope says so."""
    measured = [(r, w) for r, w in readings if r.source != "unavailable"]
    parts = measured or readings
    joules = [r.joules * w if r.joules is not None else None for r, w in parts]
    scope = " + ".join(dict.fromkeys(r.scope for r, _ in parts if r.scope)) or None
    if any(w < 1 for _, w in parts) and scope:
        scope = f"{scope}; generation batched with other answers, its energy split by token share"
    if measured and len(measured) < len(readings):
        scope = f"{scope}; the other steps ran where no counter was read: not included"
    return {"joules": None if None in joules else round(sum(joules), 6),
            "source": parts[0][0].source, "scope": scope,
            "cpu_seconds": round(sum(r.cpu_seconds * w for r, w in readings), 3)}
