"""The benchmark configuration: profiles x scenarios x solvers, and the declared targets.

Solvers are not listed here: every solver of :data:`skdp.solvers.SOLVERS` runs on every
scenario its :class:`~skdp.solvers._capabilities.Capabilities` declaration accepts (the
runner tries the scenario's constraint options in order and records why a solver is
skipped).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sklearn.linear_model import Lasso, LinearRegression, LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from benchmarks import datasets
from skdp.linear_model import (
    DPHuberRegressor,
    DPLasso,
    DPLinearRegression,
    DPLinearSVC,
    DPLogisticRegression,
)
from skdp.preprocessing import DPStandardScaler

Split = tuple[object, np.ndarray, object, np.ndarray]


def _split(X, y, n_test: int) -> Split:
    """The last ``n_test`` rows are the test set (every generator is i.i.d. in the rows)."""
    return X[:-n_test], y[:-n_test], X[-n_test:], y[-n_test:]


def _bundled(name: str) -> Callable[[int, int], Split]:
    def load(n: int, d: int, seed: int) -> Split:
        from sklearn.model_selection import train_test_split

        X, y = datasets.load_bundled(name)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=seed,
                                              stratify=y if name == "breast_cancer" else None)
        return Xtr, ytr, Xte, yte
    return load


def _regression_options(radius: float) -> tuple:
    """Unconstrained, then public balls (the squared loss's gradients are bounded only
    over a ball without a free intercept: solvers that do not clip need that)."""
    return (("none", {}), ("l2", dict(constraint="l2", radius=radius)),
            ("l2", dict(constraint="l2", radius=radius, fit_intercept=False)),
            ("l1", dict(constraint="l1", radius=radius, fit_intercept=False)))


@dataclass(frozen=True)
class Scenario:
    """One benchmark problem.

    Attributes
    ----------
    name, title : str
        Key (file and table names) and one-line description.
    load : callable (n, d, seed) -> (X_train, y_train, X_test, y_test)
        The data (``n`` rows from :attr:`sizes`, ``d`` the profile's ``sparse_d``; each
        scenario uses what it needs).
    estimator : type
        The skdp estimator fitted with ``solver=<name>``.
    params : dict
        Its parameters (``epsilon`` and ``random_state`` are added per fit).
    loss : {"logistic", "squared"}
        Loss of the reference objective ``mean loss + alpha/2 ||w||^2`` (free intercept).
    constraints : tuple of (str, dict)
        Constraint options ``(kind, estimator parameters)``, tried in order for each
        solver (the first its declaration and the estimator's check accept is used).
    sklearn : callable (n, d) -> estimator
        The non-private scikit-learn baseline.
    sizes : dict
        Profile name -> number of training rows (and ``"n_test"``).
    """

    name: str
    title: str
    load: Callable[[int, int, int], Split]
    estimator: type
    params: dict
    loss: str
    constraints: tuple
    sklearn: Callable[[int, int], object]
    sizes: dict = field(default_factory=dict)

    @property
    def alpha(self) -> float:
        return float(self.params.get("alpha", 0.0))


COVERTYPE = Scenario(
    "covertype", "Covertype-shaped logistic regression (Wang, Ye & Xu 2017), ||x|| <= 1",
    lambda n, d, seed: _split(*datasets.make_covertype_like(n + n // 4, seed), n // 4),
    # threshold_fraction=0: the excess risk is the solver's, on the objective its options
    # define (the private threshold would replace the intercept: docs/algorithms/threshold.md).
    DPLogisticRegression, dict(delta=1e-3, alpha=1e-2, data_norm=1.0, threshold_fraction=0.0),
    "logistic",
    (("none", {}), ("l2", dict(constraint="l2", radius=20.0)),
     ("l1", dict(constraint="l1", radius=20.0))),
    lambda n, d: LogisticRegression(C=1.0 / (1e-2 * n)),
    dict(quick=200_000, full=200_000))

BREAST_CANCER = Scenario(
    "breast_cancer", "Breast cancer, public feature ranges, estimator defaults",
    _bundled("breast_cancer"), DPLogisticRegression, dict(alpha=1e-2), "logistic",
    (("none", {}), ("l2", dict(constraint="l2", radius=20.0)),
     ("l1", dict(constraint="l1", radius=20.0))),
    lambda n, d: LogisticRegression(C=1.0 / (1e-2 * n)))

DIABETES = Scenario(
    "diabetes", "Diabetes (raw), public feature and target ranges, estimator defaults",
    _bundled("diabetes"), DPLinearRegression, dict(alpha=1e-2), "squared",
    _regression_options(5.0),
    lambda n, d: Ridge(alpha=1e-2 * n))

SPARSE = Scenario(
    "sparse", "Sparse high-dimensional regression (CSR, 1% dense), l1 ball of radius 1",
    lambda n, d, seed: _split(*datasets.make_sparse_regression(n + 2000, d, seed), 2000),
    DPLinearRegression,
    dict(alpha=0.0, fit_intercept=False, data_norm=1.0, y_bound=1.5),
    "squared", (("l1", dict(constraint="l1", radius=1.0)),),
    # Non-private, penalised: the theory value sigma sqrt(2 ln d / n) of the penalty.
    lambda n, d: Lasso(alpha=0.1 * np.sqrt(2 * np.log(d) / n)),
    dict(quick=5_000, full=10_000))

HEAVY_TAILS = Scenario(
    "heavy_tails", "Student-t(2.5) features and noise, d = 50, estimator defaults",
    lambda n, d, seed: _split(*datasets.make_student_t(n + 5000, 50, seed), 5000),
    DPLinearRegression, dict(alpha=1e-2), "squared",
    _regression_options(10.0),
    lambda n, d: Ridge(alpha=1e-2 * n), dict(quick=20_000, full=20_000))

SCENARIOS = {s.name: s for s in (COVERTYPE, BREAST_CANCER, DIABETES, SPARSE, HEAVY_TAILS)}
#: Scenarios large enough for the time and memory targets (the bundled data sets have a
#: few hundred rows: fixed costs dominate their ratios, and their memory is not traced).
MEASURED = ("covertype", "sparse", "heavy_tails")
#: Scenarios whose time ratios are targets: at the targets' epsilon each solver fit is
#: timed next to a scikit-learn fit, PAIRED_REPEATS times, and its ratio is the median
#: of the pairs' ratios (the machine's load drifts over a run; a pair shares it).
PAIRED = ("covertype",)
PAIRED_REPEATS = 3



#: The parts of a run, in order (``--part`` runs some and keeps the others' last results).
PARTS = ("scenarios", "scaling", "rates", "float32", "defaults", "tails", "selection",
         "pipelines", "intervals", "default_logistic", "probe", "cold", "out_of_core", "floors")


@dataclass(frozen=True)
class Profile:
    """How much of everything to run."""

    name: str
    epsilons: tuple[float, ...]
    seeds: tuple[int, ...]
    repeats: int  # timed fits per cell (fewer when one fit takes over a second)
    sparse_d: int  # features of the sparse scenario
    scaling_n: tuple[int, ...]  # covertype-shaped rows
    scaling_d: tuple[int, ...]  # sparse features (n = SCALING_D_ROWS)
    rates_d: tuple[int, ...]
    rates_n: int
    defaults_seeds: int  # 70/30 splits of the defaults workflows (issue 19)
    out_of_core_n: int  # rows of the memory-mapped file (50 float64 features)
    skipped: tuple[str, ...] = ()  # parts run only when named with --part


PROFILES = {
    "quick": Profile("quick", (1.0,), (0,), 3, 10_000,
                     (10_000, 30_000, 100_000, 300_000, 1_000_000),
                     (10, 100, 1_000, 10_000), (100, 1_000), 5_000, 7, 500_000,
                     # The floors (about 90 s) would take quick past its 5 minutes.
                     skipped=("floors",)),
    "full": Profile("full", (0.2, 0.5, 1.0), (0, 1, 2, 3, 4), 5, 100_000,
                    (10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000),
                    (10, 100, 1_000, 10_000, 100_000), (100, 1_000, 10_000), 20_000, 21,
                    5_000_000),
}
SCALING_D_ROWS = 5_000
#: Solvers of the scaling curves and the gradient complexity their papers claim, as the
#: log-log slope of fit time against n ("passes": n times the fitted number of passes).
SCALING_SOLVERS = {
    "frank_wolfe": ("O(n) gradients (Asi et al. 2021)", 1.0),
    "gd": ("n per pass x n_iter_ passes", "passes"),
    "phased_sgd": ("O(n) gradients, one pass (Feldman et al. 2020)", 1.0),
}
SCALING_D_SOLVERS = ("frank_wolfe", "gd")
#: l_p rates (Su, Zhao & Wang): p -> solver; claimed d-exponent of the privacy term.
RATES = {1.25: ("regularized_mirror_descent", 0.2), 1.5: ("regularized_mirror_descent", 0.2),
         2.0: ("phased_sgd", 0.5), 4.0: ("phased_sgd", 1.0)}
RATES_EPSILON, RATES_DELTA = 1.0, 1e-5

#: Cold-start fits: rows, and the scenarios tried in order for each solver.
COLD_ROWS = 500
COLD_SCENARIOS = ("covertype", "diabetes")


@dataclass(frozen=True)
class Target:
    """A declared target of the threshold check (issue 21)."""

    name: str
    bound: float
    kind: str  # "max": value <= bound; "abs": |value - centre| <= bound
    part: str  # the part of a run (PARTS) that measures it
    centre: float = 0.0


TARGETS = (
    Target("gd excess risk on covertype (epsilon = 1)", 1e-5, "max", "scenarios"),
    Target("gd fit time / sklearn on covertype", 3.0, "max", "scenarios"),
    Target("svrg fit time / sklearn on covertype", 5.0, "max", "scenarios"),
    Target("svrg++ fit time / sklearn on covertype", 5.0, "max", "scenarios"),
    Target("every solver's default fit time / sklearn on covertype (worst)", 10.0, "max",
           "scenarios"),
    Target("500-row cold fit, seconds (worst solver)", 0.2, "max", "cold"),
    Target("peak extra memory / dense X (worst solver)", 0.5, "max", "scenarios"),
    Target("peak extra memory / dense size, CSR input (worst)", 0.5, "max", "scenarios"),
    Target("peak extra memory / float32 X (worst solver)", 1.0, "max", "float32"),
    Target("frank_wolfe time-vs-n slope", 0.15, "abs", "scaling", 1.0),
    Target("memory-mapped default fit: peak traced allocations / matrix", 0.1, "max",
           "out_of_core"),
    Target("2-worker LocalCluster fit of the same file: relative coefficient difference",
           1e-10, "max", "out_of_core"),
)
#: Features and dask chunk rows of the out-of-core part (issue 21: a 5e6 x 50 float64 file
#: in the full profile).
OUT_OF_CORE_D = 50
OUT_OF_CORE_CHUNK = 250_000


# Defaults on raw bundled data (issue 19) ------------------------------------------------

@dataclass(frozen=True)
class Workflow:
    """A user's workflow on a raw bundled data set: every parameter at its default except
    the total ``epsilon`` (split as stated in ``name``).

    ``make(epsilon, seed)`` builds the estimator or pipeline (``None`` marks a baseline
    whose score is computed by the runner; the private steps of a pipeline get distinct
    seeds); ``targets`` maps an epsilon to the declared median score.
    """

    name: str
    data: str  # "breast_cancer" (raw features, accuracy) or "diabetes" (raw target, R^2)
    make: Callable[[float, int], object] | None
    targets: dict = field(default_factory=dict)


_RANGES = (datasets.BREAST_CANCER_RANGES[:, 0], datasets.BREAST_CANCER_RANGES[:, 1])
WORKFLOWS = (
    Workflow("DPLogisticRegression()", "breast_cancer",
             lambda e, s: DPLogisticRegression(e, random_state=s), {1.0: 0.85}),
    Workflow("DPLinearSVC()", "breast_cancer",
             lambda e, s: DPLinearSVC(e, random_state=s), {1.0: 0.85}),
    Workflow("DPStandardScaler(0.3 eps) + DPLogisticRegression(0.7 eps)", "breast_cancer",
             lambda e, s: make_pipeline(DPStandardScaler(0.3 * e, random_state=1000 + s),
                                        DPLogisticRegression(0.7 * e, random_state=s)),
             {1.0: 0.85}),
    Workflow("same, shrink_mean=False", "breast_cancer",
             lambda e, s: make_pipeline(
                 DPStandardScaler(0.3 * e, shrink_mean=False, random_state=1000 + s),
                 DPLogisticRegression(0.7 * e, random_state=s))),
    Workflow("same, public feature ranges", "breast_cancer",
             lambda e, s: make_pipeline(
                 DPStandardScaler(0.3 * e, bounds=_RANGES, random_state=1000 + s),
                 DPLogisticRegression(0.7 * e, random_state=s))),
    Workflow("scikit-learn StandardScaler + LogisticRegression (not private)",
             "breast_cancer",
             lambda e, s: make_pipeline(StandardScaler(), LogisticRegression())),
    Workflow("majority class", "breast_cancer", None),
    Workflow("DPLinearRegression()", "diabetes",
             lambda e, s: DPLinearRegression(e, random_state=s), {1.0: 0.10, 5.0: 0.25}),
    Workflow("DPLasso()", "diabetes", lambda e, s: DPLasso(e, random_state=s)),
    Workflow("DPHuberRegressor()", "diabetes",
             lambda e, s: DPHuberRegressor(e, random_state=s)),
    Workflow("scikit-learn LinearRegression (not private)", "diabetes",
             lambda e, s: LinearRegression()),
    Workflow("mean of the training targets", "diabetes", None),
)


#: Total epsilons of the defaults workflows (the issue's targets are at 1 and 5).
DEFAULTS_EPSILONS = (1.0, 5.0)
