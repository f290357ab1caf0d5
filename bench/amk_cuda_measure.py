#!/usr/bin/env python3
"""Measured latencies of amk's programs on AMK's CUDA megakernel (#44): the points that test the
`amk-cuda` runtime profile against the GPU it models, knob by knob.

Two steps, on two machines:

  lower    (here, no GPU): lowers every point below with amk into DIR, one program file each, and
           DIR/points.jsonl, the list of points as `amk calibrate` reads them (less measured_us).
  measure  (on a CUDA machine with PyTorch and nvcc): loads each program with AMK's own host loader
           (RightNow-AI/AutoMegaKernel vm/loader.py, the checkout given by --amk), which JIT-builds
           its megakernel, and times it as AMK's tests/test_cuda_perf.py does: one run builds the
           device tables, then warm-up runs, then timed steady-state runs between CUDA events.
           It writes DIR/raw.jsonl: every figure of every point, `run_us` (AMK's own measure: the
           loader's run(), its per-token host work included) and `launch_us` (the megakernel: the
           cooperative launch until the stream is idle again), median, min and max.
  stream   (on the GPU): its copy bandwidth, for a target's measured_bw_gbs.
  merge    (here): the points of one or more raw files (passes of the same points) as
           `amk calibrate` reads them, measured_us the mean of the passes' launch_us medians;
           with --held-out, every other point goes to a second file instead.

    bench/amk_cuda_measure.py lower build/release/cli/amk /tmp/points
    python3 bench/amk_cuda_measure.py measure /tmp/points --amk PATH/TO/AutoMegaKernel
    bench/amk_cuda_measure.py merge /tmp/points POINTS_RAW... -o fit.jsonl --held-out held.jsonl

Weights are random (seeded; latency does not depend on their values). A point that fails to
build, launch or verify its status is recorded with its error, not left out.
"""
import argparse
import json
import os
import subprocess
import sys
import time

BASE = {
    "tiling": {"gemv": {"N_tile": 64}, "attention": {"kv_block": 128}},
    "fusion_grouping": [],
    "sm_assignment": "load_balance",
    "pipelining_depth": 2,
    "page_allocation": "graph_color",
    "threads_per_block": 256,
    "smem_bytes_per_block": 0,
}
FUSED = [["rope_q.reshape", "rope_q"], ["rope_k.reshape", "rope_k"], ["attn_residual", "post_norm"]]


def cfg(**change):
    """BASE with the given top-level knobs changed; N_tile and n_partitions by name."""
    c = json.loads(json.dumps(BASE))
    if "N_tile" in change:
        c["tiling"]["gemv"]["N_tile"] = change.pop("N_tile")
    if "n_partitions" in change:
        c["tiling"]["attention"]["n_partitions"] = change.pop("n_partitions")
    c.update(change)
    return c


