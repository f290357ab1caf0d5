#!/usr/bin/env python3
"""amk's reference VM against AMK's CUDA megakernel, value for value (#44): the same programs, the
same weights, one decode step each; the logits of both side by side.

Three steps, on two machines:

  lower    (here, no GPU): lowers a model (default toy-2L; --model NAME or spec file) in each weight
           format into DIR (fp32, bf16, int8, int4 as amk declares it, int4 as AMK declares it), at
           pipelining_depth 0; --weights also writes each program's weights (amk gen-weights,
           seeded) as DIR/NAME.weights.safetensors, for a model too big to bring them back.
  run      (on a CUDA machine with PyTorch and nvcc): for each program, takes its weights from
           DIR/NAME.weights.safetensors when there is one, else draws seeded random ones (int8
           levels in [-127, 127], int4 bytes, fp16 scales in [0.002, 0.02], norms near 1) and
           writes them there; runs the program once on AMK's CUDA VM (token 11 at pos 0, KV caches
           zero) and writes its logits to DIR/NAME.logits.safetensors.
  compare  (here): runs each program on amk's VM (`amk run --weights`) and prints, for each, the
           largest |logit difference|, the largest |logit| and whether the argmax agrees.

    bench/amk_cuda_numerics.py lower build/release/cli/amk /tmp/num
    python3 bench/amk_cuda_numerics.py run /tmp/num --amk PATH/TO/AutoMegaKernel
    bench/amk_cuda_numerics.py compare build/release/cli/amk /tmp/num
"""
import argparse
import json
import os
import random
import struct
import subprocess
import sys

VARIANTS = [  # name, amk lower options
    ("fp32", ["--dtype", "F32"]),
    ("bf16", ["--dtype", "BF16"]),
    ("int8", ["--dtype", "BF16", "--quant", "int8"]),
    ("int4", ["--dtype", "BF16", "--quant", "int4"]),
    ("int4-amk", ["--dtype", "BF16", "--quant", "int4", "--amk-compat"]),
]
MODEL = "toy-2L"  # the default model
TOKEN = 11


