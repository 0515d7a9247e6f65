"""Benchmark of the kernel-statistics layer: issue 10's goals, all measured in one process, side by side.

Run from the repository root:

    python benchmarks/bench_stats.py            # AWA2 scale, without the full joint run (a few minutes on 2 cores)
    python benchmarks/bench_stats.py --full     # ... and the full AWA2-scale joint run, ARD included (~10 minutes)
    python benchmarks/bench_stats.py --quick    # small sizes (about a minute)

What it reports (medians of repeats; ratios against references timed in the same run, so they are meaningful on a
shared machine where the absolute times are not):

* this machine's dgemm rate, and the float64 floor of one target step, (2NN'R + NN'^2) / dgemm;
* one target step, `combine(f, G, joint=False, n_iter=1, ard=False)`, as a fraction of that floor;
* scikit-learn's Nystroem(N') + Ridge fit and predict on the same features, as a ratio to that step (its BLAS at
  default threads, and at one thread);
* 20 target-only iterations (`joint=False`) against 1;
* `tune` over the default 27-point grid (target-only) against one 20-iteration `combine`;
* one exact NPC step at N = 1,000 against the literal dense reading (C(2S - S^2)C and a full eigh);
* the peak memory (tracemalloc) of a target-only step at N = 200,000, R = 30;
* with --full: the full AWA2-scale joint run (80 predictors, 20 iterations, ARD included) against its floor;
* the same step, kernel pass, ratio to scikit-learn and (with --full) joint run with `precision="float32"` (float32
  kernel blocks, float64 sums), still against the float64 floor.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kernels import bench_dgemm, machine_info, median_time, peak_memory, print_table  # noqa: E402
from bench_npc import joint_problem  # noqa: E402

from predictability import combine  # noqa: E402
from predictability.core import centering_matrix, normalize, orient  # noqa: E402
from predictability.core import one_blas_thread  # noqa: E402
from predictability.kernels import gaussian_kernel, kernel_features  # noqa: E402
from predictability.kstats import kernel_stats  # noqa: E402
from predictability.nystrom import basis_indices  # noqa: E402
from predictability.npc_exact import npc_exact_step  # noqa: E402
from predictability import tune  # noqa: E402

AWA2 = dict(N=37_322, P=80, n_basis=300, n_iter=20)
# The step is measured at fixed settings (combine's defaults choose them without labels now, which costs more
# passes over N: `bench_tune` measures that too, against one fixed-setting run).
FIXED = dict(noise=0.1, kernel_scale=1.0)


def step_floor_flops(N: int, n_basis: int, R: int) -> float:
    "The float64 floor of one target step: the distance GEMM 2NN'R and the syrk of K^T K, NN'^2."
    return 2.0 * N * n_basis * R + float(N) * n_basis ** 2


def cpu_gemm_rate(a, b, repeat: int) -> float:
    "GFLOP/s of CPU time of `a @ b` at one BLAS thread (median of `repeat`): what a core delivers whatever the load."
    with one_blas_thread():
        a @ b
        ts = []
        for _ in range(repeat):
            c0 = time.process_time()
            a @ b
            ts.append(time.process_time() - c0)
    return 2.0 * a.shape[0] * a.shape[1] * b.shape[1] / float(np.median(ts)) / 1e9


def cpu_dgemm(n: int, repeat: int) -> float:
    "One core's dgemm rate in GFLOP/s of CPU time (one BLAS thread), on square matrices of size n."
    rng = np.random.default_rng(1)
    return cpu_gemm_rate(rng.normal(size=(n, n)), rng.normal(size=(n, n)), repeat)


def bench_step_and_sklearn(H, n_basis: int, repeat: int) -> dict:
    f, G = H[:, 0], H[:, 1:]
    one = lambda: combine(f, G, joint=False, n_iter=1, ard=False, n_basis=n_basis, progress=False, **FIXED)
    one32 = lambda: combine(f, G, joint=False, n_iter=1, ard=False, n_basis=n_basis, progress=False,
                            precision="float32", **FIXED)
    twenty = lambda: combine(f, G, joint=False, n_iter=20, ard=False, n_basis=n_basis, progress=False, **FIXED)
    from sklearn.kernel_approximation import Nystroem
    from sklearn.linear_model import Ridge
    X = kernel_features(G)                      # the same kernel: exp(-||x - y||^2) = rbf with gamma = 1
    B = X[basis_indices(len(X), n_basis)]
    kpass = lambda: kernel_stats(X, B, normalize(f))   # the kernel pass alone: K_GB, K^T K, K^T f, K^T 1 (and K_BB)
    kpass32 = lambda: kernel_stats(X, B, normalize(f), precision="float32")   # ... and the whitening and the probe

    def sk():
        Z = Nystroem(kernel="rbf", gamma=1.0, n_components=n_basis, random_state=0).fit_transform(X)
        return Ridge(alpha=0.1).fit(Z, f).predict(Z)
    def sk1():                                   # its BLAS held at one thread: multi-threaded BLAS stalls under load
        with one_blas_thread():
            return sk()
    fns = dict(step=one, iter20=twenty, sklearn=sk, sklearn1=sk1, kpass=kpass, step32=one32, kpass32=kpass32)
    for fn in fns.values():                      # compile and warm up
        fn()
    wall = {k: [] for k in fns}
    cpu = {k: [] for k in fns}
    for _ in range(repeat):                      # interleaved, so that load changes hit all alike
        for k, fn in fns.items():
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    out = {f"{k}_s": float(np.median(v)) for k, v in wall.items()}
    out.update({f"{k}_cpu_s": float(np.median(v)) for k, v in cpu.items()})
    st32 = kernel_stats(X, B, normalize(f), precision="float32")
    out.update(block_products32=st32.block_products, gram_error32=st32.gram_error)
    return out


def bench_tune(H, n_basis: int, repeat: int) -> dict:
    f, G = H[:, 0], H[:, 1:]
    idx = np.arange(0, len(f), 97)
    labels = f[idx]
    run_c = lambda: combine(f, G, joint=False, n_iter=20, ard=False, n_basis=n_basis, progress=False, **FIXED)
    run_t = lambda: tune(f, G, labels, idx, joint=False, ard=False, n_basis=n_basis, progress=False)
    run_a = lambda: combine(f, G, joint=False, ard=False, n_basis=n_basis, progress=False)   # label-free defaults
    tc = median_time(run_c, repeat, warmup=0)
    tt = median_time(run_t, max(1, repeat // 2), warmup=0)
    ta = median_time(run_a, repeat, warmup=0)
    return dict(combine_s=tc, tune_s=tt, grid_points=27, label_free_s=ta)


def exact_step_literal(fbar, K, noise, lam):
    "The literal dense reading: S = K(K + s^2 I)^{-1}, C(2S - S^2)C, a full eigh."
    n = len(fbar)
    S = K @ np.linalg.inv(K + noise * np.eye(n))
    C = centering_matrix(n)
    A = np.outer(fbar, fbar) + lam * (C @ (2 * S - S @ S) @ C)
    _, V = np.linalg.eigh(A)
    return orient(V[:, -1], fbar)


def bench_exact(N: int, repeat: int) -> dict:
    H = joint_problem(N, 6)
    fbar = normalize(H[:, 0])
    X = kernel_features(H[:, 1:])
    K = gaussian_kernel(X, X)
    fast = median_time(lambda: npc_exact_step(fbar, K, 0.1, 1.0), repeat)
    lit = median_time(lambda: exact_step_literal(fbar, K, 0.1, 1.0), max(1, repeat // 2))
    diff = float(np.abs(npc_exact_step(fbar, K, 0.1, 1.0) - exact_step_literal(fbar, K, 0.1, 1.0)).max())
    return dict(N=N, fast_s=fast, literal_s=lit, max_abs_diff=diff)


def bench_memory(N: int, R: int) -> dict:
    H = joint_problem(N, R + 1)
    f, G = H[:, 0], H[:, 1:]
    combine(f[:2000], G[:2000], joint=False, n_iter=1, ard=False, progress=False)
    peak, rss = peak_memory(lambda: combine(f, G, joint=False, n_iter=1, ard=False, progress=False, **FIXED))
    return dict(N=N, R=R, peak_mb=peak / 2**20, rss_growth_mb=rss / 2**20, inputs_mb=H.nbytes / 2**20)


def bench_full(H, n_basis: int, n_iter: int, precision: str = "float64") -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    res = combine(H[:, 0], H[:, 1:], n_iter=n_iter, n_basis=n_basis, joint=True, ard=True, progress=True,
                  precision=precision, **FIXED)
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert np.isfinite(res.prediction).all()
    return dict(total_s=total, cpu_s=cpu, prediction=res.prediction)


def report(quick: bool, full: bool, repeat: int) -> dict:
    info = machine_info()
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items()))
    size = dict(N=4000, P=12, n_basis=100, n_iter=5) if quick else AWA2
    N, P, nb = size["N"], size["P"], size["n_basis"]
    H = joint_problem(N, P)
    dg = bench_dgemm(1000 if quick else 2000, repeat)
    gemm = dg["threads"]
    core = cpu_dgemm(1000 if quick else 1500, repeat)
    flops = step_floor_flops(N, nb, P - 1)
    floor_s = flops / (gemm * 1e9)
    floor_cpu = flops / (core * 1e9)              # the same floor in CPU seconds, at one core's rate
    st = bench_step_and_sklearn(H, nb, repeat)
    tu = bench_tune(H, nb, 1 if quick else 3)
    ex = bench_exact(400 if quick else 1000, repeat)
    dg_after = bench_dgemm(1000 if quick else 2000, repeat)["threads"]
    out = dict(machine=info, dgemm=dg, dgemm_after=dg_after, cpu_dgemm=core, floor_s=floor_s, floor_cpu_s=floor_cpu,
               step=st, tune=tu, exact=ex)
    ms = lambda k: f"{st[k + '_s'] * 1e3:.1f} ms wall, {st[k + '_cpu_s'] * 1e3:.1f} ms CPU"
    rows = [
        ("dgemm (NumPy BLAS), before / after", f"{gemm:.1f} / {dg_after:.1f} GFLOP/s; one core {core:.1f} GFLOP/s of CPU time"),
        ("floor of one target step (2NN'R + NN'^2)", f"{flops / 1e9:.2f} GFLOP, {floor_s * 1e3:.1f} ms at dgemm, "
                                                     f"{floor_cpu * 1e3:.1f} ms of CPU at one core's rate"),
        ("one target step, combine(joint=False, n_iter=1)", f"{ms('step')} = {floor_s / st['step_s']:.0%} of the floor "
                                                            f"(wall), {floor_cpu / st['step_cpu_s']:.0%} (CPU)"),
        ("  its kernel pass alone (kernel_stats)", f"{ms('kpass')} = {floor_s / st['kpass_s']:.0%} (wall), "
                                                   f"{floor_cpu / st['kpass_cpu_s']:.0%} (CPU)"),
        ("sklearn Nystroem + Ridge, fit and predict", f"{ms('sklearn')} = {st['sklearn_s'] / st['step_s']:.2f}x the step "
                                                      f"(wall), {st['sklearn_cpu_s'] / st['step_cpu_s']:.2f}x (CPU)"),
        ("  the same, BLAS at one thread", f"{ms('sklearn1')} = {st['sklearn1_s'] / st['step_s']:.2f}x the step "
                                           f"(wall), {st['sklearn1_cpu_s'] / st['step_cpu_s']:.2f}x (CPU)"),
        ("float32: one target step (precision='float32')", f"{ms('step32')} = {floor_s / st['step32_s']:.0%} of the "
                                                          f"float64 floor (wall), {floor_cpu / st['step32_cpu_s']:.0%} (CPU); "
                                                          f"float64 / float32 CPU time {st['step_cpu_s'] / st['step32_cpu_s']:.2f}"),
        ("  its kernel pass alone (+ whitening, probe)", f"{ms('kpass32')} = {floor_s / st['kpass32_s']:.0%} (wall), "
                                                         f"{floor_cpu / st['kpass32_cpu_s']:.0%} (CPU); block products "
                                                         f"{st['block_products32']}, gram_error {st['gram_error32']:.1e}"),
        ("  sklearn Nystroem + Ridge / float32 step", f"{st['sklearn_s'] / st['step32_s']:.2f}x (wall), "
                                                      f"{st['sklearn_cpu_s'] / st['step32_cpu_s']:.2f}x (CPU); BLAS at one "
                                                      f"thread {st['sklearn1_s'] / st['step32_s']:.2f}x (wall), "
                                                      f"{st['sklearn1_cpu_s'] / st['step32_cpu_s']:.2f}x (CPU)"),
        ("20 target-only iterations", f"{st['iter20_s'] * 1e3:.1f} ms = {st['iter20_s'] / st['step_s']:.2f}x one iteration"),
        ("tune, 27-point grid, 20 iterations, target-only", f"{tu['tune_s']:.2f} s = {tu['tune_s'] / tu['combine_s']:.2f}x one combine ({tu['combine_s']:.2f} s)"),
        ("combine with its label-free defaults, target-only", f"{tu['label_free_s']:.2f} s = {tu['label_free_s'] / tu['combine_s']:.2f}x one fixed-setting combine"),
        (f"exact NPC step, N={ex['N']}", f"{ex['fast_s'] * 1e3:.0f} ms; literal dense reading {ex['literal_s'] * 1e3:.0f} ms "
                                         f"({ex['literal_s'] / ex['fast_s']:.1f}x); max diff {ex['max_abs_diff']:.1e}"),
    ]
    print_table(rows, f"N={N}, R={P - 1}, N'={nb}")
    mem = bench_memory(20_000 if quick else 200_000, 30)
    out["memory"] = mem
    print_table([(k, f"{v:.1f}" if isinstance(v, float) else str(v)) for k, v in mem.items()],
                "peak memory of a target-only step (MB: tracemalloc peak, growth of max RSS)")
    if full:
        fl = bench_full(H, nb, size["n_iter"])
        fl32 = bench_full(H, nb, size["n_iter"], precision="float32")
        tau = float(kendalltau(fl.pop("prediction"), fl32.pop("prediction"))[0])
        steps = size["n_iter"] * P
        floor_full = steps * flops / (gemm * 1e9)
        floor_full_cpu = steps * flops / (core * 1e9)
        out["full"] = dict(fl, floor_s=floor_full, floor_cpu_s=floor_full_cpu)
        out["full32"] = dict(fl32, tau=tau)
        print_table([
            ("full joint run, ARD included", f"{fl['total_s']:.1f} s wall, {fl['cpu_s']:.1f} s CPU"),
            ("its floor", f"{steps * flops / 1e12:.2f} TFLOP, {floor_full:.1f} s at dgemm, "
                          f"{floor_full_cpu:.1f} s of CPU at one core's rate"),
            ("ratio to the floor", f"{fl['total_s'] / floor_full:.2f}x (wall), {fl['cpu_s'] / floor_full_cpu:.2f}x (CPU)"),
            ("the same in float32", f"{fl32['total_s']:.1f} s wall, {fl32['cpu_s']:.1f} s CPU = "
                                    f"{fl32['total_s'] / floor_full:.2f}x the float64 floor (wall), "
                                    f"{fl32['cpu_s'] / floor_full_cpu:.2f}x (CPU); Kendall tau to float64 {tau:.5f}"),
        ], f"joint run: N={N}, {P} predictors, N'={nb}, {size['n_iter']} iterations")
    print(f"load average (1 min) at the end: {machine_info().get('loadavg_1min')}")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes")
    p.add_argument("--full", action="store_true", help="also the full AWA2-scale joint run")
    p.add_argument("--repeat", type=int, default=5, help="timed repeats per measurement (median)")
    a = p.parse_args(argv)
    report(a.quick, a.full, a.repeat)


if __name__ == "__main__":
    main()
