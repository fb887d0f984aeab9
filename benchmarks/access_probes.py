"""Who may read what, probed: two collections of look-alike demo filings, and tokens of one
asking about, fetching and writing to the other through every surface, in process and over
HTTP on a served app. Counts the cases tried, the leaks found (goal 0) and every reply that is
not the one expected.

    python -m finrag.benchmarks.access_probes --profile cpu

A leak is any doc id of the other collection, or any line (40+ characters) of its pages that
the caller's own filings do not hold, found anywhere in a reply: answer, citations, routing,
context, error message. The tests run the same probes (tests/retrieval/test_access.py,
tests/serving/test_served_access.py).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from finrag.benchmarks import report as R

ALPHA = ["BRIGHTQUARRY_2024_10K", "HARLOWFINCH_2024_10K"]
BETA = ["LUMENFIELD_2024_10K", "QUILLON_2024_10K"]
MISSING = "NO_SUCH_2024_10K"
UPLOAD = "LUMENFIELD_2023_10K"  # a filing neither collection holds
# beta's companies by name, ticker, former name and description
QUESTIONS = ["What was Lumenfield Software's total revenue in 2024?",
             "What was LMFD's net income in fiscal 2024?",
             "What did Quillon Pump & Valve Company report as operating income for 2024?",
             "Which risks did the maker of flow-control equipment describe for 2024?"]
SYSTEMS = ("hdrr", "cbr", "sfr", "agentic")


@dataclass
class Case:
    surface: str  # in process, batch, answer, stream, openai, documents, page, token, write…
    what: str
    expected: int | None  # the HTTP status expected (None in process)
    status: int | None
    leaks: list[str]

    @property
    def ok(self) -> bool:
        return not self.leaks and self.status == self.expected


def two_collections(folder: Path, corpus, embedder) -> Path:
    """An index of ALPHA in collection `alpha` and BETA in `beta` (``corpus``: the demo
    corpus, with its ``out_dir`` and ``metadata_path``)."""
    from finrag.retrieval.indexer import Ingestor

    for collection, docs in (("alpha", ALPHA), ("beta", BETA)):
        ingestor = Ingestor(folder, embedder, metadata=corpus.metadata_path,
                            collections=[collection])
        try:
            report = ingestor.run([corpus.out_dir / f"{d}.pdf" for d in docs], progress=False)
        finally:
            ingestor.close()
        if not report.ok or len(report.added) != len(docs):
            raise RuntimeError(f"the probe index was not built: {report.failed}")
    return folder


def secrets_of(index_dir: Path, hidden: list[str], shown: list[str]) -> list[str]:
    """What must never reach a caller who may read only ``shown``: the ``hidden`` doc ids and
    every line (40+ characters) of their pages that the shown documents do not hold. Company
    names are not among them: a question names the company, and an LLM may complete
    "Lumenfield Software" to "Lumenfield Software, Inc." from the question alone."""
    from finrag.retrieval.store.index import Index

    with Index.open(index_dir) as index:
        hidden_text = [t for d in hidden for _, t in index.catalog.pages(d)]
        shown_text = "\n".join(t for d in shown for _, t in index.catalog.pages(d))
    lines = {ln.strip() for t in hidden_text for ln in t.splitlines()}
    return list(hidden) + sorted(ln for ln in lines if len(ln) >= 40 and ln not in shown_text)


def _leaks(text: str, secrets: list[str]) -> list[str]:
    return [s for s in secrets if s in text]


def probe_pipeline(pipe, secrets: list[str]) -> list[Case]:
    """A view of `alpha` (``pipe``) asked about beta's companies by every system that reads
    the index, and beta's filings asked for by id from its index."""
    from finrag.retrieval.store.index import UnknownDocumentError

    cases = []
    for question in QUESTIONS:
        for system in SYSTEMS:
            answer = pipe.answer(question, system, generate=False).to_dict()
            cited = {c["doc_id"] for c in (answer.get("retrieved") or {}).get("context") or []}
            leaks = _leaks(json.dumps(answer), secrets) + sorted(cited - set(ALPHA))
            cases.append(Case("in process", f"{system}: {question}", None, None, leaks))
    vector = pipe.embedder.encode([QUESTIONS[0]])[0]
    for doc in BETA:
        reads = {"pages": pipe.index.catalog.pages(doc), "tables": pipe.index.catalog.tables(doc),
                 "document": pipe.index.catalog.document(doc)}
        try:
            pipe.index.search(QUESTIONS[0], vector, doc_ids=[doc])
            reads["search"] = "answered"
        except UnknownDocumentError:
            pass
        got = [k for k, v in reads.items() if v]
        cases.append(Case("in process", f"{doc} by id: search, pages, tables, record", None,
                          None, got))
    return cases


