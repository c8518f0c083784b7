"""Differentially private scorers for scikit-learn's model selection tools.

A scorer here is what ``GridSearchCV(scoring=...)``, ``cross_val_score(scoring=...)`` and
``cross_validate`` call once per held-out fold: ``scorer(estimator, X, y) -> float``. Each
call releases ONE score with calibrated noise (discrete Laplace for pure DP, discrete
Gaussian with ``delta > 0``) and charges the accountant it was given (before it reads
``X`` or ``y``), so that ``accountant.spent()`` covers every fit, every score and the
refit of a search. The argument is in docs/tuning_and_budgets.md, section "Private
scores", and docs/privacy.md, "Discrete Gaussian scores".
"""

from __future__ import annotations

import math
import multiprocessing
import numbers
from collections.abc import Callable

import numpy as np
from dp_accounting import dp_event as dpe
from sklearn.base import is_classifier
from sklearn.utils.validation import _num_samples

from skdp._params import store_params
from skdp._repr import short_repr
from skdp._warnings import warn_user
from skdp.exceptions import BudgetError, PrivacyLeakWarning
from skdp.mechanisms import private_range_mean
from skdp.privacy.accounting import DiscreteGaussianDpEvent, PureDpEvent
from skdp.privacy.budget import Budget
from skdp.privacy.calibration import analytic_gaussian_multiplier, calibrate_noise_multiplier
from skdp.privacy.charging import Charge
from skdp.privacy.ledger import PrivacyLedger
from skdp.privacy.noise import as_generator

__all__ = ["PrivateScorer", "make_private_scorer", "PRIVATE_METRICS"]

#: Probabilities below this floor are raised to it by ``"neg_log_loss"``, so that one
#: example's loss lies in ``[0, log(1 / LOG_LOSS_FLOOR)]`` (about 4.6).
LOG_LOSS_FLOOR = 1e-2
#: A Gaussian score whose Renyi-calibrated multiplier exceeds the exact (analytic)
#: Gaussian's by more than this factor is refused: the Renyi bound (orders up to 512)
#: cannot reach that ``(epsilon, delta)`` (usual settings read 1.04-1.19, small epsilons
#: at tiny deltas blow up to thousands).
MAX_RDP_OVERHEAD = 2.0
#: Grid levels of one example's value: the released mean's noise, ``(high - low) /
#: (epsilon n)`` in scale, does not depend on it, so a fine grid costs nothing and leaves a
#: rounding bias of at most ``(high - low) / 2^21`` (64 levels biased small squared errors
#: to 0).
SCORE_RESOLUTION = 2**20


def _accuracy(y_true, y_pred):
    return (np.asarray(y_true) == np.asarray(y_pred)).astype(float)


def _squared_error(y_true, y_pred):
    return (np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float)) ** 2


def _absolute_error(y_true, y_pred):
    return np.abs(np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float))


#: The metrics known by name, each ``(per-example function, response method, sign, needs y_range)``.
#:
#: Each released score is ``sign`` times the private mean of the function's per-example
#: values over the held-out rows, except ``"r2"`` (three private means).
PRIVATE_METRICS: dict[str, tuple[Callable | None, str, float, bool]] = {
    "accuracy": (_accuracy, "predict", 1.0, False),
    "neg_log_loss": (None, "predict_proba", -1.0, False),
    "neg_mean_squared_error": (_squared_error, "predict", -1.0, True),
    "neg_mean_absolute_error": (_absolute_error, "predict", -1.0, True),
    "r2": (None, "predict", 1.0, True),
}


