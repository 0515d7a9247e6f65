"""What each method costs: wall time of one call, per method, at a few sizes N and numbers of references R.

Run from the repository root:

    python benchmarks/bench_methods.py                  # N in {1k, 10k, 37k}, R in {10, 79}: ~15-20 min on 2 cores
    python benchmarks/bench_methods.py --quick          # small sizes, under a minute
    python benchmarks/bench_methods.py --out nbs/bench_methods.csv   # the table the "Choosing a method" page reads

Every row is one call as a user makes it, on the synthetic predictors of `bench_npc.joint_problem` (a few latent
factors, each predictor a noisy, partly nonlinear function of some of them), with the method's label-free defaults
unless the row says otherwise:

* `combine(f0, G, method=m, joint=False)` for m in npc (Nystrom, ARD on: the default), npc with `ard=False`,
  npc-exact, lpc and opc: one target, the R references held fixed;
* `combine(F, None)`: joint denoising of all R + 1 columns (Algorithm 1), at the smaller sizes only;
* `mtl_combine(f0, G)` (Mejjati et al.'s MTL baseline, 50 ADMM iterations), at the smaller sizes only;
* `gl_combine` (the GL baseline) on N' = 500 dual coefficients: GL works on the predictors' kernel expansions, not
  on their values, so its cost does not depend on N (and training the rank SVMs it needs is not included).

Rows that would take too long or need too much memory are written with an empty time and the reason. Times are
medians over `--repeat` runs after one warm-up up to N = 2,000, single runs above, measured with this machine's dgemm rate in the same
process: read them as orders of magnitude and ratios, not as promises.
"""
from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kernels import bench_dgemm, machine_info, median_time  # noqa: E402
from bench_npc import joint_problem  # noqa: E402

from predictability import combine  # noqa: E402
from predictability.mtl import mtl_combine  # noqa: E402
from predictability.experiments.gl import gl_combine  # noqa: E402

FULL = dict(sizes=(1_000, 10_000, 37_322), refs=(10, 79))
QUICK = dict(sizes=(500, 2_000), refs=(5, 10))
COLUMNS = ("method", "call", "N", "R", "seconds", "repeats", "note")


def _quiet(fn):
    "fn with warnings silenced (tiny or synthetic problems make combine warn, which is not what is measured)"
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    return run


def cases(N: int, R: int, quick: bool):
    "(method, call, fn or None, note) for one size"
    H = joint_problem(N, R + 1, seed=0)
    f0, G = H[:, 0], H[:, 1:]
    out = [
        ("NPC (Nystrom)", "combine(f0, G, joint=False)",
         lambda: combine(f0, G, joint=False, progress=False), ""),
        ("NPC (Nystrom), isotropic", "combine(f0, G, joint=False, ard=False)",
         lambda: combine(f0, G, joint=False, ard=False, progress=False), ""),
        ("LPC", "combine(f0, G, method='lpc', joint=False)",
         lambda: combine(f0, G, method="lpc", joint=False, progress=False), ""),
        ("OPC", "combine(f0, G, method='opc', joint=False)",
         lambda: combine(f0, G, method="opc", joint=False, progress=False), ""),
    ]
    if N <= 2_000:
        out.append(("NPC exact", "combine(f0, G, method='npc-exact', joint=False)",
                    lambda: combine(f0, G, method="npc-exact", joint=False, progress=False), ""))
    else:
        out.append(("NPC exact", "combine(f0, G, method='npc-exact', joint=False)", None,
                    f"not run: N x N matrices ({8 * N * N / 1e9:.1f} GB each), O(N^3) per step"))
    if (N <= 10_000 and R <= 10) or N <= 1_000:
        out.append(("Joint denoising (NPC)", "combine(np.c_[f0, G], None)",
                    lambda: combine(H, None, progress=False), ""))
    else:
        out.append(("Joint denoising (NPC)", "combine(np.c_[f0, G], None)", None,
                    "not run here: many target-only runs (the rows above; benchmarks/README.md times the AWA2-scale joint run)"))
    if N <= 10_000 and R <= 10:
        out.append(("MTL", "mtl_combine(f0, G)", lambda: mtl_combine(f0, G, random_state=0), ""))
    else:
        out.append(("MTL", "mtl_combine(f0, G)", None, "not run: its cost grows with N (R + 1)^2; too slow here"))
    rng = np.random.default_rng(0)
    coef, B = rng.normal(size=(500, R + 1)), rng.normal(size=(500, 5))
    K_BB = np.exp(-((B[:, None] - B[None]) ** 2).sum(-1) / 5.0)
    out.append(("GL", "gl_combine(coef, K_BB)  (N' = 500, any N)", lambda: gl_combine(coef, K_BB), ""))
    return out


def run(sizes, refs, repeat: int, quick: bool, log=print) -> list[dict]:
    rows = []
    for N in sizes:
        for R in refs:
            for method, call, fn, note in cases(N, R, quick):
                if fn is None:
                    rows.append(dict(method=method, call=call, N=N, R=R, seconds="", repeats=0, note=note))
                    log(f"  N={N:>6} R={R:>3}  {method:<26} {note}")
                    continue
                reps = repeat if N <= 2_000 else 1          # the larger sizes: one run each
                t = median_time(_quiet(fn), reps, warmup=1 if N <= 2_000 else 0)
                rows.append(dict(method=method, call=call, N=N, R=R, seconds=f"{t:.4g}", repeats=reps, note=note))
                log(f"  N={N:>6} R={R:>3}  {method:<26} {t:9.3f} s")
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description="Wall time of each combination method at a few sizes N and R.")
    p.add_argument("--quick", action="store_true", help="small sizes (N in {500, 2000}, R in {5, 10})")
    p.add_argument("--repeat", type=int, default=3, help="timed repeats per measurement up to N = 2,000 (median); one run above")
    p.add_argument("--out", type=Path, default=None, help="write the table as CSV here (e.g. nbs/bench_methods.csv)")
    a = p.parse_args(argv)
    info = machine_info()
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items()), flush=True)
    gemm = bench_dgemm(1000, 3)["threads"]
    print(f"dgemm: {gemm:.1f} GFLOP/s", flush=True)
    cfg = QUICK if a.quick else FULL
    t0 = time.perf_counter()
    rows = run(cfg["sizes"], cfg["refs"], a.repeat, a.quick, log=lambda s: print(s, flush=True))
    print(f"total {time.perf_counter() - t0:.0f} s")
    if a.out is not None:
        with open(a.out, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=COLUMNS + ("dgemm_gflops", "cpus"))
            w.writeheader()
            for r in rows:
                w.writerow(dict(r, dgemm_gflops=f"{gemm:.0f}", cpus=info.get("cpus", "")))
        print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
