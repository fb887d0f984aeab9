"""The RayService serves the published snapshots from their volume, and places and scales the
Retriever and the Generator apart (deploy/kuberay-rayservice.yaml), and the publish Job
(deploy/kuberay-publish-job.yaml) is the one writer of that volume.

Each rule is a function that lists what a manifest breaks; the manifests must break none, and
each rule is shown to catch a change that breaks it. Where a replica can run is decided as Ray's
autoscaler decides it: from each worker group's resources as Ray 2.60's KubeRay autoscaler reads
them (CPU and memory from the container's limits, GPUs from nvidia.com/gpu, the group's custom
`resources`), against what each deployment's replica asks for (``AppConfig.options``, with the
profile's GPU shares). Nothing here starts Kubernetes or Ray."""

from __future__ import annotations

import copy
import shlex
from pathlib import Path, PurePosixPath

import pytest
import yaml
from ray.autoscaler._private.kuberay.autoscaling_config import _get_ray_resources_from_group_spec

from deploy import crd_check
from finrag.retrieval.store.snapshot import CACHE_ENV
from finrag.serving.config import DEPLOYMENTS, AppConfig, ServeFile

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S = DEPLOY / "kuberay-rayservice.yaml"
JOB = DEPLOY / "kuberay-publish-job.yaml"
PUBLISHED = "/var/lib/finrag/published"
SOURCE_INDEX = "/var/lib/finrag/index"


@pytest.fixture(autouse=True)
def _packaged_profiles(monkeypatch):
    """The packaged profiles, not whatever FINRAG_* this shell has set."""
    import os

    for name in list(os.environ):
        if name.startswith("FINRAG_"):
            monkeypatch.delenv(name)


# --- reading the manifests -----------------------------------------------------------------

