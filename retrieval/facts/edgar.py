"""Download a company's XBRL facts and its 10-K/10-Q filings from SEC EDGAR's public endpoints.

``fetch_company("NVDA", out)`` writes into ``out`` (a folder ``finrag ingest`` reads):

* ``CIK##########.json``: the companyfacts file, byte for byte as SEC serves it;
* ``<ticker>-<form>-<filing date>.html``: each filing's primary document
  (``nvda-10-k-2025-02-26.html``, the EDGAR-style name ``retrieval.ingest.metadata`` parses);
* ``filings.jsonl``: one finrag sidecar line per filing (``finrag ingest --metadata``);
* ``sources.jsonl``: where each filing came from (form, CIK, accession, URL). It is a separate
  file because the finrag sidecar format refuses keys it does not know.

Files already present are skipped, so a re-run only downloads what is new; every file is
written to a temporary name and renamed, so none is ever left half-written. SEC asks every
client to declare a User-Agent with a contact email and to stay under 10 requests a second;
``SecClient`` does both and retries 429 and 5xx answers.
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any, Callable, Iterable

from tqdm import tqdm

from finrag.retrieval.documents import PUBLIC_COLLECTION
from finrag.retrieval.routing.calendars import fiscal_period, nominal_end
from finrag.retrieval.routing.companies import Company, CompanyTable, default_table

WWW_URL = "https://www.sec.gov"
DATA_URL = "https://data.sec.gov"
USER_AGENT_ENV = "FINRAG_SEC_USER_AGENT"
BASE_URL_ENV = "FINRAG_SEC_BASE_URL"  # one server standing in for both SEC hosts (tests, mirrors)
FORMS = ("10-K", "10-Q", "8-K")  # the filing types finrag's metadata knows
DEFAULT_FORMS = ("10-K", "10-Q")
SIDECAR = "filings.jsonl"
SOURCES = "sources.jsonl"

Getter = Callable[[str], bytes]


class FetchError(RuntimeError):
    """A download that cannot succeed: no network, SEC refusing, unknown ticker, missing file."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(" ".join(message.split()))  # always one line
        self.status = status


def user_agent_from(value: str | None = None) -> str:
    """The declared User-Agent: ``value``, else $FINRAG_SEC_USER_AGENT; FetchError when neither."""
    agent = (value or os.environ.get(USER_AGENT_ENV) or "").strip()
    how = (f'pass --user-agent "Your Name you@example.com" or set {USER_AGENT_ENV}; SEC blocks '
           "clients that do not name themselves")
    if not agent:
        raise FetchError(f"SEC requires a User-Agent with a contact email: {how}")
    if "@" not in agent:
        raise FetchError(f"the User-Agent {agent!r} has no contact email: {how}")
    return agent


class SecClient:
    """``get(url) -> bytes`` for SEC: declared User-Agent, rate limit, retries, timeout."""

    def __init__(self, user_agent: str, *, per_second: float = 8, retries: int = 4,
                 timeout: float = 30, backoff: float = 1.0) -> None:
        self.user_agent = user_agent
        self.interval = 1 / per_second
        self.retries = retries
        self.timeout = timeout
        self.backoff = backoff
        self._last = 0.0
        self._lock = threading.Lock()

    def __call__(self, url: str) -> bytes:
        host = urllib.parse.urlsplit(url).netloc
        tries = 0
        while True:
            tries += 1
            may_retry = tries <= self.retries
            self._wait_turn()
            try:
                return self._get(url)
            except urllib.error.HTTPError as err:
                if err.code in (429, 500, 502, 503, 504) and may_retry:
                    time.sleep(self._delay(tries, err.headers.get("Retry-After")))
                    continue
                raise _http_error(host, url, err.code, err.reason, tries) from None
            except (TimeoutError, ConnectionResetError, http.client.IncompleteRead) as err:
                if may_retry:
                    time.sleep(self._delay(tries, None))
                    continue
                raise FetchError(f"{host} did not answer ({err or type(err).__name__}) after "
                                 f"{tries} tries: {url}") from None
            except urllib.error.URLError as err:  # DNS failure, connection refused: not retried
                raise FetchError(f"cannot reach {host} (no network?): {err.reason}: {url}"
                                 ) from None

    def _get(self, url: str) -> bytes:
        request = urllib.request.Request(url, headers={
            "User-Agent": self.user_agent, "Accept-Encoding": "gzip"})
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            body = response.read()
            if response.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            return body

    def _wait_turn(self) -> None:
        with self._lock:
            pause = self._last + self.interval - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            self._last = time.monotonic()

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after and retry_after.strip().isdigit():
            return min(float(retry_after), 60.0)
        return self.backoff * 2 ** (attempt - 1)


