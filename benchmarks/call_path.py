"""``python -m finrag.benchmarks.call_path``: the path of one question through the code, traced
as it runs, not typed.

The demo corpus is indexed (MiniLM), a ``Pipeline`` is loaded on a profile (``tiny`` by
default: what is traced is which code runs, not what it says), and ``Pipeline.answer`` is run
on a question under ``sys.setprofile``. Every call of a ``finrag`` function (benchmarks aside)
is recorded with its caller; the report is the call tree to ``--depth`` levels, each function
once under its caller (``×N`` when called N times), and these counts:

- functions called and files they live in;
- file changes along the path (a caller in one file, its callee in another);
- returns to a file: a call into a file the path had left and comes back to;
- calls back into the entry file: below the entry point's own calls, a call into the file the
  path started in (the pipeline's module), the path coming back to where it began;
- the pipeline class's lines, and those of ``serving/app.py``'s ingress.

``--docs`` writes the tree into ``docs/design.md`` between its ``call-path`` markers, so the
path the design describes is the path the code takes. Report: ``benchmarks/results/<name>/``
(report.md, calls.json, files.png).
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from finrag.benchmarks import report as R

QUESTION = "How does Lumenfield Software describe its competition in fiscal 2023 and fiscal 2024?"
SKIP = ("finrag.benchmarks", "finrag.models.weights")
BEGIN, END = "<!-- call-path:begin -->", "<!-- call-path:end -->"


@dataclass
class Node:
    name: str  # "retrieval/systems/stages.py: retrieve"
    calls: int = 0
    children: dict[str, "Node"] = field(default_factory=dict)

    @property
    def file(self) -> str:
        return self.name.split(":")[0]


def _where(frame) -> str | None:
    module = frame.f_globals.get("__name__", "")
    if not module.startswith("finrag.") or module.startswith(SKIP):
        return None
    code = frame.f_code
    name = getattr(code, "co_qualname", code.co_name)
    if "<" in name:  # comprehensions, lambdas, generator expressions: their function holds them
        return None
    return f"{'/'.join(module.split('.')[1:])}.py: {name}"


def trace(fn, *args, **kwargs) -> Node:
    """Run ``fn`` and return the tree of the ``finrag`` functions it called (this thread)."""
    root = Node("<root>")
    stack: list[tuple[object, Node]] = []  # (frame, node) of finrag frames open

    def profile(frame, event, arg):
        if event == "call":
            name = _where(frame)
            if name is None:
                return
            parent = stack[-1][1] if stack else root
            node = parent.children.setdefault(name, Node(name))
            node.calls += 1
            stack.append((frame, node))
        elif event == "return" and stack and stack[-1][0] is frame:
            stack.pop()

    sys.setprofile(profile)
    try:
        fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return root


def lines(node: Node, depth: int, level: int = 0) -> list[str]:
    out = []
    for child in node.children.values():
        times = f" ×{child.calls}" if child.calls > 1 else ""
        out.append(f"{'  ' * level}- `{child.name}`{times}")
        if level + 1 < depth:
            out += lines(child, depth, level + 1)
    return out


def walk(node: Node, depth: int, level: int = 0):
    for child in node.children.values():
        yield level, node, child
        if level + 1 < depth:
            yield from walk(child, depth, level + 1)


def path_counts(root: Node, depth: int) -> dict[str, int]:
    """Functions, files, file changes and returns to a file along the tree, read in order."""
    nodes = list(walk(root, depth))
    files_in_order = [child.file for _, _, child in nodes]
    changes = sum(parent is not root and parent.file != child.file for _, parent, child in nodes)
    returns, seen, last = 0, set(), None
    for f in files_in_order:
        if f != last and f in seen:
            returns += 1
        seen.add(f)
        last = f
    # below the entry point's own calls (answer → answer_many → its calls), a call back into
    # the entry point's file: the path leaving the pipeline and coming back into it
    home = nodes[0][2].file if nodes else None
    back = sum(level >= 3 and child.file == home for level, _, child in nodes)
    return {"functions": len({c.name for _, _, c in nodes}), "files": len(set(files_in_order)),
            "file_changes": changes, "returns_to_a_file": returns,
            "calls_back_into_the_entry_file": back, "depth": depth}


def class_lines(path: Path, name: str) -> int | None:
    """Lines of class ``name`` in ``path`` (None when it is not there)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node.end_lineno - node.lineno + 1
    return None


