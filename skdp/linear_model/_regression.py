"""Differentially private least-squares (ridge) regression."""

from __future__ import annotations

from numbers import Real
from types import MappingProxyType

from skdp._params import declared_init
from skdp._planning import GRADIENT_BOUND_WEIGHTS, BoundRules
from skdp._sklearn_compat import Interval, StrOptions
from skdp.linear_model._docs import shared_docs
from skdp.linear_model._inference import IntervalsMixin
from skdp.linear_model._parameters import BOUNDS, OPTIONS, PRIVACY
from skdp.linear_model._regressor import BaseDPRegressor
from skdp.losses import SquaredLoss
from skdp.solvers import NoisyGD, SufficientStatistics

__all__ = ["DPLinearRegression"]


#: The ``"auto"`` bounds' rules of the sufficient statistics (DPLinearRegression's
#: default, and DPLasso's ``solver="auto"`` on few features), measured on raw diabetes:
#:
#: - ``data_norm_quantile=0.5``: the Gram noise grows like ``data_norm^2`` while clipping
#:   a row only shrinks its weight: at a finite epsilon the row norms' median (half the
#:   rows clipped) beats a high quantile (docs/privacy.md, "Private bounds"); at
#:   ``epsilon=inf`` the bound is the maximum, as for every estimator.
#: - ``y_bound_widen_below=0.75``: at small ``n epsilon`` the ``y_bound`` search's target
#:   falls to the median of ``|y - centre|``; doubling it then (the previous rule, "twice
#:   the median") measured better at epsilon 1 (300 unseeded fits: median R^2 0.067
#:   against -0.006, no fit below -1 against 1; epsilon 5 unchanged). DPHuberRegressor
#:   measured worse with it (16 fits below -1 of 300): its huber_delta and noise grow
#:   with ``y_bound``.
#: - the default ``y_bound_slack`` (12): a slack of 4 (the search aiming higher) had
#:   measured better while the search started at the grid's bottom (500 / 200 unseeded
#:   fits: epsilon 1 median R^2 0.095 against 0.055); since the search starts 5 octaves
#:   below the released scale (``y_bound_octaves``), stopping below the data is rare and
#:   the overshoot is what remains: over 5000 unseeded fits at epsilon 1, 6 fell below
#:   R^2 = -1 with 12 against 26 with 4 (below -0.5: 0.9% against 1.6%), median 0.122
#:   against 0.126; epsilon 5 (600 fits): 0.406 / p5 0.325 / min 0.218 against
#:   0.417 / 0.320 / -0.098.
STATISTICS_BOUND_RULES = BoundRules(data_norm_quantile=0.5, y_bound_widen_below=0.75)
#: ... and of DP-GD on the squared loss (``solver="gd"``, and ``"auto"`` at small ``n
#: epsilon``): its clip, and so its noise, grows with ``y_bound``, as DPHuberRegressor's
#: (:data:`skdp._planning.GRADIENT_BOUND_WEIGHTS`).
GD_BOUND_RULES = BoundRules(weights=GRADIENT_BOUND_WEIGHTS)
#: ``alpha="auto"``: DP-GD's noise along weakly curved directions grows like ``1 /
#: alpha``; the statistics' noise does not, and their ``epsilon=inf`` fit is the ridge
#: fit. Diabetes (500-1000 unseeded fits, median / p5 test R^2): DP-GD at epsilon 1
#: 0.312 / 0.074 with 5e-2 against 0.151 / -0.385 with 1e-2; the statistics 0.126 /
#: -0.192 with 5e-2 against 0.105 / -0.165 (epsilon 1), 0.408 / 0.332 against 0.401 /
#: 0.328 (epsilon 5), and non-private (three splits) 0.31-0.34 against 0.40-0.46.
AUTO_ALPHA = MappingProxyType({"gd": 5e-2, "default": 1e-2})
#: ``solver="auto"`` runs clipped DP-GD where ``n epsilon`` is below this many records
#: per coefficient (``d + 1`` with an intercept). Median test R^2 over 30 unseeded fits
#: at epsilon 1, DP-GD against the statistics, by ``n epsilon / (d + 1)``
#: (docs/algorithms/sufficient_statistics.md, "Where clipped DP-GD beats it"): Gaussian
#: features, 5 features, 100: 0.391 / 0.345, 200: 0.416 / 0.442; 20 features, 95: 0.310 /
#: 0.282, 190: 0.341 / 0.388; diabetes resampled, 91: 0.414 / 0.358, 136: 0.438 / 0.426,
#: 182: 0.438 / 0.444, 273: 0.441 / 0.465; Student-t(3) features and noise, 91: 0.130 /
#: 0.045, 182: 0.161 / 0.177; raw diabetes at epsilon 5 (140): 0.430 / 0.401.
AUTO_GD_RECORDS = 150.0


