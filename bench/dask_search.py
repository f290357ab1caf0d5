"""Candidates per second of one search spread over a 2-worker Dask LocalCluster, against the local
`jobs=2` search in the same run (the ratio is the engine's overhead), for several batch sizes (auto:
amk.search's default, one chunk per worker) and round widths.

    PYTHONPATH=build/release/python python3 bench/dask_search.py [--budget N] [--model M]

Each configuration runs `--repeat` times after a warm-up search; the median is reported. The
search's rounds depend on each other (a round is proposed from the results of the one before), so
each costs the engine one round trip; the script also measures that round trip with tasks that
do nothing. `min_batch` widens the rounds (both searches, local and Dask, run the same trials):
fewer round trips and fewer waits for the slowest worker per candidate; 192 (about 100 configs
per worker, 6 rounds) is the width that keeps the ratio at 0.8 or more on this 2-core machine."""
import argparse
import statistics
import time

from distributed import Client, LocalCluster

import amk


def rate(budget, **kwargs):
    t = time.perf_counter()
    r = amk.search(budget=budget, **kwargs)
    return r["evaluations"] / (time.perf_counter() - t)


class CountingClient:
    """A Dask client that counts the batches amk.search submits (one map each)."""

    def __init__(self, client):
        self.client, self.batches = client, 0

    def map(self, *args, **kwargs):
        self.batches += 1
        return self.client.map(*args, **kwargs)

    def __getattr__(self, name):  # gather, nthreads, submit: the client's
        return getattr(self.client, name)


def nothing(_request, configs):
    return [None] * len(configs)


def round_trip(client, workers, repeat=50):
    """Seconds from a map of one empty task per worker to its gathered results, as amk submits a
    batch (the median of `repeat`)."""
    held, times = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        futures = client.map(nothing, ["x"] * workers, [["{}"]] * workers, pure=False)
        held[:] = futures
        client.gather(futures)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="llama-3.2-1b")
    ap.add_argument("--target", default="h100")
    ap.add_argument("--budget", type=int, default=600)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch-sizes", default="4,8,16")
    ap.add_argument("--min-batches", default="0,64,192")
    a = ap.parse_args()
    common = dict(model=a.model, target=a.target, seed=3)
    rate(50, jobs=2, **common)
    print(f"{a.model} on {a.target}, budget {a.budget}")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        executor = client.get_executor()
        rate(50, executor=executor, **common)
        for mb in (int(x) for x in a.min_batches.split(",")):
            counting = CountingClient(client)
            r = amk.search(budget=a.budget, executor=counting, min_batch=mb, **common)
            evaluations, rounds = r["evaluations"], counting.batches
            # The default (None: one chunk per worker) and the sizes asked for.
            sizes = [None] + sorted({int(x) for x in a.batch_sizes.split(",") if x})
            local, dask = [], {bs: [] for bs in sizes}
            for _ in range(a.repeat):  # alternating, so a slow spell of the machine hits both
                local.append(rate(a.budget, jobs=2, min_batch=mb, **common))
                for bs in sizes:
                    dask[bs].append(rate(a.budget, executor=executor, batch_size=bs,
                                         min_batch=mb, **common))
            lo = statistics.median(local)
            print(f"min_batch {mb:>3}: {rounds} rounds for {evaluations} candidates, best "
                  f"{r['best_predicted_us']:.2f} us; local jobs=2 {lo:.0f} candidates/s")
            for bs in sizes:
                d = statistics.median(dask[bs])
                print(f"  dask 2 workers, batch_size {bs or 'auto':>4}: {d:6.0f} candidates/s, "
                      f"ratio {d / lo:.2f}")
        rtt = round_trip(client, 2)
        print(f"an empty round trip takes {rtt * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
