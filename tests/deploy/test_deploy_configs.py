"""The files in deploy/ agree with ``serving.config.AppConfig``, with Ray Serve's own config
schema and with each other: gpu.yaml and the RayService's serveConfigV2 carry the same
application (only ``index`` and the Retriever's and Generator's placement and scaling differ),
and the image installs the ``gpu`` extra only. The RayService's published-snapshot volume and
worker groups: tests/deploy/test_kuberay_published.py.

Nothing here starts Ray: ``build_app`` only composes the application (``.options``/``.bind``),
which is where Serve validates each deployment's placement and scaling settings."""

from __future__ import annotations

import copy
import importlib
import math
import os
import re
import shlex
from pathlib import Path

import pytest
import ray
import yaml
from pydantic import ValidationError
from ray.serve.config import AutoscalingConfig
from ray.serve.deployment import Application
from ray.serve.schema import RayActorOptionsSchema, ServeDeploySchema

from deploy import crd_check
from finrag.serving.config import DEPLOYMENTS, AppConfig, ServeFile, load_serve_file

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
CPU, GPU = DEPLOY / "cpu.yaml", DEPLOY / "gpu.yaml"
K8S = DEPLOY / "kuberay-rayservice.yaml"
PUBLISHED = "/var/lib/finrag/published"  # the publish root the RayService serves
DOCKERFILE = DEPLOY / "Dockerfile.gpu"
KUBERAY_SETUP = DEPLOY / "setup-kuberay-crd.sh"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
VLLM_KINDS = {"llm", "llm-scorer", "llm-listwise"}


@pytest.fixture(autouse=True)
def _packaged_profiles(monkeypatch):
    """Check against the packaged profiles, not whatever FINRAG_* this shell has set."""
    import os

    for name in list(os.environ):
        if name.startswith("FINRAG_"):
            monkeypatch.delenv(name)


# --- helpers -------------------------------------------------------------------------------

def k8s_docs() -> list[dict]:
    return [d for d in yaml.safe_load_all(K8S.read_text()) if d is not None]


def k8s_object(kind: str) -> dict:
    found = [d for d in k8s_docs() if d.get("kind") == kind]
    assert len(found) == 1, f"expected one {kind} in {K8S.name}, found {len(found)}"
    return found[0]


def rayservice_serve() -> dict:
    text = k8s_object("RayService")["spec"]["serveConfigV2"]
    assert isinstance(text, str), "serveConfigV2 is a YAML string (`serveConfigV2: |`)"
    return yaml.safe_load(text)


def serve_configs() -> dict[str, dict]:
    """Every Serve config in deploy/, raw: the two files and the RayService's serveConfigV2."""
    return {CPU.name: yaml.safe_load(CPU.read_text()), GPU.name: yaml.safe_load(GPU.read_text()),
            f"{K8S.name}:serveConfigV2": rayservice_serve()}


def finrag_app(serve: dict) -> dict:
    return ServeFile.model_validate(serve).finrag_apps()[0]


def built_deployments(app: Application) -> dict:
    """The deployments an application is composed of (ingress first), by name."""
    out, todo = {}, [app]
    while todo:
        deployment = todo.pop(0)._bound_deployment
        out[deployment.name] = deployment
        bound = [*deployment.init_args, *(getattr(deployment, "init_kwargs", None) or {}).values()]
        todo += [a for a in bound if isinstance(a, Application)]
    return out


def num_gpus(options: dict | None) -> float:
    return float(((options or {}).get("ray_actor_options") or {}).get("num_gpus") or 0)


def max_replicas(options: dict) -> int:
    if options.get("autoscaling_config"):
        return int(options["autoscaling_config"]["max_replicas"])
    n = options.get("num_replicas", 1)
    return n if isinstance(n, int) else 1


def gpus_needed(cfg: AppConfig, scale=max_replicas) -> int:
    """GPUs the app asks for at a scale (one GPU a pod): whole-GPU replicas one each, the
    fractional ones packed together."""
    from finrag.models.profiles import load_config

    profile = load_config().active(cfg.profile)
    whole, fractional = 0, 0.0
    for name in DEPLOYMENTS:
        options = cfg.options(name, profile)
        gpus = num_gpus(options)
        if gpus >= 1:
            whole += math.ceil(gpus) * scale(options)
        else:
            fractional += gpus * scale(options)
    return whole + math.ceil(fractional - 1e-9)


