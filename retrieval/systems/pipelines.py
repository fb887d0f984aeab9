"""The ``Pipeline``: the shared components (index, embedder, rerankers, LLM engines, router,
facts) and the answer path. A question is checked, run through its system's recipe
(``retrieval.systems.recipes``, built from ``retrieval.systems.stages``) to a context, and
generated from; ``answer_many`` generates every answer of a batch in one engine call.

``Pipeline.answer(question, system)`` returns an ``Answer``; with ``generate=False`` it stops
after the context is assembled (retrieval evaluation).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

from finrag.models.devices import LLM_KINDS, DeviceError, memory_shares, resolve_device
from finrag.models.energy import meter_for
from finrag.models.llm import SamplingParams
from finrag.models.profiles import (load_config, load_llm, load_profile_embedder, load_reranker,
                             require_engine)
from finrag.retrieval.answer import Answer, LLMCall, Routing
from finrag.retrieval.facts.answer import FactsAnswerer
from finrag.retrieval.facts.concepts import default_concepts
from finrag.retrieval.facts.store import FactStore
from finrag.retrieval.routing.router import Router, make_content_scorer
from finrag.retrieval.documents import PUBLIC_COLLECTION, check_collections
from finrag.retrieval.store.access import ScopedIndex
from finrag.retrieval.store.index import Index
from finrag.retrieval.store.snapshot import is_publish_root
from finrag.retrieval.systems.cascade import Cascade
from finrag.retrieval.systems.components import (FactsSource, LLMEngine, QueryEmbedder, QuestionRouter,
                                          Reranker, SearchIndex)
from finrag.retrieval.systems.context import (NOT_FOUND, Block, answer_messages, cite, is_yes_no,
                                              states_nothing)
from finrag.retrieval.systems.figures import (ScaledStream, figures_written, unsupported,
                                              with_stated_scale)
from finrag.retrieval.systems.recipes import RECIPES, SYSTEMS
from finrag.retrieval.systems.run import Run, bound, check_question, energy
from finrag.retrieval.systems.verdict import Calibration, Verdict, calibrate, decide, opened, verdict_in

__all__ = ["Pipeline", "part_findings"]


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


class Pipeline:
    """The shared components (index, embedder, rerankers, LLM engines, router, facts) and the
    answer path.

    Build it with ``Pipeline.load(index_dir, profile=...)``; models load on first use, and
    roles that name the same LLM share one engine. What it calls on each component is declared
    in ``retrieval.systems.components``, and nothing else: the served app hands it stand-ins.
    """

    def __init__(self, index: SearchIndex, embedder: QueryEmbedder, profile, *,
                 variants: dict[str, SearchIndex] | None = None, light: Reranker | None = None,
                 large: Reranker | None = None, engines: dict[str, LLMEngine] | None = None,
                 meter=None, companies=None, use_llm_router: bool = True,
                 router: QuestionRouter | None = None, facts: FactsSource | None = None):
        self.index = index
        self.embedder = embedder
        self.profile = profile
        self.settings = profile.pipeline
        # the variant indexes as opened; ``variants`` is what a caller searches of them: the
        # filings the main index holds, the same files, in the collections the main catalog
        # gives them at the moment of the request (``_variant_views``)
        self._variant_indexes: dict[str, SearchIndex] = dict(variants or {})
        self.variants: dict[str, SearchIndex] = self._variant_views(None)
        self.light, self.large = light, large
        self._engines: dict[str, Any] = dict(engines or {})
        self.companies = companies
        self.use_llm_router = use_llm_router
        if meter is None:  # the counters of the devices this pipeline's models run on
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
        self._router_built_here = router is None
        self._facts_answerer = facts  # likewise: the index's facts answerer
        self._facts_built_here = facts is None
        self.routes: dict[tuple[str, bool], Routing] = {}
        # query expansion calls of their own: (passage, keywords, cost) per question
        self.expansions: dict[str, tuple[str, list[str], LLMCall]] = {}
        self.table_searches: dict[int, Any] = {}  # per index: its tables as records
        # per filing: {page: the statements or sections that open on it}
        self.statement_page_kinds: dict[tuple[int, str], dict[int, list[str]]] = {}
        self.section_page_kinds: dict[tuple[int, str], dict[int, list[str]]] = {}
        self.collections: frozenset[str] | None = None  # what this pipeline reads (None: all)
        self._views: dict[frozenset[str], Pipeline] = {}
        self._base: Pipeline | None = None  # the pipeline a view was made from
        self._generation: int | None = None  # the index's, when the caches above were made
        self._verdict_calibrations: dict[str, Calibration] = {}  # per model (verdict.py)

    # construction ---------------------------------------------------------------------
    @classmethod
    def load(cls, index_dir: str | Path, *, profile: str | None = None, config=None,
             variant_dirs: dict[str, str | Path] | None = None, large_rerank: bool | None = None,
             use_llm_router: bool = True, companies=None,
             collections: list[str] | None = None) -> "Pipeline":
        """``collections``: the view of a caller who reads only those (an unknown name is an
        error that names it); the view's ``close`` closes the whole pipeline."""
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
        same = [(prof.role(r).model, prof.role(r).runtime) for r in ("light_reranker", "embedder")]
        shared = embedder if same[0] == same[1] else None
        light = load_reranker(prof, "light_reranker", embedder=shared)
        variants = {}
        for variant, folder in (variant_dirs or {}).items():
            if folder and ((Path(folder) / "catalog.sqlite").is_file()
                           or is_publish_root(folder)):
                variants[variant] = Index.open(folder)
                variants[variant].check_embedder(embedder)
        pipe = cls(index, embedder, prof, variants=variants, light=light, meter=None,
                   companies=companies, use_llm_router=use_llm_router)
        if prof.pipeline.large_rerank:
            llm = prof.role("large_reranker").kind in LLM_KINDS
            pipe.large = load_reranker(prof, "large_reranker",
                                       engine=pipe.engine("large_reranker") if llm else None)
            pipe.cascade = Cascade(pipe.cascade.light if pipe.cascade else None, pipe.large,
                                   **prof.cascade.model_dump())
        if not collections:
            return pipe
        wanted = check_collections(collections)
        unknown = sorted(set(wanted) - set(index.catalog.collection_counts()))
        if unknown:
            pipe.close()
            raise ValueError(f"unknown collection(s): {', '.join(unknown)} (`finrag collection "
                             f"list` shows those of the index)")
        view = pipe.scoped(wanted)
        view.close = pipe.close
        return view

    def engine(self, role: str):
        """The LLM engine for a role, loaded on first use; one engine per model."""
        model = self.profile.role(role).model
        if model not in self._engines:
            self._engines[model] = load_llm(self.profile, role)
        return self._engines[model]

    @property
    def router(self):
        if self._router is None:
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
        for v in self._variant_indexes.values():
            v.close()

    @property
    def facts(self):
        """The facts answerer over this index's XBRL facts (``facts.store.available`` is
        False for an index that holds none)."""
        if self._facts_answerer is None:
            store = FactStore(getattr(getattr(self.index, "catalog", None), "db", None),
                              readonly=True)
            self._facts_answerer = FactsAnswerer(store, default_concepts())
        return self._facts_answerer

    # who reads what -------------------------------------------------------------------
    def scoped(self, collections: frozenset[str] | list[str] | None) -> "Pipeline":
        """This pipeline as a caller who may read only ``collections`` sees it (None: all).

        The view shares the models and narrows everything that reads filings: its index and
        variants are ``ScopedIndex``es (a whole-corpus search is a search of the readable
        documents, inside FTS5 and FAISS), its router knows only readable filings (a company
        seen only in others is "not in the corpus"), its facts are those of readable filings
        (and SEC companyfacts with ``public``), and its caches are its own, so no routing,
        expansion or page found for one caller is given to another."""
        if collections is None:
            return self._fresh()
        self._fresh()
        key = frozenset(collections)
        view = self._views.get(key)
        if view is not None:
            return view
        readable = frozenset(self.index.catalog.readable(key))
        view = copy.copy(self)
        view.collections, view._base = key, self
        view.index = ScopedIndex(self.index, readable)
        view.variants = self._variant_views(readable)
        # a router given (served) is asked for its view; else one is built on first use over
        # the readable filings
        view._router = None if self._router is None else self._router.scoped(readable)
        view._facts_answerer = self.facts.scoped(readable, PUBLIC_COLLECTION in key)
        view.routes, view.expansions, view.table_searches = {}, {}, {}
        view.statement_page_kinds, view.section_page_kinds, view._views = {}, {}, {}
        self._views[key] = view
        bound(self._views)
        return view

    def _variant_views(self, readable: frozenset[str] | None) -> dict[str, SearchIndex]:
        """Each variant index as a reader of ``readable`` (doc ids of the main index; None:
        all of them) may search it. Who reads what is the main catalog's alone: a variant's
        own collections are never consulted, and a filing it holds counts only while the main
        index holds the same file (a filing removed, replaced or moved there is out of every
        variant at once, even one that has not caught up)."""
        if not self._variant_indexes:
            return {}
        main = self.index.catalog.fingerprints()
        allowed = main.keys() if readable is None else readable
        views = {}
        for name, v in self._variant_indexes.items():
            same = {d for d, sha in v.catalog.fingerprints().items()
                    if d in allowed and main.get(d) == sha}
            views[name] = ScopedIndex(v, same)
        return views

    def _generation_now(self):
        """The generations of the main index and of every variant: any write to one moves it."""
        if not hasattr(self.index, "generation"):
            return 0
        return (self.index.generation(),
                *(v.generation() for v in self._variant_indexes.values()))

    def _fresh(self) -> "Pipeline":
        """This pipeline as the index is now. When documents or their collections have changed
        since the last call (an ingest while serving, `finrag collection`), what was worked out
        from the old index is dropped: routes, expansions, table searches, statement pages, a
        router built here and the scoped views. A view is then made again, so a filing taken
        out of a collection is out of its readers' reach at once."""
        if self._base is not None:
            base = self._base._fresh()
            return self if base._generation == self._generation else base.scoped(self.collections)
        for index in (self.index, *self._variant_indexes.values()):
            if hasattr(index, "refresh"):  # a local index; a served one refreshes itself
                index.refresh()
        now = self._generation_now()
        if now != self._generation:
            if self._generation is not None:
                self.routes, self.expansions, self.table_searches = {}, {}, {}
                self.statement_page_kinds, self.section_page_kinds, self._views = {}, {}, {}
                if self._router_built_here:
                    self._router = None
                if self._facts_built_here:  # a newer published version is another database
                    self._facts_answerer = None
            self.variants = self._variant_views(None)
            self._generation = now
        return self

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
        current = self._fresh()
        if current is not self:  # a view of an index that has changed since it was made
            return current.answer_many(questions, system, generate=generate, on_text=on_text)
        if system not in SYSTEMS:
            raise ValueError(f"unknown system {system!r}; choose from {', '.join(SYSTEMS)}")
        runs: list[tuple[Run, list[Block], list]] = []
        for question in questions:
            run = Run(question, system, self.profile.name)
            run.answer.model_ids = self.model_ids()
            with self.meter.measure() as m:
                blocks = RECIPES[system](self, run)
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
            run.answer.energy = energy(readings)
        return [run.answer for run, _, _ in runs]

    # routing, once per question ---------------------------------------------------
    def route(self, question: str, expand: bool = False) -> Routing:
        """Routing for a question, computed once per pipeline (its cost is still charged to
        every answer that uses it). ``expand``: a router-LLM call also writes the query
        expansion's passage."""
        question = check_question(question)
        routing = self.routes.get((question, expand))
        if routing is None:
            routing = self.routes[question, expand] = (
                self.router.route(question, expand=True) if expand
                else self.router.route(question))
            bound(self.routes)
        return routing

    # generation --------------------------------------------------------------------
    def _generate_all(self, runs: list[tuple[Run, list[Block], list]],
                      on_text: Callable[[str], None] | None) -> None:
        # no generator is loaded for answers that need none (the facts route's, "not found")
        needed = any(not run.done and blocks for run, blocks, _ in runs)
        engine = self.engine("generator") if needed else None
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

    def _generate_runs(self, runs: list[tuple[Run, list[Block], list]], engine, params,
                       on_text: Callable[[str], None] | None) -> None:
        batch = []
        for run, blocks, readings in runs:
            if run.done:
                continue
            if not blocks:  # no passage: what the facts judged, else "not found"
                run.answer.answer = run.preface or _nothing_found(run)
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
        for run, blocks, _ in runs:
            if not run.done and blocks:  # "$3,793" from a table "(In millions)": "$3,793 million"
                run.answer.answer = with_stated_scale(run.answer.answer, [b.text for b in blocks])
            if run.preface and not run.done:
                run.answer.answer = f"{run.preface}\n{run.answer.answer}"

    def _generate_batch(self, batch: list[tuple[Run, list[Block], list]], engine, params,
                        on_text: Callable[[str], None] | None) -> None:
        """One engine call over the batch's prompts; a lone prompt streams to ``on_text``. A
        yes/no question's answer opens with the verdict read from its passages (``_verdict``)
        and is generated on from it."""
        verdicts = [self._verdict(run, engine, blocks, readings) for run, blocks, readings in batch]
        prompts = [opened(v) if v else
                   answer_messages(run.answer.query, blocks)
                   for (run, blocks, _), v in zip(batch, verdicts)]
        with self.meter.measure() as m:
            if on_text is not None and len(prompts) == 1:
                preface = batch[0][0].preface
                if preface:  # what the facts say comes first, as in the final answer
                    on_text(preface + "\n")
                if verdicts[0]:
                    on_text(verdicts[0].word)
                # figures streamed as the final answer writes them ("$3,793 million")
                scaled = ScaledStream(_lstripped(on_text) if preface and not verdicts[0]
                                      else on_text, [b.text for b in batch[0][1]])
                completions = engine.generate(prompts, params, on_text=scaled)
                scaled.flush()
            else:
                completions = engine.generate(prompts, params)
        # a shared batch's energy is charged by each answer's share of its tokens
        tokens = [c.prompt_tokens + c.completion_tokens for c in completions]
        for (run, blocks, readings), completion, n, opening in zip(batch, completions, tokens,
                                                                     verdicts):
            run.add_time("generate", m.reading.seconds * 1000)
            if completion.energy is not None:  # metered where the model ran: its own share
                readings.append((completion.energy, 1))
            else:
                readings.append((m.reading, n / sum(tokens) if len(batch) > 1 and sum(tokens)
                                 else 1))
            run.call("generator", engine.model_id, completion)
            run.answer.answer = ((opening.word + completion.text) if opening
                                 else completion.text).strip()
            run.answer.citations = cite(run.answer.answer, blocks)

    def _verdict(self, run: Run, engine, blocks: list[Block], readings: list) -> Verdict | None:
        """A yes/no question's verdict from its passages (``retrieval.systems.verdict``), its
        forward pass charged to the answer as a ``verdict`` call; None for any other question,
        one whose facts already judged it (the preface opens with Yes or No), or an engine
        that reads no next-token log-probabilities."""
        if (not self.settings.yes_no_verdicts or not is_yes_no(run.answer.query)
                or verdict_in(run.preface)):
            return None
        try:
            with self.meter.measure() as m:
                cal = self._verdict_calibrations.get(engine.model_id)
                if cal is None:
                    cal = self._verdict_calibrations[engine.model_id] = calibrate(engine)
                verdict = decide(engine, run.answer.query, blocks, cal)
        except NotImplementedError:
            return None
        ms = m.reading.seconds * 1000
        readings.append((m.reading, 1))
        run.add_time("verdict", ms)
        run.answer.calls.append(LLMCall("verdict", engine.model_id, verdict.prompt_tokens, 0,
                                        round(ms, 3)))
        run.answer.verdict = {"word": verdict.word, "margin": round(verdict.margin, 4),
                              "raw": round(verdict.raw, 4), "offset": round(cal.offset, 4),
                              "from": "passages"}
        return verdict

    def _verify_figures(self, batch: list[tuple[Run, list[Block], list]], engine,
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

    def _generate_parts(self, run: Run, engine, params, blocks: list[Block],
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
            # scaled as the final answer is, by the parts' own text (``_generate_runs``)
            scaled = (ScaledStream(_lstripped(on_text), [b.text for b in blocks])
                      if on_text is not None else None)
            [completion] = engine.generate(
                [answer_messages(run.answer.query, [f for f, _ in found])], params,
                **({"on_text": scaled} if scaled is not None else {}))
            if scaled is not None:
                scaled.flush()
            run.call("generator", engine.model_id, completion)
            text = completion.text.strip()
        run.answer.answer = text
        run.answer.citations = cite(text, [part for _, part in found])


def _nothing_found(run: Run) -> str:
    """"Not found"; for a yes/no question, also what was looked for and where, so that no
    verdict is read into the lack of evidence."""
    if not is_yes_no(run.answer.query):
        return NOT_FOUND
    routed = run.answer.routing.doc_ids if run.answer.routing else []
    where = ", ".join(routed) if routed else "any filing this caller may read"
    return (f"{NOT_FOUND} No passage about \u201c{run.answer.query}\u201d was found in "
            f"{where}, so there is no evidence to answer Yes or No.")


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