def _http_error(host: str, url: str, code: int, reason: str, tries: int) -> FetchError:
    if code == 403:
        return FetchError(f"{host} refused the request (HTTP 403): SEC blocks clients without a "
                          f"User-Agent naming you and your email, and clients over 10 requests/s: "
                          f"{url}", status=code)
    if code == 404:
        return FetchError(f"not found on {host} (HTTP 404): {url}", status=code)
    tried = f" after {tries} tries" if tries > 1 else ""
    return FetchError(f"{host} answered HTTP {code} {reason}{tried}: {url}", status=code)


@dataclass(frozen=True)
class Filing:
    """One row of a submissions listing."""

    form: str
    accession: str
    filing_date: str
    report_date: str | None
    primary_document: str


@dataclass
class FetchReport:
    ticker: str
    cik: str
    folder: Path
    written: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # already present
    failed: list[str] = field(default_factory=list)  # one message each
    notes: list[str] = field(default_factory=list)  # filings left out, and why

    @property
    def ok(self) -> bool:
        return not self.failed

    def summary(self) -> dict[str, Any]:
        return {"ticker": self.ticker, "cik": self.cik, "folder": str(self.folder),
                "written": self.written, "skipped": self.skipped, "failed": self.failed,
                "notes": self.notes, "next": ingest_command(self.folder)}


def ingest_command(folder: Path) -> str:
    return f"finrag ingest {folder} --metadata {folder / SIDECAR}"


def fetch_company(
    ticker: str,
    out: str | Path | None = None,
    *,
    years: Iterable[int] | None = None,
    forms: Iterable[str] = DEFAULT_FORMS,
    user_agent: str | None = None,
    get: Getter | None = None,
    base_url: str | None = None,
    companies: CompanyTable | None = None,
    progress: bool = False,
) -> FetchReport:
    """Download ``ticker``'s companyfacts and its filings of ``forms`` into ``out``.

    ``years`` keeps filings whose fiscal year (that of their report date on the company's
    fiscal calendar; of the filing date when there is no report date) is listed. ``get``
    replaces the HTTP client (it needs no User-Agent then); ``base_url`` (or
    $FINRAG_SEC_BASE_URL) replaces both SEC hosts. Raises FetchError for what no retry fixes.
    """
    forms = _check_forms(forms)
    wanted_years = set(years or ())
    if get is None:
        get = SecClient(user_agent_from(user_agent))
    base = (base_url or os.environ.get(BASE_URL_ENV) or "").rstrip("/")
    www, data = (base, base) if base else (WWW_URL, DATA_URL)
    cik, company = resolve_cik(ticker.strip().upper(), get, www, companies)
    ticker = company.ticker if company and company.ticker else ticker.strip().upper()
    folder = Path(out) if out else Path("data") / "sec" / ticker.lower()
    report = FetchReport(ticker, cik, folder)
    _download(report, f"{data}/api/xbrl/companyfacts/CIK{cik}.json", folder / f"CIK{cik}.json", get)

    submissions = _json(get(f"{data}/submissions/CIK{cik}.json"), "submissions")
    calendar = _calendar_company(company, submissions, ticker)
    listing = list_filings(submissions, get, data, wanted_years)
    chosen: dict[str, tuple[Filing, dict[str, Any]]] = {}
    for filing in listing:
        if filing.form not in forms:
            continue
        fiscal_year, quarter = filing_period(filing, calendar)
        if wanted_years and fiscal_year not in wanted_years:
            continue
        doc_id = f"{ticker.lower()}-{filing.form.lower()}-{filing.filing_date}"
        if Path(filing.primary_document).suffix.lower() not in (".htm", ".html"):
            report.notes.append(f"{filing.accession}: primary document "
                                f"{filing.primary_document!r} is not HTML, left out")
        elif doc_id in chosen:  # a second filing of that form the same day (8-Ks do this)
            report.notes.append(f"{filing.accession}: another {filing.form} filed "
                                f"{filing.filing_date} already takes the name {doc_id}.html")
        else:
            chosen[doc_id] = (filing, _sidecar_record(doc_id, filing, fiscal_year, quarter,
                                                      calendar, company))

    try:
        for doc_id, (filing, _) in tqdm(chosen.items(), desc=ticker, unit="filing",
                                        disable=not progress):
            url = (f"{www}/Archives/edgar/data/{int(cik)}/"
                   f"{filing.accession.replace('-', '')}/{filing.primary_document}")
            _download(report, url, folder / f"{doc_id}.html", get)
    finally:  # what did arrive gets its sidecar lines, even when a later download failed
        present = {d: v for d, v in chosen.items() if (folder / f"{d}.html").exists()}
        _merge_jsonl(folder / SIDECAR, [record for _, record in present.values()])
        _merge_jsonl(folder / SOURCES, [_source_record(d, f, cik, www)
                                        for d, (f, _) in present.items()])
    return report