def write_docs(tree_lines: list[str], counts: dict[str, int], command: str) -> None:
    doc = R.REPO / "docs" / "design.md"
    text = doc.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"docs/design.md has no {BEGIN} … {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    body = (f"{BEGIN}\nTraced by `{command}` ({counts['functions']} functions in "
            f"{counts['files']} files to depth {counts['depth']}; {counts['file_changes']} "
            f"calls from one file into another, {counts['returns_to_a_file']} returns to a file "
            f"the path had left, {counts['calls_back_into_the_entry_file']} calls back into "
            f"the pipeline's module below its own calls):\n\n" + "\n".join(tree_lines)
            + f"\n{END}")
    doc.write_text(head + body + tail, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m finrag.benchmarks.call_path",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--system", default="hdrr")
    ap.add_argument("--question", default=QUESTION)
    ap.add_argument("--depth", type=int, default=7)
    ap.add_argument("--name", default="call_path")
    ap.add_argument("--docs", action="store_true", help="write the tree into docs/design.md")
    args = ap.parse_args(argv)

    from finrag.models.embedders import load_embedder
    from finrag.retrieval.indexer import Ingestor
    from finrag.retrieval.systems.pipelines import Pipeline

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        # the demo corpus through its command: benchmarks never import the CLI's code
        subprocess.run([sys.executable, "-m", "finrag.serving.cli.demo_corpus", str(corpus)],
                       check=True, capture_output=True, timeout=600)
        ingestor = Ingestor(Path(tmp) / "index", load_embedder("minilm"),
                            metadata=corpus / "documents.jsonl")
        ingestor.run([corpus], progress=False)
        ingestor.close()
        pipe = Pipeline.load(Path(tmp) / "index", profile=args.profile)
        pipe.answer(args.question, args.system)  # models loaded and caches warmed: not traced
        pipe = Pipeline.load(Path(tmp) / "index", profile=args.profile)
        root = trace(pipe.answer, args.question, args.system)
        pipe.close()

    tree_lines = lines(root, args.depth)
    counts = path_counts(root, args.depth)
    sizes = {"Pipeline class": class_lines(R.REPO / "retrieval/systems/pipelines.py", "Pipeline"),
             "Ingress class": class_lines(R.REPO / "serving/app.py", "Ingress")}
    args.prog, args.argv = "python -m finrag.benchmarks.call_path", argv
    command = R.command_line(args)
    out = R.results_dir(args.name)
    per_file: dict[str, int] = {}
    for _, _, child in walk(root, args.depth):
        per_file[child.file] = per_file.get(child.file, 0) + 1
    (out / "calls.json").write_text(json.dumps(
        {"question": args.question, "system": args.system, "profile": args.profile,
         "counts": counts, "sizes": sizes, "per_file": per_file, "tree": tree_lines},
        indent=1) + "\n")
    _plot(per_file, out / "files.png")
    sized = "\n".join(f"| {k} | {v if v is not None else 'absent'} |" for k, v in sizes.items())
    (out / "report.md").write_text(
        f"# The path of a question\n\nCommand: `{command}`\n\nQuestion ({args.system}, profile "
        f"`{args.profile}`): {args.question}\n\n"
        f"| measure | value |\n|---|---:|\n"
        + "\n".join(f"| {k.replace('_', ' ')} | {v} |" for k, v in counts.items())
        + f"\n\n| lines of | |\n|---|---:|\n{sized}\n\n"
        f"Functions called along the path, by file: ![calls by file](files.png)\n\n"
        f"## The calls\n\nEach function once under its caller, in the order first called "
        f"(×N: called N times there), to depth {args.depth}.\n\n" + "\n".join(tree_lines) + "\n")
    if args.docs:
        write_docs(tree_lines, counts, command)
    print(f"wrote {R.shown_path(out / 'report.md')}: " + ", ".join(
        f"{k} {v}" for k, v in counts.items()))
    return 0


def _plot(per_file: dict[str, int], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    items = sorted(per_file.items(), key=lambda kv: kv[1])
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(items) + 1.2))
    ax.barh([k for k, _ in items], [v for _, v in items], color="#4c72b0")
    ax.set_xlabel("functions on the path")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
