"""The seam between a ``Pipeline`` and its components (``retrieval.systems.components``).

The served app runs the very same ``Pipeline`` over stand-ins (``serving.remote``) that forward
each call to a deployment. A stand-in that lacks a method the Pipeline calls breaks every
served answer that reaches it, as ``page_chunks`` once did. So:

- every stand-in and every in-process class implements its Protocol, member by member;
- a Pipeline whose components are seen through their Protocols alone (any other attribute is
  an AttributeError) answers with every system and both optional page stages on, and the run uses
  every member the Protocols declare: nothing undeclared, nothing declared and dead.
"""

from __future__ import annotations

import importlib
import inspect
import shutil

import pytest

from tests.conftest import SHARED, need_shared

from finrag.retrieval.systems.components import (SEAMS, CatalogReader, FactLookup, FactsSource,
                                          LLMEngine, QueryEmbedder, QuestionRouter, Reranker,
                                          SearchIndex)


def members(proto: type) -> tuple[set[str], set[str]]:
    """(methods, data attributes) a Protocol declares."""
    methods = {n for n, v in vars(proto).items() if inspect.isfunction(v) and not n.startswith("_")}
    attributes = set(getattr(proto, "__annotations__", {})) - methods
    return methods, attributes


def load(dotted: str) -> type:
    module, _, path = dotted.partition(":")
    obj = importlib.import_module(module)
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _own_classes(cls: type) -> list[type]:
    """``cls`` and its bases, the Protocols it subclasses left out (their stubs implement
    nothing)."""
    return [k for k in cls.__mro__ if not getattr(k, "_is_protocol", False) and k is not object]


def declared_attributes(cls: type) -> set[str]:
    names = set()
    for klass in _own_classes(cls):
        names |= set(getattr(klass, "__annotations__", {}))
        names |= {n for n, v in vars(klass).items() if isinstance(v, property)}
    return names


def implementation(cls: type, name: str):
    """``cls``'s own method ``name`` (None when it has only the Protocol's stub)."""
    for klass in _own_classes(cls):
        if name in vars(klass):
            return getattr(cls, name)
    return None


def signature_problems(proto: type, cls: type) -> list[str]:
    """What ``cls`` lacks of ``proto``: a method, a parameter of one, or a data attribute
    (declared on the class, since stand-ins set theirs from a handle call)."""
    methods, attributes = members(proto)
    problems = []
    for name in sorted(methods):
        impl = implementation(cls, name)
        if not callable(impl):
            problems.append(f"{cls.__name__} has no method {name}")
            continue
        want = inspect.signature(getattr(proto, name)).parameters
        have = inspect.signature(impl).parameters
        takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in have.values())
        for pname, p in want.items():
            if pname == "self" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            if pname not in have and not takes_kwargs:
                problems.append(f"{cls.__name__}.{name} takes no {pname!r}")
    for name in sorted(attributes - declared_attributes(cls)):
        problems.append(f"{cls.__name__} declares no attribute {name}")
    return problems


@pytest.mark.parametrize("seam", sorted(SEAMS))
def test_every_served_stand_in_implements_its_protocol(seam):
    proto, _, stand_in = SEAMS[seam]
    assert signature_problems(proto, load(stand_in)) == []


@pytest.mark.parametrize("seam", sorted(SEAMS))
def test_every_in_process_class_has_the_methods_of_its_protocol(seam):
    proto, in_process, _ = SEAMS[seam]
    methods, _ = members(proto)
    cls = load(in_process)
    assert methods and [m for m in sorted(methods) if not callable(implementation(cls, m))] == []


@pytest.mark.parametrize("seam", sorted(SEAMS))
def test_both_sides_say_which_protocol_they_implement(seam):
    proto, in_process, stand_in = SEAMS[seam]
    assert proto in load(in_process).__mro__ and proto in load(stand_in).__mro__


def test_a_stub_inherited_from_the_protocol_is_no_implementation():
    class Half(QuestionRouter):
        def route(self, question):
            return None

    assert signature_problems(QuestionRouter, Half) == ["Half has no method extract",
                                                         "Half has no method scoped"]


