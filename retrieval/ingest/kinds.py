"""What a file holds: a PDF, an HTML filing or a companyfacts JSON, by its bytes first."""

from __future__ import annotations

from pathlib import Path

SUFFIXES = {".pdf": "pdf", ".htm": "html", ".html": "html", ".json": "facts"}


def file_kind(path: Path) -> str | None:
    """What a file holds: ``pdf`` when its first KiB has the PDF header (the bytes decide,
    whatever the name says: PDF bytes named ``.htm`` are read as a PDF), ``html`` for markup
    under any name, else what its name says (``facts`` for a companyfacts JSON, None for
    an unknown type). A file that cannot be read is judged by its name; reading it says why."""
    by_name = SUFFIXES.get(path.suffix.lower())
    try:
        with path.open("rb") as f:
            head = f.read(1024)
    except OSError:
        return by_name
    if b"%PDF-" in head:
        return "pdf"
    if by_name != "facts" and head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<"):
        return "html"
    return by_name
