"""Tests for retrieval.ingest.html: handwritten HTML snippets, then the shared EDGAR filings."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import need_shared

from finrag.retrieval.documents import DocumentError
from finrag.retrieval.ingest.html import parse_sec_html

SEC_DIR = Path(__file__).resolve().parents[3] / "shared" / "data" / "sec"
FILINGS = SEC_DIR / "filings"


def write(tmp_path: Path, body: str, name: str = "doc.html") -> Path:
    path = tmp_path / name
    path.write_text(f"<html><head><title>T</title></head><body>{body}</body></html>", encoding="utf-8")
    return path


def dei(name: str, value: str, tag: str = "ix:nonNumeric") -> str:
    return f'<{tag} contextRef="c-1" name="dei:{name}">{value}</{tag}>'


HIDDEN_HEADER = (
    '<div style="display:none"><ix:header><ix:hidden>'
    + dei("DocumentFiscalYearFocus", "2024")
    + dei("DocumentFiscalPeriodFocus", "FY")
    + dei("EntityCentralIndexKey", "0000320193")
    + dei("CurrentFiscalYearEndDate", "--09-28")
    + "</ix:hidden><ix:resources><xbrli:context id='c-1'>iso4217:USD secret-context</xbrli:context>"
    + "</ix:resources></ix:header></div>"
)

# Workiva-style table: spacer cells, a stacked header, "$" and ")" and "%" in their own cells.
FIN_TABLE = """
<table>
  <tr><td></td><td></td><td></td><td></td><td></td><td></td><td></td></tr>
  <tr><td></td><td colspan="6"><span>Years ended</span></td></tr>
  <tr><td></td><td colspan="3"><span>2024</span></td><td colspan="3"><span>2023</span></td></tr>
  <tr><td><span>Total net</span><span> sales</span></td>
      <td>$</td><td>391,035&#160;</td><td></td>
      <td>$</td><td>383,285&#160;</td><td></td></tr>
  <tr><td>Other income</td>
      <td></td><td>(1,234</td><td>)</td>
      <td></td><td>12</td><td>%</td></tr>
