"""The `predictability` console script, run as a separate process (the notebook nbs/48_cli.ipynb tests `main`)."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

SCRIPT = Path(sys.executable).parent / ("predictability.exe" if sys.platform == "win32" else "predictability")


def _run(args, timeout=120):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    G = rng.normal(size=(80, 3))
    f0 = G[:, 0] * G[:, 1] + G[:, 2] + 0.5 * rng.normal(size=80)
    pd.DataFrame({"score": f0}).to_csv(d / "target.csv", index=False)
    pd.DataFrame(G, columns=["a", "b", "c"]).to_csv(d / "refs.csv", index=False)
    bad = f0.copy()
    bad[3] = np.nan
    pd.DataFrame({"score": bad}).to_csv(d / "bad.csv", index=False)
    return d, f0, G


@pytest.fixture(scope="module")
def combined(files):
    "combine() of the files' data with the CLI's FAST settings, and the same call on inputs moved by one ulp."
    from predictability import combine
    from predictability.roundoff import one_ulp
    _, f0, G = files
    return (combine(f0, G, n_iter=2, n_basis=30).prediction,
            combine(one_ulp(f0), one_ulp(G, 1), n_iter=2, n_basis=30).prediction)


def test_module_combine_csv(files, combined):
    d, f0, G = files
    r = _run([sys.executable, "-m", "predictability.cli", "combine", d / "target.csv", d / "refs.csv",
              "-o", d / "out.csv", "--n-iter", "2", "--n-basis", "30"])
    assert r.returncode == 0, r.stderr
    out = pd.read_csv(d / "out.csv")
    assert list(out.columns) == ["score"] and out.shape == (80, 1)
    from predictability.roundoff import near
    near(out["score"].to_numpy(), *combined)   # the CLI's defaults are combine's


def _one_error_line(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("predictability ") and ": error: " in r.stderr, r.stderr
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


def test_module_bad_input_exits_2(files):
    d, _, _ = files
    # pandas writes NaN in a one-column CSV as "": refused with its file line (data row 3 after the header)
    r = _run([sys.executable, "-m", "predictability.cli", "combine", d / "bad.csv", d / "refs.csv",
              "-o", d / "never.csv"])
    _one_error_line(r, "missing", "line 5, column 'score'")
    # a blank line instead: refused by file line, never skipped
    (d / "blank.csv").write_text((d / "bad.csv").read_text().replace('\n""\n', "\n\n"))
    r = _run([sys.executable, "-m", "predictability.cli", "combine", d / "blank.csv", d / "refs.csv",
              "-o", d / "never.csv"])
    _one_error_line(r, "line 5 is blank")
    assert not (d / "never.csv").exists()


def _cli(*args):
    return _run([sys.executable, "-m", "predictability.cli", *map(str, args)])


FAST = ["--n-iter", "2", "--n-basis", "30"]


def test_never_overwrites_an_input(tmp_path, files):
    d, _, _ = files
    (tmp_path / "dir").mkdir()
    t = tmp_path / "dir" / "t.csv"
    t.write_bytes((d / "target.csv").read_bytes())
    r = tmp_path / "r.csv"
    r.write_bytes((d / "refs.csv").read_bytes())
    (tmp_path / "sym.csv").symlink_to(t)
    os.link(r, tmp_path / "hard.csv")
    before = t.read_bytes(), r.read_bytes()
    for extra in (["-o", t], ["-o", tmp_path / "dir" / ".." / "dir" / "t.csv"], ["-o", tmp_path / "sym.csv"],
                  ["-o", tmp_path / "hard.csv"], ["-o", tmp_path / "o.csv", "--relevance", t],
                  ["-o", tmp_path / "o.csv", "--relevance", tmp_path / "o.csv"]):
        _one_error_line(_cli("combine", t, r, *extra, *FAST), "refusing to overwrite")
    assert (t.read_bytes(), r.read_bytes()) == before
    assert not (tmp_path / "o.csv").exists()


def test_rows_are_never_lost_or_shifted(tmp_path, files, combined):
    d, f0, G = files
    from predictability.roundoff import near
    expect, moved = combined   # the CLI's defaults are combine's ("auto")
    # Excel's UTF-8 BOM on header-less files
    (tmp_path / "t.csv").write_text("\n".join(map(repr, f0.tolist())) + "\n", encoding="utf-8-sig")
    (tmp_path / "r.csv").write_text("\n".join(",".join(map(repr, g)) for g in G.tolist()) + "\n", encoding="utf-8-sig")
    r = _cli("combine", tmp_path / "t.csv", tmp_path / "r.csv", "-o", tmp_path / "o.npy", *FAST)
    assert r.returncode == 0, r.stderr
    near(np.load(tmp_path / "o.npy"), expect, moved)
    # UTF-16 with a BOM
    pd.DataFrame(G, columns=["a", "b", "c"]).to_csv(tmp_path / "r16.csv", index=False, encoding="utf-16")
    r = _cli("combine", d / "target.csv", tmp_path / "r16.csv", "-o", tmp_path / "o16.npy", *FAST)
    assert r.returncode == 0, r.stderr
    near(np.load(tmp_path / "o16.npy"), expect, moved)
    # a blank line in the references: refused with its file line
    lines = (d / "refs.csv").read_text().splitlines()
    (tmp_path / "rb.csv").write_text("\n".join(lines[:6] + [""] + lines[6:]) + "\n")
    _one_error_line(_cli("combine", d / "target.csv", tmp_path / "rb.csv", "-o", tmp_path / "x.csv"), "line 7 is blank")
    # a ragged row
    (tmp_path / "rr.csv").write_text("\n".join(lines[:3] + ["1,2"] + lines[4:]) + "\n")
    _one_error_line(_cli("combine", d / "target.csv", tmp_path / "rr.csv", "-o", tmp_path / "x.csv"), "line 4 has 2")
    # pandas' index column, with a BOM: not a predictor, and written back
    ids = [f"id{i}" for i in range(80)]
    pd.DataFrame({"score": f0}, index=ids).to_csv(tmp_path / "ti.csv", encoding="utf-8-sig")
    pd.DataFrame(G, columns=["a", "b", "c"], index=ids).to_csv(tmp_path / "ri.csv")
    r = _cli("combine", tmp_path / "ti.csv", tmp_path / "ri.csv", "-o", tmp_path / "oi.csv", *FAST)
    assert r.returncode == 0, r.stderr
    out = pd.read_csv(tmp_path / "oi.csv", index_col=0)
    assert list(out.index) == ids and list(out.columns) == ["score"]
    near(out["score"].to_numpy(), expect, moved)
    # reference rows in another order: aligned by their labels; labels that do not pair up: refused
    pd.DataFrame(G, columns=["a", "b", "c"], index=ids).iloc[::-1].to_csv(tmp_path / "rx.csv")
    r = _cli("combine", tmp_path / "ti.csv", tmp_path / "rx.csv", "-o", tmp_path / "ox.csv", *FAST)
    assert r.returncode == 0, r.stderr
    near(pd.read_csv(tmp_path / "ox.csv", index_col=0)["score"].to_numpy(), expect, moved)
    pd.DataFrame(G, columns=["a", "b", "c"], index=[i.upper() for i in ids]).to_csv(tmp_path / "ry.csv")
    _one_error_line(_cli("combine", tmp_path / "ti.csv", tmp_path / "ry.csv", "-o", tmp_path / "x.csv"), "row label(s)")
    # Parquet with an index keeps it
    pd.DataFrame({"score": f0}, index=pd.Index(ids, name="id")).to_parquet(tmp_path / "tp.parquet")
    r = _cli("combine", tmp_path / "tp.parquet", d / "refs.csv", "-o", tmp_path / "op.parquet", *FAST)
    assert r.returncode == 0, r.stderr
    op = pd.read_parquet(tmp_path / "op.parquet")
    assert list(op.index) == ids and op.index.name == "id"
    assert not (tmp_path / "x.csv").exists()


def test_relevance(tmp_path, files):
    d, f0, G = files
    from predictability import combine
    r = _cli("combine", d / "target.csv", d / "refs.csv", "-o", tmp_path / "o.csv", "--relevance",
             tmp_path / "rel.csv", *FAST)
    assert r.returncode == 0, r.stderr
    rel = pd.read_csv(tmp_path / "rel.csv")
    assert list(rel.columns) == ["reference", "relevance"] and list(rel["reference"]) == ["a", "b", "c"]
    np.testing.assert_array_equal(rel["relevance"].to_numpy(), combine(f0, G, n_iter=2, n_basis=30).relevance)
    _one_error_line(_cli("combine", d / "target.csv", d / "refs.csv", "-o", tmp_path / "x.csv", "--relevance",
                         tmp_path / "xr.csv", "--method", "lpc"), "--relevance needs ARD")
    _one_error_line(_cli("combine", d / "target.csv", d / "refs.csv", "-o", tmp_path / "x.csv", "--relevance",
                         tmp_path / "xr.csv", "--no-ard"), "--no-ard")


@pytest.mark.parametrize("opt,val", [("--lam", "nan"), ("--n-basis", "0")])     # all of them: nbs/48_cli.ipynb
def test_numeric_options_are_finite(files, opt, val):
    d, _, _ = files
    _one_error_line(_cli("combine", d / "target.csv", d / "refs.csv", "-o", d / "never.csv", f"{opt}={val}"), opt)


def test_usage_error_is_one_line(files):
    d, _, _ = files
    _one_error_line(_cli("combine", d / "target.csv"), "-o/--out")


@pytest.mark.skipif(importlib.util.find_spec("numba") is None, reason="numba not installed")
def test_cuda_without_gpu_exits_2(files):
    from predictability.cuda import cuda_available
    if cuda_available():
        pytest.skip("a CUDA device is available")
    d, _, _ = files
    r = _cli("combine", d / "target.csv", d / "refs.csv", "-o", d / "never.csv", "--device", "cuda", *FAST)
    _one_error_line(r, "--device cuda")
    assert not (d / "never.csv").exists()


RAISE = """
import sys, numpy as np, predictability
def boom(*a, **k):
    raise {exc}