def read_safetensors(path):
    """{name: (dtype, shape, bytes)} of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    head = json.loads(data[8:8 + n])
    body = data[8 + n:]
    return {k: (v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in head.items() if k != "__metadata__"}


def write_safetensors(path, tensors):
    """tensors: {name: (dtype, shape, bytes)}."""
    head, off, blobs = {}, 0, []
    for k, (dt, shape, b) in tensors.items():
        head[k] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(head).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def lower(args):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    os.makedirs(args.dir, exist_ok=True)
    model = args.model if os.path.exists(args.model) else os.path.join(root, "schedules",
                                                                         args.model + ".json")
    for name, opts in VARIANTS:
        if name not in args.only.split(","):
            continue
        config = {"pipelining_depth": 0}
        if args.partitions:
            config["tiling"] = {"attention": {"n_partitions": args.partitions}}
        cmd = [args.amk, "lower", model, "--target", "h100", "--pos", str(args.pos), "--config",
               json.dumps(config), "-o", os.path.join(args.dir, name + ".json")] + opts
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{name}: amk lower failed:\n{r.stderr}")
        print(f"{name}: {r.stderr.strip().splitlines()[-1]}")
        base = os.path.join(args.dir, name)
        if args.weights:
            subprocess.run([args.amk, "gen-weights", base + ".json", "-o",
                            base + ".weights.safetensors"], check=True, capture_output=True)
        if args.pos > 0:  # KV caches holding seeded values: the positions before pos are read
            rng = random.Random(1)
            kv = {}
            with open(base + ".json") as f:
                prog = json.load(f)
            for b in prog["buffers"]:
                if b["kind"] == "KV_CACHE":
                    n = 1
                    for d in b["shape"]:
                        n *= d
                    vals = [struct.pack("<f", rng.gauss(0, 1))[2:] for _ in range(n)]  # bf16
                    assert b["dtype"] == "BF16", "the KV caches of a bf16 program"
                    kv[b["name"]] = ("BF16", b["shape"], b"".join(vals))
            write_safetensors(base + ".kv.safetensors", kv)


def run(args):
    import torch

    sys.path.insert(0, os.path.abspath(args.amk))
    from schedule.ir import BufferKind, DType, MegakernelProgram
    from vm.loader import MegakernelVM

    st_name = {DType.F32: "F32", DType.BF16: "BF16", DType.F16: "F16", DType.I8: "I8",
               DType.U8: "U8", DType.I32: "I32"}
    torch_of = {DType.F32: torch.float32, DType.BF16: torch.bfloat16, DType.F16: torch.float16}
    print(torch.cuda.get_device_name(0), flush=True)
    torch_st = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16,
                "I8": torch.int8, "U8": torch.uint8, "I32": torch.int32}
    for name, _ in VARIANTS:
        if not os.path.exists(os.path.join(args.dir, name + ".json")):
            continue
        prog = MegakernelProgram.load(os.path.join(args.dir, name + ".json"))
        gen = torch.Generator().manual_seed(0)
        ws, files = {}, {}
        given = os.path.join(args.dir, name + ".weights.safetensors")
        if os.path.exists(given):  # the weights amk drew here
            for k, (dt, shape, raw) in read_safetensors(given).items():
                ws[k] = torch.frombuffer(bytearray(raw), dtype=torch_st[dt]).reshape(shape)
        for b in [] if ws else prog.buffers:
            if b.kind not in (BufferKind.WEIGHT, BufferKind.CONST):
                continue
            key = b.source or b.name
            shape = tuple(b.shape)
            if b.dtype == DType.I8:
                t = torch.randint(-127, 128, shape, generator=gen, dtype=torch.int8)
            elif b.dtype in (DType.I4, DType.U8):  # packed int4 bytes, uint8 [N, K/2]
                shape = shape[:-1] + ((shape[-1] + 1) // 2,) if b.dtype == DType.I4 else shape
                t = torch.randint(0, 256, shape, generator=gen, dtype=torch.uint8)
            elif key.endswith(".scales"):
                t = (torch.rand(shape, generator=gen) * 0.018 + 0.002).to(torch_of[b.dtype])
            elif len(shape) == 1:  # norms
                t = (1 + torch.randn(shape, generator=gen) * 0.02).to(torch_of[b.dtype])
            else:
                t = (torch.randn(shape, generator=gen) * 0.05).to(torch_of[b.dtype])
            ws[key] = t
            dt = DType.U8 if b.dtype == DType.I4 else b.dtype
            raw = t.contiguous().view(torch.uint8).numpy().tobytes()
            files[key] = (st_name[dt], list(t.shape), raw)
        if files:
            write_safetensors(given, files)
        inputs = {}
        pos = int((prog.meta or {}).get("pos", 0))
        for b in prog.buffers:
            if b.kind == BufferKind.IO_INPUT:
                v = TOKEN if b.name == "token_id" else pos if b.name == "pos" else 0
                inputs[b.name] = torch.full(tuple(b.shape), v, dtype=torch.int32)
        vm = MegakernelVM(prog, {k: v.cuda() for k, v in ws.items()}, device="cuda")
        kv = {}
        if os.path.exists(os.path.join(args.dir, name + ".kv.safetensors")):
            for k, (dt, shape, raw) in read_safetensors(
                    os.path.join(args.dir, name + ".kv.safetensors")).items():
                kv[k] = torch.frombuffer(bytearray(raw), dtype=torch_st[dt]).reshape(shape).cuda()
        out = vm.run(inputs, kv=kv)
        logits = out["logits"].float().cpu().contiguous()
        write_safetensors(os.path.join(args.dir, name + ".logits.safetensors"),
                          {"logits": ("F32", list(logits.shape),
                                      logits.view(torch.uint8).numpy().tobytes())})
        print(f"{name}: logits {list(logits.shape)}, finite {bool(torch.isfinite(logits).all())}",
              flush=True)


def compare(args):
    for name, _ in VARIANTS:
        base = os.path.join(args.dir, name)
        if not os.path.exists(base + ".logits.safetensors"):
            continue
        out = base + ".amk.safetensors"
        cmd = [args.amk, "run", base + ".json", "--weights", base + ".weights.safetensors",
               "--token-id", str(TOKEN), "-o", out]
        if os.path.exists(base + ".kv.safetensors"):
            cmd += ["--kv", base + ".kv.safetensors"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name}: amk run failed: {r.stderr.strip()}")
            continue
        cuda = read_safetensors(base + ".logits.safetensors")["logits"][2]
        mine = read_safetensors(out)["logits"][2]
        a = struct.unpack(f"<{len(cuda) // 4}f", cuda)
        b = struct.unpack(f"<{len(mine) // 4}f", mine)
        diff = max(abs(x - y) for x, y in zip(a, b))
        top = max(abs(x) for x in a)
        same = max(range(len(a)), key=a.__getitem__) == max(range(len(b)), key=b.__getitem__)
        print(f"{name:9s} max |logit diff| {diff:.3g}, max |logit| {top:.3g}, "
              f"relative {diff / top:.2e}, argmax {'agrees' if same else 'DIFFERS'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="step", required=True)
    lo = sub.add_parser("lower", help="lower toy-2L in every weight format (no GPU)")
    lo.add_argument("amk")
    lo.add_argument("dir")
    lo.add_argument("--model", default=MODEL, help="a built-in model or a model spec file")
    lo.add_argument("--only", default=",".join(v[0] for v in VARIANTS),
                    help="the formats to lower, comma-separated")
    lo.add_argument("--weights", action="store_true", help="write the weights here too")
    lo.add_argument("--pos", type=int, default=0,
                    help="decode position; above 0 the KV caches hold seeded values "
                    "(DIR/NAME.kv.safetensors, bf16 programs)")
    lo.add_argument("--partitions", type=int, default=0, help="split-KV partitions (n_partitions)")
    ru = sub.add_parser("run", help="random weights and AMK's CUDA logits (on the GPU)")
    ru.add_argument("dir")
    ru.add_argument("--amk", required=True, help="a checkout of RightNow-AI/AutoMegaKernel")
    co = sub.add_parser("compare", help="amk's VM against the CUDA logits")
    co.add_argument("amk")
    co.add_argument("dir")
    args = ap.parse_args()
    {"lower": lower, "run": run, "compare": compare}[args.step](args)


if __name__ == "__main__":
    main()
