"""Empirical privacy audit: a statistical lower bound on the epsilon a mechanism spends.

The audit trains many times on two neighbouring datasets ``D`` and ``D'`` (replace-one:
same size, one record replaced by a *canary*), reduces each released model to one number
(a *statistic*) and runs a membership test on it. By the hypothesis-testing
characterisation of differential privacy (Wasserman & Zhou 2010; Kairouz, Oh &
Viswanath 2015), every test of ``D`` against ``D'`` on the output of an
``(epsilon, delta)``-DP mechanism has false-positive and false-negative rates with

    FPR + e^epsilon FNR >= 1 - delta    and    FNR + e^epsilon FPR >= 1 - delta,

so upper confidence bounds on the two rates give a lower confidence bound on epsilon
(Jagielski, Ullman & Oprea, "Auditing differentially private machine learning: how
private is private SGD?", NeurIPS 2020; Nasr, Song, Thakurta, Papernot & Carlini,
"Adversary instantiation: lower bounds for differentially private machine learning",
IEEE S&P 2021).

**A passing audit is not a proof of privacy**: it only says that this canary, this
statistic and this many trials did not find a leak. **A failing audit is a bug**: a lower
bound above the claimed epsilon at the stated confidence means that the implementation
(or its accounting) does not deliver its guarantee, except with probability at most
``1 - confidence``.

Entry points: :func:`audit_estimator` (any skdp estimator, end users),
:func:`audit_solver` (the solver layer, used by the test-suite) and
:func:`audit_scores` (the statistics alone, for scores computed elsewhere). Canaries are
built by :func:`make_canary_pair`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.stats import beta

from skdp.exceptions import PrivacyAccountingError, PrivacyLeakWarning
from skdp.geometry import Constraint, Unconstrained
from skdp.losses import GLMLoss
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource, as_generator
from skdp.solvers._base import BaseDPSolver, Problem, ProblemSpec

__all__ = [
    "AuditResult",
    "CanaryPair",
    "ScaledNoiseSource",
    "audit_estimator",
    "audit_scores",
    "audit_solver",
    "clopper_pearson",
    "clopper_pearson_upper",
    "detection_limit",
    "epsilon_lower_bound",
    "make_canary_pair",
]

REFERENCES = ("flip", "zero")


# ---------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------
def clopper_pearson_upper(k: Any, n: Any, level: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper confidence bound on a binomial proportion.

    Parameters
    ----------
    k : int or array-like of int
        Number of successes, ``0 <= k <= n``.
    n : int or array-like of int
        Number of trials, ``n >= 1``.
    level : float
        One-sided confidence level in ``(0, 1)``: ``P(p <= bound) >= level`` for every
        true proportion ``p``.

    Returns
    -------
    ndarray
        ``beta.ppf(level, k + 1, n - k)``, and ``1`` where ``k == n``.
    """
    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    _check_counts(k, n)
    _check_level(level, "level")
    full = k >= n
    # beta needs a positive second shape parameter: evaluate the k == n entries at a dummy
    # value and overwrite them with the exact bound 1.
    return np.where(full, 1.0, beta.ppf(level, k + 1.0, np.where(full, 1.0, n - k)))


