"""A sentence-transformers model (Transformer, mean pooling, normalisation) on OpenVINO.

The model is converted once from the verified local weights (the PyTorch module, with the
pooling and the normalisation inside it, to OpenVINO's IR) and kept in the cache under a key
made of everything that changes what the file computes: the weights' sha256, torch's and
OpenVINO's versions and this conversion's version. On a CPU with bfloat16 arithmetic it runs
in bfloat16 (measured on MiniLM-L6: 4.3x the chunks a second of sentence-transformers on two
cores, vectors at cosine 0.99998 of the float32 ones: benchmarks/results/embedder_runtime_cpu),
elsewhere in float32. Its vectors serve an index built by ``SentenceTransformerEmbedder`` and
the other way round: it has the same name, model id and kind.

``precision="int8"`` runs a statically quantized copy (NNCF post-training quantization, its
activation ranges calibrated on the demo corpus's text, never on the filings being indexed):
int8 matrix products, the rest in bfloat16 or float32 as above. Its vectors are further from
the float32 ones (cosine ~0.996): benchmarks/results/embedder_runtime_cpu_int8 measures what
that costs retrieval.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np

from finrag.models.weights import (MINILM_L6_V2, PackagedModel, cache_dir, resolve_packaged,
                                   sha256_file)

CONVERSION_VERSION = 1  # bump when the conversion below changes what the model computes
QUANTIZATION_VERSION = 1  # bump when the quantization below changes what the model computes
CALIBRATION_TEXTS = 128  # calibration samples: chunk-sized windows of the demo corpus
PRECISIONS = ("auto", "f32", "bf16", "int8")
CALIBRATION_FILE = Path(__file__).with_name("openvino_calibration.json")


def _check_mean_pooling(folder: Path) -> None:
    """Only Transformer → mean Pooling → Normalize is converted (what MiniLM is)."""
    modules = json.loads((folder / "modules.json").read_text()) \
        if (folder / "modules.json").is_file() else []
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text()) if pooling.is_file() else {}
    others = ("pooling_mode_cls_token", "pooling_mode_max_tokens",
              "pooling_mode_mean_sqrt_len_tokens")
    if kinds[:3] != ["Transformer", "Pooling", "Normalize"] or not config.get(
            "pooling_mode_mean_tokens") or any(config.get(k) for k in others):
        raise ValueError(f"{folder}: OpenVINO runs a Transformer → mean Pooling → Normalize "
                         f"model; this one is {kinds} with pooling {config}")


def converted(folder: str | Path) -> Path:
    """The OpenVINO IR of a sentence-transformers folder, converted on first use (written
    beside and renamed into place: a killed conversion leaves nothing a later run takes)."""
    import openvino
    import torch

    folder = Path(folder)
    _check_mean_pooling(folder)
    key = hashlib.sha256("|".join([
        sha256_file(folder / "model.safetensors"), torch.__version__, openvino.__version__,
        str(CONVERSION_VERSION)]).encode()).hexdigest()[:20]
    return _cached(cache_dir() / "openvino" / key, lambda: _convert(folder))


def quantized(folder: str | Path) -> Path:
    """The int8 IR of a sentence-transformers folder: the float IR quantized by NNCF on the
    calibration texts, made on first use and cached under a key of the float IR's, NNCF's
    version, the calibration texts and this quantization's version."""
    import nncf
    import openvino
    from tokenizers import Tokenizer

    folder = Path(folder)
    source = converted(folder)
    texts = calibration_texts()
    key = hashlib.sha256("|".join([
        source.parent.name, openvino.__version__, nncf.__version__, str(QUANTIZATION_VERSION),
        hashlib.sha256("\0".join(texts).encode()).hexdigest()]).encode()).hexdigest()[:20]
    tokenizer = _tokenizer(folder, Tokenizer)

    def quantize():
        nncf.set_log_level(logging.WARNING)  # not its tables of what it quantized
        data = nncf.Dataset(texts, lambda text: _feed(tokenizer.encode_batch([text])))
        with contextlib.redirect_stdout(sys.stderr):  # its progress bars: stdout may be JSON
            return nncf.quantize(openvino.Core().read_model(str(source)), data,
                                 model_type=nncf.ModelType.TRANSFORMER, subset_size=len(texts))

    return _cached(cache_dir() / "openvino" / f"int8-{key}", quantize)


def calibration_texts() -> list[str]:
    """The int8 copy's calibration samples (``openvino_calibration.json`` beside this file):
    chunk-sized windows of the demo corpus's look-alike 10-K and 10-Q text, statement tables
    included, taken by ``calibration_windows`` from its seeded generator's filings and
    written by ``python -m finrag.serving.cli.demo_corpus --embedder-calibration FILE``; a
    test checks the file is what the generator gives. Every machine calibrates on the same
    text, never on the filings being indexed."""
    return json.loads(CALIBRATION_FILE.read_text(encoding="utf-8"))


