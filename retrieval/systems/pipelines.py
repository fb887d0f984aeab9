"""The ``Pipeline``: the shared components (index, embedder, rerankers, LLM engines, router,
facts) and the answer path, which reads top to bottom in ``answer_many``:

    check the questions → the view as the index is now → each question through its system's
    recipe (route → facts → retrieve: ``retrieval.systems.recipes``) to what it found → the
    answers written from it (``retrieval.systems.generation``) → time and energy.

``Pipeline.answer(question, system)`` returns an ``Answer``; with ``generate=False`` it stops
after the context is assembled (retrieval evaluation). Who reads what, freshness and the caches
are the view's (``retrieval.systems.view``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Callable

from finrag.models.devices import LLM_KINDS, DeviceError, memory_shares, resolve_device
from finrag.models.energy import meter_for
from finrag.models.profiles import (load_config, load_llm, load_profile_embedder, load_reranker,
                                    require_engine)
from finrag.retrieval.answer import Answer
from finrag.retrieval.documents import check_collections
from finrag.retrieval.routing.router import Router, make_content_scorer
from finrag.retrieval.store.index import Index
from finrag.retrieval.store.snapshot import is_publish_root
from finrag.retrieval.systems.caches import bound
from finrag.retrieval.systems.cascade import Cascade
from finrag.retrieval.systems.components import (Components, FactsSource, LLMEngine,
                                                 QueryEmbedder, QuestionRouter, Reranker,
                                                 SearchIndex)
from finrag.retrieval.systems.found import found_blocks
from finrag.retrieval.systems.generation import Generation, said_without_generator
from finrag.retrieval.systems.recipes import RECIPES, SYSTEMS
from finrag.retrieval.systems.run import Run, check_question
from finrag.retrieval.systems.verdict import Calibration
from finrag.retrieval.systems.view import View

__all__ = ["Pipeline"]


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
        self.embedder = embedder
        self.profile = profile
        self.settings = profile.pipeline
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
        # the index as this pipeline's reader sees it (all of it; ``scoped``: a reader's)
        self.view = View(index, variants, make_router=self._make_router, router=router,
                         facts=facts)
        self.verdict_calibrations: dict[str, Calibration] = {}  # per model, shared by views
        self._pipelines: dict[View, Pipeline] = {}  # the scoped ones, by their view

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
        return pipe.scoped(wanted)  # its close closes the whole pipeline

    def engine(self, role: str) -> LLMEngine:
        """The LLM engine for a role, loaded on first use; one engine per model."""
        model = self.profile.role(role).model
        if model not in self._engines:
            self._engines[model] = load_llm(self.profile, role)
        return self._engines[model]

    def _make_router(self, index: SearchIndex) -> QuestionRouter:
        llm = (lambda: self.engine("router")) if self.use_llm_router else None  # on first need
        return Router(index, self.companies, llm=llm,
                      content_scorer=make_content_scorer(index, self.embedder))

    # what the view holds, as it was last made
    @property
    def index(self) -> SearchIndex:
        return self.view.index

    @property
    def variants(self) -> dict[str, SearchIndex]:
        return self.view.variants

    @property
    def router(self) -> QuestionRouter:
        return self.view.router

    @property
    def facts(self) -> FactsSource:
        return self.view.facts

    def count_tokens(self, text: str) -> int:
        return self.engine("generator").count_tokens(text)

    def model_ids(self) -> dict[str, str]:
        ids = {role: spec.model for role, spec in self.profile.roles.items()}
        ids["embedder"] = self.index.settings.embedder_model_id or ids.get("embedder", "")
        if not self.settings.large_rerank:
            ids.pop("large_reranker", None)
        return ids

    def close(self) -> None:
        self.view.close()

    def scoped(self, collections: frozenset[str] | list[str] | None) -> "Pipeline":
        """This pipeline as a caller who may read only ``collections`` sees it (None: all):
        the same models over the view of those collections (``View.scoped``)."""
        view = self.view.scoped(collections)
        if view is self.view:
            return self
        scoped = self._pipelines.get(view)  # one pipeline per view: shared by its readers
        if scoped is None:
            scoped = self._pipelines[view] = copy.copy(self)
            scoped.view = view
            bound(self._pipelines)
        return scoped

    def components(self, view: View) -> Components:
        """What the recipes read, over ``view``."""
        return Components(
            index=view.index, variants=view.variants, embedder=self.embedder,
            cascade=self.cascade, router=lambda: view.router, facts=lambda: view.facts,
            generator=lambda: self.engine("generator"), count_tokens=self.count_tokens,
            caches=view.caches, settings=self.settings, cascade_settings=self.profile.cascade,
            use_llm_router=self.use_llm_router)

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
        recipe = RECIPES[system]
        # the index as it is now: a filing written or moved since the last call is seen so
        components = self.components(self.view.fresh())
        found = []
        for question in questions:
            run = Run(question, system, self.profile.name, self.model_ids())
            with self.meter.measure() as m:
                f = recipe(components, run)  # route → facts → retrieve
                blocks = found_blocks(f)
                run.answer.context_tokens = sum(b.tokens for b in blocks)
                run.record("context", blocks, [None] * len(blocks))
            run.readings.append((m.reading, 1))
            found.append((run, f))
        if generate:  # generate → check
            Generation(lambda: self.engine("generator"), self.meter, self.settings,
                       self.verdict_calibrations).write(found, on_text)
        else:
            for run, f in found:
                run.answer.answer = said_without_generator(f)
        return [run.finished() for run, _ in found]
