import json
from pathlib import Path

import pytest
import yaml

from tests.conftest import need_shared

from finrag.retrieval.routing.companies import (Company, CompanyConflict, CompanyTable,
                                                normalize_name)
from finrag.retrieval.documents import DOC_TYPES, DocumentMeta
from finrag.retrieval.ingest.metadata import (
    fiscal_year_for,
    load_sidecar,
    normalize_doc_type,
    parse_filename,
    resolve_metadata,
)

SHARED = Path(__file__).resolve().parents[3] / "shared"
FINANCEBENCH = SHARED / "data" / "financebench"


def need(path: Path) -> Path:
    return need_shared(path)


@pytest.fixture
def table() -> CompanyTable:
    return CompanyTable.load()  # a fresh copy, so tests may add to it


# --- company table -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, normal",
    [
        ("The Coca-Cola Company", "coca cola"),
        ("Johnson & Johnson", "johnson and johnson"),
        ("JPMorgan Chase & Co.", "jpmorgan chase"),
        ("McDonald's Corp", "mcdonalds"),
        ("Square, Inc.", "square"),
        ("  Kraft   Heinz  Holdings ", "kraft heinz"),
        ("Company", "company"),  # never normalised away to nothing
    ],
)
def test_normalize_name(raw, normal):
    assert normalize_name(raw) == normal


@pytest.mark.parametrize(
    "lookup, value, name",
    [
        ("by_name", "Facebook", "Meta Platforms"),
        ("by_name", "Facebook, Inc.", "Meta Platforms"),
        ("by_name", "Square", "Block"),
        ("by_name", "Square, Inc.", "Block"),
        ("by_name", "Minnesota Mining and Manufacturing", "3M"),
        ("by_name", "Google", "Alphabet"),
        ("by_name", "the coca cola company", "Coca-Cola"),
        ("by_name", "CocaCola", "Coca-Cola"),  # spaces aside
        ("by_name", "McDonalds", "McDonald's"),
        ("by_name", "PG&E Corporation", "PG&E"),
        ("by_ticker", "SQ", "Block"),
        ("by_ticker", "xyz", "Block"),
        ("by_ticker", "GOOG", "Alphabet"),
        ("by_ticker", "GOOGL", "Alphabet"),
        ("by_ticker", "FB", "Meta Platforms"),
        ("by_key", "JOHNSON_JOHNSON", "Johnson & Johnson"),
        ("by_key", "Pfizer", "Pfizer"),
        ("by_key", "3M", "3M"),
    ],
)
def test_lookups(table, lookup, value, name):
    assert getattr(table, lookup)(value).name == name


def test_packaged_entries(table):
    apple, nvidia, meta = table.by_ticker("AAPL"), table.by_ticker("NVDA"), table.by_ticker("META")
    assert apple.cik == "0000320193" and apple.week_based
    assert nvidia.cik == "0001045810" and nvidia.fiscal_year_end == "01-28"
    assert meta.ticker == "META" and meta.tickers == ["META", "FB"]
    assert table.by_ticker("XYZ").tickers == ["XYZ", "SQ"]
    assert table.by_key("NIKE").fiscal_year_end == "05-31" and not table.by_key("NIKE").week_based
    assert table.by_key("WALMART").cik is None  # only CIKs known for certain are listed
    assert len({c.key for c in table.all()}) == len(table.all())


def test_misses_and_fuzzy(table):
    assert table.by_name("Acme Widgets") is None
    assert table.by_ticker("ZZZZ") is None
    assert table.by_key("NOPE") is None
    assert table.fuzzy("Activison Blizzard").name == "Activision Blizzard"
    assert table.fuzzy("Wallmart").name == "Walmart"
    assert table.fuzzy("Facebook Inc").name == "Meta Platforms"  # exact matches come first
    assert table.fuzzy("Acme Widgets") is None
    assert table.fuzzy("Applied Materials") is None
    assert table.fuzzy("Wallmart", threshold=99) is None