</table>
"""


# ---------------------------------------------------------------------------- pages and text


def test_no_page_breaks_is_one_page(tmp_path):
    doc = parse_sec_html(write(tmp_path, "<div>Hello</div><p>World</p>"))
    assert doc.page_count == 1
    assert doc.pages[0].number == 1
    assert doc.pages[0].text == "Hello\nWorld"


def test_page_breaks_split_pages(tmp_path):
    body = (
        "<div>Page one</div>"
        '<hr style="page-break-after:always"/>'
        "<div>Page two</div>"
        '<div style="break-before: page">Page three</div>'
        '<div style="margin:0;page-break-after: always">Still three</div>'
        '<hr style="page-break-after:always"/>'  # two breaks in a row: no blank page
        "<div>Page four</div>"
        '<hr style="page-break-after:always"/>'  # trailing break: no empty last page
    )
    doc = parse_sec_html(write(tmp_path, body))
    assert [p.number for p in doc.pages] == [1, 2, 3, 4]
    assert [p.text for p in doc.pages] == ["Page one", "Page two", "Page three\nStill three", "Page four"]


def test_text_normalisation(tmp_path):
    body = (
        "<div><span>Total net</span><span> sales grew</span>&#160;&#160; <b>5%</b>\n  this year</div>"
        "<div><span><br/></span></div><div></div><p>  </p>"
        "<ul><li>one</li><li>two<br>three</li></ul>"
        "<h2>Heading</h2>tail text"
    )
    doc = parse_sec_html(write(tmp_path, body))
    assert doc.pages[0].text == "Total net sales grew 5% this year\none\ntwo\nthree\nHeading\ntail text"


def test_hidden_content_dropped_but_hints_kept(tmp_path):
    body = HIDDEN_HEADER + '<div>Visible<span style="display: none">HIDDEN</span> text</div>'
    doc = parse_sec_html(write(tmp_path, body))
    assert doc.pages[0].text == "Visible text"
    assert doc.hints == {"fiscal_year": 2024, "fiscal_quarter": None, "cik": "0000320193", "fiscal_year_end": "09-28"}


# ---------------------------------------------------------------------------- tables


def test_financial_table(tmp_path):
    doc = parse_sec_html(write(tmp_path, "<div>Before</div>" + FIN_TABLE + "<div>After</div>"))
    page = doc.pages[0]
    assert page.text.splitlines() == [
        "Before",
        "Years ended",
        "2024 | 2023",
        "Total net sales | $391,035 | $383,285",
        "Other income | (1,234) | 12%",
        "After",
    ]
    (table,) = page.tables
    assert (table.page, table.index) == (1, 0)
    assert table.header == ["col1", "Years ended 2024", "Years ended 2023"]
    assert table.rows == [
        {"col1": "Total net sales", "Years ended 2024": "$391,035", "Years ended 2023": "$383,285"},
        {"col1": "Other income", "Years ended 2024": "(1,234)", "Years ended 2023": "12%"},
    ]


def test_table_header_names_unique_and_non_empty(tmp_path):
    table = """<table>
      <tr><th></th><th>Change</th><th>Change</th><th></th></tr>
      <tr><td>a</td><td>1</td><td>2</td><td>3</td></tr>
    </table>"""
    doc = parse_sec_html(write(tmp_path, table))
    (t,) = doc.pages[0].tables
    assert t.header == ["col1", "Change", "Change_2", "col4"]
    assert t.rows == [{"col1": "a", "Change": "1", "Change_2": "2", "col4": "3"}]


def test_tables_indexed_per_page(tmp_path):
    small = "<table><tr><td>h1</td><td>h2</td></tr><tr><td>a</td><td>b</td></tr></table>"
    body = small + small + '<hr style="page-break-after:always"/>' + small
    doc = parse_sec_html(write(tmp_path, body))
    assert [(t.page, t.index) for p in doc.pages for t in p.tables] == [(1, 0), (1, 1), (2, 0)]


def test_small_tables_are_text_only(tmp_path):
    body = (
        "<table><tr><td>only</td><td>row</td></tr></table>"  # one row
        "<table><tr><td>one</td></tr><tr><td>column</td></tr></table>"  # one column
        "<table><tr><td></td></tr><tr><td>  </td></tr></table>"  # empty
    )
    doc = parse_sec_html(write(tmp_path, body))
    assert doc.pages[0].tables == []
    assert doc.pages[0].text == "only | row\none\ncolumn"


def test_odd_colspans_and_hidden_cells_do_not_crash(tmp_path):
    table = """<table><tbody>
      <tr><td colspan="x">Item</td><td colspan="0">Value</td><td style="display:none">ghost</td></tr>
      <tr><td colspan="-3">a</td><td colspan="99999">1</td><td style="display:none">ghost</td></tr>
      <tr><td>b</td><td>$</td></tr>
    </tbody></table>"""
    doc = parse_sec_html(write(tmp_path, table))
    (t,) = doc.pages[0].tables
    assert t.header == ["Item", "Value"]
    assert t.rows == [{"Item": "a", "Value": "1"}, {"Item": "b", "Value": "$"}]
    assert "ghost" not in doc.pages[0].text


# ---------------------------------------------------------------------------- dei: hints


def test_dei_hints(tmp_path):
    body = (
        "<div>FORM " + dei("DocumentType", "10-Q") + "</div>"
        "<div>" + dei("EntityRegistrantName", "NVIDIA CORP", tag="ix:nonnumeric") + "</div>"
        "<div>" + dei("TradingSymbol", "nvda") + dei("TradingSymbol", "OTHER") + "</div>"
        "<div>" + dei("DocumentFiscalYearFocus", "2026") + dei("DocumentFiscalPeriodFocus", "Q2") + "</div>"
        # the fiscal-year-end fact nested inside the period-end fact, as Workiva writes it
        "<div>ended " + dei("DocumentPeriodEndDate", dei("CurrentFiscalYearEndDate", "July&#160;27") + ", 2025")
        + "</div>"
    )
    doc = parse_sec_html(write(tmp_path, body))
    assert doc.hints == {
        "company": "NVIDIA CORP",
        "ticker": "NVDA",
        "doc_type": "10-Q",
        "fiscal_year": 2026,
        "fiscal_quarter": 2,
        "period_end": "2025-07-27",
        "fiscal_year_end": "07-27",
    }
    assert "ended July 27, 2025" in doc.pages[0].text


@pytest.mark.parametrize(
    "value, expected",
    [
        ("September 28, 2024", "2024-09-28"),
        ("September&#160;28, 2024", "2024-09-28"),
        ("2024-09-28", "2024-09-28"),
        ("Jan. 26, 2025", "2025-01-26"),
        ("Sept. 30, 2023", "2023-09-30"),
        ("28 December 2024", "2024-12-28"),
        ("February 30, 2024", None),
        ("soon", None),
    ],
)
def test_period_end_formats(tmp_path, value, expected):
    doc = parse_sec_html(write(tmp_path, "<p>x " + dei("DocumentPeriodEndDate", value) + "</p>"))
    assert doc.hints.get("period_end") == expected


@pytest.mark.parametrize(
    "value, expected",
    [("--09-28", "09-28"), ("September&#160;28", "09-28"), ("1/25", "01-25"), ("Feb 29", "02-29"), ("--13-01", None)],
)
def test_fiscal_year_end_formats(tmp_path, value, expected):
    doc = parse_sec_html(write(tmp_path, "<p>x " + dei("CurrentFiscalYearEndDate", value) + "</p>"))
    assert doc.hints.get("fiscal_year_end") == expected


@pytest.mark.parametrize("value, expected", [("10-K", "10-K"), ("10-K/A", "10-K"), ("8-K", "8-K"), ("S-1", None)])
def test_doc_type(tmp_path, value, expected):
    doc = parse_sec_html(write(tmp_path, "<p>x " + dei("DocumentType", value) + "</p>"))
    assert doc.hints.get("doc_type") == expected


def test_no_dei_facts_no_hints(tmp_path):
    assert parse_sec_html(write(tmp_path, "<p>plain</p>")).hints == {}


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "empty file"),
        (b"  \n\t ", "empty file"),
        (b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog >>\nendobj\n", "not an HTML document"),
        (bytes(range(256)) * 4, "not an HTML document"),
        (b"Just some plain text, no markup at all.\n", "not an HTML document"),
        (b"<html><body><div> &#160; </div><p></p></body></html>", "no text"),
        (b'<html><body><div style="display:none">hidden only</div></body></html>', "no text"),
    ],
)
def test_errors(tmp_path, content, message):
    path = tmp_path / "bad-filing.html"
    path.write_bytes(content)
    with pytest.raises(DocumentError) as info:
        parse_sec_html(path)
    text = str(info.value)
    assert message in text and "bad-filing.html" in text and "\n" not in text


def test_missing_file(tmp_path):
    with pytest.raises(DocumentError, match="nope.html"):
        parse_sec_html(tmp_path / "nope.html")


def test_latin1_and_utf8_text(tmp_path):
    utf8 = tmp_path / "u.html"
    utf8.write_bytes("<p>Café – “quoted”</p>".encode())
    assert parse_sec_html(utf8).pages[0].text == "Café – “quoted”"
    latin1 = tmp_path / "l.html"
    latin1.write_bytes("<p>Café</p>".encode("latin-1"))
    assert parse_sec_html(latin1).pages[0].text == "Café"


# ---------------------------------------------------------------------------- shared filings


def shared_file(relative: str) -> Path:
    path = FILINGS / relative
    need_shared(SEC_DIR)
    assert path.is_file(), f"expected shared filing is missing: {path}"
    return path


@pytest.mark.integration
def test_shared_aapl_10k():
    doc = parse_sec_html(shared_file("aapl/aapl-10-k-2024-11-01.html"))
    hints = doc.hints
    assert hints["ticker"] == "AAPL"
    assert hints["company"] == "Apple Inc."
    assert hints["doc_type"] == "10-K"
    assert hints["fiscal_year"] == 2024
    assert hints["fiscal_quarter"] is None
    assert hints["period_end"] == "2024-09-28"
    assert hints["fiscal_year_end"] == "09-28"
    assert doc.page_count > 50
    assert [p.number for p in doc.pages] == list(range(1, doc.page_count + 1))
    assert "Total net sales | $391,035" in "\n".join(p.text for p in doc.pages)
    rows = [row for p in doc.pages for t in p.tables for row in t.rows]
    assert any(
        "Total net sales" in row.values() and any("391,035" in v for v in row.values()) for row in rows
    )


@pytest.mark.integration
def test_shared_nvda_10k_fye_2022_file():
    # Despite its name, this file is NVIDIA's 10-K for fiscal 2023 (year ended January 29, 2023):
    # its dei: facts and its cover page say so. Assert what the file says.
    doc = parse_sec_html(shared_file("nvda/nvda-10-k-fye-2022-01-30.html"))
    assert doc.hints["doc_type"] == "10-K"
    assert doc.hints["fiscal_year"] == 2023
    assert doc.hints["period_end"] == "2023-01-29"
    assert "For the fiscal year ended January 29, 2023" in doc.pages[0].text


@pytest.mark.integration
def test_shared_nvda_10q():
    doc = parse_sec_html(shared_file("nvda/nvda-10-q-2025-08-27.html"))
    assert doc.hints["doc_type"] == "10-Q"
    assert doc.hints["fiscal_quarter"] == 2
    assert doc.hints["fiscal_year"] == 2026
    assert doc.hints["period_end"] == "2025-07-27"
    assert doc.hints["fiscal_year_end"] == "01-25"


@pytest.mark.integration
def test_shared_filings_parse_quickly_and_cleanly():
    need_shared(SEC_DIR)
    paths = sorted(FILINGS.glob("*/*.html"))
    assert paths
    for path in paths:
        start = time.perf_counter()
        doc = parse_sec_html(path)
        elapsed = time.perf_counter() - start
        assert elapsed < 5, f"{path.name} took {elapsed:.1f}s"
        assert doc.page_count > 10 and all(p.text for p in doc.pages), path.name
        assert {"company", "ticker", "cik", "doc_type", "fiscal_year", "period_end"} <= doc.hints.keys(), path.name
        text = "\n".join(p.text for p in doc.pages)
        assert "iso4217" not in text and "\n\n" not in text, path.name  # no ix:header, no blank lines
        assert any(p.tables for p in doc.pages), path.name