def points():
    """(label, model, dtype, config, amk_compat, pos) of every point, the knob sweeps first."""
    p = []
    # AMK's own published H100 points, lowered as AMK lowers them.
    compat128 = {"tiling": {"gemv": {"N_tile": 128}}}
    p += [("small-4L fp32 compat N128", "small-4L", "F32", compat128, True, 0),
          ("small-4L bf16 compat N128", "small-4L", "BF16", compat128, True, 0),
          ("small-4L bf16 compat auto", "small-4L", "BF16", "auto", True, 0),
          ("llama-3.2-1b bf16 compat N128", "llama-3.2-1b", "BF16", compat128, True, 0)]
    # One knob at a time around amk's default config, small-4L bf16.
    m = "small-4L"
    p.append((f"{m} bf16 base", m, "BF16", cfg(), False, 0))
    for t in (64, 128):
        p.append((f"{m} bf16 threads {t}", m, "BF16", cfg(threads_per_block=t), False, 0))
    for d in (0, 1, 3, 4):
        p.append((f"{m} bf16 depth {d}", m, "BF16", cfg(pipelining_depth=d), False, 0))
    for n in (16, 32, 128, 256):
        p.append((f"{m} bf16 N_tile {n}", m, "BF16", cfg(N_tile=n), False, 0))
    p.append((f"{m} bf16 round_robin", m, "BF16", cfg(sm_assignment="round_robin"), False, 0))
    p.append((f"{m} bf16 fused", m, "BF16", cfg(fusion_grouping=FUSED), False, 0))
    p.append((f"{m} bf16 smem 98304", m, "BF16", cfg(smem_bytes_per_block=98304), False, 0))
    p.append((f"{m} bf16 pages linear", m, "BF16", cfg(page_allocation="linear"), False, 0))
    p.append((f"{m} bf16 depth 0 threads 128", m, "BF16",
              cfg(pipelining_depth=0, threads_per_block=128), False, 0))
    p.append((f"{m} bf16 pos 255", m, "BF16", cfg(), False, 255))
    p.append((f"{m} bf16 pos 255 split 4", m, "BF16", cfg(n_partitions=4), False, 255))
    p.append((f"{m} fp32 base", m, "F32", cfg(), False, 0))
    # A larger and two smaller models.
    m = "llama-3.2-1b"
    p.append((f"{m} bf16 base", m, "BF16", cfg(), False, 0))
    p.append((f"{m} bf16 threads 128", m, "BF16", cfg(threads_per_block=128), False, 0))
    p.append((f"{m} bf16 depth 0", m, "BF16", cfg(pipelining_depth=0), False, 0))
    p.append((f"{m} bf16 N_tile 32", m, "BF16", cfg(N_tile=32), False, 0))
    p.append((f"{m} bf16 N_tile 128", m, "BF16", cfg(N_tile=128), False, 0))
    p.append((f"{m} bf16 fused", m, "BF16", cfg(fusion_grouping=FUSED), False, 0))
    for m in ("smollm2-135m", "toy-2L"):
        p.append((f"{m} bf16 base", m, "BF16", cfg(), False, 0))
        p.append((f"{m} bf16 threads 128", m, "BF16", cfg(threads_per_block=128), False, 0))
        p.append((f"{m} bf16 depth 0", m, "BF16", cfg(pipelining_depth=0), False, 0))
        p.append((f"{m} bf16 N_tile 32", m, "BF16", cfg(N_tile=32), False, 0))
    return p


def points_round2():
    """Configs chosen after amk-cuda was fitted to round 1, with their predictions recorded before
    they ran: the searches' bests under the fitted profile, a model never measured, long KV."""
    best = cfg(N_tile=16, pipelining_depth=0)  # amk search's best, small-4L and Llama (budget 200)
    amk_best = cfg(N_tile=16, n_partitions=8, pipelining_depth=0, page_allocation="none",
                   smem_bytes_per_block=16384)  # --algo amk's best
    del amk_best["tiling"]["attention"]["kv_block"]
    p = []
    for m in ("small-4L", "llama-3.2-1b"):
        p.append((f"{m} bf16 search best", m, "BF16", best, False, 0))
        p.append((f"{m} bf16 algo amk best", m, "BF16", amk_best, False, 0))
    m = "tinyllama-1.1b"
    p += [(f"{m} bf16 base", m, "BF16", cfg(), False, 0),
          (f"{m} bf16 depth 0", m, "BF16", cfg(pipelining_depth=0), False, 0),
          (f"{m} bf16 threads 128", m, "BF16", cfg(threads_per_block=128), False, 0),
          (f"{m} bf16 N_tile 16 depth 0", m, "BF16", best, False, 0)]
    m = "llama-3.2-1b"
    p += [(f"{m} bf16 pos 255", m, "BF16", cfg(), False, 255),
          (f"{m} bf16 pos 255 split 8", m, "BF16", cfg(n_partitions=8), False, 255)]
    m = "small-4L"
    p += [(f"{m} bf16 pos 127", m, "BF16", cfg(), False, 127),
          (f"{m} bf16 threads 64 depth 0", m, "BF16",
           cfg(threads_per_block=64, pipelining_depth=0), False, 0),
          (f"{m} bf16 N_tile 512", m, "BF16", cfg(N_tile=512), False, 0),
          (f"{m} bf16 N_tile 32 depth 0 threads 128", m, "BF16",
           cfg(N_tile=32, pipelining_depth=0, threads_per_block=128), False, 0),
          (f"{m} bf16 compat N64", m, "BF16", {"tiling": {"gemv": {"N_tile": 64}}}, True, 0)]
    m = "smollm2-135m"
    p += [(f"{m} bf16 N_tile 16 depth 0", m, "BF16", best, False, 0),
          (f"{m} bf16 pos 255", m, "BF16", cfg(), False, 255)]
    p.append(("toy-1L bf16 base", "toy-1L", "BF16", cfg(), False, 0))
    return p