predictability.combine = boom          # the CLI calls the package's `combine`
from predictability.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("exc,code,msg", [
    ("np.linalg.LinAlgError('Singular matrix')", 2, "error: LinAlgError: Singular matrix"),
    ("__import__('numba').core.errors.NumbaError('typing failed')", 2, "error: NumbaError: typing failed"),
    ("KeyboardInterrupt()", 130, "interrupted")])
def test_unexpected_errors_are_one_line(files, exc, code, msg):
    d, _, _ = files
    r = _run([sys.executable, "-c", RAISE.format(exc=exc), "combine", d / "target.csv", d / "refs.csv",
              "-o", d / "never.csv"])
    assert r.returncode == code and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr == f"predictability combine: {msg}\n"
    assert not (d / "never.csv").exists()


def test_refuses_a_flag_the_method_lacks(tmp_path, files):
    d, _, _ = files          # LPC has no GP noise: the flag would be ignored, so it is refused, named
    _one_error_line(_cli("combine", d / "target.csv", d / "refs.csv", "-o", tmp_path / "y.csv", "--method", "lpc",
                         "--noise", "0.5", "--n-iter", "2"), "--noise")


@pytest.mark.skipif(not SCRIPT.exists(), reason="console script not installed (pip install -e .)")
def test_console_script(files):
    d, _, _ = files
    r = _run([SCRIPT, "--help"])
    assert r.returncode == 0 and "combine" in r.stdout
    r = _run([SCRIPT, "combine", d / "target.csv", d / "refs.csv", "-o", d / "out.npy", "--method", "lpc",
              "--n-iter", "2"])
    assert r.returncode == 0, r.stderr
    assert np.load(d / "out.npy").shape == (80,)


