"""Write the demo corpus to a folder: look-alike 10-K and 10-Q PDFs, their metadata, facts and questions."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymupdf

from finrag.serving.cli.demo_corpus.companies import COMPANIES
from finrag.serving.cli.demo_corpus.figures import annual_statements
from finrag.serving.cli.demo_corpus.filings import compose, plan_filings, render_filing
from finrag.serving.cli.demo_corpus.layout import StatementTable, Text
from finrag.serving.cli.demo_corpus.questions import build_questions

GENERATOR_VERSION = 1
MANIFEST_NAME = "manifest.json"
METADATA_NAME = "documents.jsonl"
FACTS_NAME = "facts.json"
QUESTIONS_NAME = "questions.jsonl"


@dataclass(frozen=True)
class DemoCorpus:
    out_dir: Path
    pdf_paths: list[Path]
    metadata_path: Path
    facts_path: Path
    questions_path: Path
    written: bool = True  # False when an existing complete corpus was reused


def _corpus(out: Path, doc_ids: list[str], written: bool) -> DemoCorpus:
    return DemoCorpus(out, sorted(out / f"{d}.pdf" for d in doc_ids), out / METADATA_NAME,
                      out / FACTS_NAME, out / QUESTIONS_NAME, written)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_manifest(out: Path) -> dict[str, Any] | None:
    try:
        return json.loads((out / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return None


def _is_complete(out: Path, seed: int, manifest: dict[str, Any] | None) -> bool:
    if not manifest or manifest.get("version") != GENERATOR_VERSION or manifest.get("seed") != seed:
        return False
    files = manifest.get("files", {})
    return bool(files) and all((out / name).is_file() and _sha256(out / name) == digest
                               for name, digest in files.items())


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def generate_demo_corpus(out_dir: str | Path, *, seed: int = 7, force: bool = False) -> DemoCorpus:
    """Write the demo corpus into ``out_dir`` (created if needed) and describe it.

    If ``out_dir`` already holds a complete corpus for ``seed`` (per its manifest, with matching
    file hashes), nothing is rewritten unless ``force`` is set.
    """
    out = Path(out_dir)
    filings = plan_filings(seed)
    doc_ids = [f.doc_id for f in filings]
    old_manifest = _read_manifest(out)
    if not force and _is_complete(out, seed, old_manifest):
        return _corpus(out, doc_ids, written=False)

    out.mkdir(parents=True, exist_ok=True)
    annual = {c.key: annual_statements(c, seed) for c in COMPANIES}
    files: dict[str, bytes] = {}
    facts: list[dict[str, Any]] = []
    for filing in filings:
        pdf, doc_facts, _ = render_filing(filing, annual[filing.company.key], seed)
        files[f"{filing.doc_id}.pdf"] = pdf
        c = filing.company
        facts += [{"doc_id": filing.doc_id, "company": c.name, "ticker": c.ticker,
                   "fiscal_year": fact.fiscal_year, "fiscal_quarter": fact.fiscal_quarter,
                   "metric": fact.metric, "value": fact.value, "unit": fact.unit, "text": fact.text,
                   "page": fact.page, "source": fact.source} for fact in doc_facts]
    files[METADATA_NAME] = _jsonl([f.metadata() for f in filings])
    files[FACTS_NAME] = (json.dumps(facts, indent=2) + "\n").encode()
    files[QUESTIONS_NAME] = _jsonl(build_questions(facts))

    for name, data in files.items():
        _write(out / name, data)
    for stale in set((old_manifest or {}).get("files", {})) - set(files):
        (out / stale).unlink(missing_ok=True)
    manifest = {"generator": "finrag.serving.cli.demo_corpus", "version": GENERATOR_VERSION, "seed": seed,
                "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())}}
    _write(out / MANIFEST_NAME, (json.dumps(manifest, indent=2) + "\n").encode())
    return _corpus(out, doc_ids, written=True)


def filing_texts(seed: int = 7) -> list[str]:
    """The plain text of every filing, in plan order (no layout, no PDF): what the OpenVINO
    embedder's int8 copy is calibrated on (models/openvino_embedder.calibration_texts)."""
    annual = {c.key: annual_statements(c, seed) for c in COMPANIES}
    texts = []
    for filing in plan_filings(seed):
        lines = []
        for block in compose(filing, annual[filing.company.key], seed).blocks:
            if isinstance(block, Text):
                lines.append(block.text)
            elif isinstance(block, StatementTable):
                lines += ["  ".join(row) for row in (block.header, *block.rows)]
        texts.append("\n".join(lines))
    return texts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m finrag.serving.cli.demo_corpus", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", help="directory to write the corpus into")
    parser.add_argument("--seed", type=int, default=7, help="seed for figures and wording (default 7)")
    parser.add_argument("--force", action="store_true", help="rewrite even if a complete corpus exists")
    parser.add_argument("--embedder-calibration", metavar="FILE",
                        help="write the OpenVINO embedder's int8 calibration windows of the corpus's "
                             "text to FILE instead (models/openvino_calibration.json)")
    args = parser.parse_args(argv)
    if args.embedder_calibration:
        from finrag.models.openvino_embedder import calibration_windows
        windows = calibration_windows(filing_texts(args.seed))
        Path(args.embedder_calibration).write_text(json.dumps(windows, indent=0) + "\n", encoding="utf-8")
        print(f"wrote {len(windows)} calibration windows to {args.embedder_calibration}")
        return 0

    if not args.out_dir:
        parser.error("out_dir is required")
    started = time.perf_counter()
    corpus = generate_demo_corpus(args.out_dir, seed=args.seed, force=args.force)
    elapsed = time.perf_counter() - started
    verb = "wrote" if corpus.written else "already up to date:"
    print(f"{verb} demo corpus (seed {args.seed}) in {corpus.out_dir} [{elapsed:.2f} s]")
    for path in corpus.pdf_paths:
        with pymupdf.open(path) as doc:
            chars = sum(len(page.get_text()) for page in doc)
            print(f"  {path.name:<28} {doc.page_count:>3} pages {chars:>8,} chars")
    for path in (corpus.metadata_path, corpus.facts_path, corpus.questions_path):
        count = len(json.loads(path.read_text())) if path.suffix == ".json" else len(path.read_text().splitlines())
        print(f"  {path.name:<28} {count:>3} records")
    return 0
