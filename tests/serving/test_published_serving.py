"""Serving from a publish root (`finrag publish`), in process with the real Retriever deployment,
Pipeline, index and embedder: a newer version is served from the next call on, a request in
flight on the old one finishes on it, and writes are refused."""

import shutil
import threading
import time

import pytest
from conftest import ALPHA, BETA

from finrag.models.profiles import load_config
from finrag.retrieval.indexer import Ingestor
from finrag.retrieval.store.index import Index
from finrag.retrieval.store.publish import publish
from finrag.retrieval.systems.pipelines import Pipeline
from finrag.serving import deployments
from finrag.serving.admission import ApiError
from finrag.serving.tokens import Grant
from finrag.serving.writes import IndexWriter

NEW = "LUMENFIELD_2023_10K"


@pytest.fixture
def published(two_collections, tmp_path):
    source = tmp_path / "index"
    shutil.copytree(two_collections, source)
    root = tmp_path / "published"
    publish(source, root)
    return source, root


def _ingest_new(source, demo_corpus, embedder):
    ingestor = Ingestor(source, embedder, metadata=demo_corpus.metadata_path)
    try:
        assert ingestor.run([demo_corpus.out_dir / f"{NEW}.pdf"], progress=False).ok
    finally:
        ingestor.close()


def test_the_retriever_switches_versions_without_failing_a_request(published, demo_corpus,
                                                                    embedder):
    source, root = published
    retriever = deployments.Retriever.func_or_class({"index": str(root), "profile": "tiny"})
    reader = retriever.indexes[None]
    assert {d["doc_id"] for d in retriever.documents()} == set(ALPHA + BETA)
    assert retriever.facts_available() is not None
    vector = embedder.encode(["total revenue"])[0]

    # a search in flight on v000001, held inside its dense search
    old = reader._index
    entered, release = threading.Event(), threading.Event()
    search = old.vectors.search

    def held(*args, **kwargs):
        entered.set()
        release.wait(60)
        return search(*args, **kwargs)

    old.vectors.search = held
    result, failed = [], []

    def in_flight():
        try:
            result.append(retriever.search("total revenue", vector, k=5))
        except BaseException as e:
            failed.append(e)

    thread = threading.Thread(target=in_flight)
    thread.start()
    assert entered.wait(60)

    _ingest_new(source, demo_corpus, embedder)
    assert publish(source, root).name == "v000002"
    time.sleep(reader.recheck_s + 0.05)
    docs = {d["doc_id"] for d in retriever.documents()}  # the next call
    assert docs == set(ALPHA + BETA + [NEW]) and reader.snapshot.name == "v000002"
    assert retriever.generation() == reader.generation()
    assert retriever.document(NEW) is not None
    assert retriever.facts_available() is not None  # over the new version's catalog
    assert retriever._facts_catalog is reader.catalog

    release.set()
    thread.join(60)
    assert not failed, failed
    assert len(result) == 1 and result[0]
    assert {h.doc_id for h in result[0]} <= set(ALPHA + BETA)  # answered from v000001


def test_a_pipeline_over_a_publish_root_drops_what_it_read_from_the_old_version(
        published, demo_corpus, embedder):
    source, root = published
    index = Index.open(root)
    index.recheck_s = 0
    pipe = Pipeline(index, embedder, load_config().active("tiny"))
    first = pipe.facts
    assert first.store.db is index.catalog.db
    view = pipe.scoped(frozenset({"beta"}))
    assert view.index.readable == frozenset(BETA)
    _ingest_new(source, demo_corpus, embedder)  # into collection "default"
    with Index.open(source, readonly=False) as writer:
        writer.catalog.change_collections(NEW, add=["beta"])
    publish(source, root)
    view = pipe.scoped(frozenset({"beta"}))
    assert view.index.readable == frozenset(BETA + [NEW])
    assert pipe.facts is not first and pipe.facts.store.db is index.catalog.db
    pipe.close()


def test_writes_to_a_published_index_are_refused(published, embedder):
    from finrag.retrieval.routing.companies import CompanyTable

    _, root = published
    writer = IndexWriter(root, embedder, CompanyTable.load(), max_upload_bytes=2**20)
    admin = Grant("admin", None, ingest=True, admin=True)
    with pytest.raises(ApiError) as refused:
        writer.remove(admin, ALPHA[0])
    assert (refused.value.status, refused.value.kind) == (409, "read_only")
    assert "published snapshot" in refused.value.message
    assert sorted(p.name for p in root.iterdir()) == ["CURRENT", "v000001", "write.lock"]
