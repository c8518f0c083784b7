"""The bad-input matrix for EVERY public estimator (issue 6 item 6).

Each public estimator class exported by :mod:`skdp` must have fast settings in
``FAST`` (a new estimator cannot skip the matrix). For each: invalid data raises a clear
error, leaves no fitted state and never modifies the input; unusual but valid data (one
sample, constant or all-zero features, COO/CSC/CSR, read-only or non-contiguous arrays,
huge magnitudes) fits and predicts finite values.
"""

from __future__ import annotations

import copy
import inspect
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

import skdp
from skdp._base import BaseDPLinearModel
from skdp.solvers import NoisyGD

# Fast, valid settings per public estimator class (keys: class names).
FAST = {
    "DPLogisticRegression": {"solver": NoisyGD(n_iter=3)},
    "DPLinearRegression": {},
    "DPLinearSVC": {},
    "DPLasso": {},
    "DPHuberRegressor": {},
}


def _public_estimators():
    return sorted(
        (obj for obj in vars(skdp).values()
         if inspect.isclass(obj) and issubclass(obj, BaseDPLinearModel)),
        key=lambda cls: cls.__name__,
    )


def _make(cls, **params):
    return cls(**{**FAST[cls.__name__], "random_state": None, **params})


def _is_classifier(cls) -> bool:
    return hasattr(cls, "predict_proba") or hasattr(cls, "decision_function")


def _data(cls, n=40, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) / d
    if _is_classifier(cls):
        y = np.arange(n) % 2
    else:
        y = np.clip(X[:, 0] - X[:, 1], -1, 1)
    return X, y


ESTIMATORS = _public_estimators()


def test_every_public_estimator_is_in_the_matrix():
    assert {cls.__name__ for cls in ESTIMATORS} <= set(FAST)
    assert ESTIMATORS, "no public estimator found"


def _with(X, index, value):
    X = np.array(X, dtype=np.result_type(X, value))
    X[index] = value
    return X


def _bad_cases(cls):
    X, y = _data(cls)
    yf = y.astype(float)
    cases = {
        "X-nan": (_with(X, (3, 1), np.nan), y, "NaN"),
        "X-inf": (_with(X, (3, 1), np.inf), y, "infinity"),
        "X-sparse-inf": (sp.csr_matrix(_with(X, (3, 1), np.inf)), y, "infinity"),
        "X-empty": (np.zeros((0, 4)), y[:0], "0 sample"),
        "X-no-features": (np.zeros((40, 0)), y, "0 feature"),
        "y-nan": (X, _with(yf, 4, np.nan), "NaN"),
        "y-inf": (X, _with(yf, 4, np.inf), "infinity"),
        "length-mismatch": (X, y[:-1], "inconsistent numbers of samples"),
        "X-3d": (X.reshape(40, 4, 1), y, "dim 3"),
        "X-1d": (X[:, 0], y, "2D array"),
        "X-complex": (X + 1j, y, "[Cc]omplex"),
        "X-object-strings": (np.array([["a", 1.0]] * 40, dtype=object), y,
                             "could not convert|string"),
        "y-2d": (X, np.column_stack([y, y]), "1d|y should be a 1d array|column"),
    }
    if _is_classifier(cls):
        cases["one-class"] = (X, np.zeros(40, dtype=int), "2 classes")
    else:
        cases["y-strings"] = (X, np.array(["a"] * 40), "could not convert|string|numeric")
    return cases


def _snapshot(value):
    return copy.deepcopy(value)


