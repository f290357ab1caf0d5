"""Proves amk on executors and on Dask: amk.search(executor=...) gives the local search's trials
and best whatever the executor (with or without min_batch), a Dask worker killed mid-search loses nothing, validate_many
equals the CLI's verdicts on the conformance corpus, and search_many equals local searches.
Clusters bind to 127.0.0.1 only, and every wait is bounded."""
import concurrent.futures
import json
import os
import pathlib
import signal
import subprocess
import time

import pytest
from distributed import Client, LocalCluster

import amk
import amk.distributed

ROOT = pathlib.Path(os.environ.get("AMK_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
AMK = os.environ.get("AMK_BINARY", "amk")
PROGRAMS = ROOT / "tests" / "conformance" / "programs"
TIMING = ("eval_us", "lower_us", "validate_us", "cost_us", "proof")


def same_search(a, b):
    """The trials (without their timings) and the best of two searches."""
    strip = [[{k: v for k, v in t.items() if k not in TIMING} for t in r["trials"]] for r in (a, b)]
    return strip[0] == strip[1] and a["best"] == b["best"] and a["best_config"] == b["best_config"]


def local_cluster(workdir, workers=2):
    """A cluster on 127.0.0.1 whose workers keep their files in the test's `workdir`."""
    return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                        dashboard_address=None, worker_dashboard_address=None,
                        local_directory=str(workdir))


def test_search_with_a_thread_pool_executor_equals_the_local_search():
    local = amk.search("small-4L", "h100", budget=40, seed=5, jobs=2)
    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        for batch_size in (1, 5, None):
            remote = amk.search("small-4L", "h100", budget=40, seed=5, executor=ex,
                                batch_size=batch_size)
            assert same_search(local, remote)
    with pytest.raises(ValueError):
        amk.search("small-4L", "h100", budget=4, executor=ex, batch_size=0)


def test_an_executor_that_fails_stops_the_search_and_the_exception_propagates():
    class Broken(concurrent.futures.Executor):
        def submit(self, fn, *args, **kwargs):
            raise RuntimeError("no workers")

    with pytest.raises(RuntimeError, match="no workers"):
        amk.search("toy-1L", "h100", budget=10, executor=Broken())


class Tampering(concurrent.futures.Executor):
    """Runs each chunk at once and hands back what `tamper(trials)` makes of its results."""

    def __init__(self, tamper):
        self.tamper = tamper

    def submit(self, fn, *args, **kwargs):
        f = concurrent.futures.Future()
        f.set_result(self.tamper(fn(*args, **kwargs)))
        return f


def test_executor_results_are_checked_against_the_configs_they_were_sent_for():
    cases = [
        (lambda r: r[::-1], "mixed up"),                        # another order
        (lambda r: r[:-1], "results for a chunk"),               # one missing
        (lambda r: r + r[:1], "results for a chunk"),            # one too many
        (lambda r: [1] * len(r), "of type int, not a trial"),       # not trials
        (lambda r: ["{}"] * len(r), "is not a trial"),            # not trials either
        (lambda r: None, "NoneType"),                            # no list at all
    ]
    for tamper, message in cases:
        with pytest.raises(RuntimeError, match=message):
            amk.search("small-4L", "h100", budget=20, seed=5, executor=Tampering(tamper),
                       batch_size=4)
    # Untouched results pass the same checks.
    assert same_search(amk.search("small-4L", "h100", budget=20, seed=5),
                       amk.search("small-4L", "h100", budget=20, seed=5,
                                  executor=Tampering(lambda r: r), batch_size=4))


def test_a_dask_cluster_without_workers_is_a_clear_error():
    class NoWorkers:  # what amk sees of a Dask client whose cluster has none
        def nthreads(self):
            return {}

        def map(self, *args, **kwargs):
            raise AssertionError("nothing to map to")

        def gather(self, *args, **kwargs):
            raise AssertionError("nothing to gather")

    with pytest.raises(RuntimeError, match="no workers"):
        amk.search("toy-1L", "h100", budget=4, executor=NoWorkers())


def test_a_future_that_never_resolves_times_out_instead_of_hanging():
    class Never(concurrent.futures.Executor):
        def submit(self, fn, *args, **kwargs):
            return concurrent.futures.Future()  # never completed

    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="within 0.5 s"):
        amk.search("toy-1L", "h100", budget=4, executor=Never(), timeout=0.5)
    assert time.monotonic() - t0 < 30
    with pytest.raises(ValueError):
        amk.search("toy-1L", "h100", budget=4, executor=Never(), timeout=0)


class KillOneWorker(concurrent.futures.Executor):
    """Submits to `inner`; right after the `at`-th submission, kills one worker process with
    SIGKILL while its tasks are in flight."""

    def __init__(self, client, at):
        self.inner, self.client, self.at, self.n, self.killed = client.get_executor(), client, at, 0, None

    def submit(self, fn, *args, **kwargs):
        future = self.inner.submit(fn, *args, **kwargs)
        self.n += 1
        if self.n == self.at:
            pids = self.client.run(os.getpid)
            victim = sorted(pids.values())[0]
            os.kill(victim, signal.SIGKILL)
            self.killed = victim
        return future


