"""`finrag fetch` against a local stand-in for SEC EDGAR, and without any network at all."""

import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from finrag.retrieval.routing.companies import CompanyTable
from finrag.retrieval.facts.companyfacts import read_companyfacts
from finrag.retrieval.facts.edgar import (FetchError, SecClient, fetch_company, list_filings, resolve_cik,
                                   user_agent_from)
from finrag.retrieval.indexer import find_files
from finrag.retrieval.ingest.metadata import load_sidecar

REPO = Path(__file__).resolve().parents[2]
AGENT = "finrag tests test@example.com"
CIK = "0001045810"

COMPANYFACTS = json.dumps({
    "cik": 1045810, "entityName": "NVIDIA CORP",
    "facts": {"us-gaap": {"Revenues": {"label": "Revenues", "units": {"USD": [
        {"start": "2024-01-29", "end": "2025-01-26", "val": 130497000000,
         "accn": "0001045810-25-000023", "fy": 2025, "fp": "FY", "form": "10-K",
         "filed": "2025-02-26"},
        {"start": "2023-01-30", "end": "2024-01-28", "val": 60922000000,
         "accn": "0001045810-24-000029", "fy": 2024, "fp": "FY", "form": "10-K",
         "filed": "2024-02-21"},
    ]}}}},
}).encode()

# (form, accession, filing date, report date, primary document), newest first as SEC lists them
FILINGS = [
    ("10-K", "0001045810-25-000023", "2025-02-26", "2025-01-26", "nvda-20250126.htm"),
    ("10-Q", "0001045810-24-000264", "2024-08-28", "2024-07-28", "nvda-20240728.htm"),
    ("8-K", "0001045810-24-000200", "2024-05-22", "2024-05-22", "nvda-20240522.htm"),
    ("10-K", "0001045810-24-000029", "2024-02-21", "2024-01-28", "nvda-20240128.htm"),
]
SUBMISSIONS = json.dumps({
    "cik": "1045810", "name": "NVIDIA CORP", "tickers": ["NVDA"], "fiscalYearEnd": "0126",
    "filings": {"recent": {
        "form": [f[0] for f in FILINGS], "accessionNumber": [f[1] for f in FILINGS],
        "filingDate": [f[2] for f in FILINGS], "reportDate": [f[3] for f in FILINGS],
        "primaryDocument": [f[4] for f in FILINGS],
    }, "files": []},
}).encode()


def _doc_path(accession, document):
    return f"/Archives/edgar/data/1045810/{accession.replace('-', '')}/{document}"


class FakeSec:
    """A local HTTP server answering SEC's paths; records requests; can fail a path once."""

    def __init__(self):
        self.routes = {
            f"/api/xbrl/companyfacts/CIK{CIK}.json": COMPANYFACTS,
            f"/submissions/CIK{CIK}.json": SUBMISSIONS,
            "/files/company_tickers.json": json.dumps(
                {"0": {"cik_str": 1234567, "ticker": "ACME", "title": "Acme Corp"},
                 "1": {"cik_str": 1045810, "ticker": "NVDA", "title": "NVIDIA CORP"}}).encode(),
        }
        for form, accession, filed, _, document in FILINGS:
            self.routes[_doc_path(accession, document)] = (
                f"<html><body><p>NVIDIA {form} filed {filed}</p></body></html>".encode())
        self.fail_once = {}  # path -> HTTP status answered the first time only
        self.always = {}  # path -> HTTP status answered every time
        self.hits = {}
        self.agents = set()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                fake.hits[self.path] = fake.hits.get(self.path, 0) + 1
                fake.agents.add(self.headers.get("User-Agent"))
                status = fake.always.get(self.path) or fake.fail_once.pop(self.path, None)
                body = fake.routes.get(self.path)
                if status is None and body is None:
                    status = 404
                if status:
                    self.send_response(status)
                    self.send_header("Retry-After", "0")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def sec():
    fake = FakeSec()
    yield fake
    fake.close()


