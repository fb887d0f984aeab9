"""retrieval/ is built in rooms by stage, and imports between rooms only go one way (down)."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Each room may import the rooms listed after it (and itself); nothing may import upwards.
ALLOWED = {
    "records": set(),  # retrieval/documents.py and retrieval/answer.py
    "routing": {"records"},
    "store": {"records"},
    "ingest": {"records", "routing"},
    "facts": {"records", "routing", "ingest"},
    "systems": {"records", "routing", "store", "facts"},
    "indexer": {"records", "routing", "store", "ingest", "facts"},
    "demo": set(),
}


def _room(module: str) -> str:
    part = module.split(".")[1]
    return {"documents": "records", "answer": "records"}.get(part, part)


def _edges():
    for path in sorted((REPO / "retrieval").rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        if len(rel.parts) < 2 or rel.parts[1] == "__init__":
            continue
        here = _room(".".join(rel.parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                if name.startswith("retrieval."):
                    yield str(rel), here, _room(name)


def test_every_module_lives_in_a_known_room():
    rooms = {here for _, here, _ in _edges()}
    assert rooms and rooms <= set(ALLOWED), rooms - set(ALLOWED)
    top = sorted(p.name for p in (REPO / "retrieval").glob("*.py"))
    assert top == ["__init__.py", "answer.py", "documents.py", "indexer.py"], top


def test_imports_between_rooms_go_one_way():
    edges = list(_edges())
    assert len(edges) > 50  # the walk found the imports it checks
    bad = [(f, here, there) for f, here, there in edges
           if there != here and there not in ALLOWED[here]]
    assert bad == []
