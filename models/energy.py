"""Measured energy for a window of work: NVIDIA GPU counters (NVML), Intel RAPL, or nothing.

    meter = select_meter()            # best meter this machine offers
    with meter.measure() as m:        # or: start = meter.start(); ...; reading = meter.stop(start)
        work()
    m.reading.to_dict()               # {"joules", "source", "scope", "seconds", "cpu_seconds"}

Joules are only ever read from hardware counters; where none is readable the reading says
"unavailable" with joules None (nothing is estimated). Every reading also carries the wall time
and this process's CPU time (user + system, all threads; not child processes) for the window.
Start tokens are independent, so measurements can nest or overlap freely.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

RAPL_ROOT = Path("/sys/class/powercap")
_RAPL_PACKAGE_DIR = re.compile(r"intel-rapl:(\d+)")  # intel-rapl:0:0 etc. are subdomains


class MeterUnavailable(RuntimeError):
    """This kind of meter cannot read energy on this machine (the message says why)."""


@dataclass(frozen=True)
class EnergyReading:
    joules: float | None  # None: no counter was read (or it could not be trusted)
    source: str  # "nvml" | "rapl" | "unavailable"
    scope: str | None  # what was measured, e.g. "gpu0+gpu1" or "package-0"
    seconds: float  # wall time of the window
    cpu_seconds: float  # this process's user+system CPU time in the window

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Start:
    """Token returned by Meter.start(); pass it to Meter.stop()."""

    wall: float
    cpu: float
    counters: Mapping[str, float] | None = None


class Measurement:
    """What `with meter.measure() as m:` binds; `m.reading` is set when the block exits."""

    reading: EnergyReading | None = None


class Meter:
    """Base: times the window; subclasses add the counters."""

    source = "unavailable"
    scope: str | None = None

    def _read(self) -> Mapping[str, float] | None:
        return None

    def _joules(self, before: Mapping[str, float] | None, after: Mapping[str, float] | None):
        return None

    def start(self) -> Start:
        counters = self._read()
        return Start(wall=time.perf_counter(), cpu=time.process_time(), counters=counters)

    def stop(self, start: Start) -> EnergyReading:
        wall, cpu = time.perf_counter(), time.process_time()
        counters = self._read()
        return EnergyReading(
            joules=self._joules(start.counters, counters),
            source=self.source,
            scope=self.scope,
            seconds=wall - start.wall,
            cpu_seconds=cpu - start.cpu,
        )

    @contextmanager
    def measure(self) -> Iterator[Measurement]:
        m = Measurement()
        start = self.start()
        try:
            yield m
        finally:
            m.reading = self.stop(start)

    def close(self) -> None:
        """Release whatever the meter holds (nothing by default)."""


class UnavailableMeter(Meter):
    """No energy counter: joules None, but wall and CPU seconds are still measured."""

    def __init__(self, reason: str | None = None):
        self.reason = reason


class CounterMeter(Meter):
    """Energy from cumulative counters: `read_fn()` returns {domain: cumulative value}.

    Joules = sum over domains of (after - before) * joules_per_unit. A domain whose counter went
    backwards is taken to have wrapped once at `wrap` (a number, or {domain: number}); without a
    wrap value for it, or with a domain missing, the reading's joules is None rather than a guess.
    """

    def __init__(
        self,
        read_fn: Callable[[], Mapping[str, float]],
        source: str,
        scope: str | None = None,
        wrap: float | Mapping[str, float] | None = None,
        joules_per_unit: float = 1.0,
    ):
        self.read_fn = read_fn
        self.source = source
        self.scope = scope
        self.wrap = wrap
        self.joules_per_unit = joules_per_unit

    def _read(self) -> Mapping[str, float]:
        return dict(self.read_fn())

    def _wrap_for(self, domain: str) -> float | None:
        if isinstance(self.wrap, Mapping):
            return self.wrap.get(domain)
        return self.wrap

    def _joules(self, before, after) -> float | None:
        if not before or after is None or set(before) - set(after):
            return None
        total = 0.0
        for domain, start in before.items():
            delta = after[domain] - start
            if delta < 0:
                wrap = self._wrap_for(domain)
                if not wrap:
                    return None
                delta += wrap
            total += delta
        return total * self.joules_per_unit


class NVMLMeter(CounterMeter):
    """Total energy of NVIDIA GPUs (nvmlDeviceGetTotalEnergyConsumption, mJ since driver load).

    `indices` picks GPUs (default: all); those without the counter are left out, and if none
    has it the meter is unavailable. Scope names the GPUs measured, e.g. "gpu0+gpu1".
    """

    def __init__(self, indices: list[int] | None = None):
        try:
            import pynvml
        except ImportError as e:
            raise MeterUnavailable(f"pynvml not importable ({e})") from e
        self._nvml = pynvml
        try:
            pynvml.nvmlInit()
        except Exception as e:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            raise MeterUnavailable(f"nvmlInit failed ({e})") from e
        try:
            if indices is None:
                indices = list(range(pynvml.nvmlDeviceGetCount()))
            self._handles = {}
            skipped = []
            for i in indices:
                handle = pynvml.nvmlDeviceGetHandleByIndex(i)
                try:
                    pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
                except pynvml.NVMLError as e:  # NotSupported on older GPUs, NoPermission, ...
                    skipped.append(f"gpu{i}: {e}")
                    continue
                self._handles[f"gpu{i}"] = handle
        except Exception as e:
            pynvml.nvmlShutdown()
            raise MeterUnavailable(f"NVML device query failed ({e})") from e
        if not self._handles:
            pynvml.nvmlShutdown()
            why = "; ".join(skipped) or "no GPUs"
            raise MeterUnavailable(f"no GPU with an energy counter ({why})")
        self.skipped = skipped
        super().__init__(self._read_counters, "nvml", "+".join(self._handles), None, 1e-3)

    def _read_counters(self) -> dict[str, float]:
        get = self._nvml.nvmlDeviceGetTotalEnergyConsumption
        return {name: get(handle) for name, handle in self._handles.items()}

    def close(self) -> None:
        if self._handles:
            self._handles = {}
            self._nvml.nvmlShutdown()


class RAPLMeter(CounterMeter):
    """CPU package energy from Intel RAPL in sysfs (`<root>/intel-rapl:N/energy_uj`, µJ).

    Only package domains (`name` = package-N) are summed; subdomains (core, uncore, dram) are
    inside their package and are skipped. Each counter wraps at its `max_energy_range_uj`.
    Unavailable when no package counter is readable (often root-only, or absent in VMs).
    """

    def __init__(self, root: str | Path = RAPL_ROOT):
        self.root = Path(root)
        files: dict[str, Path] = {}
        wrap: dict[str, float] = {}
        problems = []
        dirs = [d for d in self.root.glob("intel-rapl:*") if _RAPL_PACKAGE_DIR.fullmatch(d.name)]
        for d in sorted(dirs, key=lambda d: int(d.name.split(":")[1])):
            try:
                name = (d / "name").read_text().strip()
                if not name.startswith("package-"):
                    continue
                int((d / "energy_uj").read_text())
                wrap[name] = float((d / "max_energy_range_uj").read_text())
            except (OSError, ValueError) as e:
                problems.append(f"{d.name}: {e}")
                continue
            files[name] = d / "energy_uj"
        if not files:
            why = "; ".join(problems) or f"no intel-rapl package domains under {self.root}"
            raise MeterUnavailable(f"RAPL not readable ({why})")
        self._files = files
        super().__init__(self._read_counters, "rapl", "+".join(files), wrap, 1e-6)

    def _read_counters(self) -> dict[str, float]:
        return {name: int(path.read_text()) for name, path in self._files.items()}


_METERS: dict[str, Callable[[], Meter]] = {"nvml": NVMLMeter, "rapl": RAPLMeter}


def select_meter(prefer: tuple[str, ...] = ("nvml", "rapl"), *,
                 gpus: list[int] | None = None) -> Meter:
    """The first of `prefer` that works here, else an UnavailableMeter whose .reason says why.
    ``gpus``: the NVML indices NVML reads (default: every GPU of the host)."""
    reasons = []
    for kind in prefer:
        if kind not in _METERS:
            raise ValueError(f"unknown meter {kind!r}; known: {sorted(_METERS)}")
        try:
            return NVMLMeter(gpus) if kind == "nvml" else _METERS[kind]()
        except MeterUnavailable as e:
            reasons.append(f"{kind}: {e}")
    return UnavailableMeter("; ".join(reasons) or "no meters tried")


def nvml_index(cuda_device: str, visible: str | None = None) -> int:
    """The NVML (host) index of a torch device ``cuda:N``: N counts the devices in
    CUDA_VISIBLE_DEVICES (as Ray and schedulers set it), NVML counts all of the host's."""
    n = int(cuda_device.split(":")[1]) if ":" in cuda_device else 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
    ids = [v.strip() for v in (visible or "").split(",") if v.strip()]
    if ids and all(v.isdigit() for v in ids) and n < len(ids):
        return int(ids[n])
    return n  # unset, or given as UUIDs: torch's order is the host's


