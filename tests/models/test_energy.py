import sys
import time
import types
from pathlib import Path

import pytest

from finrag.models.energy import (
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


# --- a shared device's joules charged to its concurrent requests ----------------------------


class _Dial:
    """A cumulative joule counter the test turns by hand (the device's energy so far)."""

    def __init__(self):
        self.value = 0.0

    def read(self):
        return {"gpu0": self.value}


def _ledger(dial):
    from finrag.models.energy import EnergyLedger

    # an hour between samples: only the ledger's own events sample, so the split is exact
    return EnergyLedger(CounterMeter(dial.read, "nvml", "gpu0"), interval=3600)


def test_ledger_splits_shared_intervals_by_token_share_and_charges_no_idle_energy():
    dial = _Dial()
    ledger = _ledger(dial)
    dial.value = 50.0  # idle before any request: charged to none
    a = ledger.open()
    dial.value += 10.0  # a alone, no token reported in it: all of it is a's
    b = ledger.open()
    ledger.tokens(a, 3)
    ledger.tokens(b, 1)
    dial.value += 40.0  # shared, 3 tokens to 1
    reading_a = ledger.close(a)
    dial.value += 7.0  # b alone
    reading_b = ledger.close(b)
    dial.value += 100.0  # idle after
    assert reading_a.joules == pytest.approx(10.0 + 30.0)
    assert reading_b.joules == pytest.approx(10.0 + 7.0)
    assert reading_a.source == "nvml"
    assert reading_a.scope == "gpu0; " + ledger.SHARED


def test_ledger_splits_evenly_when_no_tokens_were_reported():
    dial = _Dial()
    ledger = _ledger(dial)
    tickets = [ledger.open() for _ in range(4)]
    dial.value += 20.0
    readings = [ledger.close(t) for t in tickets]
    # each close samples first: the 20 J were spent while all four were open
    assert [r.joules for r in readings] == pytest.approx([5.0, 5.0, 5.0, 5.0])


def test_ledger_gives_none_for_a_broken_counter_and_unavailable_without_one():
    from finrag.models.energy import EnergyLedger

    dial = _Dial()
    ledger = _ledger(dial)
    dial.value = 100.0
    t = ledger.open()
    dial.value = 10.0  # went backwards, no wrap value: not guessed
    assert ledger.close(t).joules is None
    t = ledger.open()  # a fresh window after it
    dial.value += 5.0
    assert ledger.close(t).joules == pytest.approx(5.0)

    none = EnergyLedger(UnavailableMeter("no counter here"))
    t = none.open()
    reading = none.close(t)
    assert (reading.joules, reading.source) == (None, "unavailable")


def test_ledger_sampler_thread_charges_concurrent_requests_that_sum_to_the_device():
    """Real threads and the sampler at 50 ms over a counter that rises 100 J per second of
    wall time: the charges of two overlapping requests add up to what the device spent while
    any was open, and the one that reported 3x the tokens got about 3x the shared part.

    The two requests report in lockstep (a barrier per step, as a batching engine's requests
    share its steps) and a sampler interval spans several steps, so a thread descheduled on a
    busy machine cannot leave whole intervals to the other request."""
    import threading

    from finrag.models.energy import EnergyLedger

    start = time.perf_counter()
    ledger = EnergyLedger(CounterMeter(lambda: {"gpu0": 100 * (time.perf_counter() - start)},
                                       "nvml", "gpu0"), interval=0.05)
    step = threading.Barrier(2, timeout=30)
    out = {}

    def request(name, tokens_per_step):
        ticket = ledger.open()
        t0 = time.perf_counter()
        for _ in range(60):
            step.wait()
            time.sleep(0.005)
            ledger.tokens(ticket, tokens_per_step)
        out[name] = (ledger.close(ticket), t0, time.perf_counter())

    threads = [threading.Thread(target=request, args=("a", 3)),
               threading.Thread(target=request, args=("b", 1))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    (ra, a0, a1), (rb, b0, b1) = out["a"], out["b"]
    union = max(a1, b1) - min(a0, b0)
    assert ra.joules + rb.joules == pytest.approx(100 * union, rel=0.1)
    assert 2.0 < ra.joules / rb.joules < 4.5
