"""The house's floors (models ← retrieval ← serving ← benchmarks) and retrieval/'s rooms by
stage: imports only go one way (down), and no module imports itself back round a circle."""

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
}


def _room(module: str) -> str:
    part = module.split(".")[2]  # finrag.retrieval.<room>
    return {"documents": "records", "answer": "records"}.get(part, part)


def _edges():
    for path in sorted((REPO / "retrieval").rglob("*.py")):
        rel = path.relative_to(REPO).with_suffix("")
        if len(rel.parts) < 2 or rel.parts[1] == "__init__":
            continue
        here = _room(".".join(("finrag", *rel.parts)))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                if name.startswith("finrag.retrieval."):
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


# --- the whole house ---------------------------------------------------------------------------
FLOORS = ("models", "retrieval", "serving", "benchmarks")  # each may import those before it


def _house() -> dict[str, Path]:
    """Every module of the four floors, by its installed dotted name (``finrag.models.llm``;
    reports under benchmarks/ aside)."""
    found = {}
    for floor in FLOORS:
        for path in sorted((REPO / floor).rglob("*.py")):
            if "results" in path.relative_to(REPO).parts:
                continue
            parts = ["finrag", *path.relative_to(REPO).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """What a module imports anywhere in it (functions too), as dotted names; imports made
    for type checkers only (``if TYPE_CHECKING:``) do not run and are left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    names = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:  # `from package import module` imports the module
                full = f"{node.module}.{a.name}"
                names.add(full if full in modules else node.module)
    return names


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _floor(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "finrag" and parts[1] in FLOORS else None


def test_the_floors_import_only_downwards():
    modules = _house()
    edges = [(m, name) for m, path in modules.items() for name in _imports(path, modules)
             if _floor(name)]
    assert len(edges) > 350  # the walk found the imports it checks
    upward = [(m, name) for m, name in edges
              if FLOORS.index(_floor(name)) > FLOORS.index(_floor(m))]
    assert upward == []


def test_the_project_is_imported_only_as_finrag():
    """``import models`` would load a second copy of a module beside ``finrag.models`` (two
    registries, two caches, classes that are not each other), and fails once installed."""
    files = [*_house().values(), *sorted((REPO / "tests").rglob("*.py")), REPO / "__init__.py"]
    assert len(files) > 190
    bare = [(str(path.relative_to(REPO)), name) for path in files
            for name in _imports(path, {}) if name.split(".")[0] in FLOORS]
    assert bare == []


def test_no_module_imports_itself_back_round_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    modules = _house()
    graph = {m: {n for n in _imports(path, modules) if n in modules and n != m}
             for m, path in modules.items()}
    assert sum(map(len, graph.values())) > 350
    assert _cycles(graph) == []


def test_tests_live_in_folders_that_mirror_the_house():
    """tests/<floor>/ for each floor (and tests/deploy/ for deploy/); only the house-wide tests
    (this file, packaging) sit at the top. pytest imports test files by their base name, so no
    two may share one."""
    top = sorted(p.name for p in (REPO / "tests").glob("test_*.py"))
    assert top == ["test_layers.py", "test_packaging.py"], top
    folders = sorted(p.name for p in (REPO / "tests").iterdir()
                     if p.is_dir() and any(p.glob("test_*.py")))
    assert folders == sorted([*FLOORS, "deploy"]), folders
    names = [p.name for p in (REPO / "tests").rglob("test_*.py")]
    assert len(names) > 50 and len(names) == len(set(names))


def test_every_module_of_the_floors_is_at_most_600_lines():
    """A module past 600 lines holds more than one thing: split it by what it holds."""
    modules = _house()
    assert len(modules) > 150
    long = {m: n for m, path in modules.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 600}
    assert long == {}


def test_command_line_parsing_lives_in_serving_and_benchmarks():
    """argparse is the entry points' (serving/cli, benchmarks), never the core's: models/ and
    retrieval/ are called with values, not with parsed command lines."""
    modules = _house()
    core = {m: path for m, path in modules.items() if _floor(m) in ("models", "retrieval")}
    assert len(core) > 60
    parsing = sorted(m for m, path in core.items() if "argparse" in _imports(path, modules))
    assert parsing == []
