"""The public plan of a fit: everything an estimator decides before it reads ``X``.

:class:`PrivacyPlanning` holds the planning half of :class:`skdp._base.BaseDPLinearModel`:
from the shape of ``X``, the label set and the parameters only, it chooses the solver,
checks the budget, builds the :class:`~skdp.solvers.ProblemSpec` and calibrates the plan
(with declared bounds), or splits the budget between the private bound estimates and
the fit and builds the reservation an accountant is charged before any value of ``X`` is
read (with ``"auto"`` bounds). Nothing here reads a value of ``X`` or of a regressor's
``y``; a classifier's label set is public (declared, or read from ``y`` and said so).
The fit transaction (charge, estimate the bounds, solve, re-account, set the attributes)
is in :mod:`skdp._base`; :func:`skdp.model_selection.privacy_cost` prices workflows from
this half alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Real
from types import MappingProxyType

import numpy as np
from dp_accounting import dp_event as dpe

from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import Constraint, L1Ball, L2Ball, LpBall, Unconstrained, dual_exponent
from skdp.losses import GLMLoss
from skdp.mechanisms import bound_event, mean_event
from skdp.mechanisms.quantile import SLACK
from skdp.privacy.accounting import PrivacyLedger, PureDpEvent
from skdp.privacy.budget import Budget, check_budget
from skdp.privacy.composition import CompositeLedger
from skdp.solvers import SOLVERS, ProblemSpec, accepting_solvers, get_solver
from skdp.solvers._capabilities import accepts_any

__all__ = ["BOUND_WEIGHTS", "GRADIENT_BOUND_WEIGHTS", "NOISE_DOMINATED", "BoundRules",
           "FitBounds", "PrivacyPlanning", "bounds_share", "noise_ratio"]

#: The split of the bounds' budget among the estimates (proportional; public;
#: docs/privacy.md, 1.6). The scale of |y| clips the centre's mean, so an error in it
#: either way moves every prediction: it gets twice the share and a slack of
#: ``SCALE_SLACK`` (exact law on diabetes' 309 targets at epsilon 1: P(scale < 25) from
#: 1.3e-2 to 1.2e-4 and P(scale > 1000) from 3.2e-4 to 6e-6).
BOUND_WEIGHTS = MappingProxyType(
    {"data_norm": 1.0, "y_scale": 2.0, "y_centre": 1.0, "y_bound": 1.0})
SCALE_SLACK = 20.0
#: The split for fits whose noise grows with ``y_bound``: DPHuberRegressor (its gradient
#: bound is ``huber_delta * data_norm``, ``huber_delta`` half of ``y_bound``) and DP-GD on
#: the squared loss (clip ``SQUARED_CLIP_SHARE * y_bound * data_norm``). A scale of
#: ``|y|`` that stops below the targets leaves a centre near 0 (a fit that predicts about
#: 0), so both it and ``y_bound`` get more. Diabetes at epsilon 1 (unseeded fits):
#: DPHuberRegressor (``huber_delta=0.7``) 6 fits per 3,000 below R^2 = -1 with
#: :data:`BOUND_WEIGHTS`, 2 per 8,000 with these, 663 per 4,000 with ``y_bound`` 2 and
#: the scale at 1; ``DPLinearRegression(solver="gd")`` (500 fits) median / p5 / min 0.312
#: / 0.074 / -0.481 with these against 0.230 / -0.130 / -0.731 with BOUND_WEIGHTS (the
#: sufficient statistics, whose noise does not grow with the clip, lose with them: 24
#: against 5 per 3,000 below -1). The price: the row bound's search, with the least,
#: stops below the rows in 39% of Huber's fits there (row normalisation; docs/privacy.md
#: 1.6): declare ``data_norm`` where row norms matter.
GRADIENT_BOUND_WEIGHTS = MappingProxyType({**BOUND_WEIGHTS, "y_scale": 3.0, "y_bound": 2.0})


#: The intercept is the coefficient of a constant feature of value ``INTERCEPT_SCALE *
#: data_norm``. The value trades the intercept's speed (the objective's curvature along it
#: grows like its square) against every release's noise (the augmented row bound
#: ``sqrt(1 + s^2) data_norm`` enters every sensitivity). Measured over unseeded default
#: fits (docs/design.md, "Estimator semantics"): 1/2 raised the medians of the tails'
#: regression tasks (diabetes, epsilon 5: 0.387 -> 0.419) and of digits with unit rows
#: (0.759 -> 0.809), with breast cancer unchanged; 1/4 stalls the intercept on raw
#: breast cancer.
INTERCEPT_SCALE = 0.5

#: ``threshold_fraction="auto"``: the share of the fit's ``epsilon`` (what is left after
#: the private bounds) a private binary classifier spends choosing its intercept
#: (:func:`skdp.mechanisms.private_threshold`). Measured on raw breast cancer at epsilon 1
#: (docs/algorithms/threshold.md): 0.2 of the total gave 0.895 / p5 0.842, 0.15 gave
#: 0.889 / p5 0.813; a quarter of the fit's 0.7 is 0.175 of the total.
THRESHOLD_FRACTION = 0.25
#: ... when its counts' noise (scale ``2 / epsilon_t``) is at most this share of ``n``
#: (``n epsilon_t >= 40``); below it the choice is near random (50 rows at epsilon 1:
#: p5 0.23 against 0.36 without it).
THRESHOLD_NOISE_SHARE = 0.05
#: ... and no more than the share whose counts' noise is this share of ``n`` (``2 /
#: (fraction epsilon) = THRESHOLD_PRECISION n``): on large data a small share already
#: places the intercept to a thousandth of the rows, and the rest goes to the solver.
#: Below ``n epsilon = 8000`` the quarter binds. Covertype-shaped, epsilon 1, DP Newton
#: (10 unseeded fits): a share of 0.05 gave the quarter's accuracy at n = 30,000 (0.641
#: both) and 200,000 (0.643 both).
THRESHOLD_PRECISION = 1e-3

#: ``bounds_fraction="auto"``: each estimate gets ``n epsilon`` of at least this (about
#: 10 noise scales of its count queries), within ``AUTO_FRACTIONS`` of ``epsilon``.
AUTO_RECORDS = 30.0
AUTO_FRACTIONS = (0.2, 0.4)


def bounds_share(fraction, epsilon: float, n_estimates: float, n_samples: int) -> float:
    """The part of ``epsilon`` the private bounds get: ``fraction * epsilon``, or for
    ``"auto"`` ``AUTO_RECORDS * k / n`` (``k`` the estimates' total weight in the fit's
    :attr:`BoundRules.weights`, :data:`BOUND_WEIGHTS` by default, so that a weight-1
    estimate gets ``n epsilon = 30``) clipped to
    ``[0.2 epsilon, 0.4 epsilon]``. Public: ``epsilon``, the weights and ``n`` only.

    Measured on diabetes (309 training rows, four estimates, 100 unseeded fits each;
    docs/privacy.md 1.6): at epsilon 1 a fraction of 0.2 leaves each estimate
    ``n epsilon = 15`` and the median R^2 at -0.74 (DPLinearRegression) / -1.34 (Huber),
    0.4 gives 0.07 / 0.07 and 0.6 starves the fit (-0.22, Huber); at epsilon 5, 0.2 gives
    0.388 / 0.407 against 0.354 / 0.392 with 0.4. The floor of 0.2 binds wherever ``n
    epsilon`` exceeds 150 records per unit of weight; lowering it to 0.05 (300 unseeded
    fits each, median / p5) cost raw breast cancer at epsilon 1 0.895 / 0.813 -> 0.883 /
    0.626, DPHuberRegressor on diabetes at epsilon 5 0.428 / 0.360 -> 0.414 / 0.336 and
    DPLasso there 0.327 / 0.242 -> 0.269 / 0.146, and gained only on digits with unit
    rows at epsilon 2 (60 fits: 0.804 -> 0.821): a bound from more budget is worth more
    than the budget it takes from the solver.
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


