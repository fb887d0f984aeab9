"""A tiny, randomly initialised causal LM built offline, for testing LLM backends for real.

``build_tiny_llm(out_dir)`` trains a small byte-level BPE tokenizer on generated finance-ish
sentences (digits and JSON punctuation included), wraps it as a ``PreTrainedTokenizerFast`` with
BOS/EOS/PAD and a chat template, and saves it next to a 2-layer ``LlamaForCausalLM`` with random
weights (hidden 128, 2 heads, so head_dim 64: vLLM's CPU attention rejects smaller heads).
Nothing is fetched from a hub. Only torch, transformers and tokenizers are used, so this module
imports in the main venv and in the vLLM venv alike.

    python -m models.tiny_model OUT_DIR
"""

from __future__ import annotations

import json
import random
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


def _train_tokenizer(rng: random.Random, vocab_size: int):
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
                                   model_max_length=2048)


def build_tiny_llm(out_dir: str | Path, seed: int = 0, vocab_size: int = 512) -> Path:
    """Write a tiny random Llama model and its tokenizer to ``out_dir``; return the folder."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer(random.Random(seed), vocab_size)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        max_position_embeddings=2048, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, dtype="float32",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
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

    from models.weights import MINILM_L6_V2, resolve_packaged

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


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m models.tiny_model OUT_DIR")
    print(build_tiny_llm(sys.argv[1]))
