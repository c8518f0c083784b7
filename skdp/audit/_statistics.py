"""Audit statistics: Clopper-Pearson bounds, the epsilon lower bound and the membership
test on scores (see :mod:`skdp.audit`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from scipy.stats import beta

from skdp._docstrings import fill_docstrings
from skdp._repr import dataclass_repr

#: The binomial counts of the Clopper-Pearson bounds, described once.
_COUNTS = {"counts": """\
k : int or array-like of int
    Number of successes, ``0 <= k <= n``.
n : int or array-like of int
    Number of trials, ``n >= 1``.
"""}


# ---------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------
@partial(fill_docstrings, texts=_COUNTS)
def clopper_pearson_upper(k: Any, n: Any, level: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper confidence bound on a binomial proportion.

    Parameters
    ----------
    <<counts>>
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


@partial(fill_docstrings, texts=_COUNTS)
def clopper_pearson(k: Any, n: Any, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided Clopper-Pearson ("exact") interval for a binomial proportion.

    Parameters
    ----------
    <<counts>>
    confidence : float, default=0.95
        Two-sided confidence level; each tail gets ``(1 - confidence) / 2``.

    Returns
    -------
    lower : ndarray
        ``beta.ppf(a/2, k, n - k + 1)`` (``0`` where ``k == 0``), ``a = 1 - confidence``.
    upper : ndarray
        ``beta.ppf(1 - a/2, k + 1, n - k)`` (``1`` where ``k == n``).
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
        The bound a test without a single error on the evaluation half gives.
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

    Parameters
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

    def __repr__(self) -> str:
        # Floats rounded for reading (the fields keep every bit), and the verdict itself:
        # a bound just above the claim would read as equal to it.
        return dataclass_repr(self)[:-1] + f", violated={self.violated})"

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
            ``"epsilon >= ... with confidence ... (claimed ...): VIOLATED"`` or
            ``"...: not violated"``.
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
        The bound, the chosen test and its error rates.

    Raises
    ------
    ValueError
        If the two arrays differ in length or hold fewer than 2 scores.
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
