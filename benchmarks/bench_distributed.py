"""Benchmark of the fit and transform over row chunks (`predictability.chunked.rows`) on a LocalCluster, and its cost model.

Run from the repository root:

    python benchmarks/bench_distributed.py --out nbs/distributed_run.csv   # the table the notebook reads (about 10 minutes on 2 cores)
    python benchmarks/bench_distributed.py --quick                         # small sizes (a minute or two)
    python benchmarks/bench_distributed.py --memory-only --memory-rows 20000000 --memory-chunk 1000000 --out nbs/distributed_run.csv
                                                                  # the issue's memory goal (5 GB on disk): rows `memory_large`

What it measures, each part in the same run (ratios mean something on a shared machine):

* **passes**: a target-only fit and a transform (`Combiner(joint=False)` with fixed settings, N' = 300) of N rows x
  (1 target + 30 references) read from a Zarr store on disk, on a LocalCluster of 2 worker processes with one thread
  each, at two chunk counts. A scheduler plugin records every computation (graph received to result in memory), each
  task's compute time and output size; the workers' transfer logs give the bytes moved between them.
* **the cost model** of one pass: T(C) = L + ceil(C/W)·(k·tau + n_c·r), with L and tau (a computation's latency and a
  task's overhead) from passes of empty tasks at the same two chunk counts, and r the work per row (the pass's task
  compute time / N) and k (its tasks per chunk) measured at the smaller chunk count only; checked against
  both chunk counts.
* **the width probe**: the same passes at P = 500 predictors on fewer rows, for the work per row at that width.
* **goals**: the overhead of the chunked fit and transform against the in-memory path on data that fits (one local
  worker process with two threads, the data already on it); the workers' peak memory (Dask's own monitor, sampled
  every 100 ms) and the client's (tracemalloc, max RSS) over a fit and a transform of many 10^5-row chunks, the
  output written to Zarr.
* **the prediction** for 10^8 rows x 500 predictors on 100 workers: memory per worker, bytes moved and time per
  column update and per joint sweep (P column updates).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import dask
import dask.array as da
from dask.utils import key_split
from distributed import Client, LocalCluster, wait
from distributed.diagnostics.plugin import SchedulerPlugin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_kernels import machine_info, peak_memory  # noqa: E402

from predictability import Combiner  # noqa: E402
from predictability.chunked.rows import transform_dask  # noqa: E402

SETTINGS = dict(joint=False, noise=0.1, kernel_scale=1.0, n_iter=5, n_basis=300)   # fixed: no label-free choice
PASSES = {"chunk_gram": "kernel statistics", "chunk_iterate": "K u (iterate's mean, norm)",   # the first kind found
          "store-map": "transform", "chunk_min": "column ranges", "mean_chunk": "column moments",   # names the pass
          "chunk_rows": "basis rows", "qr": "tall-skinny QR", "negative": "empty tasks"}
SCALE = dict(rows=10**8, P=500, workers=100, chunk_rows=10**5)


def _block(block_info=None, *, P: int, seed: int):
    "One row chunk of the synthetic problem: a noisy target of a latent truth and P - 1 nonlinear, noisy references."
    lo, hi = block_info[None]["array-location"][0]
    rng, W = np.random.default_rng([seed, lo]), np.random.default_rng([seed]).normal(size=(3, P - 1))
    z = rng.normal(size=(hi - lo, 3))
    return np.c_[z[:, 0] + 0.8 * rng.normal(size=hi - lo), np.tanh(z @ W) + 0.5 * rng.normal(size=(hi - lo, P - 1))]


def write_store(path: str, N: int, P: int, chunk: int, seed: int = 0) -> str:
    "A Zarr store of N rows x P columns in `chunk`-row chunks, written chunk by chunk (each chunk's values fixed by its rows)."
    chunks = ((chunk,) * (N // chunk) + ((N % chunk,) if N % chunk else ()), (P,))
    da.to_zarr(da.map_blocks(_block, chunks=chunks, dtype=np.float64, P=P, seed=seed), path, overwrite=True)
    return path


class Passes(SchedulerPlugin):
    "Each computation the scheduler receives: its wall time, and per kind of task the count, compute seconds and output bytes."
    def __init__(self):
        self.runs = []

    def update_graph(self, scheduler, *, keys, **kwargs):
        self.runs.append(dict(t0=time.perf_counter(), left=set(keys), out=set(keys), t1=None, out_bytes=0,
                              tasks=Counter(), compute=defaultdict(float), nbytes=defaultdict(int)))

    def transition(self, key, start, finish, *args, **kwargs):
        if finish != "memory" or start != "processing" or not self.runs:
            return
        r, kind = self.runs[-1], key_split(key)
        r["tasks"][kind] += 1
        r["nbytes"][kind] += kwargs.get("nbytes", 0)
        r["compute"][kind] += sum(s["stop"] - s["start"] for s in kwargs.get("startstops", ()) if s["action"] == "compute")
        if key in r["out"]:
            r["out_bytes"] += kwargs.get("nbytes", 0)
        r["left"].discard(key)
        r["t1"] = time.perf_counter()

    def take(self) -> list[dict]:
        "The computations recorded since the last call, each named by the pass it is (`PASSES`)."
        runs, self.runs = self.runs, []
        for r in runs:
            kinds = " ".join(r["tasks"])
            r["pass"] = next((v for k, v in PASSES.items() if k in kinds), "other")
            r["seconds"], r["work_s"] = r["t1"] - r["t0"], sum(r["compute"].values())
        return runs


def cluster(workers: int, threads: int = 1) -> tuple[LocalCluster, Client, Passes]:
    "A LocalCluster of worker processes, its client and a `Passes` plugin on its scheduler."
    cl = LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True, dashboard_address=None)
    client, rec = Client(cl), Passes()
    cl.scheduler.add_plugin(rec, name="passes")
    return cl, client, rec


def transferred(client) -> dict:
    "Bytes each kind of task's outputs moved between workers so far (the workers' transfer logs)."
    logs = client.run(lambda dask_worker: [d["keys"] for d in dask_worker.transfer_incoming_log])
    out = Counter()
    for log in logs.values():
        for keys in log:
            for k, b in keys.items():
                out[key_split(k)] += b
    return out


def empty_pass(C: int, repeat: int = 5) -> None:
    "A computation of C tasks that do nothing, summed by the same tree: the scheduler's latency and per-task overhead."
    for _ in range(repeat):
        da.ones(C, chunks=1).map_blocks(np.negative).sum(split_every=8).compute()


def fit_and_transform(X, out_path: str) -> tuple[Combiner, float, float]:
    "A target-only fit of the chunks of `X` and its transform written to Zarr; (the Combiner, fit s, transform s)."
    t0 = time.perf_counter()
    cb = Combiner(0, **SETTINGS).fit(X)
    t1 = time.perf_counter()
    da.to_zarr(transform_dask(cb, X), out_path, overwrite=True)
    return cb, t1 - t0, time.perf_counter() - t1


def model(L: float, tau: float, C: int, n_c: int, r: float, k: float = 1.0, W: int = 2) -> float:
    "Seconds of one pass: L + ceil(C/W)·(k·tau + n_c·r): each worker runs its share of the C chunks, k tasks each, in turn."
    return L + math.ceil(C / W) * (k * tau + n_c * r)


def latency(runs: list[dict], counts: list[int], W: int = 2) -> tuple[float, float]:
    "(L, tau) of T(C) = L + ceil(C/W)·tau through the medians of the empty passes at the two chunk counts."
    (c0, t0), (c1, t1) = [(math.ceil(C / W), np.median([r["seconds"] for r in runs[C]])) for C in counts]
    tau = max((t1 - t0) / (c1 - c0), 0.0)
    return max(t0 - c0 * tau, 0.0), tau


def bench_passes(store: str, N: int, P: int, counts: list[int], repeat: int, tmp: str, rows: list) -> dict:
    "The fit and the transform at each chunk count (medians of `repeat`, interleaved), on 2 workers; the cost model's check."
    cl, client, rec = cluster(2)
    try:
        fit_and_transform(da.from_zarr(store)[:20_000], f"{tmp}/warm.zarr")       # the workers' imports and compiling
        rec.take()
        empties, runs, fits, moved = defaultdict(list), defaultdict(list), defaultdict(list), {}
        for _ in range(repeat):
            for C in counts:
                empty_pass(C)
                empties[C] += rec.take()
                X, moved0 = da.from_zarr(store, chunks=(math.ceil(N / C), P)), transferred(client)
                fits[C].append(fit_and_transform(X, f"{tmp}/out.zarr")[1])
                runs[C].append({r["pass"]: r for r in rec.take()})
                moved.setdefault(C, transferred(client) - moved0)
        med = lambda C, p, k: float(np.median([r[p][k] for r in runs[C]]))
        for C in counts:
            st, n_b = runs[C][0]["kernel statistics"], SETTINGS["n_basis"]
            up = st["nbytes"]["chunk_gram"]                                        # the chunks' tasks, not the tree's
            rows += [("fit", "whole fit (client's wall time)", C, float(np.median(fits[C])), np.nan, "s"),
                     ("bytes", "chunk sums up, kernel statistics", C, up, C * n_b * (n_b + 2) * 8, "B"),
                     ("bytes", "to the client, kernel statistics", C, st["out_bytes"], n_b * (n_b + 2) * 8, "B"),
                     ("bytes", "between workers, kernel statistics tree", C,
                      sum(b for k, b in moved[C].items() if "chunk_gram" in k or k.startswith("sum")), up, "B"),
                     ("bytes", "between workers, whole fit and transform", C, sum(moved[C].values()), np.nan, "B")]
        L, tau = latency(empties, counts)
        rows += [("model", "L: a computation's latency", 0, L, np.nan, "s"), ("model", "tau: a task's overhead", 0, tau, np.nan, "s")]
        work, k = {}, {}
        for p in ("kernel statistics", "K u (iterate's mean, norm)", "transform"):
            work[p] = med(counts[0], p, "work_s") / N                                  # seconds per row, fewer chunks
            k[p] = sum(runs[counts[0]][0][p]["tasks"].values()) / counts[0]            # tasks per chunk
            rows.append(("tasks", p, counts[0], k[p], np.nan, "tasks per chunk"))
            for C in counts:
                rows.append(("pass", p, C, med(C, p, "seconds"), model(L, tau, C, math.ceil(N / C), work[p], k[p]), "s"))
                rows.append(("rate", p, C, N / med(C, p, "work_s"), np.nan, "rows/s per thread"))
        return dict(L=L, tau=tau, work=work, k=k)
    finally:
        client.close(); cl.close()


def bench_width(store: str, N: int, P: int, chunk: int, tmp: str, rows: list) -> dict:
    "Work per row of the kernel statistics and of K u at width P (2 workers, ARD off: its client-side fit is not measured)."
    cl, client, rec = cluster(2)
    try:
        X = da.from_zarr(store, chunks=(chunk, P))
        Combiner(0, **SETTINGS, ard=False).fit(X[: 2 * chunk])                     # the workers' imports and compiling
        rec.take()
        Combiner(0, **SETTINGS, ard=False).fit(X)
        runs = {r["pass"]: r for r in rec.take()}
        work = {p: runs[p]["work_s"] / N for p in ("kernel statistics", "K u (iterate's mean, norm)")}
        rows += [("width", p, N // chunk, 1 / w, np.nan, f"rows/s per thread at P = {P}") for p, w in work.items()]
        return work
    finally:
        client.close(); cl.close()


def bench_overhead(store: str, N: int, P: int, C: int, repeat: int, rows: list) -> float:
    "Chunked fit + transform (one worker process, 2 threads, data on it) against the in-memory path: medians, interleaved."
    Xm = da.from_zarr(store).compute()
    cl, client, _ = cluster(1, threads=2)
    try:
        Xd = client.persist(da.from_zarr(store, chunks=(math.ceil(N / C), P)))       # read by the worker
        wait(Xd)
        def chunked():
            cb = Combiner(0, **SETTINGS).fit(Xd)
            return transform_dask(cb, Xd).compute()
        in_memory = lambda: Combiner(0, **SETTINGS).fit(Xm).transform(Xm)
        a, b = chunked(), in_memory()                                              # also the warm-up
        worst = np.abs(a - b).max() / np.abs(b).max()
        times = defaultdict(list)
        for _ in range(repeat):
            for name, fn in (("in memory", in_memory), ("chunked", chunked)):
                t0 = time.perf_counter(); fn(); times[name].append(time.perf_counter() - t0)
        med = {k: float(np.median(v)) for k, v in times.items()}
        rows += [("overhead", f"fit + transform, {k}", C, v, np.nan, "s") for k, v in med.items()]
        rows.append(("overhead", "largest relative difference, chunked vs in memory", C, worst, np.nan, ""))
        return med["chunked"] / med["in memory"]
    finally:
        client.close(); cl.close()


def bench_memory(N: int, P: int, chunk: int, tmp: str, rows: list) -> dict:
    "Workers' and client's peak memory over a fit and a transform of N rows in `chunk`-row chunks from Zarr, on 2 workers."
    with dask.config.set({"distributed.admin.system-monitor.interval": "100ms"}):
        cl, client, _ = cluster(2)
    try:
        store = write_store(f"{tmp}/memory.zarr", N, P, chunk)
        X = da.from_zarr(store)
        fit_and_transform(X[: 2 * chunk], f"{tmp}/warm.zarr")
        time.sleep(0.5)
        base = client.run(lambda dask_worker: dask_worker.monitor.quantities["memory"][-1])
        t0, res = time.time(), {}
        client_peak, client_rss = peak_memory(lambda: res.update(zip(("cb", "fit_s", "tr_s"),
                                                                    fit_and_transform(X, f"{tmp}/memory_out.zarr"))))
        time.sleep(0.5)
        peaks = client.run(lambda dask_worker, t0=t0: max(m for t, m in zip(dask_worker.monitor.quantities["time"],
                                                                              dask_worker.monitor.quantities["memory"]) if t >= t0))
        import resource
        chunk_b = chunk * P * 8
        rows += [("memory", "rows x columns (chunks)", N // chunk, N, P, ""),
                 ("memory", "fit / transform time", N // chunk, res["fit_s"], res["tr_s"], "s"),
                 ("memory", "a chunk", N // chunk, chunk_b, np.nan, "B"),
                 ("memory", "worker baseline (before the fit)", N // chunk, max(base.values()), np.nan, "B"),
                 ("memory", "worker peak, fit and transform", N // chunk, max(peaks.values()), np.nan, "B"),
                 ("memory", "client peak traced", N // chunk, client_peak, np.nan, "B"),
                 ("memory", "client max RSS growth", N // chunk, client_rss, np.nan, "B"),
                 ("memory", "client max RSS", N // chunk, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, np.nan, "B")]
        return dict(base=max(base.values()), growth=max(peaks[w] - base[w] for w in peaks), chunk_b=chunk_b)
    finally:
        client.close(); cl.close()


def predict(L: float, tau: float, work: dict, k: dict, mem: dict, rows: list) -> None:
    "The cost model at `SCALE`: memory per worker, bytes moved and seconds per column update and per joint sweep."
    N, P, W, n_c, n_b = SCALE["rows"], SCALE["P"], SCALE["workers"], SCALE["chunk_rows"], SETTINGS["n_basis"]
    C, D = math.ceil(N / n_c), P - 1
    col_s = sum(model(L, tau, C, n_c, work[p], k[p], W) for p in work)
    mem_w = mem["base"] + mem["growth"] / mem["chunk_b"] * n_c * P * 8                # the growth scales with the chunk
    up, down = C * n_b * (n_b + 2) * 8, W * n_b * D * 8 * 2                            # sums up; B once per worker, 2 passes
    rows += [("prediction", "memory per worker (1 thread, 1e5-row chunks)", C, mem_w, n_c * P * 8, "B"),
             ("prediction", "bytes up the trees per column update", C, up, np.nan, "B"),
             ("prediction", "bytes down per column update (B, once per worker and pass)", C, down, np.nan, "B"),
             ("prediction", "bytes per joint sweep (P columns + H's basis rows)", C, P * (up + down) + n_b * P * 8, np.nan, "B"),
             ("prediction", "seconds per column update", C, col_s, np.nan, "s"),
             ("prediction", "seconds per joint sweep", C, P * col_s, np.nan, "s")]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes")
    p.add_argument("--rows", type=int, default=None, help="rows of the two-chunk-count run (default 800,000)")
    p.add_argument("--memory-rows", type=int, default=None, help="rows of the memory run (default 2,000,000)")
    p.add_argument("--memory-chunk", type=int, default=100_000, help="rows per chunk of the memory run")
    p.add_argument("--memory-only", action="store_true", help="only the memory run")
    p.add_argument("--repeat", type=int, default=3, help="repeats of the passes and of the overhead comparison")
    p.add_argument("--out", default=None, help="write the table as CSV (e.g. nbs/distributed_run.csv)")
    a = p.parse_args(argv)
    N = a.rows or (100_000 if a.quick else 800_000)
    M, M_chunk = a.memory_rows or (400_000 if a.quick else 2_000_000), a.memory_chunk
    W_rows, W_chunk = (8_000, 2_000) if a.quick else (40_000, 10_000)
    info = machine_info()
    print("machine: " + ", ".join(f"{k}={v}" for k, v in info.items()))
    rows, counts = [("machine", "load average, 1 min, at the start", 0, info.get("loadavg_1min", np.nan), np.nan, "")], [8, 32]
    with tempfile.TemporaryDirectory() as tmp:
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cl, Client(cl):
            store = None if a.memory_only else write_store(f"{tmp}/run.zarr", N, 31, N // 32)
            wide = None if a.memory_only else write_store(f"{tmp}/wide.zarr", W_rows, SCALE["P"], W_chunk)
        mem = bench_memory(M, 31, M_chunk, tmp, rows)                  # first: the client's max RSS is its own
        if not a.memory_only:
            m = bench_passes(store, N, 31, counts, a.repeat, tmp, rows)
            work = bench_width(wide, W_rows, SCALE["P"], W_chunk, tmp, rows)
            ratio = bench_overhead(store, N, 31, 8, a.repeat, rows)
            rows.append(("goal", "overhead: chunked / in memory (1 worker process)", 8, ratio, 1.3, "x"))
            predict(m["L"], m["tau"], work, m["k"], mem, rows)
    rows.append(("machine", "load average, 1 min, at the end", 0, os.getloadavg()[0], np.nan, ""))
    table = pd.DataFrame(rows, columns=["part", "item", "chunks", "value", "reference", "unit"])
    with pd.option_context("display.width", 200, "display.max_rows", 200, "display.max_colwidth", 60):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if a.out and a.memory_only:                   # the large memory run: its rows replace those of an earlier one
        old = pd.read_csv(a.out) if os.path.exists(a.out) else table.iloc[:0]
        table = pd.concat([old[old.part != "memory_large"], table[table.part == "memory"].assign(part="memory_large")])
    if a.out:
        table.to_csv(a.out, index=False, float_format="%.6g")
    return table


if __name__ == "__main__":
    main()
