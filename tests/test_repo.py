"""Repository-level checks: the README's test command is the one CI runs, and no data files are committed."""
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```sh\n(.*?)\n```", text, flags=re.S)


def test_readme_gives_two_setup_commands():
    cmds = _readme_commands()
    assert len(cmds) >= 2
    assert "predictability demo" in cmds[0] and "pip install" in cmds[0]
    assert "nbdev_test" in cmds[1] and "pytest" in cmds[1]


def _ci_block(ci, name):
    return re.search(rf"# >>> README {name} command\n(.*?)\n# <<< README {name} command", ci, flags=re.S)


def test_ci_runs_both_readme_commands_in_order():
    "CI runs the README's two set-up commands as written, the main job first, in the same folder and venv"
    ci = (ROOT / ".ci" / "run").read_text()
    main, test = _ci_block(ci, "main job"), _ci_block(ci, "test")
    assert main.group(1).strip() == _readme_commands()[0].strip()
    assert test.group(1).strip() == _readme_commands()[1].strip()
    assert main.start() < test.start()
    between = ci[main.end():test.start()]
    assert "rm " not in between and "cd " not in between, "nothing may clean up between the two commands"


def test_no_data_files_are_committed():
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    bad = [f for f in files if re.search(r"\.(mat|npy|npz|parquet|pkl|h5)$", f)]
    assert not bad, f"data files are committed: {bad}"


def test_modules_parse_cleanly_and_have_docstrings():
    "Every module compiles without a warning (no invalid escapes such as LaTeX in a docstring) and has a docstring"
    import ast
    import warnings
    for path in sorted((ROOT / "predictability").rglob("*.py")):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        if path.name != "_modidx.py":
            doc = ast.get_docstring(tree)
            assert doc and "\t" not in doc, f"{path.name}: missing docstring or a TAB in it"


def test_package_names_functions_and_modules_apart():
    "`predictability.combine` is the function; the modules that define it have other names"
    import importlib
    import predictability
    assert predictability.__doc__ and "predictor combination" in predictability.__doc__
    assert callable(predictability.combine) and callable(predictability.tune)
    for mod in ("combination", "tuning"):
        m = importlib.import_module(f"predictability.{mod}")
        assert m.__name__ == f"predictability.{mod}"
    import predictability.combination as m
    assert m.combine is predictability.combine
    assert callable(predictability.combine)          # importing the module did not rebind the function


def test_numba_cache_never_inside_the_package(tmp_path):
    "Compiled kernels are cached in the user cache folder: a cache beside an installed module breaks reinstalls"
    import os
    import sys
    code = ("import numpy as np; from predictability.kernels import gram_stats; "
            "X = np.random.default_rng(0).normal(size=(50, 3)); gram_stats(X, X[:7], X[:, 0])")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PREDICTABILITY_CACHE_DIR")}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    import predictability
    pkg = Path(predictability.__file__).parent
    assert not [p for p in pkg.rglob("*") if p.suffix in (".nbi", ".nbc")], "Numba cache files inside the package"
    assert [p for p in (tmp_path / "predictability").rglob("*") if p.suffix in (".nbi", ".nbc")]


def test_imports_stand_in_cells_of_their_own():
    "nbdev's docs processing re-runs every cell that imports: a test cell that imports and computes breaks the build"
    import ast
    import json
    bad = []
    for nb in sorted((ROOT / "nbs").rglob("*.ipynb")):
        if any(part.startswith((".", "_")) for part in nb.relative_to(ROOT / "nbs").parts):
            continue
        for i, c in enumerate(json.loads(nb.read_text(encoding="utf-8"))["cells"]):
            src = "".join(c["source"])
            if c["cell_type"] != "code" or re.search(r"^#\|\s*export", src, flags=re.M) or nb.name == "index.ipynb":
                continue
            code = "\n".join(l for l in src.splitlines() if not l.lstrip().startswith(("%", "!")))
            try:
                tree = ast.parse(code)
            except SyntaxError:
                continue
            # nbdev looks for an import anywhere in the cell, a function's body included (processors._do_eval)
            imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
            if imports and not all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in tree.body):
                bad.append(f"{nb.relative_to(ROOT)} cell {i}: line {imports[0].lineno}: {ast.unparse(imports[0])}")
    assert not bad, "move these imports into an import cell of their own:\n" + "\n".join(bad)


def test_benchmark_scripts_start():
    "The benchmarks are not run in CI, but they must at least import the package as it is now (`--help`)"
    import sys
    for script in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        r = subprocess.run([sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0 and "usage" in r.stdout, f"{script.name}: {r.stderr[-1500:]}"


def test_show_doc_outputs_are_current():
    "The docs site shows the notebooks' saved show_doc outputs: each must match what the package renders now"
    import sys
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "refresh_show_doc.py"), "--check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]


def _package_imports():
    "module -> the package modules it imports, from every `from .x import` / `from predictability.x import` line"
    import ast
    pkg = ROOT / "predictability"
    mods = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
            for p in pkg.rglob("*.py") if p.name != "_modidx.py"}
    graph = {}
    for mod, path in mods.items():
        parts = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = parts[:len(parts) - node.level + 1] if node.level else []
                target = ".".join(base + (node.module.split(".") if node.module else []))
                names = [target] if node.module else [f"{target}.{a.name}" for a in node.names]
                deps |= {n for n in names if n in mods and n != mod}
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name in mods and a.name != mod}
        graph[mod] = deps
    return graph


def test_package_imports_have_no_cycle():
    "The package's modules import each other without a cycle, counting imports inside functions too"
    import graphlib
    graph = _package_imports()
    assert sum(map(len, graph.values())) > 20, "the import lines were not found"
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        raise AssertionError(f"import cycle: {' -> '.join(e.args[1])}") from None


# Modules whose purpose is to share private names between package modules (each says so in its docstring)
SHARING_MODULES = {"predictability.blocks", "predictability.labelled"}

def test_no_private_name_crosses_modules():
    "No module imports a private name from another package module, except from the declared sharing modules"
    import ast
    pkg = ROOT / "predictability"
    found = []
    for path in pkg.rglob("*.py"):
        if path.name == "_modidx.py":
            continue
        mod = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        parts = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not (node.level or (node.module or "").startswith("predictability")):
                continue
            base = parts[:len(parts) - node.level + 1] if node.level else []
            source = ".".join(base + (node.module.split(".") if node.module else []))
            for a in node.names:
                private = a.name.startswith("_") and not a.name.startswith("__")
                if private and source not in SHARING_MODULES:
                    found.append(f"{mod} imports {source}.{a.name}")
    assert not found, "private names imported across modules: " + "; ".join(sorted(found))
    for name in SHARING_MODULES:
        doc = ast.get_docstring(ast.parse((ROOT / (name.replace(".", "/") + ".py")).read_text(encoding="utf-8")))
        assert "share" in doc.lower(), f"{name} is a declared sharing module but its docstring does not say so"
