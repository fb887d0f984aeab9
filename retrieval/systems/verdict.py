"""Yes/no verdicts from the evidence, not from the generator's prior (#59).

Asked "Did AMD report customer concentration in FY22?" with the passage that says one customer
was 16% of revenue in its context, a small generator still opens with "No": it leans to No on
any yes/no question. The verdict is therefore read before the answer is written, from the
generator's next-token probabilities of Yes and No after the answer prompt, and corrected for
that lean by contextual calibration (Zhao et al., "Calibrate Before Use", ICML 2021): the same
prompt with content-free input (the question and the context "N/A") gives the model's log-odds
of Yes for no evidence at all, which is subtracted.

    cal = calibrate(engine)                         # once per engine
    v = decide(engine, question, blocks, cal)       # one forward pass, nothing generated
    v.word                                          # "Yes" or "No": the answer opens with it

The answer is then generated with the verdict already written as its first word, so the reason
and the citations that follow are the generator's, conditioned on the verdict. On llama.cpp
the generation reuses the verdict pass's prompt (its prefix cache), so the verdict costs one
token's forward pass more, not a second prefill.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from finrag.models.llm import yes_no_ids
from finrag.models.llm import yes_no_log_odds as log_odds
from finrag.retrieval.systems.context import Block, answer_messages

CONTENT_FREE = "N/A"


@dataclass(frozen=True)
class Verdict:
    word: str  # "Yes" or "No"
    margin: float  # calibrated log-odds of Yes over No (> 0: Yes)
    raw: float  # the log-odds before calibration
    prompt: str  # the answer prompt as the model read it, rendered once
    prompt_tokens: int


_OPENS_WITH_VERDICT = re.compile(r"^\W*(yes|no)\b", re.I)


def verdict_in(text: str) -> str | None:
    """"yes" or "no" when ``text`` opens with that verdict (what the facts judged), else None."""
    m = _OPENS_WITH_VERDICT.match(text or "")
    return m.group(1).lower() if m else None


@dataclass(frozen=True)
class Calibration:
    """What a verdict needs of its engine, worked out once: the Yes and No token ids and the
    content-free offset."""

    ids: tuple[list[int], list[int]]
    offset: float


def calibrate(engine) -> Calibration:
    """The engine's log-odds of Yes over No on the answer prompt with content-free input: its
    lean with no question and no evidence."""
    ids = yes_no_ids(engine)
    messages = answer_messages(CONTENT_FREE, [Block(CONTENT_FREE, 1, 1, CONTENT_FREE, 0)],
                               yes_no=True)
    return Calibration(ids, log_odds(engine, [messages], ids=ids)[0])


def decide(engine, question: str, blocks: list[Block], calibration: Calibration) -> Verdict:
    """Yes or No for ``question`` over ``blocks``, less ``calibration``'s offset."""
    prompt = engine.render(answer_messages(question, blocks))  # once: served, a call each
    [raw] = log_odds(engine, [prompt], ids=calibration.ids)
    margin = raw - calibration.offset
    return Verdict("Yes" if margin > 0 else "No", margin, raw, prompt, engine.count_tokens(prompt))


def opened(verdict: Verdict) -> str:
    """The answer prompt with the verdict already written as the answer's first word: the
    generator goes on from there."""
    return verdict.prompt + verdict.word