def points_round3():
    """After round 2, attention's chain counts a lane's share of head_dim: long KV caches at
    head_dim 64 and 128 and a few other knobs, their predictions recorded before they ran."""
    best = cfg(N_tile=16, pipelining_depth=0)
    p = []
    m = "tinyllama-1.1b"
    p += [(f"{m} bf16 pos 255", m, "BF16", cfg(), False, 255),
          (f"{m} bf16 pos 255 split 8", m, "BF16", cfg(n_partitions=8), False, 255),
          (f"{m} bf16 N_tile 32", m, "BF16", cfg(N_tile=32), False, 0)]
    m = "llama-3.2-1b"
    p += [(f"{m} bf16 pos 127", m, "BF16", cfg(), False, 127),
          (f"{m} bf16 pos 511 split 8", m, "BF16", cfg(n_partitions=8), False, 511),
          (f"{m} bf16 pos 255 search best", m, "BF16", best, False, 255),
          (f"{m} bf16 threads 64", m, "BF16", cfg(threads_per_block=64), False, 0)]
    m = "smollm2-135m"
    p += [(f"{m} bf16 pos 127", m, "BF16", cfg(), False, 127),
          (f"{m} bf16 pos 255 split 4", m, "BF16", cfg(n_partitions=4), False, 255),
          (f"{m} bf16 threads 64 depth 0", m, "BF16",
           cfg(threads_per_block=64, pipelining_depth=0), False, 0)]
    m = "small-4L"
    p += [(f"{m} bf16 pos 63", m, "BF16", cfg(), False, 63),
          (f"{m} bf16 pos 255 split 8", m, "BF16", cfg(n_partitions=8), False, 255),
          (f"{m} bf16 pos 255 threads 128", m, "BF16", cfg(threads_per_block=128), False, 255),
          (f"{m} fp32 search best", m, "F32", best, False, 0)]
    p.append(("toy-2L bf16 pos 200", "toy-2L", "BF16", cfg(), False, 200))
    return p


def quant_points(fmt):
    """The points rounds 4 and 7 share: AMK's defaults, depth 0, the search's best and 128
    threads on small-4L, two of them on two 1B models, and smollm2-135m's defaults, all with
    `fmt` weights."""
    best = cfg(N_tile=16, pipelining_depth=0)
    m = "small-4L"
    p = [(f"{m} {fmt} base", m, "BF16", cfg(), False, 0),
         (f"{m} {fmt} depth 0", m, "BF16", cfg(pipelining_depth=0), False, 0),
         (f"{m} {fmt} N_tile 16 depth 0", m, "BF16", best, False, 0),
         (f"{m} {fmt} threads 128", m, "BF16", cfg(threads_per_block=128), False, 0)]
    for m in ("llama-3.2-1b", "tinyllama-1.1b"):
        p += [(f"{m} {fmt} base", m, "BF16", cfg(), False, 0),
              (f"{m} {fmt} N_tile 16 depth 0", m, "BF16", best, False, 0)]
    p.append((f"smollm2-135m {fmt} base", "smollm2-135m", "BF16", cfg(), False, 0))
    return p


