from finrag.retrieval.ingest.chunking import chunk_pages, join_pages
from finrag.retrieval.documents import ParsedPage
import pytest


def _pages(n, chars=1800):
    # each page's words carry the page number, so a chunk's text says which pages it covers
    return [ParsedPage(number=i, text=" ".join(f"p{i}w{j}" for j in range(chars // 8)))
            for i in range(1, n + 1)]


def test_chunks_respect_size_overlap_and_page_spans():
    pages = _pages(6)
    chunks = chunk_pages(pages, size=2500, overlap=1250)
    text, starts = join_pages(pages)
    assert len(chunks) >= 4
    for c in chunks:
        assert len(c.text) <= 2500
        assert not c.text.startswith(" ") and "  " not in c.text
        # the words in the chunk belong exactly to the pages it claims
        pages_in_text = {int(w[1:w.index("w")]) for w in c.text.split()}
        assert min(pages_in_text) == c.first_page
        assert max(pages_in_text) == c.last_page
        assert text[c.start:c.end].strip() == c.text
    # consecutive chunks overlap by about `overlap` characters and cover the whole text
    for a, b in zip(chunks, chunks[1:]):
        assert b.start < a.end
        assert abs((a.end - b.start) - 1250) < 60
    assert chunks[0].start == 0 and chunks[-1].end == len(text)
    assert [c.seq for c in chunks] == list(range(len(chunks)))


def test_words_are_never_cut():
    pages = _pages(3)
    words = set(" ".join(p.text for p in pages).split())
    for c in chunk_pages(pages, size=700, overlap=300):
        assert set(c.text.split()) <= words


def test_short_document_and_empty_pages():
    pages = [ParsedPage(1, "Tiny filing."), ParsedPage(2, ""), ParsedPage(3, "Last page text.")]
    chunks = chunk_pages(pages, size=2500, overlap=1250)
    assert len(chunks) == 1
    assert chunks[0].first_page == 1 and chunks[0].last_page == 3


@pytest.mark.parametrize("size,overlap", [(0, 0), (100, 100), (100, -1)])
def test_bad_settings(size, overlap):
    with pytest.raises(ValueError):
        chunk_pages(_pages(1), size=size, overlap=overlap)
