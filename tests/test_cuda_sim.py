"""The numba.cuda kernels of predictability.cuda against the NumPy oracle: under the CUDA simulator, and on a real GPU.

The simulator must be switched on before Numba is first imported, so each check runs in a fresh Python
subprocess with NUMBA_ENABLE_CUDASIM=1 in its environment: the result does not depend on how pytest was started
or on what this process has imported already. Sizes are tiny (the simulator runs one Python thread per CUDA
thread) but include blocks that are not multiples of the block size or of the 16x16 tile. The same checks run
without the simulator where a CUDA GPU is usable (the simulator accepts Python that the GPU compiler rejects), and
are skipped elsewhere.
"""
import functools
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(code: str, simulator: bool = True, timeout: float = 300) -> str:
    env = dict(os.environ)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        env.pop("NUMBA_ENABLE_CUDASIM", None)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"subprocess failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@functools.lru_cache(maxsize=None)
def _real_gpu() -> bool:
    "True when numba.cuda finds a real device (asked in a subprocess without the simulator)."
    out = _run("""
        from predictability.cuda import cuda_available
        print(cuda_available())
    """, simulator=False)
    return out.split()[-1] == "True"


@pytest.fixture(params=["simulator", "gpu"])
def simulator(request) -> bool:
    "Each oracle check runs under the simulator, and on a real GPU when there is one."
    if request.param == "gpu" and not _real_gpu():
        pytest.skip("no CUDA GPU usable here")
    return request.param == "simulator"


def test_gram_stats_and_matvec_match_oracle(simulator):
    out = _run(f"""
        import numpy as np
        from numba import config
        from predictability.cuda import cuda_available, simulated, gram_stats_cuda, kernel_matvec_cuda
        from predictability.kernels import gram_stats_reference, kernel_matvec_reference, kernel_features
        from predictability.roundoff import near, one_ulp
        assert bool(config.ENABLE_CUDASIM) == simulated() == {simulator} and cuda_available()

        rng = np.random.default_rng(42)
        X = kernel_features(rng.normal(size=(37, 3)), kernel_scale=0.4)
        cases = [
            (X, X[::9], rng.normal(size=37), 16),                 # N'=5; 37 rows = 2*16 + 5
            (X[:23], X[1::2][:17], rng.normal(size=(23, 2)), 20),  # N'=17 > tile; 23 = 20 + 3; f with 2 columns
            (X[:, :1], X[::6, :1], np.zeros(37), None),           # D = 1, f = 0, one block
            (X[:9], X[:1], rng.normal(size=9), 4),                # N' = 1; 9 = 2*4 + 1
        ]
        # Within 100 times the oracle's move when its inputs (X and B: the distances exp receives) move by one ulp. A
        # GPU's exp is within an ulp of e^-d (CUDA's double exp: 1 ulp) and its distances are sums of differences where
        # the oracle expands |x|^2 + |b|^2 - 2 x.b: a few ulps per entry, below near's floor of 100 eps.
        for Xc, Bc, f, br in cases:
            got, want = gram_stats_cuda(Xc, Bc, f, block_rows=br), gram_stats_reference(Xc, Bc, f)
            moved = gram_stats_reference(one_ulp(Xc), one_ulp(Bc, 1), one_ulp(f, 2))
            for g, w, m in zip(got, want, moved):
                assert g.shape == w.shape and g.dtype == np.float64, (g.shape, w.shape)
                if w.any():
                    near(g, w, m)
                else:
                    assert np.array_equal(g, w)               # K^T 0: every term exactly 0
            assert np.array_equal(got[0], got[0].T)
        u = rng.normal(size=(5, 2))
        B = X[::9]
        Xu, Bu = one_ulp(X), one_ulp(B, 1)
        near(kernel_matvec_cuda(X, B, u, block_rows=16), kernel_matvec_reference(X, B, u),
             kernel_matvec_reference(Xu, Bu, one_ulp(u, 2)))
        v = kernel_matvec_cuda(X, B, u[:, 0], block_rows=10)
        assert v.shape == (37,)
        near(v, kernel_matvec_reference(X, B, u[:, 0]), kernel_matvec_reference(Xu, Bu, one_ulp(u[:, 0], 2)))
        print("ok")
    """, simulator=simulator)
    assert out.strip().endswith("ok")


