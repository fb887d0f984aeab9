"""What every access probe shares: the two collections of look-alike demo filings and the
questions asked across them, a probe's case, how a leak is found in a reply, and an HTTP
request as a client sends it."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from dataclasses import dataclass

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
# a filing of alpha's that leaves its collection, then the index, while variant indexes
# (V-A, V-B) of the same filings are served beside it
LEAVER = ALPHA[1]
LEAVER_QUESTION = "What was Harlow & Finch Stores' total revenue in 2024?"
VARIANT_SYSTEMS = ("cbr", "cbr_meta", "cbr_llmctx", "hdrr", "sfr", "agentic")


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


def leaks_in(text: str, secrets: list[str]) -> list[str]:
    return [s for s in secrets if s in text]


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
