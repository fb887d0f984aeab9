"""Writing the answers a batch of questions found context for, read top to bottom in
``Generation.write``: what needs no generator is said as found; a yes/no question's verdict
is read from its passages; every other prompt of the batch goes to the generator in one engine
call (a lone one streams); SFR's parts are mapped, then reduced; then each written answer's
figures are traced to what it was given and given their source's scale.
"""

from __future__ import annotations

from typing import Callable

from finrag.models.llm import SamplingParams
from finrag.retrieval.answer import LLMCall
from finrag.retrieval.systems.components import LLMEngine
from finrag.retrieval.systems.context import (NOT_FOUND, Block, answer_messages, cite, is_yes_no,
                                              states_nothing)
from finrag.retrieval.systems.figures import ScaledStream, unsupported, with_stated_scale
from finrag.retrieval.systems.found import Answered, Context, Found, Parts, found_blocks
from finrag.retrieval.systems.run import Run
from finrag.retrieval.systems.verdict import Calibration, Verdict, calibrate, decide, opened, verdict_in

OnText = Callable[[str], None]


class Generation:
    """The generator's side of a pipeline: its engine (loaded on first need), the settings of
    the answers and the meter its calls are charged by. ``calibrations``: each model's
    verdict calibration, worked out once."""

    def __init__(self, engine: Callable[[], LLMEngine], meter, settings,
                 calibrations: dict[str, Calibration] | None = None):
        self.engine, self.meter, self.settings = engine, meter, settings
        self.calibrations = {} if calibrations is None else calibrations

    def write(self, found: list[tuple[Run, Found]], on_text: OnText | None = None) -> None:
        """Each run's answer from what its recipe found. ``on_text`` (one answer only)
        receives the answer as it is written; what no call streams is sent whole."""
        stream = _Sent(on_text) if on_text is not None and len(found) == 1 else None
        needed = any(found_blocks(f) for _, f in found)
        engine = self.engine() if needed else None  # none loaded for answers that need none
        params = SamplingParams(max_tokens=self.settings.answer_tokens)
        batch: list[tuple[Run, Context]] = []
        for run, f in found:
            if isinstance(f, Answered):
                run.answer.answer = f.text
            elif isinstance(f, Parts) and len(f.parts) > 1:
                with self.meter.measure() as m, run.stage("generate"):
                    self.map_reduce(run, engine, params, f.parts, stream)
                run.readings.append((m.reading, 1))
            elif isinstance(f, Parts):
                batch.append((run, Context(f.parts)))
            elif not f.blocks:  # no passage: what the facts judged, else "not found"
                run.answer.answer = f.preface or nothing_found(run)
            else:
                batch.append((run, f))
        if batch:
            self.generate(batch, engine, params, stream)
        for run, f in found:
            if found_blocks(f):
                self.check(run, found_blocks(f), f.preface if isinstance(f, Context) else "")
        if stream is not None and not stream.sent and found[0][0].answer.answer:
            stream(found[0][0].answer.answer)

    def generate(self, batch: list[tuple[Run, Context]], engine: LLMEngine,
                 params: SamplingParams, stream: OnText | None) -> None:
        """One engine call over the batch's prompts; a lone prompt streams. A yes/no
        question's answer opens with the verdict read from its passages and is generated on
        from it."""
        verdicts = [self.verdict(run, engine, ctx) for run, ctx in batch]
        prompts = [opened(v) if v else answer_messages(run.answer.query, ctx.blocks)
                   for (run, ctx), v in zip(batch, verdicts)]
        with self.meter.measure() as m:
            if stream is not None and len(prompts) == 1:
                preface = batch[0][1].preface
                if preface:  # what the facts say comes first, as in the final answer
                    stream(preface + "\n")
                if verdicts[0]:
                    stream(verdicts[0].word)
                # figures streamed as the final answer writes them ("$3,793 million")
                scaled = ScaledStream(_lstripped(stream) if preface and not verdicts[0]
                                      else stream, [b.text for b in batch[0][1].blocks])
                completions = engine.generate(prompts, params, on_text=scaled)
                scaled.flush()
            else:
                completions = engine.generate(prompts, params)
        charge([run for run, _ in batch], completions, m.reading)
        for (run, ctx), completion, opening in zip(batch, completions, verdicts):
            run.add_time("generate", m.reading.seconds * 1000)
            run.call("generator", engine.model_id, completion)
            run.answer.answer = ((opening.word + completion.text) if opening
                                 else completion.text).strip()
            run.answer.citations = cite(run.answer.answer, ctx.blocks)

    def verdict(self, run: Run, engine: LLMEngine, ctx: Context) -> Verdict | None:
        """A yes/no question's verdict from its passages (``retrieval.systems.verdict``), its
        forward pass charged to the answer as a ``verdict`` call; None for any other question,
        one whose facts already judged it (the preface opens with Yes or No), or an engine
        that reads no next-token log-probabilities."""
        if (not self.settings.yes_no_verdicts or not is_yes_no(run.answer.query)
                or verdict_in(ctx.preface)):
            return None
        try:
            with self.meter.measure() as m:
                cal = self.calibrations.get(engine.model_id)
                if cal is None:
                    cal = self.calibrations[engine.model_id] = calibrate(engine)
                verdict = decide(engine, run.answer.query, ctx.blocks, cal)
        except NotImplementedError:
            return None
        ms = m.reading.seconds * 1000
        run.readings.append((m.reading, 1))
        run.add_time("verdict", ms)
        run.answer.calls.append(LLMCall("verdict", engine.model_id, verdict.prompt_tokens, 0,
                                        round(ms, 3)))
        run.answer.verdict = {"word": verdict.word, "margin": round(verdict.margin, 4),
                              "raw": round(verdict.raw, 4), "offset": round(cal.offset, 4),
                              "from": "passages"}
        return verdict

    def map_reduce(self, run: Run, engine: LLMEngine, params: SamplingParams,
                   parts: list[Block], stream: OnText | None = None) -> None:
        """SFR past the context limit, map then reduce: every part is asked the question with
        the answer prompt; the part answers that state something (``part_findings``) are the
        answer when there is one, and are read together by one more call when there are
        several (it streams); none → not found."""
        completions = engine.generate([answer_messages(run.answer.query, [b]) for b in parts],
                                      params)
        for completion in completions:
            run.call("generator", engine.model_id, completion)
        found = part_findings([c.text for c in completions], parts, engine.count_tokens,
                              self.settings.context_tokens)
        run.answer.retrieved["sfr_findings"] = [
            {"doc_id": f.doc_id, "first_page": f.first_page, "last_page": f.last_page,
             "answer": f.text} for f, _ in found]
        if not found:
            run.answer.answer, run.answer.citations = NOT_FOUND, []
            return
        if len(found) == 1:
            text = found[0][0].text
        else:
            # scaled as the final answer is, by the parts' own text (``check``)
            scaled = (ScaledStream(_lstripped(stream), [b.text for b in parts])
                      if stream is not None else None)
            [completion] = engine.generate(
                [answer_messages(run.answer.query, [f for f, _ in found])], params,
                **({"on_text": scaled} if scaled is not None else {}))
            if scaled is not None:
                scaled.flush()
            run.call("generator", engine.model_id, completion)
            text = completion.text.strip()
        run.answer.answer = text
        run.answer.citations = cite(text, [part for _, part in found])

    @staticmethod
    def check(run: Run, blocks: list[Block], preface: str) -> None:
        """A written answer's checks: every figure traced to what it was given, a figure
        written without a scale given its source's ("$3,793" from a table "(In millions)":
        "$3,793 million"), and what the facts say put first."""
        texts = [b.text for b in blocks]
        run.answer.unsupported_figures = unsupported(run.answer.answer, texts + [preface])
        run.answer.answer = with_stated_scale(run.answer.answer, texts)
        if preface:
            run.answer.answer = f"{preface}\n{run.answer.answer}"


