"""Devices by role (auto / cpu / cuda[:N]) and the memory shares of vLLM engines in one process."""

import pytest

from finrag.models.devices import MAX_DEVICE_SHARE, DeviceError, memory_shares, resolve_device
from finrag.models.profiles import load_config


def test_resolve_device_by_what_torch_sees():
    assert resolve_device("auto", cuda_devices=0) == "cpu"
    assert resolve_device("auto", cuda_devices=2) == "cuda:0"
    assert resolve_device("cuda", cuda_devices=1) == "cuda:0"
    assert resolve_device("cuda:1", cuda_devices=2) == "cuda:1"
    assert resolve_device("cpu", cuda_devices=4) == "cpu"
    with pytest.raises(DeviceError, match="generator: device 'cuda:1'.*torch sees no CUDA"):
        resolve_device("cuda:1", role="generator", cuda_devices=0)
    with pytest.raises(DeviceError, match="not auto, cpu or cuda"):
        resolve_device("gpu0", cuda_devices=0)


def test_profile_rejects_a_bad_device_name():
    from pydantic import ValidationError

    from finrag.models.profiles import RoleSpec

    assert RoleSpec(kind="llm", model="m").device == "auto"
    with pytest.raises(ValidationError):
        RoleSpec(kind="llm", model="m", device="tpu")


def _gpu(**shares):
    prof = load_config(env={}).active("gpu")
    roles = {r: s.model_copy(update={"memory_share": shares.get(r, s.memory_share)})
             for r, s in prof.roles.items()}
    return prof.model_copy(update={"roles": roles})


def test_gpu_profile_shares_fit_on_one_device():
    shares = memory_shares(load_config(env={}).active("gpu"), cuda_devices=1)
    assert list(shares) == ["cuda:0"]
    engines = shares["cuda:0"]
    assert len(engines) == 5  # every role a distinct model
    assert sum(engines.values()) <= MAX_DEVICE_SHARE


def test_shares_past_the_limit_are_refused_naming_them():
    prof = _gpu(generator=0.5, router=0.3)
    with pytest.raises(DeviceError) as err:
        memory_shares(prof, cuda_devices=1)
    message = str(err.value)
    assert "cuda:0" in message and "= 1 of its memory" in message and "at most 0.9" in message
    assert "Qwen/Qwen2.5-7B-Instruct (generator)" in message
    # the same shares in separate processes (a deployment each) are fine
    assert memory_shares(prof, ["generator"], cuda_devices=1) == {
        "cuda:0": {"Qwen/Qwen2.5-7B-Instruct": 0.5}}


def test_roles_naming_one_model_share_one_engine():
    prof = _gpu(generator=0.5, router=0.3)
    roles = {r: s for r, s in prof.roles.items()}
    roles["router"] = roles["router"].model_copy(update={"model": roles["generator"].model})
    prof = prof.model_copy(update={"roles": roles})
    shares = memory_shares(prof, ["router", "generator"], cuda_devices=1)
    assert shares == {"cuda:0": {"Qwen/Qwen2.5-7B-Instruct": 0.5}}


def test_two_engines_without_shares_are_refused():
    prof = _gpu(generator=None, router=None)
    with pytest.raises(DeviceError, match="has no memory_share"):
        memory_shares(prof, ["router", "generator"], cuda_devices=1)
    # the transformers engine reserves nothing up front: no shares needed
    assert memory_shares(load_config(env={}).active("cpu"), cuda_devices=1) == {}


def test_placement_gpus_follow_the_shares():
    from finrag.models.devices import placement_gpus

    gpu = load_config(env={}).active("gpu")
    assert placement_gpus(gpu, ["generator"]) == 0.45
    assert placement_gpus(gpu, ["embedder"]) == 0.05
    # a batch actor holding the whole pipeline reserves the sum of its distinct models
    assert placement_gpus(gpu, list(gpu.roles)) == 0.85
    # roles pinned to the CPU, and profiles without shares, reserve no GPU
    cpu_only = gpu.model_copy(update={"roles": {
        r: s.model_copy(update={"device": "cpu"}) for r, s in gpu.roles.items()}})
    assert placement_gpus(cpu_only, list(gpu.roles)) == 0.0
    assert placement_gpus(load_config(env={}).active("cpu"), ["generator", "embedder"]) == 0.0


def test_serve_deployments_reserve_their_roles_share():
    from finrag.serving.config import AppConfig

    gpu = load_config(env={}).active("gpu")
    cfg = AppConfig.model_validate({"deployments": {
        "LightReranker": {"ray_actor_options": {"num_cpus": 1, "num_gpus": 0.25}}}})
    assert cfg.options("Generator", gpu)["ray_actor_options"]["num_gpus"] == 0.45
    assert cfg.options("Router", gpu)["ray_actor_options"]["num_gpus"] == 0.2
    assert cfg.options("LightReranker", gpu)["ray_actor_options"]["num_gpus"] == 0.25  # YAML's
    assert "num_gpus" not in cfg.options("Retriever", gpu)["ray_actor_options"]
    assert "num_gpus" not in cfg.options("Generator", load_config(env={}).active("cpu"))[
        "ray_actor_options"]
    # a Router that uses the Generator's engine (same model), or no LLM, needs no GPU
    shared = gpu.model_copy(update={"roles": gpu.roles | {
        "router": gpu.roles["router"].model_copy(update={"model": gpu.roles["generator"].model})}})
    assert "num_gpus" not in cfg.options("Router", shared)["ray_actor_options"]
    no_llm = AppConfig.model_validate({"use_llm_router": False})
    assert "num_gpus" not in no_llm.options("Router", gpu)["ray_actor_options"]


