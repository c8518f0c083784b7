"""scikit-learn's own estimator checks, for every registered solver."""

from __future__ import annotations

import pytest
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
from skdp.model_selection import PrivateRandomizedSearch
from skdp.preprocessing import DPStandardScaler, PublicBoundsScaler, RowNormClipper

# Per-solver constructor overrides that keep the checks fast (a solver object of the
# registered class with a short schedule). Every key of SOLVERS must appear here, so a new
# solver cannot silently skip the checks (see test_every_registered_solver_is_checked).
#
# The SVRG batch size exceeds every dataset of the checks (so b = n): the RDP calibration
# of a batch sampled without replacement from n records costs ~3 s for each new n, and the
# checks use dozens of sizes (batch_size=8 makes this module take over 3 minutes). The
# checks test the estimator API; estimator fits with genuinely subsampled SVRG batches
# are in test_estimator_api.py, and the subsampled accounting belongs to the solver tests.
_BIG_BATCH = 100_000
SOLVER_OVERRIDES = {
    "gd": {},
    "svrg": {"solver": DPSVRG(n_epochs=2, inner_steps=2, batch_size=_BIG_BATCH)},
    "svrg++": {"solver": DPSVRGPlusPlus(n_epochs=2, batch_size=_BIG_BATCH)},
    "output_perturbation": {"solver": "output_perturbation"},
    "accelerated_mirror_descent": {"solver": DPAccMD(n_iter=20), "constraint": "l1",
                                   "radius": 5.0},
    "mirror_descent": {"solver": NoisyMirrorDescent(n_iter=20, batch_size=_BIG_BATCH),
                       "constraint": "l1", "radius": 5.0},
    "localized_mirror_descent": {
        "solver": LocalizedMirrorDescent(n_phases=2, batch_size=_BIG_BATCH, max_iter=5),
        "constraint": "l1", "radius": 5.0},
    # One pass over an l1 ball; a free intercept would make the vertex set unbounded.
    "frank_wolfe": {"solver": "frank_wolfe", "constraint": "l1", "radius": 5.0,
                    "fit_intercept": False, "delta": 0.0},
    "objective_perturbation": {"solver": "objective_perturbation"},
    "approx_objective_perturbation": {"solver": "approx_objective_perturbation",
                                      "constraint": "l2", "radius": 5.0},
    "phased_sgd": {"solver": "phased_sgd"},
    "regularized_mirror_descent": {"solver": "regularized_mirror_descent"},
    "truncated_mirror_descent": {"solver": "truncated_mirror_descent"},
    "shuffled_truncated_mirror_descent": {"solver": "shuffled_truncated_mirror_descent"},
    "sufficient_statistics": {"solver": "sufficient_statistics"},
}
# The other public estimators, with their defaults (private bounds), with the previous
# defaults (declared bounds, pure DP output perturbation), and with other solvers.
OTHER_ESTIMATORS = [
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
    PrivateRandomizedSearch(DPLogisticRegression(data_norm=1.0), {"alpha": [0.1, 1.0]},
                            n_candidates_mean=2),
    PrivateRandomizedSearch(DPLinearRegression(data_norm=1.0, y_bound=5.0),
                            {"alpha": [0.1, 1.0]}, n_candidates_mean=2),
]


def _estimators():
    # Build the list from the registry: an unknown solver name still gets an estimator
    # (with its default parameters) so that the coverage test below is the one to fail.
    return [
        ESTIMATOR_FOR.get(name, DPLogisticRegression)(
            **SOLVER_OVERRIDES.get(name, {"solver": name}))
        for name in SOLVERS
    ]


# Solvers of one loss are checked on the estimator that has it.
ESTIMATOR_FOR = {"sufficient_statistics": DPLinearRegression}


ESTIMATORS = _estimators()


def _solver_name(estimator) -> str:
    solver = estimator.solver
    return solver if isinstance(solver, str) else solver.name


def test_every_registered_solver_is_checked():
    assert set(SOLVER_OVERRIDES) == set(SOLVERS)
    assert sorted(_solver_name(est) for est in ESTIMATORS) == sorted(SOLVERS)
    for name, overrides in SOLVER_OVERRIDES.items():
        solver = overrides.get("solver", name)
        if not isinstance(solver, str):
            # The override must be an instance of the registered class, not a subclass
            # or another solver that happens to share a name.
            assert type(solver) is SOLVERS[name]


def test_default_estimator_is_in_the_checks():
    # The default-parameter estimator ("gd", no overrides) is checked as is.
    assert SOLVER_OVERRIDES["gd"] == {}
    assert DPLogisticRegression().get_params() in [est.get_params() for est in ESTIMATORS]


@parametrize_with_checks(ESTIMATORS + OTHER_ESTIMATORS, expected_failed_checks=lambda est: {})
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_registry_names_are_solver_names(name):
    assert SOLVERS[name].name == name