def keys_named(tree, key: str) -> list:
    """Every value stored under ``key`` anywhere in a parsed YAML tree."""
    found = []
    if isinstance(tree, dict):
        for k, v in tree.items():
            if k == key:
                found.append(v)
            found += keys_named(v, key)
    elif isinstance(tree, list):
        for v in tree:
            found += keys_named(v, key)
    return found


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    lines, current = [], ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        word, _, rest = current.partition(" ")
        lines.append((word.upper(), rest.strip()))
        current = ""
    return lines


def containers(spec: dict) -> list[dict]:
    return spec["template"]["spec"]["containers"]


def cluster_groups() -> list[tuple[str, dict]]:
    cluster = k8s_object("RayService")["spec"]["rayClusterConfig"]
    return [("head", cluster["headGroupSpec"])] + [
        (g["groupName"], g) for g in cluster["workerGroupSpecs"]]


# --- every file parses and is accepted -----------------------------------------------------

@pytest.mark.parametrize("path", sorted(DEPLOY.glob("*.y*ml")), ids=lambda p: p.name)
def test_every_yaml_parses(path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    assert docs and all(isinstance(d, dict) for d in docs)


def test_the_deploy_files_are_there():
    assert {CPU.name, GPU.name, K8S.name} <= {p.name for p in DEPLOY.glob("*.yaml")}
    assert DOCKERFILE.is_file()


@pytest.mark.parametrize("path", [CPU, GPU], ids=lambda p: p.name)
def test_serve_file_accepted_by_finrag_and_serve(path):
    cfg = load_serve_file(path).app_config()
    assert isinstance(cfg, AppConfig)
    ServeDeploySchema.model_validate(yaml.safe_load(path.read_text()))


def test_rayservice_serve_config_accepted_by_finrag_and_serve():
    serve = rayservice_serve()
    cfg = ServeFile.model_validate(serve).app_config()
    assert cfg.profile == "gpu" and cfg.index == PUBLISHED
    ServeDeploySchema.model_validate(serve)


@pytest.mark.parametrize("where", list(serve_configs()))
def test_import_paths_resolve_to_build_app(where):
    from finrag.serving import app as serving_app

    apps = serve_configs()[where]["applications"]
    assert apps
    for app in apps:
        assert app["import_path"] == "finrag.serving.app:build_app"
        module, _, attr = app["import_path"].partition(":")
        assert getattr(importlib.import_module(module), attr) is serving_app.build_app


@pytest.mark.parametrize("where", list(serve_configs()))
def test_deployment_names_and_options_are_known(where):
    args = finrag_app(serve_configs()[where])["args"]
    names = set(args.get("deployments") or {})
    assert names <= set(DEPLOYMENTS), sorted(names - set(DEPLOYMENTS))
    cfg = AppConfig.model_validate(args)
    for name in names:  # what AppConfig passes through as plain dicts, Serve must accept
        options = cfg.options(name)
        if "ray_actor_options" in options:
            RayActorOptionsSchema.model_validate(options["ray_actor_options"])
        if "autoscaling_config" in options:
            AutoscalingConfig(**options["autoscaling_config"])


def test_deployments_that_reserve_no_cpu_share_the_cores():
    cfg = load_serve_file(CPU).app_config()
    threads = str(os.cpu_count() or 1)
    for name in DEPLOYMENTS:  # Ray alone would give each of them OMP_NUM_THREADS=1
        env = cfg.options(name)["ray_actor_options"]["runtime_env"]["env_vars"]
        assert env == {"OMP_NUM_THREADS": threads}, name
    cfg = AppConfig.model_validate({"shared_cpu_threads": 3, "deployments": {
        "Generator": {"ray_actor_options": {"num_cpus": 0, "runtime_env": {
            "env_vars": {"OMP_NUM_THREADS": "5", "X": "1"}}}},
        "Embedder": {"ray_actor_options": {"num_cpus": 2}},
        "Retriever": {"ray_actor_options": {"num_cpus": 0.5}}}})
    assert cfg.options("Generator")["ray_actor_options"]["runtime_env"]["env_vars"] == {
        "OMP_NUM_THREADS": "5", "X": "1"}  # the deployment's own setting wins
    assert cfg.options("Router")["ray_actor_options"]["runtime_env"]["env_vars"] == {
        "OMP_NUM_THREADS": "3"}
    assert "runtime_env" not in cfg.options("Embedder")["ray_actor_options"]  # Ray's own: 2
    assert cfg.options("Retriever")["ray_actor_options"]["runtime_env"]["env_vars"] == {
        "OMP_NUM_THREADS": "3"}  # half a CPU: Ray would still give one thread
    assert cfg.deployments["Retriever"].ray_actor_options == {"num_cpus": 0.5}  # not mutated


def test_gpu_yaml_sets_every_deployment():
    assert set(load_serve_file(GPU).app_config().deployments) == set(DEPLOYMENTS)


# --- placement -----------------------------------------------------------------------------

def test_cpu_yaml_asks_for_no_gpu_anywhere():
    from finrag.serving.app import build_app

    raw = yaml.safe_load(CPU.read_text())
    assert all(not v for v in keys_named(raw, "num_gpus"))
    assert all("GPU" not in (r or {}) for r in keys_named(raw, "resources"))
    assert all(not a for a in keys_named(raw, "accelerator_type"))
    built = built_deployments(build_app(load_serve_file(CPU).app_config()))
    assert all(not (d.ray_actor_options or {}).get("num_gpus") for d in built.values())


def test_gpu_profile_exists_and_is_the_vllm_one():
    from finrag.models.profiles import load_config

    cfg = load_serve_file(GPU).app_config()
    profile = load_config().active(cfg.profile)
    assert profile.name == "gpu" and profile.engine == "vllm"
    assert {"generator", "large_reranker", "light_reranker", "embedder", "router"} <= set(
        profile.roles)


def test_gpu_yaml_builds_with_gpus_where_models_run(monkeypatch):
    from finrag.serving.app import build_app

    cfg = load_serve_file(GPU).app_config()
    assert cfg.large_rerank is True
    monkeypatch.delenv("FINRAG_API_TOKEN", raising=False)
    monkeypatch.delenv("FINRAG_API_TOKEN_FILE", raising=False)
    with pytest.raises(ValueError, match="refusing to start.*FINRAG_API_TOKEN"):
        build_app(cfg)  # it listens on 0.0.0.0: never without a token
    monkeypatch.setenv("FINRAG_API_TOKEN", "deploy-test-token")
    built = built_deployments(build_app(cfg))
    assert set(built) == set(DEPLOYMENTS)  # large_rerank: the LargeReranker is deployed too
    assert built["Generator"].ray_actor_options["num_gpus"] > 0
    for name in ("Ingress", "Retriever"):
        assert not built[name].ray_actor_options.get("num_gpus")
        assert built[name].ray_actor_options.get("num_cpus", 0) >= 1


def test_gpu_yaml_places_each_role_by_its_memory_share():
    """A deployment that loads a model reserves its role's memory share of a GPU (the share
    its vLLM engine reserves of the device's memory), so Ray packs no more onto a GPU than
    its memory holds; one of each fits one GPU."""
    from finrag.models.devices import MAX_DEVICE_SHARE
    from finrag.models.profiles import load_config

    cfg = load_serve_file(GPU).app_config()
    profile = load_config().active(cfg.profile)
    roles = {"Generator": "generator", "Router": "router", "Embedder": "embedder",
             "LightReranker": "light_reranker", "LargeReranker": "large_reranker"}
    one_each = 0.0
    for name in DEPLOYMENTS:
        gpus = num_gpus(cfg.options(name, profile))
        if name in roles:
            assert gpus == profile.role(roles[name]).memory_share, name
        else:
            assert gpus == 0, f"{name} loads no model"
        one_each += gpus
    assert 0 < one_each <= MAX_DEVICE_SHARE
    assert gpus_needed(cfg) == 3  # 2.3 GPUs at full scale


def test_generator_can_fill_a_batch():
    cfg = load_serve_file(GPU).app_config()
    gen = cfg.options("Generator")
    assert gen["autoscaling_config"]["min_replicas"] >= 1
    assert gen["max_ongoing_requests"] >= cfg.batching.max_batch_size == 32
    assert gen["autoscaling_config"]["target_ongoing_requests"] <= gen["max_ongoing_requests"]


@pytest.mark.parametrize("where", list(serve_configs()))
def test_listening_beyond_loopback_needs_auth_from_the_environment(where):
    serve = serve_configs()[where]
    cfg = ServeFile.model_validate(serve).app_config()
    assert cfg.auth.bearer_token is None, "a token is never written in a deploy file"
    host = (serve.get("http_options") or {}).get("host", "0.0.0.0")  # Serve's schema default
    if host not in LOOPBACK:
        assert cfg.auth.bearer_token_env, f"{where} listens on {host} without auth"


# --- the RayService ------------------------------------------------------------------------

# what the cluster sets apart from gpu.yaml: where the Retriever and the Generator run (the
# worker group's custom resource) and how the Retriever scales (on its own CPU workers)
CLUSTER_ONLY = {"Retriever": ("num_replicas", "autoscaling_config", "resources"),
                "Generator": ("resources",)}


def without_index(serve: dict) -> dict:
    serve = copy.deepcopy(serve)
    for app in ServeFile.model_validate(serve).finrag_apps():
        app["args"].pop("index", None)
        for name, keys in CLUSTER_ONLY.items():
            options = app["args"]["deployments"][name]
            for key in keys:
                options.pop(key, None)
                options.get("ray_actor_options", {}).pop(key, None)
    return serve


def test_rayservice_carries_gpu_yaml_apart_from_the_index_and_placement():
    """Everything Serve and finrag read must match (proxy, HTTP, application, every arg and
    deployment option) but the index ($FINRAG_INDEX on a server, the publish root on the
    volume in the cluster) and the Retriever's and Generator's placement and scaling."""
    gpu, svc = yaml.safe_load(GPU.read_text()), rayservice_serve()
    assert without_index(svc) == without_index(gpu)
    assert finrag_app(gpu)["args"]["index"] is None
    assert finrag_app(svc)["args"]["index"] == PUBLISHED
    # gpu.yaml places nothing by custom resources (one server has none)
    assert not [r for r in keys_named(gpu, "resources") if r]


def test_rayservice_cluster_shape():
    svc = k8s_object("RayService")
    assert svc["apiVersion"] == "ray.io/v1"
    cluster = svc["spec"]["rayClusterConfig"]
    assert cluster["rayVersion"] == ray.__version__ == "2.60.0"
    head = cluster["headGroupSpec"]
    assert str(head["rayStartParams"]["num-cpus"]) == "0"
    for c in containers(head):
        for part in ("requests", "limits"):
            assert "nvidia.com/gpu" not in (c.get("resources") or {}).get(part, {})
    workers = cluster["workerGroupSpecs"]
    gpu_groups = [g for g in workers if any(
        "nvidia.com/gpu" in (c.get("resources") or {}).get("limits", {}) for c in containers(g))]
    assert gpu_groups, "a worker group with nvidia.com/gpu limits"
    cfg = ServeFile.model_validate(rayservice_serve()).app_config()
    capacity = 0
    for g in gpu_groups:
        assert g["minReplicas"] <= g["replicas"] <= g["maxReplicas"]
        per_pod = int(containers(g)[0]["resources"]["limits"]["nvidia.com/gpu"])
        capacity += g["maxReplicas"] * per_pod
    assert gpus_needed(cfg) <= capacity, "the worker groups cannot hold the app at full scale"
    assert cluster.get("enableInTreeAutoscaling") is True


def test_rayservice_pods_environment_volume_and_secret():
    cfg = ServeFile.model_validate(rayservice_serve()).app_config()
    claims = {d["metadata"]["name"] for d in k8s_docs() if d["kind"] == "PersistentVolumeClaim"}
    images = set()
    for group, spec in cluster_groups():
        pod = spec["template"]["spec"]
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for c in containers(spec):
            images.add(c["image"])
            env = {e["name"]: e for e in c.get("env", [])}
            value = {k: e.get("value") for k, e in env.items()}
            assert value["FINRAG_PROFILE"] == cfg.profile == "gpu", group
            assert value["FINRAG_INDEX"] == cfg.index, group
            assert value["HF_HOME"] == "/models" and value["HF_HUB_OFFLINE"] == "1", group
            token = env[cfg.auth.bearer_token_env]
            assert "value" not in token and token["valueFrom"]["secretKeyRef"]["name"], group
            mounts = {m["mountPath"]: m for m in c.get("volumeMounts", [])}
            for path in (cfg.index, "/models"):
                holder = [m for m in mounts if path == m or path.startswith(m.rstrip("/") + "/")]
                assert holder, f"{group}: nothing mounted at {path}"
                volume = volumes[mounts[holder[0]]["name"]]
                assert volume["persistentVolumeClaim"]["claimName"] in claims, group
    assert len(images) == 1 and "finrag-gpu" in images.pop()


# --- unknown keys are rejected -------------------------------------------------------------

def _with_args(tmp_path, change) -> Path:
    raw = yaml.safe_load(GPU.read_text())
    change(finrag_app(raw)["args"])
    path = tmp_path / "serve.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize("change, where", [
    (lambda a: a.update(max_inflight=8), "max_inflight"),
    (lambda a: a["limits"].update(max_inflight=8), "limits.max_inflight"),
    (lambda a: a["deployments"]["Generator"].update(num_replica=2),
     "deployments.Generator.num_replica"),
])
def test_unknown_key_in_args_is_rejected_by_name(tmp_path, change, where):
    path = _with_args(tmp_path, change)
    with pytest.raises(ValidationError) as err:
        load_serve_file(path).app_config()
    assert where in str(err.value) and "Extra inputs are not permitted" in str(err.value)


