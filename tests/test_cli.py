"""The `predictability` console script, run as a separate process (the notebook nbs/13_cli.ipynb tests `main`)."""
import importlib.util
import json
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
    np.testing.assert_allclose(out["score"].to_numpy(), combine(f0, G, n_iter=2, n_basis=30, noise=0.1, kernel_scale=1.0).prediction,
                               rtol=0, atol=1e-12)


def test_module_bad_input_exits_2(files):
    d, _, _ = files
    r = _run([sys.executable, "-m", "predictability.cli", "combine", d / "bad.csv", d / "refs.csv",
              "-o", d / "never.csv"])
    assert r.returncode == 2
    assert "NaN" in r.stderr and "Traceback" not in r.stderr and r.stderr.count("\n") == 1
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
