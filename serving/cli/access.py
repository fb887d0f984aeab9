"""``finrag token``: scoped API tokens, stored hashed (``serving/tokens.py``); ``finrag audit``:
who read what (``serving/audit.py``)."""

from __future__ import annotations

import datetime as dt
import json
import math
import sys
from pathlib import Path

from finrag.serving.options import add_index_option, index_dir
from finrag.serving.tokens import (ALL, MAX_EXPIRY_S, TokenError, TokenStore,
                                   default_tokens_file)


def _when(ts: float | None) -> str:
    if not ts:
        return "-"
    try:
        return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    except (TypeError, ValueError, OverflowError, OSError):  # a time edited into the file by hand
        return f"invalid ({str(ts)[:20]})"


def _warn_empty(collections: list[str], args) -> None:
    """Say which of a new token's collections hold no document of the index (yet): a typo
    there is a token that reads nothing."""
    from finrag.retrieval.store.index import Index

    folder = index_dir(args)
    if ALL in collections or not (folder / "catalog.sqlite").is_file():
        return
    with Index.open(folder) as index:
        empty = sorted(set(collections) - set(index.catalog.collection_counts()))
    if empty:
        print(f"warning: no document of the index {folder} is in {', '.join(empty)} yet; the "
              f"token reads nothing there until one is (`finrag collection list`)",
              file=sys.stderr)


def cmd_token(args) -> int:
    store = TokenStore(args.file or default_tokens_file())
    try:
        if args.action == "create":
            if not args.name:
                raise TokenError("`finrag token create NAME --collection C` needs a name")
            days = args.expires_days
            if days is not None and not (math.isfinite(days) and 0 < days <= MAX_EXPIRY_S / 86400):
                raise TokenError(f"--expires-days {days:g}: give a finite number of days above 0 "
                                 f"and at most {MAX_EXPIRY_S / 86400:g} (100 years), or leave it "
                                 f"out for a token that does not expire")
            record, token = store.create(
                args.name, args.collection or [],
                expires_in_s=None if days is None else days * 86400,
                ingest=args.ingest, admin=args.admin)
            _warn_empty(record.collections, args)
            if args.json:
                print(json.dumps({**record.public(), "token": token}, indent=2))
            else:
                print(f"token {record.name!r} reads {', '.join(record.collections)}"
                      f"{'; may ingest' if record.ingest else ''}"
                      f"{'; may administer' if record.admin else ''}"
                      f"; expires {_when(record.expires)}")
                print(token)
                print("the token is shown once and not stored: keep it now", file=sys.stderr)
        elif args.action == "revoke":
            if not args.name:
                raise TokenError("`finrag token revoke NAME` needs a name")
            record = store.revoke(args.name)
            print(f"revoked {record.name!r} at {_when(record.revoked)}")
        else:
            records = [r.public() for r in store.list()]
            if args.json:
                print(json.dumps(records, indent=2))
                return 0
            print(f"{'name':24} {'status':8} {'collections':28} {'rights':14} expires")
            for r in records:
                rights = ",".join(k for k in ("ingest", "admin") if r[k]) or "read"
                print(f"{r['name'][:24]:24} {r['status']:8} {','.join(r['collections'])[:28]:28} "
                      f"{rights:14} {_when(r['expires'])}")
    except TokenError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def cmd_audit(args) -> int:
    import os

    from finrag.serving.audit import matches, read_audit

    path = args.file or (Path(os.environ["FINRAG_AUDIT_FILE"]) if os.environ.get(
        "FINRAG_AUDIT_FILE") else default_tokens_file().with_name("audit.jsonl"))
    if not path.expanduser().exists():
        print(f"error: no audit log at {path} (the service writes it where auth.audit_file, "
              f"$FINRAG_AUDIT_FILE or the token file's folder says)", file=sys.stderr)
        return 1
    since = None
    if args.since:
        try:
            when = dt.datetime.fromisoformat(args.since)
        except ValueError:
            print(f"error: --since {args.since!r} is not an ISO date or time", file=sys.stderr)
            return 2
        since = (when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)).timestamp()
    found = [e for e in read_audit(path)
             if matches(e, token=args.token, doc=args.doc, since=since, status=args.status)]
    found = found[-args.limit:] if args.limit else found
    for e in found:
        if args.json:
            print(json.dumps(e, sort_keys=True))
            continue
        scope = "all" if e.get("collections") is None else ",".join(e["collections"]) or "-"
        docs = ",".join(e.get("cited") or e.get("routed") or ([e["doc"]] if e.get("doc") else []))
        print(f"{_when(e.get('ts'))}  {e.get('status')}  {str(e.get('token'))[:20]:20} "
              f"{scope[:20]:20} {e.get('path', '')[:22]:22} {docs}")
    return 0


def add_parsers(sub) -> None:
    p = sub.add_parser("token", help="scoped API tokens: create, list, revoke",
                       description="Tokens for the served API, each with a name, the "
                                   "collections it may read ('*': all), an optional expiry and "
                                   "whether it may ingest or administer. The file keeps a salted "
                                   "HMAC-SHA256 digest of each (scrypt for tokens made before), "
                                   "never the token, and must be readable by its owner only "
                                   "(0600).")
    p.add_argument("action", choices=("create", "list", "revoke"))
    p.add_argument("name", nargs="?", help="the token's name (create, revoke)")
    p.add_argument("--collection", action="append", metavar="NAME",
                   help=f"create: a collection it may read; repeatable; '{ALL}' for all")
    p.add_argument("--expires-days", type=float, default=None, metavar="N",
                   help="create: the token stops working N days from now, N finite and above "
                        "0 (default: never)")
    p.add_argument("--ingest", action="store_true",
                   help="create: may upload and remove filings over HTTP, in its collections")
    p.add_argument("--admin", action="store_true",
                   help="create: may change filings' collections over HTTP, its own only")
    p.add_argument("--file", type=Path, default=None,
                   help="the token file (default: $FINRAG_TOKENS_FILE, else "
                        "~/.config/finrag/tokens.json)")
    p.add_argument("--json", action="store_true", help="create, list: as JSON")
    add_index_option(p)  # create: warns of collections that hold none of its documents
    p.set_defaults(func=cmd_token)

    p = sub.add_parser("audit", help="who read what: the service's audit log, filtered",
                       description="The JSON lines the service writes per request (the token's "
                                   "name, never the token; its collections; the filings routed "
                                   "to and the documents cited; refused tokens as '-'), with "
                                   "the rotated files, oldest first.")
    p.add_argument("--file", type=Path, default=None,
                   help="the audit log (default: $FINRAG_AUDIT_FILE, else audit.jsonl beside "
                        "the token file)")
    p.add_argument("--token", metavar="NAME", help="only this token's requests ('-': refused)")
    p.add_argument("--doc", metavar="DOC_ID", help="only requests that routed to or cited it")
    p.add_argument("--since", metavar="WHEN", help="only from this ISO date or time (UTC)")
    p.add_argument("--status", type=int, help="only replies with this HTTP status")
    p.add_argument("--limit", type=int, default=0, help="the last N matches only")
    p.add_argument("--json", action="store_true", help="the lines as they are")
    p.set_defaults(func=cmd_audit)
