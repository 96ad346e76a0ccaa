"""Cold and warm start of `ver run SPEC` (examples/fairness.ver and examples/closest.ver), each
in a fresh process, and `ver warmup`.

    python bench/cold_start.py [--runs N] [--spec FILE ...] [--ver PATH]

Cold: an empty kernel cache (a fresh NUMBA_CACHE_DIR), so the A* kernels a spec needs are
compiled. Warm: the same command again, the cache filled. Warmup: `ver warmup` in an empty
cache (every kind of search compiled), then each spec, which only loads its kernels. Prints wall
time and CPU time (user + sys of the process); on a shared machine CPU time is the steadier
figure.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """``(wall, cpu)`` seconds of one run of ``command``, which must succeed."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {process.returncode}: {process.stderr.read()!r}")
    process.stderr.close()
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of each measure")
    parser.add_argument(
        "--spec", action="append", help="a spec to run (repeatable; default: fairness, closest)"
    )
    parser.add_argument("--ver", default=shutil.which("ver") or "ver", help="the ver command")
    args = parser.parse_args()
    specs = args.spec or ["examples/fairness.ver", "examples/closest.ver"]

    print(f"{args.runs} runs of each, cpu = user + sys")
    for spec in specs:
        command = [args.ver, "run", spec]
        cold, warm = [], []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="ver-cold-") as cache:
                env = {**os.environ, "NUMBA_CACHE_DIR": cache}
                cold.append(timed(command, env))
                warm.append(timed(command, env))
        report(f"{' '.join(command)}, cold", cold)
        report(f"{' '.join(command)}, warm", warm)
    warmup, after = [], {spec: [] for spec in specs}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="ver-cold-") as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            warmup.append(timed([args.ver, "warmup"], env))
            for spec in specs:
                after[spec].append(timed([args.ver, "run", spec], env))
    report(f"{args.ver} warmup, empty cache", warmup)
    for spec, runs in after.items():
        report(f"{args.ver} run {spec}, after warmup", runs)


def report(name: str, runs: list[tuple[float, float]]) -> None:
    walls, cpus = zip(*runs, strict=True)
    print(
        f"{name}: wall median {statistics.median(walls):6.2f} s (min {min(walls):6.2f}), "
        f"cpu median {statistics.median(cpus):6.2f} s (min {min(cpus):6.2f})"
    )


if __name__ == "__main__":
    main()
