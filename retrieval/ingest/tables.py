"""Find the numeric tables of a page from its word positions and keep them as JSON rows.

Financial statements in filings are laid out as a label followed by aligned figures under
column headers (years, periods). Ruled-table detectors miss most of them (shaded rows, no
borders) and are slow, so this reads the words' coordinates instead: a run of lines that end in
figures is a table; the line above it that holds the column titles is its header; each row
becomes ``{"label": ..., <header>: <figure>, ...}``.
"""

from __future__ import annotations

import re
from statistics import median

from finrag.retrieval.documents import Table

_FIGURE = re.compile(r"^\(?-?\$?\(?\d[\d,]*(\.\d+)?\)?%?\)?$|^[—–-]+$")
_YEARISH = re.compile(r"^(19|20)\d\d$")
_MIN_ROWS = 3
_MAX_GAP_LINES = 2  # label-only lines (sub-headings) allowed inside a table


def _lines(words: list[tuple]) -> list[list[tuple[float, float, str]]]:
    """Group words into visual lines by vertical centre; each word as (x0, x1, text)."""
    rows: list[tuple[float, list[tuple[float, float, str]]]] = []
    for x0, y0, x1, y1, text, *_ in sorted(words, key=lambda w: ((w[1] + w[3]) / 2, w[0])):
        yc = (y0 + y1) / 2
        if rows and abs(rows[-1][0] - yc) <= 3.0:
            rows[-1][1].append((x0, x1, text))
        else:
            rows.append((yc, [(x0, x1, text)]))
    return [sorted(ws) for _, ws in rows]


def _merge_symbols(tokens: list[tuple[float, float, str]]) -> list[tuple[float, float, str]]:
    """Join a lone '$' to the next token and a lone ')' or '%' to the previous one."""
    out: list[tuple[float, float, str]] = []
    pending_dollar = False
    for x0, x1, t in tokens:
        if t == "$":
            pending_dollar = True
            continue
        if t in (")", "%", ")%") and out:
            px0, _, pt = out[-1]
            out[-1] = (px0, x1, pt + t)
            continue
        out.append((x0, x1, ("$" + t) if pending_dollar and _FIGURE.match("$" + t) else t))
        pending_dollar = False
    return out


def _split(line: list[tuple[float, float, str]]):
    """Split a line into its label text and its trailing figures (with x-centres)."""
    tokens = _merge_symbols(line)
    i = len(tokens)
    while i > 0 and _FIGURE.match(tokens[i - 1][2]):
        i -= 1
    label = " ".join(t for _, _, t in tokens[:i]).strip()
    values = [((x0 + x1) / 2, t) for x0, x1, t in tokens[i:]]
    return label, values


def _header_for(lines, start: int, ncols: int):
    """Look a few lines above a table for the column titles (years or short labels)."""
    for j in range(start - 1, max(-1, start - 5), -1):
        tokens = _merge_symbols(lines[j])
        years = [((x0 + x1) / 2, t) for x0, x1, t in tokens if _YEARISH.match(t)]
        if len(years) >= min(2, ncols) and len(years) >= ncols - 1:
            return years
    return None


def _table_from(lines, start: int, end: int, page: int, index: int) -> Table | None:
    parsed = [_split(lines[k]) for k in range(start, end)]
    ncols = int(median(len(v) for _, v in parsed if v))
    header = _header_for(lines, start, ncols)
    if header:
        names = [t for _, t in header]
        centres = [x for x, _ in header]
    else:
        names = [f"col{i + 1}" for i in range(ncols)]
        centres = None
    # make header names unique
    seen: dict[str, int] = {}
    unique = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        unique.append(n if seen[n] == 1 else f"{n}_{seen[n]}")
    rows = []
    for label, values in parsed:
        row = {"label": label}
        for pos, (x, v) in enumerate(values):
            if centres:
                col = min(range(len(centres)), key=lambda c: abs(centres[c] - x))
            else:  # align from the right: the last figure is the last column
                col = len(unique) - len(values) + pos
                if col < 0:
                    continue
            key = unique[col]
            row[key] = f"{row[key]} {v}" if key in row else v
        if label or len(row) > 1:
            rows.append(row)
    if sum(1 for r in rows if len(r) > 1) < _MIN_ROWS:
        return None
    return Table(page=page, index=index, header=["label", *unique], rows=rows)


def find_tables(words: list[tuple], page: int) -> list[Table]:
    """Numeric tables on one page, given ``pymupdf.Page.get_text("words")``."""
    lines = _lines(words)
    tables: list[Table] = []
    start = None
    last_row = None
    for k, line in enumerate(lines):
        label, values = _split(line)
        is_header = len(values) >= 2 and all(_YEARISH.match(v) for _, v in values)
        is_row = not is_header and bool(values) and (bool(label) or len(values) >= 2)
        if is_row:
            if start is None:
                start = k
            last_row = k
        elif start is not None and (is_header or k - last_row > _MAX_GAP_LINES):
            table = _table_from(lines, start, last_row + 1, page, len(tables))
            if table:
                tables.append(table)
            start = None
    if start is not None:
        table = _table_from(lines, start, last_row + 1, page, len(tables))
        if table:
            tables.append(table)
    return tables