def points_round4():
    """Int8 weights (group 128, bf16 activations), which no earlier round had: AMK's dequantising
    GEMV. Every point of this round is lowered with --quant int8 (amk calibrate --quant int8)."""
    return quant_points("int8")


def points_round5():
    """After amk-cuda's int8 GEMV was fitted to round 4 (quant_*): int8 configs round 4 did not
    have, their predictions recorded before they ran; among them the int8 search's best (N_tile 16
    at depth 2, where bf16's is depth 0: the fit has the L2 hint help int8 a little)."""
    best = cfg(N_tile=16)  # amk search --quant int8's best, small-4L and Llama (budget 200)
    p = []
    m = "small-4L"
    p += [(f"{m} int8 search best", m, "BF16", best, False, 0),
          (f"{m} int8 N_tile 32 depth 0 threads 128", m, "BF16",
           cfg(N_tile=32, pipelining_depth=0, threads_per_block=128), False, 0),
          (f"{m} int8 threads 64 depth 0", m, "BF16",
           cfg(threads_per_block=64, pipelining_depth=0), False, 0),
          (f"{m} int8 N_tile 128", m, "BF16", cfg(N_tile=128), False, 0),
          (f"{m} int8 pos 127", m, "BF16", cfg(), False, 127)]
    m = "llama-3.2-1b"
    p += [(f"{m} int8 search best", m, "BF16", best, False, 0),
          (f"{m} int8 depth 0", m, "BF16", cfg(pipelining_depth=0), False, 0),
          (f"{m} int8 threads 128", m, "BF16", cfg(threads_per_block=128), False, 0),
          (f"{m} int8 pos 255 split 8", m, "BF16", cfg(n_partitions=8), False, 255)]
    m = "tinyllama-1.1b"
    p += [(f"{m} int8 depth 0", m, "BF16", cfg(pipelining_depth=0), False, 0),
          (f"{m} int8 N_tile 32", m, "BF16", cfg(N_tile=32), False, 0)]
    m = "smollm2-135m"
    p += [(f"{m} int8 N_tile 16 depth 0", m, "BF16", cfg(N_tile=16, pipelining_depth=0), False, 0),
          (f"{m} int8 depth 0", m, "BF16", cfg(pipelining_depth=0), False, 0)]
    p.append(("toy-2L int8 base", "toy-2L", "BF16", cfg(), False, 0))
    return p


def points_round6():
    """Another chip: configs the H100 ran in rounds 1 and 2, lowered for an H200 (the H100's SMs
    and clock with 43% more HBM bandwidth), their predictions under the H100's amk-cuda recorded
    before they ran; no constant is refitted for it."""
    best = cfg(N_tile=16, pipelining_depth=0)
    p = []
    m = "small-4L"
    p += [(f"{m} bf16 base", m, "BF16", cfg(), False, 0),
          (f"{m} bf16 depth 0", m, "BF16", cfg(pipelining_depth=0), False, 0),
          (f"{m} bf16 threads 64", m, "BF16", cfg(threads_per_block=64), False, 0),
          (f"{m} bf16 threads 128", m, "BF16", cfg(threads_per_block=128), False, 0),
          (f"{m} bf16 search best", m, "BF16", best, False, 0),
          (f"{m} bf16 pos 255", m, "BF16", cfg(), False, 255),
          (f"{m} fp32 base", m, "F32", cfg(), False, 0)]
    m = "llama-3.2-1b"
    p += [(f"{m} bf16 base", m, "BF16", cfg(), False, 0),
          (f"{m} bf16 depth 0", m, "BF16", cfg(pipelining_depth=0), False, 0),
          (f"{m} bf16 threads 128", m, "BF16", cfg(threads_per_block=128), False, 0),
          (f"{m} bf16 search best", m, "BF16", best, False, 0),
          (f"{m} bf16 pos 255 split 8", m, "BF16", cfg(n_partitions=8), False, 255)]
    p += [("tinyllama-1.1b bf16 base", "tinyllama-1.1b", "BF16", cfg(), False, 0),
          ("smollm2-135m bf16 base", "smollm2-135m", "BF16", cfg(), False, 0),
          ("toy-2L bf16 base", "toy-2L", "BF16", cfg(), False, 0)]
    return p


