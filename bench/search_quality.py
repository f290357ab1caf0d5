#!/usr/bin/env python3
"""The search quality table (#19, #44): for each model and target, the start's predicted latency
and the best the default search and AMK's search() (--algo amk) find at one budget, under each
target's runtime, with the trial at which each first reached its best.

With --seeds K both algorithms run seeds 0..K-1 as well, and a summary says, per pair, the best
any run found and for each algorithm how many of its seeds reached it and the median trial of
reaching it: where both always reach the same best, no algorithm can be strictly better at that
budget, only earlier.

    bench/search_quality.py [--budget 200] [--jobs 2] [--seeds K] [--amk build/ci/cli/amk]
"""
import argparse
import json
import statistics
import subprocess

MODELS = ["toy-1L", "toy-2L", "small-4L", "smollm2-135m", "tinyllama-1.1b", "llama-3.2-1b"]
TARGETS = ["h100", "a2a3", "tx8"]


def search(amk, model, target, algo, budget, jobs, seed=0):
    out = subprocess.run([amk, "search", model, "--target", target, "--algo", algo, "--budget",
                          str(budget), "--jobs", str(jobs), "--seed", str(seed), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def table(a):
    print(f"{'model':<16} {'target':<6} {'runtime':<9} {'start us':>10} {'descent us':>11} {'@':>4} "
          f"{'amk us':>10} {'@':>4} {'descent vs amk':>15}")
    worse = better = 0
    for m in MODELS:
        for t in TARGETS:
            d = search(a.amk, m, t, "descent", a.budget, a.jobs)
            k = search(a.amk, m, t, "amk", a.budget, a.jobs)
            s, bd, bk = d["start"]["predicted_us"], d["best"]["predicted_us"], k["best"]["predicted_us"]
            worse += bd > bk * (1 + 1e-9)
            better += bd < bk * (1 - 1e-9)
            print(f"{m:<16} {t:<6} {d['runtime']:<9} {s:>10.1f} {bd:>11.1f} {d['best']['index']:>4} "
                  f"{bk:>10.1f} {k['best']['index']:>4} {100 * (bd / bk - 1):>+14.2f}%")
    print(f"descent strictly better on {better}, worse on {worse} of {len(MODELS) * len(TARGETS)} "
          f"(@: the trial that first reached the best)")


def seeds(a):
    print(f"\nseeds 0..{a.seeds - 1}: per pair the best of all runs; per algorithm the seeds that "
          f"reached it and the median trial of reaching it")
    print(f"{'model':<16} {'target':<6} {'best us':>10} {'descent':>8} {'median @':>9} "
          f"{'amk':>5} {'median @':>9}")
    for m in MODELS:
        for t in TARGETS:
            runs = {algo: [search(a.amk, m, t, algo, a.budget, a.jobs, s)["best"]
                           for s in range(a.seeds)] for algo in ("descent", "amk")}
            best = min(b["predicted_us"] for rs in runs.values() for b in rs)
            cells = []
            for algo in ("descent", "amk"):
                hit = [b["index"] for b in runs[algo] if b["predicted_us"] <= best * (1 + 1e-9)]
                med = f"{statistics.median(hit):.0f}" if hit else "-"
                cells.append(f"{len(hit)}/{a.seeds}".rjust(8 if algo == "descent" else 5) +
                             f" {med:>9}")
            print(f"{m:<16} {t:<6} {best:>10.1f} {cells[0]} {cells[1]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=0)
    ap.add_argument("--amk", default="build/ci/cli/amk")
    a = ap.parse_args()
    table(a)
    if a.seeds > 0:
        seeds(a)


if __name__ == "__main__":
    main()
