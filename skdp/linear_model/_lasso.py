"""Differentially private Lasso: least squares over an l1 ball."""

from __future__ import annotations

import math
from dataclasses import replace
from numbers import Real

from skdp._params import POSITIVE, declared_init
from skdp._sklearn_compat import StrOptions
from skdp.linear_model._docs import shared_docs
from skdp.linear_model._parameters import BOUNDS, PRIVACY, RUN_OPTIONS
from skdp.linear_model._regression import STATISTICS_BOUND_RULES
from skdp.linear_model._regressor import BaseDPRegressor
from skdp.losses import SquaredLoss
from skdp.solvers import SufficientStatistics

__all__ = ["DPLasso"]

#: DPLinearRegression's rules for the statistics, with the y_bound search's slack of 4:
#: the l1 ball (in units of ``y_bound_ / data_norm_``) loosens as ``y_bound_`` doubles,
#: and on diabetes (600 unseeded fits each) the slack of 12 lowered the median R^2 at
#: epsilon 5 from 0.328 to 0.283 (p5 0.246 to 0.196) and at epsilon 1 from 0.083 to 0.068
#: (its minimum rose from -3.44 to -0.94).
LASSO_STATISTICS_RULES = replace(STATISTICS_BOUND_RULES, y_bound_slack=4.0)


