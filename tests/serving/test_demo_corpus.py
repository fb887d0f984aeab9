"""Tests for the embedded demo corpus (the serving.cli.demo_corpus package).

The corpus is generated once per module into a temporary directory and then read back with
pymupdf, the way the ingestion pipeline will read it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from datetime import date
from functools import lru_cache
from pathlib import Path

import pymupdf
import pytest

from finrag.serving.cli.demo_corpus import corpus as dc
from finrag.serving.cli.demo_corpus.companies import COMPANY_BY_KEY, Company
from finrag.retrieval.documents import DOC_TYPES, DocumentMeta

FILE_NAME = re.compile(r"^(?P<key>[A-Z]+)_(?P<year>\d{4})(?:Q(?P<q>[1-4]))?_(?P<form>10K|10Q)\.pdf$")


def _norm(text: str) -> str:
    return " ".join(text.split())


def _page_texts(path: Path) -> list[str]:
    with pymupdf.open(path) as doc:
        return [_norm(page.get_text()) for page in doc]


def _page_text(path: Path, page: int) -> str:
    return _page_texts(path)[page - 1]


def _doc_text(path: Path) -> str:
    with pymupdf.open(path) as doc:
        return _norm(" ".join(page.get_text() for page in doc))


def _number(cell: str) -> float:
    text = cell.replace("$", "").replace(",", "").strip()
    if text.startswith("(") and text.endswith(")"):
        return -float(text[1:-1])
    return float(text)


@lru_cache(maxsize=None)
def _income_table(path: Path, page: int) -> tuple[list[str], bool, list[list[str]]]:
    """(header names, whether the header lies outside the table, all rows) of the page's table."""
    with pymupdf.open(path) as doc:
        tables = doc[page - 1].find_tables().tables  # default strategy: ruling lines
        assert len(tables) == 1, f"{path.name} p{page}: expected one table, found {len(tables)}"
        table = tables[0]
        return table.header.names, table.header.external, table.extract()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    started = time.perf_counter()
    result = dc.generate_demo_corpus(out)
    result_elapsed = time.perf_counter() - started
    return result, result_elapsed


@pytest.fixture(scope="module")
def meta(corpus):
    lines = corpus[0].metadata_path.read_text().splitlines()
    return {rec["doc_id"]: rec for rec in map(json.loads, lines)}


@pytest.fixture(scope="module")
def facts(corpus):
    return json.loads(corpus[0].facts_path.read_text())


@pytest.fixture(scope="module")
def questions(corpus):
    return [json.loads(line) for line in corpus[0].questions_path.read_text().splitlines()]


def _pdf(corpus, doc_id: str) -> Path:
    return corpus[0].out_dir / f"{doc_id}.pdf"


# -- files --------------------------------------------------------------------------------------


def test_files_exist_are_valid_pdfs_and_long_enough(corpus):
    result, elapsed = corpus
    assert elapsed < 10, f"generation took {elapsed:.1f} s"
    assert result.written
    names = [p.name for p in result.pdf_paths]
    assert names == sorted(names)
    assert len(names) == 4 * 3 + 2
    assert sum(n.endswith("_10Q.pdf") for n in names) == 2
    for path in result.pdf_paths:
        assert FILE_NAME.match(path.name), path.name
        assert path.read_bytes()[:5] == b"%PDF-"
        with pymupdf.open(path) as doc:
            chars = sum(len(page.get_text()) for page in doc)
            assert doc.metadata["title"] and "Form 10-" in doc.metadata["title"]
            if path.name.endswith("_10K.pdf"):
                assert 6 <= doc.page_count <= 10, (path.name, doc.page_count)
                assert chars >= 30_000, (path.name, chars)
            else:
                assert doc.page_count >= 5, (path.name, doc.page_count)
                assert chars >= 20_000, (path.name, chars)
    for path in (result.metadata_path, result.facts_path, result.questions_path):
        assert path.is_file()


def test_four_companies_three_years_each(meta):
    tenks = [m for m in meta.values() if m["doc_type"] == "10-K"]
    by_company: dict[str, list[int]] = {}
    for m in tenks:
        by_company.setdefault(m["company"], []).append(m["fiscal_year"])
    assert len(by_company) == 4
    assert all(sorted(years) == [2022, 2023, 2024] for years in by_company.values())
    sectors = [m["sector"] for m in meta.values() if m["fiscal_year"] == 2023 and m["doc_type"] == "10-K"]
    assert len(set(sectors)) == 3  # two companies share an industry