def resolve_cik(ticker: str, get: Getter, www: str = WWW_URL,
                companies: CompanyTable | None = None) -> tuple[str, Company | None]:
    """(10-digit CIK, the company table's entry or None): the table first, then SEC's list."""
    company = (companies if companies is not None else default_table()).by_ticker(ticker)
    if company and company.cik:
        return company.cik, company
    tickers = _json(get(f"{www}/files/company_tickers.json"), "company_tickers")
    wanted = ticker.upper().replace(".", "-")  # SEC writes BRK-B for BRK.B
    for row in tickers.values() if isinstance(tickers, dict) else ():
        if str(row.get("ticker", "")).upper() == wanted:
            return str(row["cik_str"]).zfill(10), company
    raise FetchError(f"unknown ticker {ticker!r}: neither finrag's company table nor SEC's "
                     "ticker list knows it")


def list_filings(submissions: dict[str, Any], get: Getter, data: str = DATA_URL,
                 years: set[int] | None = None) -> list[Filing]:
    """The filings of a submissions file, newest first.

    ``filings.recent`` holds the last 1000 filings (or the last year's); older ones sit in
    further pages, read only when ``years`` asks for a year those pages may cover.
    """
    filings = submissions.get("filings") or {}
    rows = _rows(filings.get("recent") or {})
    for page in filings.get("files") or ():
        first, last = int(page["filingFrom"][:4]), int(page["filingTo"][:4])
        # a fiscal year's filings are filed from the year before it to the year after
        if years and first <= max(years) + 1 and last >= min(years) - 1:
            rows += _rows(_json(get(f"{data}/submissions/{page['name']}"), page["name"]))
    return rows


def filing_period(filing: Filing, company: Company | None) -> tuple[int, int | None]:
    """(fiscal year, fiscal quarter or None) of a filing on ``company``'s fiscal calendar."""
    fye = company.fiscal_year_end if company else None
    week_based = bool(company and company.week_based)
    if not filing.report_date:
        # As finrag reads a file name's filing date: a 10-K reports the year just ended,
        # other forms fall in the year under way.
        year, _ = fiscal_period(date.fromisoformat(filing.filing_date), fye, week_based)
        return (year - 1 if filing.form == "10-K" else year), None
    day = date.fromisoformat(filing.report_date)
    year, _ = fiscal_period(day, fye, week_based)
    if filing.form != "10-Q":
        return year, None
    # Months since the last year end, rounded: a 52/53-week quarter may end a few days into
    # the next month or short of its last day.
    start = nominal_end(year - 1, fye)
    months = (day.year - start.year) * 12 + day.month - start.month
    return year, min(3, max(1, round(months / 3)))