def _same(a, b) -> bool:
    if sp.issparse(a):
        return sp.issparse(b) and a.format == b.format and np.array_equal(
            a.toarray(), b.toarray(), equal_nan=True)
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return np.array_equal(a, b, equal_nan=True)
    return bool(np.all(a == b))


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_bad_data_is_refused_cleanly(cls):
    for name, (X, y, match) in _bad_cases(cls).items():
        est = _make(cls)
        X_before, y_before = _snapshot(X), _snapshot(y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(ValueError, match=match):
                est.fit(X, y)
        assert _same(X, X_before) and _same(y, y_before), name
        assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("_")], name
        with pytest.raises(NotFittedError):
            est.predict(np.zeros((2, 4)))


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_failed_refit_keeps_the_previous_model(cls):
    X, y = _data(cls)
    est = _make(cls, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
        coef = est.coef_.copy()
        spent = est.privacy_spent_
        with pytest.raises(ValueError):
            est.fit(_with(X, (0, 0), np.nan), y)
    np.testing.assert_array_equal(est.coef_, coef)
    assert est.privacy_spent_ == spent


def _valid_cases(cls):
    X, y = _data(cls)
    constant = X.copy()
    constant[:, 1] = 0.25
    zero = np.zeros_like(X)
    strided = np.asfortranarray(np.repeat(X, 2, axis=1))[:, ::2]
    read_only = X.copy()
    read_only.setflags(write=False)
    huge = X * 1e150
    return {
        "constant-feature": (constant, y),
        "all-zero-X": (zero, y),
        "coo": (sp.coo_matrix(X), y),
        "csc": (sp.csc_matrix(X), y),
        "csr": (sp.csr_matrix(X), y),
        "strided": (strided, y),
        "read-only": (read_only, y),
        "huge-magnitudes": (huge, y),
        "int-X": ((X * 4).round().astype(np.int64), y),
        "bool-X": (X > 0, y),
    }


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_unusual_valid_data_fits_and_predicts(cls):
    for name, (X, y) in _valid_cases(cls).items():
        before = _snapshot(X)
        est = _make(cls, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        pred = est.predict(X)
        assert pred.shape == (X.shape[0],), name
        if not _is_classifier(cls):
            assert np.all(np.isfinite(pred)), name
        assert np.all(np.isfinite(est.coef_)), name
        assert _same(X, before), name


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_sparse_formats_give_the_dense_model(cls):
    X, y = _data(cls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dense = _make(cls, random_state=3).fit(X, y)
        for fmt in (sp.coo_matrix, sp.csc_matrix, sp.csr_matrix):
            est = _make(cls, random_state=3).fit(fmt(X), y)
            np.testing.assert_allclose(est.coef_, dense.coef_, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_single_sample(cls):
    X, y = _data(cls, n=1)
    est = _make(cls, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if _is_classifier(cls):
            # One sample is one class: refused with the class message.
            with pytest.raises(ValueError, match="2 classes|class"):
                est.fit(X, y)
            return
        try:
            est.fit(X, y)
        except skdp.IncompatibleSolverError as exc:
            # One-pass solvers need a few records per tree vertex: a clear refusal.
            assert "n_samples = 1" in str(exc)
            assert not hasattr(est, "coef_")
            return
    assert np.all(np.isfinite(est.predict(X)))


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_wrong_number_of_features_at_predict(cls):
    X, y = _data(cls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _make(cls, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(np.zeros((2, 5)))


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["gd", "svrg", "svrg++", "output_perturbation"])
@pytest.mark.parametrize("epsilon, delta", [(1e-9, 1e-5), (1e6, 1e-5), (1.0, 1e-300),
                                            (1e-3, 0.5)])
def test_extreme_budgets_fit_within_budget_or_are_refused(solver, epsilon, delta):
    # Budgets at the edge of what the accountants can certify either fit, spending at
    # most the budget, or raise BudgetError saying what to change; never a silent overrun.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    est = skdp.DPLogisticRegression(epsilon=epsilon, delta=delta, solver=solver)
    try:
        est.fit(X, y)
    except skdp.BudgetError as exc:
        assert "raise epsilon or delta" in str(exc)
        assert not hasattr(est, "coef_")
        return
    assert est.privacy_spent_.epsilon <= epsilon
    assert np.all(np.isfinite(est.coef_))


@pytest.mark.parametrize("cls", [c for c in ESTIMATORS if _is_classifier(c)],
                         ids=lambda c: c.__name__)
def test_unseen_labels_at_score_count_as_errors(cls):
    X, y = _data(cls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _make(cls, random_state=0).fit(X, y)
    unseen = np.full_like(y, 7)
    assert est.score(X, unseen) == 0.0
    assert set(est.predict(X)) <= set(est.classes_)


def test_clones_in_a_parallel_search_draw_independent_noise():
    # random_state=None: every fold and worker fits a clone with fresh OS entropy, so two
    # clones fitted on the SAME data (as parallel workers would) release different noise.
    from joblib import Parallel, delayed
    from sklearn.base import clone

    X, y = _data(skdp.DPLogisticRegression, n=60)
    est = skdp.DPLogisticRegression(solver=NoisyGD(n_iter=3), data_norm=1.0, random_state=None)
    coefs = Parallel(n_jobs=2)(delayed(lambda e: e.fit(X, y).coef_)(clone(est))
                               for _ in range(4))
    for i in range(4):
        for j in range(i):
            assert not np.allclose(coefs[i], coefs[j])
