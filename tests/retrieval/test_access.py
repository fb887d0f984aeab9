"""Who may read what, at the index: collections in the catalog, the scoped index, scoped facts,
and a pipeline's view of some collections asked about what lies outside them.

Two collections hold look-alike filings of different companies (the demo corpus): `alpha`
Brightquarry and Harlow & Finch, `beta` Lumenfield and Quillon."""

import json
import sqlite3

import pytest
from conftest import ALPHA, BETA, secrets_of

from finrag.retrieval.documents import DEFAULT_COLLECTION, check_collections
from finrag.retrieval.facts.model import Fact
from finrag.retrieval.facts.store import FactStore
from finrag.retrieval.routing.companies import Company
from finrag.retrieval.store.access import ScopedIndex
from finrag.retrieval.store.index import Index, UnknownDocumentError

def test_collections_are_set_at_ingest_and_changed_later(two_collections, tmp_path):
    with Index.open(two_collections) as index:
        have = {d.doc_id: d.collections for d in index.documents()}
        assert have == {**{d: ["alpha"] for d in ALPHA}, **{d: ["beta"] for d in BETA}}
        assert index.catalog.collection_counts() == {"alpha": 2, "beta": 2}
        assert index.catalog.readable(frozenset({"alpha"})) == ALPHA
        assert index.catalog.readable(frozenset({"alpha", "beta"})) == sorted(ALPHA + BETA)
        assert index.catalog.readable(frozenset({"nobody"})) == []
        assert index.catalog.readable(None) is None
    copy = tmp_path / "copy"
    copy.mkdir()
    for f in two_collections.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    with Index.open(copy, readonly=False) as index:
        assert index.catalog.change_collections(BETA[0], add=["shared"]) == ["beta", "shared"]
        assert index.catalog.change_collections(BETA[0], remove=["beta"]) == ["shared"]
        with pytest.raises(ValueError, match="in no collection"):
            index.catalog.change_collections(BETA[0], remove=["shared"])
        with pytest.raises(KeyError, match="unknown document 'NOPE'"):
            index.catalog.change_collections("NOPE", add=["x"])
        with pytest.raises(ValueError, match="collection name"):
            index.catalog.change_collections(BETA[0], add=["Bad Name"])
        assert index.catalog.readable(frozenset({"beta"})) == [BETA[1]]
    # an index made before collections: its documents are in the default collection, read-only
    # (no table) and once opened for writing (the table filled)
    db = sqlite3.connect(copy / "catalog.sqlite")
    db.execute("DROP TABLE collections")
    db.commit()
    db.close()
    with Index.open(copy) as index:
        assert {tuple(d.collections) for d in index.documents()} == {(DEFAULT_COLLECTION,)}
        assert index.catalog.readable(frozenset({"beta"})) == []
        assert len(index.catalog.readable(frozenset({DEFAULT_COLLECTION}))) == 4
    with Index.open(copy, readonly=False) as index:
        assert index.catalog.collection_counts() == {DEFAULT_COLLECTION: 4}


def test_collection_names_are_checked():
    assert check_collections([]) == [DEFAULT_COLLECTION]
    assert check_collections(["b", "a", "b"]) == ["a", "b"]
    for bad in (["Drafts"], [""], ["../x"], ["a" * 65], [3]):
        with pytest.raises(ValueError, match="collection name"):
            check_collections(bad)


def test_a_scoped_index_reads_nothing_outside_its_documents(two_collections, embedder):
    with Index.open(two_collections) as index:
        scoped = ScopedIndex(index, ALPHA)
        vector = embedder.encode(["Lumenfield total revenue"])[0]
        hits = scoped.search("Lumenfield total revenue", vector, k=20)
        assert hits and {h.doc_id for h in hits} <= set(ALPHA)
        assert {h.doc_id for h in index.search("Lumenfield total revenue", vector, k=20)} \
            & set(BETA)  # unscoped, the same search does reach beta: the scope did the work
        # a forbidden document fails exactly as one that does not exist
        with pytest.raises(UnknownDocumentError) as forbidden:
            scoped.search("revenue", vector, doc_ids=[BETA[0]])
        with pytest.raises(UnknownDocumentError) as missing:
            index.search("revenue", vector, doc_ids=["NO_SUCH_2024_10K"])
        assert str(forbidden.value).replace(BETA[0], "X") == \
            str(missing.value).replace("NO_SUCH_2024_10K", "X")
        assert scoped.catalog.document(BETA[0]) is None
        assert scoped.catalog.pages(BETA[0]) == [] and scoped.catalog.tables(BETA[0]) == []
        assert scoped.catalog.page_chunks(BETA[0], [1, 2]) == []
        assert scoped.catalog.pages(ALPHA[0]) == index.catalog.pages(ALPHA[0])
        assert [d.doc_id for d in scoped.documents()] == ALPHA
        with pytest.raises(PermissionError):
            scoped.catalog.vectors(None)
        assert ScopedIndex(index, []).search("revenue", vector) == []  # never widened


