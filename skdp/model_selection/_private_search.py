"""Private hyperparameter selection: random repetitions, release of the best only.

Papernot & Steinke (ICLR 2022), "Hyperparameter Tuning with Renyi Differential Privacy":
run a DP mechanism ``Q`` a random number ``K`` of times and release only the best of its
outputs. Here ``Q`` draws hyperparameters (independently of the data), fits the candidate
and scores it with noise (by default both on every row, the score with a share of the
candidate's budget; or on a public random hold-out); the search releases the best
candidate and its noisy score. The argument, step by step, is in
docs/tuning_and_budgets.md.
"""

from __future__ import annotations

import math
from copy import deepcopy
from numbers import Integral, Real

import numpy as np
from dp_accounting import dp_event as dpe
from scipy.optimize import brentq
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import _check_y, check_consistent_length, check_is_fitted

from skdp._array_api import is_device_array, namespace, to_device, to_numpy
from skdp._base import validate_device_rows
from skdp._params import POSITIVE, store_params
from skdp._progress import Progress
from skdp._report import PrivacyReprMixin, non_private_steps
from skdp._sklearn_compat import HasMethods, Interval, StrOptions, _fit_context, validate_data
from skdp._warnings import suppressed, warn_if_seeded, warn_user
from skdp.exceptions import (
    BudgetError,
    IncompatibleSolverError,
    PrivacyAccountingError,
    PrivacyLeakWarning,
)
from skdp.privacy.accounting import (
    PrivacyLedger,
    PureDpEvent,
    _gdp_epsilon,
    calibrate_noise_multiplier,
)
from skdp.privacy.budget import check_budget
from skdp.privacy.budget_accountant import SharedReference
from skdp.privacy.charging import Charge
from skdp.privacy.composition import CompositeLedger, rdp_curve

__all__ = ["PrivateRandomizedSearch", "private_steps"]

#: dp_accounting's ``shape`` of each distribution of the number of candidates K.
DISTRIBUTIONS = {"truncated_negative_binomial": None, "geometric": 1.0,
                 "logarithmic": 0.0, "poisson": math.inf}
# Candidate budgets are lowered by this factor until their Renyi curve fits the reference.
_SHRINK = 0.85
_MAX_SHRINK_STEPS = 40
#: ``distribution="auto"`` picks Poisson only where it releases nothing (``K = 0``) with
#: probability at most this: ``n_candidates_mean >= ln(1e4)`` (about 9.2103).
_MAX_EMPTY = 1e-4


def is_private_step(obj) -> bool:
    """Whether ``obj`` is a private skdp step: it plans its ledger from public quantities
    (``_planned_ledger``) and takes ``epsilon``, ``delta`` and ``accountant``."""
    return hasattr(obj, "_planned_ledger") and hasattr(obj, "get_params")


def private_steps(estimator) -> list[tuple[str, object]]:
    """``(parameter prefix, step)`` of every private skdp step inside ``estimator``
    (estimators and private transformers such as ``DPStandardScaler``)."""
    found = []
    if is_private_step(estimator):
        found.append(("", estimator))
    if hasattr(estimator, "get_params"):
        for key, value in estimator.get_params(deep=True).items():
            if is_private_step(value) and value is not estimator:
                found.append((key + "__", value))
    return found


def _repeat_and_select_event(z: float, mean: float, shape: float) -> dpe.DpEvent:
    """Repeat-and-select of a mechanism dominated by ONE Gaussian of multiplier ``z``
    (Renyi divergence ``alpha / (2 z^2)`` at every order)."""
    return dpe.RepeatAndSelectDpEvent(dpe.GaussianDpEvent(z), mean, shape)


def _tnb_gamma(mean: float, eta: float) -> float:
    """``gamma`` of the truncated negative binomial with mean ``eta (1/g - 1)/(1 - g^eta)``.

    The root is moved up by a relative 1e-9 (above the root finder's error), so the
    distribution sampled has a mean at most ``mean`` and a ``log(1/gamma)`` at most the
    accounted one (both only lower the Renyi bound of Papernot & Steinke, Thm. 2).
    """
    def excess(g: float) -> float:
        if eta == 0:
            return (1.0 / g - 1.0) / math.log(1.0 / g) - mean
        return eta * (1.0 / g - 1.0) / (1.0 - g ** eta) - mean

    try:
        g = brentq(excess, 1e-12, 1.0 - 1e-9, xtol=1e-15, rtol=1e-15)
    except (ValueError, ZeroDivisionError) as err:
        raise ValueError(
            f"no truncated negative binomial with mean n_candidates_mean={mean} and "
            f"eta={eta}; choose n_candidates_mean >= 1.01 and eta >= 1e-3.") from err
    return min(g * (1.0 + 1e-9), 1.0 - 1e-15)


