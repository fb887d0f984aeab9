"""A filing's page as a picture, with a cited passage highlighted on it (PyMuPDF).

The passage is a chunk of the index: its lines were read from the same page text, so each line
that is on the page is found there again and marked. What was marked comes back as text too, so
a person (or a test) can read what the picture shows.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

MAX_LINES = 300  # lines of a passage looked up on the page (a chunk has ~40)
MIN_CHARS = 6  # shorter lines ("2023", "$") would be found all over the page
# the largest picture of a page: a MediaBox may be 14,400 pt a side (200 in), which at the
# usual zoom is a pixmap of gigabytes; a letter page at 1.5x is 918 x 1188
MAX_SIDE_PX = 4000
MAX_PIXELS = 4_000_000
_SENTENCE = re.compile(r"(?<=[.;:])\s+")


class PageError(Exception):
    """A page that cannot be shown; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass
class PageView:
    png: bytes
    page: int
    page_count: int
    highlighted: list[str] = field(default_factory=list)


def render_page(path: str | Path, page: int, passage: str = "", *,
                zoom: float = 1.5) -> PageView:
    from finrag.retrieval.ingest.kinds import file_kind

    path = Path(path)
    if file_kind(path) != "pdf":  # by its bytes: a PDF named .htm was indexed as a PDF
        raise PageError(415, "page pictures exist for PDF filings only; this filing is "
                             f"{path.suffix.lstrip('.').upper() or 'not a PDF'}")
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception:
        raise PageError(404, "the filing's file cannot be opened on the server") from None
    with doc:
        if not 1 <= page <= doc.page_count:
            raise PageError(404, f"page {page} is not in this filing (pages 1–{doc.page_count})")
        pdf_page = doc[page - 1]
        found = []
        for line in _lines(passage):
            # a passage that runs onto the next page is not found whole: then sentence by sentence
            for piece in [line] if pdf_page.search_for(line) else _SENTENCE.split(line):
                rects = pdf_page.search_for(piece) if len(piece) >= MIN_CHARS else []
                if rects:
                    pdf_page.add_highlight_annot(rects)
                    found.append(piece)
        scale = fit_zoom(pdf_page.rect, zoom)
        pix = pdf_page.get_pixmap(matrix=pymupdf.Matrix(scale, scale), annots=True)
        return PageView(pix.tobytes("png"), page, doc.page_count, found)


def fit_zoom(rect: pymupdf.Rect, zoom: float) -> float:
    """``zoom``, lowered (never raised) until a page of ``rect`` renders within
    ``MAX_SIDE_PX`` a side and ``MAX_PIXELS`` in all."""
    width, height = max(rect.width, 1.0), max(rect.height, 1.0)
    scale = min(zoom, MAX_SIDE_PX / width, MAX_SIDE_PX / height,
                math.sqrt(MAX_PIXELS / (width * height)))
    while True:  # the pixmap's box is rounded outward: a pixel more a side at most
        box = (rect * pymupdf.Matrix(scale, scale)).irect
        if max(box.width, box.height) <= MAX_SIDE_PX and box.width * box.height <= MAX_PIXELS:
            return scale
        scale *= 0.99


def _lines(passage: str) -> list[str]:
    seen, out = set(), []
    for line in passage.splitlines():
        line = " ".join(line.split())
        if len(line) >= MIN_CHARS and line not in seen:
            seen.add(line)
            out.append(line)
    return out[:MAX_LINES]
