"""Array API input (issue 39): PyTorch (CPU) and ``array_api_strict`` arrays stay in their
namespace; every solver that reads ``X`` only through the blocked passes fits them, equal
to the NumPy fit for the same seed (the noise is drawn on the host from the same source),
with the same ledger; the others refuse them before anything is charged."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import sklearn
from scipy import stats
from sklearn.base import clone
from sklearn.datasets import load_diabetes, load_digits
from sklearn.pipeline import make_pipeline

from skdp import BudgetAccountant
from skdp._array_api import to_numpy
from skdp.decomposition import DPPCA
from skdp.exceptions import BudgetError, IncompatibleSolverError
from skdp.geometry import Unconstrained
from skdp.linear_model import (
    DPHuberRegressor,
    DPLasso,
    DPLinearRegression,
    DPLinearSVC,
    DPLogisticRegression,
)
from skdp.losses import GLMLoss, LogisticLoss, MultinomialLogisticLoss
from skdp.model_selection import PrivateRandomizedSearch
from skdp.naive_bayes import DPGaussianNB
from skdp.preprocessing import DPStandardScaler, PublicBoundsScaler, RowNormClipper
from skdp.privacy.budget import Budget
from skdp.solvers import SOLVERS, NoisyGD, Problem, ProblemSpec
from tests.conftest import RecordingNoiseSource, require_array_api_dispatch

#: Namespace (and device): the CPU ones run everywhere (CI); the GPU ones where a GPU is
#: (a session with the device tool runs this file unchanged there).
NAMESPACES = ["array_api_strict", "torch", "torch-cuda", "cupy"]
#: Solvers that read X only through the blocked passes (the ones that take device arrays).
BLOCKED = sorted(name for name, cls in SOLVERS.items() if cls.capabilities.out_of_core)
ROW_BASED = sorted(name for name, cls in SOLVERS.items() if not cls.capabilities.out_of_core)


class _Space:
    """A namespace module and the device the test's arrays are created on."""

    def __init__(self, module, device=None):
        self.module, self.device = module, device

    def __getattr__(self, name):
        return getattr(self.module, name)


@pytest.fixture(params=NAMESPACES)
def xp(request, monkeypatch):
    """The namespace (and device), with scikit-learn's array API dispatch on for the test."""
    name, _, device = request.param.partition("-")
    module = pytest.importorskip(name)
    if device == "cuda" and not module.cuda.is_available():
        pytest.skip("no CUDA device")
    require_array_api_dispatch(monkeypatch)
    with sklearn.config_context(array_api_dispatch=True):
        yield _Space(module, device or None)


def _asarray(xp, values, dtype=None):
    values = np.asarray(values)
    if xp.device is None:
        return xp.asarray(values, dtype=dtype)
    return xp.asarray(values, dtype=dtype, device=xp.device)


def _host(value) -> np.ndarray:
    return np.asarray(to_numpy(value))


def _namespace_name(value) -> str:
    return type(value).__module__.split(".")[0]


def _unit_digits(n_classes=2):
    X, y = load_digits(return_X_y=True)
    keep = y < n_classes
    X = X[keep]
    return X / np.linalg.norm(X, axis=1).max(), y[keep]


def _diabetes():
    return load_diabetes(return_X_y=True)


CASES = {
    "logistic": (DPLogisticRegression, dict(epsilon=2.0), lambda: _unit_digits(2)),
    "multinomial": (DPLogisticRegression, dict(epsilon=2.0, classes=list(range(4))),
                    lambda: _unit_digits(4)),
    "svc": (DPLinearSVC, dict(), lambda: _unit_digits(2)),
    "linear": (DPLinearRegression, dict(), _diabetes),
    "huber": (DPHuberRegressor, dict(), _diabetes),
    "lasso": (DPLasso, dict(delta=1e-5), _diabetes),
}


