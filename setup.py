"""Setup script generated from settings.ini in the usual nbdev 2 way."""
from configparser import ConfigParser
from pathlib import Path

import setuptools

config = ConfigParser(delimiters=["="])
config.read(Path(__file__).parent / "settings.ini", encoding="utf-8")
cfg = config["DEFAULT"]

requirements = cfg.get("requirements", "").split()
dev_requirements = cfg.get("dev_requirements", "").split()
cuda_requirements = cfg.get("cuda_requirements", "").split()   # a real GPU only (the simulator tests need numba alone): numba-cuda (numpy<2.5: 0.30.4 registers np.row_stack, removed in NumPy 2.5) and CuPy (the batched joint sweep)
demo_requirements = ["river>=0.21", "pyarrow"]
dask_requirements = ["dask[array,dataframe,distributed]>=2024.1", "zarr>=3"]   # `predictability.chunked` and the CLI's chunked files

readme = Path(__file__).parent / "README.md"

setuptools.setup(
    name=cfg["lib_name"],
    version=cfg["version"],
    description=cfg["description"],
    long_description=readme.read_text(encoding="utf-8") if readme.exists() else cfg["description"],
    long_description_content_type="text/markdown",
    author=cfg["author"],
    author_email=cfg["author_email"],
    license="Apache-2.0",
    classifiers=[
        "Development Status :: 3 - Alpha",
        "Intended Audience :: Science/Research",
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Mathematics",
    ],
    url=cfg["git_url"],
    packages=setuptools.find_packages(include=["predictability", "predictability.*"]),
    include_package_data=True,
    python_requires=">=" + cfg["min_python"],
    install_requires=requirements,
    extras_require={
        "dev": dev_requirements,
        "cuda": cuda_requirements,
        "demo": demo_requirements,
        "dask": dask_requirements,
    },
    entry_points={
        "console_scripts": cfg.get("console_scripts", "").split(),
        "nbdev": [f"{cfg['lib_path']}={cfg['lib_path']}._modidx:d"],
    },
    zip_safe=False,
)