def sample_repetitions(rng: np.random.Generator, distribution: str, mean: float,
                       eta: float) -> int:
    """Draw the number of candidates ``K`` (independent of the data).

    Truncated negative binomial: ``NB(eta, gamma)`` conditioned on ``K > 0`` (numpy's
    ``negative_binomial(n=eta, p=gamma)``); geometric: ``geometric(1 / mean)``; logarithmic:
    ``logseries(1 - gamma)``; Poisson: ``poisson(mean)`` (may be 0).
    """
    if distribution == "poisson":
        return int(rng.poisson(mean))
    if distribution == "geometric":
        return int(rng.geometric(min(1.0, (1.0 / mean) * (1.0 + 1e-12))))
    if distribution == "logarithmic":
        return int(rng.logseries(1.0 - _tnb_gamma(mean, 0.0)))
    if distribution != "truncated_negative_binomial":
        raise ValueError(f"unknown distribution {distribution!r} of the number of "
                         f"candidates; one of {sorted(DISTRIBUTIONS)}.")
    gamma = _tnb_gamma(mean, eta)
    while True:
        k = int(rng.negative_binomial(eta, gamma))
        if k > 0:
            return k


def _sample_params(rng: np.random.Generator, space) -> dict:
    """One candidate, drawn independently of every other (with replacement): a dict of the
    list, then each parameter uniformly from its list or from its distribution's ``rvs``."""
    if isinstance(space, list | tuple):
        space = space[int(rng.integers(len(space)))]
    params = {}
    for key in sorted(space):
        values = space[key]
        if hasattr(values, "rvs"):
            params[key] = values.rvs(random_state=rng)
        else:
            values = list(values)
            params[key] = values[int(rng.integers(len(values)))]
    return params


#: Said when no candidate output a model, without saying why (K stays hidden).
_NOTHING_RELEASED = (
    "nothing was released: no candidate output a model (a Poisson number of candidates "
    "can be 0, and a candidate whose curve with its released bounds exceeds the reference "
    "outputs nothing)")


class _OverCap(BudgetError):
    """A candidate's planned curve exceeds the reference (retry with a smaller budget)."""


class _AmendedOverCap(BudgetError):
    """A candidate with ``"auto"`` bounds, planned with its released bounds, exceeds the
    reference: it releases nothing more (decided from its released bounds only)."""


class _CandidateCap(SharedReference):
    """Accountant handed to one candidate's private steps: their Renyi curves together must
    stay under the reference curve (approximate DP), or their epsilons under the candidate
    epsilon (pure DP). Checked from the plan, before the step reads ``X``; a step with
    ``"auto"`` bounds charges its reservation (the bound estimates and the solver planned
    with placeholder bounds) and amends it to what it runs, checked again. One cap per
    candidate, shared by every copy: meta-estimators that clone their sub-estimators
    (one-vs-rest, voting, stacking) fill the same cap."""

    def __init__(self, reference: np.ndarray | None, pure_epsilon: float | None):
        self.reference = reference
        self.pure_epsilon = pure_epsilon
        # ``reserved``: the sum of the charged plans (public); ``used``: with amendments to
        # what ran (a function of released bounds). Retrying a candidate with a smaller
        # budget is decided on ``reserved`` only: after a step has read data, a refusal
        # caused by amendments makes the candidate output nothing instead.
        zero = 0.0 if reference is None else np.zeros_like(reference)
        self.reserved = self.used = zero
        self._charged: dict[int, np.ndarray | float] = {}

    def _within(self, used) -> bool:
        if self.reference is None:
            return bool(used <= self.pure_epsilon)
        return bool(np.all(used <= self.reference))

    def _usage(self, ledger, source: str):
        """The Renyi curve (or, for a pure-DP search, the epsilon) of ``ledger``."""
        if isinstance(ledger, CompositeLedger):
            return sum((self._usage(part, source) for _, part in ledger.parts),
                       0.0 if self.reference is None else np.zeros_like(self.reference))
        if self.reference is None:
            spent = ledger.spent()
            if spent.delta > 0:
                raise IncompatibleSolverError(
                    f"a pure-DP search (delta=0) needs pure-DP candidates, but {source} "
                    f"spends delta={spent.delta:g}; use a solver with a pure mode.")
            return spent.epsilon
        if ledger.via_add_remove or ledger.accounting not in ("gaussian", "rdp", "pure"):
            raise IncompatibleSolverError(
                f"{source} is accounted by {ledger.accounting!r}"
                f"{' via add/remove' if ledger.via_add_remove else ''}; a private search "
                "reads Renyi curves: set the candidate's accounting='rdp' (or 'gaussian').")
        curve = rdp_curve(ledger.event)
        if curve is None:
            raise IncompatibleSolverError(
                f"{source}'s guarantee (a closed-form (epsilon, delta) with delta > 0) has "
                "no Renyi curve, which PrivateRandomizedSearch needs; choose another "
                "solver for the candidates.")
        return curve

    def charge(self, ledger, *, source: str, params=None) -> int:
        usage = self._usage(ledger, source)
        if not self._within(self.reserved + usage):
            raise _OverCap("candidate's planned curve above the reference")
        if not self._within(self.used + usage):
            raise _AmendedOverCap("candidate's curve, with the released bounds of its "
                                  "earlier steps, above the reference")
        self.reserved = self.reserved + usage
        self.used = self.used + usage
        entry = len(self._charged)
        self._charged[entry] = usage
        return entry

    def amend(self, entry: int, ledger) -> None:
        usage = self._usage(ledger, "the candidate")
        used = self.used - self._charged[entry] + usage
        if not self._within(used):
            raise _AmendedOverCap("candidate's curve with its released bounds above the "
                                  "reference")
        self.used, self._charged[entry] = used, usage

    def refund(self, index: int) -> None:  # a failed candidate fails the whole search
        pass


