"""Index variants: V-A (metadata prefix) and V-B (LLM-written chunk contexts, persisted and
resumable), on the demo corpus with the real MiniLM embedder and the tiny profile's LLM."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from finrag.retrieval.ingest.chunking import chunk_pages
from finrag.retrieval.systems.context import mark_pages
from finrag.retrieval.documents import DocumentMeta
from finrag.retrieval.store.index import Index
from finrag.retrieval.indexer import Ingestor
from finrag.retrieval.ingest.prepare import parse_file
from finrag.retrieval.ingest.variants import (ContextStore, Contextualizer, clean_context, indexed_chunks,
                                meta_prefix)

REPO = Path(__file__).resolve().parents[2]
PICK = ("BRIGHTQUARRY_2022_10K", "HARLOWFINCH_2025Q1_10Q")
HARLOW_PREFIX = "[Company: Harlow & Finch Stores, Inc., Fiscal Year: 2025, Quarter: Q1, Type: 10-Q]"


def _chunks(folder: Path):
    """(doc_id, seq, text, first_page, last_page, start_char, end_char) in document order."""
    with Index.open(folder) as index:
        return index.catalog.db.execute(
            "SELECT d.doc_id, c.seq, c.text, c.first_page, c.last_page, c.start_char, c.end_char "
            "FROM chunks c JOIN documents d ON c.doc = d.id ORDER BY d.doc_id, c.seq").fetchall()


def _build(folder, embedder, paths, metadata, **kw):
    ing = Ingestor(folder, embedder, metadata=metadata, **kw)
    try:
        report = ing.run(paths, progress=False)
    finally:
        ing.close()
    assert report.ok, report.failed
    return report


# V-A ----------------------------------------------------------------------------------------
def test_meta_prefix_names_what_is_known():
    k = DocumentMeta("ACME_2022_10K", "Acme  Corp", "10-K", fiscal_year=2022)
    assert meta_prefix(k) == "[Company: Acme Corp, Fiscal Year: 2022, Type: 10-K]"
    q = DocumentMeta("ACME_2023Q2_10Q", "Acme Corp", "10-Q", fiscal_year=2023, fiscal_quarter=2)
    assert meta_prefix(q) == "[Company: Acme Corp, Fiscal Year: 2023, Quarter: Q2, Type: 10-Q]"
    assert meta_prefix(DocumentMeta("X", "Acme Corp", "")) == "[Company: Acme Corp]"


@pytest.fixture(scope="module")
def plain_and_meta(tmp_path_factory, demo_corpus, embedder):
    paths = [p for p in demo_corpus.pdf_paths if p.stem in PICK]
    assert len(paths) == len(PICK)
    root = tmp_path_factory.mktemp("variants")
    for variant in ("plain", "meta"):
        _build(root / variant, embedder, paths, demo_corpus.metadata_path, variant=variant)
    return root / "plain", root / "meta"


def test_meta_variant_prefixes_the_indexed_text(plain_and_meta, embedder):
    plain, meta = plain_and_meta
    a, b = _chunks(plain), _chunks(meta)
    assert len(a) == len(b) > 0
    with Index.open(meta) as index:
        assert index.settings.variant == "meta"
        docs = {d.doc_id: d for d in index.documents()}
    for pa, pb in zip(a, b):
        assert pa[:2] == pb[:2] and pa[3:] == pb[3:]  # same seq, pages and page-text offsets
        d = docs[pb[0]]
        prefix = meta_prefix(DocumentMeta(d.doc_id, d.company, d.doc_type, d.fiscal_year,
                                          d.fiscal_quarter))
        assert pb[2] == prefix + " " + pa[2]
        assert pb[2].count("\n") == pa[2].count("\n")  # newlines stay page breaks only
        assert mark_pages(pb[2], pb[3]) == prefix + " " + mark_pages(pa[2], pa[3])
    assert any(t.startswith(HARLOW_PREFIX + " ") for _, _, t, *_ in b)
    assert all(t.startswith("[Company: Brightquarry Software, Inc., Fiscal Year: 2022, Type: 10-K]")
               for doc, _, t, *_ in b if doc == "BRIGHTQUARRY_2022_10K")

    # the vectors are the embeddings of the prefixed text, so they differ from plain's
    with Index.open(plain) as ip, Index.open(meta) as im:
        ids_a, va = ip.catalog.vectors()
        ids_b, vb = im.catalog.vectors()
        assert np.allclose(va, embedder.encode([t for _, _, t, *_ in a]), atol=1e-4)
        assert np.allclose(vb, embedder.encode([t for _, _, t, *_ in b]), atol=1e-4)
        cos = np.sum(va * vb, axis=1) / (np.linalg.norm(va, axis=1) * np.linalg.norm(vb, axis=1))
        assert (cos < 0.999).all() and (cos > 0.3).all()
        # FAISS holds the same (prefixed) vectors as the catalog
        q = embedder.encode(["Harlow & Finch quarterly report fiscal 2025 Q1"])[0]
        hits = im.search_dense(q, 5)
        assert hits and all(np.isclose(s, float(vb[list(ids_b).index(c)] @ q), atol=1e-4)
                            for c, s in hits)


def test_meta_variant_fts_finds_a_company_by_name(plain_and_meta):
    plain, meta = plain_and_meta
    for folder, expect_all in ((meta, True), (plain, False)):
        with Index.open(folder) as index:
            harlow = set(index.catalog.chunk_ids(index.scope(["HARLOWFINCH_2025Q1_10Q"])).tolist())
            hits = index.search_fts("Harlow Finch", 1000)
            found = {c for c, _ in hits}
            if expect_all:
                # every chunk of the company's filing carries its name in the prefix
                assert harlow <= found
                texts = index.catalog.chunks([c for c, _ in hits[:10]])
                assert all(texts[c].text.startswith(HARLOW_PREFIX) for c, _ in hits[:10])
                assert all(texts[c].doc_id == "HARLOWFINCH_2025Q1_10Q" for c, _ in hits[:10])
            else:
                assert len(found & harlow) < len(harlow)  # plain: only where the text says so
            # the prefix terms are indexed: Type/Quarter tokens match only the meta index
            q1 = {c for c, _ in index.search_fts("Quarter Q1 Type", 1000)}
            assert (harlow <= q1) == expect_all


@pytest.mark.slow
def test_cbr_meta_answers_from_the_meta_index(plain_and_meta, demo_corpus):
    """CBR over the V-A index: the same search, run on the prefixed chunks of the variant."""
    from finrag.retrieval.systems.pipelines import Pipeline

    plain, meta = plain_and_meta
    q = json.loads(Path(demo_corpus.questions_path).read_text().splitlines()[0])
    pipe = Pipeline.load(plain, profile="tiny", variant_dirs={"meta": meta})
    try:
        a = pipe.answer(q["question"], "cbr_meta")
    finally:
        pipe.close()
    assert a.system == "cbr_meta" and a.answer.strip() and a.routing is None
    kept = a.retrieved["context"]
    assert kept and [c["role"] for c in a.usage["calls"]] == ["generator"]
    with Index.open(meta) as index:  # every chunk it read is a chunk of the meta index
        texts = index.catalog.chunks([r["chunk_id"] for r in kept])
    assert len(texts) == len(kept) and all(t.text.startswith("[Company: ") for t in texts.values())


def test_variant_mismatch_is_refused(plain_and_meta, embedder):
    plain, meta = plain_and_meta
    with pytest.raises(ValueError, match=r"variant='meta'; this run asks for 'plain'"):
        Ingestor(meta, embedder)
    with pytest.raises(ValueError, match=r"variant='plain'; this run asks for 'meta'"):
        Ingestor(plain, embedder, variant="meta")
    with pytest.raises(ValueError, match="unknown index variant"):
        Ingestor(plain, embedder, variant="fancy")
    with pytest.raises(ValueError, match="needs a contextualizer"):
        Ingestor(plain, embedder, variant="llmctx")


@pytest.mark.slow
def test_cli_ingest_variant(demo_corpus, tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    pdf = next(p for p in demo_corpus.pdf_paths if p.stem == "HARLOWFINCH_2025Q1_10Q")
    base = [sys.executable, "-m", "finrag.serving.cli", "ingest", str(pdf), "--metadata",
            str(demo_corpus.metadata_path), "--index", str(tmp_path / "idx"), "-q"]
    res = subprocess.run(base + ["--variant", "meta", "--json"], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["variant"] == "meta" and out["added"] == 1
    res = subprocess.run(base + ["--variant", "plain"], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 2
    assert "error: index" in res.stderr and "variant='meta'" in res.stderr
    assert "Use another --index folder" in res.stderr


# V-B ----------------------------------------------------------------------------------------
class CountingLLM:
    """The real engine, counting the prompts it is asked to complete."""

    def __init__(self, engine):
        self.engine = engine
        self.model_id = engine.model_id
        self.prompts = 0

    def generate(self, prompts, params=None):
        self.prompts += len(prompts)
        return self.engine.generate(prompts, params)

    def count_tokens(self, text):
        return self.engine.count_tokens(text)


@pytest.fixture(scope="module")
def tiny_llm():
    from finrag.models.profiles import load_config, load_llm

    return load_llm(load_config(env={}).active("tiny"), "generator")


@pytest.fixture(scope="module")
def small_filing(tmp_path_factory, demo_corpus):
    """The 10-Q's cover page and one page of text, under the filing's own name."""
    import pymupdf

    src = next(p for p in demo_corpus.pdf_paths if p.stem == "HARLOWFINCH_2025Q1_10Q")
    out = tmp_path_factory.mktemp("small") / src.name
    doc = pymupdf.open(src)
    doc.select([0, 3])
    doc.save(out)
    return out


LLMCTX = dict(chunk_size=3000, chunk_overlap=0, variant="llmctx")  # two chunks
CAP = 64  # tokens per context in these tests (the default is 100): keeps them quick on 2 cores


def test_clean_context():
    assert clean_context("Context:  The chunk is from\nAcme's 10-K.  ", False) == \
        "The chunk is from Acme's 10-K."
    cut = "This chunk covers Acme's fiscal 2022 revenue. It sits in Item 7 and also the"
    assert clean_context(cut, True) == "This chunk covers Acme's fiscal 2022 revenue."
    assert clean_context("no sentence end at all in this truncated note", True) == \
        "no sentence end at all in this truncated note"


@pytest.mark.slow
def test_llmctx_contexts_persisted_reused_and_resumable(tiny_llm, small_filing, demo_corpus,
                                                         embedder, tmp_path):
    meta_path = demo_corpus.metadata_path
    parsed = parse_file(small_filing)
    plain = chunk_pages(parsed.pages, size=LLMCTX["chunk_size"], overlap=LLMCTX["chunk_overlap"])
    n = len(plain)
    assert 2 <= n <= 4

    # a clean build: one LLM call per chunk, each context persisted and prefixed to its chunk
    llm = CountingLLM(tiny_llm)
    clean = tmp_path / "clean"
    report = _build(clean, embedder, [small_filing], meta_path,
                    contextualizer=Contextualizer(llm, batch_size=1, max_tokens=CAP), **LLMCTX)
    assert llm.prompts == n == report.contexts_generated and report.contexts_reused == 0
    assert report.summary()["contexts_generated"] == n
    rows = _chunks(clean)
    with Index.open(clean) as index:
        assert index.settings.variant == "llmctx"
        assert index.settings.context_model == tiny_llm.model_id
        stored = index.catalog.db.execute(
            "SELECT seq, context, completion_tokens, model FROM chunk_contexts ORDER BY seq"
        ).fetchall()
    assert [s for s, *_ in stored] == [c.seq for c in plain]
    for (doc, seq, text, fp, lp, start, end), chunk, (_, ctx, ntok, model) in zip(rows, plain,
                                                                                 stored):
        assert doc == small_filing.stem and model == tiny_llm.model_id
        assert ctx and 0 < ntok <= CAP and tiny_llm.count_tokens(ctx) <= CAP + 4
        assert "\n" not in ctx and text == ctx + " " + chunk.text  # as indexed
        assert (seq, fp, lp, start, end) == (chunk.seq, chunk.first_page, chunk.last_page,
                                             chunk.start, chunk.end)
    with Index.open(clean) as index:  # FTS and dense both see the context
        ids, vecs = index.catalog.vectors()
        assert np.allclose(vecs, embedder.encode([r[2] for r in rows]), atol=1e-4)

    # the document removed and added again: every context comes from the store, no LLM call
    with Index.open(clean, readonly=False) as index:
        index.remove_document(small_filing.stem)
    again = CountingLLM(tiny_llm)
    report = _build(clean, embedder, [small_filing], meta_path,
                    contextualizer=Contextualizer(again, batch_size=1, max_tokens=CAP), **LLMCTX)
    assert again.prompts == 0 and report.contexts_reused == n and report.added
    assert [r[2] for r in _chunks(clean)] == [r[2] for r in rows]
    # and a re-run skips the document without loading a model
    def no_model():
        raise AssertionError("the LLM should not be loaded")
    report = _build(clean, embedder, [small_filing], meta_path,
                    contextualizer=Contextualizer(no_model, model_id=tiny_llm.model_id), **LLMCTX)
    assert report.skipped and not report.added

    # a build interrupted after the first context keeps it; the resumed build writes the rest
    killed = tmp_path / "killed"
    first = CountingLLM(tiny_llm)

    def interrupt(seq, context):
        raise KeyboardInterrupt

    ing = Ingestor(killed, embedder, metadata=meta_path,
                   contextualizer=Contextualizer(first, batch_size=1, max_tokens=CAP,
                                                  on_context=interrupt),
                   **LLMCTX)
    with pytest.raises(KeyboardInterrupt):
        ing.run([small_filing], progress=False)
    ing.close()
    assert first.prompts == 1
    with Index.open(killed, readonly=False) as index:
        assert index.catalog.counts()["documents"] == 0  # the document is all or nothing
        assert ContextStore(index.catalog.db).count() == 1
    second = CountingLLM(tiny_llm)
    report = _build(killed, embedder, [small_filing], meta_path,
                    contextualizer=Contextualizer(second, batch_size=1, max_tokens=CAP), **LLMCTX)
    assert second.prompts == n - 1 == report.contexts_generated and report.contexts_reused == 1
    assert _chunks(killed) == rows  # the same index texts as the clean build

    # an llmctx index refuses another variant and another context model
    with pytest.raises(ValueError, match=r"variant='llmctx'; this run asks for 'meta'"):
        Ingestor(clean, embedder, chunk_size=3000, chunk_overlap=0, variant="meta")
    with pytest.raises(ValueError, match="context_model"):
        Ingestor(clean, embedder, contextualizer=Contextualizer(no_model, model_id="other/llm"),
                 **LLMCTX)


def test_indexed_chunks_keep_pages_and_offsets():
    from finrag.retrieval.documents import Chunk

    meta = DocumentMeta("A", "Acme", "10-K", fiscal_year=2022)
    chunks = [Chunk(0, "Revenue grew.", 3, 4, 100, 113)]
    assert indexed_chunks("plain", meta, chunks) == chunks
    (m,) = indexed_chunks("meta", meta, chunks)
    assert m.text == "[Company: Acme, Fiscal Year: 2022, Type: 10-K] Revenue grew."
    (c,) = indexed_chunks("llmctx", meta, chunks, ["Acme's 10-K,\nMD&A."])
    assert c.text == "Acme's 10-K, MD&A. Revenue grew."
    for x in (m, c):
        assert (x.seq, x.first_page, x.last_page, x.start, x.end) == (0, 3, 4, 100, 113)
    assert chunks[0].text == "Revenue grew."  # the input is not changed
    with pytest.raises(ValueError, match="one context per chunk"):
        indexed_chunks("llmctx", meta, chunks, [])