def calibration_windows(texts: list[str], count: int = CALIBRATION_TEXTS,
                        size: int = 2500) -> list[str]:
    """``count`` windows of ``size`` characters spread evenly over ``texts`` (a text's last
    window: at least half a window)."""
    windows = [text[i:i + size] for text in texts
               for i in range(0, max(1, len(text) - size // 2), size)]
    step = max(1, len(windows) // count)
    return windows[::step][:count]


def _cached(out: Path, build) -> Path:
    """``out/model.xml``, built by ``build()`` (an OpenVINO model) the first time: written
    beside and renamed into place, so a killed build leaves nothing a later run takes."""
    import openvino

    if (out / "model.xml").is_file():
        return out / "model.xml"
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=out.parent, prefix=".converting-"))
    try:
        openvino.save_model(build(), str(work / "model.xml"), compress_to_fp16=False)
        os.replace(work, out)
    except OSError:
        if not (out / "model.xml").is_file():  # not another process building it first
            raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out / "model.xml"


def _tokenizer(folder: Path, Tokenizer):
    """The model's tokenizer: truncating to its window, padding a batch to its longest."""
    config = json.loads((folder / "sentence_bert_config.json").read_text())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(int(config.get("max_seq_length") or 512))
    tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]") or 0)
    return tokenizer


def _feed(encoded) -> dict[str, np.ndarray]:
    return {"input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encoded], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64)}


def _convert(folder: Path):
    import openvino
    import torch
    from transformers import AutoModel

    class Pooled(torch.nn.Module):
        """The transformer, the mean of its real tokens' states, normalised: the whole model."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1)

    model = Pooled(AutoModel.from_pretrained(folder, local_files_only=True)).eval()
    sample = torch.ones((2, 8), dtype=torch.int64)
    with torch.no_grad():
        return openvino.convert_model(model, example_input={
            "input_ids": sample, "attention_mask": sample,
            "token_type_ids": torch.zeros_like(sample)})


class OpenVinoEmbedder:
    """``encode(texts)`` → (n, dim) float32 unit vectors, as ``SentenceTransformerEmbedder``."""

    def __init__(self, folder: str | Path, *, model_id: str | None = None, batch_size: int = 8,
                 threads: int | None = None, precision: str | None = None,
                 streams: int | None = None):
        import openvino
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.model_id = model_id or str(folder)
        self.name = str(folder)
        self.kind = "sentence-transformers"  # the same function of the text
        self.normalize = True
        self.batch_size = batch_size
        self._tokenizer = _tokenizer(folder, Tokenizer)
        self.max_seq_length = self._tokenizer.truncation["max_length"]
        if precision not in (None, *PRECISIONS):
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        int8 = precision == "int8"
        core = openvino.Core()
        if precision in (None, "auto", "int8"):  # bfloat16 where the CPU computes in it
            precision = "bf16" if "BF16" in core.get_property(
                "CPU", "OPTIMIZATION_CAPABILITIES") else "f32"
        threads = threads or int(os.environ.get("OMP_NUM_THREADS") or 0) or os.cpu_count() or 1
        # OpenVINO pins its threads to cores from the first: two single-thread embedders in
        # two processes (Ray workers) would then share one core and run at half speed each
        model = quantized(folder) if int8 else converted(folder)
        # a long list is embedded by ``streams`` requests at once, a thread each: on two cores
        # two one-thread streams outran one two-thread request, 1.11x per block in int8
        # (benchmarks/results/embedder_runtime_cpu_int8); one text (a query) runs on one stream
        self.streams = max(1, min(streams or threads, threads))
        self._model = core.compile_model(str(model), "CPU", {
            "INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": threads,
            "PERFORMANCE_HINT": "THROUGHPUT" if self.streams > 1 else "LATENCY",
            "NUM_STREAMS": self.streams,
            "ENABLE_CPU_PINNING": threads >= (os.cpu_count() or 1)})
        hint = self._model.get_property("INFERENCE_PRECISION_HINT")
        self.precision = ("int8+" if int8 else "") + (
            hint.to_string() if hasattr(hint, "to_string") else str(hint))
        self._output = self._model.output(0)
        self._request = self._model.create_infer_request()
        self._one = threading.Lock()  # one inference request: one batch at a time
        self._queue = None
        if self.streams > 1:
            self._queue = openvino.AsyncInferQueue(self._model, self.streams)
            self._queue.set_callback(_store)
        self._many = threading.Lock()  # one queue: one long list at a time
        self.dim = int(self._output.get_partial_shape()[1].get_length())

    @classmethod
    def packaged(cls, model: PackagedModel = MINILM_L6_V2, **kwargs) -> "OpenVinoEmbedder":
        return cls(resolve_packaged(model), model_id=model.model_id, **kwargs)

    def encode(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        """Embed texts as an (n, dim) float32 array of unit vectors, in batches of texts of
        about one length (so a batch pads little)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        batches = [order[start:start + self.batch_size]
                   for start in range(0, len(order), self.batch_size)]
        feeds = ((batch, _feed(self._tokenizer.encode_batch([texts[i] for i in batch])))
                 for batch in batches)
        if len(batches) == 1 or self._queue is None:
            for batch, feed in feeds:
                with self._one:
                    out[batch] = self._request.infer(feed)[self._output]
            return out
        with self._many:  # the next batch is tokenized while the streams run
            for batch, feed in feeds:
                self._queue.start_async(feed, (out, batch))
            self._queue.wait_all()
        return out


def _store(request, job) -> None:
    out, rows = job
    out[rows] = request.get_output_tensor(0).data