@pytest.mark.skipif(importlib.util.find_spec("predictability.toy") is None, reason="predictability.toy not built")
def test_toy_json():
    r = _run([sys.executable, "-m", "predictability.cli", "toy", "--json", "--seeds", "2"])
    assert r.returncode == 0, r.stderr
    table = json.loads(r.stdout)
    assert sorted(table) == ["toy1", "toy2"]
    for row in table.values():
        assert sorted(row) == ["f0", "lpc", "npc", "opc"]
        assert all(0 <= v <= 100 for v in row.values())


@pytest.mark.parametrize("how", ["index=False", "default", "named id", "string index", "decimal comma", "spreadsheet"])
def test_files_as_pandas_writes_them(tmp_path, files, combined, how):
    "Each of these was read wrongly with exit 0 (81 rows, an id column as a predictor, two columns out of one) or refused."
    d, f0, G = files
    from predictability.roundoff import near
    t, r, o = tmp_path / "t.csv", tmp_path / "r.csv", tmp_path / "o.csv"
    ids = pd.Index([f"img{i}" for i in range(80)], name="image_id")
    keys = pd.RangeIndex(100, 180, name="id")
    extra, labels = [], None
    if how == "index=False":
        pd.Series(f0).to_csv(t, index=False); pd.DataFrame(G).to_csv(r, index=False)
    elif how == "default":
        pd.Series(f0).to_csv(t); pd.DataFrame(G).to_csv(r)
    elif how == "named id":           # the shared key column aligns reference rows given in another order
        pd.DataFrame({"score": f0}, index=keys).to_csv(t)
        pd.DataFrame(G, columns=list("abc"), index=keys).iloc[::-1].to_csv(r)
        labels = list(keys)
    elif how == "string index":
        pd.DataFrame({"score": f0}, index=ids).to_csv(t)
        pd.DataFrame(G, columns=list("abc"), index=ids).sample(frac=1, random_state=1).to_csv(r)
        labels = list(ids)
    elif how == "decimal comma":      # a header-less one-column file: refused with the option, then read when told
        pd.Series(f0).to_csv(t, index=False, header=False, decimal=",", sep=";")
        pd.DataFrame(G).to_csv(r, index=False, header=False)
        _one_error_line(_cli("combine", t, r, "-o", o, *FAST), "--decimal ,")
        pd.DataFrame(G).to_csv(r, index=False, header=False, sep=";", decimal=",")
        extra = ["--decimal", ","]
    else:
        pd.DataFrame({"score": f0}).to_csv(t, sep=";", decimal=",", index=False)
        pd.DataFrame(G, columns=list("abc")).to_csv(r, sep=";", decimal=",", index=False)
        _one_error_line(_cli("combine", t, r, "-o", o, *FAST), "--decimal ,")
        extra = ["--decimal", ","]
    res = _cli("combine", t, r, "-o", o, *FAST, *extra)
    assert res.returncode == 0 and res.stderr == "" and res.stdout.count("\n") == 1, res
    from predictability.fileio import read_predictors
    out = read_predictors(o, decimal=extra[1] if extra else None, index_col=keys.name if how == "named id" else None)
    assert out.values.shape == (80, 1)
    near(out.values[:, 0], *combined)
    if labels is not None:
        assert [str(v) for v in out.index] == [str(v) for v in labels]