def test_user_yaml_extends_and_overrides(tmp_path):
    user = tmp_path / "mine.yaml"
    user.write_text(
        yaml.safe_dump(
            {
                "companies": [
                    {"name": "Acme Widgets, Inc.", "ticker": "ACME", "aliases": ["Acme"], "fiscal_year_end": "03-31"},
                    {"key": "NIKE", "aliases": ["Nike Inc"], "tickers": ["NIKE"]},  # extend by key
                    {"name": "Facebook", "cik": "1326801"},  # extend by alias
                    {"key": "WALMART", "name": "Walmart Inc.", "ticker": "WMT2"},  # override by key
                ]
            }
        )
    )
    table = CompanyTable.load(user)
    acme = table.by_ticker("acme")
    assert (acme.key, acme.name, acme.fiscal_year_end) == ("ACME_WIDGETS_INC", "Acme Widgets, Inc.", "03-31")
    assert table.by_name("Acme") is acme and table.by_key("ACME_WIDGETS_INC") is acme
    nike = table.by_key("NIKE")
    assert nike.ticker == "NKE" and nike.tickers == ["NKE", "NIKE"] and table.by_ticker("NIKE") is nike
    meta = table.by_ticker("META")
    assert meta.name == "Meta Platforms" and meta.cik == "0001326801"
    walmart = table.by_key("WALMART")
    assert walmart.name == "Walmart Inc." and walmart.ticker == "WMT2" and walmart.tickers == ["WMT2", "WMT"]
    assert table.by_name("Walmart") is walmart and table.by_ticker("WMT") is walmart
    assert len(table.all()) == len(CompanyTable.load().all()) + 1
    assert CompanyTable.load([user]).by_ticker("ACME").name == "Acme Widgets, Inc."  # as the CLI calls it


def test_user_yaml_plain_list_and_errors(tmp_path):
    plain = tmp_path / "list.yaml"
    plain.write_text("- {name: Acme, ticker: ACME}\n")
    assert CompanyTable.load(plain, packaged=False).by_ticker("ACME").name == "Acme"

    for text, message in [
        ("- {name: Acme, tickr: ACME}\n", "unknown field"),
        ("- {key: NOPE}\n", "needs a name"),
        ("- {name: Acme, fiscal_year_end: '13-01'}\n", "MM-DD"),
        ("- {name: Acme, aliases: Acme Co}\n", "list of strings"),
        ("- {name: Acme, cik: 12345678901}\n", "cik"),
        ("companies: {name: Acme}\n", "expected a list"),
    ]:
        bad = tmp_path / "bad.yaml"
        bad.write_text(text)
        with pytest.raises(ValueError, match=message) as err:
            CompanyTable.load(bad, packaged=False)
        assert "bad.yaml" in str(err.value)


def test_add_learned_at_ingest_and_yaml_round_trip(table):
    added = table.add(name="Acme Widgets", ticker="acme")
    assert added.key == "ACME_WIDGETS" and added.ticker == "ACME"
    again = table.add(name="Acme Widgets Inc", aliases=["Acme"], fiscal_year_end="06-30")
    assert again.key == "ACME_WIDGETS" and again.aliases == ["Acme"] and again.fiscal_year_end == "06-30"
    nvidia = table.add(Company(key="NVIDIA", name="NVIDIA", aliases=["Nvidia Corp"]))
    assert nvidia.week_based and nvidia.aliases == ["Nvidia Corp"]  # defaults do not overwrite
    with pytest.raises(ValueError, match="already the company"):
        table.add(key="OTHER", name="Square")

    reloaded = CompanyTable(yaml.safe_load(table.to_yaml())["companies"])
    assert [c.to_dict() for c in reloaded.all()] == [c.to_dict() for c in table.all()]
    assert reloaded.by_key("ACME_WIDGETS") == table.by_key("ACME_WIDGETS")


def test_a_staged_table_fills_what_is_empty_and_refuses_what_differs(table):
    table.add(name="Quiet Pines Corp")  # no ticker, calendar or CIK yet
    before = [c.to_dict() for c in table.all()]
    staged = table.staged()
    for claim in [dict(key="APPLE", fiscal_year_end="01-31"),  # re-calendar
                  dict(key="APPLE", tickers=["ZZZQ"]),  # another ticker
                  dict(key="APPLE", cik="1"),  # another CIK
                  dict(key="APPLE", name="Evil Holdings"),  # rename
                  dict(key="APPLE", aliases=["Evil Holdings"]),
                  dict(name="Evil Holdings", ticker="AAPL"),  # a new company, Apple's ticker
                  dict(name="Evil Holdings", aliases=["Apple Computer"]),  # ... Apple's name
                  dict(name="Evil Holdings", cik="320193")]:  # ... Apple's CIK
        with pytest.raises(CompanyConflict) as err:
            staged.add(**claim)
        assert "Apple" not in str(err.value).replace("Apple Computer", ""), err.value
    assert staged.by_ticker("AAPL").to_dict() == table.by_ticker("AAPL").to_dict()
    # what a settled company leaves empty is filled; a new company is learned; both only in
    # the staged copy until it is adopted
    staged.add(key="QUIET_PINES_CORP", ticker="QPC", fiscal_year_end="06-30", cik="42")
    staged.add(name="Nowhere Widgets", ticker="NWW", aliases=["Nowhere"])
    staged.add(key="APPLE", fiscal_year_end="09-27", tickers=["AAPL"])  # what it says already
    assert [c.to_dict() for c in table.all()] == before
    assert table.by_ticker("QPC") is None and table.by_name("Nowhere") is None
    assert sorted(c.key for c in table.adopt(staged)) == ["NOWHERE_WIDGETS", "QUIET_PINES_CORP"]
    pines = table.by_ticker("QPC")
    assert (pines.name, pines.fiscal_year_end, pines.cik) == ("Quiet Pines Corp", "06-30",
                                                             "0000000042")
    assert table.by_name("Nowhere").key == "NOWHERE_WIDGETS"
    assert table.by_key("APPLE").to_dict() == Company(**next(
        c for c in before if c["key"] == "APPLE")).to_dict()


