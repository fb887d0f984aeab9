"""Real FinanceBench filings through the whole foundation: parse, chunk, embed, index, search."""

import json

import pytest

from conftest import FINANCEBENCH, need_shared

pytestmark = pytest.mark.integration

DOCS = ["AMCOR_2022_8K_dated-2022-07-01", "AMCOR_2023Q4_EARNINGS",
        "FOOTLOCKER_2022_8K_dated-2022-05-20", "JOHNSON_JOHNSON_2022Q4_EARNINGS",
        "JOHNSON_JOHNSON_2023Q2_EARNINGS", "ULTABEAUTY_2023Q4_EARNINGS"]


@pytest.fixture(scope="module")
def fb_index(tmp_path_factory, embedder):
    from finrag.retrieval.indexer import Ingestor

    need_shared(FINANCEBENCH)
    folder = tmp_path_factory.mktemp("fb-index")
    ingestor = Ingestor(folder, embedder, metadata=FINANCEBENCH / "documents.jsonl")
    report = ingestor.run([FINANCEBENCH / "pdfs" / f"{d}.pdf" for d in DOCS], progress=False)
    ingestor.close()
    assert report.ok, report.failed
    return folder


def _questions():
    path = FINANCEBENCH / "questions.dev.jsonl"
    if not path.exists():
        return []
    return [q for q in map(json.loads, path.read_text().splitlines()) if q["doc_name"] in DOCS]


def test_catalog_metadata_of_real_filings(fb_index):
    from finrag.retrieval.store.index import Index

    with Index.open(fb_index) as index:
        docs = {d.doc_id: d for d in index.documents()}
    assert set(docs) == set(DOCS)
    jnj = docs["JOHNSON_JOHNSON_2023Q2_EARNINGS"]
    assert (jnj.company, jnj.ticker, jnj.doc_type, jnj.fiscal_year, jnj.fiscal_quarter) == \
        ("Johnson & Johnson", "JNJ", "earnings", 2023, 2)
    amcor = docs["AMCOR_2022_8K_dated-2022-07-01"]
    assert (amcor.doc_type, amcor.filing_date) == ("8-K", "2022-07-01")
    assert all(d.page_count > 0 and d.chunk_count > 0 for d in docs.values())


def test_evidence_text_finds_its_page(fb_index, embedder):
    from finrag.retrieval.store.index import Index

    questions = _questions()
    assert len(questions) >= 10
    found_scoped = found_doc = 0
    with Index.open(fb_index) as index:
        for q in questions:
            ev = q["evidence"][0]
            page = ev["evidence_page_num"] + 1  # FinanceBench pages are 0-based
            text = " ".join(ev["evidence_text"].split())[:400]
            vec = embedder.encode([text])[0]
            hits = index.search(text, vec, k=3, doc_ids=[q["doc_name"]])
            found_scoped += any(h.first_page <= page <= h.last_page for h in hits)
            found_doc += index.search(text, vec, k=1)[0].doc_id == q["doc_name"]
    # an evidence passage, searched inside its filing, lands on its page
    assert found_scoped >= len(questions) - 1, (found_scoped, len(questions))
    assert found_doc >= len(questions) - 2, (found_doc, len(questions))


def test_tables_of_a_real_filing(fb_index):
    from finrag.retrieval.store.index import Index

    with Index.open(fb_index) as index:
        tables = index.catalog.tables("AMCOR_2023Q4_EARNINGS")
    assert len(tables) >= 5
    labels = [r["label"] for t in tables for r in t["rows"]]
    assert any("Net sales" in l for l in labels)
    assert all(t["header"][0] == "label" and t["rows"] for t in tables)


def test_one_text_extraction_reads_what_two_did():
    """``parse_pdf`` reads a page's text and its table words from one extraction: the same text
    and tables as extracting each on its own."""
    import pymupdf

    from finrag.retrieval.ingest.pdf import parse_pdf
    from finrag.retrieval.ingest.tables import find_tables

    need_shared(FINANCEBENCH)
    path = FINANCEBENCH / "pdfs" / "3M_2018_10K.pdf"
    parsed = parse_pdf(path)
    with pymupdf.open(path) as doc:
        apart = [(page.get_text("text", sort=False),
                  find_tables(page.get_text("words"), page.number + 1)) for page in doc]
    assert len(parsed.pages) == len(apart) == 160
    assert sum(len(tables) for _, tables in apart) > 20
    assert [(p.text, p.tables) for p in parsed.pages] == apart
