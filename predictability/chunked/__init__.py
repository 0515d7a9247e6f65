"""The chunked back end: where Algorithm 1's columns run (threads of this process or a Dask client's tasks), the fits
from row chunks with Dask (target-only and joint), and the label-free choice from row chunks. Importing this package
imports no Dask module; its `rows`, `joint` and `labelfree` modules need the `dask` extra."""