# --- helpers -------------------------------------------------------------------------------


def _check_forms(forms: Iterable[str]) -> set[str]:
    chosen = {f.strip().upper() for f in forms if f.strip()}
    unknown = chosen - set(FORMS)
    if unknown or not chosen:
        raise ValueError(f"unsupported form(s) {sorted(unknown)}; choose from {', '.join(FORMS)}")
    return chosen


def _rows(columns: dict[str, list[Any]]) -> list[Filing]:
    names = ("form", "accessionNumber", "filingDate", "reportDate", "primaryDocument")
    cols = [columns.get(name) or [] for name in names]
    return [Filing(form, accession, filed, report or None, document)
            for form, accession, filed, report, document in zip(*cols)]


def _calendar_company(company: Company | None, submissions: dict[str, Any],
                      ticker: str) -> Company:
    """The company whose fiscal calendar places the filings: the table's, else SEC's word."""
    fye = str(submissions.get("fiscalYearEnd") or "")
    fye = f"{fye[:2]}-{fye[2:]}" if len(fye) == 4 and fye.isdigit() else None
    if company and (company.fiscal_year_end or not fye):
        return company
    # SEC's fiscalYearEnd is the latest year's actual end, which drifts for 52/53-week years:
    # the 3-day slack keeps those right and changes nothing for fixed year ends.
    if company:
        return replace(company, fiscal_year_end=fye, week_based=True)
    return Company(key=ticker, name=str(submissions.get("name") or ticker), ticker=ticker,
                   fiscal_year_end=fye, week_based=True)


def _sidecar_record(doc_id: str, filing: Filing, fiscal_year: int, quarter: int | None,
                    calendar: Company, known: Company | None) -> dict[str, Any]:
    """A line in finrag's sidecar format (``retrieval.ingest.metadata.load_sidecar``)."""
    record = {"doc_id": doc_id, "company": calendar.name, "ticker": calendar.ticker,
              "doc_type": filing.form, "fiscal_year": fiscal_year, "fiscal_quarter": quarter,
              "period_end": filing.report_date, "filing_date": filing.filing_date,
              "collections": [PUBLIC_COLLECTION]}  # filed with SEC: public
    if not (known and known.fiscal_year_end):  # teaches ingest's table the year end SEC states
        record["fiscal_year_end"] = calendar.fiscal_year_end
    return {k: v for k, v in record.items() if v is not None}


def _source_record(doc_id: str, filing: Filing, cik: str, www: str) -> dict[str, Any]:
    accession = filing.accession
    return {"doc_id": doc_id, "form": filing.form, "cik": cik, "accession": accession,
            "filing_date": filing.filing_date, "report_date": filing.report_date,
            "url": f"{www}/Archives/edgar/data/{int(cik)}/{accession.replace('-', '')}/"
                   f"{filing.primary_document}"}


def _download(report: FetchReport, url: str, path: Path, get: Getter) -> None:
    if path.exists():
        report.skipped.append(path.name)
        return
    try:
        body = get(url)
    except FetchError as err:
        if err.status != 404:  # no network, refusals: every other download would fail too
            raise
        report.failed.append(str(err))
        return
    _write_atomic(path, body)
    report.written.append(path.name)


def _write_atomic(path: Path, body: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _merge_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    """Add ``records`` to a JSONL file keyed by doc_id (new lines replace old ones)."""
    if not records:
        return
    merged: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                old = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(old, dict) and old.get("doc_id"):
                merged[old["doc_id"]] = old
    merged.update((r["doc_id"], r) for r in records)
    text = "".join(json.dumps(merged[k]) + "\n" for k in sorted(merged))
    _write_atomic(path, text.encode("utf-8"))


def _json(body: bytes, what: str) -> Any:
    try:
        return json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise FetchError(f"SEC's {what} file is not valid JSON ({err})") from None
