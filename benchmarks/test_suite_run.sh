#!/usr/bin/env bash
# The test suite measured as CI runs it: a fresh clone of this repository's HEAD beside it (so
# ../shared is where the tests look), `.ci/run` (make demo, then make test) with the timing
# plugin on, then `make test-fast` in the same clone. Writes timing_LABEL.json and the wall
# times into benchmarks/results/test_suite/ and remakes its report. Run it alone: the figures
# are wall times on this machine.
#   bash benchmarks/test_suite_run.sh after
# With --fast-only: `make install`, then `make test-fast` twice, the first with the suite's
# embedding cache emptied (tests/embedding_cache.py), the second with it as the first left it.
#   bash benchmarks/test_suite_run.sh after-fast --fast-only
set -uo pipefail
label=${1:?usage: test_suite_run.sh LABEL [--fast-only]}
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/benchmarks/results/test_suite
clone=$(dirname "$repo")/finrag-suite-$label
rm -rf "$clone"
git clone -q "$repo" "$clone"
mkdir -p "$out"
cd "$clone"
report() {
    cd "$repo"
    local runs=(--run "before=benchmarks/results/test_suite/timing_before.json")
    for t in benchmarks/results/test_suite/timing_*.json; do
        case $t in *_before.json) ;; *) runs+=(--run "$(basename "$t" .json | sed 's/^timing_//')=$t") ;; esac
    done
    "$clone/.venv/bin/python" -m finrag.benchmarks.suite_timing "${runs[@]}" \
        --walls benchmarks/results/test_suite/walls.json \
        --replaced benchmarks/data/test_suite_replaced.yaml --out benchmarks/results/test_suite
}
if [ "${2:-}" = --fast-only ]; then
    make install >/dev/null
    rm -rf "${XDG_CACHE_HOME:-$HOME/.cache}/finrag-tests"
    start=$SECONDS
    make test-fast 2>&1 | tail -1
    cold_s=$((SECONDS - start))
    start=$SECONDS
    make test-fast 2>&1 | tail -1
    fast_s=$((SECONDS - start))
    python3 - "$out/walls.json" "$label" "$cold_s" "$fast_s" <<'PY'
import json, sys
from pathlib import Path
path, label, cold_s, fast_s = sys.argv[1:]
walls = json.loads(Path(path).read_text()) if Path(path).is_file() else {}
walls[label] = {"make test-fast, no embedding cache": float(cold_s),
                "make test-fast": float(fast_s),
                "note": "bash benchmarks/test_suite_run.sh " + label + " --fast-only: make "
                        "install in a fresh clone, then make test-fast with the suite's "
                        "embedding cache emptied, then again"}
Path(path).write_text(json.dumps(walls, indent=2) + "\n")
PY
    report
    exit 0
fi
start=$SECONDS
log=$(mktemp)
PYTEST_ADDOPTS="-p finrag.benchmarks.suite_timing" FINRAG_SUITE_TIMING=$out/timing_$label.json \
    bash .ci/run >"$log" 2>&1
ci_s=$((SECONDS - start))
# what the report keeps of the log: each step's time and pytest's summary lines
grep -E "^CI: |^(FAILED|ERROR) |^[0-9]+ (passed|failed)" "$log" | tee "$out/ci_$label.txt"
test_s=$(sed -n 's/^CI: make test took \([0-9]*\) s$/\1/p' "$log" | tail -1)
rm -f "$log"
start=$SECONDS
make test-fast 2>&1 | tail -3
fast_s=$((SECONDS - start))
python3 - "$out/walls.json" "$label" "$test_s" "$ci_s" "$fast_s" <<'PY'
import json, sys
from pathlib import Path
path, label, test_s, ci_s, fast_s = sys.argv[1:]
walls = json.loads(Path(path).read_text()) if Path(path).is_file() else {}
walls[label] = {"make test": float(test_s or "nan"), ".ci/run": float(ci_s),
                "make test-fast": float(fast_s),
                "note": "bash benchmarks/test_suite_run.sh " + label + ": .ci/run from a fresh "
                        "clone (its make test after make demo built the venv), then make test-fast"}
Path(path).write_text(json.dumps(walls, indent=2) + "\n")
PY
report
