"""Where each role runs, decided at run time, and how the vLLM engines of one process share a
device's memory.

A role's ``device`` in the profile is ``auto`` (CUDA when torch sees a device, else the CPU),
``cpu``, or ``cuda`` / ``cuda:N``. vLLM reserves a share of its device's memory up front
(``gpu_memory_utilization``), so two engines in one process must each be given a share in the
profile (``memory_share``), and the shares on one device may add up to at most
``MAX_DEVICE_SHARE``; the rest is left to the embedder, the rerankers and CUDA itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_DEVICE_SHARE = 0.9
DEVICE_PATTERN = r"^(auto|cpu|cuda(:\d+)?)$"
LLM_KINDS = ("llm", "llm-scorer", "llm-listwise")  # the roles an LLM engine runs


class DeviceError(RuntimeError):
    """A role asks for a device this machine does not have, or the shares do not fit."""


def cuda_count() -> int:
    """CUDA devices torch can use here (0 without a CUDA build of torch or without a GPU)."""
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def resolve_device(spec: str, *, role: str = "", cuda_devices: int | None = None) -> str:
    """``auto`` → ``cuda:0`` when torch sees CUDA, else ``cpu``; ``cuda`` → ``cuda:0``.
    Asking for a CUDA device this machine lacks is an error naming the role."""
    if not re.match(DEVICE_PATTERN, spec):
        raise DeviceError(f"{role or 'role'}: device {spec!r} is not auto, cpu or cuda[:N]")
    n = cuda_count() if cuda_devices is None else cuda_devices
    if spec == "cpu" or (spec == "auto" and n == 0):
        return "cpu"
    index = int(spec.split(":")[1]) if ":" in spec else 0
    if index >= n:
        seen = f"{n} CUDA device(s)" if n else "no CUDA device (torch.cuda.is_available() is False)"
        raise DeviceError(f"{role or 'role'}: device {spec!r} asked for, but torch sees {seen}; "
                          "use device: auto or cpu in the profile")
    return f"cuda:{index}"


def memory_shares(profile, roles: Iterable[str] | None = None, *,
                  cuda_devices: int | None = None) -> dict[str, dict[str, float]]:
    """The memory share of each model that ``roles`` (default: every role) load in one
    process, by device: ``{device: {model: share}}``. Roles naming the same model share it
    (one engine per distinct model), with the largest share any of them asks for. A vLLM
    engine reserves its share up front; for the other roles the share is the plan Ray places
    them by (``placement_gpus``).

    Refused with ``DeviceError``: shares on one device that add up past ``MAX_DEVICE_SHARE``,
    and two vLLM engines on one device without a share each (vLLM would give the first ~90%
    of the memory and the second would fail to start)."""
    names = list(roles) if roles is not None else list(profile.roles)
    models: dict[str, dict] = {}
    for role in names:
        spec = profile.roles.get(role)
        if spec is None:
            continue
        device = resolve_device(spec.device, role=role, cuda_devices=cuda_devices)
        entry = models.setdefault(spec.model, {"device": device, "share": None, "roles": [],
                                               "vllm": False})
        entry["roles"].append(role)
        entry["vllm"] |= profile.engine == "vllm" and spec.kind in LLM_KINDS
        if spec.memory_share is not None:
            entry["share"] = max(entry["share"] or 0.0, spec.memory_share)
    by_device: dict[str, dict[str, dict]] = {}
    for model, entry in models.items():
        by_device.setdefault(entry["device"], {})[model] = entry
    out: dict[str, dict[str, float]] = {}
    for device, here in by_device.items():
        engines = {m: e for m, e in here.items() if e["vllm"]}
        unset = [f"{m} ({', '.join(e['roles'])})" for m, e in engines.items() if e["share"] is None]
        if len(engines) > 1 and unset:
            raise DeviceError(
                f"profile {profile.name!r} starts {len(engines)} vLLM engines on {device} in one "
                f"process, and {'; '.join(unset)} has no memory_share: give each role a "
                f"memory_share (together at most {MAX_DEVICE_SHARE}) or serve them in separate "
                "deployments with their own num_gpus")
        shared = {m: e for m, e in here.items() if e["share"] is not None}
        total = sum(e["share"] for e in shared.values())
        if total > MAX_DEVICE_SHARE + 1e-9:
            parts = " + ".join(f"{e['share']:g} {m} ({', '.join(e['roles'])})"
                               for m, e in shared.items())
            raise DeviceError(
                f"profile {profile.name!r}: the roles on {device} ask for {parts} = {total:g} "
                f"of its memory; at most {MAX_DEVICE_SHARE} may be shared out (the rest is "
                "for CUDA itself). Lower the memory_share values or serve the roles in "
                "separate deployments with their own num_gpus")
        if shared:
            out[device] = {m: e["share"] for m, e in shared.items()}
    return out


def placement_gpus(profile, roles: Iterable[str]) -> float:
    """Ray's ``num_gpus`` for a process (a Serve deployment, a batch actor) that loads
    ``roles``: the memory shares of the distinct models among them that may run on CUDA
    (device not ``cpu``). Ray then places no more on a GPU than the shares its memory holds;
    0 when none of the roles asks for one."""
    shares: dict[str, float] = {}
    for role in roles:
        spec = profile.roles.get(role)
        if spec is not None and spec.device != "cpu" and spec.memory_share:
            shares[spec.model] = max(shares.get(spec.model, 0.0), spec.memory_share)
    return round(min(1.0, sum(shares.values())), 4)
