"""Who may read what over HTTP, and the served app's holes past it: every surface of a
served app probed with tokens of one collection asking about, fetching and writing to the
other (``probe_http``), identity headers and tokens (``probe_identity_and_tokens``), and
requests and uploads built to break it (``served_holes``). ``benchmarks.access_probes`` runs
them; the served tests run them too."""

from __future__ import annotations

import base64
import json
from collections import Counter
from pathlib import Path
from typing import Any

from finrag.benchmarks.access_cases import (ALPHA, BETA, MISSING, QUESTIONS, SYSTEMS, UPLOAD, Case,
                                            leaks_in, request, upload_body)

def probe_http(url: str, tokens: dict[str, str], secrets: list[str], corpus) -> list[Case]:
    """The served app probed by `alpha`'s tokens (``tokens``: reader, uploader and the refused
    ones: revoked, expired, wrong). Nothing here writes to the index: every write tried is
    one the token may not make."""
    cases: list[Case] = []

    def probe(surface: str, what: str, expected: int, status: int, body: str) -> str:
        cases.append(Case(surface, what, expected, status, leaks_in(body, secrets)))
        return body

    reader = tokens["reader"]
    for question in QUESTIONS:
        for system in SYSTEMS:
            probe("answer", f"{system}: {question}", 200, *request(
                url + "/v1/answer", reader,
                {"question": question, "system": system, "generate": False}))
    probe("stream", "hdrr, generated", 200, *request(
        url + "/v1/answer", reader, {"question": QUESTIONS[0], "system": "hdrr", "stream": True}))
    for stream in (False, True):
        probe("openai", f"finrag-cbr, stream={stream}", 200, *request(
            url + "/v1/chat/completions", reader, {
                "model": "finrag-cbr", "stream": stream,
                "messages": [{"role": "user", "content": QUESTIONS[1]}]}))
    listed = probe("documents", "list", 200, *request(url + "/v1/documents?limit=50", reader))
    if cases[-1].status == 200 and sorted(d["doc_id"] for d in
                                          json.loads(listed)["documents"]) != ALPHA:
        cases[-1].leaks.append("the list is not alpha's filings")
    # a page of a filing it may not read: the very reply of one that does not exist
    _, missing = request(url + f"/v1/documents/{MISSING}/pages/1", reader)
    for doc in BETA:
        status, body = request(url + f"/v1/documents/{doc}/pages/1", reader)
        probe("page", f"{doc} page 1", 404, status, body.replace(doc, MISSING))
        if body.replace(doc, MISSING) != missing:
            cases[-1].leaks.append("the reply differs from a missing filing's")
    for name in ("revoked", "expired", "wrong"):
        probe("token", f"{name} token lists documents", 401,
              *request(url + "/v1/documents", tokens[name]))
    uploader = tokens["uploader"]
    writes = [("reader uploads into alpha", reader, "/v1/documents",
               upload_body(corpus, UPLOAD, ["alpha"]), "POST", 403),
              ("uploader uploads into beta", uploader, "/v1/documents",
               upload_body(corpus, UPLOAD, ["beta"]), "POST", 403),
              ("uploader uploads beta's filing again", uploader, "/v1/documents",
               upload_body(corpus, BETA[0], ["alpha"]) | {"replace": True}, "POST", 409),
              ("reader removes an alpha filing", reader, f"/v1/documents/{ALPHA[0]}", None,
               "DELETE", 403),
              (f"uploader removes {BETA[0]}", uploader, f"/v1/documents/{BETA[0]}", None,
               "DELETE", 404),
              ("uploader (no admin right) moves an alpha filing to beta", uploader,
               f"/v1/documents/{ALPHA[0]}/collections", {"add": ["beta"]}, "PUT", 403),
              ("reader moves a beta filing to alpha", reader,
               f"/v1/documents/{BETA[0]}/collections", {"add": ["alpha"]}, "PUT", 403)]
    for what, token, path, body, method, expected in writes:
        status, reply = request(url + path, token, body, method)
        named = [d for d in BETA if f"/{d}" in path]  # a reply may echo the id it was sent
        for doc in named:
            reply = reply.replace(doc, MISSING)
        probe("write", what, expected, status, reply)
        if named and status == 404:  # and must be the reply of a filing that does not exist
            _, missing = request(url + path.replace(named[0], MISSING), token, body, method)
            if reply != missing:
                cases[-1].leaks.append("the reply differs from a missing filing's")
    return cases