class PrivateScorer:
    """A scorer that releases each score with calibrated noise and charges an accountant.

    Build it with :func:`make_private_scorer`. Calling it, ``scorer(estimator, X, y)``,
    predicts on ``X``, takes the metric's per-example values clipped to their public range
    ``[low, high]`` and releases their mean on a public grid of :data:`SCORE_RESOLUTION`
    levels (one level for accuracy) (:func:`skdp.mechanisms.private_range_mean`), with
    discrete Laplace noise (``delta = 0``: ``epsilon``-DP) or discrete Gaussian noise
    (``delta > 0``: its multiplier solved so that the Renyi bound reads ``(epsilon,
    delta)``), under replace-one for the rows ``(X, y)`` scored, given the fitted
    estimator. The estimator
    is itself a private release (its fit was charged), so by adaptive composition the
    pair, and anything computed from the scores (``best_params_``, the refit's choice), is
    covered by the accountant's total. See docs/tuning_and_budgets.md, "Private scores".

    Parameters
    ----------
    metric : str or callable
        The metric: a key of :data:`PRIVATE_METRICS` or ``metric(y_true, y_pred)``
        returning one value per row.
    epsilon : float
        The epsilon of each call.
    accountant : BudgetAccountant or None
        Charged ``epsilon`` (a ``PureDpEvent``) by every call, before the data is read.
    bounds : tuple of float
        The public range ``(low, high)`` of one example's value.
    response_method : str
        The estimator's method whose output the metric receives.
    sign : float
        ``1.0``, or ``-1.0`` to negate the released mean (a loss).
    y_range : tuple of float or None
        The public range of the targets (regression metrics).
    random_state : None, int or numpy.random.Generator
        The noise's source.
    delta : float, default=0.0
        The delta of each call: ``0`` for discrete Laplace noise (pure DP), positive for
        discrete Gaussian noise.
    """

    def __init__(self, metric, epsilon, accountant, bounds, response_method, sign,
                 y_range, random_state, delta=0.0):
        store_params(self, locals())

    def __repr__(self) -> str:
        name = self.metric if isinstance(self.metric, str) else getattr(
            self.metric, "__name__", repr(self.metric))
        delta = f", delta={self.delta:g}" if self._gaussian else ""
        return (f"make_private_scorer({name!r}, epsilon={self.epsilon:g}{delta}, "
                f"bounds={short_repr(self.bounds)})")

    # -- the ledger of one call --------------------------------------------------------
    @property
    def _gaussian(self) -> bool:
        # Scorers pickled before ``delta`` existed are pure DP.
        return getattr(self, "delta", 0.0) > 0 and not math.isinf(self.epsilon)

    def _parts(self) -> int:
        return 3 if self.metric == "r2" else 1

    def noise_multiplier(self) -> float | None:
        """The discrete Gaussian's ``sigma / sensitivity`` of each mean (``None``: pure DP).

        The smallest multiplier whose ledger (:meth:`ledger`, one mean, or three for
        ``"r2"``) the Renyi bound reads within ``(epsilon, delta)``: solved by
        :func:`~skdp.privacy.calibrate_noise_multiplier` from public settings only.

        Returns
        -------
        float or None
            The multiplier, or ``None`` for discrete Laplace noise.
        """
        if not self._gaussian:
            return None
        return calibrate_noise_multiplier(
            _discrete_gaussian_means, (self._parts(),), Budget(self.epsilon, self.delta),
            accounting="rdp", relation="replace_one")

    def _event(self) -> dpe.DpEvent:
        if self._gaussian:
            return _discrete_gaussian_means(self.noise_multiplier(), self._parts())
        if self.metric == "r2":
            # Three means, epsilon / 3 each (basic composition of pure-DP releases).
            return dpe.ComposedDpEvent([PureDpEvent(e) for e in _thirds(self.epsilon)])
        return PureDpEvent(float(self.epsilon))

    def ledger(self) -> PrivacyLedger:
        """The ledger of one call (public: the metric, ``epsilon`` and ``delta`` only).

        Returns
        -------
        PrivacyLedger
            Pure DP (``delta = 0``): pure-DP events of ``epsilon`` in all (three of
            ``epsilon / 3`` for ``"r2"``), read by basic composition. Otherwise one
            :class:`~skdp.privacy.DiscreteGaussianDpEvent` per mean, read by the Renyi
            bound at ``delta``.
        """
        if math.isinf(self.epsilon):
            return PrivacyLedger(dpe.NonPrivateDpEvent(), "pure", "replace_one",
                                 Budget(self.epsilon, 0.0))
        if self._gaussian:
            return PrivacyLedger(self._event(), "rdp", "replace_one",
                                 Budget(self.epsilon, self.delta))
        return PrivacyLedger(self._event(), "pure", "replace_one", Budget(self.epsilon, 0.0))

    # -- one call ----------------------------------------------------------------------
    def __call__(self, estimator, X, y_true, sample_weight=None, **kwargs):
        """Release one noisy score of ``estimator`` on ``(X, y_true)``.

        Parameters
        ----------
        estimator : fitted estimator
            Its fit must have been private (and charged), or public.
        X : array-like of shape (n_samples, n_features)
            The rows to score (their number is public).
        y_true : array-like of shape (n_samples,)
            Their targets.
        sample_weight : None
            Refused: a weighted mean's sensitivity depends on the weights.
        **kwargs : dict
            Refused (no metadata is routed to a private score).

        Returns
        -------
        float
            The noisy score (higher is better).
        """
        if sample_weight is not None or kwargs:
            raise ValueError(
                "a private scorer takes no sample_weight or other metadata: a weighted "
                "mean's sensitivity depends on the weights. Score without weights.")
        n = _num_samples(X)
        if n < 1:
            raise ValueError("a private scorer needs at least one row to score.")
        if self.random_state is not None and multiprocessing.parent_process() is not None:
            # Every worker would unpickle the same generator state and add the SAME noise
            # to its scores: their differences, and the choice, would be exact.
            raise ValueError(
                "a seeded private scorer (random_state set) cannot run in a process "
                "worker (n_jobs > 1): each worker would repeat the same noise. Use "
                "random_state=None, or n_jobs=1.")
        self._check_estimator(estimator)
        ledger = self.ledger()
        with Charge(self.accountant, ledger, source="PrivateScorer",
                    params={"metric": self.metric if isinstance(self.metric, str)
                            else getattr(self.metric, "__name__", "callable"),
                            "epsilon": self.epsilon, "delta": getattr(self, "delta", 0.0),
                            "n_rows": n}) as charge:
            # Charged before X or y is read, and kept if scoring fails: whether it fails
            # (a NaN in X, a label the model cannot handle) depends on the data, and
            # scikit-learn releases the failure as a NaN score.
            charge.keep(ledger)
            return float(self.sign * self._release(estimator, X, y_true))

    def _check_estimator(self, estimator) -> None:
        """Refuse, before charging, what fails whatever the data (public: the estimator's
        type and methods)."""
        method = self.response_method  # declared in PRIVATE_METRICS for named metrics
        if not hasattr(estimator, method):
            raise ValueError(f"{type(estimator).__name__} has no {method}(), which the "
                             f"private scorer {self!r} needs; nothing was charged.")
        if isinstance(self.metric, str):
            # The regression metrics are those that need y_range (PRIVATE_METRICS).
            regression = PRIVATE_METRICS[self.metric][3]
            if regression == is_classifier(estimator):
                raise ValueError(
                    f"metric {self.metric!r} scores "
                    f"{'regressors' if regression else 'classifiers'}; "
                    f"{type(estimator).__name__} is "
                    f"{'a classifier' if regression else 'not one'}. Nothing was charged.")

    def _release(self, estimator, X, y_true) -> float:
        n = _num_samples(X)
        # One value per row: a column y (n, 1) would otherwise broadcast into n x n values,
        # and one record would move n of them.
        y_true = _one_per_row(y_true, n, "y")
        # One generator per scorer when seeded (so that calls draw different noise), fresh
        # OS entropy per call otherwise (also in every worker process).
        if self.random_state is None:
            rng = as_generator(None)
        else:
            if getattr(self, "_rng", None) is None:
                self._rng = as_generator(self.random_state)
            rng = self._rng
        low, high = self.bounds
        if math.isinf(self.epsilon):
            # Not private: the exact metric of the clipped values (no grid, no noise).
            rng = None
        z = self.noise_multiplier()
        if self.metric == "r2":
            return _private_r2(_one_per_row(estimator.predict(X), n, "the predictions"),
                               y_true, self.y_range, self.epsilon, rng, z)
        if self.metric == "neg_log_loss":
            values = _log_losses(estimator, X, y_true)
        else:
            fn = PRIVATE_METRICS[self.metric][0] if isinstance(self.metric, str) \
                else self.metric
            y_pred = getattr(estimator, self.response_method)(X)
            if self.response_method == "predict":
                y_pred = _one_per_row(y_pred, n, "the predictions")
            if self.y_range is not None:
                y_pred = np.clip(np.asarray(y_pred, dtype=float), *self.y_range)
                y_true = np.clip(np.asarray(y_true, dtype=float), *self.y_range)
            values = np.asarray(fn(y_true, y_pred), dtype=float)
            if values.shape != (_num_samples(X),):
                raise ValueError(
                    f"the metric must return one value per row (shape ({_num_samples(X)},)), "
                    f"got shape {values.shape}: a private scorer averages per-example "
                    "values within their declared bounds.")
        if rng is None:
            return float(np.mean(np.clip(np.nan_to_num(values, nan=low), low, high)))
        # {0, 1} statistics (accuracy) are integers already: no rounding.
        resolution = 1 if self.metric == "accuracy" else SCORE_RESOLUTION
        # Post-processing: the noisy mean clipped to the values' public range (a released
        # accuracy of 1.03 or a negative squared error carries no information).
        return float(np.clip(private_range_mean(values, low, high, self.epsilon, rng,
                                                resolution=resolution, noise_multiplier=z),
                             low, high))


