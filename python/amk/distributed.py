"""amk on a Dask cluster: validate a corpus of schedules and run many searches across workers.

Each worker process keeps a warm validator and lowering per thread (amk._amk's request seam), so
a worker pays for its set-up once, not per task. Paths must be readable on the workers (a shared
file system); texts travel with the task. For one search spread over a cluster, pass
`client.get_executor()` to amk.search(executor=...)."""
import json

from . import _amk
from . import search as _search

__all__ = ["validate_many", "search_many"]


def _is_text(item):
    return isinstance(item, str) and item.lstrip().startswith("{")


def _verdict(item):
    # One item's verdict on the worker: {file, ok, unreadable, errors, warnings, stats}.
    text = _is_text(item)
    answer = json.loads(_amk.call("validate", json.dumps({"text" if text else "path": str(item)})))
    out = {"file": None if text else str(item)}
    if answer["ok"]:
        r = answer["result"]
        out.update(ok=r["ok"], unreadable=False, errors=r["errors"], warnings=r["warnings"],
                   stats=r["stats"])
    else:
        diagnostics = answer["error"]["diagnostics"]
        out.update(ok=False, unreadable=True,
                   errors=[d for d in diagnostics if d["severity"] == "error"],
                   warnings=[d for d in diagnostics if d["severity"] == "warning"], stats=None)
    return out


def _validate_chunk(items):
    return [_verdict(i) for i in items]


def validate_many(items, client, batch_size=8):
    """Validates programs (file paths, or JSON texts starting with '{') on the cluster of
    `client`, batch_size per task. Returns one dict per item, in order: file (None for a text),
    ok, unreadable (it could not be read or parsed), errors and warnings (amk's diagnostics:
    code, message, pointer, task, ...) and stats (AMK's, None when unreadable)."""
    items = list(items)
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    chunks = [items[i:i + batch_size] for i in range(0, len(items), batch_size)]
    futures = [client.submit(_validate_chunk, c, pure=False) for c in chunks]
    return [v for chunk in client.gather(futures) for v in chunk]


def _search_job(job):
    job = dict(job)
    if "on_trial" in job or "executor" in job:
        raise ValueError("a search_many job takes amk.search's arguments but on_trial and executor")
    r = _search(**job)
    r["best_program"] = r["best_program"].dumps()  # AMK's bytes travel, a Program does not
    return r


def search_many(jobs, client):
    """Runs independent searches on the cluster of `client`, one task each: every job is a dict
    of amk.search's arguments (model, target, budget, seed, jobs, algo, objective, start).
    Returns amk.search's results in order, with best_program as AMK's JSON text."""
    futures = [client.submit(_search_job, j, pure=False) for j in jobs]
    return client.gather(futures)
