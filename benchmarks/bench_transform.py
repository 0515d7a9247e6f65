"""Benchmark of `Combiner.transform`, the fitted combination replayed on new rows, in one process.

Run from the repository root:

    python benchmarks/bench_transform.py                  # 100,000 new rows at AWA2's width (about 10 minutes on 2 cores)
    python benchmarks/bench_transform.py --rows 1000000   # the 10^6 rows of the goal (about ten times longer)
    python benchmarks/bench_transform.py --quick          # small sizes (about a minute)

What it reports (ratios against references measured in the same run, so they mean something on a shared machine):

* the fit: a joint `Combiner` at AWA2's width (P = 80 predictors, N' = 300, 20 sweeps, fixed settings) on N_fit rows,
  and the model's size at two fit sizes (it holds S·P·N' coefficients and the basis rows' values, not N-sized data);
* the transform of n new rows against its floor: the same number of kernel passes (P columns x S sweeps, each
  2·n·N'·R flops for the distances to the basis rows) at this machine's dgemm rate, measured in the same run, in wall
  time and in CPU time against one core's rate (the second holds on a loaded machine, where the wall rate drifts);
* the peak memory traced during the transform beyond its input and output (the replay works on blocks of rows), and
  the growth of the process's maximum RSS.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kernels import bench_dgemm, machine_info, peak_memory, print_table  # noqa: E402
from bench_npc import joint_problem  # noqa: E402
from bench_stats import cpu_dgemm, cpu_gemm_rate  # noqa: E402

from predictability import Combiner  # noqa: E402

WIDTH = dict(P=80, n_basis=300, n_iter=20)
FIXED = dict(noise=0.1, kernel_scale=1.0, ard=False)   # settings fixed: the fit's cost is not what is measured


def fit(n_fit: int, P: int, n_basis: int, n_iter: int, seed: int = 0) -> tuple[Combiner, float]:
    "A joint Combiner fitted on `n_fit` rows of the synthetic AWA2-width problem, and the fit's time in seconds."
    X = joint_problem(n_fit, P, seed)
    t0 = time.perf_counter()
    cb = Combiner(0, n_basis=n_basis, n_iter=n_iter, progress=False, **FIXED).fit(X)
    return cb, time.perf_counter() - t0


def transform_floor_flops(n: int, P: int, n_basis: int, sweeps: int) -> float:
    "Kernel passes of a replay: every column at every sweep, 2·n·N'·R flops of distances each (R = P - 1)."
    return float(sweeps) * P * 2.0 * n * n_basis * (P - 1)


def shape_dgemm(n: int, R: int, n_basis: int, repeat: int = 5) -> float:
    "GFLOP/s of CPU time (one BLAS thread) of the distance GEMM of one kernel pass, (n, R) @ (R, N'): its own shape."
    rng = np.random.default_rng(2)
    return cpu_gemm_rate(rng.normal(size=(n, R)), rng.normal(size=(R, n_basis)), repeat)


def bench_transform(cb: Combiner, n: int, P: int, n_basis: int, sweeps: int, dgemm: float, core: float) -> dict:
    """Time and memory of `cb.transform` on n new rows, against the floor at the `dgemm` rate (GFLOP/s, wall) and at
    one core's rate `core` (GFLOP/s of CPU time: what the cores deliver whatever else the machine runs)."""
    X = joint_problem(n, P, seed=1)
    cb.transform(X[:1000])                                   # compile outside the measurement
    out, times = [], []
    def run():                                               # timed and traced at once: the allocations are few and large
        t0, c0 = time.perf_counter(), time.process_time()
        out.append(cb.transform(X))
        times.append((time.perf_counter() - t0, time.process_time() - c0))
    peak, rss = peak_memory(run)
    (seconds, cpu), out = times[0], out[0]
    flops = transform_floor_flops(n, P, n_basis, sweeps)
    floor, cpu_floor = flops / (dgemm * 1e9), flops / (core * 1e9)
    return dict(rows=n, seconds=seconds, floor_s=floor, ratio=seconds / floor, cpu_s=cpu, cpu_floor_s=cpu_floor,
                cpu_ratio=cpu / cpu_floor, input_mb=X.nbytes / 2**20,
                output_mb=out.nbytes / 2**20, peak_mb=peak / 2**20, beyond_io_mb=(peak - out.nbytes) / 2**20,
                rss_growth_mb=rss / 2**20)


def report(quick: bool, rows: int) -> dict:
    P, n_basis, n_iter = WIDTH["P"], WIDTH["n_basis"], (5 if quick else WIDTH["n_iter"])
    n_fit, n_fit_small = (800, 400) if quick else (2000, 1000)
    print(machine_info())
    dgemm, core = bench_dgemm()["threads"], cpu_dgemm(2000, 5)
    thin = shape_dgemm(min(rows, 1 << 16), P - 1, n_basis)     # the replay's block of rows
    cb, fit_s = fit(n_fit, P, n_basis, n_iter)
    small, _ = fit(n_fit_small, P, n_basis, n_iter)
    sweeps = max(len(s) for s in cb.replay_.run.spans.values())
    print_table([("dgemm (GFLOP/s, default threads; one core, of CPU time)", f"{dgemm:.1f}; {core:.1f}"),
                 ("the kernel pass's distance GEMM, its shape (GFLOP/s of CPU time)", f"{thin:.1f}"),
                 (f"fit, N = {n_fit:,} (s)", f"{fit_s:.1f}"),
                 ("sweeps replayed", f"{sweeps}"),
                 (f"model size at N = {n_fit_small:,} / {n_fit:,} (MB)",
                  f"{small.model_nbytes_ / 2**20:.2f} / {cb.model_nbytes_ / 2**20:.2f}")],
                f"fit at P = {P}, N' = {n_basis}")
    res = bench_transform(cb, rows, P, n_basis, sweeps, dgemm, core)
    print_table([("rows", f"{res['rows']:,}"), ("transform (s)", f"{res['seconds']:.2f}"),
                 ("floor: kernel passes at the dgemm rate (s)", f"{res['floor_s']:.2f}"),
                 ("transform / floor", f"{res['ratio']:.2f}"),
                 ("transform CPU time / floor at one core's rate", f"{res['cpu_s']:.1f} s / {res['cpu_floor_s']:.1f} s "
                                                                   f"= {res['cpu_ratio']:.2f}"),
                 ("transform CPU time / the same passes' GEMMs at their shape's rate",
                  f"{res['cpu_ratio'] * thin / core:.2f}"),
                 ("input / output (MB)", f"{res['input_mb']:.0f} / {res['output_mb']:.1f}"),
                 ("peak traced beyond the output (MB)", f"{res['beyond_io_mb']:.0f}"),
                 ("max RSS growth (MB)", f"{res['rss_growth_mb']:.0f}")],
                "transform of new rows")
    return dict(fit_s=fit_s, model_mb=(small.model_nbytes_, cb.model_nbytes_), **res)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes and 5 sweeps")
    p.add_argument("--rows", type=int, default=None, help="new rows to transform (default 100,000; --quick 20,000)")
    a = p.parse_args(argv)
    report(a.quick, a.rows or (20_000 if a.quick else 100_000))


if __name__ == "__main__":
    main()