def test_kernel_stats_and_npc_on_the_cuda_backend(simulator):
    # the CUDA backend of the kernel-statistics layer, and every NPC path above it, against the CPU and the oracle
    out = _run("""
        import numpy as np
        from predictability import combine
        from predictability.core import normalize
        from predictability.kernels import kernel_features
        from predictability.kstats import kernel_stats
        from predictability.nystrom import basis_indices, npc_iterate, npc_step, npc_step_reference, npc_update
        from predictability.roundoff import near, one_ulp

        rng = np.random.default_rng(0)
        X = kernel_features(rng.normal(size=(45, 3)), kernel_scale=0.6)
        f = normalize(np.sin(3 * X[:, 0]) + rng.normal(size=45))
        B = X[basis_indices(45, 12)]
        # each check within 100 times the CPU's move when its inputs move by one ulp, through the same steps
        Xu, Bu, fu = one_ulp(X), one_ulp(B, 1), one_ulp(f, 2)
        g, c, cu = kernel_stats(X, B, f, device="cuda"), kernel_stats(X, B, f), kernel_stats(Xu, Bu, fu)
        assert g.layout == "cuda" and g.K is None and c.layout == "dense"
        for k in ("M", "ks", "kf", "KBB"):
            near(getattr(g, k), getattr(c, k), getattr(cu, k))
        u, v = rng.normal(size=(12, 2)), rng.normal(size=45)
        near(g.matvec(u), c.matvec(u), cu.matvec(one_ulp(u, 3)))
        near(g.rmatvec(v), c.rmatvec(v), cu.rmatvec(one_ulp(v, 3)))
        assert kernel_stats(X, B, device="cuda").kf is None
        a = npc_step(f, X, n_basis=12, device="cuda", noise=0.2)
        near(a, npc_step_reference(f, X, n_basis=12, noise=0.2), npc_step_reference(fu, Xu, n_basis=12, noise=0.2))
        near(npc_update(f, g, noise=0.2), npc_update(f, c, noise=0.2), npc_update(fu, cu, noise=0.2))
        hg, hc = npc_iterate(f, g, 3, noise=0.2), npc_iterate(f, c, 3, noise=0.2)
        near(hg, hc, npc_iterate(fu, cu, 3, noise=0.2))
        G = rng.normal(size=(45, 3))
        t = G[:, 0] + rng.normal(size=45)
        for joint in (True, False):
            kw = dict(n_iter=2, n_basis=12, joint=joint, ard=False, noise=0.2, kernel_scale=1.0)
            r1, r2 = combine(t, G, device="cuda", **kw), combine(t, G, **kw)
            near(r1.history, r2.history, combine(one_ulp(t), one_ulp(G, 1), **kw).history)
        print("ok")
    """, simulator=simulator)
    assert out.strip().endswith("ok")


def test_clear_error_where_numba_cuda_cannot_compile():
    # numba-cuda 0.30.4 cannot compile with NumPy >= 2.5 (np.row_stack removed): the entry says what to install
    if not _real_gpu():
        pytest.skip("no CUDA GPU usable here")
    out = _run("""
        import numpy as np
        try:
            del np.row_stack                    # as in NumPy 2.5
        except AttributeError:
            pass
        from predictability.cuda import gram_stats_cuda
        try:
            gram_stats_cuda(np.ones((3, 2)) * [[1], [2], [3]], np.ones((1, 2)), np.ones(3))
            print("ran")
        except RuntimeError as e:
            assert "numpy<2.5" in str(e) and "device='cpu'" in str(e), e
            print("refused")
    """, simulator=False)
    assert out.split()[-1] in ("ran", "refused")


def test_import_is_clean_without_cuda():
    # numba.cuda made unimportable: predictability.cuda still imports, reports no device, and refuses politely
    out = _run("""
        import sys
        sys.modules["numba.cuda"] = None            # any `from numba import cuda` now raises ImportError
        import numpy as np
        import predictability.cuda as pc
        assert pc.cuda is None and pc.cuda_available() is False and pc.simulated() is False
        try:
            pc.gram_stats_cuda(np.ones((3, 2)) * [[1], [2], [3]], np.ones((1, 2)), np.ones(3))
        except RuntimeError as e:
            assert "NUMBA_ENABLE_CUDASIM" in str(e)
        else:
            raise AssertionError("expected RuntimeError")
        print("ok")
    """, simulator=False)
    assert out.strip().endswith("ok")


def test_no_device_without_simulator():
    # on a machine without a GPU, cuda_available() is False and importing costs nothing; with a GPU, it is True
    out = _run("""
        from predictability.cuda import cuda_available, simulated
        print(cuda_available(), simulated())
    """, simulator=False)
    avail, sim = out.split()
    assert sim == "False" and avail in ("True", "False")


