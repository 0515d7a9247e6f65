__version__ = "0.1.0"
"""Test-time predictor combination by enhancing joint predictability (Kim, Richardt & Chang, ECCV 2020).

The public API is `combine` and `tune`; the building blocks live in the submodules (one per notebook in nbs/).
"""

# The functions shadow their modules' names on the package on purpose: `predictability.combine` is the function,
# `predictability.combine` the module is reached as `import predictability.combine as m` or via sys.modules.
from .combine import CombineResult, combine  # noqa: E402
from .tune import TuneResult, tune  # noqa: E402

__all__ = ["combine", "CombineResult", "tune", "TuneResult", "__version__"]