def points_round7():
    """Int4 weights (group 128), predicted before they ran under amk-cuda as fitted to int8
    (quant_*: AMK's int4 GEMV loads the same 16-byte vectors of four columns, each now 32
    weights). Round 7 ran them lowered by amk at bf98958, which declared int4 as AMK's lowering
    does (packed I4 at the logical [N, K]); round 8 runs them as amk lowers them since, the
    bytes they are (U8 [N, K/2])."""
    return quant_points("int4") + [("toy-2L int4 base", "toy-2L", "BF16", cfg(), False, 0)]


def hint_points(fmt, tiles):
    """`fmt` weights at depths 0 and 2 (and 1 at N_tile 16) on each (model, N_tiles) of `tiles`."""
    p = []
    for m, ns in tiles:
        for n in ns:
            for d in ((0, 1, 2) if n == 16 and fmt == "int8" else (0, 2)):
                p.append((f"{m} {fmt} N_tile {n} depth {d}", m, "BF16",
                          cfg(N_tile=n, pipelining_depth=d), False, 0))
    return p


def points_round9():
    """Where AMK's L2 hint costs int8 (rounds 4 and 5: depth 2 ran 2-10% slower than depth 0,
    where amk-cuda predicts 3-5% faster): int8 at depths 0, 1 and 2, run on AMK's VM as it is and
    on two copies with one of its two hints taken out (the current GEMV's weights before its
    dependency wait; the next GEMV's before the current one computes)."""
    return hint_points("int8", (("llama-3.2-1b", (16, 64)), ("small-4L", (16,))))


def points_round10():
    """Round 9's question for int4 (as amk lowers it, U8 [N, K/2]), where round 8 had depth 2
    help small-4L: depths 0 and 2, on AMK's VM as it is and without the next GEMV's hint."""
    return hint_points("int4", (("llama-3.2-1b", (16, 64)), ("small-4L", (16, 64))))


ROUNDS = {"1": points, "2": points_round2, "3": points_round3, "4": points_round4,
          "5": points_round5, "6": points_round6, "7": points_round7, "8": points_round7,
          "9": points_round9, "10": points_round10}
# The rounds lowered with --quant, and how.
QUANT = {"4": "int8", "5": "int8", "7": "int4", "8": "int4", "9": "int8", "10": "int4"}
TARGET = {"6": "h200"}  # a round for another chip than the H100


def lower(args):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    os.makedirs(args.dir, exist_ok=True)
    target = TARGET.get(args.round, "h100")
    with open(os.path.join(args.dir, "points.jsonl"), "w") as out:
        for i, (label, model, dtype, config, compat, pos) in enumerate(ROUNDS[args.round]()):
            prog = f"p{i:02d}.json"
            cmd = [args.amk, "lower", os.path.join(root, "schedules", model + ".json"),
                   "--target", target, "--dtype", dtype, "--pos", str(pos),
                   "--config", config if isinstance(config, str) else json.dumps(config),
                   "-o", os.path.join(args.dir, prog)]
            if compat:
                cmd.append("--amk-compat")
            if args.round in QUANT:
                cmd += ["--quant", QUANT[args.round]]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"{label}: amk lower failed:\n{r.stderr}")
            point = {"label": label, "model": model, "config": config, "target": target,
                     "dtype": dtype, "amk_compat": compat, "pos": pos}
            out.write(json.dumps({"program_file": prog, "point": point,
                                  "lowered": r.stderr.strip().splitlines()[-1]}) + "\n")
            print(f"{prog} {label}: {r.stderr.strip().splitlines()[-1]}")