def test_a_sidecar_cannot_change_a_company_of_a_staged_table(tmp_path, table):
    """An uploaded sidecar naming another company's ticker with another name, or the company
    with another calendar, is refused before the table learns anything."""
    staged = table.staged()
    for line in [{"company": "Evil Holdings", "ticker": "AAPL"},
                 {"company": "Apple", "fiscal_year_end": "01-31"},
                 {"company": "Apple", "aliases": ["Evil Holdings"]}]:
        path = tmp_path / "meta.jsonl"
        path.write_text(json.dumps({"doc_id": "X_2024_10K", "doc_type": "10-K", **line}))
        with pytest.raises(CompanyConflict, match="entry|line"):
            load_sidecar(path, staged)
    assert staged.by_name("Evil Holdings") is None
    assert staged.by_key("APPLE").to_dict() == table.by_key("APPLE").to_dict()
    # agreeing with the table, or naming a company it does not know, is fine
    path.write_text(json.dumps({"doc_id": "X_2024_10K", "doc_type": "10-K", "company": "Apple",
                                "ticker": "AAPL", "fiscal_year_end": "09-27"}) + "\n" +
                    json.dumps({"doc_id": "Y_2024_10K", "doc_type": "10-K",
                                "company": "Nowhere Widgets", "ticker": "NWW"}))
    found = load_sidecar(path, staged)
    assert found["X_2024_10K"].company == "Apple" and found["Y_2024_10K"].ticker == "NWW"


# --- fiscal years --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, day, in_progress, year",
    [
        ("APPLE", "2024-11-01", False, 2024),  # 10-K filed after the September year end
        ("APPLE", "2024-09-28", False, 2024),  # the period end itself
        ("ALPHABET", "2025-02-05", False, 2024),
        ("NVIDIA", "2025-02-26", False, 2025),  # year ending January 2025 is FY2025
        ("NVIDIA", "2022-01-30", False, 2022),  # period end two days after the nominal 01-28
        ("NVIDIA", "2025-01-26", False, 2025),
        ("NVIDIA", "2025-08-27", True, 2026),  # 10-Q filed in August 2025
        ("BESTBUY", "2024-02-03", False, 2024),  # 53-week year ending three days late
        ("JOHNSON_JOHNSON", "2023-01-01", False, 2022),  # nominally 31 December 2022
        ("MICROSOFT", "2023-07-27", False, 2023),
        ("MICROSOFT", "2023-06-29", False, 2022),
        ("MICROSOFT", "2023-10-24", True, 2024),
        ("MCDONALDS", "2023-01-06", True, 2023),  # 8-K dated early in the year
        ("COSTCO", "2023-09-03", False, 2023),
    ],
)
def test_fiscal_year_for(table, key, day, in_progress, year):
    assert fiscal_year_for(day, table.by_key(key), in_progress=in_progress) == year


def test_fiscal_year_for_without_company():
    assert fiscal_year_for("2024-03-01") == 2023
    assert fiscal_year_for("2024-03-01", None, in_progress=True) == 2024
    leap = Company(key="L", name="Leap", fiscal_year_end="02-29")
    assert fiscal_year_for("2023-03-01", leap) == 2023  # ends 28 February outside leap years


