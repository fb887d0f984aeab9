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
LLM_KINDS = ("llm", "llm-scorer")


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
    """The memory share of each vLLM engine that ``roles`` (default: every LLM role) start in
    one process, by device: ``{device: {model: share}}``. One engine per distinct model (roles
    naming the same model share it, with the largest share any of them asks for).

    Refused with ``DeviceError``: shares on one device that add up past ``MAX_DEVICE_SHARE``,
    and two engines on one device without a share each (vLLM would give the first ~90% of the
    memory and the second would fail to start)."""
    if profile.engine != "vllm":
        return {}
    names = list(roles) if roles is not None else list(profile.roles)
    engines: dict[str, dict] = {}
    for role in names:
        spec = profile.roles.get(role)
        if spec is None or spec.kind not in LLM_KINDS:
            continue
        device = resolve_device(spec.device, role=role, cuda_devices=cuda_devices)
        entry = engines.setdefault(spec.model, {"device": device, "share": None, "roles": []})
        entry["roles"].append(role)
        if spec.memory_share is not None:
            entry["share"] = max(entry["share"] or 0.0, spec.memory_share)
    by_device: dict[str, dict[str, dict]] = {}
    for model, entry in engines.items():
        by_device.setdefault(entry["device"], {})[model] = entry
    out: dict[str, dict[str, float]] = {}
    for device, models in by_device.items():
        unset = [f"{m} ({', '.join(e['roles'])})" for m, e in models.items() if e["share"] is None]
        if len(models) > 1 and unset:
            raise DeviceError(
                f"profile {profile.name!r} starts {len(models)} vLLM engines on {device} in one "
                f"process, and {'; '.join(unset)} has no memory_share: give each role a "
                f"memory_share (together at most {MAX_DEVICE_SHARE}) or serve them in separate "
                "deployments with their own num_gpus")
        total = sum(e["share"] or 0.0 for e in models.values())
        if total > MAX_DEVICE_SHARE + 1e-9:
            parts = " + ".join(f"{e['share']:g} {m} ({', '.join(e['roles'])})"
                               for m, e in models.items())
            raise DeviceError(
                f"profile {profile.name!r}: the vLLM engines on {device} ask for {parts} = "
                f"{total:g} of its memory; at most {MAX_DEVICE_SHARE} may be shared out "
                "(the rest is for the embedder, rerankers and CUDA). Lower the memory_share "
                "values or serve the roles in separate deployments with their own num_gpus")
        out[device] = {m: e["share"] for m, e in models.items() if e["share"] is not None}
    return out