def _one_per_row(values, n: int, name: str) -> np.ndarray:
    """``values`` as a vector of ``n`` (a column ``(n, 1)`` is raveled); anything else is
    refused."""
    v = np.asarray(values)
    if v.ndim == 2 and v.shape[1] == 1:
        v = v[:, 0]
    if v.shape != (n,):
        raise ValueError(f"a private scorer needs one value of {name} per row (shape "
                         f"({n},)), got shape {v.shape}.")
    return v


def _discrete_gaussian_means(z: float, parts: int) -> dpe.DpEvent:
    """The event of ``parts`` means, each with discrete Gaussian noise of multiplier ``z``
    (module level: the calibration caches by the factory's identity)."""
    if parts == 1:
        return DiscreteGaussianDpEvent(z)
    return dpe.ComposedDpEvent([DiscreteGaussianDpEvent(z) for _ in range(parts)])


def _thirds(epsilon: float) -> tuple[float, float, float]:
    third = float(epsilon) / 3.0
    while 3 * third > epsilon:  # rounding must not exceed the total
        third = math.nextafter(third, 0.0)
    return third, third, third


def _log_losses(estimator, X, y_true) -> np.ndarray:
    proba = np.asarray(estimator.predict_proba(X), dtype=float)
    classes = np.asarray(estimator.classes_)
    y = np.asarray(y_true)
    # Labels outside classes_ get probability 0 (the clipped maximum loss).
    index = np.searchsorted(classes, y)
    index = np.clip(index, 0, classes.size - 1)
    known = classes[index] == y
    p = np.where(known, proba[np.arange(y.shape[0]), index], 0.0)
    return -np.log(np.maximum(p, LOG_LOSS_FLOOR))