class KillAfterMap:
    """A Dask client (amk submits a whole batch with one map) that kills one worker process with
    SIGKILL right after the `at`-th batch went out, while its chunks are in flight."""

    def __init__(self, client, at):
        self.client, self.at, self.n, self.killed = client, at, 0, None

    def nthreads(self):
        return self.client.nthreads()

    def map(self, *args, **kwargs):
        futures = self.client.map(*args, **kwargs)
        self.n += 1
        if self.n == self.at:
            self.killed = sorted(self.client.run(os.getpid).values())[0]
            os.kill(self.killed, signal.SIGKILL)
        return futures

    def submit(self, *args, **kwargs):
        return self.client.submit(*args, **kwargs)

    def gather(self, *args, **kwargs):
        return self.client.gather(*args, **kwargs)


def test_a_search_on_dask_equals_the_local_one_and_survives_a_killed_worker(tmp_path):
    local = amk.search("llama-3.2-1b", "h100", budget=120, seed=11, jobs=2)
    with local_cluster(tmp_path) as cluster, Client(cluster, timeout=60) as client:
        client.wait_for_workers(2, timeout=60)
        for batch_size in (4, None):  # None: one chunk per worker
            remote = amk.search("llama-3.2-1b", "h100", budget=120, seed=11,
                                executor=client.get_executor(), batch_size=batch_size)
            assert same_search(local, remote)
        # Wider rounds (min_batch): other trials than the default's, the same on Dask as local.
        wide = amk.search("llama-3.2-1b", "h100", budget=120, seed=11, jobs=2, min_batch=32)
        assert not same_search(local, wide)
        assert same_search(wide, amk.search("llama-3.2-1b", "h100", budget=120, seed=11,
                                            executor=client.get_executor(), batch_size=16,
                                            min_batch=32))

        seen = []
        killer = KillOneWorker(client, at=6)
        killed = amk.search("llama-3.2-1b", "h100", budget=120, seed=11, executor=killer,
                            batch_size=4, on_trial=lambda t: seen.append(t["index"]))
        assert killer.killed is not None
        assert seen == list(range(len(killed["trials"])))  # every trial exactly once, in order
        assert same_search(local, killed)
        client.wait_for_workers(2, timeout=60)  # the nanny brought the worker back
        assert killer.killed not in client.run(os.getpid).values()

        # The same on the Dask path (a batch submitted as one map), killed mid-batch.
        seen = []
        killer = KillAfterMap(client, at=4)
        killed = amk.search("llama-3.2-1b", "h100", budget=120, seed=11, executor=killer,
                            batch_size=4, on_trial=lambda t: seen.append(t["index"]))
        assert killer.killed is not None
        assert seen == list(range(len(killed["trials"])))
        assert same_search(local, killed)
        client.wait_for_workers(2, timeout=60)


def cli_verdict(path):
    r = subprocess.run([AMK, "validate", "--json", str(path)], capture_output=True, text=True,
                       timeout=60)
    return r.returncode, json.loads(r.stdout)["files"][0]


def test_validate_many_on_the_conformance_corpus_equals_the_cli_verdicts(tmp_path):
    files = sorted(PROGRAMS.glob("*.json"))
    texts = [files[0].read_text(), files[1].read_text()]
    with local_cluster(tmp_path) as cluster, Client(cluster, timeout=60) as client:
        verdicts = amk.distributed.validate_many([str(f) for f in files] + texts, client,
                                                 batch_size=5)
    assert len(verdicts) == len(files) + 2
    for f, v in zip(files, verdicts):
        rc, doc = cli_verdict(f)
        assert v["file"] == str(f)
        assert v["ok"] == (rc == 0), f
        assert v["unreadable"] == (rc == 2), f
        assert [e["code"] for e in v["errors"]] == [e["code"] for e in doc["errors"]], f
        if rc != 2:
            assert v["stats"] == doc["stats"], f
    for f, v in zip(files[:2], verdicts[len(files):]):  # texts: the same verdicts, no file
        by_path = verdicts[files.index(f)]
        assert v["file"] is None and v["ok"] == by_path["ok"]
        assert v["errors"] == by_path["errors"]


def test_search_many_equals_the_searches_run_locally(tmp_path):
    jobs = [dict(model="toy-2L", target="h100", budget=12, seed=s) for s in (1, 2)]
    jobs.append(dict(model="small-4L", target="a100", budget=10, algo="amk"))
    with local_cluster(tmp_path) as cluster, Client(cluster, timeout=60) as client:
        results = amk.distributed.search_many(jobs, client)
    assert len(results) == 3
    for job, r in zip(jobs, results):
        local = amk.search(**job)
        assert same_search(local, r)
        assert r["best_program"] == local["best_program"].dumps()
