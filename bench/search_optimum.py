#!/usr/bin/env python3
"""The best config of a whole search space (#44): every config of schedules/space.json for one
model and target is lowered and predicted through the Python module, to tell whether a search's
best (bench/search_quality.py) is the space's optimum, in which case no algorithm can be strictly
better there, only earlier.

Configs that amk.lower refuses, or warns about (a runtime's launch limit), are left out, as the
search leaves them out. `--hold KNOB=JSON` holds a knob at one value instead of enumerating it:
for knobs the runtime documents as moving no prediction (page_allocation everywhere;
smem_bytes_per_block under amk-cuda), which only multiply the work.

    PYTHONPATH=build/ci/python bench/search_optimum.py toy-1L h100 \\
        --hold page_allocation='"graph_color"' --hold smem_bytes_per_block=0
"""
import argparse
import itertools
import json
import os
import sys
import time
import warnings

import amk

SPACE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "schedules", "space.json")


def config_of(values):
    """A ScheduleConfig from {knob path: value}; a null value leaves the knob out."""
    cfg = {}
    for path, v in values.items():
        if v is None:
            continue
        keys = path.split(".")
        at = cfg
        for k in keys[:-1]:
            at = at.setdefault(k, {})
        at[keys[-1]] = v
    return cfg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("target")
    ap.add_argument("--space", default=SPACE)
    ap.add_argument("--hold", action="append", default=[], metavar="KNOB=JSON")
    a = ap.parse_args()
    knobs = json.load(open(a.space))["knobs"]
    held = {}
    for h in a.hold:
        k, _, v = h.partition("=")
        if k not in knobs:
            sys.exit(f"--hold {h}: {k} is not a knob of {a.space}")
        held[k] = json.loads(v)
    domains = {}
    for k, d in knobs.items():
        if k in held:
            domains[k] = [held[k]]
        elif isinstance(d, dict):  # named presets (fusion_grouping)
            domains[k] = list(d.values())
        else:
            domains[k] = d
    best, n, left_out, t0 = None, 0, 0, time.time()
    for combo in itertools.product(*domains.values()):
        cfg = config_of(dict(zip(domains.keys(), combo)))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", amk.AmkWarning)
                program = amk.lower(a.model, a.target, config=cfg)
        except (ValueError, amk.AmkWarning):
            left_out += 1
            continue
        us = amk.cost(program, a.target)["predicted_us"]
        n += 1
        if best is None or us < best[0]:
            best = (us, cfg)
    print(json.dumps({"model": a.model, "target": a.target, "held": held, "configs": n,
                      "left_out": left_out, "best_predicted_us": best[0] if best else None,
                      "best_config": best[1] if best else None,
                      "seconds": round(time.time() - t0, 1)}))


if __name__ == "__main__":
    main()