def _private_r2(y_pred, y_true, y_range, epsilon, rng, noise_multiplier=None) -> float:
    """``1 - MSE / Var`` from three private means, ``epsilon / 3`` each (or discrete
    Gaussian noise of ``noise_multiplier`` each, when given).

    With ``m`` the centre of the public ``y_range`` (width ``w``): the mean squared error
    (values in ``[0, w^2]``), the mean of ``(y - m)^2`` (in ``[0, w^2 / 4]``) and the mean
    of ``y`` (in ``y_range``) give ``Var = E(y - m)^2 - (E y - m)^2``. Post-processing of
    the three releases; the variance is floored at the grid step of its mean, ``w^2 /
    (4 R n)`` (``R =`` :data:`SCORE_RESOLUTION`), so the ratio is finite.
    """
    low, high = y_range
    y = np.clip(np.asarray(y_true, dtype=float), low, high)
    pred = np.clip(np.asarray(y_pred, dtype=float), low, high)
    width, centre = high - low, (low + high) / 2.0
    if rng is None:
        # Not private (epsilon = inf): the exact R^2 of the clipped values.
        return 1.0 - float(np.mean((y - pred) ** 2)) / max(float(np.var(y)), 1e-300)
    e1, e2, e3 = _thirds(epsilon)
    r, z = SCORE_RESOLUTION, noise_multiplier
    mse = private_range_mean((y - pred) ** 2, 0.0, width ** 2, e1, rng, resolution=r,
                             noise_multiplier=z)
    second = private_range_mean((y - centre) ** 2, 0.0, width ** 2 / 4.0, e2, rng,
                                resolution=r, noise_multiplier=z)
    mean = private_range_mean(y, low, high, e3, rng, resolution=r, noise_multiplier=z)
    floor = width ** 2 / (4.0 * r * y.shape[0])
    return 1.0 - max(mse, 0.0) / max(second - (mean - centre) ** 2, floor)


