"""Split a document's pages into overlapping character windows that know their pages."""

from __future__ import annotations

import bisect

from finrag.retrieval.documents import Chunk, ParsedPage


def join_pages(pages: list[ParsedPage]) -> tuple[str, list[int]]:
    """The document as one string, and the offset at which each page starts."""
    parts, starts, offset = [], [], 0
    for page in pages:
        text = " ".join(page.text.split()) if page.text else ""
        starts.append(offset)
        parts.append(text)
        offset += len(text) + 1  # the "\n" that joins pages
    return "\n".join(parts), starts


def _snap_back(text: str, pos: int, floor: int) -> int:
    """Move a cut back to the nearest whitespace so words stay whole (not past floor)."""
    if pos >= len(text):
        return len(text)
    space = max(text.rfind(" ", floor, pos + 1), text.rfind("\n", floor, pos + 1))
    return space if space > floor else pos


def chunk_pages(pages: list[ParsedPage], *, size: int = 2500, overlap: int = 1250) -> list[Chunk]:
    """Windows of at most ``size`` characters, each starting ``size - overlap`` after the last."""
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError(f"need size > 0 and 0 <= overlap < size (got {size}, {overlap})")
    text, starts = join_pages(pages)
    numbers = [p.number for p in pages]
    step = size - overlap
    chunks: list[Chunk] = []
    start = 0
    while start < len(text):
        end = _snap_back(text, start + size, start + step)
        piece = text[start:end].strip()
        if piece:
            first = numbers[bisect.bisect_right(starts, start) - 1]
            last = numbers[bisect.bisect_right(starts, max(start, end - 1)) - 1]
            chunks.append(Chunk(len(chunks), piece, first, last, start, end))
        if end >= len(text):
            break
        nxt = _snap_back(text, start + step, start)
        start = nxt + 1 if nxt > start else start + step
    return chunks
