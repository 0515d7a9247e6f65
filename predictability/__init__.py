__version__ = "0.1.0"
"""Test-time predictor combination by enhancing joint predictability (Kim, Richardt & Chang, ECCV 2020).

The public API is `combine` and `tune`; the building blocks live in the submodules (one per notebook in nbs/).
They are imported lazily, so `import predictability` stays cheap.
"""

__all__ = ["combine", "CombineResult", "tune", "TuneResult", "__version__"]

_LAZY = {"combine": "combine", "CombineResult": "combine", "tune": "tune", "TuneResult": "tune"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'predictability' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