# --- file names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, company, doc_type, year, quarter, ticker, filed, period_end",
    [
        ("3M_2018_10K", "3M", "10-K", 2018, None, "MMM", None, None),
        ("BESTBUY_2024Q2_10Q.pdf", "Best Buy", "10-Q", 2024, 2, "BBY", None, None),
        ("PEPSICO_2023Q1_EARNINGS", "PepsiCo", "earnings", 2023, 1, "PEP", None, None),
        ("JOHNSON_JOHNSON_2023_8K_dated-2023-08-30", "Johnson & Johnson", "8-K", 2023, None, "JNJ", "2023-08-30", None),
        ("FOOTLOCKER_2022_8K_dated_2022-08-19", "Foot Locker", "8-K", 2022, None, "FL", "2022-08-19", None),
        ("Pfizer_2023Q2_10Q", "Pfizer", "10-Q", 2023, 2, "PFE", None, None),
        ("AMD_2022_annualreport", "AMD", "annual report", 2022, None, "AMD", None, None),
        ("EBAY_2023Q1_8K", "eBay", "8-K", 2023, 1, "EBAY", None, None),
        ("MCDONALDS_8K_dated-2023-01-06", "McDonald's", "8-K", 2023, None, "MCD", "2023-01-06", None),
        ("PG_E_2023_EARNINGS-dated-2023-06-01", "PG&E", "earnings", 2023, None, "PCG", "2023-06-01", None),
        ("ACTIVSIONBLIZZARD_2019_10K", "Activision Blizzard", "10-K", 2019, None, "ATVI", None, None),
        ("aapl-10-k-2024-11-01", "Apple", "10-K", 2024, None, "AAPL", "2024-11-01", None),
        ("googl-10-k-2025-02-05.htm", "Alphabet", "10-K", 2024, None, "GOOGL", "2025-02-05", None),
        ("goog-10-k-2025-02-05", "Alphabet", "10-K", 2024, None, "GOOGL", "2025-02-05", None),
        ("nvda-10-k-2025-02-26", "NVIDIA", "10-K", 2025, None, "NVDA", "2025-02-26", None),
        ("nvda-10-k-fye-2022-01-30", "NVIDIA", "10-K", 2022, None, "NVDA", None, "2022-01-30"),
        ("nvda-10-q-2025-08-27", "NVIDIA", "10-Q", 2026, None, "NVDA", "2025-08-27", None),
        ("fb-8-k-2020-07-30", "Meta Platforms", "8-K", 2020, None, "META", "2020-07-30", None),
    ],
)
def test_parse_filename(table, name, company, doc_type, year, quarter, ticker, filed, period_end):
    meta = parse_filename(Path("some/dir") / name, table)
    assert meta.doc_id == Path(name).stem if name.endswith((".pdf", ".htm")) else name
    assert (meta.company, meta.doc_type, meta.fiscal_year, meta.fiscal_quarter) == (company, doc_type, year, quarter)
    assert (meta.ticker, meta.filing_date, meta.period_end) == (ticker, filed, period_end)
    assert meta.aliases == table.by_ticker(ticker).aliases


def test_parse_filename_unknown_companies(table):
    meta = parse_filename("GOLDEN_WIDGETS_2021_10K", table)
    assert (meta.company, meta.ticker, meta.fiscal_year, meta.aliases) == ("Golden Widgets", None, 2021, [])
    edgar = parse_filename("zzzz-10-k-2024-03-01", table)  # year assumed to end 31 December
    assert (edgar.company, edgar.ticker, edgar.fiscal_year) == ("ZZZZ", "ZZZZ", 2023)
    assert parse_filename("3M_2018_10K").company == "3M"  # the packaged table by default


@pytest.mark.parametrize(
    "name",
    [
        "annual_report_2020.pdf",
        "3M_2018_10-K_extra",
        "3M_2018_20F",
        "3M_2018Q5_10Q",
        "_2018_10K",
        "aapl-10-k-2024-13-01",
        "aapl-s-1-2020-01-01",
        "JOHNSON_JOHNSON_2023_8K_dated-2023-02-30",
        "",
    ],
)
def test_parse_filename_rejects(table, name):
    with pytest.raises(ValueError) as err:
        parse_filename(name, table)
    assert name in str(err.value)