def _warn_stateful_steps(estimator) -> None:
    """Warn about non-private steps that learn from the data: not covered by any guarantee."""
    for name, cls in non_private_steps(estimator) if hasattr(estimator, "steps") else []:
        warn_user(
            f"step {name!r} ({cls}) learns from the data without "
            "differential privacy: what it fits (and every row it transforms) is NOT "
            "covered by the search's guarantee. Use a data-independent transform "
            "(FunctionTransformer with public constants) instead.",
            PrivacyLeakWarning, once=True)


def _sees_search_labels(model, prefix: str) -> bool:
    """Whether the private step at ``prefix`` is fitted on the search's own ``y`` (the
    estimator itself or a Pipeline's final step); meta-estimators such as one-vs-rest
    give their sub-estimators labels of their own."""
    if prefix == "":
        return True
    steps = getattr(model, "steps", None)
    return bool(steps) and prefix == steps[-1][0] + "__"


def _score_sensitivity(estimator, n_val: int, scoring: str) -> float:
    """Replace-one sensitivity of the validation score (one validation record changes)."""
    if scoring == "accuracy":
        # Mean of n_val indicators: one record moves it by at most 1 / n_val.
        return 1.0 / n_val
    bound = next((step.y_bound for _, step in reversed(private_steps(estimator))
                  if hasattr(step, "y_bound")), None)
    if not (isinstance(bound, Real) and math.isfinite(bound) and bound > 0):
        raise IncompatibleSolverError(
            "scoring='neg_mean_squared_error' needs a public label bound: the final step "
            "must be an skdp regressor with a numeric y_bound.")
    # Labels and predictions are clipped to [-B, B]: each squared residual lies in
    # [0, 4 B^2], so the mean of n_val of them moves by at most 4 B^2 / n_val.
    return 4.0 * float(bound) ** 2 / n_val


def _take_rows(X, index: np.ndarray):
    """Rows ``index`` (public) of a validated ``X``: a device ``X`` stays on its device."""
    if is_device_array(X):
        xp = namespace(X)
        return xp.take(X, to_device(index, X, dtype=xp.int64), axis=0)
    return X[index]


def _raw_score(estimator, X, y, scoring: str) -> float:
    # One prediction per row (a column is flattened: an (n, 1) array would broadcast
    # against y and move the mean by more than its sensitivity).
    pred = np.ravel(to_numpy(estimator.predict(X)))  # a device X's labels come to the host
    if pred.shape != np.shape(y):
        raise ValueError(f"the candidate predicts {pred.shape[0]} values for "
                         f"{np.shape(y)[0]} rows; the search needs one per row.")
    if scoring == "accuracy":
        return float(np.mean(pred == y))
    bound = float(next(step.y_bound for _, step in reversed(private_steps(estimator))
                       if hasattr(step, "y_bound")))
    resid = np.clip(np.asarray(y, dtype=float), -bound, bound) - np.clip(pred, -bound, bound)
    # A NaN prediction scores as the worst residual (2 B)^2: every residual stays in
    # [0, 4 B^2] (the sensitivity) and the noisy scores stay totally ordered.
    resid = np.where(np.isnan(resid), 2.0 * bound, resid)
    return -float(np.mean(resid ** 2))


