#!/usr/bin/env python3
"""The search quality table (#19, #44): for each model and target, the start's predicted latency
and the best the default search and AMK's search() (--algo amk) find at one budget, under each
target's runtime.

    bench/search_quality.py [--budget 200] [--jobs 2] [--amk build/ci/cli/amk]
"""
import argparse
import json
import subprocess

MODELS = ["toy-1L", "toy-2L", "small-4L", "smollm2-135m", "tinyllama-1.1b", "llama-3.2-1b"]
TARGETS = ["h100", "a2a3", "tx8"]


def search(amk, model, target, algo, budget, jobs):
    out = subprocess.run([amk, "search", model, "--target", target, "--algo", algo, "--budget",
                          str(budget), "--jobs", str(jobs), "--json"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--amk", default="build/ci/cli/amk")
    a = ap.parse_args()
    print(f"{'model':<16} {'target':<6} {'runtime':<9} {'start us':>10} {'descent us':>11} "
          f"{'amk us':>10} {'descent vs amk':>15}")
    worse = better = 0
    for m in MODELS:
        for t in TARGETS:
            d = search(a.amk, m, t, "descent", a.budget, a.jobs)
            k = search(a.amk, m, t, "amk", a.budget, a.jobs)
            s, bd, bk = d["start"]["predicted_us"], d["best"]["predicted_us"], k["best"]["predicted_us"]
            worse += bd > bk * (1 + 1e-9)
            better += bd < bk * (1 - 1e-9)
            print(f"{m:<16} {t:<6} {d['runtime']:<9} {s:>10.1f} {bd:>11.1f} {bk:>10.1f} "
                  f"{100 * (bd / bk - 1):>+14.2f}%")
    print(f"descent strictly better on {better}, worse on {worse} of {len(MODELS) * len(TARGETS)}")


if __name__ == "__main__":
    main()