@shared_docs
class DPLinearRegression(IntervalsMixin, BaseDPRegressor):
    """Linear least-squares regression with differential privacy.

    Minimises ``mean_i (y_i - <w, x_i> - b)^2 / 2 + (alpha / 2) ||w||^2`` with a private
    solver. Labels are clipped to the public ``[-y_bound, y_bound]`` and rows to
    ``data_norm`` (per-record maps: ``X`` and ``y`` are not modified).

    Parameters
    ----------
    <<epsilon>>
    <<delta:1e-5>>
        Pure DP with ``"sufficient_statistics"`` (l2-Laplace noise) or
        ``"output_perturbation"``.
    solver : "auto", str or solver object, default="auto"
        A name from :data:`skdp.solvers.SOLVERS` or a solver instance whose parameters
        nest as ``solver__name`` in parameter grids. ``"auto"`` (public: the shape and the
        settings) runs DP-GD (``"gd"``, its per-example gradients clipped at half of
        ``y_bound`` times the row bound: a Huber fit for the largest residuals) where
        ``n_samples * epsilon`` is below 150 records per coefficient, and the sufficient
        statistics (``"sufficient_statistics"``: one noisy release of ``X'X`` and
        ``X'y``, the exact least-squares fit at ``epsilon=inf``, with
        :meth:`conf_int`) where it is above, at ``epsilon=inf``, with ``delta=0`` (pure
        DP), ``alpha=0``, a constraint, ``tilt`` or ``adversarial_radius``; DP-GD
        whatever the size with ``secure=True``, which the statistics do not offer. The
        crossover is measured
        in docs/algorithms/sufficient_statistics.md. On raw diabetes (309 training rows)
        at epsilon 1 the default gives a median / p5 test R^2 of about 0.31 / 0.07 over
        unseeded fits, against 0.11 / -0.17 for the statistics. ``"output_perturbation"``'s
        noise grows like ``1 / alpha``. The other gradient solvers need a constraint
        radius (and ``fit_intercept=False``) or their own ``clip_norm``: the squared loss
        has unbounded gradients.

        <<solvers>>

    alpha : float or "auto", default="auto"
        Strength of the L2 penalty ``(alpha / 2) ||w||^2`` of the objective above.
        ``"auto"``: ``5e-2`` when DP-GD runs (its noise along weakly curved directions
        grows like ``1 / alpha``; 1e-2 costs its fits on diabetes at epsilon 1 about 0.16
        of median R^2), ``1e-2`` for the other solvers, in units of the bounds (rows
        divided by ``data_norm``) whether they are declared or private: a declared
        ``data_norm=D`` fits with ``alpha * D^2`` in raw units, as a number does with
        private bounds. A number keeps the raw units with declared bounds. ``"output_perturbation"``
        penalises the intercept too and needs ``alpha > 0``, and its sensitivity falls
        like ``1 / alpha``.
    <<bounds>>
    <<y_bound>>
    <<options>>

    <<attributes:regressor>>
    <<coef_covariance_>>
        the residual variance from the released ``y'y`` (as statsmodels' ``OLS``) and
        the noise, from what ``"sufficient_statistics"`` releases without a constraint,
        or from the Hessian and the residual variance that ``"newton"`` releases.
        ``None`` for the other solvers.
    <<standard_errors_>>
        The penalty is ``alpha`` and the solver's ridge.

    Notes
    -----
    The privacy unit is one example (row and label). With ``"output_perturbation"`` the
    ridge solution lies in the ball of radius ``y_bound / sqrt(alpha)`` (its objective
    is at most ``y_bound^2 / 2`` at 0), where the squared loss has derivative at most
    ``(radius * X + y_bound)``; this public bound gives the sensitivity (see
    docs/privacy.md).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3)) / 3
    >>> y = np.clip(X @ [1.0, -0.5, 0.2], -1, 1)
    >>> reg = DPLinearRegression(epsilon=1.0, delta=0.0, alpha=0.1).fit(X, y)
    >>> reg.privacy_spent_.delta
    0.0
    """

    # The losses and constraint kinds this estimator offers (its solver list in the
    # docstring and its solver validation come from the solvers' declarations).
    _solver_losses = ('squared',)
    _solver_constraints = ("none", "l2", "l1", "lp")
    # What conf_int needs (its error names it).
    _intervals_need = ("the statistics that solver='sufficient_statistics' releases, "
                       "without a constraint")
    _intervals_fix = "Set solver='sufficient_statistics' and constraint=None"
    _bound_rules = STATISTICS_BOUND_RULES
    _auto_alpha = AUTO_ALPHA
    # The data_norm text, from the two rule records (_rules_for picks one per solver).
    _data_norm_factor = (
        f"the row norms' {STATISTICS_BOUND_RULES.data_norm_quantile:g}-quantile "
        f"({GD_BOUND_RULES.data_norm_quantile:g} with DP-GD; the maximum at epsilon=inf)")

    _parameter_constraints: dict = {
        **BaseDPRegressor._parameter_constraints,
        "solver": [StrOptions({"auto"}), *BaseDPRegressor._parameter_constraints["solver"]],
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    }

    def _solver_name(self, shape):
        """``solver="auto"``: ``"gd"`` (clipped DP-GD) where ``n epsilon`` is below
        :data:`AUTO_GD_RECORDS` times the number of coefficients, else
        ``"sufficient_statistics"``. The statistics also while the shape is unknown, at
        ``epsilon=inf`` (their fit is exact), with ``delta=0`` (pure DP), ``alpha=0``
        (DP-GD's step count is then Theorem 6.3's, measured useless here), a
        constraint, ``tilt`` or ``adversarial_radius`` (objectives the rule was not
        measured on) and where DP-GD's declaration rules the settings out; DP-GD where
        only it can run (``secure=True``, more coefficients than the statistics
        release). Public: the shape, ``epsilon``, ``delta`` and the parameters.
        docs/algorithms/sufficient_statistics.md, "Where clipped DP-GD beats it".
        """
        if self.solver != "auto":
            return self.solver
        statistics, gd = SufficientStatistics.capabilities, NoisyGD.capabilities
        gd_runs = (self._settings_allow(gd)
                   and (isinstance(self.alpha, str) or self.alpha > 0)
                   and self._approximate_private())
        n_params = (None if shape is None
                    else int(shape[1]) + int(self.fit_intercept))
        statistics_run = self._settings_allow(statistics) and (
            n_params is None or n_params <= statistics.max_params)
        if gd_runs and not statistics_run:
            return "gd"
        if (not gd_runs or shape is None or self.constraint is not None
                or self.tilt is not None or self.adversarial_radius):
            return "sufficient_statistics"
        return ("gd" if int(shape[0]) * float(self.epsilon) < AUTO_GD_RECORDS * n_params
                else "sufficient_statistics")

    def _rules_for(self, solver):
        """:data:`GD_BOUND_RULES` when DP-GD runs, else :data:`STATISTICS_BOUND_RULES`."""
        return GD_BOUND_RULES if solver.name == "gd" else self._bound_rules

    # The signature: epsilon and delta by position, then keyword-only parameters, the
    # shared groups declared once in skdp.linear_model._parameters.
    __init__ = declared_init(PRIVACY, dict(
        solver="auto", alpha="auto",
        **BOUNDS, y_bound="auto", **OPTIONS,
    ))

    def _encode_targets(self, y, bounds):
        Y, bound = self._clipped_labels(y, bounds)
        return Y, SquaredLoss(bound), {}
