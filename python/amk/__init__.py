"""amk: megakernel schedules from Python (AMK's IR, the validator, the lowering, the cost model,
the search). The work is done by the C++ extension amk._amk; this package adds the executor seam
of amk.search and amk.distributed (Dask)."""
import asyncio as _asyncio
import concurrent.futures as _futures
import json as _json
import time as _time

from . import _amk
from ._amk import AmkWarning, LoadError, Program, Result, cost, diff, load, loads, lower, models
from ._amk import runtimes, targets, validate

__all__ = ["AmkWarning", "LoadError", "Program", "Result", "cost", "diff", "load", "loads", "lower",
           "models", "runtimes", "targets", "validate", "search", "call"]

# How often a batch whose worker was lost (a killed process, a lost connection) is submitted again
# before the search gives up.
_RETRIES = 3
# The chunk size of an executor whose threads amk cannot count (batch_size=None elsewhere than
# on Dask).
_CHUNK = 8


def call(op, **args):
    """Runs one operation of `amk serve` (validate, lower, cost, search_eval, info, diff, search)
    on this thread's warm worker; returns its result, or raises LoadError with its diagnostics."""
    answer = _json.loads(_amk.call(op, _json.dumps(args)))
    if not answer["ok"]:
        raise LoadError(answer["error"]["message"])
    return answer["result"]


def _evaluate(request, configs):
    # What an executor's worker runs: a batch of configs on the worker's warm lowering/validator.
    return _amk.evaluate(request, configs)


def _dask_client(executor):
    """The Dask client behind `executor` (a distributed Client, or its get_executor()), else
    None."""
    client = getattr(executor, "_client", executor)
    dask = all(hasattr(client, a) for a in ("map", "gather", "nthreads"))
    return client if dask else None


# What a future's result(timeout=...) raises when the time is up (one class from Python 3.11 on).
_TIMEOUTS = (TimeoutError, _futures.TimeoutError, _asyncio.TimeoutError)


def _left(deadline):
    """Seconds left until `deadline` (time.monotonic()), or None for no deadline."""
    return None if deadline is None else max(0.0, deadline - _time.monotonic())


def _timed_out(n, timeout):
    return TimeoutError(f"the executor returned no results for a batch of {n} configs within "
                        f"{timeout} s (amk.search's timeout)")


def _result(executor, request, chunk, future, retries, deadline=None):
    """The evaluations of `chunk` by `future`, submitting it again (up to `retries` times) when its
    worker is lost; past `deadline` the future is cancelled and the time-out raised."""
    for attempt in range(retries + 1):
        try:
            return future.result(timeout=_left(deadline))
        except LoadError:
            raise  # amk refused the request: resubmitting cannot help
        except _TIMEOUTS:
            future.cancel()
            raise
        except Exception:  # a lost worker (Dask's KilledWorker, a broken pool, ...)
            if attempt == retries:
                raise
            future = executor.submit(_evaluate, request, chunk)


def _chunk_results(results, places):
    """Checks that the executor gave one list of trials per chunk, each as long as its chunk."""
    if len(results) != len(places):
        raise RuntimeError(f"the executor returned {len(results)} chunks of results for "
                           f"{len(places)} chunks of configs")
    for p, r in zip(places, results):
        if not isinstance(r, (list, tuple)):
            raise RuntimeError(f"the executor returned a {type(r).__name__} for a chunk of "
                               f"{len(p)} configs, not a list of trials")
        if len(r) != len(p):
            raise RuntimeError(f"the executor returned {len(r)} results for a chunk of "
                               f"{len(p)} configs")


