"""finrag installs as one package, ``finrag``: the wheel holds nothing else, a fresh venv imports
its public surface from the wheel (not from this checkout), and its data files travel with it."""

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FLOORS = ("models", "retrieval", "serving", "benchmarks")


def _tree_packages() -> set[str]:
    found = {"finrag"}
    for floor in FLOORS:
        for init in (REPO / floor).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO)
            if "results" not in rel.parts:
                found.add(".".join(("finrag", *rel.parts)))
    return found


def test_pyproject_lists_every_package_of_the_tree():
    tool = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert tool["package-dir"] == {"finrag": "."}
    assert set(tool["packages"]) == _tree_packages()
    assert len(tool["packages"]) > 10


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the working tree (a build writes into its source)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "__init__.py"):
        shutil.copy2(REPO / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "results", "*.pyc")
    for floor in FLOORS:
        shutil.copytree(REPO / floor, src / floor, ignore=skip)
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                          "--no-index", "-q", "-w", str(tmp / "dist"), str(src)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    (built,) = (tmp / "dist").glob("finrag-*.whl")
    return built


def test_the_wheel_holds_only_finrag_with_its_data(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"finrag", f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info"}
    for data in ("finrag/__init__.py", "finrag/models/profiles.yaml",
                 "finrag/models/weights-requirements.txt", "finrag/serving/web/index.html",
                 "finrag/retrieval/data/companies.yaml", "finrag/serving/cli/__main__.py",
                 "finrag/benchmarks/data/profiles_generator.yaml"):
        assert data in names, data
    assert not [n for n in names if "/tests/" in n or "/results/" in n or n.endswith(".pyc")]
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "finrag = finrag.serving.cli:main" in entry_points
    assert "bench = finrag.benchmarks.cli:add_parser" in entry_points


@pytest.mark.slow
def test_a_fresh_venv_imports_finrag_from_the_wheel(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                                "'purelib'))"], capture_output=True, text=True,
                               check=True).stdout.strip())
    before = set(os.listdir(site))
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, timeout=300)
    added = set(os.listdir(site)) - before
    assert added == {"finrag", "finrag-0.1.0.dist-info"}, added  # no generic top-level names

    # finrag's dependencies from this venv's site-packages: a PYTHONPATH entry, whose .pth
    # files (the editable install of this checkout among them) are not read
    env = {**os.environ, "PYTHONPATH": sysconfig.get_path("purelib"), "HF_HUB_OFFLINE": "1"}
    code = ("import sys, finrag\n"
            "assert 'torch' not in sys.modules and 'ray' not in sys.modules\n"
            "from finrag import Pipeline, Answer, SamplingParams, build_app\n"
            "from finrag.models.profiles import load_config\n"
            "p = load_config(env={}).active('cpu')\n"
            "print(finrag.__file__, finrag.__version__, Pipeline.__module__, p.name)")
    res = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    where, version, module, profile = res.stdout.split()
    assert Path(where).is_relative_to(site) and not Path(where).is_relative_to(REPO)
    assert (version, module, profile) == ("0.1.0", "finrag.retrieval.systems.pipelines", "cpu")
    bench = subprocess.run([str(venv / "bin" / "finrag"), "bench", "--help"], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=300)
    assert bench.returncode == 0 and "usage: finrag bench" in bench.stdout, bench.stderr