def test_batch_actors_reserve_the_pipelines_shares():
    from finrag.serving.batch import actor_gpus

    assert actor_gpus({"profile": "gpu", "config": None}) == 0.85
    assert actor_gpus({"profile": "gpu", "config": None, "large_rerank": False}) == 0.75
    assert actor_gpus({"profile": "gpu", "config": None, "use_llm_router": False,
                       "large_rerank": False}) == 0.55
    assert actor_gpus({"profile": "cpu", "config": None}) == 0.0


def test_energy_reads_only_the_devices_that_serve():
    from finrag.models.energy import meter_for, nvml_index

    assert nvml_index("cuda:0", visible="") == 0
    assert nvml_index("cuda:1", visible="4,6") == 6  # Ray / the scheduler renumbers
    assert nvml_index("cuda:0", visible="GPU-1a2b,GPU-3c4d") == 0
    # no role on a GPU: the GPUs' counters are not this work's energy
    cpu_meter = meter_for(["cpu", "cpu"])
    assert getattr(cpu_meter, "source", None) != "nvml"
    with cpu_meter.measure() as m:
        sum(range(1000))
    assert m.reading.source in ("rapl", "unavailable")
    if m.reading.source == "unavailable":
        assert m.reading.joules is None  # never estimated


def test_a_shared_generation_is_charged_by_token_share():
    from finrag.models.energy import EnergyReading
    from finrag.retrieval.systems.run import energy as answer_energy

    window = EnergyReading(4.0, "nvml", "gpu0", 2.0, 1.0)
    own = EnergyReading(0.5, "nvml", "gpu0", 0.1, 0.1)
    first, second = answer_energy([(own, 1), (window, 0.25)]), answer_energy([(own, 1), (window, 0.75)])
    assert (first["joules"], second["joules"]) == (1.5, 3.5)
    assert "split by token share" in first["scope"]
    assert answer_energy([(own, 1)])["scope"] == "gpu0"
    unmeasured = EnergyReading(None, "unavailable", None, 1.0, 0.5)
    assert answer_energy([(unmeasured, 0.5)]) == {"joules": None, "source": "unavailable",
                                             "scope": None, "cpu_seconds": 0.25}


def test_a_served_answer_counts_the_generators_metered_share_and_says_what_is_left_out():
    """On a GPU profile in Serve the Ingress reads no counter (its windows say unavailable)
    and the Generator charges each request its token share of its GPU: the answer's joules are
    that share, and the scope says the other steps are not included."""
    from finrag.models.energy import EnergyLedger, EnergyReading
    from finrag.retrieval.systems.run import energy as answer_energy

    retrieval = EnergyReading(None, "unavailable", None, 0.3, 0.2)
    generation = EnergyReading(12.5, "nvml", "gpu0; " + EnergyLedger.SHARED, 1.0, 0.0)
    energy = answer_energy([(retrieval, 1), (generation, 1)])
    assert (energy["joules"], energy["source"]) == (12.5, "nvml")
    assert energy["scope"].startswith("gpu0; shared with concurrent requests")
    assert energy["scope"].endswith("the other steps ran where no counter was read: not included")
    # a counter that was read but could not be trusted still voids the sum
    broken = EnergyReading(None, "nvml", "gpu0", 1.0, 0.0)
    assert answer_energy([(retrieval, 1), (broken, 1)])["joules"] is None


def test_the_generator_meters_its_gpu_only():
    from finrag.serving.deployments import generator_ledger

    cpu = load_config(env={}).active("cpu")
    assert generator_ledger(cpu, "generator") is None  # the Ingress's window covers the CPU
    gpu = load_config(env={}).active("gpu")
    pinned = gpu.model_copy(update={"roles": {**gpu.roles, "generator": gpu.roles[
        "generator"].model_copy(update={"device": "cuda:0"})}})
    ledger = generator_ledger(pinned, "generator", cuda_devices=1)
    assert ledger is not None
    # no NVML on this machine: readings say unavailable, never a guess
    reading = ledger.close(ledger.open())
    if ledger.meter.source == "unavailable":
        assert reading.joules is None and reading.source == "unavailable"
    else:
        assert reading.source == "nvml" and reading.scope.startswith("gpu0")


def test_the_ingress_never_sums_the_hosts_gpus():
    from finrag.serving.app import ingress_meter

    gpu, cpu = (load_config(env={}).active(n) for n in ("gpu", "cpu"))
    with ingress_meter(gpu).measure() as m:
        pass
    assert m.reading.source == "unavailable" and m.reading.joules is None
    assert getattr(ingress_meter(cpu), "source", None) != "nvml"
