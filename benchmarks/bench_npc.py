"""Benchmark of the NPC step and the full joint run (ARD included) at AWA2 scale, against the plain NumPy oracle.

Run from the repository root:

    python benchmarks/bench_npc.py              # AWA2 scale: full joint run, oracle steps, memory, scaling (~15 min)
    python benchmarks/bench_npc.py --quick      # small sizes (about a minute)
    python benchmarks/bench_npc.py --no-full    # skip the full 20-iteration joint run (the longest part)

AWA2 scale: N = 37,322 points, 80 predictors denoised jointly (79 references each), N' = 300, 20 iterations.
Every time is a median over repeats, measured in the same process as this machine's own dgemm rate and the
oracle, so the ratios are meaningful on a shared machine even where the absolute times are not.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kernels import bench_dgemm, gram_flops, machine_info, median_time, peak_memory, print_table  # noqa: E402

from predictability import combine  # noqa: E402
from predictability.core import normalize  # noqa: E402
from predictability.kernels import kernel_features  # noqa: E402
from predictability.nystrom import npc_step, npc_step_reference  # noqa: E402

AWA2 = dict(N=37_322, P=80, n_basis=300, n_iter=20)


def joint_problem(N: int, P: int, seed: int = 0):
    "P predictors: a few latent factors, each predictor a noisy (partly nonlinear) function of some of them."
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(N, 8))
    W = rng.normal(size=(8, P)) * (rng.uniform(size=(8, P)) < 0.4)
    H = np.tanh(Z @ W) + 0.1 * (Z[:, :1] ** 2) + 0.5 * rng.normal(size=(N, P))
    return H


def step_problem(N: int, R: int, seed: int = 0):
    H = joint_problem(N, R + 1, seed)
    return normalize(H[:, 0]), kernel_features(H[:, 1:])


def step_flops(N: int, n_basis: int, R: int) -> float:
    "Useful work of one step: distances and K^T K (2NN'R + NN'^2) and the products with f, 1 and u (6NN')."
    return gram_flops(N, n_basis, R) + 6.0 * N * n_basis


def bench_dominant(N: int, R: int, n_basis: int, repeat: int) -> dict:
    "The dominant step alone: forming K_GB (fused distance GEMM + exp) and its Gram K^T K."
    from predictability.kernels import kernel_matrix
    f, X = step_problem(N, R)
    B = X[np.unique(np.round(np.linspace(0, N - 1, n_basis)).astype(int))]
    def run():
        K = kernel_matrix(X, B)
        return K.T @ K
    t = median_time(run, repeat)
    return dict(seconds=t, gflops=gram_flops(N, n_basis, R) / t / 1e9)


def bench_step(N: int, R: int, n_basis: int, repeat: int, oracle_repeat: int) -> dict:
    f, X = step_problem(N, R)
    npc_step(f, X, n_basis=n_basis)                                   # compile
    fast = median_time(lambda: npc_step(f, X, n_basis=n_basis), repeat, warmup=0)
    res = dict(N=N, R=R, n_basis=n_basis, step_s=fast, gflops=step_flops(N, n_basis, R) / fast / 1e9)
    if oracle_repeat:
        res["oracle_s"] = median_time(lambda: npc_step_reference(f, X, n_basis=n_basis), oracle_repeat, warmup=0)
        a, b = npc_step(f, X, n_basis=n_basis), npc_step_reference(f, X, n_basis=n_basis)
        res["max_abs_diff_vs_oracle"] = float(np.abs(a - b).max())
    return res


def bench_joint(N: int, P: int, n_basis: int, n_iter: int, repeat: int) -> dict:
    H = joint_problem(N, P)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        res = combine(H[:, 0], H[:, 1:], n_iter=n_iter, n_basis=n_basis, joint=True, ard=True, progress=True)
        times.append(time.perf_counter() - t0)
    assert np.isfinite(res.prediction).all()
    t_ard = median_time(lambda: __import__("predictability.ard", fromlist=["x"]).fit_ard_joint(H), 3, warmup=0)
    return dict(N=N, P=P, n_basis=n_basis, n_iter=n_iter, total_s=float(np.median(times)), ard_s=t_ard,
                per_target_step_s=float(np.median(times)) / (n_iter * P))


def report(quick: bool, full: bool, repeat: int) -> dict:
    info = machine_info()
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items()))
    dg = bench_dgemm(1000 if quick else 2000, repeat)
    gemm = dg["threads"]
    size = dict(N=4000, P=12, n_basis=100, n_iter=5) if quick else AWA2
    out = dict(machine=info, dgemm=dg)

    st = bench_step(size["N"], size["P"] - 1, size["n_basis"], repeat, oracle_repeat=3)
    out["step"] = st
    dom = bench_dominant(size["N"], size["P"] - 1, size["n_basis"], repeat)
    out["dominant"] = dom
    print_table([
        ("dgemm (NumPy BLAS)", f"{gemm:.1f} GFLOP/s"),
        ("dominant step: K_GB and K^T K", f"{dom['seconds'] * 1e3:.1f} ms, {dom['gflops']:.1f} GFLOP/s = {dom['gflops'] / gemm:.0%} of dgemm"),
        ("NPC target step (fast)", f"{st['step_s'] * 1e3:.1f} ms, {st['gflops']:.1f} GFLOP/s = {st['gflops'] / gemm:.0%} of dgemm"),
        ("NPC target step (NumPy oracle)", f"{st['oracle_s'] * 1e3:.1f} ms"),
        ("speed-up over the oracle", f"{st['oracle_s'] / st['step_s']:.2f}x"),
        ("max |fast - oracle|", f"{st['max_abs_diff_vs_oracle']:.1e}"),
    ], f"one target step at N={st['N']}, R={st['R']}, N'={st['n_basis']}")

    if full:
        js = bench_joint(size["N"], size["P"], size["n_basis"], size["n_iter"], repeat=1)
        out["joint"] = js
        print_table([
            ("full joint run, ARD included", f"{js['total_s']:.1f} s"),
            ("of which ARD (all predictors)", f"{js['ard_s']:.2f} s"),
            ("per target step", f"{js['per_target_step_s'] * 1e3:.1f} ms"),
        ], f"joint run: N={js['N']}, {js['P']} predictors, N'={js['n_basis']}, {js['n_iter']} iterations")

    Nm = 20_000 if quick else 200_000
    f, X = step_problem(Nm, 30)
    npc_step(f[:2000], X[:2000], n_basis=300)
    peak, rss = peak_memory(lambda: npc_step(f, X, n_basis=300))
    out["memory"] = dict(N=Nm, R=30, peak_mb=peak / 2**20, rss_growth_mb=rss / 2**20,
                         inputs_mb=(f.nbytes + X.nbytes) / 2**20, K_whole_mb=Nm * 300 * 8 / 2**20)
    print_table([(k, f"{v:.1f}" if isinstance(v, float) else str(v)) for k, v in out["memory"].items()],
                "peak memory of a target-only step (MB: tracemalloc peak, growth of max RSS)")

    rows, scal = [], []
    Ns = [10_000, 50_000] if quick else [10_000, 50_000, 100_000, 200_000]
    Nps = [100, 300] if quick else [100, 300, 1000]
    for N in Ns:
        for nb in Nps:
            r = bench_step(N, 30, nb, repeat=3, oracle_repeat=0)
            scal.append(r)
            rows.append((f"N={N:>7}, N'={nb:>5}", f"{r['step_s'] * 1e3:9.1f} ms  {r['gflops']:6.1f} GFLOP/s"))
    out["scaling"] = scal
    print_table(rows, "scaling of one target step (R=30)")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes")
    p.add_argument("--no-full", action="store_true", help="skip the full joint run")
    p.add_argument("--repeat", type=int, default=5, help="timed repeats per measurement (median)")
    a = p.parse_args(argv)
    report(a.quick, not a.no_full, a.repeat)


if __name__ == "__main__":
    main()