def test_scoped_facts_read_only_readable_filings(tmp_path):
    db = sqlite3.connect(tmp_path / "facts.sqlite")
    store = FactStore(db)
    acme = Company(key="acme", name="Acme", fiscal_year_end="12-31", cik="0000000001")

    def fact(value, source):
        return Fact(cik=acme.cik, concept="us-gaap:Revenues", unit="USD", start="2024-01-01",
                    end="2024-12-31", value=value, form="10-K", accession=f"acc-{value}",
                    source=source)

    store.add("companyfacts:0000000001", "s1", acme, [fact(1.0, "companyfacts")])
    store.add("table:ACME_2024_10K", "s2", acme, [fact(2.0, "table:ACME_2024_10K#p7")])
    store.add("ixbrl:ACME_2024_DRAFT", "s3", acme, [fact(3.0, "ixbrl:ACME_2024_DRAFT")])

    def values(**scope):
        s = FactStore(db, readonly=True, **scope)
        return sorted(f.value for f in s.lookup(acme.cik, ["us-gaap:Revenues"], periods=("FY",)))

    assert values() == [1.0, 2.0, 3.0]
    assert values(readable=frozenset({"ACME_2024_10K"}), public=True) == [1.0, 2.0]
    assert values(readable=frozenset({"ACME_2024_10K"}), public=False) == [2.0]
    assert values(readable=frozenset({"ACME_2024_DRAFT"}), public=False) == [3.0]
    nothing = FactStore(db, readonly=True, readable=frozenset(), public=False)
    assert nothing.companies() == [] and nothing.fiscal_years(acme.cik) == []
    assert nothing.counts()["facts"] == 0


@pytest.mark.slow
@pytest.mark.integration
def test_a_pipeline_view_never_shows_another_collection(two_collections):
    """The probe suite in process (benchmarks/access_probes.py): a view of `alpha` asked about
    `beta`'s companies by name, ticker, former name and description through every system
    that reads the index, and `beta`'s filings asked for by id: nothing of `beta` anywhere.
    Slow: sixteen answers by four systems on the tiny profile, each retrieved and reranked
    without generation, and agentic's company checks by the tiny profile's LLM, up to three
    an answer (about 30 s on two cores)."""
    from finrag.benchmarks.access_probes import probe_pipeline
    from finrag.retrieval.systems.pipelines import Pipeline

    root = Pipeline.load(two_collections, profile="tiny", use_llm_router=False)
    pipe = root.scoped(["alpha"])
    assert root.scoped(["alpha"]) is pipe and root.scoped(None) is root
    secrets = secrets_of(two_collections, BETA, ALPHA)
    assert len(secrets) > 50
    cases = probe_pipeline(pipe, secrets)
    assert len(cases) == 18
    assert [(c.what, c.leaks) for c in cases if c.leaks] == []
    # the same question over everything does reach beta: the view is what kept it out
    full = root.answer(cases[0].what.split(": ", 1)[1], "hdrr", generate=False).to_dict()
    assert BETA[0] in json.dumps(full)
    root.close()


def test_a_view_of_a_view_only_narrows(two_collections):
    """A reader's view scoped again reads what both scopes allow, never more: the view of
    `alpha` asked for `beta` reads nothing (no model is loaded to see it)."""
    from finrag.retrieval.systems.pipelines import Pipeline

    root = Pipeline.load(two_collections, profile="tiny", use_llm_router=False)
    try:
        both = root.scoped(["alpha", "beta"])
        alpha = both.scoped(["alpha"])
        assert {d.doc_id for d in both.index.catalog.documents()} == set(ALPHA + BETA)
        assert {d.doc_id for d in alpha.index.catalog.documents()} == set(ALPHA)
        assert {d.doc_id for d in alpha.scoped(["alpha"]).index.catalog.documents()} == set(ALPHA)
        assert alpha.scoped(["beta"]).index.catalog.documents() == []
        assert root.scoped(["beta"]).view.collections == frozenset({"beta"})
    finally:
        root.close()


