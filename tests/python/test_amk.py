"""Proves the Python module `amk`: every function, its errors, the GIL released around long calls,
and that amk.search gives the trials and best of `amk search` for the same arguments."""
import json
import os
import pathlib
import subprocess
import threading
import warnings

import pytest

import amk

ROOT = pathlib.Path(os.environ.get("AMK_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
AMK = os.environ.get("AMK_BINARY", "amk")
PROGRAMS = ROOT / "tests" / "conformance" / "programs"


def test_load_and_dumps_give_amks_exact_bytes():
    for f in ["llama_1B_default.json", "toy_1L_default.json", "bad_sm_queue_order.json"]:
        p = amk.load(str(PROGRAMS / f))
        assert p.dumps() == (PROGRAMS / f).read_text()
        assert amk.loads(p.dumps()).dumps() == p.dumps()
    p = amk.load(str(PROGRAMS / "llama_1B_default.json"))
    assert len(p) == 4098 == len(p.tasks)
    assert p.tasks[0]["id"] == 0 and "op" in p.tasks[0]
    assert {"id", "name", "kind", "dtype", "shape"} <= set(p.buffers[0])
    assert len(p.counters) > 0


def test_malformed_input_raises_load_error_naming_line_column_and_pointer():
    with pytest.raises(amk.LoadError) as e:
        amk.loads('{"ir_version": "0.2.0", "tasks": [}')
    assert "1:" in str(e.value) and "json.syntax" in str(e.value)
    assert isinstance(e.value, ValueError)
    bad = ROOT / "tests" / "ir" / "malformed" / "threshold_string.json"
    with pytest.raises(amk.LoadError) as e:
        amk.load(str(bad))
    assert "threshold_string.json" in str(e.value)
    assert "/tasks/0/waits/0/threshold" in str(e.value)
    with pytest.raises(amk.LoadError):
        amk.load("/no/such/file.json")


def test_load_reads_mpk_and_pto_graphs_with_their_runtimes_capacities():
    corpus = ROOT / "tests" / "formats" / "corpus"
    mpk = ROOT / "tests" / "formats" / "data" / "mpk" / "task_graph.json"
    assert amk.validate(amk.load(str(mpk))).ok
    assert amk.validate(amk.load(str(mpk), format="mpk")).ok
    with pytest.raises(amk.LoadError) as e:
        amk.load(str(mpk), format="amk")
    assert "format.mismatch" in str(e.value)
    with pytest.raises(ValueError):
        amk.load(str(mpk), format="nope")
    deps = str(corpus / "pto-277-scope-window-ok" / "deps.json")
    assert amk.validate(amk.load(deps)).ok
    bad = amk.validate(amk.load(deps, launch=["task_window=8"]))
    assert not bad.ok and bad.errors[0]["code"] == "capacity.task-window"
    # simpler #1798: the blocking-wait pairs come with the launch overrides.
    twait = corpus / "pto-1798-twait"
    launch = (twait / "args").read_text().split()[1::2]
    assert not amk.validate(amk.load(str(twait / "deps.json"))).errors  # no pairs: nothing blocks
    bad = amk.validate(amk.load(str(twait / "deps.json"), launch=launch))
    assert [e["code"] for e in bad.errors] == ["capacity.twait"] * 4


def test_validate_reports_verdict_rules_pointers_tasks_and_stats():
    ok = amk.validate(amk.load(str(PROGRAMS / "toy_1L_default.json")))
    assert ok.ok and bool(ok) and ok.errors == []
    assert list(ok.stats)[:3] == ["tasks", "buffers", "counters"]
    bad = amk.validate((PROGRAMS / "bad_sm_queue_order.json").read_text())  # text works too
    assert not bad.ok
    e = bad.errors[0]
    assert e["code"] == "sm.queue-order" and e["pointer"] == "/tasks/0/sm" and e["task"] == 0
    assert "sm.queue-order" in bad.report() or "SM 0 queue order" in bad.report()


def test_lower_takes_configs_as_dicts_text_files_or_auto_and_refuses_bad_ones(tmp_path):
    a = amk.lower("toy-1L", "h100", {"tiling": {"gemv": {"N_tile": 32}}})
    b = amk.lower("toy-1L", "h100", '{"tiling": {"gemv": {"N_tile": 32}}}')
    assert a.dumps() == b.dumps() and len(a) == 38
    assert len(amk.lower("toy-1L", "h100")) == 27  # AMK's default_config
    assert len(amk.lower("toy-1L", "h100", "auto")) > 0
    config = tmp_path / "config.json"
    config.write_text('{"tiling": {"gemv": {"N_tile": 32}}}')
    assert amk.lower("toy-1L", "h100", str(config)).dumps() == a.dumps()  # a file, as --config
    cli = subprocess.run([AMK, "lower", "toy-1L", "-t", "h100", "--pos", "3", "-o", "-"],
                         capture_output=True, text=True, check=True).stdout
    assert amk.lower("toy-1L", "h100", pos=3).dumps() == cli
    q = amk.lower("toy-1L", "h100", dtype="BF16", quant="int8")
    assert any(b["dtype"] == "I8" for b in q.buffers)
    assert len(amk.lower("toy-1L", "h100", batch=4)) > 0
    with pytest.raises(amk.LoadError) as e:
        amk.lower("toy-1L", "h100", {"tiling": {"gemv": {"N_tile": 0}}})
    assert "/config/tiling/gemv/N_tile" in str(e.value)
    with pytest.raises(amk.LoadError):
        amk.lower("gpt-2", "h100")
    with pytest.raises(amk.LoadError):
        amk.lower("toy-1L", "h100", quant="int3")
    # The dtypes and quantisations `amk lower` and `amk serve` take, no others.
    for dtype, quant in (("I32", None), ("F32", "none"), ("F32", "")):
        with pytest.raises(amk.LoadError):
            amk.lower("toy-1L", "h100", dtype=dtype, quant=quant)
    refused = subprocess.run([AMK, "lower", "toy-1L", "--dtype", "I32", "-o", "-"],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "use F32, BF16 or F16" in refused.stderr


def test_lower_warns_of_a_config_beyond_its_runtimes_launch_as_the_cli_does():
    config = {"tiling": {"gemv": {"N_tile": 32}}, "threads_per_block": 512}
    with pytest.warns(amk.AmkWarning) as caught:
        p = amk.lower("toy-2L", "h100", config)  # amk-cuda launches 256 threads a block
    assert len(p) > 0 and issubclass(amk.AmkWarning, UserWarning)
    (w,) = caught
    assert "/threads_per_block" in str(w.message) and "runtime.limit" in str(w.message)
    assert "more than runtime amk-cuda launches (256)" in str(w.message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to say: no warning at all
        amk.lower("toy-2L", "h100", config, runtime="mpk")
        amk.lower("toy-2L", "h100", {"tiling": {"gemv": {"N_tile": 32}}})
        with pytest.raises(amk.AmkWarning):  # -W error makes it an exception, as Python's own
            amk.lower("toy-2L", "h100", config)


def test_models_targets_cost_and_diff():
    assert "llama-3.2-1b" in amk.models() and "toy-1L" in amk.models()
    assert "h100" in amk.targets() and "a2a3" in amk.targets()
    p = amk.lower("toy-2L", "h100")
    c = amk.cost(p, "h100")
    assert c["predicted_us"] > c["floor_us"] > 0 and c["sm_assigned"]
    info = json.loads(subprocess.run([AMK, "info", "-", "--json", "-t", "h100"], input=p.dumps(),
                                     capture_output=True, text=True, check=True).stdout)
    assert abs(info["cost"]["predicted_us"] - c["predicted_us"]) < 0.05
    q = amk.lower("toy-2L", "h100", {"tiling": {"gemv": {"N_tile": 32}}})
    changes = amk.diff(p, q)
    assert any(ch["entity"] == "task" and ch["change"] == "added" for ch in changes)
    assert amk.diff(p, p) == []


def strip(trial):
    """A trial without what depends on the run rather than the config: its timings, and its proof
    path (which job took it, and what that job's validator proved last)."""
    return {k: v for k, v in trial.items()
            if k != "proof" and (not k.endswith("_us") or k in ("predicted_us", "amk_formula_us"))}


def test_search_gives_the_trials_and_best_of_the_cli(tmp_path):
    log = tmp_path / "trials.jsonl"
    subprocess.run([AMK, "search", "toy-2L", "-t", "h100", "--budget", "25", "--seed", "3",
                    "--jobs", "2", "--log", str(log), "-o", str(tmp_path / "best.json")],
                   check=True, capture_output=True)
    cli = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    seen = []
    r = amk.search("toy-2L", "h100", budget=25, seed=3, jobs=2, on_trial=seen.append)
    assert [strip(t) for t in r["trials"]] == [strip(t) for t in cli]
    assert [t["index"] for t in seen] == list(range(len(r["trials"])))
    best_cli = json.loads((tmp_path / "best.json").read_text())
    assert r["best_config"] == best_cli
    assert amk.validate(r["best_program"]).ok
    assert r["best_predicted_us"] <= r["trials"][0]["predicted_us"]
    # Wider rounds, as `--min-batch`.
    subprocess.run([AMK, "search", "toy-2L", "-t", "h100", "--budget", "25", "--seed", "3",
                    "--min-batch", "12", "--log", str(tmp_path / "wide.jsonl")],
                   check=True, capture_output=True)
    cli = [json.loads(line) for line in (tmp_path / "wide.jsonl").read_text().splitlines()[1:]]
    wide = amk.search("toy-2L", "h100", budget=25, seed=3, jobs=2, min_batch=12)
    assert [strip(t) for t in wide["trials"]] == [strip(t) for t in cli]


def test_search_takes_and_refuses_what_the_cli_takes_and_refuses(tmp_path):
    start = tmp_path / "start.json"
    start.write_text('{"tiling": {"gemv": {"N_tile": 32}}}')
    cli_log = tmp_path / "cli.jsonl"
    subprocess.run([AMK, "search", "toy-1L", "--budget", "6", "--start", str(start), "--log",
                    str(cli_log), "-o", str(tmp_path / "best.json")], check=True,
                   capture_output=True)
    cli = [json.loads(line) for line in cli_log.read_text().splitlines()[1:]]
    for given in (str(start), start.read_text(), json.loads(start.read_text())):
        r = amk.search("toy-1L", "h100", budget=6, start=given)
        assert [strip(t) for t in r["trials"]] == [strip(t) for t in cli]
    bad = tmp_path / "bad.json"
    bad.write_text('{"tiling": 3}')
    refused = {"budget": 0, "jobs": 0, "start": "auto", "min_batch": -1}
    for key, value in refused.items():
        with pytest.raises(amk.LoadError, match=key):
            amk.search("toy-1L", "h100", **({"budget": 5} | {key: value}))
    with pytest.raises(amk.LoadError, match="min_batch applies to the descent algorithm"):
        amk.search("toy-1L", "h100", budget=5, algo="amk", min_batch=4)
    with pytest.raises(amk.LoadError, match="bad.json.*/config/tiling"):
        amk.search("toy-1L", "h100", budget=5, start=str(bad))
    with pytest.raises(amk.LoadError, match="no-such.json"):
        amk.search("toy-1L", "h100", budget=5, start=str(tmp_path / "no-such.json"))
    # A start beyond the runtime's launch is searched from, and said to be (as amk search does).
    wide = tmp_path / "wide.json"
    wide.write_text('{"threads_per_block": 512}')
    with pytest.warns(amk.AmkWarning, match=r"wide\.json.*/threads_per_block.*runtime\.limit"):
        assert amk.search("toy-1L", "h100", budget=3, start=str(wide))["trials"]


def test_on_trial_can_stop_the_search_and_its_exceptions_propagate():
    r = amk.search("toy-1L", "h100", budget=50, on_trial=lambda t: t["index"] < 4)
    assert r["stopped"] and len(r["trials"]) == 5

    def boom(t):
        if t["index"] == 2:
            raise KeyError("from on_trial")
    with pytest.raises(KeyError, match="from on_trial"):
        amk.search("toy-1L", "h100", budget=50, on_trial=boom)
    with pytest.raises(amk.LoadError):
        amk.search("toy-1L", "h100", algo="annealing")


def test_threads_validate_concurrently_with_correct_results():
    text = (PROGRAMS / "llama_1B_default.json").read_text()
    bad = (PROGRAMS / "bad_sm_queue_order.json").read_text()
    results = {}

    def work(name, t):
        results[name] = [amk.validate(amk.loads(t)).ok for _ in range(3)]
    threads = [threading.Thread(target=work, args=("good", text)),
               threading.Thread(target=work, args=("bad", bad))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert results == {"good": [True] * 3, "bad": [False] * 3}


def test_lone_surrogates_and_invalid_utf8_reach_python_as_valid_text():
    # A lone surrogate in the str itself, and one escaped in the JSON text: a LoadError that says
    # where and why, not a TypeError, a UnicodeDecodeError or an empty message.
    with pytest.raises(amk.LoadError) as e:
        amk.loads('{"ir_version": "\ud800"}')
    assert "1:" in str(e.value) and "UTF-8" in str(e.value)
    with pytest.raises(amk.LoadError) as e:
        amk.loads('{"ir_version": "\\ud800"}')
    assert "/ir_version" in str(e.value)
    str(e.value).encode("utf-8")  # valid text
    # A task label with one: every view of the program and of the verdict is valid text, the
    # label's surrogate shown as U+FFFD.
    p = json.loads((PROGRAMS / "toy_1L_default.json").read_text())
    p["tasks"][1]["label"] = "norm\ud800x"
    p["tasks"][1]["params"]["eps"] = -1.0  # an error whose message names the task by its label
    prog = amk.loads(json.dumps(p))
    assert prog.tasks[1]["label"] == "norm\ufffdx"
    r = amk.validate(prog)
    assert not r.ok
    assert any("norm\ufffdx" in e["message"] for e in r.errors), r.errors
    assert "norm\ufffdx" in r.report()
    assert r.stats["tasks"] == len(p["tasks"])
    for text in [r.report(), json.dumps(prog.tasks)] + [e["message"] for e in r.errors]:
        text.encode("utf-8")
    assert amk.loads(prog.dumps()).dumps() == prog.dumps()  # AMK's bytes keep the escape
    assert "\\ud800" in prog.dumps()
    # JSON that amk hands back (an answer of amk.call) carries it as its escape: json.loads gives
    # back the very str that went in, not U+FFFD.
    target = json.loads(subprocess.run([AMK, "targets", "h100", "--json"], capture_output=True,
                                       text=True, check=True).stdout)
    target["name"] = "h100\ud800"
    lowered = amk.call("lower", model="toy-1L", target=target)
    assert lowered["program"]["target"]["name"] == "h100\ud800"
    assert lowered["program"]["meta"]["gpu"] == "h100\ud800"