#: A fit whose :func:`noise_ratio` is at least this warns that it is noise-dominated:
#: the noise of one release of the mean is then as large as any signal it could carry.
NOISE_DOMINATED = 1.0


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
class BoundRules:
    """What the ``"auto"`` bounds' searches aim at: public utility rules (the guarantee
    holds for any of them; docs/privacy.md, "Private bounds").

    Attributes
    ----------
    data_norm_quantile : float
        ``data_norm="auto"`` targets this quantile of the row norms at a finite epsilon
        (the maximum at ``epsilon=inf``; see :func:`skdp.mechanisms.target_count`).
    y_bound_quantile : float
        ``y_bound="auto"`` targets this quantile of ``|y - centre|`` (regressors).
    y_bound_widen_below : float
        ``y_bound="auto"`` is doubled when its search's target count is at most this
        share of ``n`` (0: never).
    y_bound_slack : float
        The slack of the ``y_bound`` search (:data:`skdp.mechanisms.SLACK`).
    y_bound_octaves : float or None
        With an intercept, the ``y_bound`` search starts this many octaves below the
        released scale of ``|y|`` (``lowest`` of :func:`skdp.mechanisms.private_bound`;
        ``None``: the whole grid). Fewer grid points below the data are fewer chances to
        stop there: on diabetes at epsilon 1 (1500 unseeded fits each) 5 octaves cut
        ``DPHuberRegressor``'s fits with ``y_bound_ < 10`` from 17% to 2% and raised
        its median from 0.112 to 0.150 and its p5 from -0.356 to -0.239, and
        ``DPLinearRegression``'s p5 from -0.213 to -0.191 (the rarer fits below -1 stay
        at 0.2-0.4%). A spread of the targets below
        1/32 of their magnitude is then bounded by that floor (a looser bound, never a
        clipped target beyond it): declare ``y_bound`` for such targets.
    weights : Mapping[str, float]
        The split of the bounds' budget among the estimates (``data_norm``, ``y_scale``,
        ``y_centre``, ``y_bound``; proportional, :func:`bounds_share`).
    """

    data_norm_quantile: float = 0.75
    y_bound_quantile: float = 1.0
    y_bound_widen_below: float = 0.0
    y_bound_slack: float = SLACK
    y_bound_octaves: float | None = 5.0
    weights: Mapping[str, float] = field(default_factory=lambda: BOUND_WEIGHTS)


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