def _fit_both(xp, cls, params, X, y, dtype=None):
    """The NumPy fit and the same fit (same seed) on ``xp`` arrays."""
    Xn = X.astype(np.float32) if dtype == "float32" else X
    reference = cls(random_state=0, **params).fit(Xn, y)
    Xd = _asarray(xp, Xn)
    model = cls(random_state=0, **params).fit(Xd, _asarray(xp, y))
    return reference, model, Xd, Xn


@pytest.mark.parametrize("solver", BLOCKED)
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_blocked_solver_fits_device_arrays_as_numpy(xp, case, solver):
    """Each estimator x each solver that takes device arrays: the coefficients equal the
    NumPy fit's to 1e-10 (relative to their scale), the ledger and the bounds are the
    same, and the model and its predictions are in the input's namespace."""
    cls, params, data = CASES[case]
    X, y = data()
    params = {**params, "solver": solver}
    try:
        reference = cls(random_state=0, **params).fit(X, y)
    except (IncompatibleSolverError, BudgetError):
        pytest.skip(f"{solver} does not fit {case}")
    Xd = _asarray(xp, X)
    model = cls(random_state=0, **params).fit(Xd, _asarray(xp, y))
    scale = max(1.0, float(np.max(np.abs(reference.coef_))))
    assert np.max(np.abs(_host(model.coef_) - reference.coef_)) <= 1e-10 * scale
    assert np.max(np.abs(_host(model.intercept_) - np.asarray(reference.intercept_))) \
        <= 1e-10 * max(1.0, float(np.max(np.abs(reference.intercept_))))
    assert _namespace_name(model.coef_) == xp.__name__
    assert model.data_norm_ == reference.data_norm_
    assert model.privacy_spent_ == reference.privacy_spent_
    assert model.privacy_ledger_.spent() == reference.privacy_ledger_.spent()
    assert model.n_iter_ == reference.n_iter_
    prediction = model.predict(Xd)
    assert _namespace_name(prediction) == xp.__name__
    np.testing.assert_allclose(_host(prediction), reference.predict(X), rtol=1e-8,
                               atol=1e-8 * max(1.0, float(np.max(np.abs(y)))))


@pytest.mark.parametrize("case", ["logistic", "multinomial", "linear"])
def test_float32_rows_are_converted_block_by_block_as_on_the_host(xp, case):
    """float32 device rows give the NumPy float32 fit (float64 arithmetic on both)."""
    cls, params, data = CASES[case]
    X, y = data()
    dtype = xp.float32
    reference = cls(random_state=0, **params).fit(X.astype(np.float32), y)
    model = cls(random_state=0, **params).fit(_asarray(xp, X, dtype=dtype), _asarray(xp, y))
    np.testing.assert_allclose(_host(model.coef_), reference.coef_, rtol=1e-10, atol=1e-12)


def test_probabilities_and_scores_stay_on_the_device(xp):
    X, y = _unit_digits(4)
    reference = DPLogisticRegression(random_state=0, classes=list(range(4))).fit(X, y)
    model = DPLogisticRegression(random_state=0, classes=list(range(4))).fit(
        _asarray(xp, X), _asarray(xp, y))
    Xd = _asarray(xp, X)
    for method in ("predict_proba", "predict_log_proba", "decision_function"):
        out = getattr(model, method)(Xd)
        assert _namespace_name(out) == xp.__name__
        np.testing.assert_allclose(_host(out), getattr(reference, method)(X), rtol=1e-9,
                                   atol=1e-12)
    # Another namespace than the fit's is refused (scikit-learn's rule), naming both.
    for method in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(ValueError, match=rf"DPLogisticRegression.{method}\(\) must use "
                                             "the same namespace and device as fit"):
            getattr(model, method)(X)
    with pytest.raises(ValueError, match="fitted on NumPy"):
        reference.predict(Xd)
    # Without dispatch a model fitted on a device predicts host arrays.
    with sklearn.config_context(array_api_dispatch=False):
        np.testing.assert_array_equal(model.predict(X), reference.predict(X))


