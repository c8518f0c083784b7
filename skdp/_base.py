"""The one fit pipeline shared by every skdp linear estimator."""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from numbers import Real

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import _check_y, check_is_fitted

from skdp._progress import Progress
from skdp._report import PrivacyReprMixin
from skdp._sklearn_compat import (
    HasMethods,
    Interval,
    Options,
    StrOptions,
    _fit_context,
    validate_data,
)
from skdp._warnings import warn_user
from skdp.exceptions import (
    IncompatibleSolverError,
    NoiseDominatedWarning,
    PrivacyAccountingError,
    PrivacyLeakWarning,
)
from skdp.geometry import Constraint, L1Ball, L2Ball, LpBall, Unconstrained
from skdp.losses import GLMLoss, is_dask_array, row_norms
from skdp.mechanisms import (
    bound_event,
    grid_ceil,
    grid_points,
    mean_event,
    private_bound,
    private_mean,
    target_count,
)
from skdp.mechanisms.quantile import SLACK
from skdp.privacy.accounting import ACCOUNTING_METHODS, PrivacyLedger
from skdp.privacy.budget import Budget, check_budget
from skdp.privacy.charging import Charge
from skdp.privacy.composition import CompositeLedger
from skdp.privacy.noise import as_generator
from skdp.solvers import (
    SOLVERS,
    BaseDPSolver,
    Problem,
    ProblemSpec,
    accepting_solvers,
    get_solver,
)
from skdp.solvers._base import snap_release
from skdp.solvers._capabilities import accepts_any
from skdp.solvers._problem import non_finite_message

__all__ = ["BaseDPLinearModel", "FitBounds", "noise_ratio"]

#: A fit whose :func:`noise_ratio` is at least this warns that it is noise-dominated:
#: the noise of one release of the mean is then as large as any signal it could carry.
NOISE_DOMINATED = 1.0


#: The split of the bounds' budget among the estimates (proportional; public;
#: docs/privacy.md, 1.6). The scale of |y| clips the centre's mean, so an error in it
#: either way moves every prediction: it gets twice the share and a slack of
#: ``SCALE_SLACK`` (exact law on diabetes' 309 targets at epsilon 1: P(scale < 25) from
#: 1.3e-2 to 1.2e-4 and P(scale > 1000) from 3.2e-4 to 6e-6).
BOUND_WEIGHTS = {"data_norm": 1.0, "y_scale": 2.0, "y_centre": 1.0, "y_bound": 1.0}
SCALE_SLACK = 20.0


#: ``bounds_fraction="auto"``: each estimate gets ``n epsilon`` of at least this (about
#: 10 noise scales of its count queries), within ``AUTO_FRACTIONS`` of ``epsilon``.
AUTO_RECORDS = 30.0
AUTO_FRACTIONS = (0.2, 0.4)


def bounds_share(fraction, epsilon: float, n_estimates: float, n_samples: int) -> float:
    """The part of ``epsilon`` the private bounds get: ``fraction * epsilon``, or for
    ``"auto"`` ``AUTO_RECORDS * k / n`` (``k`` the estimates' total weight in
    :data:`BOUND_WEIGHTS`, so that a weight-1 estimate gets ``n epsilon = 30``) clipped to
    ``[0.2 epsilon, 0.4 epsilon]``. Public: ``epsilon``, the weights and ``n`` only.

    Measured on diabetes (309 training rows, four estimates, 100 unseeded fits each;
    docs/privacy.md 1.6): at epsilon 1 a fraction of 0.2 leaves each estimate
    ``n epsilon = 15`` and the median R^2 at -0.74 (DPLinearRegression) / -1.34 (Huber),
    0.4 gives 0.07 / 0.07 and 0.6 starves the fit (-0.22, Huber); at epsilon 5, 0.2 gives
    0.388 / 0.407 against 0.354 / 0.392 with 0.4.
    """
    if fraction != "auto":
        return float(fraction) * epsilon
    low, high = AUTO_FRACTIONS
    return min(high * epsilon, max(low * epsilon, AUTO_RECORDS * n_estimates / n_samples))


def _split(total: float, weights: dict) -> dict:
    """``total`` split in proportion to ``weights``, the shares rounded down until their
    floating-point sum (as the ledger adds them, in order) is at most ``total``: three
    equal shares of 3.85 summed to 3.8500000000000005 (found by an independent review)."""
    scale = sum(weights.values())
    shares = {k: total * w / scale for k, w in weights.items()}
    while sum(shares.values()) > total:
        shares = {k: math.nextafter(v, 0.0) for k, v in shares.items()}
    return shares


