#!/usr/bin/env bash
# On a machine with GPUs: detection and doctor against an environment that already holds a
# CUDA (or ROCm) torch, JAX or CuPy. Everything is saved under $OUT for reading afterwards.
#
#   OUT=/tmp/gpu-check PYTHON=/opt/venv/bin/python benchmarks/gpu_check.sh
#
# PYTHON    the interpreter of the environment to check (default: python3 on PATH)
# FITWHEEL  the fitwheel command (default: 'fitwheel' on PATH, else '$PYTHON -m fitwheel' with
#           this checkout's src/ on PYTHONPATH, which needs fitwheel's dependencies importable
#           by $PYTHON: packaging, resolvelib, installer, urllib3, platformdirs, rich)
# OUT       where the outputs go (default: ./gpu-check-out)
# TIMEOUT   bound of each doctor smoke test in seconds (default 180)
#
# Files written: nvidia-smi.txt / rocm-smi.txt (when the tools exist), detect.txt, detect.json,
# detect-check-<file>.txt for each published variants file, doctor-static.json, doctor-run.json,
# doctor-run.txt (the checklist), and summary.txt with every command's exit status. A step that
# fails does not stop the others. Exit status: 0 when every step ran (doctor's own verdict is in
# summary.txt and its JSON), 1 when fitwheel itself could not be started.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${OUT:-$PWD/gpu-check-out}"
PYTHON="${PYTHON:-python3}"
TIMEOUT="${TIMEOUT:-180}"
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"

if [ -z "${FITWHEEL:-}" ]; then
    if command -v fitwheel >/dev/null 2>&1; then
        FITWHEEL="fitwheel"
    else
        export PYTHONPATH="$HERE/src${PYTHONPATH:+:$PYTHONPATH}"
        FITWHEEL="$PYTHON -m fitwheel"
    fi
fi
# shellcheck disable=SC2086
if ! $FITWHEEL --version >"$OUT/fitwheel-version.txt" 2>&1; then
    echo "cannot start fitwheel as '$FITWHEEL' (see $OUT/fitwheel-version.txt)" | tee -a "$SUMMARY"
    exit 1
fi

step() {  # step NAME OUTFILE LIMIT_S COMMAND...: run, keep stdout and stderr, note the status
    local name="$1" out="$2" limit="$3"
    shift 3
    timeout --kill-after=10 "$limit" "$@" >"$out" 2>"$out.stderr"
    local rc=$?
    echo "$name: exit $rc" >>"$SUMMARY"
    [ -s "$out.stderr" ] || rm -f "$out.stderr"
    return 0
}

command -v nvidia-smi >/dev/null && step "nvidia-smi" "$OUT/nvidia-smi.txt" 60 nvidia-smi -q
command -v rocm-smi >/dev/null && step "rocm-smi" "$OUT/rocm-smi.txt" 60 rocm-smi --showall
step "python" "$OUT/python.txt" 120 "$PYTHON" -c \
    "import sys, importlib.metadata as m; print(sys.version); [print(d.metadata['Name'], d.version) for d in m.distributions()]"

# shellcheck disable=SC2086
step "detect" "$OUT/detect.txt" 60 $FITWHEEL detect --no-cache
# shellcheck disable=SC2086
step "detect --json" "$OUT/detect.json" 60 $FITWHEEL detect --json --no-cache
for file in "$HERE"/tests/variants/data/published/torch-*-variants.json; do
    [ -e "$file" ] || continue
    base="$(basename "$file" .json)"
    # shellcheck disable=SC2086
    step "detect --check $base" "$OUT/detect-check-$base.txt" 60 $FITWHEEL detect --check "$file"
done

# shellcheck disable=SC2086
step "doctor (static)" "$OUT/doctor-static.json" 120 $FITWHEEL doctor --json --python "$PYTHON"
# every smoke test is bounded by TIMEOUT; the whole run by 10 of them
# shellcheck disable=SC2086
step "doctor --run" "$OUT/doctor-run.json" "$((TIMEOUT * 10))" \
    $FITWHEEL doctor --run --json --timeout "$TIMEOUT" --python "$PYTHON"
"$PYTHON" - "$OUT/doctor-run.json" >"$OUT/doctor-run.txt" 2>&1 <<'PY' || true
import json, sys
report = json.load(open(sys.argv[1]))
for c in report["checks"]:
    print(f"[{c['status']:4}] {c['name']}: {c['package'] or ''}: {c['detail']}")
    if c["fix"]:
        print(f"       fix: {c['fix']}")
print("ok" if report["ok"] else "problems found")
PY
cat "$SUMMARY"
exit 0
