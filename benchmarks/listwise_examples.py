"""Write the listwise ranker's in-context examples (``models/listwise_examples.json``) from the
``tune`` half of the FinanceBench dev questions, so no scored (``test``) question is shown.

Each example: a tune question with one short evidence passage (FinanceBench's evidence text,
at most ``--max-chars``) and ``--others`` other pages of the same filing (seeded sample, cut to
the same length), the evidence put at a seeded place; the ranking lists the evidence first, then
the other pages in their shown order. Questions are taken in the seeded order of
``benchmarks.splits.seeded_rank``.

    python -m finrag.benchmarks.listwise_examples --index var/fb-index [--examples 2] [--others 2]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from finrag.benchmarks.splits import seeded_rank, split_of

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "financebench"
SEED = "finrag-listwise-examples-1"


def build(index_dir: Path, questions_file: Path, n: int, others: int, max_chars: int) -> list:
    from finrag.retrieval.store.index import Index

    records = [json.loads(line) for line in questions_file.read_text().splitlines() if line.strip()]
    split = split_of(records)
    short = [r for r in records if split[r["financebench_id"]] == "tune" and r["pdf_present"]
             and len(r["evidence"]) == 1
             and len(" ".join(r["evidence"][0]["evidence_text"].split())) <= max_chars]
    short.sort(key=lambda r: seeded_rank(SEED, r["financebench_id"]))
    examples = []
    with Index.open(index_dir) as index:
        for r in short:
            pages = dict(index.catalog.pages(r["doc_name"]))
            if not pages:
                continue
            evidence_page = r["evidence"][0]["evidence_page_num"] + 1
            rng = random.Random(seeded_rank(SEED, r["financebench_id"]))
            candidates = [p for p, text in pages.items()
                          if p != evidence_page and len(text.split()) > 40]
            shown = [" ".join(pages[p].split())[:max_chars]
                     for p in rng.sample(candidates, min(others, len(candidates)))]
            at = rng.randrange(len(shown) + 1)
            shown.insert(at, " ".join(r["evidence"][0]["evidence_text"].split()))
            ranking = [at + 1] + [i + 1 for i in range(len(shown)) if i != at]
            examples.append({"id": r["financebench_id"], "question": r["question"],
                             "passages": shown, "ranking": ranking})
            if len(examples) == n:
                break
    return examples


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m finrag.benchmarks.listwise_examples", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", type=Path, required=True, help="an index holding the filings")
    p.add_argument("--questions", type=Path, default=SHARED / "questions.dev.jsonl")
    p.add_argument("--examples", type=int, default=2)
    p.add_argument("--others", type=int, default=2, help="other pages shown with the evidence")
    p.add_argument("--max-chars", type=int, default=300)
    p.add_argument("--out", type=Path, default=REPO / "models" / "listwise_examples.json")
    args = p.parse_args(argv)
    examples = build(args.index, args.questions, args.examples, args.others, args.max_chars)
    if len(examples) < args.examples:
        raise SystemExit(f"only {len(examples)} tune questions fit; wanted {args.examples}")
    args.out.write_text(json.dumps(examples, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(examples)} examples ({', '.join(e['id'] for e in examples)}) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