def noise_ratio(n_samples: int, n_params: int, budget: Budget) -> float:
    """The expected norm of the noise of one private release of a mean of ``n`` per-record
    terms of norm at most 1 in ``n_params`` dimensions, over that mean's largest norm (1).

    Public: ``n``, the shape and the budget only. The mean's replace-one sensitivity is
    ``2 / n`` (l2). Gaussian release at ``delta > 0``: ``sigma = (2 / n)
    sqrt(2 ln(1.25 / delta)) / epsilon`` per coordinate (Dwork & Roth 2014, Thm. A.1),
    a norm about ``sqrt(n_params) sigma``; pure DP: the l2-Laplace release of scale
    ``2 / (n epsilon)``, whose norm is ``Gamma(n_params)``-distributed with mean
    ``2 n_params / (n epsilon)``. Every solver's released statistics carry at least the
    noise of such a release (a model is a function of the mean gradient), so a ratio of
    1 or more means the fit cannot tell its data from noise.
    """
    if not budget.is_private:
        return 0.0
    n_eps = float(n_samples) * budget.epsilon
    if budget.delta > 0:
        return 2.0 * math.sqrt(2.0 * n_params * math.log(1.25 / budget.delta)) / n_eps
    return 2.0 * float(n_params) / n_eps


@dataclass(frozen=True)
class FitBounds:
    """The bounds one fit uses: declared, or estimated privately (``"auto"``).

    With ``rescaled`` (any bound ``"auto"``), ``alpha``, ``radius`` and ``huber_delta``
    refer to the problem in units of the bounds: rows ``x / data_norm`` (norm <= 1) and
    targets ``(y - y_centre) / y_bound`` (in [-1, 1]), so their meaning does not depend on
    the units of the data. The solver still runs in raw units: with ``v = w D / B`` the
    rescaled objective is ``1/B^2`` times the raw one with ``alpha D^2`` (squared and Huber
    losses are homogeneous of degree 2, with ``huber_delta B``), and ``||v|| <= r`` is
    ``||w|| <= r B / D``. Declared bounds keep the raw meaning (``rescaled=False``).
    """

    data_norm: float
    y_bound: float | None = None
    y_centre: float = 0.0
    rescaled: bool = False

    @property
    def target_scale(self) -> float:
        return float(self.y_bound) if self.rescaled and self.y_bound is not None else 1.0

    @property
    def alpha_scale(self) -> float:
        return self.data_norm ** 2 if self.rescaled else 1.0

    @property
    def radius_scale(self) -> float:
        return self.target_scale / self.data_norm if self.rescaled else 1.0


def check_out_of_core(solver) -> None:
    """Raise :class:`IncompatibleSolverError` when ``solver`` cannot take a dask ``X``,
    naming the registered solvers that can.

    Public: it reads the solver's declaration and the type of ``X`` only.
    """
    if solver.capabilities.out_of_core:
        return
    capable = [key for key, cls in SOLVERS.items() if cls.capabilities.out_of_core]
    raise IncompatibleSolverError(
        f"solver {solver.name!r} needs X in memory, and X is a dask array; set solver to "
        f"one of {capable}, or pass a numpy array (or a numpy.memmap)."
    )


#: Shown once per session by ``score``: scikit-learn's searches and ``cross_val_score``
#: call it (``scoring=None``) on held-out PRIVATE rows.
EXACT_SCORE_NOTICE = (
    "score() is exact: on private rows (for example inside GridSearchCV or "
    "cross_val_score with scoring=None) the score, and any choice made from it, are not "
    "covered by the privacy guarantee or by any accountant. Pass scoring="
    "skdp.metrics.make_private_scorer(..., accountant=acc) there; on public test rows "
    "score() is fine.")


class ExactScoreNoticeMixin:
    """``score`` as scikit-learn's mixins define it, saying once per session that it is
    exact (:data:`EXACT_SCORE_NOTICE`). Placed before ``ClassifierMixin`` or
    ``RegressorMixin``."""

    def score(self, X, y, sample_weight=None):
        """Exact accuracy (classifiers) or R^2 (regressors) on ``(X, y)``.

        Not private: on private rows use :func:`skdp.metrics.make_private_scorer`
        (docs/tuning_and_budgets.md); a notice says so once per session.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test rows.
        y : array-like of shape (n_samples,)
            Their targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights.

        Returns
        -------
        float
            The score of scikit-learn's ``ClassifierMixin`` or ``RegressorMixin``.
        """
        warn_user(EXACT_SCORE_NOTICE, PrivacyLeakWarning, once=True)
        return super().score(X, y, sample_weight=sample_weight)