@shared_docs
class DPLasso(BaseDPRegressor):
    """Lasso with differential privacy: least squares over an l1 ball of public radius.

    Minimises ``mean_i (y_i - <w, x_i> - b)^2 / 2 + (alpha / 2) ||w||^2`` over
    ``||(w, b')||_1 <= radius``. With many features (``d`` above about ``sqrt(n / 2)``)
    the default runs a private solver built for the l1 geometry, whose error grows like
    ``log(d)`` instead of ``sqrt(d)``: the tool for sparse, high-dimensional data; with
    few it solves the Lasso on one noisy release of the sufficient statistics.

    Parameters
    ----------
    <<epsilon>>
    <<delta:1e-5>>
        ``"frank_wolfe"`` and ``"sufficient_statistics"`` are pure DP at ``delta=0``
        (and ``solver="auto"`` then runs ``"frank_wolfe"`` at a finite epsilon); the
        mirror-descent solvers need ``delta > 0``.
    solver : "auto", str or solver object, default="auto"
        A name from :data:`skdp.solvers.SOLVERS` or a solver instance. ``"auto"`` (public:
        the shape and the settings) runs ``"sufficient_statistics"`` (one noisy release of
        ``X'X`` and ``X'y``, the Lasso solved on it) where ``d (d + 1) / 2`` (about the
        size of the released Gram matrix) is at most ``n / 4`` and ``delta > 0``, and
        ``"frank_wolfe"`` (error growing like ``log(d)``) otherwise, or where the
        statistics cannot honour ``secure`` or ``accounting``: the crossover measured in
        docs/algorithms/sufficient_statistics.md. At ``epsilon=inf`` it runs the
        statistics up to their 4096 parameters: the exact Lasso.

        <<solvers>>

    radius : float, default=1.0
        Public l1 radius. It plays the role of scikit-learn's ``alpha``: for every
        ``Lasso(alpha=a)`` solution ``w_a`` the constrained problem with
        ``radius = ||w_a||_1`` has the same solution (Lagrangian duality), and a smaller
        radius is a stronger penalty. Choose it from public knowledge; tuning it on the
        private data costs privacy.
    <<alpha:0.0>>
        An optional elastic-net term; ``0`` is the plain constrained Lasso.
    <<bounds>>
    <<y_bound>>
    <<fit_intercept>>
        Its coefficient ``b'`` (``intercept_ = data_norm * b'``) counts towards the l1
        radius, so that the feasible set stays bounded.
    data_norm_ord : "auto" or float >= 1, default="auto"
        Norm in which ``data_norm`` bounds the rows; ``"auto"`` is l-infinity, the dual
        of the l1 ball (scores satisfy ``|<w, x>| <= ||w||_1 ||x||_inf``), except with
        ``data_norm="auto"`` and ``"sufficient_statistics"``, whose guarantee reads l2
        rows (a declared ``data_norm`` keeps its l-infinity meaning whatever solver the
        shape selects). ``data_norm_ord_`` holds the norm used.
    <<run_options>>

    <<attributes:regressor>>

    Notes
    -----
    The privacy unit is one example (row and label). Sparse CSR input stays sparse.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLasso
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 50))
    >>> y = np.clip(X[:, 0] - 0.5 * X[:, 1], -1, 1)
    >>> reg = DPLasso(epsilon=1.0, radius=2.0).fit(X, y)
    >>> reg.solver_.name  # 50 features: 1275 Gram entries above 2000 / 4
    'frank_wolfe'
    """

    # The losses and constraint kinds this estimator offers (its solver list in the
    # docstring and its solver validation come from the solvers' declarations).
    _solver_losses = ('squared',)
    _solver_constraints = ("l1",)

    # The data_norm text, from the two rule records (_rules_for picks one per solver).
    _data_norm_factor = (
        f"the row norms' {BaseDPRegressor._bound_rules.data_norm_quantile:g}-quantile "
        f"({LASSO_STATISTICS_RULES.data_norm_quantile:g} with the statistics; the maximum "
        "at epsilon=inf)")
    _intercept_constrained = True
    # Fixed parts of the model: an l1 ball, plain ERM.
    constraint = "l1"
    p = None
    tilt = None
    adversarial_radius = None
    adversarial_norm = 2

    _parameter_constraints: dict = {
        **BaseDPRegressor._parameter_constraints,
        "solver": [StrOptions({"auto"}), *BaseDPRegressor._parameter_constraints["solver"]],
        "radius": POSITIVE,
    }

    def _solver_name(self, shape):
        """``solver="auto"``: ``"sufficient_statistics"`` where its ``d (d + 1) / 2``
        released Gram entries number at most ``n / 4`` and ``delta > 0`` (at
        ``epsilon=inf``: up to its declared size, the exact Lasso), else
        ``"frank_wolfe"`` (also while the shape is unknown). Public: the shape,
        ``epsilon`` and ``delta``.

        Measured crossover (unseeded fits, epsilon 1, a 3-sparse linear model on
        uniform features): at ``n = 3000`` the statistics win up to ``d = 20`` (median
        R^2 0.40 against 0.32) and Frank-Wolfe from ``d = 40`` (0.30 against 0.25); the
        rule switches at ``d = 38``. docs/algorithms/sufficient_statistics.md.
        """
        if self.solver != "auto":
            return self.solver
        caps = SufficientStatistics.capabilities
        if shape is None or not self._settings_allow(caps):
            # The statistics cannot honour secure=True or that accounting method (public
            # settings, their declaration): Frank-Wolfe, as the default always did.
            return "frank_wolfe"
        n, d = shape[:2]
        if isinstance(self.epsilon, Real) and math.isinf(self.epsilon):
            # Non-private: the statistics give the exact Lasso (Frank-Wolfe's defaults
            # stop short of it), up to their declared size.
            return ("sufficient_statistics" if d + 1 <= caps.max_params
                    else "frank_wolfe")
        if not (isinstance(self.delta, Real) and self.delta > 0):
            return "frank_wolfe"
        return "sufficient_statistics" if d * (d + 1) <= n / 2 else "frank_wolfe"

    def _rules_for(self, solver):
        """:data:`LASSO_STATISTICS_RULES` when the sufficient statistics run, else the
        defaults: on diabetes at epsilon 1 / 5 (300 unseeded fits) the statistics' rules
        raise their median R^2 from 0.007 / 0.259 to 0.087 / 0.331, and lower
        Frank-Wolfe's at n = 3000, d = 80 from 0.200 to -0.077
        (docs/algorithms/sufficient_statistics.md)."""
        if solver.name == "sufficient_statistics":
            return LASSO_STATISTICS_RULES
        return self._bound_rules

    # The signature: epsilon and delta by position, then keyword-only parameters, the
    # shared groups declared once in skdp.linear_model._parameters.
    __init__ = declared_init(PRIVACY, dict(
        solver="auto", radius=1.0, alpha=0.0,
        **BOUNDS, y_bound="auto", fit_intercept=True, data_norm_ord="auto", **RUN_OPTIONS,
    ))

    def _encode_targets(self, y, bounds):
        Y, bound = self._clipped_labels(y, bounds)
        return Y, SquaredLoss(bound), {}