@pytest.mark.integration
def test_every_financebench_pdf_name_parses(table):
    pdfs = sorted(need(FINANCEBENCH / "pdfs").glob("*.pdf"))
    lines = [json.loads(line) for line in need(FINANCEBENCH / "documents.jsonl").open()]
    expected = {line["doc_name"]: line for line in lines}
    assert len(pdfs) == 124
    for pdf in pdfs:
        line, meta = expected[pdf.stem], parse_filename(pdf, table)
        assert meta.doc_id == pdf.stem
        assert meta.company == table.by_name(line["company"]).name, pdf.name
        assert meta.doc_type == normalize_doc_type(line["doc_type"]), pdf.name
        assert meta.fiscal_year == line["doc_period"], pdf.name
        if "Q" in pdf.stem.split("_")[-2]:
            assert meta.fiscal_quarter == int(pdf.stem.split("_")[-2][-1]), pdf.name
        assert meta.ticker is not None, pdf.name


# --- sidecars ------------------------------------------------------------------------------


@pytest.mark.integration
def test_load_financebench_sidecar(table, caplog):
    path = need(FINANCEBENCH / "documents.jsonl")
    sidecar = load_sidecar(path, table)
    assert len(sidecar) == len({json.loads(line)["doc_name"] for line in path.open()})
    assert all(meta.doc_type in DOC_TYPES and meta.ticker for meta in sidecar.values())
    assert sidecar["3M_2018_10K"] == DocumentMeta(
        doc_id="3M_2018_10K", company="3M", doc_type="10-K", fiscal_year=2018, ticker="MMM",
        aliases=["3M Company", "Minnesota Mining and Manufacturing"], sector="Industrials",
    )
    assert sidecar["BESTBUY_2024Q2_10Q"].fiscal_quarter == 2
    assert sidecar["FOOTLOCKER_2022_8K_dated_2022-08-19"].filing_date == "2022-08-19"
    assert sidecar["AMD_2022_annualreport"].doc_type == "annual report"
    assert sidecar["PG_E_2023_EARNINGS_dated-2023-05-04"].company == "PG&E"
    assert sidecar["FOOTLOCKER_2023_annualreport"].fiscal_year == 2023  # listed twice: first kept
    assert "listed again" in caplog.text


def test_load_financebench_format_lines(tmp_path, table):
    path = tmp_path / "docs.jsonl"
    rows = [
        {"doc_name": "ACME_2021Q3_10Q", "company": "Acme Widgets", "gics_sector": "Industrials",
         "doc_type": "10q", "doc_period": 2021},
        {"doc_name": "FACEBOOK_2019_10K", "company": "Facebook", "doc_type": "10k", "doc_period": "2019"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    sidecar = load_sidecar(path, table)
    acme = sidecar["ACME_2021Q3_10Q"]
    assert (acme.company, acme.ticker, acme.fiscal_year, acme.fiscal_quarter, acme.sector) == (
        "Acme Widgets", None, 2021, 3, "Industrials")
    fb = sidecar["FACEBOOK_2019_10K"]
    assert (fb.company, fb.ticker, fb.fiscal_year) == ("Meta Platforms", "META", 2019)


def test_load_finrag_format_jsonl_and_json_list(tmp_path, table):
    rows = [
        {"doc_id": "acme-annual-2023.pdf", "company": "Acme Widgets", "ticker": "acme", "aliases": ["Acme"],
         "doc_type": "10-K", "period_end": "2024-03-31", "filing_date": "2024-05-20",
         "sector": "Industrials", "fiscal_year_end": "03-31"},
        {"doc_id": "acme-q1", "company": "Acme", "doc_type": "10-Q", "filing_date": "2024-08-10"},
        {"doc_id": "old-fb-deck", "company": "Facebook", "ticker": "FB", "doc_type": "earnings",
         "fiscal_year": 2019, "fiscal_quarter": 4},
    ]
    jsonl, listed = tmp_path / "meta.jsonl", tmp_path / "meta.json"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows))
    listed.write_text(json.dumps(rows, indent=2))
    first = load_sidecar(jsonl, table)
    assert load_sidecar(listed, table) == first

    acme = first["acme-annual-2023"]
    assert (acme.company, acme.ticker, acme.aliases, acme.fiscal_year) == ("Acme Widgets", "ACME", ["Acme"], 2024)
    learned = table.by_ticker("ACME")  # the sidecar taught the table about Acme
    assert learned.name == "Acme Widgets" and learned.fiscal_year_end == "03-31"
    q1 = first["acme-q1"]
    assert (q1.company, q1.ticker, q1.fiscal_year) == ("Acme Widgets", "ACME", 2025)  # FY ends March 2025
    fb = first["old-fb-deck"]
    assert (fb.company, fb.ticker, fb.fiscal_quarter) == ("Meta Platforms", "FB", 4)