def test_cli_speaks_cli(tmp_path, files):
    d, f0, G = files
    r = _cli("combine", d / "target.csv", d / "refs.csv", "-o", tmp_path / "o.csv", *FAST)
    assert r.returncode == 0 and r.stderr == "" and r.stdout.count("\n") == 1 and "chosen for" not in r.stdout, r
    assert "changed 'score' by" in r.stdout and str(tmp_path / "o.csv") in r.stdout, r.stdout
    r = _cli("combine", d / "target.csv", d / "refs.csv", "-o", tmp_path / "ov.csv", *FAST, "--verbose")
    assert r.returncode == 0 and r.stdout.count("\n") == 6 and "--n-iter 2 given" in r.stdout, r.stdout
    r = _cli("combine", d / "target.csv", d / "refs.csv", "-o", tmp_path / "oq.csv", *FAST, "--quiet")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), r
    np.save(tmp_path / "noise.npy", np.random.default_rng(3).normal(size=(80, 3)))
    r = _cli("combine", d / "target.csv", tmp_path / "noise.npy", "-o", tmp_path / "u.csv")
    assert r.returncode == 0 and "unchanged" in r.stdout, r
    assert "--n-iter" in r.stderr and "res.choices" not in r.stderr and "`n_iter`" not in r.stderr, r.stderr
    _one_error_line(_cli("combine", d / "target.csv", "-o", tmp_path / "x.csv"), "no references were given")
    _one_error_line(_cli("combine", d / "target.csv", d / "refs.csv", "-o", tmp_path / "a.csv", "-o", tmp_path / "b.csv"),
                    "-o/--out given twice")
    r = _cli("combine", d / "target.csv", d / "refs.csv", "-o", "-", *FAST)
    assert r.returncode == 0 and "wrote standard output" in r.stderr, r
    assert pd.read_csv(__import__("io").StringIO(r.stdout)).shape == (80, 1)
    assert not any((tmp_path / f).exists() for f in ("x.csv", "a.csv", "b.csv", "-"))


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_ctrl_c_at_any_moment(tmp_path):
    "SIGINT while the libraries load, while reading, while computing: one line, exit 130, no OUT and no half-written file."
    import signal
    import time
    rng = np.random.default_rng(0)
    G = rng.normal(size=(3000, 5))
    pd.DataFrame({"score": np.tanh(G[:, 0] * G[:, 1]) + G[:, 2] + 0.5 * rng.normal(size=3000)}).to_csv(
        tmp_path / "t.csv", index=False)
    pd.DataFrame(G).to_csv(tmp_path / "r.csv", index=False)
    t0 = time.perf_counter()              # Python's own start-up (site's .pth files) comes first and is not ours:
    subprocess.run([sys.executable, "-m", "predictability.cli", "--version"], capture_output=True, check=True)
    ready = time.perf_counter() - t0      # by then `main` answers Ctrl-C, on this machine under its present load
    for delay in (ready, ready + 0.5, ready + 1.5, ready + 3.0):
        out = tmp_path / f"o{delay:.2f}.csv"   # a new file: combine never replaces one, as fit and apply
        p = subprocess.Popen([sys.executable, "-m", "predictability.cli", "combine", tmp_path / "t.csv",
                              tmp_path / "r.csv", "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=120)
        if "wrote" in stdout:             # finished first: a complete new result (Python's own shutdown, after
            assert p.returncode in (0, -signal.SIGINT), (delay, p.returncode, stderr)   # ours, may take the signal)
            assert pd.read_csv(out).shape == (3000, 1)
            continue
        assert p.returncode == 130 and stderr.endswith("interrupted\n") and stderr.count("\n") == 1, (delay, p.returncode, stderr)
        assert not out.exists()
        assert [f.name for f in tmp_path.iterdir() if f.name.startswith(".")] == []     # no half-written file


def test_fit_then_apply(tmp_path, files, combined):
    "`fit` then `apply` as separate processes: combine's result on the fit's rows, new rows one for one with their IDs."
    d, f0, G = files
    ids = pd.Index([f"img{i:02d}" for i in range(80)], name="image_id")
    X = pd.DataFrame(np.c_[f0, G], columns=["score", "a", "b", "c"], index=ids)
    X.to_csv(tmp_path / "X.csv")
    r = _cli("fit", tmp_path / "X.csv", "--targets", "score", "-o", tmp_path / "m.npz", *FAST)
    assert r.returncode == 0 and "fitted npc on 80 rows" in r.stdout, r.stderr
    r = _cli("apply", tmp_path / "m.npz", tmp_path / "X.csv", "-o", tmp_path / "a.csv")
    assert r.returncode == 0, r.stderr
    from predictability.combiner import Combiner
    from predictability.roundoff import near, one_ulp
    a = pd.read_csv(tmp_path / "a.csv", index_col="image_id")
    assert list(a.index) == list(ids) and list(a.columns) == ["score"]
    near(a["score"].to_numpy(), *combined)
    # new rows in reverse order: each row's value comes back beside its own ID
    X.iloc[::-1].to_csv(tmp_path / "rev.csv")
    assert _cli("apply", tmp_path / "m.npz", tmp_path / "rev.csv", "-o", tmp_path / "rev_o.csv").returncode == 0
    rev = pd.read_csv(tmp_path / "rev_o.csv", index_col="image_id")
    assert list(rev.index) == list(ids[::-1])
    near(rev.loc[ids, "score"].to_numpy(), a["score"].to_numpy(),      # the model's replay, as far as one ulp of X moves it
         Combiner.load(tmp_path / "m.npz").transform(one_ulp(X.to_numpy()))[:, 0])
    # nothing overwritten; no pickle loaded
    _one_error_line(_cli("apply", tmp_path / "m.npz", tmp_path / "X.csv", "-o", tmp_path / "a.csv"), "refusing to overwrite")
    (tmp_path / "m.pkl").write_bytes(b"\x80\x04K\x01.")
    _one_error_line(_cli("apply", tmp_path / "m.pkl", tmp_path / "X.csv", "-o", tmp_path / "b.csv"), "MODEL", ".npz")
    assert not (tmp_path / "b.csv").exists()


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None or importlib.util.find_spec("zarr") is None,
                    reason="the dask extra (and zarr) not installed")
def test_fit_and_apply_on_local_workers(tmp_path):
    "`--workers 2` as separate processes: a fit from Parquet parts and an apply from Zarr equal the fit and replay in memory."
    import dask.array as da
    import dask.dataframe as dd
    from predictability.combiner import Combiner
    from predictability.roundoff import near, one_ulp
    rng = np.random.default_rng(4)
    z = rng.normal(size=(400, 2))
    X = pd.DataFrame(np.c_[z[:, 0] + 0.8 * rng.normal(size=400), np.sin(z[:, 0]) + 0.4 * rng.normal(size=400),
                           z[:, 0] + z[:, 1] + 0.5 * rng.normal(size=400), rng.normal(size=400)],
                     columns=["score", "a", "b", "c"], index=pd.Index([f"item{k:04d}" for k in range(400)], name="item"))
    dd.from_pandas(X, npartitions=4).to_parquet(tmp_path / "parts")
    da.to_zarr(da.from_array(X.to_numpy(), chunks=(100, 4)), str(tmp_path / "X.zarr"))
    settings = ["--no-joint", "--noise", "0.2", "--kernel-scale", "0.3", "--n-iter", "3", "--n-basis", "30"]
    r = _cli("fit", tmp_path / "parts", "-o", tmp_path / "m.npz", *settings, "--workers", "2", "--chunk-rows", "97")
    assert r.returncode == 0 and r.stderr == "" and "fitted npc on 400 rows" in r.stdout, r
    mem, mem_u = (Combiner(0, joint=False, noise=0.2, kernel_scale=0.3, n_iter=3, n_basis=30).fit(x)
                  for x in (X.to_numpy(), one_ulp(X.to_numpy())))            # the fit in memory, and on X one ulp away
    want = mem.transform(X.to_numpy())
    fitted = Combiner.load(tmp_path / "m.npz")
    near(fitted.transform(X.to_numpy()), want, mem_u.transform(X.to_numpy()))
    r = _cli("apply", tmp_path / "m.npz", tmp_path / "X.zarr", "-o", tmp_path / "out.parquet", "--workers", "2",
             "--chunk-rows", "61")
    assert r.returncode == 0 and r.stderr == "" and "at 400 row(s)" in r.stdout, r
    out = pd.read_parquet(tmp_path / "out.parquet")         # a folder of 7 parts, in row order
    assert out.shape == (400, 1) and len(list((tmp_path / "out.parquet").iterdir())) == 7
    near(out.iloc[:, 0].to_numpy(), fitted.transform(X.to_numpy())[:, 0], fitted.transform(one_ulp(X.to_numpy()))[:, 0])


@pytest.mark.skipif(importlib.util.find_spec("dask") is None, reason="the dask extra not installed")
def test_fit_in_chunks_takes_the_label_free_defaults(tmp_path):
    "`fit --no-joint --chunk-rows` with the defaults: the label-free choices from row chunks, those of the fit in memory."
    from predictability.combiner import Combiner
    from predictability.roundoff import near, one_ulp
    rng = np.random.default_rng(5)
    z = rng.normal(size=600)
    X = pd.DataFrame(np.c_[z + 0.8 * rng.normal(size=600), np.sin(z) + 0.4 * rng.normal(size=600),
                           z + 0.5 * rng.normal(size=600), rng.normal(size=600)], columns=["score", "a", "b", "c"])
    X.to_parquet(tmp_path / "X.parquet")
    r = _cli("fit", tmp_path / "X.parquet", "-o", tmp_path / "m.npz", "--no-joint", "--n-basis", "60", "--chunk-rows", "150")
    assert r.returncode == 0 and r.stderr == "" and "fitted npc on 600 rows" in r.stdout, r
    mem = Combiner(0, joint=False, n_basis=60).fit(X.to_numpy())
    fitted = Combiner.load(tmp_path / "m.npz")
    assert [c.n_iter for c in fitted.choices_] == [c.n_iter for c in mem.choices_] and mem.choices_[0].n_iter > 0
    # the ML width and noise are values of a grid, the same for both; the step at them moves as far as the fit in
    # memory's own when its input moves by one ulp (nbs/28_chunked_labelfree.ipynb)
    want = mem.transform(X.to_numpy())
    near(fitted.transform(X.to_numpy()), want, Combiner(0, joint=False, n_basis=60).fit(one_ulp(X.to_numpy())).transform(X.to_numpy()))


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="the dask extra not installed")
def test_combine_in_chunks_on_local_workers(tmp_path):
    "`combine --workers 2` over row chunks (TARGET and REFERENCES as Parquet parts) equals `combine` on the files read whole."
    import dask.dataframe as dd
    from predictability import combine
    from predictability.roundoff import near, one_ulp
    rng = np.random.default_rng(4)
    z = rng.normal(size=(400, 2))
    ids = pd.Index([f"item{k:04d}" for k in range(400)], name="item")
    T = pd.DataFrame({"score": z[:, 0] + 0.8 * rng.normal(size=400)}, index=ids)
    R = pd.DataFrame(np.c_[np.sin(z[:, 0]) + 0.4 * rng.normal(size=400), z[:, 0] + z[:, 1] + 0.5 * rng.normal(size=400),
                           rng.normal(size=400)], columns=["a", "b", "c"], index=ids)
    T.to_csv(tmp_path / "t.csv"); R.to_csv(tmp_path / "r.csv")
    dd.from_pandas(T, npartitions=3).to_parquet(tmp_path / "t"); dd.from_pandas(R, npartitions=2).to_parquet(tmp_path / "r")
    settings = ["--noise", "0.2", "--kernel-scale", "0.3", "--n-iter", "3", "--n-basis", "30", "--no-ard"]   # joint
    r = _cli("combine", tmp_path / "t.csv", tmp_path / "r.csv", "-o", tmp_path / "mem.csv", *settings)
    assert r.returncode == 0, r
    r = _cli("combine", tmp_path / "t", tmp_path / "r", "-o", tmp_path / "out.parquet", *settings, "--workers", "2",
             "--chunk-rows", "97")
    assert r.returncode == 0 and r.stderr == "" and "in row chunks" in r.stdout, r
    out, want = pd.read_parquet(tmp_path / "out.parquet"), pd.read_csv(tmp_path / "mem.csv")["score"].to_numpy()
    assert list(out.index) == list(ids)
    near(out["score"].to_numpy(), want, combine(one_ulp(T["score"].to_numpy()), one_ulp(R.to_numpy(), 1), noise=0.2,   # combine()
                                                kernel_scale=0.3, n_iter=3, n_basis=30, ard=False).prediction)  # one ulp away


