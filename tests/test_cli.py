"""The `predictability` console script, run as a separate process (the notebook nbs/13_cli.ipynb tests `main`)."""
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


def test_module_combine_csv(files):
    d, f0, G = files
    r = _run([sys.executable, "-m", "predictability.cli", "combine", d / "target.csv", d / "refs.csv",
              "-o", d / "out.csv", "--n-iter", "2", "--n-basis", "30"])
    assert r.returncode == 0, r.stderr
    out = pd.read_csv(d / "out.csv")
    assert list(out.columns) == ["score"] and out.shape == (80, 1)
    from predictability import combine
    np.testing.assert_allclose(out["score"].to_numpy(), combine(f0, G, n_iter=2, n_basis=30).prediction,   # the CLI's defaults are combine's
                               rtol=0, atol=1e-12)


def _one_error_line(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("predictability ") and ": error: " in r.stderr, r.stderr
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


def test_module_bad_input_exits_2(files):
    d, _, _ = files
    # pandas writes NaN in a one-column CSV as "": the missing value reaches combine(), which names the row
    r = _run([sys.executable, "-m", "predictability.cli", "combine", d / "bad.csv", d / "refs.csv",
              "-o", d / "never.csv"])
    _one_error_line(r, "NaN", "row 3")
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


def test_rows_are_never_lost_or_shifted(tmp_path, files):
    d, f0, G = files
    from predictability import combine
    expect = combine(f0, G, n_iter=2, n_basis=30).prediction   # the CLI's defaults are combine's ("auto")
    # Excel's UTF-8 BOM on header-less files
    (tmp_path / "t.csv").write_text("\n".join(map(repr, f0.tolist())) + "\n", encoding="utf-8-sig")
    (tmp_path / "r.csv").write_text("\n".join(",".join(map(repr, g)) for g in G.tolist()) + "\n", encoding="utf-8-sig")
    r = _cli("combine", tmp_path / "t.csv", tmp_path / "r.csv", "-o", tmp_path / "o.npy", *FAST)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "o.npy"), expect, rtol=0, atol=1e-12)
    # UTF-16 with a BOM
    pd.DataFrame(G, columns=["a", "b", "c"]).to_csv(tmp_path / "r16.csv", index=False, encoding="utf-16")
    r = _cli("combine", d / "target.csv", tmp_path / "r16.csv", "-o", tmp_path / "o16.npy", *FAST)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(tmp_path / "o16.npy"), expect, rtol=0, atol=1e-12)
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
    np.testing.assert_allclose(out["score"].to_numpy(), expect, rtol=0, atol=1e-12)
    # indexes in different orders: refused
    pd.DataFrame(G, columns=["a", "b", "c"], index=ids[::-1]).to_csv(tmp_path / "rx.csv")
    _one_error_line(_cli("combine", tmp_path / "ti.csv", tmp_path / "rx.csv", "-o", tmp_path / "x.csv"), "differ")
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


@pytest.mark.parametrize("opt,val", [("--lam", "nan"), ("--n-basis", "0")])     # all of them: nbs/13_cli.ipynb
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
