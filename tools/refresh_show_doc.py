"""Re-render the saved outputs of the notebooks' `show_doc(name)` cells from the installed package.

The docs build shows the notebooks' saved `show_doc` outputs. When a signature, a docments comment or a docstring
changes, those outputs stay as they were until the notebook is run again, and the site documents the old code.

    python tools/refresh_show_doc.py           # rewrite the stale outputs in place (then run nbdev_clean)
    python tools/refresh_show_doc.py --check   # list the stale cells and exit 1 if there are any (tests/test_repo.py)

The comparison ignores the `[source](...)` link, whose line number is not part of what the page documents.
"""
from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_re_show_doc = re.compile(r"\s*show_doc\(([\w.]+)\)\s*")
_re_default_exp = re.compile(r"^#\|\s*default_exp\s+(\S+)", re.M)


def _modules() -> dict:
    import predictability
    mods = {"predictability": predictability}
    for m in pkgutil.walk_packages(predictability.__path__, "predictability."):
        mods[m.name] = importlib.import_module(m.name)
    return mods


def _lookup(name: str, first: str, mods: dict):
    "`name` (dotted) from the notebook's own module first, then from any module of the package"
    head, *rest = name.split(".")
    for mod in ([mods[first]] if first in mods else []) + list(mods.values()):
        obj = getattr(mod, head, None)
        if obj is not None:
            for attr in rest:
                obj = getattr(obj, attr)
            return obj
    raise LookupError(f"show_doc({name}): no module of the package defines {head!r}")


def _lines(text: str) -> list:
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _key(outputs) -> str:
    "What the page shows of a show_doc output, without its source link"
    md = "".join(next((o.get("data", {}).get("text/markdown", []) for o in outputs or []), []))
    return "\n".join(line for line in md.split("\n") if not line.startswith("[source]("))


def refresh(check: bool) -> list:
    from nbdev.showdoc import show_doc
    mods = _modules()
    stale = []
    for path in sorted((ROOT / "nbs").rglob("*.ipynb")):
        if any(part.startswith((".", "_")) for part in path.relative_to(ROOT / "nbs").parts):
            continue
        nb = json.loads(path.read_text(encoding="utf-8"))
        source = lambda c: "".join(c["source"])
        exp = next((m for c in nb["cells"] if (m := _re_default_exp.search(source(c)))), None)
        first = "predictability." + exp.group(1) if exp else ""
        dirty = False
        for i, cell in enumerate(nb["cells"]):
            m = _re_show_doc.fullmatch(source(cell)) if cell["cell_type"] == "code" else None
            if not m:
                continue
            sd = show_doc(_lookup(m.group(1), first, mods))
            out = [{"data": {"text/markdown": _lines(sd._repr_markdown_()), "text/plain": _lines(repr(sd))},
                    "execution_count": None, "metadata": {}, "output_type": "execute_result"}]
            if _key(cell.get("outputs")) != _key(out):
                stale.append(f"{path.relative_to(ROOT)} cell {i}: show_doc({m.group(1)})")
                cell["outputs"], dirty = out, True
        if dirty and not check:
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return stale


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Re-render the notebooks' saved show_doc outputs from the package.")
    p.add_argument("--check", action="store_true", help="only list the stale outputs; exit 1 if there are any")
    args = p.parse_args(argv)
    stale = refresh(args.check)
    for s in stale:
        print(("stale: " if args.check else "re-rendered: ") + s)
    if args.check and stale:
        print("run `python tools/refresh_show_doc.py` and then `nbdev_clean`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
