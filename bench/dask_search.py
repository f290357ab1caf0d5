"""Candidates per second of one search spread over a 2-worker Dask LocalCluster, against the local
`jobs=2` search in the same run (the ratio is the engine's overhead), for several batch sizes.

    PYTHONPATH=build/release/python python3 bench/dask_search.py [--budget N] [--model M]

Each configuration runs `--repeat` times after a warm-up search; the median is reported."""
import argparse
import statistics
import time

from distributed import Client, LocalCluster

import amk


def rate(budget, **kwargs):
    t = time.perf_counter()
    r = amk.search(budget=budget, **kwargs)
    return r["evaluations"] / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="llama-3.2-1b")
    ap.add_argument("--target", default="h100")
    ap.add_argument("--budget", type=int, default=600)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch-sizes", default="2,4,8,16,32")
    a = ap.parse_args()
    common = dict(model=a.model, target=a.target, seed=3)
    rate(50, jobs=2, **common)
    local = statistics.median(rate(a.budget, jobs=2, **common) for _ in range(a.repeat))
    print(f"{a.model} on {a.target}, budget {a.budget}: local jobs=2 {local:.0f} candidates/s")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        executor = client.get_executor()
        rate(50, executor=executor, **common)
        for bs in (int(x) for x in a.batch_sizes.split(",")):
            r = statistics.median(rate(a.budget, executor=executor, batch_size=bs, **common)
                                  for _ in range(a.repeat))
            print(f"  dask 2 workers, batch_size {bs:>3}: {r:6.0f} candidates/s, "
                  f"ratio {r / local:.2f}")


if __name__ == "__main__":
    main()
