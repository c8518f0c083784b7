"""scikit-learn's own estimator checks, for every registered solver."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import is_classifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import (
    DPSVRG,
    SOLVERS,
    DPAccMD,
    DPHuberRegressor,
    DPLasso,
    DPLinearRegression,
    DPLinearSVC,
    DPLogisticRegression,
    DPSVRGPlusPlus,
    LocalizedMirrorDescent,
    NoisyMirrorDescent,
)
from skdp.decomposition import DPPCA
from skdp.model_selection import PrivateRandomizedSearch
from skdp.naive_bayes import DPGaussianNB
from skdp.preprocessing import DPStandardScaler, PublicBoundsScaler, RowNormClipper

# Each registered solver is checked on an estimator configuration derived from its
# declared capabilities (_config below): the first public estimator offering one of its
# losses, a bounded constraint when it needs one, no free intercept when it refuses one.
# Optional fast solver objects keep the checks short (the registered class with a short
# schedule).
#
# The SVRG batch size exceeds every dataset of the checks (so b = n): the RDP calibration
# of a batch sampled without replacement from n records costs ~3 s for each new n, and the
# checks use dozens of sizes (batch_size=8 makes this module take over 3 minutes). The
# checks test the estimator API; estimator fits with genuinely subsampled SVRG batches
# are in test_estimator_api.py, and the subsampled accounting belongs to the solver tests.
_BIG_BATCH = 100_000
FAST_SOLVERS = {
    "svrg": DPSVRG(n_epochs=2, inner_steps=2, batch_size=_BIG_BATCH),
    "svrg++": DPSVRGPlusPlus(n_epochs=2, batch_size=_BIG_BATCH),
    "accelerated_mirror_descent": DPAccMD(n_iter=20),
    "mirror_descent": NoisyMirrorDescent(n_iter=20, batch_size=_BIG_BATCH),
    "localized_mirror_descent": LocalizedMirrorDescent(n_phases=2, batch_size=_BIG_BATCH,
                                                       max_iter=5),
}
# Settings no declaration implies: the default step sizes of the mirror-descent solvers
# need a bounded set (a parameter-dependent rule of their own checks); the l1 geometry is
# where they differ from DP-GD; Frank-Wolfe's pure-DP default; approximate objective
# perturbation's projection.
EXTRA = {
    "accelerated_mirror_descent": {"constraint": "l1", "radius": 5.0},
    "mirror_descent": {"constraint": "l1", "radius": 5.0},
    "localized_mirror_descent": {"constraint": "l1", "radius": 5.0},
    "frank_wolfe": {"delta": 0.0},
    "approx_objective_perturbation": {"constraint": "l2", "radius": 5.0},
}
PUBLIC = (DPLogisticRegression, DPLinearRegression, DPHuberRegressor, DPLinearSVC, DPLasso)


def _config(name):
    """An estimator configuration for solver ``name``, from its declaration."""
    caps = SOLVERS[name].capabilities
    cls = next(c for c in PUBLIC if set(c._solver_losses) & set(caps.losses))
    params = {"solver": FAST_SOLVERS.get(name, name)}
    if caps.bounded_constraint or "none" not in caps.constraints:
        kind = next(k for k in ("l2", "l1", "lp") if k in caps.constraints)
        params.update(constraint=kind, radius=5.0)
    if caps.intercept == "constrained":
        params["fit_intercept"] = False
    params.update(EXTRA.get(name, {}))
    return cls(**params)


# The other public estimators, with their defaults (private bounds), with the previous
# defaults (declared bounds, pure DP output perturbation), and with other solvers.
OTHER_ESTIMATORS = [
    DPLogisticRegression(),  # solver="auto": DP-GD on the checks' sizes
    # At this epsilon "auto" runs DP Newton on the checks' sizes, then the threshold.
    DPLogisticRegression(epsilon=1e4),
    DPHuberRegressor(),
    DPLasso(),
    DPLasso(solver="mirror_descent", delta=1e-5, fit_intercept=False),
    DPLinearRegression(),
    DPLinearRegression(solver="gd", delta=1e-5, constraint="l2", radius=5.0,
                       fit_intercept=False),
    DPLasso(solver="sufficient_statistics"),
    DPLinearSVC(),
    DPLinearSVC(loss="hinge", solver="output_perturbation", delta=0.0),
    DPLinearSVC(loss="smoothed_hinge", solver="gd", delta=1e-5),
    DPLogisticRegression(solver="output_perturbation", delta=0.0, tilt=0.5),
    DPLogisticRegression(solver="objective_perturbation", delta=0.0),  # pure K-norm
    DPLogisticRegression(solver="output_perturbation", adversarial_radius=0.1,
                         adversarial_norm=float("inf")),
    DPLogisticRegression(data_norm=1.0, classes=None),  # a declared public bound
    DPLinearRegression(data_norm=1.0, y_bound=1.0),
    # Transformers and the private search.
    DPStandardScaler(),
    DPStandardScaler(delta=0.0, bounds=(-5.0, 5.0)),
    PublicBoundsScaler(),
    RowNormClipper(),
    DPPCA(),
    DPPCA(2, delta=0.0, data_norm=5.0, center=False, whiten=True),
    DPGaussianNB(),
    DPGaussianNB(delta=0.0, bounds=(-5.0, 5.0)),
    PrivateRandomizedSearch(DPLogisticRegression(data_norm=1.0), {"alpha": [0.1, 1.0]},
                            n_candidates_mean=2),
    PrivateRandomizedSearch(DPLinearRegression(data_norm=1.0, y_bound=5.0),
                            {"alpha": [0.1, 1.0]}, n_candidates_mean=2),
]


ESTIMATORS = [_config(name) for name in SOLVERS]


def _solver_name(estimator) -> str:
    solver = estimator.solver
    return solver if isinstance(solver, str) else solver.name


def test_every_registered_solver_is_checked():
    assert sorted(_solver_name(est) for est in ESTIMATORS) == sorted(SOLVERS)
    for name, solver in FAST_SOLVERS.items():
        # A fast setting must be an instance of the registered class, not a subclass or
        # another solver that happens to share a name.
        assert type(solver) is SOLVERS[name]


def test_default_estimator_is_in_the_checks():
    # The default-parameter estimator (solver="auto", no overrides) is checked as is.
    assert DPLogisticRegression().get_params() in [est.get_params()
                                                   for est in ESTIMATORS + OTHER_ESTIMATORS]


@parametrize_with_checks(ESTIMATORS + OTHER_ESTIMATORS, expected_failed_checks=lambda est: {})
def test_sklearn_compatible_estimator(estimator, check, monkeypatch):
    # scikit-learn runs its array API checks (estimators whose solver takes device arrays,
    # docs/scaling_out.md) only with SCIPY_ARRAY_API=1; skdp never hands a device array to
    # SciPy, so the variable is set for the check alone.
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    check(estimator)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_registry_names_are_solver_names(name):
    assert SOLVERS[name].name == name


@pytest.mark.parametrize("estimator", ESTIMATORS + OTHER_ESTIMATORS,
                         ids=lambda est: type(est).__name__)
def test_every_private_estimator_fits_at_epsilon_inf_with_its_settings(estimator):
    """The non-private mode of every configuration checked above (the DP scaler's
    default "auto" bounds failed there once): it fits, releases no noise and says so
    in its spend; the private search, whose total must be finite, says which setting."""
    from sklearn.base import clone

    from skdp import PrivacyLeakWarning

    if "epsilon" not in estimator.get_params():
        pytest.skip("a public map: no budget")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4)) * [3.0, 1.0, 0.5, 2.0] + [1.0, 0.0, -2.0, 0.5]
    y = (X[:, 0] + X[:, 1] > 1.0).astype(int)
    if not is_classifier(estimator) and hasattr(estimator, "predict"):
        y = X @ [0.5, -1.0, 0.2, 0.0] + 0.1 * rng.normal(size=80)
    est = clone(estimator).set_params(epsilon=np.inf)
    if isinstance(est, PrivateRandomizedSearch):
        # A total budget for a search over candidates: finite by its constraints (a
        # non-private search is scikit-learn's), refused with the setting named.
        from sklearn.utils._param_validation import InvalidParameterError

        with pytest.raises(InvalidParameterError, match="'epsilon' parameter"):
            est.fit(X, y)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        est.fit(X, y)
    spent = getattr(est, "privacy_spent_", None)
    if spent is not None:
        assert spent.epsilon == np.inf
