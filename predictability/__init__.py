"""Test-time predictor combination by enhancing joint predictability (Kim, Richardt & Chang, ECCV 2020).

The public API is `combine` and `tune`; the building blocks live in the submodules (one per notebook in nbs/).
The modules that define them are `predictability.combination` and `predictability.tuning`, so that
`predictability.combine` and `predictability.tune` always name the functions.
"""
__version__ = "0.1.0"

from .combination import CombineResult, combine  # noqa: E402
from .tuning import TuneResult, tune  # noqa: E402

__all__ = ["combine", "CombineResult", "tune", "TuneResult", "__version__"]