@pytest.mark.parametrize("solver", ROW_BASED)
def test_row_based_solvers_refuse_device_arrays_before_charging(xp, solver):
    """A solver that indexes rows refuses a device X with the capable solvers named; the
    accountant and the estimator are untouched."""
    X, y = _unit_digits(2)
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    model = DPLogisticRegression(solver=solver, accountant=acc)
    with pytest.raises(IncompatibleSolverError, match="kept on its device") as error:
        model.fit(_asarray(xp, X), _asarray(xp, y))
    assert "'gd'" in str(error.value)
    assert acc.spent() == (0.0, 0.0)
    assert not hasattr(model, "coef_")


def test_the_noise_drawn_on_a_device_fit_is_what_the_ledger_says(xp):
    """DP-GD on a device problem: T Gaussian draws of the planned sigma, whose pooled
    standardised values are N(0, 1) (KS; fails with probability 1e-4 under the null, fixed
    seed), and the ledger re-accounts within the budget."""
    rng = np.random.default_rng(3)
    n, d = 300, 40
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    Y = np.where(rng.random(n) < 0.5, 1.0, -1.0)[:, None]
    spec = ProblemSpec(n_samples=n, n_params=d, n_outputs=1, n_penalized=d,
                       row_norm_bound=1.0, loss=LogisticLoss(), constraint=Unconstrained(),
                       alpha=0.01)
    budget = Budget(1.0, 1e-5)
    host = NoisyGD(n_iter=25).solve(Problem.build(X, Y, spec, data_norm=1.0), budget,
                                    RecordingNoiseSource(np.random.default_rng(5)))
    problem = Problem.build(_asarray(xp, X), Y, spec, data_norm=1.0)
    assert problem.on_device
    noise = RecordingNoiseSource(np.random.default_rng(5))
    result = NoisyGD(n_iter=25).solve(problem, budget, noise)
    draws = [value for kind, value in noise.draws if kind == "gaussian"]
    assert len(draws) == result.plan.n_iter == 25
    assert result.plan.sigma == host.plan.sigma
    z = np.concatenate([draw.ravel() for draw in draws]) / result.plan.sigma
    assert stats.kstest(z, "norm").pvalue > 1e-4
    assert result.ledger.spent().within(budget)
    assert result.ledger.spent() == host.ledger.spent()
    np.testing.assert_allclose(result.coef, host.coef, rtol=1e-12, atol=1e-14)


def test_dp_scaler_and_pipeline_on_device(xp):
    """DPStandardScaler's statistics are computed on the device and equal the NumPy fit's;
    a pipeline of the scaler and a classifier stays in the namespace end to end."""
    X, y = load_digits(return_X_y=True)
    X, y = X[y < 2], y[y < 2]

    def pipeline():
        return make_pipeline(DPStandardScaler(epsilon=0.5, random_state=0),
                             DPLogisticRegression(epsilon=1.0, random_state=1))

    reference = pipeline().fit(X, y)
    model = pipeline().fit(_asarray(xp, X), _asarray(xp, y))
    np.testing.assert_allclose(_host(model[0].mean_), reference[0].mean_, rtol=1e-12)
    np.testing.assert_allclose(_host(model[0].scale_), reference[0].scale_, rtol=1e-12)
    np.testing.assert_allclose(_host(model[-1].coef_), reference[-1].coef_, rtol=1e-9,
                               atol=1e-12)
    Xd = _asarray(xp, X)
    assert _namespace_name(model.predict(Xd)) == xp.__name__
    back = model[0].inverse_transform(model[0].transform(Xd))
    np.testing.assert_allclose(_host(back), X, atol=1e-9)


def test_bad_device_input_gets_scikit_learn_errors(xp):
    X, y = _unit_digits(2)
    X = X.copy()
    X[3, 4] = np.nan
    for params in ({}, {"data_norm": 1.0}):  # read by the bounds, or first at the build
        model = DPLogisticRegression(**params)
        with pytest.raises(ValueError, match="Input X contains NaN"):
            model.fit(_asarray(xp, X), _asarray(xp, y))
        assert not hasattr(model, "coef_")
    with pytest.raises(ValueError, match="2D array"):
        DPLogisticRegression().fit(_asarray(xp, X[:, 0]), _asarray(xp, y))
    counts = _asarray(xp, np.round(np.nan_to_num(X) * 16).astype(np.int64))
    model = DPLogisticRegression(random_state=0).fit(counts, _asarray(xp, y))
    assert model.coef_.dtype == xp.float64


