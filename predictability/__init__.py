"""Test-time predictor combination by enhancing joint predictability (Kim, Richardt & Chang, ECCV 2020).

The public API is `combine`, `Combiner` (fit once, apply to new rows) and `tune`; the building blocks live in the submodules (one per notebook in nbs/).
The modules that define them are `predictability.combination` and `predictability.tuning`, so that
`predictability.combine` and `predictability.tune` always name the functions. They are loaded on first use, so that
`import predictability.cli` starts at once and the console script answers Ctrl-C while NumPy and Numba load.
"""
__version__ = "0.1.0"

__all__ = ["combine", "CombineResult", "Combiner", "tune", "TuneResult", "__version__"]

_HOME = {"combine": "combination", "CombineResult": "combination", "Combiner": "combiner", "tune": "tuning",
         "TuneResult": "tuning"}


def __getattr__(name):
    "`combine`, `tune` and their results from their modules, and any submodule (`predictability.kernels`), on first use."
    import importlib
    if name in _HOME:
        value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
        globals()[name] = value
        return value
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__():
    return sorted([*globals(), *_HOME])