def test_unknown_deployment_is_rejected_by_name(tmp_path):
    path = _with_args(tmp_path, lambda a: a["deployments"].update(Generater={"num_replicas": 1}))
    with pytest.raises(ValidationError, match=r"unknown deployment\(s\) Generater; known: "):
        load_serve_file(path).app_config()


# --- KubeRay's own schema ------------------------------------------------------------------

# kuberay_crd: tests/conftest.py (KubeRay's RayService CRD, or a skip saying why)


def _rayservice_variant(change) -> list:
    docs = k8s_docs()
    change(next(d for d in docs if d["kind"] == "RayService"))
    return docs


def test_rayservice_accepted_by_kuberays_crd(kuberay_crd):
    report = crd_check.check_documents(kuberay_crd, k8s_docs())
    assert report.checked == ["RayService finrag (ray.io/v1)"]
    assert report.errors == []
    assert report.values > 200, "the whole RayService was walked"
    assert report.unevaluated == [], "a CEL rule of the CRD applies: check it by hand"


def _worker(doc: dict) -> dict:
    return doc["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]


def _head_container(doc: dict) -> dict:
    return containers(doc["spec"]["rayClusterConfig"]["headGroupSpec"])[0]


@pytest.mark.parametrize("change, error", [
    (lambda d: _worker(d).update(maxReplica=8),
     "spec.rayClusterConfig.workerGroupSpecs[0].maxReplica: unknown field"),
    (lambda d: _worker(d).update(minReplicas="4"),
     "spec.rayClusterConfig.workerGroupSpecs[0].minReplicas: '4' is not of type 'integer'"),
    (lambda d: (c := _head_container(d)).update(imagePulPolicy=c.pop("imagePullPolicy")),
     "spec.rayClusterConfig.headGroupSpec.template.spec.containers[0].imagePulPolicy: "
     "unknown field"),
    (lambda d: d["spec"]["rayClusterConfig"]["authOptions"].update(mode="on"),
     "spec.rayClusterConfig.authOptions.mode: 'on' is not one of"),
])
def test_kuberays_crd_rejects_a_misspelt_or_mistyped_field_by_name(kuberay_crd, change, error):
    report = crd_check.check_documents(kuberay_crd, _rayservice_variant(change))
    assert report.checked and any(e.startswith(f"RayService finrag: {error}")
                                  for e in report.errors), report.errors


def test_kuberay_version_in_the_runbook_is_the_one_checked():
    pinned = re.search(r"^VERSION=v(\S+)", KUBERAY_SETUP.read_text(), re.M).group(1)
    runbook = (DEPLOY.parent / "docs" / "deployment.md").read_text()
    needed = re.search(r"KubeRay operator \((\S+) or newer", runbook)
    assert needed and needed.group(1) == pinned
    assert f"KubeRay >= {pinned}" in K8S.read_text(), "the manifest's authOptions comment"


# --- the image -----------------------------------------------------------------------------

def test_dockerfile_installs_the_gpu_extra_only():
    instructions = dockerfile()
    base = [a for i, a in instructions if i == "FROM"]
    assert base == [f"rayproject/ray:{ray.__version__}-py311-gpu"]
    installs = [step.strip() for i, a in instructions if i == "RUN"
                for step in a.split("&&") if "pip install" in step]
    assert installs, "no pip install in the Dockerfile"
    words = [w for step in installs for w in shlex.split(step)]
    assert ".[gpu]" in words
    assert not [w for w in words if "cpu" in w], f"the cpu extra or faiss-cpu installed: {words}"


def test_dockerfile_serves_gpu_yaml_without_weights_inside():
    instructions = dockerfile()
    env = {}
    for i, a in instructions:
        if i == "ENV":
            env.update(w.split("=", 1) for w in shlex.split(a))
    assert env["FINRAG_PROFILE"] == load_serve_file(GPU).app_config().profile
    assert env["HF_HOME"] == "/models" and env["HF_HUB_OFFLINE"] == "1"
    port = yaml.safe_load(GPU.read_text())["http_options"]["port"]
    assert [a for i, a in instructions if i == "EXPOSE"] == [str(port)]
    cmd = [a for i, a in instructions if i == "CMD"]
    assert len(cmd) == 1 and yaml.safe_load(cmd[0]) == [
        "finrag", "serve", "--config", "deploy/gpu.yaml"]
    copied = " ".join(a for i, a in instructions if i in ("COPY", "ADD"))
    assert "deploy/" in copied and ".venv" not in copied
    # what `pip install .` builds the finrag package from: the root's __init__.py is the package
    assert [f for f in ("pyproject.toml", "__init__.py", "models/", "retrieval/", "serving/",
                        "benchmarks/") if f not in copied.split()
            and not any(c.startswith(f) for c in copied.split())] == []
    assert not any(s in copied for s in (".safetensors", ".gguf", "/models"))


# --- hardening: unprivileged pods, pinned images, closed ports ------------------------------

def _bytes(quantity: str) -> int:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return int(float(quantity[:-2]) * factor)
    return int(quantity)


@pytest.mark.parametrize("group", [g for g, _ in cluster_groups()])
def test_ray_pods_run_unprivileged_from_a_pinned_image(group):
    spec = dict(cluster_groups())[group]
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    volumes = {v["name"]: v for v in pod["volumes"]}
    for c in containers(spec):
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False and sc["capabilities"]["drop"] == ["ALL"]
        assert sc["readOnlyRootFilesystem"] is True
        assert "/tmp" in {m["mountPath"] for m in c["volumeMounts"]}, "Ray writes to /tmp"
        name, _, tag = c["image"].rpartition(":")
        assert name and tag and tag != "latest", c["image"]
        # a memory-backed /dev/shm counts against the pod's memory: it must fit inside it
        shm = volumes["dshm"]["emptyDir"]["sizeLimit"]
        assert _bytes(shm) < _bytes(c["resources"]["limits"]["memory"]), group


def test_only_the_serve_port_is_open_beyond_the_ray_pods():
    policy = k8s_object("NetworkPolicy")["spec"]
    selected = policy["podSelector"]["matchLabels"]
    for group, spec in cluster_groups():
        assert selected.items() <= spec["template"]["metadata"]["labels"].items(), group
    open_to_all = [p["port"] for rule in policy["ingress"] if "from" not in rule
                   for p in rule["ports"]]
    assert open_to_all == [8000]
    for rule in policy["ingress"]:
        if "from" in rule and "ports" in rule:  # the operator: dashboard ports only
            assert {p["port"] for p in rule["ports"]} <= {8265, 52365}
    cluster = k8s_object("RayService")["spec"]["rayClusterConfig"]
    assert cluster["authOptions"] == {"mode": "token"}, "Ray's own ports need its token"


def test_services_beyond_loopback_require_a_token_and_the_image_is_not_root():
    for where, serve in serve_configs().items():
        cfg = ServeFile.model_validate(serve).app_config()
        host = (serve.get("http_options") or {}).get("host", "0.0.0.0")
        if host not in LOOPBACK:
            assert cfg.auth.required is True, where
    text = DOCKERFILE.read_text()
    assert "\nUSER ray" in text and ":latest" not in text