def raw(url: str, method: str, path: str, headers: list[tuple[str, str]], body: bytes = b"",
        *, timeout: float = 60.0, send_body: bool = True) -> tuple[int | None, str, float]:
    """One request with headers as given, repeated ones included (urllib folds them): (status
    or None when no reply came within ``timeout``, the reply, seconds). ``send_body=False``
    sends the headers (a Content-Length among them) and never the body: a slow client."""
    import http.client
    import time
    from urllib.parse import urlsplit

    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=timeout)
    started = time.monotonic()
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for name, value in headers:
            conn.putheader(name, value)
        conn.endheaders(body if send_body and body else None)
        reply = conn.getresponse()
        return reply.status, reply.read().decode("utf-8", "replace"), time.monotonic() - started
    except (TimeoutError, OSError):
        return None, "", time.monotonic() - started
    finally:
        conn.close()


PROXY_SECRET = "probe-proxy-secret-0123456789"
# an identity proxy's groups as a directory names them: a DN with commas, a name with spaces
PROXY_GROUPS = {"CN=Desk Alpha,OU=Groups,DC=bank,DC=com": ["alpha"], "Beta Readers": ["beta"]}


def _proxied(user: str, groups: str) -> list[tuple[str, str]]:
    return [("X-Proxy-Secret", PROXY_SECRET), ("X-Forwarded-User", user),
            ("X-Forwarded-Groups", groups)]


def _listed(reply: str) -> list[str] | None:
    try:
        return sorted(d["doc_id"] for d in json.loads(reply)["documents"])
    except (ValueError, KeyError, TypeError):
        return None