@pytest.mark.parametrize("bad, says", [('"1,234.5"', "thousands separators"), ("0x1p-3", "hexadecimal"),
                                       ("oops", "--index-col")])
def test_one_bad_cell_never_drops_a_column(tmp_path, files, bad, says):
    "One malformed cell in the first column of REFERENCES: an error naming the file, line, column and value, not an index."
    d, _, G = files
    lines = (d / "refs.csv").read_text().splitlines()
    lines[6] = bad + "," + lines[6].split(",", 1)[1]          # file line 7
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    r = _cli("combine", d / "target.csv", tmp_path / "r.csv", "-o", tmp_path / "o.csv", *FAST)
    _one_error_line(r, f"REFERENCES '{tmp_path / 'r.csv'}', line 7, column 'a': {bad.strip(chr(34))!r} is not numeric", says)
    assert not (tmp_path / "o.csv").exists()


def test_id_column_in_one_file(tmp_path, files, combined):
    "An integer `id` column in `fit X` and `combine X`: kept apart, written back unchanged, remembered by the model."
    d, f0, G = files
    ids = np.arange(456270, 456350)[::-1]
    X = pd.DataFrame({"id": ids, "score": f0, "ref_a": G[:, 0], "ref_b": G[:, 1], "ref_c": G[:, 2]})
    X.to_csv(tmp_path / "x.csv", index=False)
    r = _cli("fit", tmp_path / "x.csv", "--targets", "score", "-o", tmp_path / "m.npz", *FAST)
    assert r.returncode == 0 and "'score' from 'ref_a', 'ref_b', 'ref_c'" in r.stdout and "'id'" not in r.stdout, r
    r = _cli("apply", tmp_path / "m.npz", tmp_path / "x.csv", "-o", tmp_path / "a.csv")     # no --index-col
    assert r.returncode == 0, r.stderr
    a = pd.read_csv(tmp_path / "a.csv")
    assert list(a.columns) == ["id", "score"] and (a["id"].to_numpy() == ids).all()
    from predictability.roundoff import near
    near(a["score"].to_numpy(), *combined)
    # a key under another name, given with --index-col at fit: remembered, so apply reads the same layout
    X.rename(columns={"id": "batch"}).to_csv(tmp_path / "b.csv", index=False)
    assert _cli("fit", tmp_path / "b.csv", "--index-col", "batch", "-o", tmp_path / "mb.npz", *FAST).returncode == 0
    r = _cli("apply", tmp_path / "mb.npz", tmp_path / "b.csv", "-o", tmp_path / "ab.csv")
    assert r.returncode == 0 and list(pd.read_csv(tmp_path / "ab.csv").columns) == ["batch", "score"], r.stderr
    # combine of one file, every column jointly: the ids are not denoised, they come back as written
    r = _cli("combine", tmp_path / "x.csv", "-o", tmp_path / "o.csv", *FAST)
    assert r.returncode == 0 and "'id'" not in r.stdout and "'score' by" in r.stdout, r
    o = pd.read_csv(tmp_path / "o.csv", dtype=str)
    assert list(o.columns) == list(X.columns) and (o["id"] == pd.Series(ids).astype(str)).all()