def clopper_pearson(k: Any, n: Any, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Clopper-Pearson ("exact") interval for a binomial proportion.

    Parameters
    ----------
    k : int or array-like of int
        Number of successes, ``0 <= k <= n``.
    n : int or array-like of int
        Number of trials, ``n >= 1``.
    confidence : float, default=0.95
        Two-sided confidence level; each tail gets ``(1 - confidence) / 2``.

    Returns
    -------
    lower, upper : ndarray
        ``beta.ppf(a/2, k, n - k + 1)`` (``0`` where ``k == 0``) and
        ``beta.ppf(1 - a/2, k + 1, n - k)`` (``1`` where ``k == n``), ``a = 1 - confidence``.
    """
    _check_level(confidence, "confidence")
    tail = 0.5 * (1.0 - confidence)
    k, n = np.broadcast_arrays(np.asarray(k, dtype=float), np.asarray(n, dtype=float))
    upper = clopper_pearson_upper(k, n, 1.0 - tail)
    empty = k <= 0
    lower = np.where(empty, 0.0, beta.ppf(tail, np.where(empty, 1.0, k), n - k + 1.0))
    return lower, upper


def epsilon_lower_bound(fpr_upper: Any, fnr_upper: Any, delta: float) -> np.ndarray:
    """The smallest epsilon compatible with a test's error rates at ``delta``.

    ``(epsilon, delta)``-DP forces ``FPR + e^epsilon FNR >= 1 - delta`` and
    ``FNR + e^epsilon FPR >= 1 - delta`` for every test. Both right-hand solutions
    decrease in both rates, so upper bounds on the rates give a valid lower bound:

        epsilon >= max(log((1 - delta - FPR) / FNR), log((1 - delta - FNR) / FPR), 0).

    Parameters
    ----------
    fpr_upper, fnr_upper : float or array-like
        Upper bounds on the false-positive and false-negative rates, in ``[0, 1]``.
    delta : float
        The claimed ``delta``, in ``[0, 1)``.

    Returns
    -------
    ndarray
        The bound, ``>= 0`` (``inf`` when a rate bound is 0 and the other below
        ``1 - delta``).
    """
    if not 0.0 <= delta < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    fpr = np.asarray(fpr_upper, dtype=float)
    fnr = np.asarray(fnr_upper, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.log(np.maximum(1.0 - delta - fpr, 0.0)) - np.log(fnr)
        second = np.log(np.maximum(1.0 - delta - fnr, 0.0)) - np.log(fpr)
    # log(0) - log(0) is NaN: such a test proves nothing, bound 0.
    bound = np.fmax(np.fmax(first, second), 0.0)
    return np.where(np.isnan(bound), 0.0, bound)


def detection_limit(n_trials: int, confidence: float, delta: float) -> float:
    """Largest epsilon lower bound an audit with ``n_trials`` trials can ever report.

    It is reached by a perfect test on the evaluation half (no error at all); a claimed
    epsilon at or above it can never be flagged, whatever the mechanism does.

    Parameters
    ----------
    n_trials : int
        Trainings per dataset (half of them evaluate the test).
    confidence : float
        Confidence of the audit (split between the two Clopper-Pearson bounds).
    delta : float
        The claimed ``delta``.

    Returns
    -------
    float
    """
    n_eval = n_trials - n_trials // 2
    upper = clopper_pearson_upper(0, n_eval, _rate_level(confidence))
    return float(epsilon_lower_bound(upper, upper, delta))


def _rate_level(confidence: float) -> float:
    # Union bound: each of the two one-sided Clopper-Pearson bounds fails with probability
    # at most (1 - confidence) / 2.
    _check_level(confidence, "confidence")
    return 1.0 - 0.5 * (1.0 - confidence)


def _check_level(level: float, name: str) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {level!r}.")


def _check_counts(k: np.ndarray, n: np.ndarray) -> None:
    if np.any(n < 1) or np.any(k < 0) or np.any(k > n):
        raise ValueError("binomial counts need n >= 1 and 0 <= k <= n.")


#: Candidate thresholds lie between these quantiles of the pooled selection half. A
#: threshold in the extreme tails is fitted to a handful of runs: on heavy-tailed
#: statistics it wins the selection half by chance and then fails on the evaluation half.
THRESHOLD_QUANTILES = (0.005, 0.995)


def _threshold_bounds(
    negatives: np.ndarray, positives: np.ndarray, level: float, delta: float
) -> tuple[np.ndarray, np.ndarray]:
    """Epsilon bound of every test "positive iff score > t" on one sample, vectorised.

    Candidate thresholds are the midpoints between consecutive distinct pooled scores,
    restricted to :data:`THRESHOLD_QUANTILES` of the pooled sample (pre-registered: the
    restriction does not look at which sample a score came from). A constant sample has
    a single candidate.
    """
    pooled = np.unique(np.concatenate([negatives, positives]))
    thresholds = 0.5 * (pooled[:-1] + pooled[1:]) if pooled.size > 1 else pooled
    lo, hi = np.quantile(np.concatenate([negatives, positives]), THRESHOLD_QUANTILES)
    inside = (thresholds >= lo) & (thresholds <= hi)
    if np.any(inside):
        thresholds = thresholds[inside]
    neg, pos = np.sort(negatives), np.sort(positives)
    false_pos = neg.size - np.searchsorted(neg, thresholds, side="right")
    false_neg = np.searchsorted(pos, thresholds, side="right")
    bounds = epsilon_lower_bound(
        clopper_pearson_upper(false_pos, neg.size, level),
        clopper_pearson_upper(false_neg, pos.size, level),
        delta,
    )
    # Ties (typically all bounds 0 on the selection half) go to the test with the largest
    # empirical advantage 1 - FPR - FNR, not to the first (most extreme) threshold.
    advantage = 1.0 - false_pos / neg.size - false_neg / pos.size
    return thresholds, bounds, advantage


# ---------------------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuditResult:
    """Outcome of a privacy audit.

    The test declares ``D'`` (the canary is present) when
    ``direction * (score - threshold) > 0``. It was chosen on the first half of the trials
    of each dataset and evaluated on the second half; the error rates below are those of
    the second half.

    Attributes
    ----------
    epsilon_lower_bound : float
        Lower bound on the epsilon the mechanism spends at ``delta``, holding with
        probability at least ``confidence``.
    epsilon, delta : float
        The claimed guarantee (what the fit's ledger says it spent).
    confidence : float
        Confidence level of ``epsilon_lower_bound``: the two one-sided Clopper-Pearson
        bounds (FPR and FNR) each hold with probability ``1 - (1 - confidence) / 2``.
    n_trials : int
        Trainings on each of ``D`` and ``D'``.
    threshold : float
        Decision threshold of the test.
    direction : int
        ``+1`` if large scores indicate ``D'``, ``-1`` otherwise.
    fpr, fnr : float
        Empirical false-positive rate (``D`` declared ``D'``) and false-negative rate on
        the evaluation half.
    fpr_upper, fnr_upper : float
        Their one-sided Clopper-Pearson upper bounds.
    detection_limit : float
        Largest bound this many trials can produce (see :func:`detection_limit`).
    scores, scores_prime : ndarray of shape (n_trials,)
        The statistic of every run on ``D`` and on ``D'``, in trial order.
    """

    epsilon_lower_bound: float
    epsilon: float
    delta: float
    confidence: float
    n_trials: int
    threshold: float
    direction: int
    fpr: float
    fnr: float
    fpr_upper: float
    fnr_upper: float
    detection_limit: float
    scores: np.ndarray = field(repr=False)
    scores_prime: np.ndarray = field(repr=False)

    @property
    def violated(self) -> bool:
        """Whether the lower bound exceeds the claimed epsilon: a privacy bug.

        A correct implementation is flagged with probability at most
        ``1 - confidence``. ``False`` is not a proof of privacy.
        """
        return bool(self.epsilon_lower_bound > self.epsilon)

    def summary(self) -> str:
        """A one-line report: the bound, the claim, the rates and the verdict.

        Returns
        -------
        str
        """
        verdict = "VIOLATED" if self.violated else "not violated"
        return (
            f"epsilon >= {self.epsilon_lower_bound:.3f} with confidence {self.confidence:g} "
            f"(claimed epsilon={self.epsilon:.3f}, delta={self.delta:g}; {self.n_trials} "
            f"trials per dataset; FPR={self.fpr:.4f} <= {self.fpr_upper:.4f}, "
            f"FNR={self.fnr:.4f} <= {self.fnr_upper:.4f}; detection limit "
            f"{self.detection_limit:.3f}): {verdict}"
        )


def audit_scores(
    scores: Any,
    scores_prime: Any,
    *,
    epsilon: float,
    delta: float,
    confidence: float = 0.95,
) -> AuditResult:
    """Lower-bound epsilon from the statistic of independent runs on ``D`` and ``D'``.

    The first ``n // 2`` scores of each array choose the test: the threshold and the
    direction maximising the same bound on that half. The remaining scores, independent
    of that choice, evaluate it: one-sided Clopper-Pearson upper bounds on the FPR and
    on the FNR, each at level ``1 - (1 - confidence) / 2`` so that both hold together with
    probability at least ``confidence`` (union bound), go into
    :func:`epsilon_lower_bound`.

    A passing audit is not a proof of privacy; a failing one (``violated``: the lower
    bound above the claimed ``epsilon``) is a bug, up to probability ``1 - confidence``.

    Parameters
    ----------
    scores, scores_prime : array-like of shape (n_trials,)
        Statistic of independent runs on ``D`` and on ``D'`` (same length, at least 2).
    epsilon, delta : float
        The claimed guarantee.
    confidence : float, default=0.95
        Confidence of the lower bound, in ``(0, 1)``.

    Returns
    -------
    AuditResult
    """
    s0 = np.asarray(scores, dtype=float).ravel()
    s1 = np.asarray(scores_prime, dtype=float).ravel()
    if s0.size != s1.size or s0.size < 2:
        raise ValueError(
            f"need the same number (>= 2) of scores on D and D', got {s0.size} and {s1.size}."
        )
    if not (np.all(np.isfinite(s0)) and np.all(np.isfinite(s1))):
        raise ValueError("the statistic must be finite on every run.")
    if not epsilon >= 0:
        raise ValueError(f"the claimed epsilon must be >= 0, got {epsilon!r}.")
    level = _rate_level(confidence)
    limit = detection_limit(s0.size, confidence, delta)
    if epsilon >= limit:
        warnings.warn(
            f"{s0.size} trials at confidence {confidence} cannot certify more than "
            f"epsilon={limit:.3f}, so the claimed epsilon={epsilon:g} can never be flagged; "
            "run more trials.",
            UserWarning,
            stacklevel=2,
        )
    half = s0.size // 2
    # Choose the test on the first half, in both directions.
    best = ((-1.0, -np.inf), 0.0, 1)
    for direction in (1, -1):
        thresholds, bounds, advantage = _threshold_bounds(
            direction * s0[:half], direction * s1[:half], level, delta)
        i = int(np.lexsort((advantage, bounds))[-1])  # largest bound, then advantage
        key = (float(bounds[i]), float(advantage[i]))
        if key > best[0]:
            best = (key, float(direction * thresholds[i]), direction)
    _, threshold, direction = best
    # Evaluate it on the second half.
    e0, e1 = s0[half:], s1[half:]
    false_pos = int(np.count_nonzero(direction * (e0 - threshold) > 0))
    false_neg = int(np.count_nonzero(direction * (e1 - threshold) <= 0))
    fpr_upper = float(clopper_pearson_upper(false_pos, e0.size, level))
    fnr_upper = float(clopper_pearson_upper(false_neg, e1.size, level))
    return AuditResult(
        epsilon_lower_bound=float(epsilon_lower_bound(fpr_upper, fnr_upper, delta)),
        epsilon=float(epsilon),
        delta=float(delta),
        confidence=float(confidence),
        n_trials=int(s0.size),
        threshold=threshold,
        direction=direction,
        fpr=false_pos / e0.size,
        fnr=false_neg / e1.size,
        fpr_upper=fpr_upper,
        fnr_upper=fnr_upper,
        detection_limit=limit,
        scores=s0,
        scores_prime=s1,
    )


# ---------------------------------------------------------------------------------------
# Canaries
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CanaryPair:
    """Two neighbouring datasets that differ in one record, and where to look.

    Built by :func:`make_canary_pair`. Both datasets have one more column than the
    original data, the *canary feature*, which is zero in every row except the canary's.

    Attributes
    ----------
    X, y : ndarray
        ``D``: the data with row ``index`` replaced by the reference record.
    X_prime, y_prime : ndarray
        ``D'``: the data with row ``index`` replaced by the canary.
    feature : int
        Column of the canary feature (the last one).
    index : int
        The replaced row.
    labels : tuple
        Labels of the reference record and of the canary.
    reference : str
        ``"flip"`` or ``"zero"`` (see :func:`make_canary_pair`).
    data_norm : float
        Norm of the canary row.
    """

    X: np.ndarray
    y: np.ndarray
    X_prime: np.ndarray
    y_prime: np.ndarray
    feature: int
    index: int
    labels: tuple
    reference: str
    data_norm: float

    # -- statistics ------------------------------------------------------------------------
    def coef_statistic(self, coef: np.ndarray) -> float:
        """Projection of solver coefficients ``W`` on the canary direction.

        ``W`` has shape ``(n_params, n_outputs)`` (as in
        :attr:`~skdp.solvers.SolverResult.coef`) and the targets ``y`` are those of the
        loss (for example ``+-1`` for the binary logistic loss, one-hot rows for the
        multinomial one). The canary moves row ``feature`` of ``W`` towards its own
        target and the reference record towards the other, so the statistic is
        ``W[feature] . (t' - t)``, ``t`` and ``t'`` their targets.
        """
        t0, t1 = (np.atleast_1d(np.asarray(v, dtype=float)) for v in self.labels)
        return float(np.asarray(coef)[self.feature] @ (t1 - t0))

    def estimator_statistic(self, estimator: Any) -> float:
        """Projection of a fitted classifier's or regressor's ``coef_`` on the canary.

        Binary classifiers and single-output regressors: ``coef_[..., feature]`` (the sign
        does not matter, the audit picks the direction). Multiclass classifiers:
        ``coef_[k', feature] - coef_[k, feature]`` for the classes ``k`` and ``k'`` of the
        reference record and of the canary.
        """
        coef = np.atleast_2d(np.asarray(estimator.coef_, dtype=float))
        if coef.shape[0] == 1:
            return float(coef[0, self.feature])
        classes = list(estimator.classes_)
        k0, k1 = (classes.index(label) for label in self.labels)
        return float(coef[k1, self.feature] - coef[k0, self.feature])

    # -- solver-level problems -------------------------------------------------------------
    def problems(
        self,
        loss: GLMLoss,
        *,
        alpha: float = 0.0,
        constraint: Constraint | None = None,
    ) -> tuple[Problem, Problem]:
        """The two datasets as solver :class:`~skdp.solvers.Problem` objects.

        ``y`` must already hold the loss's targets (``+-1``, one-hot rows, ...). No
        intercept; rows are clipped to ``data_norm``, which is also the public row bound.

        Parameters
        ----------
        loss : GLMLoss
            The loss of both problems.
        alpha : float, default=0.0
            L2 strength.
        constraint : Constraint, optional
            Feasible set (default unconstrained).

        Returns
        -------
        problem, neighbour_problem : Problem
        """
        Y0 = np.asarray(self.y, dtype=float)
        Y1 = np.asarray(self.y_prime, dtype=float)
        Y0 = Y0[:, None] if Y0.ndim == 1 else Y0
        Y1 = Y1[:, None] if Y1.ndim == 1 else Y1
        n, d = self.X.shape
        spec = ProblemSpec(
            n_samples=n,
            n_params=d,
            n_outputs=Y0.shape[1],
            n_penalized=d,
            row_norm_bound=self.data_norm,
            loss=loss,
            constraint=constraint if constraint is not None else Unconstrained(),
            alpha=float(alpha),
        )
        return (Problem.build(self.X, Y0, spec, data_norm=self.data_norm),
                Problem.build(self.X_prime, Y1, spec, data_norm=self.data_norm))


def make_canary_pair(
    X: Any,
    y: Any,
    *,
    data_norm: float,
    labels: tuple | None = None,
    index: int = 0,
    reference: str = "flip",
) -> CanaryPair:
    """Neighbouring datasets ``D``, ``D'`` whose difference saturates the sensitivity.

    A new column, the canary feature, is appended to ``X`` (zero in every row). In ``D'``
    row ``index`` is replaced by the *canary*: ``data_norm`` on the canary feature, zero
    elsewhere, with label ``labels[1]``. In ``D`` it is replaced by the *reference
    record*: with ``reference="flip"`` the same row with label ``labels[0]``, with
    ``reference="zero"`` an all-zero row with label ``labels[0]``. No other record has
    a non-zero canary feature, so the coefficient on it is driven by the canary (or the
    reference record), the regulariser and the noise only: its projection
    (:meth:`CanaryPair.coef_statistic`, :meth:`CanaryPair.estimator_statistic`) is the
    natural one-dimensional statistic.

    What the pair saturates (see ``docs/audit.md``):

    * **Gradient releases** (DP-GD, the snapshot releases of DP-SVRG(++)): the
      per-example gradient of the canary is ``phi'(z, y') data_norm e``, in a direction
      ``e`` no other record touches. With ``reference="flip"`` and a loss whose
      derivative is odd in the label (logistic: ``phi'(z, -1) = -phi'(-z, 1)``) the
      reference record's gradient is its mirror image, so the gradient sums differ by up
      to ``2 C``, the replace-one sensitivity; exactly ``2 C`` while the clip ``C`` is
      active on both (``C <= |phi'| data_norm``; for the logistic loss, ``clip_norm <=
      data_norm / 2`` and margins below ``ln(data_norm / clip_norm - 1)``, which a small
      step size keeps). ``reference="zero"`` reaches ``C``, half the sensitivity.
    * **Output and objective perturbation**: the minimiser moves along ``e`` by
      ``phi'(z*, y') data_norm / (n alpha)``; with ``reference="flip"`` the minimisers
      of ``D`` and ``D'`` differ by the sensitivity ``2 L / (n alpha)`` when the
      derivative sits at its bound at both optima (a far-out regression label ``+-B``;
      a hinge-type loss while the canary's margin ``data_norm^2 / (n alpha)`` stays
      below 1). The logistic loss reaches at most half of it.
    * **Variance-reduced corrections** (DP-SVRG(++) inner steps): the correction
      ``grad f(x; z) - grad f(w~; z)`` of the canary is non-zero only when its gradient
      changes between the snapshot ``w~`` and the iterate ``x``, i.e. when its score
      crosses the region where ``phi'`` varies (a loss with a narrow transition, such
      as a smoothed hinge with small smoothing, and a step size that moves the canary's
      margin across it within an epoch). A constant-gradient canary leaves the
      corrections at zero and audits the snapshot releases only.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data (a sparse matrix is densified; at least one row). Not modified.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Labels or loss targets. Not modified.
    data_norm : float
        The public row-norm bound of the mechanism (the canary row has this norm).
    labels : tuple of two labels, optional
        Labels (or target rows) of the reference record and of the canary. Default: the
        smallest and the largest distinct value of a 1-d ``y`` (two classes, or the two
        most extreme regression targets; for regression pass the public label bounds
        ``(-B, B)`` to make the canary "far out").
    index : int, default=0
        Row replaced in both datasets.
    reference : {"flip", "zero"}, default="flip"
        The record of ``D`` (see above).

    Returns
    -------
    CanaryPair
    """
    if sp.issparse(X):
        X = X.toarray()
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] < 1 or y.shape[0] != X.shape[0]:
        raise ValueError("X must be 2-d with at least one row and as many rows as y.")
    if not (math.isfinite(data_norm) and data_norm > 0):
        raise ValueError(f"data_norm must be positive and finite, got {data_norm!r}.")
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}, got {reference!r}.")
    n, d = X.shape
    if not -n <= index < n:
        raise ValueError(f"index {index} is out of range for {n} rows.")
    index = index % n
    if labels is None:
        if y.ndim != 1:
            raise ValueError("labels must be given when y has more than one column.")
        values = np.unique(y)
        if values.size < 2:
            raise ValueError("y needs two distinct values to choose default labels.")
        labels = (values[0], values[-1])
    if len(labels) != 2:
        raise ValueError(f"labels must be a pair (reference, canary), got {labels!r}.")
    base = np.hstack([X, np.zeros((n, 1))])
    canary_row = np.zeros(d + 1)
    canary_row[d] = data_norm
    X_prime, X_ref = base.copy(), base
    X_prime[index] = canary_row
    X_ref[index] = canary_row if reference == "flip" else 0.0
    dtype = np.result_type(y, np.asarray(labels[0]), np.asarray(labels[1]))
    y_ref, y_prime = y.astype(dtype, copy=True), y.astype(dtype, copy=True)
    y_ref[index], y_prime[index] = labels[0], labels[1]
    return CanaryPair(
        X=X_ref, y=y_ref, X_prime=X_prime, y_prime=y_prime, feature=d, index=index,
        labels=(labels[0], labels[1]), reference=reference, data_norm=float(data_norm),
    )


# ---------------------------------------------------------------------------------------
# Test utility: the under-noised twin
# ---------------------------------------------------------------------------------------
class ScaledNoiseSource(NoiseSource):
    """TEST UTILITY: a noise source whose noise is ``factor`` times too small.

    Every Gaussian ``sigma`` and every l2-Laplace ``scale`` is divided by ``factor``;
    sampling draws (batches, integers) are untouched. A solver run with it is an
    under-noised twin that spends far more than its ledger claims: the audit must flag
    it, which shows that the audit has power. Never use it for a release.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator every draw comes from.
    factor : float
        Divisor of every noise scale, ``> 0``.
    """

    def __init__(self, rng: np.random.Generator, factor: float) -> None:
        if not (math.isfinite(factor) and factor > 0):
            raise ValueError(f"factor must be positive and finite, got {factor!r}.")
        super().__init__(rng)
        self.factor = float(factor)

    def gaussian(self, shape: tuple[int, ...], sigma: float) -> np.ndarray:
        """``N(0, (sigma / factor)^2)`` entries of the given shape."""
        return super().gaussian(shape, sigma / self.factor)

    def l2_laplace(self, shape: tuple[int, ...], scale: float) -> np.ndarray:
        """An l2-Laplace draw of scale ``scale / factor``."""
        return super().l2_laplace(shape, scale / self.factor)

    def laplace(self, shape: tuple[int, ...], scale: float) -> np.ndarray:
        """I.i.d. Laplace entries of scale ``scale / factor``."""
        return super().laplace(shape, scale / self.factor)

    def generalized_gaussian(self, shape: tuple[int, ...], sigma: float, r: float) -> np.ndarray:
        """A generalized Gaussian draw of scale ``sigma / factor``."""
        return super().generalized_gaussian(shape, sigma / self.factor, r)

    def k_norm(self, shape: tuple[int, ...], scale: float, q: float,
               count: int | None = None) -> np.ndarray:
        """K-norm draw(s) of scale ``scale / factor``."""
        return super().k_norm(shape, scale / self.factor, q, count=count)

    def ball_product_k_norm(self, sizes: tuple[int, ...], radii: tuple[float, ...],
                            epsilon: float) -> np.ndarray:
        """A ball-product K-norm draw with every radius divided by ``factor``."""
        return super().ball_product_k_norm(sizes, tuple(r / self.factor for r in radii),
                                           epsilon)

    def spawn(self, n_children: int) -> list[NoiseSource]:
        """Independent child streams, under-noised by the same factor."""
        return [ScaledNoiseSource(child, self.factor) for child in self.rng.spawn(n_children)]


# ---------------------------------------------------------------------------------------
# Audits
# ---------------------------------------------------------------------------------------
def _check_n_trials(n_trials: int) -> None:
    if isinstance(n_trials, bool) or not isinstance(n_trials, int | np.integer) or n_trials < 2:
        raise ValueError(f"n_trials must be an int >= 2, got {n_trials!r}.")


def _differing_rows(A: Any, B: Any) -> np.ndarray:
    """Boolean mask of the rows where two arrays (dense or sparse) differ."""
    if sp.issparse(A) or sp.issparse(B):
        diff = sp.csr_matrix(A) - sp.csr_matrix(B)
        diff.eliminate_zeros()
        return np.diff(diff.indptr) > 0
    A, B = np.asarray(A), np.asarray(B)
    if A.shape != B.shape:
        raise ValueError(f"D and D' must have the same shape, got {A.shape} and {B.shape}.")
    return np.any((A != B).reshape(A.shape[0], -1), axis=1)


def _check_neighbours(X: Any, Y: Any, X_prime: Any, Y_prime: Any) -> None:
    """Replace-one: same size, at most one record (row and label) differs."""
    if X.shape != X_prime.shape:
        raise ValueError(
            f"D and D' must have the same shape (replace-one), got {X.shape} and "
            f"{X_prime.shape}."
        )
    changed = _differing_rows(X, X_prime) | _differing_rows(Y, Y_prime)
    if np.count_nonzero(changed) > 1:
        raise ValueError(
            f"D and D' differ in {np.count_nonzero(changed)} records; replace-one "
            "neighbours differ in one."
        )


def audit_solver(
    solver: BaseDPSolver,
    problem: Problem,
    neighbour_problem: Problem,
    budget: Budget,
    *,
    statistic: Callable[[np.ndarray], float],
    n_trials: int = 1000,
    confidence: float = 0.95,
    accountant: str = "auto",
    random_state: Any = None,
    noise_factory: Callable[[np.random.Generator], NoiseSource] | None = None,
) -> AuditResult:
    """Audit a solver: ``n_trials`` runs on each of two neighbouring problems.

    The first run on each problem goes through ``solver.solve`` (plan from the public
    spec, ledger checked against ``budget``, private run); the two plans must be equal
    (:class:`~skdp.exceptions.PrivacyAccountingError` otherwise: a plan that depends on
    the data leaks). Every further run executes that plan with its own independent noise
    stream. ``statistic`` maps the released coefficients to a number and
    :func:`audit_scores` turns the two samples into a lower bound on epsilon. The
    claimed guarantee is what the solver's ledger says it spent.

    A passing audit is not a proof of privacy; a failing one (``violated``: the lower
    bound above the claimed epsilon at the stated confidence) is a bug.

    Parameters
    ----------
    solver : BaseDPSolver
        The solver, configured.
    problem, neighbour_problem : Problem
        ``D`` and ``D'``: same public size, at most one record different (checked).
    budget : Budget
        The budget the solver is asked to meet (private: finite epsilon).
    statistic : callable
        ``statistic(coef) -> float`` on :attr:`~skdp.solvers.SolverResult.coef`, for
        example :meth:`CanaryPair.coef_statistic`.
    n_trials : int, default=1000
        Runs on each problem.
    confidence : float, default=0.95
        Confidence of the lower bound.
    accountant : str, default="auto"
        Passed to ``solve``.
    random_state : None, int or numpy Generator
        Seeds the independent streams of all runs (``None``: fresh entropy).
    noise_factory : callable, optional
        ``noise_factory(generator) -> NoiseSource`` builds each run's noise source
        (default :class:`~skdp.privacy.noise.NoiseSource`). Tests pass
        ``lambda g: ScaledNoiseSource(g, 5)`` to audit an under-noised twin.

    Returns
    -------
    AuditResult
    """
    _check_n_trials(n_trials)
    if not budget.is_private:
        raise ValueError("an audit needs a private budget (finite epsilon).")
    if problem.spec.n_samples != neighbour_problem.spec.n_samples:
        raise ValueError("D and D' must have the same size (replace-one).")
    _check_neighbours(problem.X, problem.Y, neighbour_problem.X, neighbour_problem.Y)
    factory = NoiseSource if noise_factory is None else noise_factory
    streams = as_generator(random_state).spawn(2 * n_trials)
    problems = (problem, neighbour_problem)
    # The first trial goes through ``solve`` on each dataset: it plans from the public
    # spec and checks the ledger against the budget. The plan must not depend on the
    # data (a plan that differs between neighbours would itself leak); later trials run
    # the same planned mechanism.
    first = [solver.solve(prob, budget, factory(streams[k]), accountant=accountant)
             for k, prob in enumerate(problems)]
    if first[0].plan != first[1].plan:
        raise PrivacyAccountingError(
            f"solver {solver.name!r} planned differently on neighbouring datasets; the plan "
            "must depend on public quantities only."
        )
    plan, spent = first[0].plan, first[0].spent
    scores = np.empty((2, n_trials))
    scores[:, 0] = [statistic(result.coef) for result in first]
    for trial in range(1, n_trials):
        for k, prob in enumerate(problems):
            coef = solver._run(prob, plan, factory(streams[2 * trial + k]))
            scores[k, trial] = statistic(coef)
    return audit_scores(scores[0], scores[1], epsilon=spent.epsilon, delta=spent.delta,
                        confidence=confidence)


def audit_estimator(
    estimator: Any,
    X: Any,
    y: Any,
    X_prime: Any = None,
    y_prime: Any = None,
    *,
    statistic: Callable[[Any], float] | None = None,
    n_trials: int = 1000,
    confidence: float = 0.95,
    random_state: Any = None,
) -> AuditResult:
    """Audit an skdp estimator: ``n_trials`` fits on each of ``D`` and ``D'``.

    With ``X_prime`` and ``y_prime`` omitted, the neighbouring datasets are built from
    ``(X, y)`` by :func:`make_canary_pair` (``data_norm`` read from the estimator, or the
    largest row norm of ``X`` for ``data_norm="auto"``,
    canary in row 0, reference ``"flip"``) and the statistic is the canary coefficient.
    Otherwise ``(X, y)`` is ``D``, ``(X_prime, y_prime)`` is ``D'`` and ``statistic``
    must be given.

    Every fit uses a fresh :func:`sklearn.base.clone` of ``estimator`` with its own
    independent ``random_state`` (the estimator passed in is never fitted or modified;
    the expected :class:`~skdp.exceptions.PrivacyLeakWarning` about a set
    ``random_state`` is silenced inside the audit). The claimed guarantee is the fitted
    clones' ``privacy_spent_``.

    A passing audit is not a proof of privacy: it only means that this canary and
    statistic found no leak with this many trials. A failing one (``violated``: the
    lower bound above the claimed epsilon at the stated confidence) is a bug.

    Parameters
    ----------
    estimator : estimator
        An unfitted or fitted skdp estimator (it is cloned, not used).
    X, y : array-like
        ``D``.
    X_prime, y_prime : array-like, optional
        ``D'``: same shape as ``D``, at most one record different (checked).
    statistic : callable, optional
        ``statistic(fitted_estimator) -> float``. Default (built canary only):
        :meth:`CanaryPair.estimator_statistic`.
    n_trials : int, default=1000
        Fits on each dataset (``2 * n_trials`` fits in all).
    confidence : float, default=0.95
        Confidence of the lower bound.
    random_state : None, int or numpy Generator
        Seeds the independent streams of all fits (``None``: fresh entropy).

    Returns
    -------
    AuditResult

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLogisticRegression
    >>> from skdp.audit import audit_estimator
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(20, 2)), rng.integers(0, 2, 20)
    >>> clf = DPLogisticRegression(epsilon=1.0, delta=1e-5, data_norm=1.0)
    >>> result = audit_estimator(clf, X, y, n_trials=50, random_state=0)
    >>> result.violated
    False
    """
    from sklearn.base import clone  # estimator layer only: keep the module import light

    _check_n_trials(n_trials)
    params = estimator.get_params()
    if "epsilon" in params and not math.isfinite(float(params["epsilon"])):
        raise ValueError("an audit needs a private estimator (finite epsilon).")
    if (X_prime is None) != (y_prime is None):
        raise ValueError("give both X_prime and y_prime, or neither.")
    if X_prime is None:
        data_norm = params["data_norm"]
        if isinstance(data_norm, str):
            # Private bounds: the canary sits at the largest row norm of the audit's own
            # data (an audit runs on data the auditor may read).
            data_norm = float(np.max(np.linalg.norm(np.asarray(X, dtype=float), axis=1)))
        pair = make_canary_pair(X, y, data_norm=float(data_norm))
        X, y, X_prime, y_prime = pair.X, pair.y, pair.X_prime, pair.y_prime
        if statistic is None:
            statistic = pair.estimator_statistic
    elif statistic is None:
        raise ValueError("a statistic is needed when D' is given explicitly.")
    else:
        X, X_prime = (v if sp.issparse(v) else np.asarray(v) for v in (X, X_prime))
        y, y_prime = np.asarray(y), np.asarray(y_prime)
    _check_neighbours(X, y, X_prime, y_prime)
    streams = as_generator(random_state).spawn(2 * n_trials)
    scores = np.empty((2, n_trials))
    spent = None
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="random_state is set",
                                category=PrivacyLeakWarning)
        for trial in range(n_trials):
            for k, (Xk, yk) in enumerate(((X, y), (X_prime, y_prime))):
                model = clone(estimator).set_params(random_state=streams[2 * trial + k])
                model.fit(Xk, yk)
                scores[k, trial] = statistic(model)
                spent = model.privacy_spent_
    if not math.isfinite(spent.epsilon):
        raise ValueError("an audit needs a private estimator (finite epsilon).")
    return audit_scores(scores[0], scores[1], epsilon=spent.epsilon, delta=spent.delta,
                        confidence=confidence)
