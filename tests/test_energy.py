import sys
import time
import types
from pathlib import Path

import pytest

from models.energy import (
    CounterMeter,
    EnergyReading,
    MeterUnavailable,
    NVMLMeter,
    RAPLMeter,
    UnavailableMeter,
    select_meter,
)


def _busy(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        sum(range(1000))


def _counter(*values):
    """A read_fn that returns the given {domain: value} dicts one call at a time."""
    it = iter(values)
    return lambda: next(it)


# --- counter arithmetic ---------------------------------------------------------------------


def test_counter_sums_domain_deltas():
    meter = CounterMeter(_counter({"a": 100, "b": 10}, {"a": 350, "b": 60}), "nvml", "a+b")
    reading = meter.stop(meter.start())
    assert reading.joules == 300
    assert (reading.source, reading.scope) == ("nvml", "a+b")


def test_counter_scales_units():
    meter = CounterMeter(_counter({"gpu0": 1_000}, {"gpu0": 3_500}), "nvml", "gpu0",
                         joules_per_unit=1e-3)
    assert meter.stop(meter.start()).joules == pytest.approx(2.5)


def test_counter_wraparound_per_domain():
    # "a" wraps at 1000 (990 -> 1000 -> 0 -> 20 is 30 units); "b" does not wrap.
    meter = CounterMeter(_counter({"a": 990, "b": 5}, {"a": 20, "b": 7}), "rapl", "a+b",
                         wrap={"a": 1000, "b": 1000})
    assert meter.stop(meter.start()).joules == 32


def test_counter_backwards_without_wrap_is_not_guessed():
    meter = CounterMeter(_counter({"a": 50}, {"a": 10}), "nvml", "a")
    assert meter.stop(meter.start()).joules is None


def test_counter_missing_domain_is_not_guessed():
    meter = CounterMeter(_counter({"a": 1, "b": 1}, {"a": 5}), "nvml", "a+b")
    assert meter.stop(meter.start()).joules is None


# --- timing, nesting, serialisation ---------------------------------------------------------


def test_cpu_seconds_of_busy_loop():
    with UnavailableMeter().measure() as m:
        _busy(0.05)
    assert m.reading.cpu_seconds > 0
    assert m.reading.seconds >= m.reading.cpu_seconds * 0.5  # wall time was spent too


def test_nested_and_independent_measurements():
    values = iter(range(0, 1000, 10))  # each read advances the counter by 10
    meter = CounterMeter(lambda: {"x": next(values)}, "nvml", "x")
    with meter.measure() as outer:
        first = meter.start()  # reads 10
        with meter.measure() as inner:  # reads 20 and 30
            time.sleep(0.01)
        second = meter.stop(first)  # reads 40
    # outer reads 0 and 50
    assert inner.reading.joules == 10
    assert second.joules == 30
    assert outer.reading.joules == 50
    assert outer.reading.seconds >= second.seconds >= inner.reading.seconds > 0


def test_reading_set_even_when_block_raises():
    meter = UnavailableMeter()
    with pytest.raises(KeyError):
        with meter.measure() as m:
            raise KeyError("boom")
    assert m.reading is not None and m.reading.joules is None


def test_to_dict_keys_and_unavailable_reading():
    reading = UnavailableMeter("test").stop(UnavailableMeter().start())
    assert isinstance(reading, EnergyReading)
    d = reading.to_dict()
    assert set(d) == {"joules", "source", "scope", "seconds", "cpu_seconds"}
    assert (d["joules"], d["source"], d["scope"]) == (None, "unavailable", None)


# --- RAPL on a fake sysfs tree --------------------------------------------------------------


def _rapl_domain(root: Path, dirname: str, name: str, energy: int, max_range: int) -> Path:
    d = root / dirname
    d.mkdir(parents=True)
    (d / "name").write_text(name + "\n")
    (d / "energy_uj").write_text(f"{energy}\n")
    (d / "max_energy_range_uj").write_text(f"{max_range}\n")
    return d


def test_rapl_fake_tree_two_packages_and_wraparound(tmp_path):
    p0 = _rapl_domain(tmp_path, "intel-rapl:0", "package-0", 999_000_000, 1_000_000_000)
    p1 = _rapl_domain(tmp_path, "intel-rapl:1", "package-1", 5_000_000, 1_000_000_000)
    core = _rapl_domain(tmp_path, "intel-rapl:0:0", "core", 0, 1_000_000_000)  # subdomain
    _rapl_domain(tmp_path, "intel-rapl:2", "psys", 0, 1_000_000_000)  # not a package
    meter = RAPLMeter(root=tmp_path)
    assert meter.scope == "package-0+package-1"

    start = meter.start()
    (p0 / "energy_uj").write_text("2000000\n")  # wrapped: 1 J to the top + 2 J = 3 J
    (p1 / "energy_uj").write_text("9000000\n")  # 4 J
    (core / "energy_uj").write_text("900000000\n")  # ignored
    reading = meter.stop(start)
    assert (reading.source, reading.scope) == ("rapl", "package-0+package-1")
    assert reading.joules == pytest.approx(7.0)


def test_rapl_unreadable_or_absent_is_unavailable(tmp_path):
    with pytest.raises(MeterUnavailable):
        RAPLMeter(root=tmp_path / "missing")
    d = _rapl_domain(tmp_path, "intel-rapl:0", "package-0", 1, 10)
    (d / "energy_uj").unlink()
    (d / "energy_uj").mkdir()  # reading a directory fails even as root, unlike chmod 000
    with pytest.raises(MeterUnavailable):
        RAPLMeter(root=tmp_path)
    assert isinstance(select_meter(prefer=()), UnavailableMeter)


# --- NVML with a stand-in pynvml module -----------------------------------------------------


def _fake_pynvml(energies: dict[int, list[int] | None]):
    """A pynvml stand-in: GPU i returns successive energies[i] values, or NotSupported if None."""

    class NVMLError(Exception):
        pass

    class NVMLError_NotSupported(NVMLError):
        pass

    streams = {i: iter(v) if v is not None else None for i, v in energies.items()}
    mod = types.SimpleNamespace(NVMLError=NVMLError, shutdowns=0)

    def energy(i):
        if streams[i] is None:
            raise NVMLError_NotSupported("Not Supported")
        return next(streams[i])

    def shutdown():
        mod.shutdowns += 1

    mod.nvmlInit = lambda: None
    mod.nvmlShutdown = shutdown
    mod.nvmlDeviceGetCount = lambda: len(energies)
    mod.nvmlDeviceGetHandleByIndex = lambda i: i
    mod.nvmlDeviceGetTotalEnergyConsumption = energy
    return mod


def test_nvml_skips_unsupported_gpu_and_sums_millijoules(monkeypatch):
    # the constructor probes each GPU once, then start and stop read it
    fake = _fake_pynvml({0: [0, 1_000, 4_000], 1: None, 2: [0, 500, 1_500]})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    meter = NVMLMeter()
    assert meter.scope == "gpu0+gpu2"
    reading = meter.stop(meter.start())
    assert (reading.source, reading.joules) == ("nvml", pytest.approx(4.0))
    meter.close()
    assert fake.shutdowns == 1


def test_nvml_without_counter_or_module_falls_back(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml({0: None}))
    with pytest.raises(MeterUnavailable, match="gpu0"):
        NVMLMeter()
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    meter = select_meter(prefer=("nvml",))
    assert isinstance(meter, UnavailableMeter) and "pynvml" in meter.reason


def test_unknown_meter_name():
    with pytest.raises(ValueError):
        select_meter(prefer=("zeus",))


# --- this machine ---------------------------------------------------------------------------


def _rapl_readable() -> bool:
    for f in Path("/sys/class/powercap").glob("intel-rapl:*/energy_uj"):
        try:
            f.read_text()
            return True
        except OSError:
            pass
    return False


def _nvml_gpu_count() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return 0
    try:
        return pynvml.nvmlDeviceGetCount()
    finally:
        pynvml.nvmlShutdown()


def test_select_meter_on_this_machine():
    meter = select_meter()
    try:
        with meter.measure() as m:
            _busy(0.02)
    finally:
        meter.close()
    reading = m.reading
    assert reading.source in {"nvml", "rapl", "unavailable"}
    assert reading.cpu_seconds > 0
    if not _rapl_readable() and _nvml_gpu_count() == 0:
        assert reading.source == "unavailable"
        assert reading.joules is None and reading.scope is None
    else:
        assert (reading.joules is None) == (reading.source == "unavailable")
        if reading.joules is not None:
            assert reading.joules >= 0