# -- metadata -----------------------------------------------------------------------------------


def test_metadata_lines_match_files(corpus, meta):
    result = corpus[0]
    assert set(meta) == {p.stem for p in result.pdf_paths}
    for doc_id, m in meta.items():
        match = FILE_NAME.match(f"{doc_id}.pdf")
        assert match["key"] == doc_id.split("_")[0]
        assert m["fiscal_year"] == int(match["year"])
        assert m["fiscal_quarter"] == (int(match["q"]) if match["q"] else None)
        assert m["doc_type"] == ("10-Q" if match["form"] == "10Q" else "10-K")
        assert m["doc_type"] in DOC_TYPES
        assert re.fullmatch(r"\d\d-\d\d", m["fiscal_year_end"])
        period_end = date.fromisoformat(m["period_end"])
        assert date.fromisoformat(m["filing_date"]) > period_end
        assert m["ticker"] and m["sector"] and isinstance(m["aliases"], list)
        # The record converts to the project's DocumentMeta (fiscal_year_end is extra).
        DocumentMeta(**{k: v for k, v in m.items() if k != "fiscal_year_end"})

        cover = _page_text(_pdf(corpus, doc_id), 1)
        long_end = f"{period_end:%B} {period_end.day}, {period_end.year}"
        if m["doc_type"] == "10-K":
            assert f"Annual Report on Form 10-K for the fiscal year ended {long_end}" in cover
        else:
            assert f"Quarterly Report on Form 10-Q for the quarterly period ended {long_end}" in cover
        assert f"Trading symbol: {m['ticker']}" in cover
        assert m["company"] in cover or any(alias in cover for alias in m["aliases"])


def test_fiscal_calendars(meta):
    jan = [m for m in meta.values() if m["fiscal_year_end"] == "01-31"]
    assert jan and {m["company"] for m in jan} == {"Harlow & Finch Stores, Inc."}
    assert meta["HARLOWFINCH_2024_10K"]["period_end"] == "2024-01-31"
    assert meta["HARLOWFINCH_2025Q1_10Q"]["period_end"] == "2024-04-30"
    assert meta["LUMENFIELD_2024Q2_10Q"]["period_end"] == "2024-06-30"


def test_rebranded_company_keeps_alias_and_old_name_in_old_report(corpus, meta):
    old, new = "Quillon Pump & Valve Company", "Quillon Flow Technologies, Inc."
    assert all(old in meta[f"QUILLON_{y}_10K"]["aliases"] for y in (2022, 2023, 2024))
    assert all(meta[f"QUILLON_{y}_10K"]["company"] == new for y in (2022, 2023, 2024))
    cover_2022 = _page_text(_pdf(corpus, "QUILLON_2022_10K"), 1)
    assert old in cover_2022 and new not in cover_2022
    cover_2023 = _page_text(_pdf(corpus, "QUILLON_2023_10K"), 1)
    assert new in cover_2023 and old in cover_2023  # "Former name, if changed since last report"
    assert f"changed our corporate name from {old} to {new}" in _doc_text(_pdf(corpus, "QUILLON_2024_10K"))


# -- facts --------------------------------------------------------------------------------------


def test_every_fact_appears_on_its_page(corpus, facts):
    assert len(facts) >= 14 * 8
    pages: dict[str, list[str]] = {}
    for fact in facts:
        if fact["doc_id"] not in pages:
            pages[fact["doc_id"]] = _page_texts(_pdf(corpus, fact["doc_id"]))
        found = [n for n, text in enumerate(pages[fact["doc_id"]], start=1) if _norm(fact["text"]) in text]
        assert found == [fact["page"]], fact  # on its page, and on no other


def test_fact_values_match_their_text(facts):
    for fact in facts:
        if fact["unit"] == "USD":
            assert f"${fact['value']:.2f}" in fact["text"], fact
        else:
            assert fact["unit"] == "USD millions"
            assert f"${fact['value']:,}" in fact["text"] or f"{fact['value']:,}" in fact["text"].split(), fact
    metrics = {f["metric"] for f in facts}
    assert {"revenue", "net income", "operating income", "diluted eps", "gross profit"} <= metrics