def meter_for(devices: list[str]) -> Meter:
    """A meter for work on ``devices`` (resolved role devices, e.g. ["cuda:0", "cpu"]): NVML
    over exactly those GPUs when any is a GPU (not every GPU of the host), else the CPU
    package (RAPL); where neither is readable the readings say unavailable."""
    gpus = sorted({nvml_index(d) for d in devices if d.startswith("cuda")})
    return select_meter(("nvml", "rapl"), gpus=gpus) if gpus else select_meter(("rapl",))


def combined(readings: list[EnergyReading]) -> EnergyReading:
    """Several windows of one meter as one reading (joules None if any is)."""
    joules = [r.joules for r in readings]
    return EnergyReading(None if None in joules else sum(joules), readings[0].source,
                         readings[0].scope, sum(r.seconds for r in readings),
                         sum(r.cpu_seconds for r in readings))


class EnergyLedger:
    """One device's joules charged to the requests that share it (a serving engine that
    batches concurrent requests into the same steps, so no request has a window of its own).

        ledger = EnergyLedger(meter_for(["cuda:0"]))
        ticket = ledger.open()
        ledger.tokens(ticket, n)      # tokens this request had processed since its last report
        reading = ledger.close(ticket)

    A sampler thread reads the meter's counters every ``interval`` seconds while any request is
    open. Each interval's joules are split among the requests open in it by the tokens each
    reported in it (a prompt's tokens when its first output arrives, then each decoded token);
    an interval in which no request reported a token is split evenly among those open. Joules
    spent while no request is open are charged to none. A meter without counters gives readings
    whose joules are None, as any other window of it.
    """

    SHARED = "shared with concurrent requests, split by their token share"

    def __init__(self, meter: Meter, interval: float = 0.1):
        import threading

        self.meter, self.interval = meter, interval
        self.scope = f"{meter.scope}; {self.SHARED}" if meter.scope else None
        self._lock = threading.Lock()
        self._open: dict[int, list] = {}  # ticket -> [start, joules, tokens since last sample]
        self._ids = 0
        self._last = None  # the counters at the last sample
        self._broken = False  # a counter could not be read: nothing is charged, not guessed
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    def open(self) -> int:
        with self._lock:
            self._sample()  # the interval so far belongs to the requests open before this one
            self._ids += 1
            self._open[self._ids] = [self.meter.start(), 0.0, 0]
            if self._thread is None or not self._thread.is_alive():
                import threading

                self._thread = threading.Thread(target=self._run, name="energy-ledger",
                                                daemon=True)
                self._thread.start()
            self._wake.notify()
            return self._ids

    def tokens(self, ticket: int, n: int) -> None:
        with self._lock:
            if ticket in self._open:
                self._open[ticket][2] += n

    def close(self, ticket: int) -> EnergyReading:
        with self._lock:
            self._sample()
            start, joules, _ = self._open.pop(ticket)
            broken = self._broken
            if not self._open:
                self._broken = False
                self._wake.notify()  # the sampler ends
        reading = self.meter.stop(start)  # wall and CPU time of the request's window
        if reading.joules is None or broken:
            return EnergyReading(None, reading.source, reading.scope, reading.seconds,
                                 reading.cpu_seconds)
        return EnergyReading(joules, reading.source, self.scope, reading.seconds,
                             reading.cpu_seconds)

    def _sample(self) -> None:
        """Charge the joules since the last sample to the open requests (lock held)."""
        counters = self.meter._read()
        before, self._last = self._last, counters
        if not self._open:
            return
        joules = self.meter._joules(before, counters)
        if joules is None:
            self._broken = self._broken or bool(counters)
            return
        entries = list(self._open.values())
        total = sum(e[2] for e in entries)
        for e in entries:
            e[1] += joules * (e[2] / total if total else 1 / len(entries))
            e[2] = 0

    def _run(self) -> None:
        with self._lock:
            while self._open:
                self._wake.wait(self.interval)
                if self._open:
                    self._sample()
            self._thread = None
