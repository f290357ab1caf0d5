#!/usr/bin/env bash
# Whole-process import plus full proof of 100k-task foreign graphs: `amk validate` of an MPK
# task_graph.json and of a PTO deps.json (+ scope_stats) that `amk export` writes from one
# generated 100k-task program, next to `amk validate` of that amk program itself (the baseline,
# measured in the same run). Each is run RUNS times (default 5) from a warm page cache: the best
# and the median seconds, and the best run's peak memory.
#   bench/formats_whole_process.sh [BUILD_DIR]   (default build/release; RUNS=N to change the count)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
runs=${RUNS:-5}
amk=$build/cli/amk
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# timed LABEL FILE ARGS...: `amk validate FILE ARGS...` $runs times; its exit status is ignored
# (an exported graph may be rejected for the runtime's default capacities: the proof still ran).
timed() {
  local label=$1 file=$2 t0 t1
  shift 2
  : >"$work/runs"
  for ((i = 0; i < runs; ++i)); do
    t0=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$work/t" "$amk" validate "$file" "$@" >/dev/null 2>&1 || true
    t1=$(date +%s%N)
    echo "$(((t1 - t0) / 1000)) $(tail -1 "$work/t")" >>"$work/runs"
  done
  sort -n "$work/runs" | awk -v l="$label" -v r="$runs" -v mb="$(du -m "$file" | cut -f1)" '
    { s[NR] = $1 / 1e6; kb[NR] = $2 }
    END {
      med = (NR % 2) ? s[(NR + 1) / 2] : (s[NR / 2] + s[NR / 2 + 1]) / 2
      printf "  %-4s %4d MB file: best of %d %6.3f s, median %6.3f s, peak %4.0f MB\n",
        l, mb, r, s[1], med, kb[1] / 1e3 }'
}

"$amk" gen --tasks 100000 -o "$work/p.json" >/dev/null 2>&1
"$amk" export "$work/p.json" --format mpk -o "$work/task_graph.json" >/dev/null
"$amk" export "$work/p.json" --format pto -o "$work/pto" >/dev/null
echo "amk validate, whole process, of one generated 100k-task program in three formats:"
timed amk "$work/p.json"
timed mpk "$work/task_graph.json"
timed pto "$work/pto/deps.json"