@pytest.mark.parametrize("role", ["TARGET", "REFERENCES"])
def test_npy_structured_or_0d(tmp_path, files, role):
    "A structured-dtype or 0-d .npy: an error naming the file and its role, never a TypeError."
    d, f0, G = files
    np.save(tmp_path / "t.npy", f0); np.save(tmp_path / "r.npy", G)
    for bad, says in [(np.zeros(80, dtype=[("a", float), ("b", float)]), "structured array"), (np.array(2.0), "0-d")]:
        path = tmp_path / ("t.npy" if role == "TARGET" else "r.npy")
        np.save(tmp_path / "bad.npy", bad)
        argv = [tmp_path / "bad.npy", tmp_path / "r.npy"] if role == "TARGET" else [tmp_path / "t.npy", tmp_path / "bad.npy"]
        r = _cli("combine", *argv, "-o", tmp_path / "o.npy", *FAST)
        _one_error_line(r, f"{role} '{tmp_path / 'bad.npy'}' holds", says)
        assert "TypeError" not in r.stderr and path.exists()


def test_apply_names_the_model_when_transforming_fails(tmp_path, files):
    "A model file that loads but cannot transform (its header's column order changed): one line naming MODEL and X."
    import json
    d, f0, G = files
    X = pd.DataFrame(np.c_[f0, G], columns=["score", "a", "b", "c"])
    X.to_csv(tmp_path / "x.csv", index=False)
    assert _cli("fit", tmp_path / "x.csv", "-o", tmp_path / "m.npz", "--method", "lpc", "--n-iter", "2").returncode == 0
    with np.load(tmp_path / "m.npz") as z:
        head = json.loads(str(z["header"])); head["columns"] = [0, 1, 2, 7]
        np.savez(tmp_path / "bad.npz", **{**{k: z[k] for k in z.files}, "header": np.array(json.dumps(head))})
    r = _cli("apply", tmp_path / "bad.npz", tmp_path / "x.csv", "-o", tmp_path / "o.csv")
    _one_error_line(r, f"MODEL '{tmp_path / 'bad.npz'}'")
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.skipif(importlib.util.find_spec("dask") is None, reason="the dask extra not installed")
def test_combine_in_chunks_names_the_file_part_and_column(tmp_path, files):
    "A NaN or a constant column in a REFERENCES folder, a corrupt part: named by role, part and the user's column."
    d, f0, G = files
    pd.DataFrame({"score": f0}).to_parquet(tmp_path / "t.parquet")
    def refs(name, A):
        (tmp_path / name).mkdir()
        for k in range(2):
            pd.DataFrame(A[40 * k:40 * (k + 1)], columns=["a", "b", "c"]).to_parquet(tmp_path / name / f"part.{k}.parquet")
        return tmp_path / name
    nan, const = G.copy(), G.copy()
    nan[50, 1] = np.nan
    const[:, 2] = 1.5
    for folder, says in [(refs("nan", nan), ["part 'part.1.parquet'", "column 'b'", "data row 51"]),
                         (refs("const", const), ["column 'c'", "same value in every row"])]:
        r = _cli("combine", tmp_path / "t.parquet", folder, "-o", tmp_path / "o.parquet", "--chunk-rows", "30", *FAST)
        _one_error_line(r, f"REFERENCES '{folder}'", *says)
    bad = refs("bad", G)
    (bad / "part.1.parquet").write_bytes(b"PAR1 this is not Parquet")
    r = _cli("combine", tmp_path / "t.parquet", bad, "-o", tmp_path / "o.parquet", "--chunk-rows", "30", *FAST)
    _one_error_line(r, f"REFERENCES '{bad}', part 'part.1.parquet' is not a readable Parquet file")
    assert not (tmp_path / "o.parquet").exists()


@pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="the dask extra not installed")
def test_scheduler_that_is_not_dask(tmp_path):
    "--scheduler at a port that accepts but never answers, or answers HTTP: one line naming --scheduler, no hang; a real one works."
    import socket
    import threading
    from distributed import LocalCluster
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.normal(size=(120, 3)), columns=["score", "a", "b"])
    X["score"] += X["a"]
    X.to_parquet(tmp_path / "X.parquet")
    def listen(reply):
        s = socket.socket()
        s.bind(("127.0.0.1", 0)); s.listen(4)
        def serve():
            while True:
                c, _ = s.accept()
                if reply:
                    c.recv(4096); c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        threading.Thread(target=serve, daemon=True).start()
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"
    for addr in (listen(False), listen(True)):
        r = _run([sys.executable, "-m", "predictability.cli", "fit", tmp_path / "X.parquet", "-o", tmp_path / "m.npz",
                  "--scheduler", addr], timeout=150)
        _one_error_line(r, f"--scheduler '{addr}': no Dask scheduler answered there")
    with LocalCluster(n_workers=1, processes=False, threads_per_worker=1, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        r = _cli("fit", tmp_path / "X.parquet", "-o", tmp_path / "m.npz", "--scheduler", cluster.scheduler_address,
                 "--no-joint", "--noise", "0.2", "--kernel-scale", "0.3", "--n-iter", "1", "--n-basis", "20")
    assert r.returncode == 0 and "fitted npc on 120 rows" in r.stdout, r


@pytest.mark.skipif(sys.platform == "win32" or importlib.util.find_spec("distributed") is None, reason="SIGINT, dask")
@pytest.mark.parametrize("delay", [0.0, 4.0])
def test_ctrl_c_with_workers(tmp_path, delay):
    "Ctrl-C at a terminal (SIGINT to the whole process group) with --workers 2: exit 130, one line, no worker traceback."
    import os
    import signal
    import time
    import psutil
    rng = np.random.default_rng(0)
    G = rng.normal(size=(3000, 4))
    pd.DataFrame(np.c_[np.tanh(G[:, 0] * G[:, 1]) + G[:, 2], G], columns=["score", *"abcd"]).to_parquet(tmp_path / "X.parquet")
    p = subprocess.Popen([sys.executable, "-m", "predictability.cli", "fit", tmp_path / "X.parquet", "-o", tmp_path / "m.npz",
                          "--workers", "2", "--chunk-rows", "500"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    start = time.monotonic()
    while time.monotonic() - start < 120 and p.poll() is None:     # until the workers' processes exist
        if sum("multiprocessing-fork" in " ".join(c.cmdline()) for c in psutil.Process(p.pid).children(recursive=True)) >= 2:
            break
        time.sleep(0.1)
    time.sleep(delay)
    os.killpg(p.pid, signal.SIGINT)
    stdout, stderr = p.communicate(timeout=120)
    if "wrote" in stdout:                  # finished first
        return
    assert p.returncode == 130 and stderr == "predictability fit: interrupted\n", (p.returncode, stderr)
    assert not (tmp_path / "m.npz").exists()


def test_combine_never_overwrites(tmp_path, files):
    "combine refuses an existing OUT or --relevance, as fit and apply do; the file is left as it was."
    d, _, _ = files
    for out, rel in [("o.csv", None), ("o.parquet", None), ("new.csv", "rel.csv")]:
        taken = tmp_path / (rel or out)
        taken.write_text("mine\n")
        extra = ["--relevance", tmp_path / rel] if rel else []
        r = _cli("combine", d / "target.csv", d / "refs.csv", "-o", tmp_path / out, *extra, *FAST)
        _one_error_line(r, f"'{taken}' exists; refusing to overwrite it")
        assert taken.read_text() == "mine\n" and not (tmp_path / "new.csv").exists()