def test_narrative_and_table_agree(facts):
    by_key: dict[tuple, set] = {}
    for fact in facts:
        by_key.setdefault((fact["doc_id"], fact["metric"]), set()).add(fact["value"])
    assert all(len(values) == 1 for values in by_key.values()), by_key


# -- income statement table --------------------------------------------------------------------


def _table_page(facts, doc_id: str) -> int:
    return next(f["page"] for f in facts if f["doc_id"] == doc_id and f["source"] == "table")


def test_income_table_found_with_header_and_consistent_figures(corpus, meta, facts):
    for doc_id, m in meta.items():
        names, external, table_rows = _income_table(_pdf(corpus, doc_id), _table_page(facts, doc_id))
        fy = m["fiscal_year"]
        period = f"Q{m['fiscal_quarter']} fiscal" if m["fiscal_quarter"] else "Fiscal"
        assert not external
        assert names == ["(In millions, except per share data)", f"{period} {fy}", f"{period} {fy - 1}"]
        assert table_rows[0] == names
        rows = {r[0]: r[1:] for r in table_rows[1:]}
        assert len(rows) == 15
        for col in (0, 1):
            v = {label: _number(cells[col]) for label, cells in rows.items()}
            assert v["Gross profit"] == v["Revenue"] - v["Cost of revenue"]
            assert v["Total operating expenses"] == v["Research and development"] + v[
                "Selling, general and administrative"]
            assert v["Operating income"] == v["Gross profit"] - v["Total operating expenses"]
            assert v["Income before income taxes"] == v["Operating income"] + v["Other income (expense), net"]
            assert v["Net income"] == v["Income before income taxes"] - v["Provision for income taxes"]
            assert v["Diluted net income per share"] == pytest.approx(
                v["Net income"] / v["Diluted weighted-average shares"], abs=0.006)


def test_prior_year_column_equals_previous_report(corpus, facts):
    for key in ("LUMENFIELD", "BRIGHTQUARRY", "HARLOWFINCH", "QUILLON"):
        for year in (2023, 2024):
            cur_id, prev_id = f"{key}_{year}_10K", f"{key}_{year - 1}_10K"
            cur = _income_table(_pdf(corpus, cur_id), _table_page(facts, cur_id))[2][1:]
            prev = _income_table(_pdf(corpus, prev_id), _table_page(facts, prev_id))[2][1:]
            assert [(r[0], r[2]) for r in cur] == [(r[0], r[1]) for r in prev]


# -- look-alike documents ----------------------------------------------------------------------


def _item_headings(path: Path) -> list[str]:
    with pymupdf.open(path) as doc:
        return [line for page in doc for line in page.get_text().splitlines()
                if re.match(r"Item \d+[A-C]?\. \S", line)]


def _shingles(path: Path, company: Company, n: int = 8) -> set[tuple[str, ...]]:
    text = _doc_text(path)
    specific = [company.name, company.short, company.ticker, company.domain, company.hq, company.hq_city,
                company.ceo, company.cfo, company.auditor, company.state, *company.products]
    for name in sorted(specific, key=len, reverse=True):
        text = text.replace(name, "X")
    words = re.sub(r"[\d$,.%()]+", " ", text).lower().split()
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


def test_same_industry_filings_look_alike_but_differ_in_figures(corpus, facts):
    lumen, bright = COMPANY_BY_KEY["LUMENFIELD"], COMPANY_BY_KEY["BRIGHTQUARRY"]
    assert lumen.industry == bright.industry
    for year in (2022, 2023, 2024):
        a, b = _pdf(corpus, f"LUMENFIELD_{year}_10K"), _pdf(corpus, f"BRIGHTQUARRY_{year}_10K")
        assert _item_headings(a) == _item_headings(b)
        assert len(_item_headings(a)) >= 20
        sa, sb = _shingles(a, lumen), _shingles(b, bright)
        assert len(sa & sb) / len(sa) > 0.75  # mostly the same wording once names and numbers go
        assert _doc_text(a) != _doc_text(b)
        values = {f["doc_id"].split("_")[0]: f["value"] for f in facts
                  if f["fiscal_year"] == year and f["metric"] == "revenue" and f["source"] == "text"
                  and f["doc_id"].endswith("_10K")}
        assert values["LUMENFIELD"] != values["BRIGHTQUARRY"]
    # Same-industry filings are closer to each other than to another industry's.
    quill = _shingles(_pdf(corpus, "QUILLON_2023_10K"), COMPANY_BY_KEY["QUILLON"])
    sa = _shingles(_pdf(corpus, "LUMENFIELD_2023_10K"), lumen)
    sb = _shingles(_pdf(corpus, "BRIGHTQUARRY_2023_10K"), bright)
    assert len(sa & sb) / len(sa) > len(sa & quill) / len(sa) + 0.15