def docs_of(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def one(docs: list[dict], kind: str) -> dict:
    found = [d for d in docs if d.get("kind") == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def claims(docs: list[dict]) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == "PersistentVolumeClaim"}


def app_config(docs: list[dict]) -> AppConfig:
    """The Serve config the RayService carries, read by the app's own model."""
    text = one(docs, "RayService")["spec"]["serveConfigV2"]
    return ServeFile.model_validate(yaml.safe_load(text)).app_config()


def groups(docs: list[dict]) -> list[tuple[str, dict, bool]]:
    """(name, group spec, is_head) of every Ray pod group."""
    cluster = one(docs, "RayService")["spec"]["rayClusterConfig"]
    return [("head", cluster["headGroupSpec"], True)] + [
        (g["groupName"], g, False) for g in cluster["workerGroupSpecs"]]


def pod(spec: dict) -> dict:
    return spec["template"]["spec"]


def holder(mounts: list[dict], path: str) -> dict | None:
    """The mount a path is read through (the deepest mount path above it)."""
    path = PurePosixPath(path)
    at = {id(m): PurePosixPath(m["mountPath"]) for m in mounts}
    above = [m for m in mounts if path == at[id(m)] or at[id(m)] in path.parents]
    return max(above, key=lambda m: len(at[id(m)].parts), default=None)


def offered(spec: dict, is_head: bool) -> dict[str, float]:
    """The Ray resources of one pod of the group, as the KubeRay autoscaler reads them."""
    return {k: float(v) for k, v in _get_ray_resources_from_group_spec(spec, is_head).items()}


def asked(cfg: AppConfig, name: str) -> dict[str, float]:
    """The Ray resources one replica of a deployment asks for."""
    from finrag.models.profiles import load_config

    actor = cfg.options(name, load_config().active(cfg.profile))["ray_actor_options"]
    want = {"CPU": float(actor.get("num_cpus", 1)), "GPU": float(actor.get("num_gpus") or 0)}
    want.update({k: float(v) for k, v in (actor.get("resources") or {}).items()})
    return {k: v for k, v in want.items() if v > 0}


def placements(docs: list[dict]) -> dict[str, set[str]]:
    """Deployment -> the groups one of its replicas fits on."""
    cfg = app_config(docs)
    offers = {name: offered(spec, head) for name, spec, head in groups(docs)}
    return {d: {g for g, offer in offers.items()
                if all(offer.get(k, 0) >= v for k, v in asked(cfg, d).items())}
            for d in DEPLOYMENTS}


def scale(cfg: AppConfig, name: str) -> tuple[int, int]:
    """(min, max) replicas of a deployment."""
    options = cfg.options(name)
    if options.get("autoscaling_config"):
        auto = options["autoscaling_config"]
        return int(auto.get("min_replicas", 1)), int(auto["max_replicas"])
    n = options.get("num_replicas", 1)
    return n, n


# --- the rules -----------------------------------------------------------------------------

def index_problems(docs: list[dict]) -> list[str]:
    """The app's index is a publish root on a shared volume that the Ray pods read."""
    cfg = app_config(docs)
    problems = []
    if cfg.index != PUBLISHED:
        problems.append(f"index is {cfg.index!r}, not the publish root {PUBLISHED}")
    for group, spec, _ in groups(docs):
        for c in pod(spec)["containers"]:
            env = {e["name"]: e.get("value") for e in c.get("env", [])}
            if env.get("FINRAG_INDEX") != cfg.index:
                problems.append(f"{group}: FINRAG_INDEX is {env.get('FINRAG_INDEX')!r}, not "
                                f"the Serve config's index {cfg.index!r}")
    return problems


def snapshot_volume_problems(docs: list[dict]) -> list[str]:
    """In every Ray pod the index is read through a mount of a shared volume claim, read-only
    both in the mount and in the pod's volume."""
    cfg, pvcs = app_config(docs), claims(docs)
    problems = []
    for group, spec, _ in groups(docs):
        volumes = {v["name"]: v for v in pod(spec).get("volumes", [])}
        for c in pod(spec)["containers"]:
            mount = holder(c.get("volumeMounts", []), cfg.index or "")
            if mount is None:
                problems.append(f"{group}: nothing mounted at the index {cfg.index}")
                continue
            source = volumes.get(mount["name"], {}).get("persistentVolumeClaim")
            if source is None or source.get("claimName") not in pvcs:
                problems.append(f"{group}: the index is not on a volume claim of the manifest")
                continue
            if mount.get("readOnly") is not True:
                problems.append(f"{group}: the snapshot volume is mounted read-write")
            if source.get("readOnly") is not True:
                problems.append(f"{group}: the pod's snapshot volume is not readOnly")
            if "ReadWriteMany" not in pvcs[source["claimName"]]["spec"]["accessModes"]:
                problems.append(f"{group}: the snapshot claim is not ReadWriteMany (read on "
                                f"every node, written by the publish Job)")
    return problems


def cache_problems(docs: list[dict]) -> list[str]:
    """Wherever a replica can run, $FINRAG_SNAPSHOT_CACHE names a folder on the pod's own disk
    (an emptyDir), outside the read-only snapshot volume."""
    cfg = app_config(docs)
    serving = set().union(*placements(docs).values())
    problems = [] if serving else ["no group can hold a replica"]
    for group, spec, _ in groups(docs):
        if group not in serving:
            continue
        volumes = {v["name"]: v for v in pod(spec).get("volumes", [])}
        for c in pod(spec)["containers"]:
            cache = {e["name"]: e.get("value") for e in c.get("env", [])}.get(CACHE_ENV)
            if not cache:
                problems.append(f"{group}: replicas run here without ${CACHE_ENV}")
                continue
            mount = holder(c.get("volumeMounts", []), cache)
            if mount is None or "emptyDir" not in volumes.get(mount["name"], {}):
                problems.append(f"{group}: ${CACHE_ENV}={cache} is not on an emptyDir")
            elif mount.get("readOnly"):
                problems.append(f"{group}: ${CACHE_ENV}={cache} is mounted read-only")
            index_mount = holder(c.get("volumeMounts", []), cfg.index or "")
            if index_mount is not None and mount is index_mount:
                problems.append(f"{group}: ${CACHE_ENV} is on the snapshot volume")
    return problems


def placement_problems(docs: list[dict]) -> list[str]:
    """The Retriever runs on CPU workers only, the Generator on GPU workers only, and each
    group can hold its deployment at full scale."""
    cfg, where = app_config(docs), placements(docs)
    offers = {name: offered(spec, head) for name, spec, head in groups(docs)}
    gpu_groups = {g for g, o in offers.items() if o.get("GPU", 0) > 0}
    problems = []
    for name, want_gpu in (("Retriever", False), ("Generator", True)):
        if not where[name]:
            problems.append(f"{name}: no group can hold a replica")
        elif want_gpu and not where[name] <= gpu_groups:
            problems.append(f"{name}: may run on {sorted(where[name] - gpu_groups)} (no GPU)")
        elif not want_gpu and where[name] & gpu_groups:
            problems.append(f"{name}: may run on GPU workers {sorted(where[name] & gpu_groups)}")
    if where["Retriever"] & where["Generator"]:
        shared = sorted(where["Retriever"] & where["Generator"])
        problems.append(f"Retriever and Generator share {shared}")
    # the Retriever's groups hold all its replicas at full scale (whole CPUs, one group's pods)
    specs = {name: spec for name, spec, _ in groups(docs)}
    want = asked(cfg, "Retriever")
    room = 0
    for g in where["Retriever"]:
        per_pod = min(int(offers[g][k] // v) for k, v in want.items())
        room += per_pod * specs[g].get("maxReplicas", 0)
    if room < scale(cfg, "Retriever")[1]:
        problems.append(f"Retriever: max_replicas {scale(cfg, 'Retriever')[1]}, room for {room}")
    return problems


def scaling_problems(docs: list[dict]) -> list[str]:
    """The Retriever and the Generator scale each by its own settings."""
    cfg = app_config(docs)
    retriever, generator = cfg.options("Retriever"), cfg.options("Generator")
    problems = []
    for name, options in (("Retriever", retriever), ("Generator", generator)):
        if not options.get("autoscaling_config"):
            problems.append(f"{name}: no autoscaling_config of its own")
    if retriever.get("autoscaling_config") == generator.get("autoscaling_config"):
        problems.append("Retriever and Generator scale by the same settings")
    if retriever["ray_actor_options"].get("resources") == \
            generator["ray_actor_options"].get("resources"):
        problems.append("Retriever and Generator ask for the same custom resources")
    return problems


def job_problems(service: list[dict], job_docs: list[dict]) -> list[str]:
    """The publish Job writes the served publish root from the source index: read-write on the
    same claim the Ray pods mount read-only; the source index's claim is not in any Ray pod."""
    cfg, job = app_config(service), one(job_docs, "Job")
    spec = job["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    problems = []
    (c,) = spec["containers"]
    argv = c.get("command", []) + c.get("args", [])
    if argv[:2] != ["finrag", "publish"]:
        return [f"the Job runs {shlex.join(argv)}, not finrag publish"]
    opts = dict(zip(argv[2::2], argv[3::2]))
    if opts.get("--to") != cfg.index:
        problems.append(f"the Job publishes to {opts.get('--to')}, the app serves {cfg.index}")
    if opts.get("--index") != SOURCE_INDEX:
        problems.append(f"the Job publishes {opts.get('--index')}, not {SOURCE_INDEX}")
    served_claims, served = set(), None
    for group, gspec, _ in groups(service):
        gvolumes = {v["name"]: v for v in pod(gspec).get("volumes", [])}
        for gc in pod(gspec)["containers"]:
            for m in gc.get("volumeMounts", []):
                pvc = gvolumes.get(m["name"], {}).get("persistentVolumeClaim")
                if pvc:
                    served_claims.add(pvc["claimName"])
                    if m["mountPath"] == cfg.index:
                        served = pvc["claimName"]
    for path, role in ((opts.get("--to"), "publish root"), (opts.get("--index"), "source index")):
        mount = holder(c.get("volumeMounts", []), path or "")
        pvc = volumes.get(mount["name"], {}).get("persistentVolumeClaim") if mount else None
        if pvc is None:
            problems.append(f"the Job's {role} {path} is not on a volume claim")
            continue
        if mount.get("readOnly") or pvc.get("readOnly"):
            problems.append(f"the Job's {role} is mounted read-only")
        if pvc["claimName"] not in claims(service):
            problems.append(f"the Job's {role} claim {pvc['claimName']} is not in {K8S.name}")
        if role == "publish root" and pvc["claimName"] != served:
            problems.append(f"the Job writes claim {pvc['claimName']}, the app reads {served}")
        if role == "source index" and pvc["claimName"] in served_claims:
            problems.append(f"the Ray pods mount the source index's claim {pvc['claimName']}")
    return problems


# --- the manifests keep them ---------------------------------------------------------------

def test_serve_config_parses_and_serves_the_publish_root():
    service = docs_of(K8S)
    cfg = app_config(service)
    assert isinstance(cfg, AppConfig) and cfg.index == PUBLISHED
    assert index_problems(service) == []


@pytest.mark.parametrize("rule", [snapshot_volume_problems, cache_problems, placement_problems,
                                  scaling_problems], ids=lambda f: f.__name__)
def test_rayservice_keeps_the_rule(rule):
    assert rule(docs_of(K8S)) == []


def test_replicas_are_placed_by_worker_group():
    where = placements(docs_of(K8S))
    assert where["Retriever"] == {"cpu"} and where["Generator"] == {"gpu"}
    assert "head" not in set().union(*where.values()), "the head runs no replica (num-cpus 0)"
    for name in ("Router", "Embedder", "LightReranker", "LargeReranker"):
        assert where[name] == {"gpu"}, name  # their GPU shares


def test_publish_job_writes_what_the_app_reads():
    assert job_problems(docs_of(K8S), docs_of(JOB)) == []
    job = one(docs_of(JOB), "Job")
    assert job["metadata"].get("generateName") and "name" not in job["metadata"], \
        "a new Job for each `kubectl create -f`"
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"


def test_the_publish_job_runs_unprivileged():
    spec = one(docs_of(JOB), "Job")["spec"]["template"]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    for c in spec["containers"]:
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
        assert sc["readOnlyRootFilesystem"] is True
        assert "/tmp" in {m["mountPath"] for m in c["volumeMounts"]}
        assert c["image"] in {gc["image"] for _, g, _ in groups(docs_of(K8S))
                              for gc in pod(g)["containers"]}, "the RayService's image"


def test_the_runbook_names_the_manifests_paths():
    text = (DEPLOY.parent / "docs" / "deployment.md").read_text()
    for needed in (PUBLISHED, CACHE_ENV, JOB.name, "finrag_cpu_worker", "finrag_gpu_worker"):
        assert needed in text, needed


# --- each rule catches a manifest that breaks it -------------------------------------------

def _group(docs: list[dict], name: str) -> dict:
    return next(spec for g, spec, _ in groups(docs) if g == name)


def _container(docs: list[dict], name: str) -> dict:
    return pod(_group(docs, name))["containers"][0]


def _serve_args(docs: list[dict], change) -> None:
    service = one(docs, "RayService")
    serve = yaml.safe_load(service["spec"]["serveConfigV2"])
    change(serve["applications"][0]["args"])
    service["spec"]["serveConfigV2"] = yaml.safe_dump(serve)


def _own_copy(container: dict, key: str) -> list:
    """The container's own copy of a list the YAML shares between groups (an anchor)."""
    container[key] = copy.deepcopy(container[key])
    return container[key]


def _set_mount(docs, group, path, **fields):
    for m in _own_copy(_container(docs, group), "volumeMounts"):
        if m["mountPath"] == path:
            m.update(fields)


def _drop_env(docs, group, name):
    c = _container(docs, group)
    c["env"] = [e for e in copy.deepcopy(c["env"]) if e["name"] != name]


def _pvc_volume(docs, group, claim):
    return next(v for v in pod(_group(docs, group))["volumes"]
                if v.get("persistentVolumeClaim", {}).get("claimName") == claim)


BREAKS = {
    "index is a folder, not the root": (index_problems, lambda d: _serve_args(
        d, lambda a: a.update(index="/data/index")), "not the publish root"),
    "FINRAG_INDEX elsewhere on a worker": (index_problems, lambda d: [
        e.update(value="/data/index") for e in _own_copy(_container(d, "cpu"), "env")
        if e["name"] == "FINRAG_INDEX"], "cpu: FINRAG_INDEX is '/data/index'"),
    "a worker mounts the snapshots read-write": (
        snapshot_volume_problems, lambda d: _set_mount(d, "gpu", PUBLISHED, readOnly=False),
        "gpu: the snapshot volume is mounted read-write"),
    "the pod's claim is not readOnly": (
        snapshot_volume_problems,
        lambda d: _pvc_volume(d, "cpu", "finrag-published")["persistentVolumeClaim"].pop(
            "readOnly"), "cpu: the pod's snapshot volume is not readOnly"),
    "the head mounts no snapshots": (
        snapshot_volume_problems, lambda d: _own_copy(_container(d, "head"), "volumeMounts").pop(0),
        "head: nothing mounted at the index"),
    "the snapshot claim is one node's": (
        snapshot_volume_problems, lambda d: claims(d)["finrag-published"]["spec"].update(
            accessModes=["ReadWriteOnce"]), "not ReadWriteMany"),
    "no cache where the Retriever runs": (
        cache_problems, lambda d: _drop_env(d, "cpu", CACHE_ENV),
        f"cpu: replicas run here without ${CACHE_ENV}"),
    "the cache on the snapshot volume": (
        cache_problems, lambda d: [e.update(value=PUBLISHED + "/cache") for e in _own_copy(
            _container(d, "gpu"), "env") if e["name"] == CACHE_ENV], "not on an emptyDir"),
    "the Retriever may land on GPU workers": (
        placement_problems, lambda d: _serve_args(d, lambda a: a["deployments"]["Retriever"][
            "ray_actor_options"].pop("resources")), "Retriever: may run on GPU workers ['gpu']"),
    "the Generator asks for the CPU workers": (
        placement_problems, lambda d: _serve_args(d, lambda a: a["deployments"]["Generator"][
            "ray_actor_options"].update(resources={"finrag_cpu_worker": 1})),
        "Generator: no group can hold a replica"),
    "the CPU workers too few": (
        placement_problems, lambda d: _group(d, "cpu").update(maxReplicas=1),
        "Retriever: max_replicas 8, room for 4"),
    "the Retriever scaled as the Generator": (
        scaling_problems, lambda d: _serve_args(d, lambda a: a["deployments"]["Retriever"].update(
            autoscaling_config=a["deployments"]["Generator"]["autoscaling_config"])),
        "scale by the same settings"),
}


@pytest.mark.parametrize("case", list(BREAKS))
def test_each_rule_catches_a_manifest_that_breaks_it(case):
    rule, change, error = BREAKS[case]
    docs = copy.deepcopy(docs_of(K8S))
    assert rule(docs) == []
    change(docs)
    problems = rule(docs)
    assert any(error in p for p in problems), problems


JOB_BREAKS = {
    "publishes elsewhere": (lambda c, v: c["command"].__setitem__(
        c["command"].index("--to") + 1, "/var/lib/finrag/other"), "the Job publishes to"),
    "the root mounted read-only": (lambda c, v: [m.update(readOnly=True) for m in c[
        "volumeMounts"] if m["mountPath"] == PUBLISHED], "publish root is mounted read-only"),
    "another claim": (lambda c, v: [x["persistentVolumeClaim"].update(claimName="finrag-models")
                                    for x in v if x["name"] == "finrag-published"],
                      "the Job writes claim finrag-models"),
    "the source in the Ray pods": (lambda c, v: [x["persistentVolumeClaim"].update(
        claimName="finrag-published") for x in v if x["name"] == "finrag-index"],
        "the Ray pods mount the source index's claim"),
}


@pytest.mark.parametrize("case", list(JOB_BREAKS))
def test_the_job_rule_catches_a_job_that_breaks_it(case):
    change, error = JOB_BREAKS[case]
    job_docs = copy.deepcopy(docs_of(JOB))
    spec = one(job_docs, "Job")["spec"]["template"]["spec"]
    change(spec["containers"][0], spec["volumes"])
    problems = job_problems(docs_of(K8S), job_docs)
    assert any(error in p for p in problems), problems


# --- KubeRay's schema, for the Job's pod too -------------------------------------------------

def test_publish_jobs_pod_template_accepted_by_kuberays_pod_schema(kuberay_crd):
    """The Job's pod template against the PodTemplateSpec schema the RayService CRD carries
    (the same Kubernetes API types): unknown fields and wrong types, by path. The Job's own
    fields (batch/v1) are not checked here."""
    version = next(v for v in kuberay_crd["spec"]["versions"] if v["name"] == "v1")
    raw = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "rayClusterConfig"]["properties"]["headGroupSpec"]["properties"]["template"]
    import jsonschema

    template = one(docs_of(JOB), "Job")["spec"]["template"]
    errors = [m for e in jsonschema.Draft7Validator(crd_check.structural(raw)).iter_errors(template)
              for m in crd_check.messages(e)]
    assert errors == []
    broken = copy.deepcopy(template)
    broken["spec"]["containers"][0]["volumeMount"] = broken["spec"]["containers"][0].pop(
        "volumeMounts")
    errors = [m for e in jsonschema.Draft7Validator(crd_check.structural(raw)).iter_errors(broken)
              for m in crd_check.messages(e)]
    assert "spec.containers[0].volumeMount: unknown field" in errors