def measure(args):
    import torch

    sys.path.insert(0, os.path.abspath(args.amk))
    from schedule.ir import BufferKind, DType, MegakernelProgram
    from vm.loader import MegakernelVM, _torch_dtype

    started = time.time()
    dev = torch.cuda.get_device_properties(0)
    header = {"device": torch.cuda.get_device_name(0), "sms": dev.multi_processor_count,
              "torch": torch.__version__, "cuda": torch.version.cuda, "amk": args.amk_commit,
              "warmup": args.warmup, "iters": args.iters}
    print(json.dumps(header), flush=True)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    weights = {}

    def weight(b):
        key = b.source or b.name
        dt = _torch_dtype(b.dtype)
        shape = tuple(b.shape)
        if b.dtype == DType.I4:  # packed bytes, as AMK's quantizer stores them: uint8 [N, K/2]
            shape, dt = shape[:-1] + ((shape[-1] + 1) // 2,), torch.uint8
        w = weights.get(key)
        if w is None or tuple(w.shape) != shape or w.dtype != dt:
            if b.dtype == DType.I4:
                w = torch.randint(0, 256, shape, generator=gen, device="cuda", dtype=dt)
            else:
                w = (torch.randn(shape, generator=gen, device="cuda") * 0.02).to(dt)
            weights[key] = w
        return w

    def timed(fn, n):
        samples = []
        for _ in range(n):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1e3)
        samples.sort()
        return {"median": samples[len(samples) // 2], "min": samples[0], "max": samples[-1]}

    raw = open(os.path.join(args.dir, "raw.jsonl"), "w")
    raw.write(json.dumps({"header": header}) + "\n")
    with open(os.path.join(args.dir, "points.jsonl")) as f:
        entries = [json.loads(line) for line in f]
    knobs = json.loads(args.also_knobs) if args.also_knobs else None
    runs = [(e, None) for e in entries] + [(e, knobs) for e in entries[:args.also_first] if knobs]
    for e, kn in runs:
        point, rec = e["point"], {"label": e["point"]["label"], "lowered": e["lowered"]}
        if kn:
            rec["knobs"] = kn
        # A build variant compiles its own megakernel (minutes): start one only early enough.
        if time.time() - started > args.budget - (150 if kn else 0):
            rec["error"] = "not run: the time budget was spent"
            raw.write(json.dumps(rec) + "\n")
            continue
        try:
            t0 = time.time()
            prog = MegakernelProgram.load(os.path.join(args.dir, e["program_file"]))
            ws = {}
            for b in prog.buffers:
                if b.kind in (BufferKind.WEIGHT, BufferKind.CONST):
                    ws[b.source or b.name] = weight(b)
            inputs = {}
            for b in prog.buffers:
                if b.kind == BufferKind.IO_INPUT:
                    v = 11 if b.name == "token_id" else point["pos"] if b.name == "pos" else 0
                    inputs[b.name] = torch.full(tuple(b.shape), v, dtype=torch.int32)
            vm = MegakernelVM(prog, ws, device="cuda", knobs=kn)
            vm.run(inputs, kv={})
            rec["setup_s"] = round(time.time() - t0, 3)
            for _ in range(args.warmup):
                vm.run(inputs, kv={})
            rec["run_us"] = timed(lambda: vm.run(inputs, kv={}), args.iters)

            def launch():
                vm._counters.zero_()
                vm._abort.zero_()
                s = vm.ext.launch(*vm._launch_args)
                if s["status"] != "OK":
                    raise RuntimeError(f"launch: {s}")

            for _ in range(args.warmup):
                launch()
            torch.cuda.synchronize()
            rec["launch_us"] = timed(launch, args.iters)
            vm._check_abort()
            out = vm.run(inputs, kv={})
            logits = [v for k, v in out.items() if k == "logits"]
            rec["finite"] = bool(torch.isfinite(logits[0]).all()) if logits else None
            rec["tasks"] = len(prog.tasks)
            rec["grid_dim"] = int(vm.last_grid_dim)
            rec["threads_per_block"] = vm.threads_per_block
            rec["dyn_smem_bytes"] = vm.dyn_smem_bytes
            rec["status"] = vm.last_status.get("status")
            del vm
        except Exception as ex:  # a point that fails is recorded, the others still run
            rec["error"] = f"{type(ex).__name__}: {ex}"[:2000]
        raw.write(json.dumps(rec) + "\n")
        raw.flush()
        print(json.dumps(rec), flush=True)
    print(f"measured {len(entries)} points in {time.time() - started:.0f} s", flush=True)


def stream(args):
    """The chip's streaming bandwidth as a target's measured_bw_gbs: a device-to-device copy of
    1 GiB, read plus write, the best of 10 after 3 warm-ups."""
    import torch

    n = 1 << 30
    x = torch.empty(n, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = None
    for _ in range(10):
        s.record()
        y.copy_(x)
        e.record()
        e.synchronize()
        t = s.elapsed_time(e) * 1e-3
        best = t if best is None else min(best, t)
    print(f"{torch.cuda.get_device_name(0)}: device copy of {n} bytes: "
          f"{2 * n / best / 1e9:.0f} GB/s (read + write, best of 10)")


def merge(args):
    entries = [json.loads(line) for line in open(os.path.join(args.dir, "points.jsonl"))]
    by_label = {}
    for path in args.raw:
        for line in open(path):
            rec = json.loads(line)
            if "header" in rec or "knobs" in rec or "error" in rec:
                continue
            by_label.setdefault(rec["label"], []).append(rec["launch_us"]["median"])
    outs = [open(args.output, "w")] + ([open(args.held_out, "w")] if args.held_out else [])
    kept = 0
    for e in entries:
        times = by_label.get(e["point"]["label"])
        if not times:
            continue
        line = dict(e["point"])
        line["measured_us"] = round(sum(times) / len(times), 1)
        outs[kept % len(outs)].write(json.dumps(line) + "\n")
        kept += 1
    print(f"{kept} points of {len(entries)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    lo = sub.add_parser("lower", help="lower every point with amk (no GPU)")
    lo.add_argument("amk", help="the amk binary")
    lo.add_argument("dir")
    lo.add_argument("--round", choices=sorted(ROUNDS), default="1",
                    help="1: the points amk-cuda is fitted to and tested on; 2 and 3: chosen "
                    "after it, and after round 2; 4: int8 weights; 5: int8 after its fit; "
                    "6: an H200; 7 and 8: int4 weights (7: as I4, at bf98958); 9 and 10: int8 "
                    "and int4 with AMK's hints taken out")
    me = sub.add_parser("measure", help="time every lowered point on AMK's CUDA megakernel")
    me.add_argument("dir")
    me.add_argument("--amk", required=True, help="a checkout of RightNow-AI/AutoMegaKernel")
    me.add_argument("--amk-commit", default="", help="recorded with the results")
    me.add_argument("--warmup", type=int, default=5)
    me.add_argument("--iters", type=int, default=20)
    me.add_argument("--also-knobs", help="AMK build knobs (JSON) to measure the first points with "
                    "again, e.g. '{\"cpasync\": 0}' for the register-path GEMV")
    me.add_argument("--also-first", type=int, default=0, help="how many points --also-knobs takes")
    me.add_argument("--budget", type=float, default=400, help="seconds; later points are skipped")
    sub.add_parser("stream", help="the GPU's copy bandwidth (a target's measured_bw_gbs)")
    mg = sub.add_parser("merge", help="the measured points as amk calibrate reads them")
    mg.add_argument("dir", help="the folder `lower` wrote (its points.jsonl)")
    mg.add_argument("raw", nargs="+", help="raw.jsonl files of `measure`, one per pass")
    mg.add_argument("-o", "--output", required=True)
    mg.add_argument("--held-out", help="every other point goes here instead")
    args = ap.parse_args()
    {"lower": lower, "measure": measure, "stream": stream, "merge": merge}[args.step](args)


if __name__ == "__main__":
    main()
