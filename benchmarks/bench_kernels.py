"""Benchmarks for predictability.kernels: the streamed Gram statistics against the NumPy oracle and BLAS.

Run from the repository root:

    python benchmarks/bench_kernels.py            # AWA2 size + memory, a few minutes on 2 cores
    python benchmarks/bench_kernels.py --quick    # small sizes, seconds

Everything is timed in the same process, as medians of repeats, next to this machine's own dgemm rate, so the
ratios mean something even on a shared or throttled machine (the absolute times do not). The functions are
meant to be imported and extended (e.g. by a full NPC step benchmark).
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import sys
import time
import tracemalloc

import numpy as np
from threadpoolctl import threadpool_limits

from predictability.blocks import _exp_neg_array, _exp_neg32_array  # noqa: E402
from predictability.kernels import (gram_stats, gram_stats_reference,
                                    kernel_features, kernel_matvec, kernel_matvec_reference)

AWA2 = dict(N=37_322, n_basis=300, D=79)


# ---------------------------------------------------------------------------------------------------- helpers
def median_time(fn, repeat: int = 5, warmup: int = 1) -> float:
    "Median wall time of `fn()` over `repeat` runs (seconds), after `warmup` untimed runs."
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def machine_info() -> dict:
    "What the numbers were measured on."
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count()
    import numba
    import scipy
    info = dict(python=platform.python_version(), numpy=np.__version__, scipy=scipy.__version__,
                numba=numba.__version__, cpus=cpus, machine=platform.processor() or platform.machine())
    try:
        info["loadavg_1min"] = os.getloadavg()[0]
    except OSError:
        pass
    return info


def problem(N: int, n_basis: int, D: int, seed: int = 0):
    "Pre-scaled features X (N, D), the evenly spaced basis B (N', D) and a target f (N,)."
    rng = np.random.default_rng(seed)
    G = rng.normal(size=(N, D)) @ rng.normal(size=(D, D)) / np.sqrt(D)   # correlated references
    X = kernel_features(G)
    idx = np.unique(np.round(np.linspace(0, N - 1, n_basis)).astype(int))
    return X, X[idx], rng.normal(size=N)


def gram_flops(N: int, n_basis: int, D: int) -> float:
    "Flops of the dominant step: 2 N N' D for the distance GEMM plus N N'^2 for the syrk of K^T K."
    return 2.0 * N * n_basis * D + float(N) * n_basis ** 2


# ---------------------------------------------------------------------------------------------------- benchmarks
def one_blas_thread(fn):
    "`fn` run with every BLAS library of the process held at one thread."
    def run():
        with threadpool_limits(limits=1, user_api="blas"):
            return fn()
    return run


def bench_dgemm(n: int = 2000, repeat: int = 5) -> dict:
    "This machine's float64 GEMM rate (GFLOP/s) with NumPy's BLAS: default threads, and one thread."
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(n, n)), rng.normal(size=(n, n))
    flop = 2.0 * n ** 3
    return dict(threads=flop / median_time(lambda: a @ b, repeat) / 1e9,
                one_thread=flop / median_time(one_blas_thread(lambda: a @ b), repeat) / 1e9)


def bench_exp(size: int = 8192, repeat: int = 201) -> dict:
    "ns per element of the Numba exp (float64, float32) and np.exp on in-cache data, and the float64 max error."
    rng = np.random.default_rng(2)
    x = -rng.uniform(0, 10, size)
    out = np.empty_like(x)
    x32, out32 = x.astype(np.float32), np.empty(size, np.float32)
    res = {
        "exp_neg_f64_ns": median_time(lambda: _exp_neg_array(x, out), repeat) / size * 1e9,
        "exp_neg_f32_ns": median_time(lambda: _exp_neg32_array(x32, out32), repeat) / size * 1e9,
        "np_exp_ns": median_time(lambda: np.exp(x, out=out), repeat) / size * 1e9,
    }
    xs = -rng.uniform(0, 745, 1_000_000)
    o = np.empty_like(xs)
    _exp_neg_array(xs, o)
    ref = np.exp(xs)
    normal = ref >= np.finfo(np.float64).tiny
    res["exp_neg_max_rel_err"] = float(np.max(np.abs(o[normal] - ref[normal]) / ref[normal]))
    return res


def bench_gram_stats(N: int, n_basis: int, D: int, repeat: int = 5, reference: bool = True) -> dict:
    "Median times (s) of gram_stats variants and the oracle at one size, with GFLOP/s and the max relative error."
    X, B, f = problem(N, n_basis, D)
    n = B.shape[0]
    res = dict(N=N, n_basis=n, D=D, gflop=gram_flops(N, n, D) / 1e9)
    variants = {
        "gram_stats": lambda: gram_stats(X, B, f),
        "gram_stats_1thread": lambda: gram_stats(X, B, f, n_threads=1),
        "gram_stats_float32": lambda: gram_stats(X, B, f, dtype=np.float32),
    }
    if reference:
        variants["gram_stats_reference"] = lambda: gram_stats_reference(X, B, f)
        variants["gram_stats_reference_1thread"] = one_blas_thread(lambda: gram_stats_reference(X, B, f))
    for name, fn in variants.items():
        res[name] = median_time(fn, repeat)
    M = gram_stats(X, B, f)[0]
    if reference:
        Mr = gram_stats_reference(X, B, f)[0]
        res["max_rel_err"] = float(np.max(np.abs(M - Mr)) / np.max(np.abs(Mr)))
        res["max_rel_err_float32"] = float(np.max(np.abs(gram_stats(X, B, f, dtype=np.float32)[0] - Mr))
                                           / np.max(np.abs(Mr)))
    return res


def bench_matvec(N: int, n_basis: int, D: int, repeat: int = 5) -> dict:
    "Median times (s) of kernel_matvec and its oracle."
    X, B, _ = problem(N, n_basis, D)
    u = np.random.default_rng(3).normal(size=B.shape[0])
    return dict(kernel_matvec=median_time(lambda: kernel_matvec(X, B, u), repeat),
                kernel_matvec_reference=median_time(lambda: kernel_matvec_reference(X, B, u), repeat))


def peak_memory(fn) -> tuple[float, float]:
    "(peak bytes traced by tracemalloc during `fn()`, growth of the process's max RSS in bytes)."
    gc.collect()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 if sys.platform == "darwin" else 1024   # ru_maxrss is in KiB on Linux
    return float(peak), float(rss1 - rss0) * scale


def bench_memory(N: int = 200_000, n_basis: int = 300, D: int = 30, reference: bool = True) -> dict:
    "Peak memory growth of gram_stats (and of the oracle, which forms K whole) beyond the inputs."
    X, B, f = problem(N, n_basis, D)
    gram_stats(X[:1000], B, f[:1000])   # compile outside the measurement
    res = dict(N=N, n_basis=B.shape[0], D=D, inputs_mb=(X.nbytes + B.nbytes + f.nbytes) / 2 ** 20,
               K_whole_mb=N * B.shape[0] * 8 / 2 ** 20)
    peak, rss = peak_memory(lambda: gram_stats(X, B, f))
    res["gram_stats_peak_mb"], res["gram_stats_rss_growth_mb"] = peak / 2 ** 20, rss / 2 ** 20
    if reference:
        peak, rss = peak_memory(lambda: gram_stats_reference(X, B, f))
        res["reference_peak_mb"], res["reference_rss_growth_mb"] = peak / 2 ** 20, rss / 2 ** 20
    return res


# ---------------------------------------------------------------------------------------------------- report
def print_table(rows: list[tuple[str, str]], title: str) -> None:
    width = max(len(k) for k, _ in rows)
    print(f"\n{title}\n" + "-" * len(title))
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


def report(quick: bool = False, repeat: int = 5) -> dict:
    info = machine_info()
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items()))
    dg = bench_dgemm(1000 if quick else 2000, repeat)
    gemm = dg["threads"]
    ex = bench_exp()
    print_table([
        ("dgemm (NumPy BLAS, default threads)", f"{gemm:.1f} GFLOP/s"),
        ("dgemm (one BLAS thread)", f"{dg['one_thread']:.1f} GFLOP/s"),
        ("Numba exp, float64", f"{ex['exp_neg_f64_ns']:.2f} ns/element, max rel err {ex['exp_neg_max_rel_err']:.1e}"),
        ("Numba exp, float32", f"{ex['exp_neg_f32_ns']:.2f} ns/element"),
        ("np.exp, float64", f"{ex['np_exp_ns']:.2f} ns/element"),
    ], "BLAS and exp")

    size = dict(N=4000, n_basis=100, D=20) if quick else AWA2
    g = bench_gram_stats(size["N"], size["n_basis"], size["D"], repeat)
    ref = g["gram_stats_reference"]
    rows = []
    for name in ("gram_stats", "gram_stats_1thread", "gram_stats_float32", "gram_stats_reference",
                 "gram_stats_reference_1thread"):
        t = g[name]
        rows.append((name, f"{t * 1e3:8.1f} ms  {g['gflop'] / t:6.1f} GFLOP/s  "
                           f"({ref / t:.2f}x the oracle's speed, {g['gflop'] / t / gemm:.0%} of dgemm)"))
    rows.append(("max relative error of M", f"float64 {g['max_rel_err']:.1e}, float32 {g['max_rel_err_float32']:.1e}"))
    print_table(rows, f"gram_stats at N={g['N']}, N'={g['n_basis']}, D={g['D']} "
                      f"({g['gflop']:.2f} GFLOP: 2NN'D + NN'^2); dgemm here {gemm:.1f} GFLOP/s "
                      f"({dg['one_thread']:.1f} on one thread)")

    mv = bench_matvec(size["N"], size["n_basis"], size["D"], repeat)
    print_table([(k, f"{v * 1e3:.1f} ms") for k, v in mv.items()], "kernel_matvec")

    mem = bench_memory(20_000 if quick else 200_000, 300, 30)
    print_table([(k, f"{v:.1f}" if isinstance(v, float) else str(v)) for k, v in mem.items()],
                "peak memory (MB; tracemalloc peak during the call, and growth of max RSS)")
    return dict(machine=info, dgemm_gflops=dg, exp=ex, gram_stats=g, matvec=mv, memory=mem)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    p.add_argument("--repeat", type=int, default=5, help="timed repeats per measurement (median)")
    args = p.parse_args(argv)
    report(quick=args.quick, repeat=args.repeat)


if __name__ == "__main__":
    main()
