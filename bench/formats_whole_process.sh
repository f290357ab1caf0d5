#!/usr/bin/env bash
# Whole-process import plus full proof of 100k-task foreign graphs: `amk validate` of an MPK
# task_graph.json and of a PTO deps.json (+ scope_stats) that `amk export` writes from one
# generated 100k-task program, next to `amk validate` of that amk program itself (the baseline,
# measured in the same run). The three alternate, RUNS rounds (default 7) from a warm page cache,
# so that each sees the same moments of a shared machine: min / median / max seconds, the ratio
# of the medians to the baseline's, and the peak memory of the fastest run. The load average
# before and after is printed with them.
#   bench/formats_whole_process.sh [BUILD_DIR]   (default build/release; RUNS=N to change the count)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
runs=${RUNS:-7}
amk=$build/cli/amk
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$amk" gen --tasks 100000 -o "$work/p.json" >/dev/null 2>&1
"$amk" export "$work/p.json" --format mpk -o "$work/task_graph.json" >/dev/null
"$amk" export "$work/p.json" --format pto -o "$work/pto" >/dev/null
labels=(amk mpk pto)
files=("$work/p.json" "$work/task_graph.json" "$work/pto/deps.json")
for f in "${files[@]}"; do cat "$f" >/dev/null; done  # into the page cache

# One round: `amk validate FILE` of each format in turn; its exit status is ignored (an exported
# graph may be rejected for the runtime's default capacities: the proof still ran).
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 0; i < runs; ++i)); do
  for k in 0 1 2; do
    t0=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$work/t" "$amk" validate "${files[$k]}" >/dev/null 2>&1 || true
    t1=$(date +%s%N)
    echo "$(((t1 - t0) / 1000)) $(tail -1 "$work/t")" >>"$work/times.${labels[$k]}"
  done
done
echo "load average after:  $(cut -d' ' -f1-3 /proc/loadavg)"
echo "amk validate, whole process, of one generated 100k-task program in three formats ($runs rounds):"
base=$(sort -n "$work/times.amk" | awk '{ s[NR] = $1 } END { print (NR % 2) ? s[(NR + 1) / 2] : (s[NR / 2] + s[NR / 2 + 1]) / 2 }')
for k in 0 1 2; do
  sort -n "$work/times.${labels[$k]}" | awk -v l="${labels[$k]}" -v base="$base" \
    -v mb="$(du -m "${files[$k]}" | cut -f1)" '
    { s[NR] = $1 / 1e6; kb[NR] = $2 }
    END {
      med = (NR % 2) ? s[(NR + 1) / 2] : (s[NR / 2] + s[NR / 2 + 1]) / 2
      printf "  %-4s %4d MB file: min %6.3f s, median %6.3f s, max %6.3f s, median/amk %5.2f, peak %4.0f MB\n",
        l, mb, s[1], med, s[NR], med / (base / 1e6), kb[1] / 1e3 }'
done
