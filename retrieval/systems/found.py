"""What a system's recipe found for a question, which decides what happens to it next:

- ``Answered``: the answer itself, made without the generator (from the facts, or a reply
  that no filing or fact covers the company asked about);
- ``Context``: the blocks the generator answers from, and what is said before its text (the
  figures the facts computed for a hybrid question);
- ``Parts``: whole filings in parts, each asked the question, the answers that state
  something read together by one more call (SFR past the context limit: map, then reduce).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from finrag.retrieval.systems.context import Block


@dataclass
class Answered:
    text: str


@dataclass
class Context:
    blocks: list[Block] = field(default_factory=list)
    preface: str = ""  # said before the generated text, and kept when nothing is generated


@dataclass
class Parts:
    parts: list[Block]


Found = Answered | Context | Parts


def found_blocks(found: Found) -> list[Block]:
    """The blocks a recipe's find puts before the generator (none for an answer)."""
    if isinstance(found, Context):
        return found.blocks
    if isinstance(found, Parts):
        return found.parts
    return []