def test_all_10ks_share_the_section_template(corpus, meta):
    headings = {doc_id: _item_headings(_pdf(corpus, doc_id)) for doc_id, m in meta.items()
                if m["doc_type"] == "10-K"}
    first = next(iter(headings.values()))
    assert all(h == first for h in headings.values())
    for needed in ("Item 1. Business", "Item 1A. Risk Factors", "Item 7A. ", "Item 8. Financial Statements"):
        assert any(h.startswith(needed) for h in first), needed
    assert any(h.startswith("Item 7. Management's Discussion and Analysis") for h in first)


# -- questions ----------------------------------------------------------------------------------


def test_questions_point_at_evidence(corpus, meta, questions):
    assert len(questions) >= 8
    assert len({q["id"] for q in questions}) == len(questions)
    for q in questions:
        assert q["doc_id"] in meta
        page = _page_text(_pdf(corpus, q["doc_id"]), q["evidence_page"])
        number = q["answer"].replace(" million", "")
        assert number in page, q
        assert q["evidence_page"] in q["evidence_pages"]


def test_look_alike_questions_have_different_answers(questions):
    def strip_company(text: str) -> str:
        return re.sub(r"^What (was|were) \S+( Software)?'s", "", text)

    pairs: dict[str, list[dict]] = {}
    for q in questions:
        if "look-alike" in q["tags"]:
            pairs.setdefault(strip_company(q["question"]), []).append(q)
    assert len(pairs) >= 2
    for group in pairs.values():
        assert len(group) == 2
        assert group[0]["doc_id"].split("_")[0] != group[1]["doc_id"].split("_")[0]
        assert group[0]["answer"] != group[1]["answer"]


# -- determinism and reuse ---------------------------------------------------------------------


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_same_seed_gives_same_bytes(corpus, tmp_path):
    again = dc.generate_demo_corpus(tmp_path / "again")
    assert _snapshot(again.out_dir) == _snapshot(corpus[0].out_dir)


def test_other_seed_changes_figures_but_not_file_names(corpus, tmp_path, facts):
    other = dc.generate_demo_corpus(tmp_path, seed=8)
    other_facts = json.loads(other.facts_path.read_text())
    assert [p.name for p in other.pdf_paths] == [p.name for p in corpus[0].pdf_paths]
    assert [f["value"] for f in other_facts] != [f["value"] for f in facts]


def test_existing_corpus_is_reused_not_rewritten(corpus, tmp_path):
    out = tmp_path / "copy"
    shutil.copytree(corpus[0].out_dir, out)
    stamps = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    reused = dc.generate_demo_corpus(out)
    assert not reused.written
    assert reused.pdf_paths == [out / p.name for p in corpus[0].pdf_paths]
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == stamps

    # A damaged or missing file triggers regeneration, which restores the same bytes.
    original = _snapshot(out)
    reused.pdf_paths[0].write_bytes(b"broken")
    reused.facts_path.unlink()
    assert dc.generate_demo_corpus(out).written
    assert _snapshot(out) == original

    # So do a corpus made with another seed and an explicit force.
    manifest = json.loads((out / dc.MANIFEST_NAME).read_text())
    (out / dc.MANIFEST_NAME).write_text(json.dumps({**manifest, "seed": 3}))
    assert dc.generate_demo_corpus(out).written
    assert json.loads((out / dc.MANIFEST_NAME).read_text())["seed"] == 7
    assert dc.generate_demo_corpus(out, force=True).written


def test_main_prints_what_it_wrote(tmp_path, capsys):
    assert dc.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "wrote demo corpus" in out
    assert "LUMENFIELD_2023_10K.pdf" in out and "facts.json" in out
    assert dc.main([str(tmp_path)]) == 0
    assert "already up to date" in capsys.readouterr().out


def test_python_m_retrieval_demo(tmp_path):
    res = subprocess.run([sys.executable, "-m", "finrag.serving.cli.demo_corpus", str(tmp_path / "corpus")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "wrote demo corpus" in res.stdout and (tmp_path / "corpus" / dc.MANIFEST_NAME).is_file()
