"""The chunked back end: the fits from row chunks with Dask (target-only and joint) and the label-free choice from
row chunks. Where Algorithm 1's columns run (threads, or a Dask client's tasks) is `predictability.columns`.
Importing this package imports no Dask module; its modules need the `dask` extra."""