def test_device_models_pickle_and_clone(xp):
    X, y = _unit_digits(2)
    model = DPLogisticRegression(random_state=0).fit(_asarray(xp, X), _asarray(xp, y))
    again = pickle.loads(pickle.dumps(model))
    Xd = _asarray(xp, X)
    np.testing.assert_array_equal(_host(again.predict(Xd)), _host(model.predict(Xd)))
    fresh = clone(model)
    assert not hasattr(fresh, "coef_") and fresh.get_params() == model.get_params()


def test_numpy_input_is_unchanged_under_dispatch(xp):
    """With dispatch on, NumPy arrays take the host path (bit-identical fits)."""
    X, y = _unit_digits(2)
    with sklearn.config_context(array_api_dispatch=False):
        reference = DPLogisticRegression(random_state=0).fit(X, y)
    model = DPLogisticRegression(random_state=0).fit(X, y)
    assert isinstance(model.coef_, np.ndarray)
    np.testing.assert_array_equal(model.coef_, reference.coef_)


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_device_clip_bounds_gradients_of_tiny_derivatives(xp, n_outputs):
    """A huge row times a derivative below 1e-154 (whose square underflows) is still
    clipped to the clip norm on the device, as on the host: the norm of each per-example
    gradient is computed scaled, never as a plain sum of squares (an independent review's
    reproducer, which gave 1.9e6 times the clip before the fix)."""
    X = np.array([[1e100, 0.0]])
    if n_outputs == 1:
        Y, loss = np.ones((1, 1)), LogisticLoss()
        W = np.array([[4e-98], [0.0]])  # score 400: derivative ~1.9e-174
    else:
        Y, loss = np.eye(3)[[0]], MultinomialLogisticLoss(3)
        W = np.array([[4e-98, 0.0, 0.0], [0.0, 0.0, 0.0]])
    spec = ProblemSpec(n_samples=1, n_params=2, n_outputs=n_outputs, n_penalized=2,
                       row_norm_bound=1e100, loss=loss, constraint=Unconstrained(), alpha=0.0)
    clip = 1e-80
    host = Problem.build(X, Y, spec, data_norm=1e100).clipped_gradient(W, clip)
    device = Problem.build(_asarray(xp, X), Y, spec, data_norm=1e100).clipped_gradient(W, clip)
    assert np.linalg.norm(device) <= clip
    np.testing.assert_allclose(device, host, rtol=1e-9)


def test_a_finite_row_whose_norm_overflows_is_scaled_as_on_the_host(xp):
    X, y = _unit_digits(2)
    X = X.copy()
    X[0] = 1e308  # every entry finite, the row's norm is not
    reference = DPLogisticRegression(data_norm=1.0, random_state=0).fit(X, y)
    model = DPLogisticRegression(data_norm=1.0, random_state=0).fit(_asarray(xp, X),
                                                                    _asarray(xp, y))
    np.testing.assert_allclose(_host(model.coef_), reference.coef_, rtol=1e-10, atol=1e-14)


def test_device_predictions_and_transforms_check_their_input(xp):
    X, y = _unit_digits(2)
    model = DPLogisticRegression(random_state=0).fit(_asarray(xp, X), _asarray(xp, y))
    bad = X.copy()
    bad[2, 3] = np.inf
    for method in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(ValueError, match="Input X contains infinity"):
            getattr(model, method)(_asarray(xp, bad))
    with pytest.raises(ValueError, match="2D array"):
        model.predict(_asarray(xp, X[:, 0]))
    with pytest.raises(ValueError, match="X has 10 features, but DPLogisticRegression"):
        model.predict(_asarray(xp, X[:, :10]))
    scaler = DPStandardScaler(random_state=0).fit(_asarray(xp, X))
    for method in ("transform", "inverse_transform"):
        with pytest.raises(ValueError, match="X has 10 features, but DPStandardScaler"):
            getattr(scaler, method)(_asarray(xp, X[:, :10]))


