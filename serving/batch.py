"""Offline batch scoring: questions JSONL in, one Answer record per line out.

On Ray Data (``run_batch``): a pool of actors, each holding a whole ``Pipeline`` with an
equal share of the CPUs and answering a batch of questions with ``Pipeline.answer_many`` —
retrieval per question, then one generator call for the batch (the engine batches prompts of
about the same length). A pool of whole pipelines rather than one per model stage: every stage
of a question would otherwise ship its candidates between processes, and on CPU no stage is
idle long enough for a stage pool to fill it. On the transformers engine several
single-threaded pipelines side by side paid (torch's intra-op threads scale poorly on these
small matrices: on 8 dev questions, two one-thread actors answered ~4.9 s/question after
start-up against ~11 s for one two-thread loop); llama.cpp uses both threads of a two-core
machine itself, and two one-thread actors answered 0.98x as fast as one loop
(benchmarks/results/batch_cpu_llamacpp_test). On a GPU, batching the generator pays. ``sequential=True``
is the plain in-process loop (the baseline, and the way to run without Ray).

Resumable: an id already in the output is skipped; each line is written whole and flushed
as its answer arrives, and a line cut short by a kill is dropped on the next run, so a killed
run loses no finished answer and the output never holds an id twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator


def question_id(row: dict[str, Any]) -> str:
    for key in ("id", "financebench_id", "question_id"):
        if row.get(key) not in (None, ""):
            return str(row[key])
    return hashlib.sha1(str(row.get("question", "")).encode()).hexdigest()[:16]


def read_questions(path: str | Path) -> list[dict[str, str]]:
    """``{"id", "question"}`` per input line (the id from ``id``/``financebench_id`` or a hash
    of the question); a repeated id keeps its first question."""
    rows, seen = [], set()
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{number}: not JSON ({e.msg})") from None
            if not isinstance(row, dict) or "question" not in row:
                raise ValueError(f"{path}:{number}: each line needs a \"question\"")
            qid = question_id(row)
            if qid in seen:
                print(f"warning: {path}:{number}: id {qid} repeated; the first is kept",
                      file=sys.stderr)
                continue
            seen.add(qid)
            rows.append({"id": qid, "question": str(row["question"])})
    return rows


def finished_ids(out: Path) -> set[str]:
    """Ids already answered in ``out``, after cutting off a last line a kill left unfinished."""
    if not out.exists():
        return set()
    data = out.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with open(out, "r+b") as f:
            f.truncate(end)
    done = set()
    for line in data[:end].splitlines():
        if line.strip():
            done.add(json.loads(line)["id"])
    return done


class PipelineWorker:
    """A Ray Data actor: one Pipeline, answering a batch of questions at a time."""

    def __init__(self, index: str, system: str, generate: bool, pipeline_kwargs: dict):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from finrag.retrieval.systems.pipelines import Pipeline

        self.pipe = Pipeline.load(index, **pipeline_kwargs)
        self.system, self.generate = system, generate

    def __call__(self, batch: dict) -> dict:
        ids, questions = list(batch["id"]), list(batch["question"])
        return {"id": ids, "record": _answer(self.pipe, ids, questions, self.system,
                                             self.generate)}


def _answer(pipe, ids: list[str], questions: list[str], system: str, generate: bool) -> list[str]:
    """JSON lines of the answers; a question that fails gets a record with its ``error``."""
    from finrag.retrieval.answer import Answer

    try:
        answers = pipe.answer_many(questions, system, generate=generate)
    except Exception:
        answers = []
        for q in questions:  # one by one, so one bad question does not sink the batch
            try:
                answers.append(pipe.answer(q, system, generate=generate))
            except Exception as exc:
                answers.append(Answer(query=q, system=system, answer="",
                                      profile=pipe.profile.name,
                                      error=f"{type(exc).__name__}: {exc}"))
    return [json.dumps({"id": i} | a.to_dict()) for i, a in zip(ids, answers)]


def actor_gpus(pipeline_kwargs: dict) -> float:
    """The GPU share a pipeline actor reserves: the profile's memory shares of the roles its
    Pipeline loads (``models.devices.placement_gpus``); Ray hides the GPUs from an actor that
    reserves none, and then every role would run on the CPU."""
    from finrag.models.devices import placement_gpus
    from finrag.models.profiles import load_config

    prof = load_config(pipeline_kwargs.get("config")).active(pipeline_kwargs.get("profile"))
    large = pipeline_kwargs.get("large_rerank")
    roles = ["embedder", "light_reranker", "generator"]
    roles += ["router"] if pipeline_kwargs.get("use_llm_router", True) else []
    roles += ["large_reranker"] if (prof.pipeline.large_rerank if large is None else large) else []
    return placement_gpus(prof, roles)


def _ray_records(todo: list[dict], index: str, system: str, generate: bool,
                 pipeline_kwargs: dict, workers: int, batch_size: int,
                 address: str | None = None) -> Iterator[str]:
    import ray

    if not todo:
        return
    from finrag.serving.server import init_ray

    init_ray(address)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False  # our own bar counts answers written
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)) // workers)
    gpus = actor_gpus(pipeline_kwargs) if ray.cluster_resources().get("GPU") else 0.0
    blocks = max(1, -(-len(todo) // batch_size))  # one block per batch: answers stream out
    ds = ray.data.from_items(todo, override_num_blocks=blocks).map_batches(
        PipelineWorker, fn_constructor_args=(index, system, generate, pipeline_kwargs),
        batch_size=batch_size, compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=cpus,
        num_gpus=gpus)
    for row in ds.iter_rows():
        yield row["record"]


def _sequential_records(todo: list[dict], index: str, system: str, generate: bool,
                        pipeline_kwargs: dict) -> Iterator[str]:
    from finrag.retrieval.systems.pipelines import Pipeline

    pipe = Pipeline.load(index, **pipeline_kwargs)
    try:
        for row in todo:
            yield from _answer(pipe, [row["id"]], [row["question"]], system, generate)
    finally:
        pipe.close()


def run_batch(questions: str | Path, out: str | Path, *, index: str | Path, system: str = "hdrr",
              generate: bool = True, sequential: bool = False, workers: int = 2,
              batch_size: int = 4, limit: int | None = None, progress: bool = True,
              pipeline_kwargs: dict | None = None, address: str | None = None
              ) -> dict[str, Any]:
    """Answer every question of ``questions`` not yet in ``out``; returns the run's summary."""
    from tqdm import tqdm

    from finrag.retrieval.systems.recipes import SYSTEMS

    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r}; choose from {', '.join(SYSTEMS)}")
    if workers < 1 or batch_size < 1:
        raise ValueError("--workers and --batch-size must be at least 1")
    out = Path(out)
    rows = read_questions(questions)[:limit]
    done = finished_ids(out)
    todo = [r for r in rows if r["id"] not in done]
    kwargs = dict(pipeline_kwargs or {})
    if sequential:
        records = _sequential_records(todo, str(index), system, generate, kwargs)
        mode = "sequential"
    else:
        records = _ray_records(todo, str(index), system, generate, kwargs, workers, batch_size,
                               address)
        mode = f"ray-data: {workers} pipeline actor(s), batches of {batch_size}"
    totals = {"prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 0}
    joules, sources, errors = 0.0, set(), 0
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    written = 0
    with open(out, "a", encoding="utf-8") as f, tqdm(total=len(todo), unit="q", desc=system,
                                                    disable=not progress) as bar:
        for line in records:
            f.write(line + "\n")
            f.flush()
            written += 1
            bar.update(1)
            record = json.loads(line)
            errors += bool(record.get("error"))
            usage = record.get("usage") or {}
            for key in totals:
                totals[key] += usage.get(key) or 0
            energy = record.get("energy") or {}
            sources.add(energy.get("source") or "unavailable")
            joules = None if joules is None or energy.get("joules") is None else (
                joules + energy["joules"])
        os.fsync(f.fileno())
    seconds = time.perf_counter() - t0
    return {"questions": len(rows), "already_done": len(rows) - len(todo), "answered": written,
            "errors": errors, "system": system, "mode": mode, "seconds": round(seconds, 2),
            "questions_per_s": round(written / seconds, 4) if written and seconds else None,
            **totals,
            "energy": {"joules": round(joules, 3) if written and joules is not None else None,
                       "source": "/".join(sorted(sources)) or "unavailable"},
            "out": str(out)}
