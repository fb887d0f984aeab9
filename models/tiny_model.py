"""A tiny, randomly initialised causal LM built offline, for testing LLM backends for real.

``build_tiny_llm(out_dir)`` trains a small byte-level BPE tokenizer on generated finance-ish
sentences (digits and JSON punctuation included), wraps it as a ``PreTrainedTokenizerFast`` with
BOS/EOS/PAD and a chat template, and saves it next to a 2-layer ``LlamaForCausalLM`` with random
weights (hidden 128, 2 heads, so head_dim 64: vLLM's CPU attention rejects smaller heads).
Nothing is fetched from a hub. Only torch, transformers and tokenizers are used, so this module
imports in the main venv and in the vLLM venv alike.

    python -m finrag.models.tiny_model OUT_DIR

Profiles name them as ``tiny:llm`` and ``tiny:bge-m3`` (the ``gpu-tiny`` profile):
``tiny_model_dir`` builds one once into finrag's cache, keyed by its parameters and this
module's code, and reuses it after.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sys
from pathlib import Path

BOS, EOS, PAD = "<s>", "</s>", "<pad>"

# Llama-style: the template carries BOS, so rendered chats are tokenized without special tokens.
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

_TICKERS = ["AAPL", "MSFT", "AMZN", "NVDA", "JPM", "XOM", "KO", "PEP", "WMT", "BA", "3M", "AMD"]
_WORDS = ("revenue net income operating margin cash flow guidance fiscal year quarter segment "
          "growth dividend share buyback debt filing annual report the company reported an "
          "increase decrease of in for and was to by from compared with percent million billion "
          "what how much did question answer user assistant system yes no Yes No").split()


def _corpus(rng: random.Random, n: int = 400) -> list[str]:
    lines = []
    for _ in range(n):
        ticker, year = rng.choice(_TICKERS), rng.randint(1995, 2030)
        amount = f"{rng.randint(1, 999)}.{rng.randint(0, 99):02d}"
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 12)))
        lines.append(f"{ticker} {words} {amount} million in FY{year} ({rng.randint(-50, 50)}%).")
        record = {"tickers": rng.sample(_TICKERS, rng.randint(0, 3)),
                  "years": [rng.randint(1995, 2030) for _ in range(rng.randint(0, 3))],
                  "answer": words, "value": float(amount), "ok": rng.random() < 0.5}
        lines.append(json.dumps(record))
    return lines


def _train_tokenizer(rng: random.Random, vocab_size: int, max_length: int = 2048):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[PAD, BOS, EOS],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(_corpus(rng), trainer)
    # Plain text gets BOS prepended, as Llama tokenizers do.
    tok.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B", special_tokens=[(BOS, tok.token_to_id(BOS))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS,
                                   pad_token=PAD, chat_template=CHAT_TEMPLATE,
                                   model_max_length=max_length)


def build_tiny_llm(out_dir: str | Path, seed: int = 0, vocab_size: int = 512,
                   max_positions: int = 2048) -> Path:
    """Write a tiny random Llama model and its tokenizer to ``out_dir``; return the folder.
    ``max_positions``: the longest sequence it reads (RoPE: no weights depend on it)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer(random.Random(seed), vocab_size, max_positions)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        max_position_embeddings=max_positions, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, dtype="float32",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    # a random model may open with EOS or blanks (an empty answer) and pick lone UTF-8 bytes
    # (text of U+FFFD). transformers keeps the first generated token off the special and
    # whitespace-only ones and every token off lone bytes (grammar-constrained JSON opens with
    # "{" and still ends with EOS); vLLM does not read these settings
    texts = [tokenizer.decode([i], skip_special_tokens=True) for i in range(len(tokenizer))]
    model.generation_config.begin_suppress_tokens = [i for i, t in enumerate(texts)
                                                     if not t.strip()]
    model.generation_config.suppress_tokens = [i for i, t in enumerate(texts) if "\ufffd" in t]
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out


def build_tiny_bge_m3(out_dir: str | Path, seed: int = 0, hidden: int = 32) -> Path:
    """Write a tiny random BGE-M3-shaped folder to ``out_dir``: an XLM-R encoder (2 layers)
    with the packaged MiniLM WordPiece tokenizer, plus FlagEmbedding's ``colbert_linear.pt``
    and ``sparse_linear.pt`` heads. bge-m3's tokenizer is XLM-R's, where </s> is both sep and
    eos; giving the BERT tokenizer eos=[SEP] makes FlagEmbedding drop it from the lexical
    weights the same way. Needs finrag's packaged weights (the main venv)."""
    import torch
    from transformers import AutoTokenizer, XLMRobertaConfig, XLMRobertaModel

    from finrag.models.weights import MINILM_L6_V2, resolve_packaged

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(resolve_packaged(MINILM_L6_V2))
    tokenizer.eos_token = tokenizer.sep_token
    torch.manual_seed(seed)
    config = XLMRobertaConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=2,
                              num_attention_heads=2, intermediate_size=2 * hidden,
                              type_vocab_size=1, max_position_embeddings=8194,  # bge-m3's
                              pad_token_id=tokenizer.pad_token_id)
    XLMRobertaModel(config, add_pooling_layer=False).eval().save_pretrained(out)
    tokenizer.save_pretrained(out)
    torch.save(torch.nn.Linear(hidden, hidden).state_dict(), out / "colbert_linear.pt")
    sparse = torch.nn.Linear(hidden, 1)
    torch.nn.init.constant_(sparse.bias, 0.5)  # most tokens get a lexical weight, as trained
    torch.save(sparse.state_dict(), out / "sparse_linear.pt")
    return out


# the ids a profile may name, and how each is built
TINY_MODELS = {
    # 4,096 positions: room for the gpu-tiny profile's SFR parts and scorer passages
    "tiny:llm": ("build_tiny_llm", {"seed": 0, "vocab_size": 512, "max_positions": 4096}),
    "tiny:bge-m3": ("build_tiny_bge_m3", {"seed": 0, "hidden": 32}),
}


def tiny_model_dir(model_id: str) -> Path:
    """The folder of a ``tiny:`` model, built on first use into the cache
    (``<cache>/tiny/<name>-<key>``, the key a hash of the builder's parameters and of this
    module's code, so an edit here builds afresh) and reused after. Built beside its place
    and moved in whole: processes that race to build it all end with one complete folder."""
    from finrag.models.weights import cache_dir

    if model_id not in TINY_MODELS:
        raise ValueError(f"unknown tiny model {model_id!r}; known: {', '.join(TINY_MODELS)}")
    builder, params = TINY_MODELS[model_id]
    key = hashlib.sha256(Path(__file__).read_bytes()
                         + json.dumps([builder, params], sort_keys=True).encode()).hexdigest()
    out = cache_dir() / "tiny" / f"{model_id.split(':', 1)[1]}-{key[:12]}"
    marker = out / "finrag-built.json"
    if marker.is_file():
        return out
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    globals()[builder](tmp, **params)
    (tmp / "finrag-built.json").write_text(json.dumps(
        {"model_id": model_id, "builder": builder, "params": params, "key": key}, indent=2))
    try:
        os.replace(tmp, out)
    except OSError:  # another process moved its copy in first (a folder replaces no folder)
        shutil.rmtree(tmp, ignore_errors=True)
        if not marker.is_file():
            raise
    return out


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m finrag.models.tiny_model OUT_DIR")
    print(build_tiny_llm(sys.argv[1]))