class BaseDPLinearModel(PrivacyReprMixin, BaseEstimator):
    """Shared fit pipeline: validate, check the budget, clip, plan, solve, re-account.

    Subclasses provide the loss and the target encoding (:meth:`_encode_targets`) and
    store the label information they need.
    """

    #: Whether ``y`` must be numeric (regression).
    _y_numeric = False
    #: Whether the intercept is a coordinate of the constrained (and penalised) vector.
    _intercept_constrained = False
    #: ``data_norm="auto"`` targets this quantile of the row norms at a finite epsilon
    #: (the maximum at ``epsilon=inf``; see :func:`skdp.mechanisms.target_count`).
    _data_norm_quantile = 0.75
    #: ``y_bound="auto"`` targets this quantile of ``|y - centre|`` (regressors).
    _y_bound_quantile = 1.0
    #: ``y_bound="auto"`` is doubled when its search's target count is at most this share
    #: of ``n`` (0: never).
    _y_bound_widen_below = 0.0
    #: The slack of the ``y_bound`` search (:data:`skdp.mechanisms.SLACK`).
    _y_bound_slack = SLACK

    _parameter_constraints: dict = {
        # Validated once, by skdp.privacy.check_budget (BudgetError naming the setting).
        "epsilon": "no_validation",
        "delta": "no_validation",
        "solver": [StrOptions(SOLVERS.keys()), BaseDPSolver],  # live: registry additions count
        "alpha": [Interval(Real, 0, None, closed="left")],
        # Squared bounds enter the smoothness constant: keep them representable.
        "data_norm": [Interval(Real, 0, 1e150, closed="neither"), StrOptions({"auto"})],
        "bounds_fraction": [Interval(Real, 0, 1, closed="neither"), StrOptions({"auto"})],
        "fit_intercept": ["boolean"],
        "constraint": [StrOptions({"l2", "l1", "lp"}), None],
        "radius": [Interval(Real, 0, None, closed="neither"), None],
        "p": [Interval(Real, 1, None, closed="neither"), None],
        "data_norm_ord": [StrOptions({"auto"}), Interval(Real, 1, None, closed="left")],
        "accounting": [StrOptions({"auto", *ACCOUNTING_METHODS})],
        "accountant": [HasMethods(["charge", "refund"]), None],
        # Negative tilts are rejected in fit with an explanation (non-convex objective).
        "tilt": [Interval(Real, None, None, closed="neither"), None],
        "adversarial_radius": [Interval(Real, 0, None, closed="left"), None],
        "adversarial_norm": [Options(Real, {2, math.inf})],
        # Replace-one only: an add/remove guarantee needs a public dataset size (every
        # denominator, rate and schedule depends on n), which the estimators do not take.
        "neighboring": [StrOptions({"replace_one"})],
        "random_state": ["random_state", np.random.Generator],
        "secure": ["boolean"],
        "verbose": ["verbose"],
    }

    # -- hooks -----------------------------------------------------------------------------
    @abstractmethod
    def _encode_targets(self, y: np.ndarray, bounds: FitBounds
                        ) -> tuple[np.ndarray, GLMLoss, dict]:
        """Targets for the loss, the loss, and fitted label attributes to set."""

    # -- shared helpers ----------------------------------------------------------------------
    def _data_norm_ord(self) -> float:
        """The norm of ``data_norm``: by default the dual norm of the constraint.

        ``|<w, x>| <= ||w||_p ||x||_q`` (``1/p + 1/q = 1``) is what bounds scores and
        gradients over an lp ball, so ``"auto"`` measures rows in ``q``: l2 for the l2
        ball and no constraint, ``inf`` for the l1 ball.
        """
        if self.data_norm_ord != "auto":
            return float(self.data_norm_ord)
        if self.constraint == "l1":
            return math.inf
        if self.constraint == "lp" and self.p is not None:
            return float(self.p) / (float(self.p) - 1.0) if math.isfinite(self.p) else 1.0
        return 2.0

    def _row_norm_bound(self, data_norm: float) -> float:
        # The intercept is a constant feature of value data_norm (so that it is on the scale
        # of the features); the augmented row norm is at most 2^(1/q) data_norm in the
        # q-norm of data_norm (sqrt(2) data_norm in l2, data_norm in l-inf).
        if not self.fit_intercept:
            return float(data_norm)
        ord = self._data_norm_ord()
        return float(data_norm) * (1.0 if ord == math.inf else 2.0 ** (1.0 / ord))

    def _make_constraint(self, scale: float = 1.0) -> Constraint:
        """The constraint set of the solver's (raw-unit) coefficients; ``radius`` times
        ``scale`` (``y_bound_ / data_norm_`` for rescaled fits, see :class:`FitBounds`)."""
        if self.constraint is None:
            return Unconstrained()
        if self.radius is None:
            raise IncompatibleSolverError(
                f"constraint={self.constraint!r} needs a public radius; set radius to a "
                "positive number."
            )
        radius = float(self.radius) * scale
        if self.constraint == "l1":
            return L1Ball(radius)
        if self.constraint == "lp":
            if self.p is None or not math.isfinite(self.p):
                raise IncompatibleSolverError(
                    "constraint='lp' needs a finite exponent p > 1; set p (or use "
                    "constraint='l1' for p = 1 and 'l2' for p = 2)."
                )
            if self.p == 2:
                return L2Ball(radius)
            return LpBall(radius, float(self.p))
        return L2Ball(radius)

    # -- fit -------------------------------------------------------------------------------------
    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "privacy_spent_")

    def _fitted_state(self) -> dict:
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, **fit_params):
        """Fit the model with the configured private solver.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training data; rows are clipped to ``data_norm`` (``X`` is not modified).
        y : array-like of shape (n_samples,)
            Targets.
        **fit_params
            None are accepted; ``sample_weight`` is refused with the reason.

        Returns
        -------
        object
            The fitted estimator (``self``).
        """
        if "sample_weight" in fit_params:
            raise TypeError(
                f"{type(self).__name__} refuses sample_weight: a weight multiplies its "
                "record's contribution to every gradient and statistic, so every "
                "sensitivity would have to grow by a declared public maximum weight, and "
                "weights computed from the data would leak. Repeat or subsample rows with "
                "public rules instead."
            )
        if fit_params:
            raise TypeError(f"{type(self).__name__}.fit() got unexpected keyword arguments "
                            f"{sorted(fit_params)}.")
        previous = self._fitted_state()
        try:
            # Floating-point warnings are off while the data is read: whether a sum, a
            # norm or an iterate overflows depends on the data (docs/privacy.md, 1.4).
            with np.errstate(all="ignore"):
                return self._fit(X, y)
        except BaseException:
            # A failed fit leaves the estimator exactly as it was (and spends nothing).
            for name in self._fitted_state():
                delattr(self, name)
            for name, value in previous.items():
                setattr(self, name, value)
            raise

    def _public_shape(self, X) -> tuple[int, int] | None:
        """``(n_samples, n_features)`` from ``X.shape`` without reading a value, or ``None``."""
        shape = getattr(X, "shape", None)
        if shape is None or len(shape) != 2:
            return None
        try:
            n, d = int(shape[0]), int(shape[1])
        except (TypeError, ValueError):
            return None
        return (n, d) if n >= 1 and d >= 1 else None

    def _public_targets(self, y, bounds: FitBounds) -> tuple[GLMLoss, int, dict]:
        """The loss and the fitted label attributes, from public information only.

        Regressors' losses depend on the public (or privately estimated) label bound
        alone. Classifiers read the label set: the declared ``classes``, or the label set
        of ``y``, which skdp then treats as public (see docs/privacy.md).
        """
        if self._y_numeric:
            Y, loss, attrs = self._encode_targets(np.zeros(1), bounds)
        else:
            y = np.asarray(y)
            # The label set is checked on y once; the loss and the number of outputs then
            # come from encoding the k labels themselves, not all n targets.
            labels = self._check_classes(y.ravel() if y.ndim == 2 else y)
            Y, loss, attrs = self._encode_targets(labels, bounds)
        return loss, Y.shape[1], attrs

    def _auto_bounds(self) -> tuple[str, ...]:
        """The bounds to estimate privately: ``"data_norm"`` and, for regressors, the
        scale and centre of ``y`` (``"y_scale"``, ``"y_centre"``, with an intercept) and
        ``"y_bound"``."""
        names = ("data_norm",) if isinstance(self.data_norm, str) else ()
        if self._y_numeric and isinstance(getattr(self, "y_bound", None), str):
            names += (("y_scale", "y_centre", "y_bound") if self.fit_intercept
                      else ("y_bound",))
        return names

    def _placeholder_bounds(self) -> FitBounds:
        """The declared bounds, with 1 where a bound is ``"auto"`` (planning checks only).

        Rescaled like the real fit, so that a plan that does not depend on the bounds' size
        (most solvers, in units of the bounds) is the real plan, and its calibration is
        computed once and cached instead of twice.
        """
        data_norm = 1.0 if isinstance(self.data_norm, str) else float(self.data_norm)
        y_bound = getattr(self, "y_bound", None)
        if y_bound is not None:
            y_bound = 1.0 if isinstance(y_bound, str) else float(y_bound)
        return FitBounds(data_norm, y_bound, 0.0, rescaled=bool(self._auto_bounds()))

    def _privacy_plan(self, n_samples: int, n_features: int, y,
                      bounds: FitBounds | None = None, budget: Budget | None = None,
                      *, calibrate: bool = True):
        """Everything a fit decides before reading ``X``: solver, budget, spec and plan.

        Used by ``fit`` (to charge a budget accountant before any value of ``X`` is read)
        and by :func:`skdp.model_selection.privacy_cost` (to price a workflow). Without
        ``calibrate`` only the settings are checked (``prepared`` is ``None``): a fit with
        ``"auto"`` bounds plans its solver once, after the bounds are estimated.
        """
        bounds = self._placeholder_bounds() if bounds is None else bounds
        tilt = 0.0 if self.tilt is None else float(self.tilt)
        if not tilt >= 0:
            raise ValueError(
                f"tilt must be positive (or None for plain ERM), got {self.tilt}: negative "
                "tilts (the outlier-robust regime of tilted ERM) make the objective "
                "non-convex, and no sensitivity bound of skdp covers them."
            )
        solver = get_solver(self.solver)
        losses = getattr(self, "_solver_losses", None)
        constraints = getattr(self, "_solver_constraints", None)
        if losses is not None and not accepts_any(solver.capabilities, losses, constraints):
            # No setting of this estimator makes the solver applicable (its docstring does
            # not list it): name the solvers that are, from the same declarations.
            usable = [k for k, cls in SOLVERS.items()
                      if accepts_any(cls.capabilities, losses, constraints)]
            raise IncompatibleSolverError(
                f"solver {solver.name!r} accepts none of {type(self).__name__}'s losses "
                f"{losses} with its constraints {constraints}; set solver to one of "
                f"{usable} (docs/solvers.md).")
        secure = getattr(self, "secure", False)
        if secure and not solver.capabilities.secure:
            capable = [k for k, cls in SOLVERS.items() if cls.capabilities.secure]
            raise IncompatibleSolverError(
                f"secure=True needs the release's noise scale, which solver {solver.name!r} "
                f"does not declare; set secure=False, or solver to one of {capable}."
            )
        if budget is None:
            budget = check_budget(
                self.epsilon, self.delta, needs_delta=solver.capabilities.needs_delta,
                n_samples=n_samples, solver_name=solver.name,
            )
        loss, n_outputs, label_attrs = self._public_targets(y, bounds)
        n_params = n_features + (1 if self.fit_intercept else 0)
        spec = ProblemSpec(
            n_samples=n_samples,
            n_params=n_params,
            n_outputs=n_outputs,
            # Output perturbation penalises (and constrains) the intercept too: its
            # sensitivity argument needs strong convexity in every coordinate.
            n_penalized=(n_params if solver.capabilities.intercept == "penalized"
                         or self._intercept_constrained
                         else n_features),
            row_norm_bound=self._row_norm_bound(bounds.data_norm),
            loss=loss,
            constraint=self._make_constraint(bounds.radius_scale),
            alpha=float(self.alpha) * bounds.alpha_scale,
            tilt=tilt,
            adversarial_radius=float(self.adversarial_radius or 0.0),
            adversarial_norm=float(self.adversarial_norm),
            intercept_feature=bounds.data_norm if self.fit_intercept else 0.0,
            row_norm_ord=self._data_norm_ord(),
        )
        try:
            if not calibrate:
                solver.check(spec, budget, accounting=self.accounting,
                             relation=self.neighboring)
                return solver, budget, spec, None, label_attrs
            prepared = solver.prepare(spec, budget, accounting=self.accounting,
                                      relation=self.neighboring)
        except IncompatibleSolverError as error:
            # Public: name the registered solvers that accept this problem.
            raise accepting_solvers(error) from None
        return solver, budget, spec, prepared, label_attrs

    def _bounds_plan(self, n_samples: int, n_features: int, y):
        """For ``"auto"`` bounds: the total budget, its split, and the reservation charged
        before any data is read.

        The bound estimates get :func:`bounds_share` of ``epsilon`` (pure DP, split in
        proportion to :data:`BOUND_WEIGHTS`), the fit the rest at the full delta; the two
        compose by basic composition to at most ``(epsilon, delta)``. The reservation is
        the bound estimates' events followed by the fit planned with the placeholder
        bounds (:meth:`_placeholder_bounds`): for every solver whose plan does not depend
        on the bounds' size in units of the bounds (all but ``svrg++``,
        tests/solvers/test_reservations.py), that is the plan
        the fit runs, so an accountant (and :func:`~skdp.model_selection.privacy_cost`)
        composes the real events, not ``(epsilon, delta)``. The accountant re-checks its
        ceiling when the fit amends the reservation to what ran
        (:meth:`BudgetAccountant.amend <skdp.BudgetAccountant.amend>`).
        """
        # Validates every setting (solver, budget, constraint) before anything is charged.
        solver, total, *_ = self._privacy_plan(n_samples, n_features, y, calibrate=False)
        names = self._auto_bounds()
        if not total.is_private:
            unaccounted = PrivacyLedger(dpe.NonPrivateDpEvent(), "pure", self.neighboring, total)
            return (total, {k: math.inf for k in names}, total,
                    CompositeLedger((("fit", unaccounted),), total))
        eps_bounds = bounds_share(self.bounds_fraction, total.epsilon,
                                  sum(BOUND_WEIGHTS[k] for k in names), n_samples)
        eps_fit = total.epsilon - eps_bounds
        while eps_bounds + eps_fit > total.epsilon:  # rounding must not exceed the total
            eps_fit = math.nextafter(eps_fit, 0.0)
        shares = _split(eps_bounds, {k: BOUND_WEIGHTS[k] for k in names})
        fit_budget = Budget(eps_fit, total.delta)
        # The fit planned with the placeholder bounds (calibrated once, and cached for the
        # real plan when the two agree).
        planned = self._privacy_plan(n_samples, n_features, y, None, fit_budget)[3][1]
        reservation = CompositeLedger((
            ("bounds", self._bounds_ledger(shares, total)), ("fit", planned)), total)
        return total, shares, fit_budget, reservation

    def _bounds_ledger(self, shares: dict, total: Budget) -> PrivacyLedger:
        events = [mean_event(eps) if name == "y_centre" else bound_event(eps)
                  for name, eps in shares.items()]
        return PrivacyLedger(dpe.ComposedDpEvent(events), "pure", self.neighboring,
                             Budget(sum(shares.values()), 0.0))

    def _estimate_bounds(self, X, y, shares: dict, rng) -> FitBounds:
        """The private bound estimates: AboveThreshold over public grids
        (:func:`skdp.mechanisms.private_bound`), so every released bound is a grid point
        or a public function of grid points (docs/privacy.md, "Private bounds").

        ``data_norm``: the row norms' bound (the maximum at ``epsilon=inf``). With an
        intercept, the centre of ``y`` is the private mean of ``y`` clipped to a private
        bound of ``|y|`` (:func:`~skdp.mechanisms.private_mean`, on the grid of
        multiples of that bound over ``64 n``) and ``y_bound`` a private bound of
        ``|y - centre|`` (their maximum at ``epsilon=inf``: no target clipped). Without an
        intercept the centre is 0.
        """
        data_norm = (private_bound(row_norms(X, self._data_norm_ord()), shares["data_norm"],
                                   rng, quantile=self._data_norm_quantile)
                     if "data_norm" in shares else float(self.data_norm))
        y_bound = getattr(self, "y_bound", None)
        centre = 0.0
        if "y_bound" in shares:
            y = np.asarray(y, dtype=float)
        if "y_centre" in shares:
            scale = private_bound(np.abs(y), shares["y_scale"], rng, slack=SCALE_SLACK)
            # Post-processing: the clipped values' mean lies in [-scale, scale].
            centre = float(np.clip(private_mean(y, scale, shares["y_centre"], rng),
                                   -scale, scale))
        if "y_bound" in shares:
            y_bound = private_bound(np.abs(y - centre), shares["y_bound"], rng,
                                    quantile=self._y_bound_quantile,
                                    slack=self._y_bound_slack)
            n = y.shape[0]
            if target_count(n, shares["y_bound"], self._y_bound_quantile,
                            self._y_bound_slack) <= self._y_bound_widen_below * n:
                # Public: at small n epsilon the search's target falls to (near) the
                # median of |y - centre|, which would clip half the targets; twice it clips
                # few (the rule of the previous median-based bounds). A grid point times 2
                # is a grid point.
                y_bound = min(2.0 * y_bound, float(grid_points()[-1]))
            if "y_scale" in shares:
                # Post-processing of released values: the targets within the released
                # scale lie within scale + |centre| of the centre, so y_bound is capped at
                # the grid point at or above it. It catches the search's overshoot (about
                # 3e-4 per fit beyond 3x the data, the noise growing with it) and binds in
                # many fits with targets centred near 0, where scale + |centre| is itself
                # a tight bound (an independent review measured R^2 within 0.05 either way).
                y_bound = min(y_bound, grid_ceil(scale + abs(centre)))
        elif y_bound is not None:
            y_bound = float(y_bound)
        return FitBounds(float(data_norm), y_bound, float(centre), rescaled=True)

    def _planned_ledger(self, n_samples: int, n_features: int, y):
        """The ledger a fit charges before reading ``X`` (a reservation for auto bounds)."""
        if self._auto_bounds():
            return self._bounds_plan(n_samples, n_features, y)[3]
        return self._privacy_plan(n_samples, n_features, y, self._declared_bounds())[3][1]

    def _declared_bounds(self) -> FitBounds:
        y_bound = getattr(self, "y_bound", None)
        return FitBounds(float(self.data_norm), None if y_bound is None else float(y_bound),
                         0.0)

    def _fit(self, X, y):
        """One private fit, in the order the guarantee needs.

        1. *Public plan.* From the shape of ``X``, the label set and the parameters only:
           with declared bounds the solver's whole plan and ledger; with ``"auto"``
           bounds the budget split and the reservation (the bound estimates and the
           solver planned with placeholder bounds, :meth:`_bounds_plan`).
        2. *Notices* that depend on parameters only (a seed, a label set read from ``y``).
        3. *Charge* the planned ledger to the accountant, before any value of ``X`` is
           read (:class:`~skdp.privacy.charging.Charge`; a refusal reads nothing).
        4. *Validate* ``X`` and ``y`` (input errors before any release are refunded).
        5. *Private bounds* (``"auto"``): estimate them on public grids; from here their
           share stays charged whatever happens. Plan the solver with them and amend the
           charge to what runs (the accountant re-checks its ceiling).
        6. *Solve* the planned, fixed-length algorithm with its calibrated noise, then
           re-account the ledger; store the fitted attributes.
        """
        if is_dask_array(y):
            # The targets are O(n): gathered once (the label set is read from them as
            # before); X stays a dask array.
            y = np.asarray(y.compute())
        if is_dask_array(X):
            check_out_of_core(get_solver(self.solver))
        shape = self._public_shape(X) if y is not None else None
        if shape is None:
            # Lists, empty or malformed input: validation gives scikit-learn's errors.
            X, y = self._validate(X, y)
            shape = X.shape
        progress = Progress(self, getattr(self, "verbose", 0))
        auto = self._auto_bounds()
        # The budget is validated once, by check_budget in the plan below.
        progress(f"fit: {shape[0]} rows, {shape[1]} features, epsilon={self.epsilon!s}, "
                 f"delta={self.delta!s}, solver {get_solver(self.solver).name!r}")
        if auto:
            total, shares, fit_budget, reservation = self._bounds_plan(*shape, y)
            planned = reservation
            progress(f"private bounds: {', '.join(shares)} with epsilon "
                     f"{sum(shares.values()):.4g} in all (pure DP); the fit gets "
                     f"epsilon {fit_budget.epsilon:.4g}")
        else:
            bounds = self._declared_bounds()
            solver, total, spec, prepared, label_attrs = self._privacy_plan(*shape, y, bounds)
            planned = prepared[1]
        if total.is_private and self.random_state is not None:
            # A seed (or a generator, which can be rewound) stored on the estimator lets
            # anyone who holds it regenerate the noise and remove it.
            warn_user(
                "random_state is set: anyone who knows it, or who holds this estimator "
                "(pickle, get_params), can regenerate the noise and undo the privacy "
                "guarantee. Use random_state=None (fresh OS entropy) for releases.",
                PrivacyLeakWarning, once=True)
        if not self._y_numeric and getattr(self, "classes", None) is None:
            warn_user(
                "the label set is read from y (classes=None): replacing the only record of "
                "a class changes the model's shape, which the privacy guarantee does not "
                "cover. Declare the public label set with classes=[...].",
                PrivacyLeakWarning, once=True)
        # The budget is charged from the public plan, before any value of X is read; on
        # failure only what was released stays charged (skdp.privacy.charging).
        with Charge(self.accountant, planned, source=type(self).__name__,
                    params=self.get_params(deep=False)) as charge:
            # With declared bounds X is first read by Problem.build, whose row norms find
            # any non-finite entry (the same pass, instead of one more over X here).
            X, y = self._validate(X, y, finite_at_build=not auto)
            if auto:
                # Independent streams for the bound estimates and the solver's noise.
                bounds_rng, fit_rng = as_generator(self.random_state).spawn(2)
                bounds = self._estimate_bounds(X, y, shares, bounds_rng)
                # The private bounds are computed, and whether the rest fails can depend
                # on them (the solver is planned with them): their part stays charged.
                charge.keep(CompositeLedger(
                    (("bounds", self._bounds_ledger(shares, total)),), total))
                solver, _, spec, prepared, label_attrs = self._privacy_plan(
                    *shape, y, bounds, fit_budget)
                ledger = CompositeLedger((("bounds", self._bounds_ledger(shares, total)),
                                          ("fit", prepared[1])), total)
                charge.amend(ledger)
            else:
                fit_rng, ledger = self.random_state, prepared[1]
            self._warn_if_noise_dominated(spec, prepared[1].budget, bounds)
            if not total.is_private and isinstance(self.solver, str) and \
                    solver.capabilities.inexact_at_inf:
                # Public: the solver's declaration and the budget.
                warn_user(
                    f"solver {solver.name!r} does not reach its objective's optimum at "
                    f"epsilon=inf with its defaults: {solver.capabilities.inexact_at_inf}. "
                    "Set solver='gd' for the non-private optimum of the same objective, or "
                    "pass a solver object with more iterations.",
                    ConvergenceWarning)
            cells = shape[0] * shape[1]  # public: the solver's progress for long fits
            if progress.shows_steps(cells):
                progress("solving", f"{prepared[0].n_iter} planned steps, data_norm_="
                         f"{bounds.data_norm:.4g}")
            steps = progress.steps(prepared[0].n_iter, cells)
            result = self._fit_planned(X, y, solver, spec, prepared, bounds, fit_rng, steps)
            if steps is not None:
                steps.finish()
            spent = ledger.spent()
            if total.is_private and not spent.within(total):
                raise PrivacyAccountingError(
                    f"re-accounting the fit's ledger gives (epsilon, delta) = "
                    f"{tuple(spent)} beyond the budget ({total.epsilon}, {total.delta})."
                )
        self._set_fitted(result, solver, spec, label_attrs, bounds, ledger, spent)
        progress("done", f"privacy spent ({spent.epsilon:.6g}, {spent.delta:.3g})")
        return self

    def _warn_if_noise_dominated(self, spec, budget: Budget, bounds: FitBounds) -> None:
        """Warn when the fit cannot learn: its :func:`noise_ratio` is at least
        :data:`NOISE_DOMINATED`, or a private bound fell on the edge of its public grid.

        Post-processing of public quantities and released (DP) bounds only: the warning
        costs no privacy and says what to change.
        """
        ratio = noise_ratio(spec.n_samples, spec.n_params, budget)
        if ratio >= NOISE_DOMINATED:
            warn_user(
                f"this fit is noise-dominated: {spec.n_samples} rows at epsilon "
                f"{budget.epsilon:.3g} for {spec.n_params} coefficients give noise "
                f"{ratio:.2g} times the largest signal, so expect a model near chance. "
                "Raise epsilon, use fewer features, or declare public bounds (data_norm, "
                "y_bound) so that no budget goes to them.",
                NoiseDominatedWarning)
        grid = grid_points()
        auto = self._auto_bounds()
        edges = [name for name, value in (("data_norm", bounds.data_norm),
                                          ("y_bound", bounds.y_bound))
                 if name in auto
                 if value is not None and (value <= grid[0] or value >= grid[-1])]
        if edges:
            warn_user(
                f"the private {' and '.join(edges)} fell on the edge of its public grid "
                f"[{grid[0]:.2g}, {grid[-1]:.2g}]: n * epsilon is too small for private "
                "bounds, or the values are outside the grid. Declare a public "
                f"{edges[0]}, or raise epsilon or bounds_fraction.",
                NoiseDominatedWarning)

    def _validate(self, X, y, finite_at_build: bool = False):
        """``(X, y)`` checked as scikit-learn does; float32 ``X`` stays float32 (the
        solvers convert it one block of rows at a time, every sum is in float64), and a
        ``numpy.memmap`` stays mapped. A dask ``X`` is checked lazily
        (:meth:`_validate_lazy`). ``finite_at_build``: nothing reads ``X`` before
        :meth:`Problem.build <skdp.solvers.Problem.build>`, which refuses a NaN or
        infinite entry (scikit-learn's message) from the row norms it computes
        anyway, so scikit-learn's check (one more pass over ``X``) is left to it."""
        if is_dask_array(X):
            return self._validate_lazy(X, y)
        return validate_data(
            self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
            y_numeric=self._y_numeric, multi_output=False,
            ensure_all_finite=not finite_at_build,
        )

    def _validate_lazy(self, X, y):
        """Validate a dask ``X`` without gathering it: its shape and dtype, and (one pass,
        chunk by chunk) the finiteness check with scikit-learn's error. ``y`` is already
        in memory (:meth:`_fit`) and gets scikit-learn's checks."""
        import dask
        import dask.array as da

        if X.ndim != 2:
            raise ValueError(f"Expected a 2D array for X, got a {X.ndim}D dask array.")
        if any(math.isnan(c) for c in X.chunks[0] + X.chunks[1]):
            raise ValueError("X is a dask array with unknown chunk sizes; call "
                             "X.compute_chunk_sizes() first.")
        n, d = (int(v) for v in X.shape)
        if n < 1 or d < 1:
            raise ValueError(f"Found array with shape {X.shape}: at least one sample and "
                             "one feature are required.")
        if X.dtype.kind not in "biuf":
            raise ValueError(f"X is a dask array of dtype {X.dtype}; skdp needs numbers.")
        if X.dtype not in (np.float64, np.float32):
            X = X.astype(np.float64)  # lazy, chunk by chunk
        has_nan, has_inf = dask.compute(da.isnan(X).any(), da.isinf(X).any())
        if has_nan or has_inf:
            raise ValueError(non_finite_message(bool(has_nan), X.dtype))
        y = _check_y(y, multi_output=False, y_numeric=self._y_numeric, estimator=self)
        if y.shape[0] != n:
            raise ValueError("Found input variables with inconsistent numbers of samples: "
                             f"[{n}, {y.shape[0]}]")
        self.n_features_in_ = d
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return X, y

    def _fit_planned(self, X, y, solver, spec, prepared, bounds, random_state,
                     on_steps=None):
        n_features = spec.n_params - (1 if self.fit_intercept else 0)
        if X.shape != (spec.n_samples, n_features):
            raise PrivacyAccountingError(
                f"X has shape {X.shape} after validation but was planned as "
                f"({spec.n_samples}, {n_features})."
            )
        Y, loss, label_attrs = self._encode_targets(y, bounds)
        if Y.shape[1] != spec.n_outputs:
            raise PrivacyAccountingError(
                f"the targets have {Y.shape[1]} outputs but {spec.n_outputs} were planned."
            )
        # Rows are clipped to data_norm (in the data_norm_ord norm) and the intercept
        # feature (value data_norm) is appended implicitly: X is neither copied nor modified.
        problem = Problem.build(
            X, Y, spec, data_norm=bounds.data_norm,
            intercept=bounds.data_norm if self.fit_intercept else 0.0, on_steps=on_steps,
        )
        result = solver.solve(
            problem, prepared[1].budget, random_state,
            accounting=self.accounting, relation=self.neighboring, prepared=prepared,
        )
        # Independent re-accounting of the ledger the solver says it ran.
        spent = result.ledger.spent()
        budget = result.ledger.budget
        if budget.is_private and not spent.within(budget):
            raise PrivacyAccountingError(
                f"re-accounting the ledger gives (epsilon, delta) = {tuple(spent)} beyond "
                f"the budget ({budget.epsilon}, {budget.delta})."
            )
        return result

    def _set_fitted(self, result, solver, spec, label_attrs, bounds, ledger, spent):
        secure = getattr(self, "secure", False)
        n_features = spec.n_params - (1 if self.fit_intercept else 0)
        W = result.coef
        if secure:
            # Post-processing with public quantities only (the plan's noise scale).
            W = snap_release(W, solver.release_noise_scale(result.plan))
        # Everything below is set only after the whole fit succeeded.
        for name, value in label_attrs.items():
            setattr(self, name, value)
        coef = np.ascontiguousarray(W[:n_features].T)
        intercept = (W[n_features] * bounds.data_norm if self.fit_intercept
                     else np.zeros(W.shape[1]))
        if self._y_numeric:
            # Single-target regression: scikit-learn's shapes (n_features,) and a float;
            # the (public or private) centre of y is added back.
            coef, intercept = coef[0], float(intercept[0]) + bounds.y_centre
            self.y_bound_ = bounds.y_bound
            self.y_centre_ = bounds.y_centre
        self.coef_ = coef
        self.intercept_ = intercept
        self.data_norm_ = bounds.data_norm
        self.n_iter_ = result.n_iter
        self.solver_ = solver
        self.privacy_ledger_ = ledger
        self.privacy_spent_ = spent
        self.privacy_plan_ = result.plan

    def _decision_scores(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=False)
        # The model is a function of the clipped row s_i x_i, s_i = min(1, data_norm/||x_i||).
        # Rows are scaled before the product so that huge finite rows cannot overflow.
        with np.errstate(divide="ignore"):
            scale = np.minimum(1.0, self.data_norm_ / row_norms(X, self._data_norm_ord()))
        Xs = sp.diags(scale) @ X if sp.issparse(X) else X * scale[:, None]
        coef = np.atleast_2d(self.coef_)
        return np.asarray(Xs @ coef.T) + np.atleast_1d(self.intercept_)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = False
        return tags
