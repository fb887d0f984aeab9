"""Rerankers.

Every reranker has one interface: ``score(query, passages) -> list[float]`` (higher = more
relevant, one score per passage, in the passages' order), plus ``model_id`` and ``name``.

- ``MaxSimReranker``: late interaction (ColBERT-style MaxSim) over an embedder's token vectors;
  the light CPU stage.
- ``LLMRelevanceScorer``: a causal LM judges "does this document answer the query?" and the
  score is P(yes) from one forward pass (Qwen3-Reranker style); the large CPU stage.
- ``LLMListwiseRanker``: a causal LM orders a window of passages at once and returns the order
  as grammar-constrained JSON (RankGPT-style sliding window, with in-context examples).
- ``CrossEncoderReranker``: a sequence-classification cross-encoder (bge-reranker) through
  FlagEmbedding's ``FlagReranker``, or plain transformers when FlagEmbedding is unavailable.

The cascade that chains them (light → large → adaptive cutoff) is retrieval policy:
``retrieval.systems.cascade``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Protocol, Sequence

from finrag.models.llm import NO_FORMS, YES_FORMS, single_token_ids, yes_no_log_odds


class Reranker(Protocol):
    name: str
    model_id: str

    def score(self, query: str, passages: list[str]) -> list[float]: ...


# ------------------------------------------------------------------------------------------
# light stage: late interaction over token vectors


class MaxSimReranker(Reranker):
    """ColBERT-style MaxSim over a sentence-transformers model's contextual token vectors.

    score = mean over query tokens of the max cosine against any passage token, so it lies in
    [-1, 1]. Special tokens ([CLS], [SEP]) and padding are left out. The model reads at most
    ``max_seq_length`` word pieces (256 for all-MiniLM-L6-v2, about 1,000 characters): the
    rest of a longer passage is truncated and does not count. The model was trained for pooled
    sentence vectors, not for MaxSim, so this is a cheap filter, not a tuned ColBERT.
    """

    name = "maxsim"

    def __init__(self, embedder, *, batch_size: int = 32):
        # an embedder from models.embedders, or a SentenceTransformer model itself
        import torch

        self._st = getattr(embedder, "_model", embedder)
        self.model_id = getattr(embedder, "model_id", None) or type(self._st).__name__
        self.batch_size = batch_size
        self._special = torch.tensor(sorted(set(self._st.tokenizer.all_special_ids)))

    def _token_vectors(self, texts: list[str]) -> list:
        """Per text: an (n_tokens, dim) tensor of unit vectors, specials and padding dropped."""
        import torch

        # output_value=None returns each text's input_ids and attention_mask next to its
        # token_embeddings, so special tokens are found by id rather than by position
        rows = self._st.encode(texts, batch_size=self.batch_size, output_value=None,
                               show_progress_bar=False)
        out = []
        for row in rows:
            ids, mask = row["input_ids"], row["attention_mask"].bool()
            keep = mask & ~torch.isin(ids, self._special.to(ids.device))
            vectors = row["token_embeddings"][keep].float()
            out.append(torch.nn.functional.normalize(vectors, dim=-1).cpu())
        return out

    def score(self, query: str, passages: list[str]) -> list[float]:
        import torch

        if not passages:
            return []
        q, *docs = self._token_vectors([query, *passages])
        if len(q) == 0:
            return [0.0] * len(passages)
        scores = []
        with torch.inference_mode():
            for d in docs:
                # an empty passage matches nothing: the lowest possible score
                scores.append(float((q @ d.T).max(dim=1).values.mean().clamp(-1, 1))
                              if len(d) else -1.0)
        return scores


class BiEncoderReranker(Reranker):
    """Cosine between an embedder's pooled vectors of the query and of each passage.

    A passage longer than the model reads (``max_seq_length`` word pieces) is cut into
    overlapping windows of about that many characters × 4, and scores as its best window, so
    the whole passage counts rather than its first few hundred words. With a larger embedder
    than the index's (all-mpnet-base-v2 over MiniLM) this is a CPU large stage.
    """

    name = "bi-encoder"

    def __init__(self, embedder, *, window_chars: int | None = None, overlap: float = 0.25):
        self.embedder = embedder
        self.model_id = getattr(embedder, "model_id", None) or type(embedder).__name__
        seq = getattr(embedder, "max_seq_length", None) or 256
        self.window_chars = window_chars or int(seq * 4 * 0.9)  # ~4 characters a word piece
        self.overlap = overlap

    def _windows(self, text: str) -> list[str]:
        if len(text) <= self.window_chars:
            return [text]
        step = max(1, int(self.window_chars * (1 - self.overlap)))
        last = len(text) - self.window_chars  # the final window ends at the text's end
        return [text[i:i + self.window_chars] for i in range(0, last, step)] + [text[last:]]

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        owner: list[int] = []
        pieces: list[str] = []
        for n, p in enumerate(passages):
            for w in self._windows(p):
                owner.append(n)
                pieces.append(w)
        q, *vecs = self.embedder.encode([query, *pieces])
        scores = [-1.0] * len(passages)
        for n, v in zip(owner, vecs):
            scores[n] = max(scores[n], float(v @ q))
        return scores


# ------------------------------------------------------------------------------------------
# large stage: LLM yes/no relevance


_SYSTEM = ('Judge whether the Document meets the requirements based on the Query'
           '{instruct}. Note that the answer can only be "yes" or "no".')

class LLMRelevanceScorer(Reranker):
    """P(yes) that a document meets a query's requirements, from one forward pass of a causal LM.

    The prompt is a chat (system: the judging rule; user: ``<Query>: …\\n<Document>: …``) ended
    with the assistant turn's opening; nothing is generated. The score is a softmax over two
    logits at the next position: "yes" against "no", each the log-sum-exp over the word's
    single-token forms (yes/Yes/ yes/ Yes), because small chat models often start with "Yes".

    It scores through the engine it is given — ``next_token_logprobs`` of the LLM engine
    contract (``models.llm``) — so the same scorer runs on the transformers engine and on
    vLLM, and shares the engine of another role that names the same model. ``last_usage``
    holds the token counts of the last ``score`` call.
    """

    name = "llm-yesno"

    def __init__(self, engine, *, batch_size: int = 4, max_passage_chars: int = 3000,
                 instruction: str | None = None, model_id: str | None = None):
        self.engine = engine
        self.model_id = model_id or engine.model_id
        self.batch_size = batch_size
        self.max_passage_chars = max_passage_chars
        self.instruction = instruction
        self.yes_ids = single_token_ids(engine, YES_FORMS)  # a tokenizer without one: says so
        self.no_ids = single_token_ids(engine, NO_FORMS)
        self.last_usage: dict = {"prompt_tokens": 0, "calls": 0, "batches": 0,
                                 "prompt_tokens_each": []}

    def build_messages(self, query: str, passage: str) -> list[dict]:
        """The chat scored for one (query, passage) pair."""
        instruct = f" and the Instruct ({self.instruction})" if self.instruction else ""
        return [
            {"role": "system", "content": _SYSTEM.format(instruct=instruct)},
            {"role": "user",
             "content": f"<Query>: {query}\n<Document>: {passage[:self.max_passage_chars]}"},
        ]

    def build_prompt(self, query: str, passage: str) -> str:
        """The rendered chat text scored for one (query, passage) pair."""
        return self.engine.render(self.build_messages(query, passage))

    def score(self, query: str, passages: list[str]) -> list[float]:
        import math

        chats = [self.build_messages(query, p) for p in passages]
        # sigmoid of the log-odds = softmax([yes, no])[0]
        scores = [_sigmoid(x) for x in yes_no_log_odds(self.engine, chats,
                                                        ids=(self.yes_ids, self.no_ids),
                                                        batch_size=self.batch_size)]
        each = [len(self.engine.prompt_token_ids(c)) for c in chats]
        self.last_usage = {"prompt_tokens": sum(each), "calls": len(each),
                           "batches": math.ceil(len(each) / self.batch_size),
                           "prompt_tokens_each": each}
        return scores


def _sigmoid(x: float) -> float:
    import math

    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


# ------------------------------------------------------------------------------------------
# LLM listwise ranking

LISTWISE_EXAMPLES = Path(__file__).with_name("listwise_examples.json")

_LISTWISE_SYSTEM = """You rank passages from SEC filings by how well they answer a question.
The passages are numbered [1], [2], ... Put first the passages that hold the figures or facts \
the question asks for, then those that help, then the rest. Answer with JSON only: \
{"ranking": [passage numbers, most relevant first]}."""


def listwise_examples(path: str | Path = LISTWISE_EXAMPLES) -> list[dict]:
    """The packaged in-context examples: ``{"question", "passages", "ranking"}`` each, drawn
    from the tune half of the FinanceBench dev questions (``benchmarks/listwise_examples.py``)."""
    import json

    return json.loads(Path(path).read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=32)
def _ranking_schema(n: int):
    """``{"ranking": [1..n, ...]}``: numbers as an enum, so the grammar only lets through
    passage numbers that exist; duplicates and gaps are mended after parsing."""
    from typing import Annotated, Literal

    from pydantic import ConfigDict, Field, create_model

    number = Literal[tuple(range(1, n + 1))]  # type: ignore[valid-type]
    return create_model(f"Ranking{n}", __config__=ConfigDict(extra="forbid"),
                        ranking=(Annotated[list[number], Field(min_length=1, max_length=n)], ...))


def _permutation(ranking: Sequence[int], n: int) -> list[int]:
    """0-based order from the model's 1-based ranking: first mentions kept, unknown numbers
    dropped, passages it left out appended in their incoming order."""
    seen: list[int] = []
    for number in ranking:
        if 1 <= number <= n and number - 1 not in seen:
            seen.append(number - 1)
    return seen + [i for i in range(n) if i not in seen]


class LLMListwiseRanker(Reranker):
    """A causal LM reads a window of passages with the question and returns their order as
    constrained JSON (``{"ranking": [3, 1, 2]}``), after in-context examples given as earlier
    chat turns.

    More passages than ``window``: windows of ``window`` slide from the last passages to the
    first by ``step`` (RankGPT), so a relevant passage can climb from the bottom to the top in
    one pass. The score of the passage at final rank r (0 = best) of n is ``n - r``: only the
    order means anything. ``last_usage`` holds the tokens and calls of the last ``score``.
    """

    name = "llm-listwise"

    def __init__(self, engine, *, window: int = 8, step: int = 4, max_passage_chars: int = 600,
                 examples: list[dict] | None = None, model_id: str | None = None):
        if not 0 < step <= window:
            raise ValueError(f"step must be in 1..window ({window}), got {step}")
        self.engine = engine
        self.model_id = model_id or engine.model_id
        self.window, self.step = window, step
        self.max_passage_chars = max_passage_chars
        self.examples = list(examples or [])
        self.last_usage = self._no_usage()

    @staticmethod
    def _no_usage() -> dict:
        return {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0, "prompt_tokens_each": [],
                "completion_tokens_each": []}

    def _turn(self, query: str, passages: Sequence[str]) -> str:
        listed = "\n".join(f"[{i}] {' '.join(p.split())[:self.max_passage_chars]}"
                           for i, p in enumerate(passages, start=1))
        return f"Question: {query}\n\nPassages:\n{listed}"

    def build_messages(self, query: str, passages: Sequence[str]) -> list[dict]:
        """The chat for one window: the rule, each example as a user/assistant pair, the window."""
        import json

        messages = [{"role": "system", "content": _LISTWISE_SYSTEM}]
        for ex in self.examples:
            messages += [{"role": "user", "content": self._turn(ex["question"], ex["passages"])},
                         {"role": "assistant", "content": json.dumps({"ranking": ex["ranking"]})}]
        return messages + [{"role": "user", "content": self._turn(query, passages)}]

    def rank_window(self, query: str, passages: Sequence[str]) -> list[int]:
        """The window's passages in the model's order (0-based indices)."""
        from finrag.models.llm import SamplingParams

        n = len(passages)
        if n < 2:
            return list(range(n))
        [(parsed, completion)] = self.engine.generate_json(
            [self.build_messages(query, passages)], _ranking_schema(n),
            SamplingParams(max_tokens=8 + 4 * n))
        usage = self.last_usage
        usage["prompt_tokens"] += completion.prompt_tokens
        usage["completion_tokens"] += completion.completion_tokens
        usage["calls"] += 1
        usage["prompt_tokens_each"].append(completion.prompt_tokens)
        usage["completion_tokens_each"].append(completion.completion_tokens)
        return _permutation(parsed.ranking, n)

    def score(self, query: str, passages: list[str]) -> list[float]:
        self.last_usage = self._no_usage()
        n = len(passages)
        order = list(range(n))
        end = n
        while end > 0:
            start = max(0, end - self.window)
            window = order[start:end]
            order[start:end] = [window[i] for i in
                                self.rank_window(query, [passages[j] for j in window])]
            if start == 0:
                break
            end -= self.step
        scores = [0.0] * n
        for rank, i in enumerate(order):
            scores[i] = float(n - rank)
        return scores


# ------------------------------------------------------------------------------------------
# cross-encoder (bge-reranker family)


class CrossEncoderReranker(Reranker):
    """A sequence-classification cross-encoder; the score is its raw relevance logit.

    ``backend="auto"`` uses FlagEmbedding's FlagReranker (imported only here) and falls back
    to transformers when FlagEmbedding cannot be imported (1.4.2 breaks on transformers
    ≥5.24). Both read ``query [SEP] passage`` truncated to ``max_length`` tokens, passage side
    first (FlagReranker also caps the query at 3/4 of ``max_length``).
    """

    name = "cross-encoder"

    def __init__(self, path: str | Path, *, use_fp16: bool = False, batch_size: int = 16,
                 max_length: int = 512, backend: str = "auto", device: str | None = None,
                 model_id: str | None = None):
        self.model_id = model_id or str(path)
        self.batch_size = batch_size
        self.max_length = max_length
        self._flag = None
        if backend in ("auto", "flag"):
            try:
                from FlagEmbedding import FlagReranker
            except ImportError:
                if backend == "flag":
                    raise
            else:
                self._flag = FlagReranker(str(path), use_fp16=use_fp16, batch_size=batch_size,
                                          max_length=max_length, devices=device)
        elif backend != "transformers":
            raise ValueError(f"unknown backend {backend!r}: auto, flag or transformers")
        self.backend = "flag" if self._flag is not None else "transformers"
        if self._flag is None:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer

            self._device = device or ("cuda" if torch.cuda.is_available() else "cpu")
            self._tokenizer = AutoTokenizer.from_pretrained(path)
            dtype = torch.float16 if use_fp16 and self._device != "cpu" else torch.float32
            self._model = AutoModelForSequenceClassification.from_pretrained(
                path, dtype=dtype).to(self._device).eval()

    def score(self, query: str, passages: list[str]) -> list[float]:
        if not passages:
            return []
        pairs = [(query, p) for p in passages]
        if self._flag is not None:
            return [float(s) for s in self._flag.compute_score(pairs)]
        import torch

        scores: list[float] = []
        for start in range(0, len(pairs), self.batch_size):
            batch = pairs[start:start + self.batch_size]
            enc = self._tokenizer([q for q, _ in batch], [p for _, p in batch], padding=True,
                                  truncation="only_second", max_length=self.max_length,
                                  return_tensors="pt").to(self._device)
            with torch.inference_mode():
                scores += self._model(**enc).logits.view(-1).float().cpu().tolist()
        return scores