def _batches(executor, batch_size, retries=_RETRIES, timeout=None):
    """evaluate_batch for amk._amk.search: splits a batch of n configs into max(n / batch_size,
    worker threads on Dask) chunks of about equal cost (None: on Dask one per worker thread,
    elsewhere chunks of about _CHUNK configs), submits them to the executor, resubmits a chunk
    whose worker was lost, and raises TimeoutError when a batch's results take longer than
    `timeout` seconds (None: no limit)."""
    client = _dask_client(executor)
    threads = sum(client.nthreads().values()) if client is not None else 1
    if threads == 0:
        raise RuntimeError("the Dask cluster has no workers: start some (dask worker ADDRESS) or "
                           "wait for them (client.wait_for_workers(n)) before amk.search")
    # What the executor was made with (get_executor(workers=..., resources=...)) holds for the
    # whole batch too; pure=False: every batch is computed, as every submit is.
    options = {"pure": False, **getattr(executor, "_kwargs", {})}
    held = []

    def evaluate_batch(request, configs):
        n = len(configs)
        size = batch_size or (-(-n // threads) if client is not None else _CHUNK)
        k = min(n, max(-(-n // size), threads))
        # Chunks of about equal cost that keep the configs of one tiling and fusion together
        # (a worker's warm lowering then tiles them once), not slices of the batch: it lists the
        # configs that keep the incumbent's tiling (cheap) before those that retile (dear).
        places = _amk.affinity_chunks(configs, k)
        chunks = [[configs[i] for i in p] for p in places]
        k = len(chunks)
        if client is not None:
            # One message to the scheduler for the whole batch: Dask sends a client's messages
            # at most every 10 ms, so separate submissions would leave workers waiting.
            futures = client.map(_evaluate, [request] * k, chunks, **options)
        else:
            futures = [executor.submit(_evaluate, request, c) for c in chunks]
        # The previous batch's futures are released only now, after this batch went out (their
        # release, sent first, would hold this batch back by Dask's 10 ms).
        held[:] = futures
        deadline = None if timeout is None else _time.monotonic() + timeout
        results = None
        try:
            if client is not None:
                try:  # one request for every chunk's results (a future's result() is one each)
                    if deadline is not None:
                        from distributed import wait
                        wait(futures, timeout=_left(deadline))
                    results = client.gather(futures)
                except _TIMEOUTS:
                    raise
                except Exception:  # a lost worker, or amk's refusal: sorted out chunk by chunk
                    pass
            if results is None:
                results = [_result(executor, request, chunk, future, retries, deadline)
                           for chunk, future in zip(chunks, futures)]
        except _TIMEOUTS:
            for f in futures:
                f.cancel()
            raise _timed_out(n, timeout) from None
        _chunk_results(results, places)
        out = [None] * n
        for p, r in zip(places, results):
            for i, trial in zip(p, r):
                out[i] = trial
        return out

    return evaluate_batch


def search(model, target, budget=200, seed=0, jobs=1, algo="descent", objective="predicted",
           start=None, on_trial=None, executor=None, batch_size=None, min_batch=0, timeout=None,
           runtime=None):
    """Searches ScheduleConfigs with the full proof in the loop: the trials and best of
    `amk search` with the same arguments. on_trial(trial) sees each trial in order (False stops
    the search; an exception stops it and propagates).

    executor: any concurrent.futures.Executor (a ThreadPoolExecutor, a Dask client's
    get_executor() or the client itself, ...). Each batch of candidates is split into chunks of
    about batch_size configs (on Dask, at least one per worker thread) and about equal cost, the
    configs of one tiling and fusion kept together, submitted to it; a chunk whose worker is lost
    is submitted again. batch_size=None: on Dask one chunk per worker thread (the fewest tasks,
    which measured fastest), on another executor about 8 configs.
    Without one, `jobs` local threads evaluate. The same seed gives the same trials and best
    either way. Every result is checked against the config it was sent for: a result of another
    count, type or config is a RuntimeError, as is a Dask cluster with no workers. timeout: the
    most seconds a batch's results may take (None: no limit); past it the search raises
    TimeoutError.

    min_batch (descent): at least this many new configs per batch where the space has them (the
    neighbours of the next best points join the current point's); fewer, wider batches keep more
    workers busy and cost an executor fewer round trips (on Dask, give about 100 per worker
    thread). The trials depend on it.

    runtime: the runtime profile predictions are for (a name from amk.runtimes() or a file;
    None: the target's)."""
    evaluate_batch = None
    if executor is not None:
        if batch_size is not None and batch_size < 1:
            raise ValueError("batch_size must be at least 1 (or None)")
        if timeout is not None and not timeout > 0:
            raise ValueError("timeout must be a positive number of seconds (or None)")
        evaluate_batch = _batches(executor, batch_size, timeout=timeout)
    return _amk.search(model, target, budget=budget, seed=seed, jobs=jobs, algo=algo,
                       objective=objective, start=start, on_trial=on_trial,
                       evaluate_batch=evaluate_batch, min_batch=min_batch, runtime=runtime)

