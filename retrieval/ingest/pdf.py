"""PDF filings → pages of text (1-based page numbers) and their numeric tables."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from retrieval.documents import DocumentError, ParsedDocument, ParsedPage
from retrieval.ingest.tables import find_tables

pymupdf.TOOLS.mupdf_display_errors(False)  # damaged-file chatter goes to our one-line error


def parse_pdf(path: str | Path, *, tables: bool = True) -> ParsedDocument:
    """Read every page's text; raise DocumentError naming the file if it cannot be read."""
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
        if doc.page_count == 0:
            raise DocumentError(f"{path}: PDF has no pages")
        pages = []
        try:
            for page in doc:
                number = page.number + 1
                text = page.get_text("text", sort=False)
                found = find_tables(page.get_text("words"), number) if tables else []
                pages.append(ParsedPage(number=number, text=text, tables=found))
        except Exception as e:
            raise DocumentError(f"{path}: unreadable page {len(pages) + 1} ({e})") from None
    if not any(p.text.strip() for p in pages):
        raise DocumentError(f"{path}: no extractable text (scanned images only?)")
    return ParsedDocument(pages=pages)
