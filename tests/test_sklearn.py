"`Combiner` as a scikit-learn transformer: scikit-learn's own estimator checks, a Pipeline, `set_output`."
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from predictability.combiner import Combiner

# Every check passes: none is expected to fail. Sparse input is refused by decision (the predictors' matrix is dense,
# and the kernel updates read whole rows), with a TypeError that says "sparse", as the sparse checks ask.
EXPECTED_FAILED_CHECKS = {}


@parametrize_with_checks([Combiner()], expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS)
def test_sklearn_check(estimator, check):
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*exceeds the number of points.*")   # the default n_basis is quiet
        check(estimator)


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    t = rng.normal(size=n)
    X = np.c_[t + rng.normal(size=n), t + 0.5 * rng.normal(size=n), np.tanh(t) + 0.3 * rng.normal(size=n)]
    return X, t


def test_pipeline_with_the_default_target():
    "`transform` is 2-D for `targets=0` (one column), so a Combiner is a Pipeline step before a regressor."
    X, t = _data()
    pipe = make_pipeline(Combiner(targets=0), LinearRegression()).fit(X, t)
    comb = pipe[0].transform(X)
    assert comb.shape == (len(X), 1)
    np.testing.assert_allclose(pipe.predict(X), LinearRegression().fit(comb, t).predict(comb), rtol=1e-12)


def test_set_output_pandas():
    "`set_output(transform='pandas')`: a DataFrame named by `get_feature_names_out`, the input's index kept."
    X, _ = _data()
    df = pd.DataFrame(X, columns=["a", "b", "c"], index=[f"r{i}" for i in range(len(X))])
    cb = Combiner(["b", "a"], n_iter=2).set_output(transform="pandas")
    out = cb.fit_transform(df)
    assert list(out.columns) == ["b", "a"] == list(cb.get_feature_names_out()) and list(out.index) == list(df.index)
    arr = Combiner(n_iter=2).set_output(transform="pandas").fit(X).transform(X)
    assert list(arr.columns) == ["x0"] and arr.shape == (len(X), 1)


def test_default_n_basis_never_warns_and_a_given_one_does():
    X, _ = _data(n=90)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Combiner(n_iter=1).fit(X)
    with pytest.warns(UserWarning, match="exceeds the number of points"):
        Combiner(n_basis=300, n_iter=1).fit(X)


def test_a_1d_dask_array_is_told_to_reshape():
    "A 1-D Dask array at `fit` gets scikit-learn's advice in the package's words (was an IndexError)."
    da = pytest.importorskip("dask.array")
    X, _ = _data()
    with pytest.raises(ValueError, match=r"`X` must be 2-D, \(N, P\).*Reshape your data"):
        Combiner(n_iter=1).fit(da.from_array(X[:, 0], chunks=40))
