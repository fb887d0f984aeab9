"""``finrag fetch``: download a company's companyfacts and 10-K/10-Q filings from SEC EDGAR.
``finrag facts extract``: fill an index's facts table from the statement tables of its PDF
filings (for an index built before ingest did it; re-running replaces each document's facts)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from finrag.retrieval.facts.edgar import (BASE_URL_ENV, DEFAULT_FORMS, USER_AGENT_ENV, fetch_company,
                                   ingest_command)


def cmd_extract(args) -> int:
    from tqdm import tqdm

    from finrag.retrieval.store.catalog import Catalog
    from finrag.retrieval.routing.companies import CompanyTable
    from finrag.retrieval.facts.concepts import ConceptTable
    from finrag.retrieval.facts.statements import store_statements
    from finrag.retrieval.facts.store import FactStore
    from finrag.retrieval.ingest.kinds import file_kind

    db_path = Path(args.index) / "catalog.sqlite"
    if not db_path.is_file():
        print(f"error: {args.index}: no index here (no catalog.sqlite)", file=sys.stderr)
        return 2
    companies = CompanyTable.load(args.companies or [])
    concepts = ConceptTable.load(args.concepts or [])
    catalog = Catalog(db_path)
    store = FactStore(catalog.db)
    docs = [d for d in catalog.documents() if file_kind(Path(d.source_path)) == "pdf"
            and (not args.doc or d.doc_id in args.doc)]
    summary = {"documents": len(docs), "tables_read": 0, "facts_stored": 0,
               "no_statement": [], "skipped": [], "errors": []}
    try:
        for doc in tqdm(docs, unit="doc", disable=args.quiet or args.json, file=sys.stderr):
            try:
                found = store_statements(store, catalog, doc.doc_id, companies, concepts)
            except ValueError as err:
                summary["errors"].append(str(err).splitlines()[0])
                continue
            summary["tables_read"] += found.tables
            summary["facts_stored"] += len(found.facts)
            if found.note.startswith("no primary"):
                summary["no_statement"].append(doc.doc_id)
            elif found.note:
                summary["skipped"].append(f"{doc.doc_id}: {found.note}")
    finally:
        catalog.close()
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{summary['documents']} PDF document(s): {summary['tables_read']} statement "
              f"table(s) read, {summary['facts_stored']} facts stored; "
              f"{len(summary['no_statement'])} with no statement found, "
              f"{len(summary['skipped'])} skipped, {len(summary['errors'])} error(s)")
        for doc_id in summary["no_statement"]:
            print(f"  no statement: {doc_id}")
        for line in summary["skipped"] + summary["errors"]:
            print(f"  {line}")
    return 1 if summary["errors"] else 0


def cmd_fetch(args) -> int:
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


def add_parsers(sub) -> None:
    p = sub.add_parser("facts", help="facts of an index read from its PDF statement tables")
    fsub = p.add_subparsers(dest="facts_command", required=True)
    e = fsub.add_parser(
        "extract", help="read the primary financial statements' tables of every indexed PDF",
        description="Fill the index's facts table from the income statement, balance sheet and "
                    "cash flow statement tables of its PDF filings (10-K), as `finrag ingest` "
                    "does for new PDFs. Idempotent: a document's facts are replaced.")
    e.add_argument("--index", required=True, metavar="DIR", help="the index folder")
    e.add_argument("--doc", nargs="+", metavar="DOC_ID", help="only these documents")
    e.add_argument("--companies", nargs="+", metavar="YAML", help="extra company tables")
    e.add_argument("--concepts", nargs="+", metavar="YAML", help="extra metric tables")
    e.add_argument("--json", action="store_true", help="print the summary as JSON")
    e.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    e.set_defaults(func=cmd_extract)

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
