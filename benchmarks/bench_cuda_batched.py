"""What one joint sweep would cost with every column batched on the GPU: a measurement for the design of a GPU-resident
joint run, not a path of the package. Needs PyTorch with CUDA (not a dependency of the package).

Run from the repository root on a machine with a CUDA GPU:

    python benchmarks/bench_cuda_batched.py            # AWA2 scale: N = 37,322, 80 columns, N' = 300
    python benchmarks/bench_cuda_batched.py --quick    # small sizes

For all P columns at once (column p's features are the others scaled by sqrt(N w_p), its own column scaled by 0, so
that the kernel of column p is exp(-sum_k c_pk^2 (h_ik - h_jk)^2)), with H resident on the device, it times:

* the N-sized work of a sweep: the cross terms H diag(c_p^2) H_B^T of every column as one batched GEMM, the
  distances and exp in place, K_p^T K_p and K_p^T [f_p 1] as batched GEMMs, and K_p u_p (the stored K, 7 GB in
  float64 at AWA2 scale);
* the N'-sized work of a sweep, batched: K_BB, the Choleskys of K_BB (jittered, in place of the pivoted one), the
  whitened Gram by two triangular solves, the two Choleskys and the solve of the reduced problem, and the top
  eigenpair of the (N'+1)-sized matrix by a full batched eigh or by 60 batched power steps (timing only: the
  power method's convergence is not checked here);
* in float64 and float32 (TF32 off), with CUDA events, medians of repeats; and column 0's K^T K against the
  package's oracle.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

try:
    import torch
except ImportError:   # `--help` still works without it
    torch = None

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_npc import joint_problem  # noqa: E402

from predictability.core import normalize  # noqa: E402
from predictability.kernels import gram_stats_reference  # noqa: E402
from predictability.nystrom import basis_indices  # noqa: E402


def timed(fn, repeat):
    "Median ms of `fn` over `repeat` runs after one warm-up, by CUDA events."
    fn()
    ts = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return float(np.median(ts))


def sweep_n_sized(H, c2, idx):
    "K_p for every column p (P, N, N'), then K_p^T K_p, K_p^T [f_p 1] and K_p u_p."
    P = H.shape[1]
    HB = H[idx]                                                  # (N', P)
    W = c2[:, :, None] * HB.T[None]                              # (P, P, N'): diag(c_p^2) H_B^T
    K = torch.matmul(H, W)                              # (P, N, N') cross terms, one batched GEMM
    xx = (H * H) @ c2.T                                          # (N, P): sum_k c_pk^2 h_ik^2
    bb = (HB * HB) @ c2.T                                        # (N', P)
    K.mul_(-2).add_(xx.T[:, :, None]).add_(bb.T[:, None, :]).clamp_(min=0).neg_().exp_()
    M = torch.bmm(K.transpose(1, 2), K)                          # (P, N', N')
    F = torch.stack([H.T, torch.ones_like(H.T)], -1)             # (P, N, 2): [f_p, 1]
    KF = torch.bmm(K.transpose(1, 2), F)                         # (P, N', 2)
    Ku = torch.bmm(K, KF[:, :, :1])                              # (P, N, 1): K_p u_p for some u_p
    return K, M, KF, Ku


def sweep_small(HB, c2, M, KF, noise=0.1, parts=None, top="eigh"):
    """The N'-sized work of every column, batched: K_BB, whitening, the reduced problem, the top eigenpair (a full
    batched `eigh`, or `top="power"`: 60 batched power steps on S + I). With `parts`, each stage is timed into it."""
    def stage(name, fn):
        if parts is None:
            return fn()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        r = fn()
        b.record()
        torch.cuda.synchronize()
        parts[name] = parts.get(name, 0.0) + a.elapsed_time(b)
        return r
    n = HB.shape[0]
    eye = torch.eye(n, dtype=HB.dtype, device=HB.device)
    KBB = stage("K_BB", lambda: torch.exp(-((HB[:, None, :] - HB[None, :, :]).pow(2) @ c2.T).permute(2, 0, 1)))
    L = stage("chol K_BB", lambda: torch.linalg.cholesky_ex(KBB + 1e-8 * eye)[0])
    VtV = stage("2 trsm (whitened Gram)", lambda: torch.linalg.solve_triangular(
        L, torch.linalg.solve_triangular(L, M, upper=False).transpose(1, 2), upper=False))
    def reduced():
        LA = torch.linalg.cholesky_ex(VtV + noise * eye)[0]
        L2 = torch.linalg.cholesky_ex(VtV + 2 * noise * eye)[0]
        Phi = torch.cholesky_solve(L2, LA)
        G = Phi.transpose(1, 2) @ VtV @ Phi
        b = Phi.transpose(1, 2) @ torch.linalg.solve_triangular(L, KF[:, :, :1], upper=False)
        S = torch.zeros(KBB.shape[0], n + 1, n + 1, dtype=KBB.dtype, device=KBB.device)
        S[:, 0, 0] = 1
        S[:, 1:, 0] = S[:, 0, 1:] = b[:, :, 0]
        S[:, 1:, 1:] = G
        return S
    S = stage("reduced problem (2 chol, solve, G)", reduced)
    if top == "eigh":
        return stage("top eigenpair: full batched eigh", lambda: torch.linalg.eigh(S)[1][:, :, -1])
    def power():
        x = torch.ones(S.shape[0], n + 1, 1, dtype=S.dtype, device=S.device)
        for _ in range(60):
            x = torch.baddbmm(x, S, x)
            x = x / torch.linalg.vector_norm(x, dim=1, keepdim=True)
        return x
    return stage("top eigenpair: 60 batched power steps", power)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args(argv)
    if torch is None or not torch.cuda.is_available():
        p.error("this benchmark needs PyTorch with a CUDA device")
    N, P, nb = (4000, 12, 100) if a.quick else (37_322, 80, 300)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    Hn = np.stack([normalize(c) for c in joint_problem(N, P).T], 1)
    idx = basis_indices(N, nb)
    w = np.full((P, P), 1.0 / (P - 1))
    np.fill_diagonal(w, 0.0)
    c2n = N * w                                                  # c_pk^2 = N w_pk (kernel_scale 1)
    print(f"N={N}, P={P}, N'={nb}, {torch.cuda.get_device_name()}, torch {torch.__version__}")
    rows = []
    for dtype in (torch.float64, torch.float32):
        H = torch.tensor(Hn, dtype=dtype, device=dev)
        c2 = torch.tensor(c2n, dtype=dtype, device=dev)
        ii = torch.tensor(idx, device=dev)
        K, M, KF, Ku = sweep_n_sized(H, c2, ii)
        X0 = Hn[:, 1:] * np.sqrt(c2n[0, 1:])
        Mref = gram_stats_reference(X0, X0[idx], Hn[:, 0])[0]
        err = float(np.abs(M[0].double().cpu().numpy() - Mref).max() / np.abs(Mref).max())
        t_big = timed(lambda: sweep_n_sized(H, c2, ii), a.repeat)
        t_small = timed(lambda: sweep_small(H[ii], c2, M, KF), a.repeat)
        t_pow = timed(lambda: sweep_small(H[ii], c2, M, KF, top="power"), a.repeat)
        parts = {}
        for _ in range(3):
            sweep_small(H[ii], c2, M, KF, parts=parts)
            sweep_small(H[ii], c2, M, KF, parts=parts, top="power")
        print(f"{str(dtype)}: N'-sized stages per sweep (ms, mean of 3): "
              + ", ".join(f"{k} {v / 3:.1f}" for k, v in parts.items()))
        t_up = timed(lambda: torch.tensor(Hn, dtype=dtype, device=dev), a.repeat)
        flops = P * (2.0 * N * nb * P + 2.0 * N * nb * nb)
        rows.append((str(dtype).split(".")[-1], t_big, flops / t_big / 1e9, t_small, t_pow, t_up, err))
        del K, M, KF, Ku
        torch.cuda.empty_cache()
    print(f"{'dtype':8s} {'N-sized/sweep':>14s} {'TFLOP/s':>8s} {'Nprime, eigh':>13s} {'Nprime, power':>14s} "
          f"{'H upload':>9s} {'x20 (power)':>12s} {'rel err M_0':>11s}")
    for d, tb, tf, ts, tp, tu, e in rows:
        print(f"{d:8s} {tb:11.1f} ms {tf:8.1f} {ts:10.1f} ms {tp:11.1f} ms {tu:6.1f} ms {20 * (tb + tp) / 1e3:10.2f} s "
              f"{e:11.1e}")


if __name__ == "__main__":
    main()
