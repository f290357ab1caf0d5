"""What the Python package costs over C++, in one run: validating AMK's Llama-3.2-1B program
(tests/conformance/programs/llama_1B_default.json) already loaded, through amk.validate, against
bench_validate's BM_ValidateConformanceLlama1B (the same program and the same thread-local
validator, from C++), in 7 alternating pairs of runs, reporting the median pair; then validating
from JSON text (parse + proof) in Python, and two Python threads validating at once against one
after the other (the GIL is released).

    PYTHONPATH=build/release/python python3 bench/python_overhead.py [build/release]"""
import json
import pathlib
import statistics
import subprocess
import sys
import threading
import time

import amk

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAIRS = 7
PROGRAM = ROOT / "tests" / "conformance" / "programs" / "llama_1B_default.json"


def per_call_us(fn, seconds=1.0, rounds=3):
    """Google Benchmark's measure (total time over iterations, after a warm-up call), taken over
    `rounds` windows of `seconds`, median of the windows."""
    fn()
    means = []
    for _ in range(rounds):
        n = 0
        start = time.perf_counter()
        end = start + seconds
        while time.perf_counter() < end:
            fn()
            n += 1
        means.append((time.perf_counter() - start) / n)
    return statistics.median(means) * 1e6


def main():
    build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build" / "release")
    program = amk.load(str(PROGRAM))
    text = PROGRAM.read_text()
    # C++ and Python in turns, so drift on a shared machine hits both alike; the median pair.
    ratios = []
    for _ in range(PAIRS):
        out = subprocess.run([str(build / "bench" / "bench_validate"),
                              "--benchmark_filter=BM_ValidateConformanceLlama1B",
                              "--benchmark_format=json"], capture_output=True, text=True,
                             check=True)
        cpp_us = json.loads(out.stdout)["benchmarks"][0]["real_time"]
        py_us = per_call_us(lambda: amk.validate(program), rounds=1)
        ratios.append((py_us / cpp_us, cpp_us, py_us))
    ratios.sort()
    ratio, cpp_us, py_us = ratios[len(ratios) // 2]
    text_us = per_call_us(lambda: amk.validate(text), rounds=1)
    print(f"Llama-3.2-1B ({len(program)} tasks), loaded: C++ {cpp_us:.0f} us, Python "
          f"{py_us:.0f} us per validate: {(ratio - 1) * 100:+.1f}% (median of {PAIRS} pairs; "
          f"{(ratios[0][0] - 1) * 100:+.1f}% to {(ratios[-1][0] - 1) * 100:+.1f}%)")
    print(f"from JSON text in Python (parse + proof): {text_us:.0f} us "
          f"({len(text) / text_us:.0f} MB/s of JSON)")

    def forty():
        for _ in range(40):
            amk.validate(text)
    t = time.perf_counter()
    forty()
    forty()
    serial = time.perf_counter() - t
    threads = [threading.Thread(target=forty) for _ in range(2)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    parallel = time.perf_counter() - t
    print(f"two threads x 40 validations from text: {parallel:.2f} s together, {serial:.2f} s one "
          f"after the other ({serial / parallel:.2f}x)")


if __name__ == "__main__":
    main()