def finrag(*args, base_url, agent_env=None, timeout=60):
    env = {k: v for k, v in os.environ.items() if k != "FINRAG_SEC_USER_AGENT"}
    env.update(HF_HUB_OFFLINE="1", FINRAG_SEC_BASE_URL=base_url)
    if agent_env:
        env["FINRAG_SEC_USER_AGENT"] = agent_env
    return subprocess.run([sys.executable, "-m", "finrag.serving.cli", "fetch", *map(str, args)],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def closed_port_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there now: connection refused


def test_without_network_one_error_line_and_no_files(tmp_path):
    out = tmp_path / "nvda"
    res = finrag("NVDA", "--user-agent", AGENT, "--out", out, base_url=closed_port_url())
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("error: cannot reach 127.0.0.1:") and "(no network?)" in lines[0]
    assert "/api/xbrl/companyfacts/CIK0001045810.json" in lines[0]
    assert "Traceback" not in res.stderr
    assert not out.exists()


def test_fetch_writes_ingestable_folder_and_reruns_idempotently(sec, tmp_path):
    out = tmp_path / "nvda"
    q2 = _doc_path(*FILINGS[1][1::3])
    sec.fail_once[q2] = 429
    res = finrag("NVDA", "--user-agent", AGENT, "--out", out, "--json", base_url=sec.url)
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    html = ["nvda-10-k-2024-02-21.html", "nvda-10-k-2025-02-26.html", "nvda-10-q-2024-08-28.html"]
    assert sorted(summary["written"]) == sorted([f"CIK{CIK}.json", *html])
    assert summary["failed"] == [] and summary["skipped"] == []
    assert summary["next"] == f"finrag ingest {out} --metadata {out / 'filings.jsonl'}"
    assert sec.agents == {AGENT}
    assert sec.hits[q2] == 2  # the 429 was retried
    assert not any(path.startswith("/files/") for path in sec.hits)  # CIK from the table

    # the companyfacts file exactly as served, the 8-K left out, nothing half-written
    assert (out / f"CIK{CIK}.json").read_bytes() == COMPANYFACTS
    assert read_companyfacts(out / f"CIK{CIK}.json")[0]["cik"] == CIK
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted([f"CIK{CIK}.json", *html, "filings.jsonl", "sources.jsonl"])
    assert sorted(p.name for p in find_files([out]) if p.suffix == ".html") == html

    metas = load_sidecar(out / "filings.jsonl", CompanyTable.load())
    assert {d: (m.doc_type, m.fiscal_year, m.fiscal_quarter) for d, m in metas.items()} == {
        "nvda-10-k-2025-02-26": ("10-K", 2025, None),
        "nvda-10-q-2024-08-28": ("10-Q", 2025, 2),
        "nvda-10-k-2024-02-21": ("10-K", 2024, None),
    }
    meta = metas["nvda-10-k-2025-02-26"]
    assert (meta.company, meta.ticker, meta.period_end, meta.filing_date) == (
        "NVIDIA", "NVDA", "2025-01-26", "2025-02-26")
    sources = [json.loads(line) for line in (out / "sources.jsonl").read_text().splitlines()]
    assert {s["accession"] for s in sources} == {FILINGS[i][1] for i in (0, 1, 3)}
    assert all(s["url"].startswith(sec.url + "/Archives/edgar/data/1045810/") for s in sources)

    hits = dict(sec.hits)
    res = finrag("NVDA", "--out", out, base_url=sec.url, agent_env=AGENT)
    assert res.returncode == 0, res.stderr
    assert "wrote 0 file(s), skipped 4 already present" in res.stdout
    assert f"finrag ingest {out}" in res.stdout
    assert {p: n for p, n in sec.hits.items() if p.startswith("/Archives/")} == {
        p: n for p, n in hits.items() if p.startswith("/Archives/")}
    assert len((out / "filings.jsonl").read_text().splitlines()) == 3


def test_years_and_forms_filters(sec, tmp_path):
    get = SecClient(AGENT, backoff=0.01)
    report = fetch_company("nvda", tmp_path / "a", years=[2024], get=get, base_url=sec.url)
    assert sorted(report.written) == [f"CIK{CIK}.json", "nvda-10-k-2024-02-21.html"]
    report = fetch_company("NVDA", tmp_path / "b", forms=["8-K"], get=get, base_url=sec.url)
    assert report.written == [f"CIK{CIK}.json", "nvda-8-k-2024-05-22.html"]
    with pytest.raises(ValueError, match="unsupported form"):
        fetch_company("NVDA", tmp_path / "c", forms=["S-1"], get=get, base_url=sec.url)


def test_company_unknown_to_the_table_takes_sec_calendar(sec, tmp_path):
    get = SecClient(AGENT, backoff=0.01)
    out = tmp_path / "nvda"
    report = fetch_company("NVDA", out, get=get, base_url=sec.url, companies=CompanyTable())
    assert report.ok and len(report.written) == 4
    records = [json.loads(line) for line in (out / "filings.jsonl").read_text().splitlines()]
    assert {r["company"] for r in records} == {"NVIDIA CORP"}
    assert {r["fiscal_year_end"] for r in records} == {"01-26"}
    assert {r["doc_id"]: r["fiscal_year"] for r in records} == {
        "nvda-10-k-2024-02-21": 2024, "nvda-10-k-2025-02-26": 2025, "nvda-10-q-2024-08-28": 2025}


def test_failure_midway_keeps_whole_files_and_their_sidecar(sec, tmp_path):
    out = tmp_path / "nvda"
    sec.always[_doc_path(*FILINGS[3][1::3])] = 403  # the oldest 10-K, fetched last
    with pytest.raises(FetchError, match="HTTP 403"):
        fetch_company("NVDA", out, get=SecClient(AGENT), base_url=sec.url)
    assert sorted(p.name for p in out.iterdir()) == sorted([
        f"CIK{CIK}.json", "nvda-10-k-2025-02-26.html", "nvda-10-q-2024-08-28.html",
        "filings.jsonl", "sources.jsonl"])
    assert set(load_sidecar(out / "filings.jsonl", CompanyTable.load())) == {
        "nvda-10-k-2025-02-26", "nvda-10-q-2024-08-28"}

    del sec.always[_doc_path(*FILINGS[3][1::3])]
    report = fetch_company("NVDA", out, get=SecClient(AGENT), base_url=sec.url)
    assert report.written == ["nvda-10-k-2024-02-21.html"] and len(report.skipped) == 3
    assert len((out / "filings.jsonl").read_text().splitlines()) == 3


def test_missing_user_agent_is_refused(sec, tmp_path, monkeypatch):
    res = finrag("NVDA", "--out", tmp_path / "x", base_url=sec.url)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    line, = res.stderr.strip().splitlines()
    assert "User-Agent" in line and "--user-agent" in line and "FINRAG_SEC_USER_AGENT" in line
    assert sec.hits == {} and not (tmp_path / "x").exists()
    monkeypatch.delenv("FINRAG_SEC_USER_AGENT", raising=False)
    with pytest.raises(FetchError, match="contact email"):
        user_agent_from("just a name")
    monkeypatch.setenv("FINRAG_SEC_USER_AGENT", AGENT)
    assert user_agent_from(None) == AGENT


def test_client_errors_rate_limit_and_ticker_lookup(sec):
    get = SecClient(AGENT, retries=2, backoff=0.01)
    path = f"/submissions/CIK{CIK}.json"
    sec.always[path] = 403
    with pytest.raises(FetchError, match="HTTP 403.*User-Agent") as err:
        get(sec.url + path)
    assert sec.hits[path] == 1 and "\n" not in str(err.value)  # a refusal is not retried
    sec.always[path] = 503
    with pytest.raises(FetchError, match="HTTP 503 .* after 3 tries"):
        get(sec.url + path)
    assert sec.hits[path] == 4
    with pytest.raises(FetchError, match="HTTP 404") as err:
        get(sec.url + "/nope")
    assert err.value.status == 404

    started = time.monotonic()
    for _ in range(5):
        get(sec.url + "/files/company_tickers.json")
    assert time.monotonic() - started >= 4 / 8 - 0.01  # at most 8 requests a second

    empty = CompanyTable()
    assert resolve_cik("ACME", get, sec.url, empty) == ("0001234567", None)
    with pytest.raises(FetchError, match="unknown ticker 'ZZZZ'"):
        resolve_cik("ZZZZ", get, sec.url, empty)


def test_older_submission_pages_are_read_only_for_the_years_asked():
    page = {"form": ["10-K"], "accessionNumber": ["0001045810-12-000010"],
            "filingDate": ["2012-03-13"], "reportDate": ["2012-01-29"],
            "primaryDocument": ["nvda-20120129.htm"]}
    submissions = json.loads(SUBMISSIONS)
    submissions["filings"]["files"] = [{"name": "CIK0001045810-submissions-001.json",
                                        "filingFrom": "2010-01-01", "filingTo": "2013-12-31"}]
    asked = []

    def get(url):
        asked.append(url)
        return json.dumps(page).encode()

    assert len(list_filings(submissions, get, "http://sec")) == 4 and asked == []
    assert len(list_filings(submissions, get, "http://sec", {2024})) == 4 and asked == []
    filings = list_filings(submissions, get, "http://sec", {2012, 2025})
    assert asked == ["http://sec/submissions/CIK0001045810-submissions-001.json"]
    assert filings[-1].accession == "0001045810-12-000010"