def test_a_scope_read_once_is_read_again_after_any_write(two_collections, tmp_path):
    """The catalog keeps a scope's chunk ids between searches: a document written or removed
    by this connection or by another one is seen at once."""
    import shutil

    from finrag.retrieval.store.catalog import Catalog

    folder = tmp_path / "index"
    shutil.copytree(two_collections, folder)
    reader = Catalog(folder / "catalog.sqlite", readonly=True)
    pks = [reader.document(d).pk for d in ALPHA + BETA]
    before = reader.chunk_ids(pks)
    assert len(before) > 50 and reader.chunk_ids(pks) is before  # kept
    with Index.open(folder, readonly=False) as index:
        own = index.catalog.chunk_ids(pks)
        assert index.remove_document(BETA[0])
        after_own = index.catalog.chunk_ids(pks)
        assert len(after_own) < len(own)  # its own write
        assert index.catalog.id_runs(pks)[-1][1] == int(after_own[-1])
    after = reader.chunk_ids(pks)  # another connection's commit
    assert len(after) == len(after_own) and set(after) < set(before)
    reader.close()


@pytest.mark.slow
def test_a_running_pipeline_sees_a_change_of_the_index_at_once(two_collections, demo_corpus,
                                                               embedder, tmp_path):
    """Another process takes a filing out of `alpha`, then ingests a new one into it and
    removes it again: a view of `alpha` made before (and held) follows each change on its
    next answer, and so does the whole pipeline (routes, vectors, router)."""
    import shutil

    from finrag.retrieval.indexer import Ingestor, remove_document
    from finrag.retrieval.systems.pipelines import Pipeline

    folder = tmp_path / "index"
    shutil.copytree(two_collections, folder)
    root = Pipeline.load(folder, profile="tiny", use_llm_router=False)
    alpha = root.scoped(["alpha"])
    moved = "What was Brightquarry's net income in fiscal 2024?"
    assert alpha.answer(moved, "hdrr", generate=False).routing.doc_ids == [ALPHA[0]]
    with Index.open(folder, readonly=False) as writer:
        writer.catalog.change_collections(ALPHA[0], add=["beta"], remove=["alpha"])
    answer = alpha.answer(moved, "hdrr", generate=False).to_dict()
    assert ALPHA[0] not in json.dumps(answer)
    assert root.scoped(["alpha"]) is not alpha
    assert root.scoped(["beta"]).answer(moved, "hdrr", generate=False).routing.doc_ids == [
        ALPHA[0]]

    new, asked = "LUMENFIELD_2023_10K", "What was Lumenfield Software's total revenue in fiscal 2023?"
    assert new not in root.answer(asked, "hdrr", generate=False).routing.doc_ids
    size = root.index.vectors.size
    ingestor = Ingestor(folder, embedder, metadata=demo_corpus.metadata_path, collections=["alpha"])
    report = ingestor.run([demo_corpus.out_dir / f"{new}.pdf"], progress=False)
    ingestor.close()
    assert report.ok and len(report.added) == 1
    assert root.answer(asked, "hdrr", generate=False).routing.doc_ids == [new]
    assert alpha.answer(asked, "hdrr", generate=False).routing.doc_ids == [new]
    added = root.index.vectors.size - size
    with Index.open(folder) as reader:
        assert added == reader.catalog.document(new).chunk_count > 0
    with Index.open(folder, readonly=False) as writer:
        assert remove_document(writer, new)
    assert new not in json.dumps(root.answer(asked, "cbr", generate=False).to_dict())
    assert root.index.vectors.size == size
    root.close()


def test_a_filing_out_of_a_collection_or_deleted_is_out_of_every_variant(
        two_collections_variants, tmp_path):
    """The variant probe of benchmarks/access_probes.py in process: with V-A and V-B indexes
    beside the index, a filing of `alpha` is taken out of it while a writer holds V-A (so V-A
    has not caught up), published, removed, and published again; the reader who lost it asks
    every system over the index and over the published root, and gets nothing of it. The
    control: before, that reader read it through the variants too. Slow: 25 answers by six
    systems on the tiny profile, and six runs of the command line;
    the variants themselves are built once a session (``two_collections_variants``).
    Measured: about 45 s on two cores."""
    import shutil

    from finrag.benchmarks.access_probes import LEAVER, probe_leaving_in_process
    from finrag.serving.cli import main

    shutil.copytree(two_collections_variants, tmp_path / "copy")
    folder = tmp_path / "copy" / "index"
    variants = {v: folder.with_name(f"index-{v}") for v in ("meta", "llmctx")}

    def finrag(*args):
        assert main(list(args)) == 0, args

    cases, control = probe_leaving_in_process(folder, variants, "tiny", tmp_path, finrag)
    assert {"cbr_meta", "cbr_llmctx"} <= set(control)
    assert len(cases) == 4 * 6 + 1
    assert [(c.what, c.leaks) for c in cases if c.leaks] == []
    with Index.open(variants["meta"]) as meta:  # what the in-step writes left on disk
        assert meta.catalog.document(LEAVER) is None and meta.catalog.document(ALPHA[0])
