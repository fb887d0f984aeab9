"""PDF filings → pages of text (1-based page numbers) and their numeric tables."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from finrag.retrieval.documents import DocumentError, ParsedDocument, ParsedPage
from finrag.retrieval.ingest.limits import DEFAULT_LIMITS, IngestLimits
from finrag.retrieval.ingest.tables import find_tables

pymupdf.TOOLS.mupdf_display_errors(False)  # damaged-file chatter goes to our one-line error


def parse_pdf(path: str | Path, *, tables: bool = True, accept_repaired: bool = False,
              limits: IngestLimits = DEFAULT_LIMITS) -> ParsedDocument:
    """Read every page's text; raise DocumentError naming the file if it cannot be read.

    A damaged file that MuPDF can only open by rebuilding it (a truncated download, a broken
    cross-reference table) is refused unless ``accept_repaired``: its text may be a fraction
    of the filing's, and once indexed a good copy would be refused as a changed file."""
    path = Path(path)
    try:
        head = path.open("rb").read(1024)
    except OSError as e:
        raise DocumentError(f"{path}: cannot read file ({e.strerror})") from None
    if not head:
        raise DocumentError(f"{path}: empty file")
    if b"%PDF" not in head:
        raise DocumentError(f"{path}: not a PDF (no %PDF header)")
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as e:  # pymupdf raises several types for damaged files
        raise DocumentError(f"{path}: corrupt PDF ({e})") from None
    with doc:
        if doc.needs_pass:
            raise DocumentError(f"{path}: encrypted PDF (password required)")
        if doc.is_repaired and not accept_repaired:
            raise DocumentError(f"{path}: damaged PDF (truncated or a broken cross-reference "
                                f"table; it only opens repaired, and part of its text may be "
                                f"missing); refused: index a good copy, or pass "
                                f"--accept-repaired to index what can be read")
        if doc.page_count == 0:
            raise DocumentError(f"{path}: PDF has no pages")
        limits.check_pages(path, doc.page_count)
        pages = []
        try:
            for page in doc:
                number = page.number + 1
                limits.check_page(path, number, 0, len(page.read_contents()))
                # one text extraction serves the text and the table words (the same flags as
                # each would use apart): a fifth to a third less parse time than two extractions
                textpage = page.get_textpage(flags=pymupdf.TEXTFLAGS_TEXT)
                text = page.get_text("text", sort=False, textpage=textpage)
                limits.check_page(path, number, len(text))
                found = find_tables(page.get_text("words", textpage=textpage), number) \
                    if tables else []
                pages.append(ParsedPage(number=number, text=text, tables=found))
        except DocumentError:
            raise
        except Exception as e:
            raise DocumentError(f"{path}: unreadable page {len(pages) + 1} ({e})") from None
    if not any(p.text.strip() for p in pages):
        raise DocumentError(f"{path}: no extractable text (scanned images only?)")
    return ParsedDocument(pages=pages)