@dataclass(frozen=True)
class NoiseScaledAlpha:
    """``alpha="auto"`` of a solver whose error grows like ``1 / alpha`` (DP-GD): the L2
    strength, in units of the bounds, that follows the noise of one private release,

    ``alpha = clip(scale * sqrt(D ln(1 / delta)) / (n epsilon), low, high)``,

    with ``D`` the number of coefficients (``(d + 1) K``), ``n`` the number of rows and
    ``(epsilon, delta)`` the estimator's budget: public quantities only (``n`` is public
    under replace-one neighbours). Derivation (docs/algorithms/gd.md, "alpha='auto'"):
    DP-GD's stationary noise costs about ``D sigma^2 / alpha`` in the objective and the
    penalty's bias about ``alpha ||w*||^2``, with ``sigma`` of order ``sqrt(ln(1 / delta))
    / (n epsilon)`` per coordinate, so the best ``alpha`` falls like ``sqrt(D ln(1 /
    delta)) / (n epsilon)``; ``scale`` absorbs the unknown ``||w*||`` and was measured
    (on breast cancer, where smaller values lost accuracy and tail at epsilon 1.4).
    Below ``low`` accuracy had stopped improving in every measurement while the passes
    kept growing like ``sqrt(1 / alpha)``; ``high`` is the former fixed default, kept for
    small ``n epsilon``. ``epsilon = inf`` gives ``low``, the limit of the rule (so a
    grid over ``epsilon`` that ends at ``inf`` stays continuous), whatever ``delta``; a
    finite pure-DP budget (``delta = 0``) gives ``high``.
    """

    scale: float = 0.25
    low: float = 1e-3
    high: float = 1e-2

    def __call__(self, n_samples: int, n_coefs: int, epsilon: float, delta: float
                 ) -> float:
        if math.isinf(epsilon):
            return self.low
        if not 0.0 < delta < 1.0:
            return self.high
        value = self.scale * math.sqrt(n_coefs * math.log(1.0 / delta)) / (
            n_samples * epsilon)
        return min(self.high, max(self.low, value))


