"""Runs the README's examples (each indented block after a `<!-- readme-example: sh|python -->`
line) from the repository root against this build, so the README cannot drift from amk."""
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(os.environ.get("AMK_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
AMK = os.environ.get("AMK_BINARY", "amk")


def examples():
    text = (ROOT / "README.md").read_text()
    found = []
    for m in re.finditer(r"<!-- readme-example: (sh|python) -->\n\n((?:    .*\n|\n)+)", text):
        block = "\n".join(line[4:] for line in m.group(2).rstrip("\n").split("\n"))
        found.append((m.group(1), block))
    return found


def run(kind, code):
    env = dict(os.environ)
    env["PATH"] = str(pathlib.Path(AMK).resolve().parent) + os.pathsep + env.get("PATH", "")
    cmd = ["bash", "-euo", "pipefail", "-c", code] if kind == "sh" else [sys.executable, "-c", code]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)


def test_every_readme_example_runs():
    found = examples()
    assert [k for k, _ in found] == ["sh", "python", "sh", "sh", "python"]
    for kind, code in found:
        r = run(kind, code)
        assert r.returncode == 0, f"{code}\n{r.stderr}"
        assert r.stdout.strip(), code
        if kind == "sh" and "tests/formats/corpus" in code:  # checking MPK and PTO graphs
            for said in ["capacity.coresidency", "needs sms = 134", "capacity.task-window",
                         "task_window      ring 1           17 / 16", "[VALID]"]:
                assert said in r.stdout, r.stdout
        elif kind == "sh":  # the JSONL and MCP sessions: one JSON answer per request with an id
            answers = [json.loads(line) for line in r.stdout.splitlines()]
            requests = [line for line in code.splitlines() if '"id"' in line]
            assert len(answers) == len(requests) > 0, r.stdout
            assert all("error" not in a and a.get("ok", True) for a in answers), r.stdout