# the deployment each stand-in forwards to (serving/deployments.py)
SERVED_BY = {"RemoteEmbedder": "Embedder", "RemoteCatalog": "Retriever",
             "RemoteIndex": "Retriever", "RemoteFacts": "Retriever", "_Store": "Retriever",
             "RemoteReranker": "Reranker", "RemoteLLM": "Generator", "RemoteRouter": "Router"}


def test_every_call_a_stand_in_forwards_is_a_method_of_its_deployment():
    """``handle.NAME.remote(...)`` in a stand-in must name a method the deployment has:
    else the call fails only when a request reaches it."""
    import ast

    from finrag.serving import deployments, remote

    tree = ast.parse(inspect.getsource(remote))
    calls: dict[str, set[str]] = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            # handle.NAME.remote / handle.options(...).NAME.remote
            if (isinstance(node, ast.Attribute) and node.attr == "remote"
                    and isinstance(node.value, ast.Attribute)):
                calls.setdefault(cls.name, set()).add(node.value.attr)
    assert set(calls) == set(SERVED_BY), calls  # every stand-in is mapped, and forwards
    missing = [f"{stand_in} → {SERVED_BY[stand_in]}.{name}"
               for stand_in, names in calls.items() for name in sorted(names)
               if not callable(getattr(getattr(deployments, SERVED_BY[stand_in]).func_or_class,
                                       name, None))]
    assert missing == []
    assert {"page_chunks", "pages", "readable", "fingerprints"} <= calls["RemoteCatalog"]


def test_a_stand_in_missing_a_method_is_caught():
    """The check itself: the stand-in as it was before page_chunks was served."""
    from finrag.serving.remote import RemoteCatalog

    class OldRemoteCatalog:
        document, pages = RemoteCatalog.document, RemoteCatalog.pages

    problems = signature_problems(CatalogReader, OldRemoteCatalog)
    assert "OldRemoteCatalog has no method page_chunks" in problems
    assert len(problems) == 3  # page_chunks, readable, fingerprints


# the Pipeline through its Protocols alone ---------------------------------------------------
class Seen:
    """``obj`` through ``proto``: declared members pass (and are counted in ``used``), any
    other attribute is an AttributeError naming the Protocol that lacks it."""

    def __init__(self, obj, proto: type, used: set[str], nested: dict[str, type] | None = None):
        methods, attributes = members(proto)
        self.__dict__.update(_obj=obj, _proto=proto, _names=methods | attributes, _used=used,
                             _nested=nested or {})

    def __getattr__(self, name: str):
        if name not in self._names:
            raise AttributeError(f"the Pipeline used {name!r}, which {self._proto.__name__} "
                                 f"does not declare (retrieval/systems/components.py)")
        self._used.add(f"{self._proto.__name__}.{name}")
        value = getattr(self._obj, name)
        if name in self._nested:
            return Seen(value, self._nested[name], self._used)
        return value

    def __setattr__(self, name, value):
        raise AttributeError(f"the Pipeline set {name!r} on a component")


ALL_STAGES = dict(statement_pages=1, section_pages=1)


@pytest.fixture(scope="module")
def meta_index(tmp_path_factory, demo_corpus, embedder):
    from finrag.retrieval.indexer import Ingestor

    folder = tmp_path_factory.mktemp("seams") / "meta"
    paths = [p for p in demo_corpus.pdf_paths if p.stem in ("LUMENFIELD_2023_10K",
                                                          "BRIGHTQUARRY_2023_10K")]
    ingestor = Ingestor(folder, embedder, metadata=demo_corpus.metadata_path, variant="meta")
    report = ingestor.run(paths, progress=False)
    ingestor.close()
    assert report.ok and len(report.added) == 2
    return folder


NVDA_FACTS = SHARED / "data" / "sec" / "companyfacts" / "CIK0001045810.json"


@pytest.fixture(scope="module")
def facts_index(demo_index, tmp_path_factory, embedder):
    """The demo filings and NVIDIA's XBRL facts (the facts route's answers)."""
    from finrag.retrieval.indexer import Ingestor

    need_shared(NVDA_FACTS)
    folder = tmp_path_factory.mktemp("seams") / "index"
    shutil.copytree(demo_index, folder)
    ingestor = Ingestor(folder, embedder)
    assert ingestor.run([NVDA_FACTS], progress=False).facts_added > 0
    ingestor.close()
    return folder


