#!/bin/sh
# Calibrates the `host` runtime on this machine's reference VM and checks it on configs it did not
# see: lowers configs of two models for the `host` target, times each with `amk run --trace`
# (REPS runs, the fastest kept), fits the host runtime to every other config and predicts the rest
# (`amk calibrate --predict`: per-point error, rms log error and the rank correlation).
#   bench/calibrate_host.sh [OUT_DIR]      (AMK=path/to/amk, REPS=5)
set -eu
AMK=${AMK:-build/ci/cli/amk}
REPS=${REPS:-5}
OUT=${1:-$(mktemp -d)}
mkdir -p "$OUT"
: >"$OUT/fit.jsonl"
: >"$OUT/held.jsonl"
FIT=${FIT:-dispatch_ns,signal_ns,remote_ns,poll_ns,latency_ns,peak_fraction,flops_per_thread_cycle}

n=0
for model in toy-2L smollm2-135m; do
  "$AMK" gen-weights "$model" --dtype F32 -o "$OUT/$model.safetensors" >/dev/null 2>&1
  for tile in 16 32 64 128 256; do
    for sm in round_robin load_balance; do
      name="$model-$tile-$sm"
      "$AMK" lower "$model" --target host --runtime host \
        -c "{\"tiling\":{\"gemv\":{\"N_tile\":$tile}},\"sm_assignment\":\"$sm\"}" \
        -o "$OUT/$name.json" 2>/dev/null
      traces=""
      r=0
      while [ "$r" -lt "$REPS" ]; do
        "$AMK" run "$OUT/$name.json" --weights "$OUT/$model.safetensors" --token-id 1 \
          --target host --trace "$OUT/$name.$r.trace.json" >/dev/null
        traces="$traces${traces:+, }\"$name.$r.trace.json\""
        r=$((r + 1))
      done
      line="{\"label\": \"$name\", \"program\": \"$name.json\", \"target\": \"host\", \"trace\": [$traces]}"
      if [ $((n % 2)) -eq 0 ]; then echo "$line" >>"$OUT/fit.jsonl"; else echo "$line" >>"$OUT/held.jsonl"; fi
      n=$((n + 1))
    done
  done
done

echo "== before the fit (runtimes/host.json), held-out configs"
"$AMK" calibrate "$OUT/held.jsonl" --runtime host --predict
echo "== fit on $(wc -l <"$OUT/fit.jsonl") configs"
"$AMK" calibrate "$OUT/fit.jsonl" --runtime host --fit "$FIT" -o "$OUT/host-fitted.json"
echo "== the fitted runtime on the $(wc -l <"$OUT/held.jsonl") held-out configs"
"$AMK" calibrate "$OUT/held.jsonl" --runtime "$OUT/host-fitted.json" --predict
