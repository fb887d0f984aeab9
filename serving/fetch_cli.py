"""``finrag fetch``: download a company's companyfacts and 10-K/10-Q filings from SEC EDGAR."""

from __future__ import annotations

import json
from pathlib import Path


def cmd_fetch(args) -> int:
    from retrieval.facts.edgar import fetch_company, ingest_command

    report = fetch_company(args.ticker, args.out, years=args.years, forms=args.forms.split(","),
                           user_agent=args.user_agent, progress=not (args.quiet or args.json))
    if args.json:
        print(json.dumps(report.summary(), indent=2))
        return 0 if report.ok else 1
    print(f"{report.ticker} (CIK {report.cik}): wrote {len(report.written)} file(s), skipped "
          f"{len(report.skipped)} already present, {len(report.failed)} failed — {report.folder}")
    for message in report.failed:
        print(f"  failed: {message}")
    for note in report.notes:
        print(f"  note: {note}")
    print(f"next: {ingest_command(report.folder)}")
    return 0 if report.ok else 1


def add_parser(sub) -> None:
    from retrieval.facts.edgar import BASE_URL_ENV, DEFAULT_FORMS, USER_AGENT_ENV

    p = sub.add_parser(
        "fetch", help="download a company's companyfacts and 10-K/10-Q filings from SEC EDGAR",
        description="Download SEC's companyfacts JSON and the primary HTML document of each "
                    "10-K/10-Q into a folder `finrag ingest` reads, with a metadata sidecar "
                    "(filings.jsonl). Files already there are skipped. SEC requires a "
                    f"User-Agent naming you and a contact email (--user-agent or "
                    f"${USER_AGENT_ENV}). ${BASE_URL_ENV} replaces both SEC hosts (a mirror). "
                    "Exit status 1 if a file was missing on SEC, 2 on other errors.")
    p.add_argument("ticker", metavar="TICKER", help="the company's ticker, e.g. NVDA")
    p.add_argument("--years", type=int, nargs="+", metavar="YEAR",
                   help="only these fiscal years (of the report date on the company's fiscal "
                        "calendar); default: every filing in SEC's recent list")
    p.add_argument("--forms", default=",".join(DEFAULT_FORMS),
                   help="comma-separated forms: 10-K, 10-Q, 8-K (%(default)s)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="output folder (data/sec/<ticker>)")
    p.add_argument("--user-agent", metavar="'NAME EMAIL'",
                   help=f"declared to SEC (default: ${USER_AGENT_ENV})")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_fetch)
