"""Local embedding latency: all-MiniLM-L6-v2 on OpenVINO (the default; bf16 where the CPU has
it, and f32), on ONNX Runtime and, where torch is installed, on sentence-transformers + torch;
one short sentence and a batch of 10, one intra-op thread (a worker's setting), p50 and p95 in
milliseconds, plus load time.

    .venv/bin/python bench/embedding.py                  # every runtime importable here
    .venv/bin/python bench/embedding.py --runtimes openvino:bf16,onnx --calls 300

Each runtime runs in a process of its own (a fresh import, its own load time). The model is
the same files for both; tests/integration/test_onnx_embedder.py checks the vectors agree.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SHORT = "User prefers bar charts over pie charts in quarterly reviews."
BATCH = [f"Note {i}: the user asked for the {topic} report every {day}." for i, (topic, day) in
         enumerate(zip(["revenue", "churn", "hiring", "budget", "support", "latency",
                        "pipeline", "security", "travel", "marketing"],
                       ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"] * 2,
                       strict=True))]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(runtime: str, calls: int, threads: int) -> dict[str, float]:
    """In this process: load the model, then time `calls` embeddings of each shape.
    `runtime` is a runtime's name, with `:bf16` or `:f32` for OpenVINO's precision."""
    sys.path.insert(0, str(ROOT))
    started = time.perf_counter()
    from worker.embeddings import LocalEmbedder

    name, _, precision = runtime.partition(":")
    embedder = LocalEmbedder(runtime=name, threads=threads, precision=precision or "f32",
                             model_name="sentence-transformers/all-MiniLM-L6-v2")
    load_s = time.perf_counter() - started
    result: dict[str, float] = {"load_s": load_s}
    for name, texts in (("one", [SHORT]), ("batch10", BATCH)):
        for _ in range(10):
            embedder.embed(texts)  # warm-up
        timings = []
        for i in range(calls):
            varied = [f"{text} ({i})" for text in texts]  # no cache anywhere to hit
            began = time.perf_counter()
            embedder.embed(varied)
            timings.append((time.perf_counter() - began) * 1000)
        result[f"{name}_p50"] = _percentile(timings, 0.50)
        result[f"{name}_p95"] = _percentile(timings, 0.95)
        result[f"{name}_mean"] = statistics.fmean(timings)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    have_torch = importlib.util.find_spec("torch") is not None
    runtimes = "openvino:bf16,openvino:f32,onnx" + (",torch" if have_torch else "")
    parser.add_argument("--runtimes", default=runtimes)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.calls, args.threads)))
        return
    rows = []
    for runtime in args.runtimes.split(","):
        env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
        done = subprocess.run([sys.executable, __file__, "--child", runtime,
                               "--calls", str(args.calls), "--threads", str(args.threads)],
                              capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            print(f"{runtime}: failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            continue
        rows.append((runtime, json.loads(done.stdout.strip().splitlines()[-1])))
    print(f"all-MiniLM-L6-v2, {args.threads} intra-op thread(s), {args.calls} calls per shape, "
          f"{os.cpu_count()} CPUs\n")
    print("| runtime | load s | 1 sentence p50 ms | p95 ms | batch of 10 p50 ms | p95 ms |")
    print("|---|---|---|---|---|---|")
    for runtime, r in rows:
        print(f"| {runtime} | {r['load_s']:.1f} | {r['one_p50']:.2f} | {r['one_p95']:.2f} | "
              f"{r['batch10_p50']:.2f} | {r['batch10_p95']:.2f} |")
    if not have_torch:
        print("\n(torch is not installed here: the torch runtime was not measured)")


if __name__ == "__main__":
    main()
