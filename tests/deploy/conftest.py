"""The KubeRay RayService CRD that tests/deploy checks the manifests against."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from deploy import crd_check

KUBERAY_SETUP = Path(__file__).resolve().parents[2] / "deploy" / "setup-kuberay-crd.sh"
# read at import, before the tests' autouse fixtures clear FINRAG_* for each test
KUBERAY_CRD_FILE = os.environ.get("FINRAG_KUBERAY_CRD")
REQUIRE_KUBERAY = os.environ.get("FINRAG_REQUIRE_KUBERAY") == "1"


@pytest.fixture(scope="session")
def kuberay_crd() -> dict:
    """KubeRay's RayService CRD: the file FINRAG_KUBERAY_CRD names (a release's, or `kubectl get
    crd rayservices.ray.io -o yaml` from a cluster), else the one in the operator's Go module at
    the version deploy/setup-kuberay-crd.sh pins. Without either the tests that need it skip,
    saying why; FINRAG_REQUIRE_KUBERAY=1 fails them instead."""
    if KUBERAY_CRD_FILE:
        path, why = Path(KUBERAY_CRD_FILE), f"FINRAG_KUBERAY_CRD={KUBERAY_CRD_FILE} is no file"
    else:
        run = subprocess.run(["bash", str(KUBERAY_SETUP), "--no-install"], capture_output=True,
                             text=True, timeout=300)
        lines = run.stdout.strip().splitlines()
        path = Path(lines[-1]) if run.returncode == 0 and lines else None
        why = run.stderr.strip() or f"{KUBERAY_SETUP.name} exited {run.returncode}"
    if path is None or not path.is_file():
        if REQUIRE_KUBERAY:
            pytest.fail(f"no KubeRay CRD: {why}")
        pytest.skip(f"no KubeRay CRD (deploy/setup-kuberay-crd.sh, FINRAG_KUBERAY_CRD): {why}")
    crd = crd_check.load_crd(path)
    assert crd["metadata"]["name"] == "rayservices.ray.io", path
    return crd
