"""Differentially private robust (Huber) regression."""

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
from skdp.losses import HuberLoss

__all__ = ["DPHuberRegressor"]

#: ``huber_delta="auto"``: this share of ``y_bound`` (declared or private), the half-width
#: of the clipped targets' range, so the threshold follows the targets' units.
#: Measured on diabetes at epsilon 1 (6,000-12,000 unseeded fits each, with
#: :data:`skdp._planning.GRADIENT_BOUND_WEIGHTS`; docs/privacy.md, 1.6): median / p5
#: test R^2 0.167 / -0.273 at 1.35 (the former default, 15 per 6,000 fits below -1),
#: 0.238 / -0.070 at 1, 0.291 / 0.029 at 0.7, 0.304 / 0.069 at 0.5 (1 per 12,000 below
#: -1), 0.305 / 0.088 at 0.35 and 0.285 / 0.061 at 0.25; at epsilon 5 0.427 / 0.357 at
#: 0.5 against 0.409 / 0.323 before. The noise of every solver grows with the gradient
#: bound ``huber_delta * data_norm``, and the Huber loss already down-weights the
#: residuals beyond it.
HUBER_DELTA_SHARE = 0.5


@shared_docs
class DPHuberRegressor(IntervalsMixin, BaseDPRegressor):
    """Linear regression with the Huber loss and differential privacy.

    Minimises ``mean_i h(<w, x_i> + b - y_i) + (alpha / 2) ||w||^2`` with a private solver,
    where ``h(r) = r^2 / 2`` for ``|r| <= huber_delta`` and ``huber_delta |r| -
    huber_delta^2 / 2`` beyond (:class:`~skdp.losses.HuberLoss`). The loss derivative is
    bounded by ``huber_delta`` for every score and label, so every per-record gradient is
    bounded by ``huber_delta * data_norm`` without a constraint or gradient clipping:
    each solver applies, including the stability-based ``"phased_sgd"``. Labels are
    clipped to the public ``[-y_bound, y_bound]`` and rows to ``data_norm`` (per-record
    maps: ``X`` and ``y`` are not modified).

    Parameters
    ----------
    <<epsilon>>
    <<delta:1e-5>>
        Pure DP with ``"output_perturbation"`` (and ``"phased_sgd"``); ``"gd"`` needs
        ``delta > 0``.
    <<solver:"gd">>
        The Huber gradient is bounded, so every gradient solver applies without a
        constraint. The default is full-batch DP-GD with the exact Gaussian calibration;
        output perturbation needs a larger ``alpha`` (its noise falls like
        ``1 / (alpha n)``) and is the pure-DP choice.

        <<solvers>>

    alpha : float or "auto", default="auto"
        Strength of the L2 penalty ``(alpha / 2) ||w||^2`` of the objective above.
        ``"auto"``: ``5e-2`` in units of the bounds (rows divided by ``data_norm``)
        whether they are declared or private: a declared ``data_norm=D`` fits with
        ``5e-2 D^2`` in raw units, as a number does with private bounds (a number keeps
        the raw units with declared bounds; with a declared ``data_norm=0.2`` on diabetes
        ``5e-2`` raw gave a median test R^2 of 0.06 against 0.37 for ``"auto"``).
        ``"output_perturbation"`` penalises the intercept too and needs ``alpha > 0``.
        DP-GD's noise along weakly curved directions grows like ``1 / alpha``: on raw
        diabetes (309 rows, 21 seeds) ``5e-2`` gives a median test R^2 of -0.08 / 0.35 at
        epsilon 1 / 5 against -1.17 / 0.24 for ``1e-2``.
    huber_delta : float or "auto", default="auto"
        Threshold between the quadratic and the linear zone. ``"auto"``: half of
        ``y_bound`` (the declared one, or the private ``y_bound_``), the half-width of
        the clipped targets' range. A number is in the units of ``y`` with declared
        bounds, and in units of ``y_bound_`` when a bound is ``"auto"`` (the rescaled
        problem, see :class:`skdp._planning.FitBounds`). On diabetes at epsilon 1 the
        default gives a median / p5 test R^2 of 0.30 / 0.07 over unseeded fits, against
        0.17 / -0.27 for 1.35 in units of ``y_bound_`` (docs/privacy.md, 1.6).
        scikit-learn's ``HuberRegressor(epsilon=e)`` uses ``e`` times a scale that it
        estimates from the data; at its fitted ``scale_`` its coefficients are those of
        this objective with ``huber_delta = e * scale_`` and ``alpha = alpha_sk * scale_
        / n_samples`` (see :class:`~skdp.losses.HuberLoss`). Here the threshold is a
        public constant (estimating a scale from private data would cost privacy).
    <<y_bound>>
    <<bounds>>
    <<options>>

    <<attributes:regressor>>
    <<coef_covariance_>>
        Huber's sandwich (its dispersion ``mean psi^2 / mean psi'`` from a release at the
        output) and the noise, from what ``solver="newton"`` releases. ``None`` for the
        other solvers.
    <<standard_errors_>>
        The penalty is ``alpha``.

    Notes
    -----
    The privacy unit is one example (row and label). The per-record gradient bound is
    ``huber_delta`` times the row bound whatever the parameters, so unlike the squared
    loss no domain bound is needed for the gradient solvers.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.linear_model._huber import DPHuberRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3)) / 3
    >>> y = np.clip(X @ [1.0, -0.5, 0.2], -1, 1)
    >>> reg = DPHuberRegressor(epsilon=1.0, delta=1e-5, random_state=0).fit(X, y)
    >>> reg.privacy_spent_.delta
    1e-05
    """

    # The losses and constraint kinds this estimator offers (its solver list in the
    # docstring and its solver validation come from the solvers' declarations).
    _solver_losses = ('huber',)
    _solver_constraints = ("none", "l2", "l1", "lp")
    # What conf_int needs (its error names it).
    _intervals_need = "the Hessian and dispersion that solver='newton' releases"
    _intervals_fix = "Set solver='newton'"
    _bound_rules = BoundRules(weights=GRADIENT_BOUND_WEIGHTS)
    # alpha="auto", in units of the bounds (PrivacyPlanning._raw_alpha).
    _auto_alpha = MappingProxyType({"default": 5e-2})

    _parameter_constraints: dict = {
        **BaseDPRegressor._parameter_constraints,
        "huber_delta": [Interval(Real, 0, 1e150, closed="neither"), StrOptions({"auto"})],
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    }

    # The signature: epsilon and delta by position, then keyword-only parameters, the
    # shared groups declared once in skdp.linear_model._parameters.
    __init__ = declared_init(PRIVACY, dict(
        solver="gd", alpha="auto", huber_delta="auto", y_bound="auto",
        **BOUNDS, **OPTIONS,
    ))

    def _encode_targets(self, y, bounds):
        Y, bound = self._clipped_labels(y, bounds)
        # "auto": a share of the raw y_bound (rescaled or not, the clipped targets span
        # [-y_bound, y_bound] around the centre); a number is in the problem's units.
        delta = (HUBER_DELTA_SHARE * bound if isinstance(self.huber_delta, str)
                 else float(self.huber_delta) * bounds.target_scale)
        return Y, HuberLoss(delta, label_bound=bound), {}