def charge(runs: list[Run], completions: list, reading) -> None:
    """A shared engine call's energy: each answer's own where the model's side metered it,
    else its share of the call's window by its share of the call's tokens."""
    tokens = [c.prompt_tokens + c.completion_tokens for c in completions]
    total = sum(tokens)
    for run, completion, n in zip(runs, completions, tokens):
        if completion.energy is not None:
            run.readings.append((completion.energy, 1))
        else:
            run.readings.append((reading, n / total if len(runs) > 1 and total else 1))


def said_without_generator(found: Found) -> str:
    """What an answer says when nothing is generated (retrieval only): the facts' answer, or
    what they computed for a hybrid question."""
    if isinstance(found, Answered):
        return found.text
    return found.preface if isinstance(found, Context) else ""


def part_findings(answers: list[str], parts: list[Block], count: Callable[[str], int],
                  budget: int) -> list[tuple[Block, Block]]:
    """SFR's map step, kept: (finding, part) for each part whose answer states something (not
    ``states_nothing``), in document order, while the findings fit in ``budget`` tokens. A
    finding is a block holding the part's answer under the part's tag, so the reduce call reads
    and cites it like a passage."""
    out, used = [], 0
    for answer, part in zip(answers, parts):
        if states_nothing(answer):
            continue
        text = " ".join(answer.split())
        tokens = count(f"{part.tag}\n{text}")
        if used + tokens > budget:
            break
        out.append((Block(part.doc_id, part.first_page, part.last_page, text, tokens), part))
        used += tokens
    return out


def nothing_found(run: Run) -> str:
    """"Not found"; for a yes/no question, also what was looked for and where, so that no
    verdict is read into the lack of evidence."""
    if not is_yes_no(run.answer.query):
        return NOT_FOUND
    routed = run.answer.routing.doc_ids if run.answer.routing else []
    where = ", ".join(routed) if routed else "any filing this caller may read"
    return (f"{NOT_FOUND} No passage about \u201c{run.answer.query}\u201d was found in "
            f"{where}, so there is no evidence to answer Yes or No.")


class _Sent:
    """``on_text`` that remembers whether it was given anything."""

    def __init__(self, on_text: OnText):
        self.on_text, self.sent = on_text, False

    def __call__(self, piece: str) -> None:
        self.sent = True
        self.on_text(piece)


def _lstripped(on_text: OnText) -> OnText:
    """``on_text`` without the leading whitespace of the first pieces (the final answer's
    generated part is stripped the same way)."""
    started = False

    def emit(piece: str) -> None:
        nonlocal started
        if not started:
            piece = piece.lstrip()
            if not piece:
                return
            started = True
        on_text(piece)

    return emit