@pytest.fixture(scope="module")
def seen_pipeline(facts_index, meta_index):
    from finrag.retrieval.systems.pipelines import Pipeline

    base = Pipeline.load(facts_index, profile="tiny", variant_dirs={"meta": meta_index})
    prof = base.profile.model_copy(update={"pipeline": base.profile.pipeline.model_copy(
        update=ALL_STAGES)})
    used: set[str] = set()

    def index(i):
        return Seen(i, SearchIndex, used, {"catalog": CatalogReader})

    engine = base.engine("generator")  # the tiny profile's roles share one model
    pipe = Pipeline(index(base.index), Seen(base.embedder, QueryEmbedder, used), prof,
                    variants={v: index(i) for v, i in base.variants.items()},
                    light=Seen(base.light, Reranker, used),
                    engines={prof.role("generator").model: Seen(engine, LLMEngine, used)},
                    meter=base.meter, router=Seen(base.router, QuestionRouter, used),
                    facts=Seen(base.facts, FactsSource, used, {"store": FactLookup}))
    yield pipe, used
    base.close()


@pytest.mark.slow
def test_the_pipeline_uses_exactly_what_its_protocols_declare(seen_pipeline):
    """Nine answers by five systems with every optional stage on, eight of them generated
    by the tiny profile's LLM, with agentic's checks and SFR's map-reduce over a whole 10-Q
    (about 12 s on two cores; 155 s when that LLM was SmolLM2)."""
    pipe, used = seen_pipeline
    assert pipe.settings.statement_pages and pipe.settings.section_pages
    facts_q = "What was NVIDIA's revenue in fiscal 2024?"
    # an amount no metric names: the router LLM settles the facts route (its extract call)
    undecided_q = "How much did NVIDIA pay for its acquisitions in fiscal 2024?"
    reading_q = ("What does Lumenfield Software's FY2023 income statement say about operating "
                 "expenses, and why did they change?")
    yes_no_q = "Did Lumenfield Software report any legal proceedings in fiscal 2023?"  # a verdict
    asked = [(facts_q, "hdrr"), (undecided_q, "hdrr"), (reading_q, "hdrr"), (yes_no_q, "hdrr"),
             (reading_q, "cbr"), (reading_q, "agentic"),
             (reading_q, "cbr_meta"),
             ("What did Lumenfield Software report in its 10-Q for the second quarter of fiscal "
              "2024?", "sfr")]
    answers = {}
    for question, system in asked:
        a = pipe.answer(question, system)
        assert a.answer.strip(), (system, question)
        answers[question, system] = a
    assert answers[facts_q, "hdrr"].route == "metric_lookup"
    assert answers[facts_q, "hdrr"].facts and answers[facts_q, "hdrr"].usage["llm_calls"] == 0
    reading = answers[reading_q, "hdrr"]
    assert reading.routing.doc_ids == ["LUMENFIELD_2023_10K"]
    assert "statements" in reading.timings_ms  # the income statement's pages were looked up
    assert {c.doc_id for c in reading.citations} <= {"LUMENFIELD_2023_10K", "XBRL"}
    assert answers[yes_no_q, "hdrr"].verdict["word"] in ("Yes", "No")
    assert "sections" in answers[yes_no_q, "hdrr"].timings_ms  # legal proceedings looked up
    assert answers[asked[-1]].usage["llm_calls"] >= 1
    # a caller's view (the demo filings are in the default collection) reads through the same
    # Protocols: its catalog's readable ids, the router's and the facts' scoped views
    view = pipe.scoped(["default"])
    assert view.answer(reading_q, "hdrr").routing.doc_ids == ["LUMENFIELD_2023_10K"]
    declared = {f"{p.__name__}.{n}" for p in (SearchIndex, CatalogReader, QueryEmbedder,
                                               Reranker, LLMEngine, FactsSource, FactLookup,
                                               QuestionRouter)
                for group in members(p) for n in group}
    # Reranker.name is read by the cascade's reports only; close() when the pipeline closes
    assert declared - used == {"Reranker.name", "SearchIndex.close"}
    pipe.close()
    assert "SearchIndex.close" in used