def probe_identity_and_tokens(url: str, tokens: dict[str, str], bearer_file: Path,
                              ingress_rss, wait_s: float = 35.0) -> tuple[list[Case], dict]:
    """The holes of identity headers and tokens, over HTTP: an identity header sent twice;
    groups as a directory names them; the all-collections bearer token's file deleted (its
    token refused ``wait_s`` later); 300 wrong secrets for a known key id, with /healthz's
    latency and the Ingress's RSS (``ingress_rss()``, bytes) before and after. Returns the
    cases and the flood's figures."""
    import statistics
    import time

    cases: list[Case] = []
    docs = url + "/v1/documents?limit=50"
    path = "/v1/documents?limit=50"
    twice = [("X-Forwarded-User", "mallory")] + _proxied("ana", "Beta Readers")
    status, reply, _ = raw(url, "GET", path, twice)
    cases.append(Case("identity", "two X-Forwarded-User headers (a client's, then the "
                                  "proxy's)", 401, status, leaks_in(reply, BETA)))
    # what each collection's token lists now (earlier probes moved and uploaded filings)
    alpha = _listed(request(docs, tokens["reader"])[1]) or []
    beta = _listed(request(docs, tokens["beta"])[1]) or []
    for groups, want, names in (
            ('"CN=Desk Alpha,OU=Groups,DC=bank,DC=com"', alpha, "alpha's"),
            ('Beta Readers, "CN=Desk Alpha,OU=Groups,DC=bank,DC=com"', sorted(alpha + beta),
             "alpha's and beta's")):
        status, reply, _ = raw(url, "GET", path, _proxied("ana", groups))
        listed = _listed(reply)
        cases.append(Case("identity", f"groups {groups}: lists exactly {names} filings "
                                      f"({len(want)})", 200, status,
                          [] if want and listed == sorted(want) else [f"listed {listed}"]))
    status, reply, _ = raw(url, "GET", path, _proxied("ana", '"CN=Desk Alpha'))
    cases.append(Case("identity", "a groups header with an unclosed quote", 401, status, []))

    status, _ = request(docs, tokens["bearer"])
    cases.append(Case("token", "the all-collections bearer token, its file in place", 200,
                      status, []))
    bearer_file.unlink()
    time.sleep(wait_s)
    status, reply = request(docs, tokens["bearer"])
    cases.append(Case("token", f"the bearer token's file deleted, {wait_s:g} s later", 401,
                      status, leaks_in(reply, BETA)))

    def health_ms() -> float:
        started = time.monotonic()
        request(url + "/healthz", None)
        return (time.monotonic() - started) * 1000

    def p99(values: list[float]) -> float:
        return statistics.quantiles(values, n=100)[98]

    before_ms = [health_ms() for _ in range(30)]
    rss_before = ingress_rss()
    key_id = tokens["reader"].split("_")[1]
    statuses, during_ms = Counter(), []
    started = time.monotonic()
    for i in range(300):
        wrong = f"frg_{key_id}_" + base64.urlsafe_b64encode(
            i.to_bytes(4, "big") * 8).decode().rstrip("=")[:43]
        statuses[request(docs, wrong)[0]] += 1
        if i % 10 == 9:
            during_ms.append(health_ms())
    flood_s = time.monotonic() - started
    rss_after = ingress_rss()
    figures = {"wrong_secrets": 300, "statuses": dict(statuses), "flood_s": round(flood_s, 3),
               "healthz_p99_ms_before": round(p99(before_ms), 2),
               "healthz_p99_ms_during": round(p99(during_ms), 2),
               "ingress_rss_mb_before": round(rss_before / 2**20, 1),
               "ingress_rss_mb_after": round(rss_after / 2**20, 1)}
    grew = (rss_after - rss_before) / 2**20
    cases.append(Case("token", f"300 wrong secrets for a known key id: {dict(statuses)}, "
                               f"{flood_s:.1f} s; Ingress RSS {figures['ingress_rss_mb_before']}"
                               f" → {figures['ingress_rss_mb_after']} MB", 401,
                      401 if set(statuses) == {401} else min(statuses),
                      [f"the Ingress grew {grew:.1f} MB"] if grew > 16 else []))
    return cases, figures


