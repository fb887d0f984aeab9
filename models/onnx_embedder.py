"""A sentence-transformers model (Transformer, mean pooling, normalisation) on ONNX Runtime.

The ONNX file is exported once from the verified packaged weights with the pooling and the
normalisation inside it, and kept in the cache under a key made of everything that changes
its output: the weights' sha256, torch's and ONNX Runtime's versions, this export's version
and the quantization. ``quantize="int8"`` is dynamic int8 quantization of the linear layers;
its vectors differ from float32's, so an index records it as another embedder (the model id
gains ``#int8``), while float32 ONNX vectors equal the torch ones within float tolerance and
serve an index built by either.

Texts are batched by length (longest first), so a batch pads to texts of about its own size.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from finrag.models.weights import cache_dir

EXPORT_VERSION = 1  # bump when the export below changes what the file computes
QUANTIZATIONS = (None, "int8")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check_mean_pooling(folder: Path) -> None:
    pooling = folder / "1_Pooling" / "config.json"
    modules = json.loads((folder / "modules.json").read_text()) if (
        folder / "modules.json").is_file() else []
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    config = json.loads(pooling.read_text()) if pooling.is_file() else {}
    if kinds[:3] != ["Transformer", "Pooling", "Normalize"] or not config.get(
            "pooling_mode_mean_tokens") or any(config.get(k) for k in (
                "pooling_mode_cls_token", "pooling_mode_max_tokens",
                "pooling_mode_mean_sqrt_len_tokens")):
        raise ValueError(f"{folder}: the ONNX runtime takes a Transformer → mean Pooling → "
                         f"Normalize model; this one is {kinds} with pooling {config}")


def onnx_file(folder: str | Path, quantize: str | None = None) -> Path:
    """The ONNX export of a sentence-transformers folder, made on first use (atomically: a
    killed export leaves no file that a later run would take for whole)."""
    import onnxruntime

    if quantize not in QUANTIZATIONS:
        raise ValueError(f"quantize {quantize!r}: none or int8")
    folder = Path(folder)
    _check_mean_pooling(folder)
    import torch

    key = hashlib.sha256("|".join([
        _sha256(folder / "model.safetensors"), torch.__version__, onnxruntime.__version__,
        str(EXPORT_VERSION), str(quantize)]).encode()).hexdigest()[:20]
    out = cache_dir() / "onnx" / key / "model.onnx"
    if out.is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as work:
        plain = Path(work) / "float32.onnx"
        _export(folder, plain)
        if quantize == "int8":
            from onnxruntime.quantization import QuantType, quantize_dynamic

            done = Path(work) / "int8.onnx"
            quantize_dynamic(str(plain), str(done), weight_type=QuantType.QInt8)
        else:
            done = plain
        os.replace(done, out)
    return out


def _export(folder: Path, out: Path) -> None:
    import torch
    from transformers import AutoModel

    class Pooled(torch.nn.Module):
        """The transformer, its mean over the real tokens, normalised: the whole model."""

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
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with torch.no_grad():
        torch.onnx.export(model, (sample, sample, torch.zeros_like(sample)), str(out),
                          input_names=names, output_names=["embedding"], opset_version=17,
                          dynamic_axes={**{n: {0: "batch", 1: "tokens"} for n in names},
                                        "embedding": {0: "batch"}}, dynamo=False)


class OnnxEmbedder:
    """``encode(texts)`` → (n, dim) float32 unit vectors, as ``SentenceTransformerEmbedder``."""

    def __init__(self, folder: str | Path, *, model_id: str, quantize: str | None = None,
                 batch_size: int = 32, threads: int | None = None):
        import onnxruntime
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.model_id = model_id + ("#int8" if quantize == "int8" else "")
        self.kind = "sentence-transformers"  # the same function of the text (or its int8 twin)
        self.normalize = True
        self.quantize = quantize
        self.batch_size = batch_size
        config = json.loads((folder / "sentence_bert_config.json").read_text())
        self.max_seq_length = int(config.get("max_seq_length") or 512)
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(self.max_seq_length)
        self._tokenizer.enable_padding(pad_id=self._tokenizer.token_to_id("[PAD]") or 0)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or int(os.environ.get("OMP_NUM_THREADS") or 0) \
            or os.cpu_count() or 1
        options.inter_op_num_threads = 1
        self._session = onnxruntime.InferenceSession(
            str(onnx_file(folder, quantize)), options, providers=["CPUExecutionProvider"])
        self.dim = int(self._session.get_outputs()[0].shape[-1] or
                       self.encode(["dimension"]).shape[1])

    def encode(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out: list[np.ndarray | None] = [None] * len(texts)
        for start in range(0, len(order), self.batch_size):
            batch = order[start:start + self.batch_size]
            encoded = self._tokenizer.encode_batch([texts[i] for i in batch])
            feed = {"input_ids": np.array([e.ids for e in encoded], dtype=np.int64),
                    "attention_mask": np.array([e.attention_mask for e in encoded],
                                               dtype=np.int64),
                    "token_type_ids": np.array([e.type_ids for e in encoded], dtype=np.int64)}
            for i, vector in zip(batch, self._session.run(None, feed)[0]):
                out[i] = vector
        return np.ascontiguousarray(np.stack(out), dtype=np.float32)
