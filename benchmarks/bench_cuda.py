"""Benchmark of the CUDA backend (`device="cuda"`) at AWA2 scale, on a real GPU: oracle checks, one target step taken
apart, a profiled joint sweep, and the full joint run.

Run from the repository root on a machine with a CUDA GPU:

    python benchmarks/bench_cuda.py             # AWA2 scale: N = 37,322, 80 predictors, N' = 300, 20 sweeps
    python benchmarks/bench_cuda.py --no-full   # without the 20-sweep joint run
    python benchmarks/bench_cuda.py --quick     # small sizes (also runs under NUMBA_ENABLE_CUDASIM=1, slowly)
    python benchmarks/bench_cuda.py --batched   # the batched joint run against the column path, full AWA2 size, on
                                                # the GPU (CuPy) when there is one, else the CPU (NumPy)
    python benchmarks/bench_cuda.py --batched --size 6000,24,200,3   # N, P, N', sweeps: a smaller run
    python benchmarks/bench_cuda.py --ratios    # CPU: batched / column-path time of one joint sweep at a few sizes
    python benchmarks/bench_cuda.py --ratios --size 37322,80,300 --repeat 2   # the same at AWA2's size
    python benchmarks/bench_cuda.py --floor     # CPU: one column's row block at AWA2's size taken apart, one thread

What it reports:

* the CUDA kernels against the NumPy oracle at full size (largest relative difference);
* one target step (the first column, its input features), taken apart: the features on the host; in
  `kernel_stats(device="cuda")` the transfers to the device, each kernel (CUDA events), the copy back and K_BB; in
  `npc_update` the N'-sized host work (whitening, the reduced problem, the top eigenpair) and `K u` (transfers and
  kernels); against one CPU step (`combine(joint=False, n_iter=1, ard=False)`) on both devices;
* one joint sweep (every column once, ARD included) under cProfile: where the host's time goes;
* the full joint run at fixed settings (`noise=0.1, kernel_scale=1.0`, ARD the default), its ARD share, and
  `precision="float32"` (refused on the CUDA device: the message is printed);
* `--batched`: the full joint run (ARD, fixed settings) with batched sweeps (`predictability.batched`: on the GPU
  `device="cuda"` when CuPy sees one, else the CPU inside `batched_sweeps()`) and with the column-at-a-time sweeps
  (`column_sweeps()`), their times, and their largest relative difference; on the CPU the FLOP floor of the sweeps
  at this process's dgemm rate;
* `--ratios`: on the CPU, one joint sweep (ARD weights given) batched and column at a time, alternating, medians
  of wall and CPU time, at a few moderate sizes;
* `--floor`: on one thread, the pieces of one column's row block at AWA2's size (the cross terms, the exp pass, the
  shift, `syrk`, the products with [f 1]) and one column's N'-sized step, in ms and as multiples of the block's share
  of the FLOP floor at the single-thread dgemm rate; and the blocks a second on two threads over one, beside dgemm's.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kernels import bench_dgemm, machine_info, median_time  # noqa: E402
from bench_npc import joint_problem  # noqa: E402

from predictability import combine  # noqa: E402
from predictability import batched as pb  # noqa: E402
from predictability import cuda as pc  # noqa: E402
from predictability.ard import fit_ard_joint  # noqa: E402
from predictability.labelfree import model_features  # noqa: E402
from predictability.core import normalize, one_blas_thread  # noqa: E402
from predictability.kernels import gaussian_kernel, gram_stats_reference, kernel_matvec_reference  # noqa: E402
from predictability.blocks import _check_block_rows, _gauss_rows  # noqa: E402
from predictability.kstats import kernel_stats  # noqa: E402
from predictability.nystrom import _reduced, _small_problem, _top_eigvec, basis_indices, npc_update  # noqa: E402

AWA2 = dict(N=37_322, P=80, n_basis=300, n_iter=20)
FIXED = dict(noise=0.1, kernel_scale=1.0)
cuda = pc.cuda


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def first_column(H, nb):
    "The first column's input step as combine forms it: centred unit-norm columns, equal weights, scale 1."
    Hb = np.c_[[normalize(c) for c in H.T]].T
    X = model_features(Hb[:, 1:])
    idx = basis_indices(len(X), nb)
    return Hb, X, X[idx], Hb[:, 0]


def check_oracle(X, B, f):
    "Every kernel against the NumPy oracle, at this size and at a wider kernel (K not tiny)."
    out = {}
    for name, s in (("features", 1.0), ("features / 4", 0.25)):
        Xs, Bs = X * s, B * s
        got, want = pc.gram_stats_cuda(Xs, Bs, f), gram_stats_reference(Xs, Bs, f)
        u = np.random.default_rng(1).normal(size=(len(B), 3))
        out[name] = dict(M=rel(got[0], want[0]), kf=rel(got[1], want[1]), ks=rel(got[2], want[2]),
                         Ku=rel(pc.kernel_matvec_cuda(Xs, Bs, u), kernel_matvec_reference(Xs, Bs, u)),
                         M_symmetric=bool(np.array_equal(got[0], got[0].T)))
    return out


class Events:
    "Accumulated CUDA-event times (ms) per label."
    def __init__(self):
        self.ms = {}

    def timed(self, label, fn):
        a, b = cuda.event(), cuda.event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        self.ms[label] = self.ms.get(label, 0.0) + a.elapsed_time(b)


def upload(*arrays):
    "The arrays on the device, and the seconds the transfers took."
    t0 = time.perf_counter()
    out = [cuda.to_device(a) for a in arrays]
    cuda.synchronize()
    return out, time.perf_counter() - t0


def copy_back(d):
    t0 = time.perf_counter()
    d.copy_to_host()
    return time.perf_counter() - t0


def gram_parts(X, B, F, ev):
    "`gram_stats_cuda`'s body with each transfer and kernel timed (the same launches, in the same order)."
    N, n, w = X.shape[0], B.shape[0], B.shape[0] + F.shape[1]
    br = pc._cuda_block_rows(None, N, n)
    (dX, dB, dF, dM), h2d = upload(X, B, F, np.zeros((n, w)))
    dKb = cuda.device_array((br, w))
    for s in range(0, N, br):
        m = min(br, N - s)
        blocks, threads = pc._grid(m, w)
        ev.timed("k_block (+ F columns)", lambda: pc._k_block[blocks, threads](dX, dB, dF, s, m, dKb))
        blocks2, threads2 = pc._grid(n, w)
        ev.timed("gram_acc (K^T [K F], upper tiles)", lambda: pc._gram_acc[blocks2, threads2](dKb, m, dM))
    return h2d, copy_back(dM)


def matvec_parts(X, B, U, ev):
    "`kernel_matvec_cuda`'s body, timed likewise."
    N, n = X.shape[0], B.shape[0]
    br = pc._cuda_block_rows(None, N, n)
    (dX, dB, dU), h2d = upload(X, B, U)
    dout, dKb = cuda.device_array((N, U.shape[1])), cuda.device_array((br, n))
    for s in range(0, N, br):
        m = min(br, N - s)
        ev.timed("mv_k_block", lambda: pc._k_block[pc._grid(m, n)](dX, dB, dX, s, m, dKb))
        ev.timed("mv_matvec", lambda: pc._matvec[(-(-m // pc._LANES), U.shape[1]), (pc._LANES, 1)](dKb, dU, s, m, dout))
    return h2d, copy_back(dout)


def step_breakdown(H, nb, repeat):
    "One target step taken apart (medians of `repeat`), and the whole step on each device."
    Hb, X, B, f = first_column(H, nb)
    F = np.c_[f, np.ones(len(f))]
    ev_runs, rows = [], {}
    gram_parts(X, B, F, Events()); matvec_parts(X, B, np.ones((nb, 1)), Events())     # compile
    for _ in range(repeat):
        ev = Events()
        r = {}
        t0 = time.perf_counter(); model_features(Hb[:, 1:]); r["features (host)"] = time.perf_counter() - t0
        r["kstats: to device (X, B, [f 1])"], r["kstats: copy back"] = gram_parts(X, B, F, ev)
        t0 = time.perf_counter()
        with one_blas_thread():
            gaussian_kernel(B, B)
        r["kstats: K_BB (host)"] = time.perf_counter() - t0
        st = kernel_stats(X, B, f, device="cuda")
        t0 = time.perf_counter()
        with one_blas_thread():
            st.whitening
            S, Phi = _small_problem(st, st.kf, 0.1, 1.0)
            _, e = _top_eigvec(S)
            u = st.whitening(Phi @ e[1:])
        r["update: N'-sized host LAPACK (whiten, reduce, eig)"] = time.perf_counter() - t0
        with one_blas_thread():   # the same pieces separately
            st2 = kernel_stats(X, B, f, device="cuda")
            t0 = time.perf_counter(); st2.whitening; r["  of which pstrf whitening"] = time.perf_counter() - t0
            t0 = time.perf_counter(); _reduced(st2, 0.1); r["  of which reduced problem (2 chol, trsm)"] = time.perf_counter() - t0
            t0 = time.perf_counter(); _small_problem(st2, st2.kf, 0.1, 1.0); _top_eigvec(S)
            r["  of which small problem + top eigenpair"] = time.perf_counter() - t0
        r["Ku: to device"], r["Ku: copy back"] = matvec_parts(X, B, u[:, None], ev)
        t0 = time.perf_counter(); kernel_stats(X, B, f, device="cuda"); r["kernel_stats(device='cuda') whole"] = time.perf_counter() - t0
        t0 = time.perf_counter(); npc_update(f, st, noise=0.1, kf=st.kf); r["npc_update whole (incl. Ku)"] = time.perf_counter() - t0
        for k, v in r.items():
            rows.setdefault(k, []).append(v * 1e3)
        ev_runs.append(ev.ms)
    out = {k: float(np.median(v)) for k, v in rows.items()}
    out.update({f"GPU kernel {k} (events)": float(np.median([e[k] for e in ev_runs])) for k in ev_runs[0]})
    g, G = H[:, 0], H[:, 1:]
    one = lambda dev: combine(g, G, joint=False, n_iter=1, ard=False, n_basis=nb, progress=False, device=dev, **FIXED)
    one("cuda"); one("cpu")
    out["step: combine(joint=False, n_iter=1, ard=False), cuda"] = median_time(lambda: one("cuda"), repeat, warmup=0) * 1e3
    out["step: combine(joint=False, n_iter=1, ard=False), cpu"] = median_time(lambda: one("cpu"), repeat, warmup=0) * 1e3
    return out


def profile_sweep(H, nb, top=28):
    "cProfile of one joint sweep (every column once, ARD included) on the device."
    pr = cProfile.Profile()
    t0 = time.perf_counter()
    pr.enable()
    combine(H[:, 0], H[:, 1:], n_iter=1, n_basis=nb, joint=True, device="cuda", progress=False, **FIXED)
    pr.disable()
    wall = time.perf_counter() - t0
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(top)
    return wall, s.getvalue()


def full_run(H, nb, n_iter):
    out = {}
    t0 = time.perf_counter()
    fit_ard_joint(H)
    out["ARD alone (fit_ard_joint)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = combine(H[:, 0], H[:, 1:], n_iter=n_iter, n_basis=nb, joint=True, device="cuda", progress=False, **FIXED)
    out["full joint run, float64, cuda"] = time.perf_counter() - t0
    assert np.isfinite(res.prediction).all()
    try:
        combine(H[:, 0], H[:, 1:], n_iter=n_iter, n_basis=nb, joint=True, device="cuda", progress=False,
                precision="float32", **FIXED)
        out["full joint run, float32, cuda"] = time.perf_counter() - t0
    except ValueError as e:
        out["float32 on cuda"] = f"refused: {e}"
    return out, res.prediction


def sweep_flops(N, P, nb, n_iter):
    "The issue's floor of the joint run's sweeps: 2 N N' R + N N'^2 per column and sweep (R = P - 1)."
    return n_iter * P * (2.0 * N * nb * (P - 1) + N * nb * nb)


def batched_run(H, nb, n_iter):
    "The joint run batched and column at a time, on the GPU with CuPy where there is one, else the CPU."
    device = "cuda" if pb._cupy_ops() is not None else "cpu"
    kw = dict(n_iter=n_iter, n_basis=nb, joint=True, device=device, progress=False, **FIXED)
    out = {"device": device}
    t0 = time.perf_counter()
    fit_ard_joint(H)
    out["ARD alone (fit_ard_joint)"] = time.perf_counter() - t0
    with pb.batched_sweeps():
        t0 = time.perf_counter()
        res_b = combine(H[:, 0], H[:, 1:], **kw)
        out["full joint run, batched"] = time.perf_counter() - t0
    with pb.column_sweeps():
        t0 = time.perf_counter()
        res_c = combine(H[:, 0], H[:, 1:], **kw)
        out["full joint run, column at a time"] = time.perf_counter() - t0
    out["column / batched"] = out["full joint run, column at a time"] / out["full joint run, batched"]
    out["largest relative difference (history)"] = rel(res_b.history, res_c.history)
    return out


def block_pieces(m, R, nb, seed=0):
    "The pieces of one column's row block of m rows (R references, N' = nb), each a closure over its own buffers."
    rng = np.random.default_rng(seed)
    X, BT = rng.normal(size=(m, R)) / np.sqrt(R), rng.normal(size=(R, nb)) / np.sqrt(R)
    A, Kt, M, F = np.matmul(X, BT), np.empty((m, nb)), np.empty((nb, nb)), rng.normal(size=(m, 2))
    xx, bb, c = (X * X).sum(1), (BT * BT).sum(0), rng.uniform(size=nb)
    return {"cross terms X B^T (GEMM, inner dimension R)": lambda: np.matmul(X, BT, out=A),
            "exp pass (_gauss_rows, in place)": lambda: _gauss_rows(A, xx, bb),
            "shift (K - 1 c^T)": lambda: np.subtract(A, c, out=Kt),
            "K~^T K~ (syrk)": lambda: np.matmul(Kt.T, Kt, out=M),
            "K~^T [f 1]": lambda: Kt.T @ F}


def blocks_per_second(m, R, nb, threads, n_blocks=40):
    "Blocks a second with `threads` workers each passing its own blocks (one BLAS thread each)."
    work = [block_pieces(m, R, nb, seed) for seed in range(threads)]
    run = lambda pieces: [f() for _ in range(n_blocks) for f in pieces.values()]
    with one_blas_thread(), ThreadPoolExecutor(threads) as ex:
        list(ex.map(run, work))                            # warm up
        t0 = time.perf_counter()
        list(ex.map(run, work))
        return threads * n_blocks / (time.perf_counter() - t0)


def block_floor(N=37_322, P=80, nb=300, repeat=20):
    """One column's row block (the column path's block rows) at N, P, N', each piece on one thread: (ms per piece, the
    block's FLOP floor in ms at the single-thread dgemm rate, one column's N'-sized step in ms, blocks per column, the
    blocks a second on two threads over those on one)."""
    m, R = _check_block_rows(None, N, nb), P - 1
    pieces = block_pieces(m, R, nb)
    floor = 1e3 * (2.0 * m * nb * R + m * nb * nb) / (bench_dgemm(1000, 5)["one_thread"] * 1e9)
    with one_blas_thread():
        ms = {k: 1e3 * median_time(f, repeat) for k, f in pieces.items()}
    rng = np.random.default_rng(1)
    K = np.exp(-rng.uniform(0, 4, size=(m, nb)))
    B = rng.normal(size=(nb, 8))
    KBB = np.exp(-0.5 * ((B[:, None] - B[None]) ** 2).sum(-1))[None]   # a kernel matrix of the basis
    Kt = K - K.mean(0)
    Mc, ks, kf = (Kt.T @ Kt)[None] * (N / m), K.sum(0)[None] * (N / m), (K.T @ rng.normal(size=m))[None]
    ops = pb.NumPyOps(1)
    with one_blas_thread():
        small = 1e3 * median_time(lambda: pb._small_step(ops, KBB, Mc, ks, kf, np.array([0.1]), 1.0, N, pb.BASIS_JITTER), 5)
    scaling = blocks_per_second(m, R, nb, 2) / blocks_per_second(m, R, nb, 1)
    return ms, floor, small, -(-N // m), scaling


def sweep_ratios(sizes, repeat):
    "One joint sweep (ARD weights given), batched and column at a time, alternating in this process; medians."
    rows = []
    for N, P, nb in sizes:
        H = joint_problem(N, P)
        w = fit_ard_joint(np.c_[[normalize(c) for c in H.T]].T)
        column = lambda: combine(H[:, 0], H[:, 1:], n_iter=1, n_basis=nb, ard=w, progress=False, **FIXED)
        def batched():
            with pb.batched_sweeps():
                return column()
        batched(); column()                               # compile, warm caches
        tb, tc, cb, cc = [], [], [], []
        for _ in range(repeat):
            t0, c0 = time.perf_counter(), time.process_time(); batched()
            tb.append(time.perf_counter() - t0); cb.append(time.process_time() - c0)
            t0, c0 = time.perf_counter(), time.process_time(); column()
            tc.append(time.perf_counter() - t0); cc.append(time.process_time() - c0)
        rows.append((N, P, nb, *(float(np.median(v)) for v in (tb, tc, cb, cc))))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes")
    p.add_argument("--no-full", action="store_true", help="skip the 20-sweep joint run")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--save", default=None, help="save the full run's prediction (.npy) here")
    p.add_argument("--batched", action="store_true", help="the batched joint run against the column path (GPU or CPU)")
    p.add_argument("--size", default=None, help="with --batched: N,P,N',sweeps instead of AWA2's; with --ratios: N,P,N'")
    p.add_argument("--ratios", action="store_true", help="CPU: batched / column-path time of one sweep at a few sizes")
    p.add_argument("--floor", action="store_true", help="CPU: one column's row block at AWA2's size taken apart, one thread")
    a = p.parse_args(argv)
    if a.floor:
        print(machine_info(), flush=True)
        ms, floor, small, blocks, scaling = block_floor()
        for k, v in ms.items():
            print(f"{k:45s} {v:7.3f} ms  {v / floor:5.2f} x the block's floor")
        print(f"{'the block':45s} {sum(ms.values()):7.3f} ms  {sum(ms.values()) / floor:5.2f} x its floor of {floor:.3f} ms")
        print(f"{'one column: its N-sized step (blocks)':45s} {1e-3 * sum(ms.values()) * blocks:7.3f} s  ({blocks} blocks)")
        print(f"{'one column: its N-sized step (the floor)':45s} {1e-3 * floor * blocks:7.3f} s")
        label = "one column: its N'-sized step"
        print(f"{label:45s} {1e-3 * small:7.3f} s  {small / (floor * blocks):5.2f} x the floor")
        gemm = bench_dgemm(2000, 3)                         # both rates from one measurement
        print(f"{'blocks a second, two threads over one':45s} {scaling:7.2f}  (dgemm: {gemm['threads'] / gemm['one_thread']:.2f})")
        return
    if a.batched:
        size = dict(zip(("N", "P", "n_basis", "n_iter"), map(int, a.size.split(",")))) if a.size else AWA2
        H = joint_problem(size["N"], size["P"])
        print(f"size {size}, {machine_info()}", flush=True)
        out = batched_run(H, size["n_basis"], size["n_iter"])
        if out["device"] == "cpu":
            gemm = bench_dgemm(2000, 3)["threads"]
            floor = sweep_flops(size["N"], size["P"], size["n_basis"], size["n_iter"]) / gemm / 1e9
            out.update({"dgemm (GFLOP/s, this process)": gemm, "FLOP floor of the sweeps": floor,
                        "batched / floor": out["full joint run, batched"] / floor,
                        "column / floor": out["full joint run, column at a time"] / floor})
        for k, v in out.items():
            print(f"{k:45s} " + (f"{v:.4g}" if isinstance(v, float) else str(v)))
        return
    if a.ratios:
        print(machine_info(), flush=True)
        sizes = [tuple(map(int, a.size.split(",")))[:3]] if a.size else [(2000, 8, 100), (6000, 16, 200), (12000, 32, 300)]
        for N, P, nb, tb, tc, cb, cc in sweep_ratios(sizes, a.repeat):
            print(f"N={N:6d} P={P:3d} N'={nb:4d}: one sweep batched {tb:7.3f} s, column at a time {tc:7.3f} s, "
                  f"column / batched {tc / tb:5.2f} (wall), {cc / cb:5.2f} (CPU time of the process)", flush=True)
        return
    size = dict(N=120, P=4, n_basis=20, n_iter=2) if a.quick else AWA2
    assert pc.cuda_available(), "no CUDA device (or simulator) here"
    H = joint_problem(size["N"], size["P"])
    nb = size["n_basis"]
    print(f"size {size}, simulator {pc.simulated()}", flush=True)
    Hb, X, B, f = first_column(H, nb)
    for k, v in check_oracle(X, B, f).items():
        print(f"oracle, {k}: " + ", ".join(f"{a}={b:.1e}" if isinstance(b, float) else f"{a}={b}" for a, b in v.items()))
    for k, v in step_breakdown(H, nb, 1 if a.quick else a.repeat).items():
        print(f"{k:60s} {v:9.2f} ms")
    wall, prof = profile_sweep(H, nb)
    print(f"one joint sweep ({size['P']} columns, ARD included), profiled: {wall:.2f} s\n{prof}", flush=True)
    if not a.no_full:
        out, pred = full_run(H, nb, size["n_iter"])
        for k, v in out.items():
            print(f"{k:40s} " + (f"{v:.2f} s" if isinstance(v, float) else v))
        if a.save:
            np.save(a.save, pred)


if __name__ == "__main__":
    main()
