"""Bad input: every invalid dataset or parameter raises a clear error, a failed fit leaves
the estimator unfitted and the user's arrays untouched; unusual but valid input fits."""

from __future__ import annotations

import copy
import inspect
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

import skdp
from skdp import (
    DPSVRG,
    BudgetError,
    DPLogisticRegression,
    DPSVRGPlusPlus,
    IncompatibleSolverError,
    NoisyGD,
)
from skdp._base import BaseDPLinearModel
from skdp.model_selection import PrivateRandomizedSearch
from skdp.preprocessing import DPStandardScaler
from skdp.solvers import BaseDPSolver
from tests.conftest import dp_clf


def _id(value) -> str:
    """Short test ids: solver objects show only their non-default parameters."""
    if isinstance(value, BaseDPSolver):
        defaults = type(value)().get_params()
        changed = {k: v for k, v in value.get_params().items() if v != defaults[k]}
        return f"{type(value).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"
    if isinstance(value, dict):
        return ",".join(f"{k}={_id(v)}" for k, v in value.items())
    if isinstance(value, type):
        return value.__name__
    return repr(value)


def make_data(n=100, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    y[:2] = [0, 1]
    return X, y


def _same(a, b) -> bool:
    if sp.issparse(a):
        return (
            sp.issparse(b)
            and a.format == b.format
            and np.array_equal(a.toarray(), b.toarray(), equal_nan=True)
        )
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return np.array_equal(a, b, equal_nan=True)
    return bool(np.all(a == b))


def assert_fit_fails(est, X, y, exc, match):
    """``fit`` raises ``exc`` matching ``match``; no state is left behind, inputs intact."""
    X_before, y_before = copy.deepcopy(X), copy.deepcopy(y)
    params_before = est.get_params(deep=False)
    with pytest.raises(exc, match=match):
        est.fit(X, y)
    assert _same(X, X_before)
    assert _same(y, y_before)
    assert est.get_params(deep=False).keys() == params_before.keys()
    for name in (
        "privacy_spent_",
        "privacy_ledger_",
        "privacy_plan_",
        "coef_",
        "intercept_",
        "classes_",
        "solver_",
        "n_iter_",
    ):
        assert not hasattr(est, name), name
    # Unfitted for scikit-learn too: predict says "not fitted", not AttributeError.
    try:
        check_is_fitted(est)
    except NotFittedError:
        pass
    else:
        left = sorted(k for k in vars(est) if k.endswith("_"))
        pytest.fail(f"the failed fit left an estimator that check_is_fitted accepts: {left}")
    with pytest.raises(NotFittedError):
        est.predict(np.zeros((2, 5)))


def _fits_or_is_refused(est, X, y, error, message) -> bool:
    """Fit ``est``: True if it fits; False if it raises ``error`` saying ``message`` and
    is left unfitted (any other outcome fails the test)."""
    try:
        est.fit(X, y)
    except error as exc:
        assert message in str(exc)
        assert not hasattr(est, "coef_")
        return False
    return True


# -- bad data ---------------------------------------------------------------------------


def _with(X, index, value):
    X = np.array(X, dtype=np.result_type(X, value))
    X[index] = value
    return X


X0, Y0 = make_data()

BAD_DATA = {
    "X-nan": (_with(X0, (3, 1), np.nan), Y0, "NaN"),
    "X-inf": (_with(X0, (3, 1), np.inf), Y0, "infinity"),
    "X-minus-inf": (_with(X0, (0, 0), -np.inf), Y0, "infinity"),
    "X-sparse-nan": (sp.csr_matrix(_with(X0, (3, 1), np.nan)), Y0, "NaN"),
    "X-empty": (np.zeros((0, 5)), np.zeros(0, dtype=int), "0 sample"),
    "X-no-features": (np.zeros((100, 0)), Y0, "0 feature"),
    "y-nan": (X0, _with(Y0.astype(float), 4, np.nan), "NaN"),
    "y-inf": (X0, _with(Y0.astype(float), 4, np.inf), "infinity"),
    "length-mismatch": (X0, Y0[:-1], "inconsistent numbers of samples"),
    "one-class": (X0, np.zeros(100, dtype=int), "2 classes"),
    "one-class-str": (X0, np.full(100, "cat"), "2 classes"),
    "X-3d": (X0.reshape(100, 5, 1), Y0, "dim 3"),
    "X-1d": (X0[:, 0], Y0, "2D array"),
    "X-strings": (np.array([["a", "b"]] * 100), Y0, "could not convert|string"),
    "X-object-strings": (
        np.array([["a", 1.0]] * 100, dtype=object),
        Y0,
        "could not convert|string",
    ),
    "X-complex": (X0 + 1j, Y0, "[Cc]omplex"),
    "y-continuous": (X0, np.linspace(0, 1, 100), "Unknown label type|continuous"),
    "y-2d-multilabel": (X0, np.column_stack([Y0, 1 - Y0]), "1d|y should be a 1d array"),
}


@pytest.mark.parametrize("case", sorted(BAD_DATA))
def test_bad_data_raises_and_leaves_estimator_unfitted(case):
    X, y, match = BAD_DATA[case]
    assert_fit_fails(dp_clf(), X, y, ValueError, match)


def test_predict_with_wrong_number_of_features():
    X, y = make_data(d=5)
    est = dp_clf().fit(X, y)
    for method in (est.predict, est.predict_proba, est.predict_log_proba, est.decision_function):
        with pytest.raises(ValueError, match="4 features.*expecting 5 features"):
            method(X[:, :4])


def test_predict_before_fit_raises_not_fitted():
    est = dp_clf()
    for method in (est.predict, est.predict_proba, est.predict_log_proba, est.decision_function):
        with pytest.raises(NotFittedError):
            method(np.zeros((2, 5)))


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_predict_with_non_finite_input_raises(bad):
    X, y = make_data()
    est = dp_clf().fit(X, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        est.predict(_with(X, (0, 0), bad))


# -- bad budget ---------------------------------------------------------------------------


BAD_BUDGETS = {
    "epsilon": [np.nan, 0, 0.0, -1, -np.inf, True, False, "1", None, [1.0], 1 + 0j],
    "delta": [np.nan, -0.1, 1.0, 1.5, np.inf, True, "0.1", None],
}


@pytest.mark.parametrize("param, value", [
    pytest.param(param, value, id=f"{param}={_id(value)}")
    for param, values in BAD_BUDGETS.items() for value in values
])
def test_bad_budget_parameter_is_named(param, value):
    X, y = make_data()
    assert_fit_fails(dp_clf(**{param: value}), X, y, ValueError, param)


@pytest.mark.parametrize(
    "solver",
    [
        "gd",
        "svrg",
        "svrg++",
        NoisyGD(n_iter=3),
        DPSVRG(n_epochs=1, batch_size=8),
        DPSVRGPlusPlus(n_epochs=1, batch_size=8),
    ],
    ids=_id,
)
def test_zero_delta_with_gaussian_noise_solvers(solver):
    X, y = make_data()
    assert_fit_fails(dp_clf(delta=0.0, solver=solver), X, y, BudgetError, "delta > 0")


def test_budget_errors_are_value_errors():
    assert issubclass(BudgetError, ValueError)
    assert issubclass(IncompatibleSolverError, ValueError)


# -- bad estimator parameters -------------------------------------------------------------


@pytest.mark.parametrize(
    "params, match",
    [
        ({"alpha": -0.1}, "alpha"),
        ({"alpha": np.nan}, "alpha"),
        ({"alpha": np.inf}, "alpha"),
        ({"data_norm": 0.0}, "data_norm"),
        ({"data_norm": -1.0}, "data_norm"),
        ({"data_norm": np.inf}, "data_norm"),
        ({"data_norm": np.nan}, "data_norm"),
        ({"constraint": "l2", "radius": 0.0}, "radius"),
        ({"constraint": "l2", "radius": -2.0}, "radius"),
        ({"constraint": "l2", "radius": np.inf}, "radius"),
        ({"constraint": "l3", "radius": 1.0}, "constraint"),
        ({"constraint": "lp", "radius": 1.0, "p": 0.5}, "p"),
        ({"constraint": "lp", "radius": 1.0, "p": np.inf}, "p"),
        ({"data_norm_ord": 0.5}, "data_norm_ord"),
        ({"data_norm_ord": "dual"}, "data_norm_ord"),
        ({"fit_intercept": "yes"}, "fit_intercept"),
        ({"solver": "nope"}, "solver"),
        ({"solver": NoisyGD}, "solver"),
        ({"accounting": "nope"}, "accounting"),
        ({"neighboring": "nope"}, "neighboring"),
        ({"neighboring": "add_remove"}, "neighboring"),
        ({"data_norm": 1e200}, "data_norm"),
        ({"random_state": "seed"}, "random_state"),
    ],
    ids=_id,
)
def test_bad_parameter_is_named(params, match):
    X, y = make_data()
    assert_fit_fails(dp_clf(**params), X, y, ValueError, match)


@pytest.mark.parametrize("constraint", ["l2", "l1", "lp"])
def test_constraint_without_radius(constraint):
    X, y = make_data()
    assert_fit_fails(dp_clf(constraint=constraint, p=1.5), X, y, IncompatibleSolverError,
                     "radius")


def test_lp_constraint_without_exponent():
    X, y = make_data()
    assert_fit_fails(dp_clf(constraint="lp", radius=1.0), X, y, IncompatibleSolverError,
                     "exponent p")


@pytest.mark.parametrize(
    "params, match",
    [
        ({"solver": "svrg", "alpha": 0.0}, "alpha"),
        ({"solver": DPSVRG(n_epochs=1), "alpha": 0.0}, "alpha"),
        ({"solver": "svrg", "accounting": "pld"}, "PLD|pld"),
        ({"solver": "svrg++", "accounting": "pld"}, "PLD|pld"),
        ({"solver": "svrg", "accounting": "gaussian"}, "gaussian"),
        ({"solver": "svrg++", "accounting": "gaussian"}, "gaussian"),
    ],
    ids=_id,
)
def test_incompatible_solver_settings(params, match):
    X, y = make_data()
    assert_fit_fails(dp_clf(**params), X, y, IncompatibleSolverError, match)


@pytest.mark.parametrize(
    "solver, match",
    [
        (NoisyGD(n_iter=0), "n_iter"),
        (NoisyGD(n_iter=-3), "n_iter"),
        (NoisyGD(n_iter=2.5), "n_iter"),
        (NoisyGD(n_iter=True), "n_iter"),
        (NoisyGD(n_iter="10"), "n_iter"),
        (NoisyGD(step_size=0.0), "step_size"),
        (NoisyGD(step_size=np.nan), "step_size"),
        (NoisyGD(clip_norm=-1.0), "clip_norm"),
        (NoisyGD(clip_norm=np.inf), "clip_norm"),
        (NoisyGD(iterate="bad"), "iterate"),
        (DPSVRG(batch_size=-1), "batch_size"),
        (DPSVRG(batch_size=0), "batch_size"),
        (DPSVRG(n_epochs=0), "n_epochs"),
        (DPSVRG(inner_steps=1.5), "inner_steps"),
        (DPSVRG(correction_clip=0.0), "correction_clip"),
        (DPSVRG(sampling="bad"), "sampling"),
        (DPSVRGPlusPlus(n_epochs=-1), "n_epochs"),
        (DPSVRGPlusPlus(sampling="with_replacement"), "sampling"),
    ],
    ids=_id,
)
def test_bad_solver_parameter_is_named(solver, match):
    X, y = make_data()
    params_before = solver.get_params()
    assert_fit_fails(dp_clf(solver=solver), X, y, ValueError, match)
    assert solver.get_params() == params_before


def test_unknown_solver_parameter_in_set_params():
    est = dp_clf(solver=NoisyGD())
    with pytest.raises(ValueError, match="n_epochs"):
        est.set_params(solver__n_epochs=3)


# -- unusual but valid data -------------------------------------------------------------------


def test_read_only_input_fits():
    X, y = make_data()
    expected = dp_clf().fit(X, y)
    X_ro, y_ro = X.copy(), y.copy()
    X_ro.setflags(write=False)
    y_ro.setflags(write=False)
    est = dp_clf().fit(X_ro, y_ro)
    np.testing.assert_array_equal(est.coef_, expected.coef_)
    np.testing.assert_array_equal(est.predict(X_ro), expected.predict(X))
    np.testing.assert_array_equal(X_ro, X)


def test_non_contiguous_input_fits():
    X, y = make_data(n=100, d=10)
    X_strided = X[:, ::2]
    assert not X_strided.flags.c_contiguous
    y_strided = np.repeat(y, 2)[::2]
    expected = dp_clf().fit(np.ascontiguousarray(X_strided), y)
    est = dp_clf().fit(X_strided, y_strided)
    np.testing.assert_allclose(est.coef_, expected.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(est.predict(X_strided), expected.predict(X[:, ::2]))
    est_f = dp_clf().fit(np.asfortranarray(X_strided), y)
    np.testing.assert_allclose(est_f.coef_, expected.coef_, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.int8, np.uint8, bool])
def test_other_dtypes_fit_like_float64(dtype):
    rng = np.random.default_rng(1)
    X = rng.integers(0, 2, size=(100, 4)).astype(dtype)
    y = X[:, 0].astype(int) ^ rng.integers(0, 2, size=100) * (rng.random(100) < 0.2)
    y[:2] = [0, 1]
    X_before = X.copy()
    est = dp_clf().fit(X, y)
    expected = dp_clf().fit(X.astype(np.float64), y)
    np.testing.assert_array_equal(X, X_before)
    assert X.dtype == np.dtype(dtype)
    assert est.coef_.dtype == np.float64
    np.testing.assert_allclose(est.coef_, expected.coef_, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(est.predict(X), expected.predict(X.astype(np.float64)))


def test_float32_values_fit_like_their_float64_values():
    X, y = make_data()
    X32 = X.astype(np.float32)
    est = dp_clf().fit(X32, y)
    expected = dp_clf().fit(X32.astype(np.float64), y)
    np.testing.assert_array_equal(est.coef_, expected.coef_)


def test_list_and_string_labels_fit():
    X, y = make_data()
    labels = np.array(["neg", "pos"])[y]
    est = dp_clf().fit(X.tolist(), labels.tolist())
    np.testing.assert_array_equal(est.classes_, ["neg", "pos"])
    expected = dp_clf().fit(X, y)
    np.testing.assert_allclose(est.coef_, expected.coef_, rtol=1e-12, atol=1e-14)


def test_input_arrays_are_not_modified_by_fit_or_predict():
    X, y = make_data()
    X[0] *= 50.0  # a row that must be clipped, in fit and predict
    X_before, y_before = X.copy(), y.copy()
    Xs = sp.csr_matrix(X)
    Xs_before = Xs.copy()
    est = dp_clf().fit(X, y)
    est.predict_proba(X)
    dp_clf().fit(Xs, y).predict(Xs)
    np.testing.assert_array_equal(X, X_before)
    np.testing.assert_array_equal(y, y_before)
    assert (Xs != Xs_before).nnz == 0


def test_huge_finite_rows_are_clipped_not_zeroed():
    # data_norm clipping maps a row to the sphere of radius data_norm in its own direction,
    # however large its (finite) entries: squaring 1e200 must not overflow to a zero row.
    X, y = make_data(d=3)
    est = dp_clf(data_norm=1.0).fit(X, y)
    huge = np.array([[1e200, 0.0, 0.0], [0.0, -1e300, 0.0], [1e160, 1e160, 0.0]])
    unit = np.array([[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [1.0, 1.0, 0.0]])
    unit /= np.linalg.norm(unit, axis=1)[:, None]
    np.testing.assert_allclose(
        est.decision_function(huge), est.decision_function(unit), rtol=1e-9, atol=1e-12
    )
    # In fit, too: a dataset scaled by 1e200 is clipped to the same unit rows.
    direction = X / np.linalg.norm(X, axis=1)[:, None]
    a = dp_clf(data_norm=1.0).fit(direction, y)
    b = dp_clf(data_norm=1.0).fit(direction * 1e200, y)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-9, atol=1e-12)


# -- properties ---------------------------------------------------------------------------------

_finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@st.composite
def datasets(draw):
    n = draw(st.integers(4, 40))
    d = draw(st.integers(1, 6))
    n_classes = draw(st.integers(2, 3))
    X = draw(hnp.arrays(np.float64, (n, d), elements=_finite))
    y = draw(hnp.arrays(np.int64, n, elements=st.integers(0, n_classes - 1)))
    y[:n_classes] = np.arange(n_classes)  # every class appears
    return X, y, n_classes


@settings(
    max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    data=datasets(),
    epsilon=st.floats(1e-3, 1e3),
    data_norm=st.floats(1e-3, 1e3),
    fit_intercept=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_property_fit_never_crashes(data, epsilon, data_norm, fit_intercept, seed):
    X, y, n_classes = data
    X_before = X.copy()
    est = DPLogisticRegression(
        epsilon=epsilon,
        delta=1e-5,
        solver=NoisyGD(n_iter=3),
        data_norm=data_norm,
        fit_intercept=fit_intercept,
        random_state=seed,
        noise_dominated="fit",  # the solver's path, even on a handful of rows
    ).fit(X, y)
    np.testing.assert_array_equal(X, X_before)
    k = 1 if n_classes == 2 else n_classes
    assert est.coef_.shape == (k, X.shape[1])
    assert est.intercept_.shape == (k,)
    assert np.all(np.isfinite(est.coef_))
    assert np.all(np.isfinite(est.intercept_))
    assert est.n_iter_ == 3
    assert est.privacy_spent_.epsilon <= epsilon
    proba = est.predict_proba(X)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-9)
    assert set(est.predict(X)) <= set(est.classes_)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    epsilon=st.one_of(
        st.floats(max_value=0.0, allow_nan=False),
        st.just(float("nan")),
        st.integers(max_value=0),
    ),
    delta=st.one_of(st.floats(max_value=-1e-300), st.floats(min_value=1.0), st.just(float("nan"))),
)
def test_property_bad_budget_raises(epsilon, delta):
    X, y = make_data(n=20)
    assert_fit_fails(dp_clf(epsilon=epsilon), X, y, ValueError, "epsilon")
    assert_fit_fails(dp_clf(delta=delta), X, y, ValueError, "delta")


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("row", [[1.5e308, 1.5e308], [1e308, -1e308], [1e308, 0.0]])
def test_one_extreme_finite_row_changes_nothing_but_its_own_clipped_value(row, n_classes):
    """Regression: an extreme row once overflowed the scores and made coef_ NaN (a
    data-dependent output). Its clipped version must enter like any other row, silently."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = rng.integers(0, n_classes, size=200)
    X[0] = row
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf = dp_clf(epsilon=1.0, random_state=None, classes=list(range(n_classes))).fit(X, y)
        proba = clf.predict_proba(X)
    assert np.all(np.isfinite(clf.coef_)) and np.all(np.isfinite(proba))


@pytest.mark.parametrize("solver", [NoisyGD(n_iter=3, clip_norm=1e-323),
                                    DPSVRG(n_epochs=1, clip_norm=1e-323)], ids=["gd", "svrg"])
def test_underflowing_sensitivity_is_refused_not_accounted_as_free(solver):
    X, y = make_data()
    assert_fit_fails(dp_clf(solver=solver), X, y, ValueError, "not a positive finite")


# -- the matrix over every public estimator ---------------------------------------------
# The bad-input matrix for EVERY public estimator (issue 6 item 6).
#
# Each public estimator class exported by :mod:`skdp` must have fast settings in
# ``FAST`` (a new estimator cannot skip the matrix). For each: invalid data raises a clear
# error, leaves no fitted state and never modifies the input; unusual but valid data (one
# sample, constant or all-zero features, COO/CSC/CSR, read-only or non-contiguous arrays,
# huge magnitudes) fits and predicts finite values.

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


def _fitted(cls, X, y, random_state=0):
    """``_make(cls)`` fitted on ``(X, y)``, its warnings (privacy, convergence) silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _make(cls, random_state=random_state).fit(X, y)


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
    dense = _fitted(cls, X, y, random_state=3)
    for fmt in (sp.coo_matrix, sp.csc_matrix, sp.csr_matrix):
        est = _fitted(cls, fmt(X), y, random_state=3)
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
        # One-pass solvers need a few records per tree vertex: a clear refusal.
        fitted = _fits_or_is_refused(est, X, y, skdp.IncompatibleSolverError, "n_samples = 1")
    if fitted:
        assert np.all(np.isfinite(est.predict(X)))


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_wrong_number_of_features_at_predict(cls):
    X, y = _data(cls)
    est = _fitted(cls, X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(np.zeros((2, 5)))


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["gd", "svrg", "svrg++", "output_perturbation"])
@pytest.mark.parametrize("epsilon, delta", [(1e-9, 1e-5), (1e6, 1e-5), (1.0, 1e-300),
                                            (1e-3, 0.5)])
def test_extreme_budgets_fit_within_budget_or_are_refused(solver, epsilon, delta):
    # Budgets at the edge of what the accounting methods can certify either fit, spending at
    # most the budget, or raise BudgetError saying what to change; never a silent overrun.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    est = skdp.DPLogisticRegression(epsilon=epsilon, delta=delta, solver=solver)
    if _fits_or_is_refused(est, X, y, skdp.BudgetError, "raise epsilon or delta"):
        assert est.privacy_spent_.epsilon <= epsilon
        assert np.all(np.isfinite(est.coef_))


@pytest.mark.parametrize("cls", [c for c in ESTIMATORS if _is_classifier(c)],
                         ids=lambda c: c.__name__)
def test_unseen_labels_at_score_count_as_errors(cls):
    X, y = _data(cls)
    est = _fitted(cls, X, y)
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


def _extreme(seed=0):
    """Finite data whose sums overflow: half the rows of one column at +1.7e308, half at
    -1.7e308 (scikit-learn's finiteness check sums X: inf - inf)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(200, 3))
    X[:100, 0], X[100:, 0] = 1.7e308, -1.7e308
    y = rng.normal(size=200)
    y[:2], y[2:4] = 1.7e308, -1.7e308
    return X, y, (X[:, 1] > 0).astype(int)


@pytest.mark.parametrize("fit", [
    lambda X, y, yc: skdp.DPLinearRegression(random_state=0).fit(X, y),
    lambda X, y, yc: skdp.DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, yc),
    lambda X, y, yc: DPStandardScaler(random_state=0).fit(X),
    lambda X, y, yc: DPStandardScaler(
        bounds=(-1e-3, 1e-3), random_state=0).fit(X),
    lambda X, y, yc: PrivateRandomizedSearch(
        skdp.DPLogisticRegression(classes=[0, 1], data_norm=1e20),
        {"solver": [NoisyGD(step_size=1e300)]}, epsilon=2.0,
        n_candidates_mean=2, random_state=0).fit(X, yc),
], ids=["linear", "logistic", "scaler_auto", "scaler_bounds", "search"])
def test_extreme_finite_data_warns_nothing_numeric(fit, recwarn):
    """Whether a sum, a scaled value or an iterate overflows depends on the data: fits
    read it with floating-point warnings off (docs/privacy.md, 1.4)."""
    fit(*_extreme())
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("bounds", [(-1e-3, 1e-3), "auto"])
def test_a_private_pipeline_fits_extreme_finite_data_silently(bounds, recwarn):
    """The DP scaler's transform keeps finite rows finite (an overflow saturates at the
    largest float): a pipeline's next step would otherwise refuse an inf, an error that
    depends on the data; and nothing warns."""
    from sklearn.pipeline import make_pipeline

    X, _, yc = _extreme()
    pipe = make_pipeline(DPStandardScaler(bounds=bounds, random_state=0),
                         skdp.DPLogisticRegression(classes=[0, 1], random_state=0))
    pipe.fit(X, yc)
    assert np.isfinite(pipe[0].transform(X)).all()
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
