"""`ver warmup` fills the kernel cache with every A* kernel, so that a later process only loads
them: its kernels count no cache miss (Numba's ``dispatcher.stats``), whatever kind of query it
runs (a pair maximised, a find, L-inf closest examples by bisection, change counts).

One cold compile of every kind of search, in a fresh cache: the slowest test of this file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys

import veritas_dsl
from veritas_dsl.solvers.astar import kernels

for spec in sys.argv[1:]:
    veritas_dsl.load(spec).run(solver="astar", timeout_s=60)
stats = {name: getattr(kernels, name).stats for name in kernels.__all__}
print(json.dumps({
    name: [sum(s.cache_hits.values()), sum(s.cache_misses.values())] for name, s in stats.items()
}))
"""


def test_after_warmup_a_run_loads_every_kernel_and_compiles_none(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("NUMBA_DISABLE_JIT", None)  # the test is about compiling
    warmup = subprocess.run(
        [sys.executable, "-m", "veritas_dsl.cli", "warmup"],
        env=env, cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert warmup.returncode == 0, warmup.stderr
    lines = warmup.stderr.splitlines()
    assert [line[:5] for line in lines[:-1]] == ["[1/4]", "[2/4]", "[3/4]", "[4/4]"], lines
    assert lines[-1] == f"every A* kernel is in {tmp_path / 'cache'}"
    names = ("fairness.ver", "closest.ver", "dominance.ver")  # dominance counts changes
    specs = [str(ROOT / "examples" / name) for name in names]
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, *specs], env=env, cwd=tmp_path, capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout.splitlines()[-1])
    assert all(misses == 0 for _, misses in counts.values()), counts
    assert counts["search"][0] == 2  # both kinds of uint8 boxes (with resources or not), loaded
    assert counts["repair"][0] >= 1


def test_warmup_says_so_when_no_cache_can_be_written(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(blocked / "cache")}
    done = subprocess.run(
        [sys.executable, "-m", "veritas_dsl.cli", "warmup"],
        env=env, cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2
    assert "no kernel cache can be written" in done.stderr
