"""Differentially private least-squares (ridge) regression."""

from __future__ import annotations

from skdp._params import store_params
from skdp._planning import BoundRules
from skdp.linear_model._docs import shared_docs
from skdp.linear_model._inference import IntervalsMixin
from skdp.linear_model._regressor import BaseDPRegressor
from skdp.losses import SquaredLoss

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
    <<solver:"sufficient_statistics">>
        The default (one noisy release of ``X'X`` and ``X'y``, pure or approximate DP,
        ``alpha >= 0``) is the most accurate on small or medium data with a modest number
        of features; ``"output_perturbation"``'s noise grows like ``1 / alpha`` (see
        docs/algorithms/sufficient_statistics.md). The squared loss has unbounded
        gradients: gradient solvers need a constraint radius (and ``fit_intercept=False``)
        or their own ``clip_norm``.

        <<solvers>>

    <<alpha:1e-2>>
        ``"output_perturbation"`` penalises the intercept too and needs ``alpha > 0``, and
        its sensitivity falls like ``1 / alpha``.
    <<bounds>>
    <<y_bound>>
    <<options>>

    <<attributes:regressor>>
    coef_covariance_ : ndarray of shape (n_features + 1, n_features + 1) or None
        Approximate covariance of ``[coef_, intercept_]`` (the intercept last, when
        fitted): sampling (the residual variance from the released ``y'y``, as
        statsmodels' ``OLS``) plus privacy noise, from what the default
        ``"sufficient_statistics"`` releases without a constraint (post-processing;
        docs/inference.md), or from the Hessian and the residual variance that
        ``"newton"`` releases. ``None`` for the other solvers.
    standard_errors_ : ndarray of shape (n_features + 1,) or None
        Square roots of its diagonal.
    penalty_shift_ : ndarray of shape (n_features + 1,) or None
        First-order estimate of how far ``alpha`` and the solver's ridge moved each
        coefficient; :meth:`conf_int` warns when it exceeds a quarter of a standard error.

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

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        *,
        solver="sufficient_statistics",
        alpha=1e-2,
        data_norm="auto",
        bounds_fraction="auto",
        y_bound="auto",
        fit_intercept=True,
        constraint=None,
        radius=None,
        p=None,
        data_norm_ord="auto",
        tilt=None,
        adversarial_radius=None,
        adversarial_norm=2,
        accounting="auto",
        accountant=None,
        neighboring="replace_one",
        random_state=None,
        secure=False,
        verbose=0,
        noise_dominated="intercept_only",
    ):
        store_params(self, locals())

    def _encode_targets(self, y, bounds):
        Y, bound = self._clipped_labels(y, bounds)
        return Y, SquaredLoss(bound), {}