class PrivacyPlanning:
    """The planning half of an skdp estimator: public facts in, solver, budget, spec and
    plan (or the bounds' budget split and reservation) out.

    Mixed into :class:`skdp._base.BaseDPLinearModel`, which provides the parameters
    (``epsilon``, ``delta``, ``solver``, the bounds, ...), ``_encode_targets`` and, for
    classifiers, ``_check_classes``.
    """

    #: What the ``"auto"`` bounds aim at and how they split their budget (public).
    _bound_rules = BoundRules()

    def _rules_for(self, solver) -> BoundRules:
        """The bound rules of a fit that runs ``solver`` (public; the class's
        :attr:`_bound_rules` unless an estimator tunes them per solver)."""
        return self._bound_rules

    #: ``alpha="auto"`` by solver name (``"default"`` for the others), in units of the
    #: bounds: a number, or a rule of the public shape and budget
    #: (:class:`NoiseScaledAlpha`); ``None`` where the estimator offers no ``"auto"``.
    _auto_alpha: Mapping[str, float | NoiseScaledAlpha] | None = None

    def _alpha(self, solver, n_samples: int, n_coefs: int) -> float:
        """The ``alpha`` of a fit that runs ``solver`` on ``n_samples`` rows with
        ``n_coefs`` coefficients (public): the parameter, or ``"auto"``'s value for that
        solver (:attr:`_auto_alpha`)."""
        if isinstance(self.alpha, str):
            rule = self._auto_alpha.get(solver.name, self._auto_alpha["default"])
            if callable(rule):
                return rule(n_samples, n_coefs, float(self.epsilon), float(self.delta))
            return rule
        return float(self.alpha)

    def _raw_alpha(self, solver, bounds: FitBounds, n_samples: int, n_coefs: int
                   ) -> float:
        """:meth:`_alpha` in the raw units the solver runs in. A number: times
        ``data_norm^2`` with private bounds (:attr:`FitBounds.alpha_scale`), as given with
        declared ones. ``"auto"``: in units of the bounds in both modes (rows divided by
        ``data_norm``, where its values were measured), so times ``data_norm^2`` always.
        Diabetes with the declared ``data_norm=0.2`` and ``y_bound=120`` around the true
        centre (unseeded fits, median / p5 test R^2): DPLinearRegression's DP-GD at
        epsilon 1 0.395 / 0.295 against 0.070 / 0.039 with 5e-2 in raw units (300 fits),
        its statistics at epsilon 5 0.411 / 0.338 against 0.265 / 0.223 with 1e-2 raw
        (0.217 / 0.076 against 0.218 / 0.103 at epsilon 1), DPHuberRegressor at epsilon 1
        0.372 / 0.264 against 0.061 / 0.033 with 5e-2 raw (200 fits)."""
        if isinstance(self.alpha, str):
            return self._alpha(solver, n_samples, n_coefs) * float(bounds.data_norm) ** 2
        return float(self.alpha) * bounds.alpha_scale

    def _solver_name(self, shape: tuple[int, ...] | None):
        """The solver a fit with this public ``(n_samples, n_features)`` (or ``(n_samples,
        n_features, n_outputs)``, as the plan passes it) runs: the ``solver`` parameter
        (an estimator with a ``"solver='auto'"`` rule overrides this; ``shape`` is
        ``None`` where it is not known yet). Callers without ``n_outputs`` (the bounds'
        rules and norm, the out-of-core check) read only what every solver an ``"auto"``
        rule may pick declares alike."""
        return self.solver

    def _settings_allow(self, caps) -> bool:
        """Whether ``secure`` and ``accounting`` (public settings) let a solver of the
        declaration ``caps`` run: what an estimator's ``"auto"`` rule checks before it
        picks that solver."""
        return ((caps.secure or not getattr(self, "secure", False))
                and self.accounting in ("auto", *caps.accounting_methods))

    def _approximate_private(self) -> bool:
        """Whether the budget is a finite ``epsilon`` with ``0 < delta < 1`` (public):
        what an ``"auto"`` rule checks before it picks a solver that needs ``delta > 0``
        and adds noise (DP-GD, DP Newton)."""
        return (isinstance(self.delta, Real) and 0 < self.delta < 1
                and isinstance(self.epsilon, Real) and 0 < self.epsilon < math.inf)

    def _solver(self, shape: tuple[int, ...] | None = None):
        """The solver instance of :meth:`_solver_name` (public: parameters and shape)."""
        return get_solver(self._solver_name(shape))

    def _data_norm_ord(self, solver=None) -> float:
        """The norm of ``data_norm``: by default the norm the solver's guarantee reads.

        ``|<w, x>| <= ||w||_p ||x||_q`` (``1/p + 1/q = 1``) is what bounds scores and
        gradients over an lp ball, so ``"auto"`` measures rows in ``q``: l2 for the l2
        ball and no constraint, ``inf`` for the l1 ball. With ``data_norm="auto"`` (the
        estimator chooses the bound, so it may choose its norm) a solver that declares
        ``row_norm="l2"`` (its sensitivity is an l2 quantity) gets l2 whatever the
        constraint; a declared ``data_norm`` keeps the constraint's dual norm, whatever
        solver the shape selects.

        ``solver``: the fit's. Without it: a fitted estimator's ``data_norm_ord_`` (the
        norm its fit clipped in; one fitted before that attribute existed used the dual
        norm), else the parameter's solver.
        """
        if solver is None and hasattr(self, "data_norm_ord_"):
            return float(self.data_norm_ord_)
        if self.data_norm_ord != "auto":
            return float(self.data_norm_ord)
        if solver is None and not hasattr(self, "solver_"):
            solver = self._solver()  # (a fit from before data_norm_ord_: the dual norm)
        if (solver is not None and solver.capabilities.row_norm == "l2"
                and isinstance(self.data_norm, str)):
            return 2.0
        if self.constraint == "l1":
            return math.inf
        if self.constraint == "lp" and self.p is not None:
            return dual_exponent(self.p)
        return 2.0

    def _intercept_feature(self, data_norm: float) -> float:
        """The constant feature's value: :data:`INTERCEPT_SCALE` times ``data_norm`` (0
        without an intercept); ``intercept_`` is its coefficient times this value."""
        return INTERCEPT_SCALE * float(data_norm) if self.fit_intercept else 0.0

    def _row_norm_bound(self, data_norm: float, ord: float) -> float:
        # The augmented row (x, c) with ||x||_q <= D and c = s D (INTERCEPT_SCALE s) has
        # q-norm at most D (1 + s^q)^(1/q): sqrt(1 + s^2) D = 1.118 D in l2 at s = 1/2,
        # D in l-inf (s <= 1).
        if not self.fit_intercept:
            return float(data_norm)
        if ord == math.inf:
            return float(data_norm) * max(1.0, INTERCEPT_SCALE)
        return float(data_norm) * (1.0 + INTERCEPT_SCALE ** ord) ** (1.0 / ord)

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
                      *, calibrate: bool = True, intercept_only: bool | None = None,
                      thresholded: bool = False):
        """Everything a fit decides before reading ``X``: solver, budget, spec and plan.

        Used by ``fit`` (to charge a budget accountant before any value of ``X`` is read)
        and by :func:`skdp.model_selection.privacy_cost` (to price a workflow). Without
        ``calibrate`` only the settings are checked (``prepared`` is ``None``): a fit with
        ``"auto"`` bounds plans its solver once, after the bounds are estimated.
        ``intercept_only``: whether solver ``"intercept_only"`` replaces the solver
        (``None``: :meth:`_intercept_only_instead` decides from this plan's budget; a fit
        with ``"auto"`` bounds passes the decision of :meth:`_bounds_plan`).
        ``thresholded``: whether the private threshold replaces the solver's intercept
        (:meth:`_threshold_epsilon`); with it, as for an estimator without intervals or
        with several outputs, the spec says the fit reads no standard errors
        (``ProblemSpec.inference``).
        """
        bounds = self._placeholder_bounds() if bounds is None else bounds
        tilt = 0.0 if self.tilt is None else float(self.tilt)
        if not tilt >= 0:
            raise ValueError(
                f"tilt must be positive (or None for plain ERM), got {self.tilt}: negative "
                "tilts (the outlier-robust regime of tilted ERM) make the objective "
                "non-convex, and no sensitivity bound of skdp covers them."
            )
        # The label set first: the number of outputs is part of the shape that an
        # estimator's solver="auto" rule reads.
        loss, n_outputs, label_attrs = self._public_targets(y, bounds)
        solver = self._solver((n_samples, n_features, n_outputs))
        row_norm_ord = self._data_norm_ord(solver)
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
                + ("(solver='auto''s choice for these settings) "
                   if getattr(self, "solver", None) == "auto" else "")
                + f"does not declare; set secure=False, or solver to one of {capable}."
            )
        if budget is None:
            budget = check_budget(
                self.epsilon, self.delta, needs_delta=solver.capabilities.needs_delta,
                n_samples=n_samples, solver_name=solver.name,
            )
        n_params = n_features + (1 if self.fit_intercept else 0)
        constraint = self._make_constraint(bounds.radius_scale)
        spec = ProblemSpec(
            n_samples=n_samples,
            n_params=n_params,
            n_outputs=n_outputs,
            # Output perturbation penalises (and constrains) the intercept too: its
            # sensitivity argument needs strong convexity in every coordinate.
            n_penalized=(n_params if solver.capabilities.intercept == "penalized"
                         or self._intercept_constrained
                         else n_features),
            row_norm_bound=self._row_norm_bound(bounds.data_norm, row_norm_ord),
            loss=loss,
            constraint=constraint,
            alpha=self._raw_alpha(solver, bounds, n_samples, n_params * n_outputs),
            tilt=tilt,
            adversarial_radius=float(self.adversarial_radius or 0.0),
            adversarial_norm=float(self.adversarial_norm),
            intercept_feature=self._intercept_feature(bounds.data_norm),
            row_norm_ord=row_norm_ord,
            # Public: the estimator's class, the label set and the threshold decision
            # (a constraint rules standard errors out too: ProblemSpec.standard_errors).
            inference=(getattr(self, "_offers_intervals", False) and n_outputs == 1
                       and not thresholded),
        )
        if intercept_only is None:
            intercept_only = self._intercept_only_instead(spec, budget)
        if intercept_only:
            # Public: n, the number of coefficients and the budget (noise_ratio).
            solver = SOLVERS["intercept_only"]()
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

    def _intercept_only_instead(self, spec: ProblemSpec, budget: Budget) -> bool:
        """Whether the fit releases the intercept-only model instead of running its solver:
        ``noise_dominated="intercept_only"`` and a planned fit whose :func:`noise_ratio`
        is at least :data:`NOISE_DOMINATED` (public: ``n``, the number of coefficients
        and the budget). docs/algorithms/intercept_only.md."""
        # Estimators pickled before the parameter existed keep running their solver; an
        # accounting method the release has no reading for ("basic") keeps it too.
        return (getattr(self, "noise_dominated", "fit") == "intercept_only"
                and self.accounting in ("auto", *SOLVERS["intercept_only"].capabilities
                                        .accounting_methods)
                and noise_ratio(spec.n_samples, spec.n_params, budget) >= NOISE_DOMINATED)

    def _bounds_plan(self, n_samples: int, n_features: int, y):
        """For ``"auto"`` bounds: the total budget, its split, and the reservation charged
        before any data is read.

        The bound estimates get :func:`bounds_share` of ``epsilon`` (pure DP, split in
        proportion to :attr:`BoundRules.weights`), the fit the rest at the full delta; the two
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
        # Validates every setting (solver, budget, constraint) before anything is charged;
        # the spec (placeholder bounds) does not depend on the budget.
        _, total, spec, _, _ = self._privacy_plan(n_samples, n_features, y, calibrate=False)
        names = self._auto_bounds()
        if not total.is_private:
            unaccounted = PrivacyLedger(dpe.NonPrivateDpEvent(), "pure", self.neighboring, total)
            return (total, {k: math.inf for k in names}, total,
                    CompositeLedger((("fit", unaccounted),), total), False, 0.0)
        shape = (n_samples, n_features)
        shares, fit_budget = self._split_budget(total, names, shape)
        intercept_only = self._intercept_only_instead(
            spec, self._decision_budget(total, shape))
        threshold = self._threshold_epsilon(fit_budget, spec, intercept_only)
        if intercept_only:
            # Public decision (noise_ratio of the fit the solver would get). The
            # intercept-only model reads no feature: no budget goes to data_norm, nor,
            # without an intercept (the zero model), to the targets' bounds; the fit gets
            # what they would have spent.
            names = tuple(k for k in names if k != "data_norm" and self.fit_intercept)
            shares, fit_budget = self._split_budget(total, names, shape)
        fit_budget = self._less(fit_budget, threshold, total, sum(shares.values()))
        # The fit planned with the placeholder bounds (calibrated once, and cached for the
        # real plan when the two agree).
        planned = self._privacy_plan(n_samples, n_features, y, None, fit_budget,
                                     intercept_only=intercept_only,
                                     thresholded=bool(threshold))[3][1]
        reservation = CompositeLedger((*self._bounds_parts(shares, total), ("fit", planned),
                                       *self._threshold_parts(threshold)), total)
        return total, shares, fit_budget, reservation, intercept_only, threshold

    def _threshold_epsilon(self, fit_budget: Budget, spec: ProblemSpec,
                           intercept_only: bool) -> float:
        """The ``epsilon`` a binary classifier spends choosing its intercept privately:
        ``threshold_fraction`` of the fit's budget (after the bounds; the solver gets the
        rest). 0 when it does not: regressors, more than two classes, no intercept, the
        intercept-only model, a solver whose intercept lies in its constraint,
        ``epsilon=inf``; for ``"auto"`` also ``solver="newton"`` set by the user (its
        released Hessian describes its own intercept, which conf_int reads) and fits
        whose counts' noise exceeds :data:`THRESHOLD_NOISE_SHARE` of ``n``; ``"auto"``
        takes at most the share that places the intercept to
        :data:`THRESHOLD_PRECISION` of the rows. Public: parameters and shapes only. The
        intercept-only fallback is decided before this share is taken."""
        fraction = getattr(self, "threshold_fraction", 0.0)
        solver = self._solver((spec.n_samples, spec.n_params - int(self.fit_intercept),
                               spec.n_outputs))
        # The intercept-only model (chosen or the fallback) has no direction to threshold;
        # a constrained intercept must stay in the solver's constraint set.
        if (self._y_numeric or not self.fit_intercept or intercept_only
                or solver.name == "intercept_only" or self._intercept_constrained
                or solver.capabilities.intercept == "constrained"
                or not fit_budget.is_private or spec.n_outputs != 1 or fraction == 0):
            return 0.0
        if fraction == "auto":
            noise = 2.0 / (THRESHOLD_FRACTION * fit_budget.epsilon)
            chosen_newton = solver.name == "newton" and not (
                isinstance(self.solver, str) and self.solver == "auto")
            if chosen_newton or noise > THRESHOLD_NOISE_SHARE * spec.n_samples:
                return 0.0
            # The smallest share whose counts' noise 2 / (fraction epsilon) is
            # THRESHOLD_PRECISION n, capped at the quarter.
            fraction = min(THRESHOLD_FRACTION, 2.0 / (
                THRESHOLD_PRECISION * spec.n_samples * fit_budget.epsilon))
        return float(fraction) * fit_budget.epsilon

    @staticmethod
    def _less(budget: Budget, epsilon: float, total: Budget, spent: float = 0.0) -> Budget:
        """``budget`` with ``epsilon`` less, rounded down until ``spent + epsilon`` and the
        result add up to at most the total (as the ledger adds them)."""
        if not epsilon:
            return budget
        rest = budget.epsilon - epsilon
        while spent + rest + epsilon > total.epsilon:
            rest = math.nextafter(rest, 0.0)
        return Budget(rest, budget.delta)

    def _threshold_parts(self, epsilon: float) -> tuple:
        """The ``("threshold", ledger)`` part of a fit's composite ledger (none at 0)."""
        if not epsilon:
            return ()
        # One report-noisy-max (skdp.mechanisms.private_threshold): pure epsilon-DP.
        return (("threshold", PrivacyLedger(PureDpEvent(epsilon), "pure",
                                            self.neighboring, Budget(epsilon, 0.0))),)

    def _declared_plan(self, n_samples: int, n_features: int, y):
        """The plan of a fit with declared bounds: ``(solver, total, spec, prepared,
        label_attrs, threshold, ledger)``; ``ledger`` is what the fit charges (the
        solver's, and the private threshold's part when there is one)."""
        bounds = self._declared_bounds()
        # Validates every setting and the budget before anything is charged.
        _, total, spec, _, _ = self._privacy_plan(n_samples, n_features, y, bounds,
                                                  calibrate=False)
        intercept_only = self._intercept_only_instead(spec, total)
        threshold = self._threshold_epsilon(total, spec, intercept_only)
        solver, _, spec, prepared, label_attrs = self._privacy_plan(
            n_samples, n_features, y, bounds, self._less(total, threshold, total),
            intercept_only=intercept_only, thresholded=bool(threshold))
        ledger = (CompositeLedger((("fit", prepared[1]), *self._threshold_parts(threshold)),
                                  total) if threshold else prepared[1])
        return solver, total, spec, prepared, label_attrs, threshold, ledger

    def _decision_budget(self, total: Budget, shape: tuple[int, int]) -> Budget:
        """The budget the solver gets with every ``"auto"`` bound estimated: what decides
        :meth:`_intercept_only_instead` and the noise-dominated warning (public)."""
        names = self._auto_bounds()
        if not names or not total.is_private:
            return total
        return self._split_budget(total, names, shape)[1]

    def _split_budget(self, total: Budget, names: tuple, shape: tuple[int, int]
                      ) -> tuple[dict, Budget]:
        """The bound estimates' shares of ``epsilon`` (:func:`bounds_share`, split by the
        :attr:`BoundRules.weights` of the solver this public ``(n_samples, n_features)``
        runs, as :meth:`skdp._base.BaseDPLinearModel._estimate_bounds` reads its rules)
        and the fit's budget (the rest, all of ``delta``)."""
        if not names:
            return {}, total
        rules = self._rules_for(self._solver(shape))
        weights = {k: rules.weights[k] for k in names}
        eps_bounds = bounds_share(self.bounds_fraction, total.epsilon,
                                  sum(weights.values()), shape[0])
        return (_split(eps_bounds, weights),
                self._less(total, eps_bounds, total))

    def _bounds_parts(self, shares: dict, total: Budget) -> tuple:
        """The ``("bounds", ledger)`` part of a fit's composite ledger (none without a
        bound estimate)."""
        return (("bounds", self._bounds_ledger(shares, total)),) if shares else ()

    def _bounds_ledger(self, shares: dict, total: Budget) -> PrivacyLedger:
        events = [mean_event(eps) if name == "y_centre" else bound_event(eps)
                  for name, eps in shares.items()]
        return PrivacyLedger(dpe.ComposedDpEvent(events), "pure", self.neighboring,
                             Budget(sum(shares.values()), 0.0))

    def _planned_ledger(self, n_samples: int, n_features: int, y):
        """The ledger a fit charges before reading ``X`` (a reservation for auto bounds)."""
        if self._auto_bounds():
            return self._bounds_plan(n_samples, n_features, y)[3]
        return self._declared_plan(n_samples, n_features, y)[-1]

    def _declared_bounds(self) -> FitBounds:
        y_bound = getattr(self, "y_bound", None)
        return FitBounds(float(self.data_norm), None if y_bound is None else float(y_bound),
                         0.0)
