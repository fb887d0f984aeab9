"""``finrag ingest --ray``: documents parsed, chunked and embedded on Ray Data, committed by
the one writer.

The writer (``retrieval.indexer.Ingestor``) decides what to index, then hands the files here:
a task per file parses it (tables too), checks it and chunks it; an actor pool embeds the
chunks, one model loaded per actor (on a GPU when the profile places the embedder there).
Where both stages ask for the same resources (a CPU embedder), Ray Data fuses them: each
worker then parses and embeds its own files, one thread each. Results come back in the
files' order, so the writer commits the same documents with the same chunk ids as a
sequential ingest. A file that fails is one line in the report; a worker that dies has its
files run again by Ray, and nothing is committed but by the writer, once.
"""

from __future__ import annotations

import logging
import pickle
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from finrag.retrieval.indexer import EmbeddedDocument, embed_document
from finrag.retrieval.ingest.prepare import (DocumentJob, ParseOptions, failure_line,
                                             prepare_document)


def _prepare(row: dict, options: ParseOptions) -> dict:
    import ray

    job: DocumentJob = pickle.loads(row["job"])
    where = {"i": row["i"], "node": ray.get_runtime_context().get_node_id()}
    try:
        return where | {"doc": pickle.dumps(prepare_document(job, options)), "error": ""}
    except Exception as e:  # the file's own problem: reported, never retried
        return where | {"doc": b"", "error": failure_line(job.path, e)}


class _Embed:
    """One embedder per actor; embeds the prepared documents that reach it."""

    def __init__(self, profile, batch_size: int | None, variant: str, folder, settings):
        from finrag.models.profiles import load_profile_embedder
        from finrag.retrieval.store.index import check_embedder

        self.embedder = load_profile_embedder(
            profile, **({"batch_size": batch_size} if batch_size else {}))
        self.variant = variant
        check_embedder(folder, settings, self.embedder)  # the index's, or refused by name

    def __call__(self, batch: dict) -> dict:
        embedded, errors = [], []
        for doc, error in zip(batch["doc"], batch["error"]):
            if not error:
                prepared = pickle.loads(doc)
                try:
                    embedded.append(pickle.dumps(
                        embed_document(prepared, self.variant, self.embedder)))
                    errors.append("")
                    continue
                except Exception as e:
                    error = failure_line(prepared.job.path, e)
            embedded.append(b"")
            errors.append(error)
        return {"i": batch["i"], "node": batch["node"], "embedded": embedded, "error": errors}


@dataclass
class RayWorkers:
    """Where and how wide to run: ``address`` (else $RAY_ADDRESS, else a local Ray),
    ``workers`` at once (default: one per CPU of the cluster, or per GPU share when the
    profile's embedder is on a GPU), ``threads`` per CPU worker."""

    profile: object  # models.profiles.Profile: each worker loads its embedder
    address: str | None = None
    workers: int | None = None
    threads: int = 1
    batch_size: int | None = None
    started_ray: bool = False
    plan: str = ""  # how the run was laid out, for the summary
    start_seconds: float = 0.0  # connecting to (or starting) Ray
    nodes: dict = field(default_factory=dict)  # Ray node id: documents parsed there

    def __post_init__(self):
        if self.workers is not None and self.workers < 1 or self.threads < 1:
            raise ValueError("--workers and --threads must be at least 1")

    def run(self, jobs: list[DocumentJob], options: ParseOptions, variant: str, index
            ) -> Iterator[tuple[DocumentJob, EmbeddedDocument | str]]:
        if not jobs:
            return
        import ray

        from finrag.models.devices import placement_gpus
        from finrag.serving.server import init_ray

        t0 = time.perf_counter()
        self.started_ray = init_ray(self.address)
        self.start_seconds = time.perf_counter() - t0
        logging.getLogger("ray.data").setLevel(logging.WARNING)  # the writer reports progress
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False  # the writer's bar counts documents committed
        ctx.execution_options.preserve_order = True  # commit order = file order = chunk ids
        cluster = ray.cluster_resources()
        gpus = placement_gpus(self.profile, ["embedder"]) if cluster.get("GPU") else 0.0
        cpus = int(cluster.get("CPU", 1))
        workers = min(len(jobs), self.workers or max(1, cpus // self.threads))
        embedders = max(1, min(workers, int(cluster["GPU"] // gpus))) if gpus else workers
        self.plan = (f"ray-data: {workers} parse task(s) of {self.threads} CPU; {embedders} "
                     f"embedder actor(s) on {'GPU' if gpus else 'CPU'}")
        items = [{"i": i, "job": pickle.dumps(job)} for i, job in enumerate(jobs)]
        # a lost task is run again by Ray (3 tries), a lost actor restarted with its work
        ds = (ray.data.from_items(items, override_num_blocks=len(items))
              .map(_prepare, fn_kwargs={"options": options}, num_cpus=self.threads,
                   compute=ray.data.TaskPoolStrategy(size=workers))
              .map_batches(_Embed, fn_constructor_args=(self.profile, self.batch_size, variant,
                                                        index.folder, index.settings),
                           batch_size=1, compute=ray.data.ActorPoolStrategy(size=embedders),
                           num_gpus=gpus, num_cpus=0 if gpus else self.threads))
        rows = iter(ds.iter_rows())
        for i, job in enumerate(jobs):
            row = next(rows)
            if row["i"] != i:  # preserve_order is what makes the chunk ids those of a sequential run
                raise RuntimeError(f"Ray Data returned document {row['i']} where {i} was due")
            self.nodes[row["node"]] = self.nodes.get(row["node"], 0) + 1
            if row["error"]:
                yield job, row["error"]
            else:
                yield job, pickle.loads(row["embedded"])

    def close(self) -> None:
        if self.started_ray:
            import ray

            ray.shutdown()
            self.started_ray = False