def test_finrag_sidecar_quarter_takes_the_fiscal_year_it_falls_in(tmp_path, table):
    """A 10-Q's period end lies inside a fiscal year still under way: Q2 ended 30 June 2023 is
    FY2023 (not FY2022, the last year ended by then), and its quarter is read from the date."""
    rows = [
        {"doc_id": "pep-q2", "company": "PepsiCo", "doc_type": "10-Q", "period_end": "2023-06-17"},
        {"doc_id": "jpm-q2", "company": "JPMorgan Chase", "doc_type": "10-Q", "period_end": "2023-06-30"},
        {"doc_id": "wmt-q3", "company": "Walmart", "doc_type": "10-Q", "period_end": "2022-10-31"},
        {"doc_id": "jpm-k", "company": "JPMorgan Chase", "doc_type": "10-K", "period_end": "2022-12-31"},
    ]
    path = tmp_path / "meta.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    meta = load_sidecar(path, table)
    got = {k: (m.fiscal_year, m.fiscal_quarter) for k, m in meta.items()}
    assert got == {"pep-q2": (2023, 2), "jpm-q2": (2023, 2), "wmt-q3": (2023, 3),
                   "jpm-k": (2022, None)}
    assert table.by_ticker("META").ticker == "META"  # a former ticker does not replace the primary


@pytest.mark.parametrize(
    "line, message",
    [
        ("not json", "not valid JSON"),
        ('["a list"]', "expected a JSON object"),
        ('{"doc_id": "x", "company": "Acme"}', "doc_type"),
        ('{"doc_id": "x", "company": "Acme", "doc_type": "10-K", "fiscal_yr": 2020}', "unknown key"),
        ('{"doc_id": "x", "company": "Acme", "doc_type": "proxy"}', "unknown document type"),
        ('{"doc_id": "x", "company": "Acme", "doc_type": "10-Q", "fiscal_quarter": 5}', "fiscal_quarter"),
        ('{"doc_id": "x", "company": "Acme", "doc_type": "10-K", "filing_date": "2024-02-30"}', "not a date"),
        ('{"doc_id": "x", "company": "Acme", "doc_type": "10-K", "fiscal_year": "FY24"}', "not a year"),
        ('{"doc_id": "x", "company": "Acme", "doc_type": "10-K", "aliases": "Acme Co"}', "list of strings"),
        ('{"doc_name": "not a filing name", "company": "Acme", "doc_type": "10k"}', "cannot read"),
        ('{"company": "Acme", "doc_type": "10k"}', "doc_id"),
        ('{"doc_id": "x", "company": "Acme", "doc_type": "10-K", "ticker": 7}', "ticker"),
        ('{"doc_id": "x", "company": "Acme", "doc_type": "10-K", "fiscal_year_end": "3/31"}', "MM-DD"),
    ],
)
def test_bad_sidecar_lines_name_the_line(tmp_path, table, line, message):
    path = tmp_path / "meta.jsonl"
    good = json.dumps({"doc_id": "ok", "company": "Acme", "doc_type": "10-K"})
    path.write_text(f"{good}\n\n{line}\n")
    with pytest.raises(ValueError, match=message) as err:
        load_sidecar(path, table)
    assert "line 3" in str(err.value) and "meta.jsonl" in str(err.value)


def test_bad_json_list_names_the_entry(tmp_path, table):
    path = tmp_path / "meta.json"
    path.write_text(json.dumps([{"doc_id": "ok", "company": "Acme", "doc_type": "10-K"}, {"doc_id": "x"}]))
    with pytest.raises(ValueError, match="entry 2"):
        load_sidecar(path, table)


def test_resolve_metadata(table):
    sidecar = {
        "custom-doc": DocumentMeta(doc_id="custom-doc", company="facebook", doc_type="10-K", fiscal_year=2020),
        "stranger": DocumentMeta(doc_id="stranger", company="Unlisted Co", doc_type="8-K"),
    }
    meta = resolve_metadata("/data/custom-doc.pdf", sidecar, table)
    assert (meta.company, meta.ticker, meta.aliases, meta.fiscal_year) == (
        "Meta Platforms", "META", ["Meta", "Facebook"], 2020)
    assert resolve_metadata("stranger.pdf", sidecar, table) == sidecar["stranger"]
    assert resolve_metadata("x/3M_2018_10K.pdf", sidecar, table).ticker == "MMM"
    assert resolve_metadata("3M_2018_10K.pdf", None, table).fiscal_year == 2018
    with pytest.raises(ValueError, match="unknown-file"):
        resolve_metadata("unknown-file.pdf", sidecar, table)