def request(url: str, token: str | None, body: dict | None = None,
            method: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                 method=method or ("GET" if body is None else "POST"),
                                 headers={"Content-Type": "application/json"})
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def upload_body(corpus, doc: str, collections: list[str]) -> dict:
    return {"filename": f"{doc}.pdf", "collections": collections,
            "content": base64.b64encode((corpus.out_dir / f"{doc}.pdf").read_bytes()).decode()}


def probe_http(url: str, tokens: dict[str, str], secrets: list[str], corpus) -> list[Case]:
    """The served app probed by `alpha`'s tokens (``tokens``: reader, uploader and the refused
    ones: revoked, expired, wrong). Nothing here writes to the index: every write tried is
    one the token may not make."""
    cases: list[Case] = []

    def probe(surface: str, what: str, expected: int, status: int, body: str) -> str:
        cases.append(Case(surface, what, expected, status, _leaks(body, secrets)))
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


def probe_web_page(url: str, token: str, secrets: list[str], browser) -> list[Case]:
    """The web page in a real browser with `alpha`'s reader token (``browser``: a Selenium
    driver, ``benchmarks/browser.py``): beta's companies asked about through two systems; the
    whole page after each answer (its text and HTML, the document list the page loads
    included) must hold nothing of beta."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select, WebDriverWait

    cases = []
    browser.get(url + "/")
    wait = WebDriverWait(browser, 600, ignored_exceptions=(StaleElementReferenceException,))
    browser.find_element(By.ID, "token").send_keys(token, Keys.TAB)
    # the page rebuilds its list of systems once the token lets it read /v1/models
    wait.until(lambda b: "agentic" in b.execute_script(
        "return [...document.querySelectorAll('#system option')].map(o => o.value)"))
    for question in QUESTIONS[:2]:
        for system in ("hdrr", "cbr"):
            def chosen(b, system=system) -> bool:
                Select(b.find_element(By.ID, "system")).select_by_value(system)
                return b.find_element(By.ID, "system").get_attribute("value") == system

            wait.until(chosen)
            box = browser.find_element(By.ID, "question")
            box.clear()
            box.send_keys(question)
            browser.execute_script("document.getElementById('status').textContent = ''")
            browser.find_element(By.ID, "ask").click()
            wait.until(lambda b: b.find_element(By.ID, "status").text == "done"
                       or "error" in (b.find_element(By.ID, "answer").get_attribute("class")
                                      or ""))
            page = browser.page_source + browser.find_element(By.TAG_NAME, "body").text
            leaks = _leaks(page, secrets)
            if browser.find_element(By.ID, "status").text != "done":
                leaks.append("no answer: " + browser.find_element(By.ID, "answer").text[:200])
            cases.append(Case("web page", f"{system}: {question}", None, None, leaks))
    return cases


def probe_batch(index: Path, profile: str, secrets: list[str], work: Path) -> list[Case]:
    """`finrag batch --collection alpha` on Ray Data, beta's companies asked about: one case
    per answer written (the scope travels to every actor)."""
    questions, out = work / "probe-questions.jsonl", work / "probe-answers.jsonl"
    questions.write_text("".join(json.dumps({"id": f"q{i}", "question": q}) + "\n"
                                 for i, q in enumerate(QUESTIONS)))
    done = subprocess.run(
        [sys.executable, "-m", "finrag.serving.cli", "batch", str(questions), "--out", str(out),
         "--index", str(index), "--profile", profile, "--collection", "alpha", "--workers", "1",
         "--no-generate", "-q"], capture_output=True, text=True, timeout=1800,
        env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if done.returncode != 0:
        return [Case("batch", "finrag batch failed: " + done.stderr.strip()[-300:], None, None,
                     ["no answers"])]
    cases = []
    for line in out.read_text().splitlines():
        record = json.loads(line)
        cited = {c["doc_id"] for c in (record.get("retrieved") or {}).get("context") or []}
        cases.append(Case("batch", f"hdrr: {record['query']}", None, None,
                          _leaks(line, secrets) + sorted(cited - set(ALPHA))))
    if len(cases) != len(QUESTIONS):
        cases.append(Case("batch", "one answer per question", None, None,
                          [f"{len(cases)} answers for {len(QUESTIONS)} questions"]))
    return cases


def run(profile: str, progress=print) -> dict[str, Any]:
    """The whole suite on ``profile``: the index, in-process probes, then the served app."""
    from finrag.benchmarks.browser import NoBrowser, chrome
    from finrag.models.profiles import load_config, load_profile_embedder
    from finrag.retrieval.systems.pipelines import Pipeline
    from finrag.serving.config import AppConfig
    from finrag.serving.server import Service, free_port
    from finrag.serving.tokens import TokenStore

    with tempfile.TemporaryDirectory(prefix="finrag-probes-") as work:
        work = Path(work)
        # the demo corpus through its command: benchmarks never import the CLI's code
        subprocess.run([sys.executable, "-m", "finrag.serving.cli.demo_corpus",
                        str(work / "corpus")], check=True, capture_output=True, timeout=600)
        corpus = SimpleNamespace(out_dir=work / "corpus",
                                 metadata_path=work / "corpus" / "documents.jsonl")
        index = two_collections(work / "index", corpus,
                                load_profile_embedder(load_config().active(profile)))
        secrets = secrets_of(index, BETA, ALPHA)
        progress(f"index of two collections; {len(secrets)} strings of beta must not leak")
        root = Pipeline.load(index, profile=profile)
        try:
            cases = probe_pipeline(root.scoped(["alpha"]), secrets)
        finally:
            root.close()
        cases += probe_batch(index, profile, secrets, work)
        progress(f"in process and batch: {len(cases)} cases")
        store = TokenStore(work / "tokens.json")
        tokens = {"reader": store.create("desk-alpha", ["alpha"])[1],
                  "uploader": store.create("up-alpha", ["alpha"], ingest=True)[1],
                  "revoked": store.create("gone", ["alpha"])[1],
                  "expired": store.create("brief", ["alpha"], expires_in_s=0.001)[1]}
        tokens["wrong"] = tokens["reader"][:-2] + ("AB" if tokens["reader"][-2:] != "AB"
                                                   else "CD")
        store.revoke("gone")
        cfg = AppConfig(index=str(index), profile=profile,
                        auth={"tokens_file": str(store.path)})
        with Service(cfg, port=free_port()) as url:
            cases += probe_http(url, tokens, secrets, corpus)
            try:
                browser = chrome()
            except NoBrowser as exc:
                progress(f"no web page probes: {exc}")
            else:
                try:
                    cases += probe_web_page(url, tokens["reader"], secrets, browser)
                finally:
                    browser.quit()
        progress(f"in all: {len(cases)} cases")
    return {"profile": profile, "secrets": len(secrets), "cases": [asdict(c) | {"ok": c.ok}
                                                                   for c in cases]}


def plot(cases: list[dict], out: Path) -> str:
    plt = R.pyplot()
    surfaces = list(dict.fromkeys(c["surface"] for c in cases))
    tried = Counter(c["surface"] for c in cases)
    bad = Counter(c["surface"] for c in cases if not c["ok"])
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.bar(surfaces, [tried[s] for s in surfaces], color="#7a9cc6", label="cases tried")
    ax.bar(surfaces, [bad[s] for s in surfaces], color="#c0392b",
           label="leaks or unexpected replies")
    for i, s in enumerate(surfaces):
        ax.text(i, tried[s], f"{bad[s]}/{tried[s]}", ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("cases")
    ax.set_title("access probes: a token of `alpha` against `beta`")
    ax.legend()
    return R.savefig(fig, out, "access_probes.png")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.access_probes",
                                description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="cpu")
    p.add_argument("--name", default=None, help="results folder (access_probes_<profile>)")
    args = p.parse_args(argv)
    result = run(args.profile)
    cases = result["cases"]
    out = R.results_dir(args.name or f"access_probes_{args.profile}")
    command = "python -m finrag.benchmarks.access_probes " + " ".join(argv or __import__(
        "sys").argv[1:])
    chash = R.config_hash({"profile": args.profile,
                           "code": R.code_version("retrieval", "serving", "benchmarks")})
    png = plot(cases, out)
    R.write_json(out / "results.json", {**result, "command": command})
    leaks = sum(bool(c["leaks"]) for c in cases)
    unexpected = sum(c["status"] != c["expected"] for c in cases)
    lines = R.header("Access probes: who may read what", command, chash, [
        "", f"Profile `{args.profile}`. Two collections of look-alike demo filings: `alpha` "
            f"({', '.join(ALPHA)}) and `beta` ({', '.join(BETA)}). Tokens of `alpha` probe "
            f"`beta`; {result['secrets']} strings of beta (its doc ids and every page line of "
            f"40+ characters that alpha's filings do not hold) must appear in no reply.", "",
        f"**{len(cases)} cases, {leaks} with a leak, {unexpected} with an unexpected status.**",
        ""])
    lines += ["| surface | cases | leaks | unexpected status |", "|---|---|---|---|"]
    for surface in dict.fromkeys(c["surface"] for c in cases):
        mine = [c for c in cases if c["surface"] == surface]
        lines.append(f"| {surface} | {len(mine)} | {sum(bool(c['leaks']) for c in mine)} | "
                     f"{sum(c['status'] != c['expected'] for c in mine)} |")
    lines += ["", "Every case (expected and got: HTTP status; in process: none):", "",
              "| surface | case | expected | got | leaks |", "|---|---|---|---|---|"]
    for c in cases:
        lines.append(f"| {c['surface']} | {c['what']} | {c['expected'] or '-'} | "
                     f"{c['status'] or '-'} | {len(c['leaks'])} |")
    lines += ["", f"![cases and leaks by surface]({png})", ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines[:12]))
    return 0 if leaks == 0 and unexpected == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