class PrivateRandomizedSearch(PrivacyReprMixin, MetaEstimatorMixin, BaseEstimator):
    """Hyperparameter search whose whole run, selection included, is differentially private.

    Repeats a private candidate mechanism a random number ``K`` of times and releases
    only the best candidate (Papernot & Steinke 2022). Each repetition draws
    hyperparameters from ``param_distributions`` (independently of the data), fits the
    estimator and scores it with calibrated noise: by default both on every row, the
    score with the share ``score_share`` of the candidate's budget; with a
    ``validation_fraction``, fit on a public random training part and scored on the rest.
    The user gives the TOTAL ``(epsilon, delta)``: the search solves one reference
    Gaussian Renyi curve whose repeat-and-select composition meets it (dp_accounting's
    ``RepeatAndSelectDpEvent``), and lowers every candidate's budget until its own curve
    (fit and score, composed) lies under that reference. With ``delta=0`` it is pure:
    every candidate is ``epsilon / (2 + eta)``-DP and the search is ``epsilon``-DP.
    Argument and assumptions: docs/tuning_and_budgets.md.

    Parameters
    ----------
    estimator : estimator
        An skdp estimator, or a ``Pipeline`` whose private steps are skdp estimators. Its
        ``epsilon``, ``delta``, ``random_state`` and ``accountant`` are set by the search.
    param_distributions : dict or list of dicts
        Parameter names to lists (sampled uniformly, with replacement) or to
        distributions with ``rvs`` (scipy.stats). Must not set ``epsilon`` or ``delta``.
    epsilon : float, default=1.0
        Total epsilon of the whole search.
    delta : float, default=1e-5
        Total delta of the whole search (0: pure DP).
    n_candidates_mean : float, default=10
        Mean of the number of candidates ``K`` (> 1).
    distribution : {"auto", "truncated_negative_binomial", "geometric", "logarithmic", \
"poisson"}, default="auto"
        Distribution of ``K``. ``"auto"``: ``"poisson"`` when ``delta > 0`` and
        ``n_candidates_mean >= ln(1e4)`` (about 9.2103), else
        ``"truncated_negative_binomial"``. Poisson needs ``delta > 0`` and may draw
        ``K = 0`` (probability ``exp(-n_candidates_mean)``, at most ``1e-4`` under
        ``"auto"``: nothing is released); it rarely draws a handful, where the
        truncated negative binomial with ``eta = 0.5`` and mean 10 draws ``K <= 2`` a
        quarter of the time, and a single candidate is the search's tail (measured:
        docs/tuning_and_budgets.md, section 4).
    eta : float, default=0.5
        Shape of the truncated negative binomial (``eta > 0``; ``eta = 1`` is the
        geometric distribution, the limit ``eta -> 0`` the logarithmic one).
    scoring : {"accuracy", "neg_mean_squared_error"} or None, default=None
        Validation score with a public sensitivity: accuracy for classifiers, the clipped
        mean squared error (labels and predictions clipped to ``y_bound``) for regressors.
    validation_fraction : float in [0, 1), default=0.0
        ``0``: every candidate is fitted on all rows and scored on all rows, the score
        taking the share ``score_share`` of the candidate's budget (the two compose).
        In ``(0, 1)``: the share of the rows (a public random partition) held out for
        the scores; the candidates fit on the rest, and fit and score each get the whole
        candidate budget (a record lies in one part). Measured on raw breast cancer at
        total epsilon 1: 0 gives 0.883 / p10 0.784 against 0.854 / 0.719 for 0.2 (600
        unseeded runs; docs/tuning_and_budgets.md).
    score_share : float in (0, 1), default=0.3
        With ``validation_fraction=0``: the share of each candidate's budget (of its
        Renyi curve, or of its pure epsilon) spent on its score; the fit gets the rest.
    accountant : BudgetAccountant or None, default=None
        Charged once with the whole search's ledger before any value of ``X`` is read.
    random_state : None, int or Generator, default=None
        Source of K, of the candidates, of the partition and of all noise. ``None``: OS
        entropy (use it for releases).
    verbose : int, default=0
        ``1``: print the start and the end of the search (never one line per candidate:
        their number K must stay hidden); ``2``: also elapsed times.
    n_jobs : int, default=None
        Candidates fitted in parallel (joblib; ``None``: 1, ``-1``: all cores). Each
        candidate draws its parameters and noise from its own child of the search's
        generator, so a seeded search releases the same candidate and score with any
        ``n_jobs``; the charge is the search's one ledger either way.

    Attributes
    ----------
    best_estimator_ : estimator
        The released candidate, fitted on all rows (in-sample scores, the default) or on
        the training part (a hold-out).
    best_params_ : dict
        Its hyperparameters.
    best_score_ : float
        Its privatized score (the only score kept; no exact score is stored): a training
        score with in-sample scores (optimistic, for every candidate alike), a held-out
        one with a ``validation_fraction``.
    distribution_ : str
        The distribution ``K`` was drawn from (``"auto"`` resolved).
    candidate_epsilon_ : float
        The epsilon each candidate's private steps were first offered: its fit's share of
        the candidate budget (all of it with a hold-out), lowered for candidates whose
        curve did not fit under that share.
    score_noise_scale_ : float
        Standard deviation (Gaussian) or scale (Laplace, pure DP) of the score noise.
    privacy_ledger_ : PrivacyLedger
        The dp_accounting event of the whole search.
    privacy_spent_ : PrivacySpent
        Re-accounted ``(epsilon, delta)`` of the whole search.
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "predict"])],
        "param_distributions": [dict, list],
        "epsilon": POSITIVE,
        "delta": [Interval(Real, 0, 1, closed="left")],
        "n_candidates_mean": [Interval(Real, 1, None, closed="neither")],
        "distribution": [StrOptions({"auto", *DISTRIBUTIONS})],
        "eta": POSITIVE,
        "scoring": [StrOptions({"accuracy", "neg_mean_squared_error"}), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="left")],
        "score_share": [Interval(Real, 0, 1, closed="neither")],
        "accountant": [HasMethods(["charge", "refund"]), None],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
        "n_jobs": [Integral, None],
    }

    def __init__(self, estimator, param_distributions, *, epsilon=1.0, delta=1e-5,
                 n_candidates_mean=10, distribution="auto", eta=0.5,
                 scoring=None, validation_fraction=0.0, score_share=0.3, accountant=None,
                 random_state=None, verbose=0, n_jobs=None):
        store_params(self, locals())

    # -- the public plan -------------------------------------------------------------------
    def _distribution(self) -> str:
        """The distribution of ``K``, ``"auto"`` resolved from public settings: Poisson
        when ``delta > 0`` and it draws ``K = 0`` (releasing nothing) with probability
        ``exp(-n_candidates_mean)`` at most :data:`_MAX_EMPTY`, else the truncated
        negative binomial (``K >= 1``)."""
        if self.distribution != "auto":
            return self.distribution
        # Poisson concentrates K around its mean: on raw breast cancer at total epsilon 1
        # (200 unseeded runs) it drew K <= 2 in none of the runs, against 26% for the
        # truncated negative binomial (eta 0.5, mean 10), whose single-candidate runs made
        # the tail: p10 0.819 / min 0.749 against 0.771 / 0.480, median 0.886 against
        # 0.883 (docs/tuning_and_budgets.md, section 4). It needs delta > 0, and a mean
        # of at least ln(1 / _MAX_EMPTY), about 9.2103, so that an empty search (of
        # probability exp(-mean)) stays negligible.
        if self.delta > 0 and float(self.n_candidates_mean) >= math.log(1.0 / _MAX_EMPTY):
            return "poisson"
        return "truncated_negative_binomial"

    def _shape(self) -> float:
        shape = DISTRIBUTIONS[self._distribution()]
        if shape is None:
            if not math.isfinite(self.eta):
                raise ValueError("eta must be finite for the truncated negative binomial; "
                                 "use distribution='poisson' for the limit.")
            shape = float(self.eta)
        return shape

    def _plan(self) -> tuple[PrivacyLedger, float | None, float | None]:
        """The whole search's ledger and the per-candidate reference, from the settings."""
        budget = check_budget(self.epsilon, self.delta, needs_delta=False)
        if not budget.is_private:
            raise BudgetError("PrivateRandomizedSearch needs a finite epsilon.")
        shape = self._shape()
        mean = float(self.n_candidates_mean)
        if budget.delta == 0:
            if math.isinf(shape):
                raise BudgetError("distribution='poisson' has no pure-DP guarantee; set "
                                  "delta > 0 or choose another distribution.")
            # Papernot & Steinke 2022 (Thm. 2 with both orders -> inf): an eps-DP Q
            # repeated a TNB(eta)-distributed number of times is (2 + eta) eps-DP.
            candidate_eps = budget.epsilon / (2.0 + shape)
            ledger = PrivacyLedger(PureDpEvent((2.0 + shape) * candidate_eps), "pure",
                                   "replace_one", budget)
            return ledger, None, candidate_eps
        z = calibrate_noise_multiplier(_repeat_and_select_event, (mean, shape), budget,
                                       accounting="rdp", relation="replace_one")
        ledger = PrivacyLedger(_repeat_and_select_event(z, mean, shape), "rdp",
                               "replace_one", budget)
        return ledger, z, None

    # -- fit -------------------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y):
        """Run the private search; release the best candidate.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The private training rows.
        y : array-like of shape (n_samples,)
            Their targets.

        Returns
        -------
        PrivateRandomizedSearch
            The fitted search (``self``), with ``best_estimator_`` (``None`` when the
            search released nothing) and the ledger of the whole search.
        """
        previous = {k: v for k, v in vars(self).items() if k.endswith("_")
                    and not k.startswith("_")}
        try:
            # Floating-point warnings off: the candidates' fits and validation scores read
            # private rows (docs/privacy.md, 1.4).
            with np.errstate(all="ignore"):
                return self._fit(X, y)
        except BaseException:
            for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
                delattr(self, name)
            for name, value in previous.items():
                setattr(self, name, value)
            raise

    def _fit(self, X, y):
        """The private search, in the order its guarantee needs.

        1. *Checks and plan* (public): the candidates' space, the scoring and its public
           sensitivity, the validation share; the search's ledger (repeat-and-select of
           the reference Gaussian, or pure DP) and the reference curve each candidate
           must stay under.
        2. *Draws before data*: the number of candidates ``K``, the train/validation
           permutation, one child generator per candidate.
        3. *Charge* the search's ledger (:class:`~skdp.privacy.charging.Charge`).
        4. *Candidates* (in parallel with ``n_jobs``): each draws its parameters, fits
           under its cap (retried with a smaller budget on its public plan only) and
           releases one noisy validation score; the exact score never leaves
           :meth:`_run_candidate`.
        5. *Release* the best noisy score's candidate (``K`` is not stored).
        """
        steps = private_steps(self.estimator)
        if not steps:
            raise IncompatibleSolverError(
                "PrivateRandomizedSearch needs an skdp estimator (or a Pipeline with one) "
                "as estimator.")
        spaces = (self.param_distributions if isinstance(self.param_distributions, list)
                  else [self.param_distributions])
        for space in spaces:
            for key in space:
                if key.split("__")[-1] in ("epsilon", "delta", "random_state", "accountant"):
                    raise ValueError(
                        f"param_distributions sets {key!r}, which the search controls; "
                        "give the total budget as the search's epsilon and delta.")
        scoring = self.scoring or ("accuracy" if is_classifier(self.estimator)
                                   else "neg_mean_squared_error")
        _warn_stateful_steps(self.estimator)
        if is_device_array(y):
            y = to_numpy(y)  # the targets (O(n)) on the host, as every skdp fit
        shape = getattr(X, "shape", None)
        if shape is None or len(shape) != 2:
            X, y = self._validate(X, y)  # lists: converted (nothing is checked yet)
        elif y is None:
            raise ValueError("PrivateRandomizedSearch requires y to be passed, but the "
                             "target y is None.")
        check_consistent_length(X, y)
        n_samples = int(X.shape[0])
        # In-sample scores (validation_fraction=0): fit and score read every row and
        # compose, the score with the share score_share of the candidate's budget.
        in_sample = self.validation_fraction == 0
        n_val = n_samples if in_sample else int(round(self.validation_fraction * n_samples))
        if n_val < 1 or (not in_sample and n_samples - n_val < 2) or n_samples < 2:
            raise ValueError(f"validation_fraction={self.validation_fraction} leaves no "
                             f"validation or training rows of n_samples={n_samples}; "
                             "change it.")
        fit_share, score_share = ((1.0 - float(self.score_share), float(self.score_share))
                                  if in_sample else (1.0, 1.0))
        ledger, z_ref, pure_eps = self._plan()
        spent = ledger.spent()
        distribution = self._distribution()  # the law _plan accounted
        progress = Progress(self, self.verbose)
        progress(f"search: {n_samples} rows ("
                 + ("in-sample scores" if in_sample else f"{n_val} for validation")
                 + f"), total epsilon="
                 f"{self.epsilon:g}, delta={self.delta:g}, {distribution} number of "
                 f"candidates with mean {self.n_candidates_mean:g}")
        if not spent.within(ledger.budget):
            raise PrivacyAccountingError(f"the search's ledger spends {tuple(spent)}.")
        warn_if_seeded(self.random_state)
        rng = np.random.default_rng(self.random_state)
        # Everything random below is drawn before any value of X or y is read.
        n_candidates = sample_repetitions(rng, distribution,
                                          float(self.n_candidates_mean), float(self.eta))
        perm = rng.permutation(n_samples)
        if in_sample:
            val_idx = train_idx = np.arange(n_samples)
        else:
            val_idx, train_idx = np.sort(perm[:n_val]), np.sort(perm[n_val:])
        # Checked here so that a missing public bound fails before anything is spent.
        _score_sensitivity(self.estimator, n_val, scoring)
        if z_ref is None:
            reference = None
            # Pure: epsilons add; the fit gets fit_share of the candidate's epsilon and the
            # score (Laplace) score_share of it (each the whole one with a hold-out).
            fit_pure, score_pure = pure_eps * fit_share, pure_eps * score_share
            first_eps, first_delta = fit_pure, 0.0
            score_z = None
        else:
            # Renyi curves add: the fit's steps stay under fit_share times the reference
            # curve alpha / (2 z^2), and the score's Gaussian of multiplier
            # z / sqrt(score_share) has exactly score_share times it (each the whole
            # curve with a hold-out, where a record lies in one part).
            reference = fit_share * rdp_curve(dpe.GaussianDpEvent(z_ref))
            fit_pure = score_pure = None
            score_z = z_ref / math.sqrt(score_share)
            # The exact Gaussian (mu-GDP, mu = sqrt(fit_share) / z) has the fit's curve; a
            # candidate calibrated by exact Gaussian accounting to its (epsilon, delta)
            # matches it.
            first_delta = float(self.delta)
            first_eps = _gdp_epsilon(math.sqrt(fit_share) / z_ref, first_delta)
        # Charged before any value of X or y is read; refunded if the search fails (no
        # candidate is released then).
        with Charge.of(self, ledger):
            X, y = self._validate(X, y)
            best = (math.nan, None, None, math.nan)
            # One public label set for every candidate (read from the whole y, as skdp's
            # classifiers do): never the label set of a random training part.
            classes = None
            declared = [step.classes for prefix, step in private_steps(self.estimator)
                        if _sees_search_labels(self.estimator, prefix)
                        and "classes" in step.get_params(deep=False)]
            if is_classifier(self.estimator) and declared and all(
                    c is not None for c in declared):
                # The declared (public) label set: nothing is read from y.
                classes = np.asarray(declared[0])
            elif is_classifier(self.estimator):
                classes = np.unique(np.asarray(y))
                warn_user(
                    "the label set is read from y: it is treated as public (every "
                    "candidate uses it), which the search's guarantee does not cover.",
                    PrivacyLeakWarning, once=True)
            # X and y are validated arrays (CSR for sparse X): plain row indexing (a device
            # X by public indices, on its device).
            X_train, X_val = _take_rows(X, train_idx), _take_rows(X, val_idx)
            y_train, y_val = y[train_idx], y[val_idx]
            # One child generator per candidate (drawn before any data is read): its
            # parameters, its fit's seeds and its score noise, whatever n_jobs is.
            outputs = Parallel(n_jobs=self.n_jobs)(
                delayed(self._run_candidate)(
                    child, spaces, X_train, y_train, X_val, y_val, n_val, scoring,
                    reference, score_z, fit_pure, score_pure, first_eps, first_delta,
                    classes)
                for child in rng.spawn(n_candidates))
            for output in outputs:
                # The first of equal noisy scores wins, as in a sequential loop.
                if output is not None and (best[2] is None or output[0] > best[0]):
                    best = output
        # K is not stored: the guarantee holds for the best output with K hidden (the fit
        # time reveals it roughly; see docs). K = 0 (Poisson only) releases nothing.
        self.best_score_, self.best_params_, self.best_estimator_, noise_scale = best
        self.candidate_epsilon_ = float(first_eps)
        self.distribution_ = distribution
        self.score_noise_scale_ = float(noise_scale)
        self.scoring_ = scoring
        self.privacy_ledger_ = ledger
        self.privacy_spent_ = spent
        progress("done: one candidate released")
        if self.best_estimator_ is None:
            warn_user(_NOTHING_RELEASED + " (best_estimator_ is None); the budget is spent "
                      "all the same.", UserWarning)
        elif hasattr(self.best_estimator_, "n_features_in_"):
            self.n_features_in_ = self.best_estimator_.n_features_in_
        if is_classifier(self.estimator) and hasattr(self.best_estimator_, "classes_"):
            self.classes_ = self.best_estimator_.classes_
        return self

    def _run_candidate(self, rng, spaces, X_train, y_train, X_val, y_val, n_val, scoring,
                       reference, score_z, fit_pure, score_pure, eps, delta, classes):
        """One run of the mechanism ``Q``: draw a candidate, fit it, release its noisy
        validation score. Returns ``(noisy score, params, model, noise scale)``, or
        ``None`` when the candidate released nothing beyond its private bounds."""
        params = _sample_params(rng, spaces)
        model = self._fit_candidate(params, X_train, y_train, reference, fit_pure, eps,
                                    delta, rng, classes)
        if model is None:
            return None
        # The candidate's own public bound (y_bound may be a searched parameter).
        noise_scale = self._score_noise_scale(
            _score_sensitivity(model, n_val, scoring), score_z, score_pure)
        with np.errstate(all="ignore"):
            raw = _raw_score(model, X_val, y_val, scoring)
        noise = (rng.laplace(0.0, noise_scale) if reference is None
                 else rng.normal(0.0, noise_scale))
        # The exact score never leaves this function.
        return raw + noise, params, model, noise_scale

    def _validate(self, X, y):
        # Values are checked by each candidate's own fit; here only the format.
        if is_device_array(X):
            # An array API X stays on its device; each candidate fits it there (or its
            # estimator refuses it, before charging). docs/scaling_out.md.
            X = validate_device_rows(X, check_finite=False)
            return X, self._checked_device_targets(X, y)
        return validate_data(self, X, y, accept_sparse="csr", dtype=None,
                             ensure_all_finite=False, multi_output=False,
                             y_numeric=not is_classifier(self.estimator))

    def _checked_device_targets(self, X, y):
        """scikit-learn's checks of the host targets of a device ``X``."""
        y = _check_y(y, multi_output=False, y_numeric=not is_classifier(self.estimator),
                     estimator=self)
        check_consistent_length(np.empty(X.shape[0]), y)
        self.n_features_in_ = int(X.shape[1])
        return y

    @staticmethod
    def _score_noise_scale(sensitivity: float, score_z: float | None,
                           score_pure: float | None) -> float:
        """Laplace scale ``Delta / eps_s`` (pure: eps_s-DP), or Gaussian std
        ``z_s Delta`` (Renyi divergence ``alpha / (2 z_s^2)``: the score's share of the
        reference curve)."""
        return sensitivity / score_pure if score_z is None else score_z * sensitivity

    def _fit_candidate(self, params, X, y, reference, pure_eps, eps, delta, rng,
                       classes=None):
        """Fit one candidate whose private steps, together, stay under the reference."""
        seed_source = None if self.random_state is None else rng
        for _ in range(_MAX_SHRINK_STEPS):
            model = clone(self.estimator).set_params(**params)
            cap = _CandidateCap(reference, pure_eps)
            overrides = {}
            for prefix, step in private_steps(model):
                if (classes is not None and "classes" in step.get_params(deep=False)
                        and _sees_search_labels(model, prefix)):
                    overrides[prefix + "classes"] = (classes if step.classes is None
                                                    else step.classes)
                overrides.update({
                    prefix + "epsilon": eps, prefix + "delta": delta,
                    prefix + "accountant": cap,
                    prefix + "random_state": (None if seed_source is None else
                                              np.random.default_rng(
                                                  seed_source.integers(2**63))),
                })
            model.set_params(**overrides)
            try:
                with suppressed("random_state is set"):
                    return model.fit(X, y)
            except _OverCap:
                # Decided from the candidate's public plan, before it read X.
                eps *= _SHRINK
            except _AmendedOverCap:
                # Decided from its released bounds (post-processing): the candidate outputs
                # nothing; what it released (the bounds) is within the reference.
                return None
        raise IncompatibleSolverError(
            f"candidate {params} does not fit under the search's per-candidate reference "
            f"even at epsilon={eps:.3g}; remove its solver from param_distributions or "
            "raise the search's epsilon.")

    # -- delegation ------------------------------------------------------------------------
    def _has(name):
        def check(self):
            check_is_fitted(self, "privacy_ledger_")
            if self.best_estimator_ is None:
                return True  # the method itself explains that nothing was released
            return hasattr(self.best_estimator_, name)
        return check

    @available_if(_has("predict"))
    def predict(self, X):
        """Predict with the released candidate.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to predict.

        Returns
        -------
        ndarray of shape (n_samples,)
            ``best_estimator_.predict(X)``.
        """
        return self._released().predict(X)

    @available_if(_has("predict_proba"))
    def predict_proba(self, X):
        """Predict class probabilities with the released candidate.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows whose classes are scored.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            ``best_estimator_.predict_proba(X)``.
        """
        return self._released().predict_proba(X)

    @available_if(_has("decision_function"))
    def decision_function(self, X):
        """Decision function of the released candidate.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input rows.

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            ``best_estimator_.decision_function(X)``.
        """
        return self._released().decision_function(X)

    def score(self, X, y):
        """The released candidate's ``score`` on ``(X, y)`` (your own test data).

        Exact, not private: for public test rows.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Test rows.
        y : array-like of shape (n_samples,)
            Their targets.

        Returns
        -------
        float
            ``best_estimator_.score(X, y)``.
        """
        return self._released().score(X, y)

    def _released(self):
        check_is_fitted(self, "privacy_ledger_")
        if self.best_estimator_ is None:
            raise ValueError(_NOTHING_RELEASED + ". Fit again (with a new budget) to get "
                             "a model.")
        return self.best_estimator_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = deepcopy(inner.classifier_tags)
        tags.regressor_tags = deepcopy(inner.regressor_tags)
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        return tags