def huge_page_pdf(path: Path, side_pt: float = 14400.0) -> Path:
    """A one-page filing whose page is ``side_pt`` points square (a MediaBox 200 inches wide):
    at the page view's zoom, a picture of gigabytes unless its size is capped."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=side_pt, height=side_pt)
    for i, line in enumerate(("Hugepage Holdings, Inc. Annual Report on Form 10-K for fiscal "
                              "2024.", "Total revenue was $1,234 million in fiscal 2024.",
                              "This filing's only page is two hundred inches on each side.")):
        page.insert_text((72, 72 + 24 * i), line, fontsize=12)
    doc.save(path)
    doc.close()
    return path


def probe_request_holes(url: str, ctx) -> tuple[list[Case], dict]:
    """The holes of writes, pages and open paths, over HTTP (``ctx``: the run's tokens and
    work folder): a read-only token announcing an 80 MB upload and sending nothing; a chunk
    number of 20 digits; a page with a 14,400 pt MediaBox (uploaded, then shown); 30 slow POSTs
    to /metrics while an answer is asked; what /healthz, / and /docs show a stranger."""
    import struct
    import threading
    import time

    cases: list[Case] = []
    tokens = ctx.tokens
    bearer = [("Authorization", f"Bearer {tokens['reader']}")]
    status, reply, took = raw(url, "POST", "/v1/documents", bearer + [
        ("Content-Type", "application/json"), ("Content-Length", str(80 * 2**20))],
        send_body=False, timeout=20)
    cases.append(Case("writes", f"a read-only token announces an 80 MB upload and sends "
                                f"nothing: answered in {took:.2f} s", 403, status,
                      [] if took < 5 else [f"answered after {took:.1f} s"]))
    status, reply = request(url + f"/v1/documents/{ALPHA[0]}/pages/1?chunk="
                            + "9" * 20, tokens["reader"])
    cases.append(Case("pages", "chunk=99999999999999999999", 422, status, []))
    status, reply = request(url + f"/v1/documents/{ALPHA[0]}/pages/99999999999999999999",
                            tokens["reader"])
    cases.append(Case("pages", "page 99999999999999999999", 422, status, []))
    huge = huge_page_pdf(ctx.work / "HUGEPAGE_2024_10K.pdf")
    status, reply = request(url + "/v1/documents", tokens["uploader"], {
        "filename": huge.name, "collections": ["alpha"],
        "content": base64.b64encode(huge.read_bytes()).decode(),
        "metadata": {"company": "Hugepage Holdings, Inc.", "doc_type": "10K",
                     "fiscal_year": 2024}})
    cases.append(Case("pages", "an upload whose page has a 14,400 pt MediaBox", 201, status,
                      []))
    figures: dict[str, Any] = {}
    if status == 201:
        started = time.monotonic()
        status, reply = request(url + "/v1/documents/HUGEPAGE_2024_10K/pages/1",
                                tokens["reader"])
        took = time.monotonic() - started
        problems = []
        if status == 200:
            png = base64.b64decode(json.loads(reply)["image"].split(",", 1)[1])
            width, height = struct.unpack(">II", png[16:24])  # the PNG's IHDR
            figures["huge_page"] = {"width_px": width, "height_px": height,
                                    "png_bytes": len(png), "seconds": round(took, 3)}
            if max(width, height) > 4000 or width * height > 4_000_000:
                problems.append(f"rendered {width}x{height}")
        cases.append(Case("pages", f"that page shown: {figures.get('huge_page')}", 200, status,
                          problems))

    answer: dict[str, Any] = {}

    def ask() -> None:
        answer["reply"] = request(url + "/v1/answer", tokens["reader"], {
            "question": QUESTIONS[0], "system": "cbr", "generate": False})

    asker = threading.Thread(target=ask)
    asker.start()
    slow: list[tuple[int | None, float]] = []

    def post_metrics() -> None:
        status, _, took = raw(url, "POST", "/metrics", [("Content-Type", "application/json"),
                                                        ("Content-Length", "1000000")],
                              send_body=False, timeout=30)
        slow.append((status, took))

    posts = [threading.Thread(target=post_metrics) for _ in range(30)]
    for t in posts:
        t.start()
    for t in posts:
        t.join()
    asker.join(timeout=600)
    statuses = Counter(status for status, _ in slow)
    longest = max(took for _, took in slow)
    figures["slow_metrics_posts"] = {"statuses": dict(statuses), "longest_s": round(longest, 3)}
    cases.append(Case("open paths", f"30 slow POSTs to /metrics: {dict(statuses)}, the longest "
                                    f"answered in {longest:.2f} s", 405,
                      405 if set(statuses) == {405} else min(s or 0 for s in statuses),
                      [] if longest < 5 else [f"one took {longest:.1f} s"]))
    cases.append(Case("open paths", "an answer asked meanwhile", 200,
                      answer.get("reply", (None, ""))[0], []))
    status, reply, _ = raw(url, "GET", "/healthz", [])
    cases.append(Case("open paths", f"/healthz to a stranger: {reply.strip()[:60]}", 200, status,
                      [] if json.loads(reply or "{}") == {"status": "ok"} else
                      ["more than ready or not"]))
    import http.client
    from urllib.parse import urlsplit

    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    conn.request("GET", "/")
    page = conn.getresponse()
    page.read()
    policy = page.getheader("Content-Security-Policy") or ""
    missing = [h for h, ok in (("frame-ancestors 'none'", "frame-ancestors 'none'" in policy),
                               ("default-src 'self'", "default-src 'self'" in policy),
                               ("no unsafe-inline", "unsafe-inline" not in policy),
                               ("X-Frame-Options DENY", page.getheader("X-Frame-Options")
                                == "DENY")) if not ok]
    conn.close()
    cases.append(Case("open paths", "the web page's CSP and frame policy", 200, page.status,
                      missing))
    status, reply = request(url + "/docs", None)
    outside = [m for m in ("<script", "http://", "https://") if m in reply]
    cases.append(Case("open paths", "/docs loads no outside script", 200, status, outside))
    return cases, figures


def probe_upload_holes(url: str, ctx) -> tuple[list[Case], dict]:
    """Uploads that must change nothing shared, over HTTP, by alpha's uploader: a broken file
    whose metadata re-names and re-calendars Brightquarry (alpha's own company), a good file
    claiming Brightquarry's ticker under another name, another claiming Apple's, and HTML bytes
    named .pdf; then Brightquarry's record, its routing and the document count, unchanged."""
    tokens, corpus = ctx.tokens, ctx.corpus
    reader, uploader = tokens["reader"], tokens["uploader"]
    asked = {"question": "What was Brightquarry's total revenue in 2024?", "system": "hdrr",
             "generate": False}

    def state() -> dict:
        docs = json.loads(request(url + "/v1/documents?limit=50", reader)[1])
        record = next(d for d in docs["documents"] if d["doc_id"] == ALPHA[0])
        routing = json.loads(request(url + "/v1/answer", reader, asked)[1])["routing"]
        return {"count": docs["count"], "record": record, "routed": routing["doc_ids"]}

    def upload(name: str, content: bytes, metadata: dict) -> tuple[int, str]:
        return request(url + "/v1/documents", uploader, {
            "filename": name, "content": base64.b64encode(content).decode(),
            "collections": ["alpha"], "metadata": metadata})

    before = state()
    good = (corpus.out_dir / f"{UPLOAD}.pdf").read_bytes()
    tries = [
        ("a broken file whose metadata re-names and re-calendars Brightquarry", 409,
         upload("JUNK_2024_10K.pdf", b"%PDF-1.4 broken" * 10,
                {"company": "Brightquarry Evil Twin", "ticker": "BQRY",
                 "fiscal_year_end": "03-31", "doc_type": "10-K", "fiscal_year": 2024})),
        ("a good file claiming Brightquarry's ticker under another name", 409,
         upload(f"{UPLOAD}.pdf", good, {"company": "Evil Holdings", "ticker": "BQRY",
                                        "doc_type": "10-K", "fiscal_year": 2023})),
        ("a good file claiming Apple's ticker under another name", 409,
         upload(f"{UPLOAD}.pdf", good, {"company": "Evil Holdings", "ticker": "AAPL",
                                        "doc_type": "10-K", "fiscal_year": 2023})),
        ("HTML bytes named .pdf", 422,
         upload("JULIET_2023_10K.pdf", b"<html><body>" + b"<p>Juliet Optics revenue.</p>" * 40
                + b"</body></html>", {"company": "Juliet Optics", "doc_type": "10-K",
                                      "fiscal_year": 2023}))]
    cases = [Case("uploads", what, expected, status,
                  [w for w in ("Apple", "0000320193") if w in reply])
             for what, expected, (status, reply) in tries]
    after = state()
    changed = [k for k in before if before[k] != after[k]]
    cases.append(Case("uploads", "after them: Brightquarry's record and routing, and the "
                                 "document count, as before", None, None,
                      [f"{k}: {before[k]} → {after[k]}" for k in changed]))
    return cases, {}


def served_holes(url: str, ctx) -> tuple[list[Case], dict]:
    """Every probe of the served app's holes past who reads what (``run``'s ``holes``)."""
    cases, figures = probe_upload_holes(url, ctx)
    more, found = probe_request_holes(url, ctx)
    return cases + more, figures | found