def _check_range(value, name: str) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high) of public numbers, got "
                         f"{value!r}.") from None
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise ValueError(f"{name} must be finite with low < high, got {value!r}.")
    return low, high


def make_private_scorer(metric, *, epsilon, accountant, delta=0.0, bounds=None,
                        y_range=None, response_method="predict", greater_is_better=True,
                        random_state=None):
    """A scikit-learn scorer whose every call releases one ``(epsilon, delta)``-DP score.

    Pass it as ``scoring=`` to ``GridSearchCV``, ``RandomizedSearchCV``,
    ``cross_val_score`` or ``cross_validate`` with skdp estimators that share the same
    ``accountant``: every fit, every score (held-out, and training scores with
    ``return_train_score=True``) and the refit are then charged, ``best_params_`` is
    post-processing of noisy scores, and ``accountant.spent()`` is the privacy of
    everything the search released. Each call charges before it reads data, and keeps
    its charge if it fails afterwards (whether it fails depends on the data). The guarantee and
    its limits (use ``cv=KFold(..., shuffle=True)``:
    stratified folds depend on the labels) are in docs/tuning_and_budgets.md, "Private
    scores".

    Parameters
    ----------
    metric : {"accuracy", "neg_log_loss", "neg_mean_squared_error", \
"neg_mean_absolute_error", "r2"} or callable
        The score. A callable ``metric(y_true, y_pred) -> array of shape (n_samples,)``
        returns one value per row, within ``bounds``; its mean is released.
        ``"neg_log_loss"`` floors probabilities at 0.01 (values in ``[0, log 100]``).
        ``"r2"`` is ``1 - MSE / Var`` from three private means (``epsilon / 3`` each).
    epsilon : float
        Epsilon of each call, in ``(0, inf]``; ``inf`` releases exact scores (not
        private: refused with an accountant of finite ceiling).
    accountant : BudgetAccountant or None
        Charged by every call. ``None`` charges nothing: the caller must count the calls.
    delta : float, default=0.0
        Delta of each call, in ``[0, 1)``. ``0``: discrete Laplace noise, pure
        ``epsilon``-DP. Positive: discrete Gaussian noise whose multiplier the Renyi
        bound solves for ``(epsilon, delta)``. A search scores candidates x folds times,
        and Gaussian scores compose better under the Renyi bound, most of all beside
        Gaussian fits (docs/tuning_and_budgets.md, "Private scores"). Each call adds
        ``delta`` to the accountant's delta sum.
    bounds : tuple of float, optional
        The public range ``(low, high)`` of one row's value: values are clipped to it.
        Required for a callable; derived for the named metrics.
    y_range : tuple of float, optional
        The public range of the targets, required by the regression metrics: targets and
        predictions are clipped to it (the squared error lies in ``[0, width^2]``).
    response_method : str, default="predict"
        The estimator's method whose output a callable ``metric`` receives.
    greater_is_better : bool, default=True
        For a callable: ``False`` negates the released mean (a loss).
    random_state : None, int or numpy.random.Generator, default=None
        The noise's source. ``None`` (fresh OS entropy per call) for releases: a fixed
        seed lets anyone who knows it remove the noise.

    Returns
    -------
    PrivateScorer
        ``scorer(estimator, X, y) -> float``.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.model_selection import GridSearchCV, KFold
    >>> from skdp import BudgetAccountant, DPLogisticRegression
    >>> from skdp.metrics import make_private_scorer
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> acc = BudgetAccountant(epsilon=20.0, delta=1e-4)
    >>> scorer = make_private_scorer("accuracy", epsilon=0.1, accountant=acc)
    >>> search = GridSearchCV(
    ...     DPLogisticRegression(data_norm=3000.0, classes=[0, 1], accountant=acc),
    ...     {"epsilon": [0.5, 2.0]}, scoring=scorer,
    ...     cv=KFold(3, shuffle=True, random_state=0)).fit(X, y)
    >>> len(acc)   # 6 fits, 6 scores, 1 refit
    13
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) \
            or not float(epsilon) > 0:
        raise BudgetError(f"the scorer's epsilon must be a real number in (0, inf], got "
                          f"{epsilon!r}.")
    epsilon = float(epsilon)
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real) \
            or not 0.0 <= float(delta) < 1.0:
        raise BudgetError(f"the scorer's delta must be a real number in [0, 1), got "
                          f"{delta!r}.")
    delta = float(delta)
    if accountant is not None and not hasattr(accountant, "charge"):
        raise TypeError(f"accountant must be a BudgetAccountant or None, got {accountant!r}.")
    if y_range is not None:
        y_range = _check_range(y_range, "y_range")
    if math.isinf(epsilon) and accountant is not None and math.isfinite(accountant.epsilon):
        raise ValueError(
            "epsilon=inf releases exact scores, which an accountant with a finite ceiling "
            "refuses; use accountant=None (not private), or an accountant with "
            "epsilon=inf to count them.")
    if isinstance(metric, str):
        if response_method != "predict" or greater_is_better is not True:
            raise ValueError(
                f"response_method and greater_is_better apply to a callable metric; metric "
                f"{metric!r} sets its own (leave them at their defaults).")
        if metric not in PRIVATE_METRICS:
            raise ValueError(f"metric {metric!r} has no private version; use one of "
                             f"{sorted(PRIVATE_METRICS)} or a callable with bounds=.")
        _, method, sign, needs_range = PRIVATE_METRICS[metric]
        if needs_range and y_range is None:
            raise ValueError(
                f"metric {metric!r} needs the public range of the targets: set y_range="
                "(low, high) (values outside are clipped).")
        if bounds is not None:
            raise ValueError(f"bounds is derived for metric {metric!r}; leave it None "
                             "(y_range sets the regression metrics' range).")
        width = None if y_range is None else y_range[1] - y_range[0]
        bounds = {"accuracy": (0.0, 1.0),
                  "neg_log_loss": (0.0, -math.log(LOG_LOSS_FLOOR)),
                  "neg_mean_squared_error": (0.0, (width or 0.0) ** 2),
                  "neg_mean_absolute_error": (0.0, width or 0.0),
                  "r2": (-math.inf, 1.0)}[metric]
    elif callable(metric):
        if bounds is None:
            raise ValueError("a callable metric needs bounds=(low, high): the public range "
                             "of one row's value (values are clipped to it).")
        bounds = _check_range(bounds, "bounds")
        method, sign = response_method, 1.0 if greater_is_better else -1.0
    else:
        raise ValueError(f"metric must be a name or a callable, got {metric!r}.")
    if random_state is not None and math.isfinite(epsilon):
        warn_user(
            "random_state is set on a private scorer: anyone who knows it can regenerate "
            "the noise of its scores. Use random_state=None for releases.",
            PrivacyLeakWarning, once=True)
    scorer = PrivateScorer(metric, epsilon, accountant, bounds, method, sign, y_range,
                           random_state, delta)
    _check_gaussian_noise(scorer)
    return scorer


def _check_gaussian_noise(scorer: PrivateScorer) -> None:
    """Refuse a Gaussian score whose noise the Renyi bound inflates far beyond the exact
    Gaussian's (public settings only): such a score is useless, and pure DP is cheaper."""
    if not scorer._gaussian:
        return
    exact = analytic_gaussian_multiplier(Budget(scorer.epsilon, scorer.delta), 1)
    exact *= math.sqrt(scorer._parts())  # "r2": three means share the budget
    try:
        z = scorer.noise_multiplier()
    except BudgetError:
        z = math.inf
    if z > MAX_RDP_OVERHEAD * exact:
        need = ("no noise level meets it" if math.isinf(z) else
                f"it needs noise {z:.3g} times the sensitivity")
        raise BudgetError(
            f"a Gaussian score at epsilon={scorer.epsilon:g}, delta={scorer.delta:g} is out "
            f"of the Renyi bound's reach: {need}, where the exact Gaussian would need "
            f"{exact:.3g}. Use delta=0 (discrete Laplace noise, pure DP), or a larger "
            "epsilon or delta.")