def test_batched_exponential_pass_matches_numpy(simulator):
    # the batched sweep's elementwise pass (`gauss_stack_cuda`): rows beyond the grid's y extent strided over it, a
    # basis not a multiple of the 32 threads along it, several columns, a distance rounding below 0
    out = _run(f"""
        import numpy as np
        from numba import config, cuda
        from predictability.cuda import cuda_available, simulated, gauss_stack_cuda
        import predictability.cuda as pc
        assert bool(config.ENABLE_CUDASIM) == simulated() == {simulator} and cuda_available()
        pc._GRID_Y = 2                                      # 2 blocks of 8 rows: rows 16.. strided over them
        rng = np.random.default_rng(7)
        A, xx, bb = rng.uniform(0, 1, (3, 21, 35)), rng.uniform(0, 2, (3, 21)), rng.uniform(0, 2, (3, 35))
        A[1, 20, 34] = (xx[1, 20] + bb[1, 34]) / 2 + 1e-17
        want = np.exp(-np.maximum(xx[:, :, None] + bb[:, None, :] - 2 * A, 0))
        got = gauss_stack_cuda(cuda.to_device(A), cuda.to_device(xx), cuda.to_device(bb)).copy_to_host()
        # the same exponent on both sides (2A is exact, so a fused multiply-add rounds xx + bb - 2A alike); exp within an
        # ulp on each side (CUDA's double exp: 1 ulp; NumPy's and libm's: under 1): 4 spacings of `want` at a power of 2
        assert (np.abs(got - want) <= 4 * np.spacing(want)).all(), np.abs(got - want).max()
        assert got[1, 20, 34] == 1.0
        print("ok")
    """, simulator=simulator)
    assert out.strip().endswith("ok")


@functools.lru_cache(maxsize=None)
def _cupy_gpu() -> bool:
    "True when CuPy imports and sees a CUDA device (asked in a subprocess without the simulator)."
    out = _run("""
        from predictability.batched import _cupy_ops
        print(_cupy_ops() is not None)
    """, simulator=False)
    return out.split()[-1] == "True"


def test_batched_sweep_on_the_gpu_matches_the_column_path():
    # CuPy's batched sweep (cuBLAS, cuSOLVER, the exponential pass) against the column-at-a-time path on the CPU, and
    # whole joint runs with device="cuda" against device="cpu"; skipped where CuPy sees no GPU
    if not _cupy_gpu():
        pytest.skip("no CuPy with a CUDA GPU here")
    out = _run("""
        import sys
        import numpy as np
        sys.path.insert(0, "benchmarks")
        from bench_npc import joint_problem
        from predictability import combine
        from predictability.batched import CuPyOps, batched_sweep
        from predictability.columns import ThreadColumns
        from predictability.combination import combine_options, _ard_weights
        from predictability.problem import prepare
        import cupy

        def rel(a, b):
            return np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)

        H = joint_problem(3000, 9)
        o = combine_options("npc", n_iter=2, noise=0.1, kernel_scale=1.0, n_basis=301)
        pb, m = prepare(H[:, 0], H[:, 1:], o.method), o.method
        rows = m.basis_rows(3000, o.rng)
        w, *_ = _ard_weights(m, True, pb.F2, pb.Gr, 9, None)
        plans, _ = m.plans(pb.H0, 1, list(range(9)), w, rows, n_iter=2, backend=m.backend(pb.H0))
        run = m.run(w, rows, plans, m.backend(pb.H0))
        ref = ThreadColumns(1).sweep(run, pb.H0, range(9), False)
        ulp = rel(ThreadColumns(1).sweep(run, pb.H0 * (1 + np.finfo(float).eps), range(9), False), ref)
        for mb in (None, 3000 * 301 * 8 * 1.5 / 2**20, 3000 * 301 * 8 * 0.5 / 2**20):   # all; one a group; streamed
            got = batched_sweep(run, pb.H0, range(9), CuPyOps(cupy), memory_mb=mb)
            assert rel(got, ref) <= 10 * ulp, (mb, rel(got, ref), ulp)
        kw = dict(n_iter=3, noise=0.1, kernel_scale=1.0, n_basis=100, progress=False)
        g = combine(H[:, 0], H[:, 1:], device="cuda", **kw)
        c = combine(H[:, 0], H[:, 1:], **kw)                                   # the CPU: the column path
        moved = combine(H[:, 0] * (1 + 2**-52), H[:, 1:] * (1 + 2**-52), **kw)
        assert rel(g.history, c.history) <= 10 * rel(moved.history, c.history)
        print("ok")
    """, simulator=False, timeout=600)
    assert out.strip().endswith("ok")