def test_half_precision_rows_are_fitted_in_float64(xp):
    if not hasattr(xp, "float16"):
        pytest.skip(f"{xp.__name__} has no float16")
    X, y = _unit_digits(2)
    reference = DPLogisticRegression(random_state=0).fit(X.astype(np.float16), y)
    model = DPLogisticRegression(random_state=0).fit(_asarray(xp, X, dtype=xp.float16),
                                                     _asarray(xp, y))
    np.testing.assert_allclose(_host(model.coef_), reference.coef_, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("params", [dict(n_components=10),
                                    dict(n_components=5, whiten=True, data_norm=60.0),
                                    dict(n_components=0.8, center=False)])
def test_dppca_releases_on_the_device_what_it_releases_on_the_host(xp, params):
    """DPPCA's clipped sum and Gram matrix are computed on the device: the same released
    components, variances and ledger as the NumPy fit; transform and inverse_transform
    stay in the namespace; a projection pipeline runs end to end."""
    X, y = load_digits(return_X_y=True)
    reference = DPPCA(random_state=0, **params).fit(X)
    model = DPPCA(random_state=0, **params).fit(_asarray(xp, X))
    assert model.n_components_ == reference.n_components_
    assert model.privacy_spent_ == reference.privacy_spent_
    assert _namespace_name(model.components_) == xp.__name__
    np.testing.assert_allclose(_host(model.components_), reference.components_, atol=1e-10)
    np.testing.assert_allclose(_host(model.mean_), reference.mean_, atol=1e-12)
    Z = model.transform(_asarray(xp, X))
    assert _namespace_name(Z) == xp.__name__
    np.testing.assert_allclose(_host(Z), reference.transform(X), atol=1e-9)
    np.testing.assert_allclose(_host(model.inverse_transform(Z)),
                               reference.inverse_transform(reference.transform(X)), atol=1e-8)
    pipe = make_pipeline(DPPCA(10, random_state=0),
                         DPLogisticRegression(classes=list(range(10)), fit_intercept=False,
                                              random_state=1))
    labels = pipe.fit(_asarray(xp, X), _asarray(xp, y)).predict(_asarray(xp, X))
    assert _namespace_name(labels) == xp.__name__


def test_public_maps_run_on_the_device_and_naive_bayes_refuses_clearly(xp):
    """PublicBoundsScaler and RowNormClipper map device rows where they are (equal to the
    host maps); the digits pipeline of the gallery runs end to end on the device;
    DPGaussianNB refuses device input before anything is charged."""
    X, y = load_digits(return_X_y=True)
    Xd = _asarray(xp, X)
    for step in (PublicBoundsScaler((0.0, 16.0)), RowNormClipper(20.0),
                 RowNormClipper(30.0, norm=1.0)):
        out = clone(step).fit(Xd).transform(Xd)
        assert _namespace_name(out) == xp.__name__
        np.testing.assert_allclose(_host(out), clone(step).fit(X).transform(X), atol=1e-12)
    pipe = make_pipeline(PublicBoundsScaler((0.0, 16.0)), DPPCA(12, random_state=0),
                         DPLogisticRegression(classes=list(range(10)), fit_intercept=False,
                                              random_state=1))
    reference = clone(pipe).fit(X, y)
    model = pipe.fit(Xd, _asarray(xp, y))
    np.testing.assert_allclose(_host(model[-1].coef_), reference[-1].coef_, atol=1e-9)
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    with pytest.raises(TypeError, match="DPGaussianNB takes NumPy arrays"):
        DPGaussianNB(accountant=acc).fit(Xd, _asarray(xp, y))
    assert acc.spent() == (0.0, 0.0)


def test_private_search_fits_its_candidates_on_the_device(xp):
    """PrivateRandomizedSearch on device input: its candidates fit on the device, the
    same draws, choice, scores and total as on the host for a fixed seed."""
    X, y = _unit_digits(2)

    def search(accountant):
        return PrivateRandomizedSearch(
            DPLogisticRegression(classes=[0, 1]),
            {"alpha": [1e-3, 1e-2, 1e-1], "data_norm": [0.5, 1.0]}, epsilon=1.0,
            accountant=accountant, random_state=3)

    host_acc, device_acc = (BudgetAccountant(epsilon=10.0, delta=1e-3) for _ in range(2))
    reference = search(host_acc).fit(X, y)
    model = search(device_acc).fit(_asarray(xp, X), _asarray(xp, y))
    assert model.best_params_ == reference.best_params_
    assert model.best_score_ == reference.best_score_
    assert device_acc.spent() == host_acc.spent()
    np.testing.assert_allclose(_host(model.best_estimator_.coef_),
                               reference.best_estimator_.coef_, rtol=1e-10, atol=1e-14)
    assert _namespace_name(model.predict(_asarray(xp, X))) == xp.__name__


def test_a_loss_without_a_device_form_runs_through_the_host(xp):
    """A GLM loss that defines only the NumPy derivative and value still fits device rows:
    the default device forms go through the host and give the same passes."""

    class HostOnlyLogistic(LogisticLoss):
        device_derivative = GLMLoss.device_derivative
        device_value = GLMLoss.device_value

    rng = np.random.default_rng(7)
    X = rng.normal(size=(120, 6)) / math.sqrt(6)
    Y = np.where(rng.random(120) < 0.5, 1.0, -1.0)[:, None]
    spec = ProblemSpec(n_samples=120, n_params=6, n_outputs=1, n_penalized=6,
                       row_norm_bound=1.0, loss=HostOnlyLogistic(),
                       constraint=Unconstrained(), alpha=0.01)
    W = rng.normal(size=(6, 1))
    host = Problem.build(X, Y, spec, data_norm=1.0)
    device = Problem.build(_asarray(xp, X), Y, spec, data_norm=1.0)
    np.testing.assert_allclose(device.clipped_gradient(W, 0.5), host.clipped_gradient(W, 0.5),
                               rtol=1e-12)
    value, gradient = device.loss_and_gradient_sums(W)
    reference = host.loss_and_gradient_sums(W)
    assert value == pytest.approx(reference[0], rel=1e-12)
    np.testing.assert_allclose(gradient, reference[1], rtol=1e-12)


def test_a_private_grid_search_on_device_charges_what_ran(xp, tmp_path):
    """GridSearchCV with private scores over device arrays: the accountant reads the same
    total and entries as over NumPy arrays, with n_jobs=1 and with two process workers
    sharing a file-backed accountant (no refit: its cost depends on the noisy winner)."""
    from sklearn.model_selection import GridSearchCV, KFold

    from skdp.metrics import make_private_scorer

    X, y = _unit_digits(2)

    def spent(Xa, ya, n_jobs, path=None):
        acc = BudgetAccountant(50.0, 1e-3, path=path)
        search = GridSearchCV(
            DPLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=acc),
            {"epsilon": [0.5, 1.0]}, cv=KFold(3), n_jobs=n_jobs, refit=False,
            scoring=make_private_scorer("accuracy", epsilon=0.1, accountant=acc))
        search.fit(Xa, ya)
        return acc.spent(), len(acc.entries)

    reference = spent(X, y, 1)
    assert spent(_asarray(xp, X), _asarray(xp, y), 1) == reference
    # Process workers inherit SCIPY_ARRAY_API (scikit-learn turns dispatch on in them) only
    # when they start after it is set: fresh workers, shut down again after the check.
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)
    try:
        assert spent(_asarray(xp, X), _asarray(xp, y), 2,
                     str(tmp_path / "acc.json")) == reference
    finally:
        get_reusable_executor().shutdown(wait=True)
