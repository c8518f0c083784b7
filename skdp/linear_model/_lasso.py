"""Differentially private Lasso: least squares over an l1 ball."""

from __future__ import annotations

from numbers import Real

from skdp._params import store_params
from skdp._sklearn_compat import Interval
from skdp.linear_model._docs import shared_docs
from skdp.linear_model._regressor import BaseDPRegressor
from skdp.losses import SquaredLoss

__all__ = ["DPLasso"]


@shared_docs
class DPLasso(BaseDPRegressor):
    """Lasso with differential privacy: least squares over an l1 ball of public radius.

    Minimises ``mean_i (y_i - <w, x_i> - b)^2 / 2 + (alpha / 2) ||w||^2`` over
    ``||(w, b')||_1 <= radius`` with a private solver built for the l1 geometry, whose
    error grows like ``log(d)`` instead of ``sqrt(d)``: the tool for sparse,
    high-dimensional data (``d`` much larger than ``n``).

    Parameters
    ----------
    <<epsilon>>
    <<delta:0.0>>
        The default ``"frank_wolfe"`` is pure DP; the mirror-descent solvers need
        ``delta > 0``.
    <<solver:"frank_wolfe">>

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
        of the l1 ball (scores satisfy ``|<w, x>| <= ||w||_1 ||x||_inf``).
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
    >>> reg = DPLasso(epsilon=1.0, radius=2.0, random_state=0).fit(X, y)
    >>> reg.privacy_spent_.delta
    0.0
    """

    # The losses and constraint kinds this estimator offers (its solver list in the
    # docstring and its solver validation come from the solvers' declarations).
    _solver_losses = ('squared',)
    _solver_constraints = ("l1",)

    _intercept_constrained = True
    # Fixed parts of the model: an l1 ball, plain ERM.
    constraint = "l1"
    p = None
    tilt = None
    adversarial_radius = None
    adversarial_norm = 2

    _parameter_constraints: dict = {
        **BaseDPRegressor._parameter_constraints,
        "radius": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(
        self,
        epsilon=1.0,
        delta=0.0,
        *,
        solver="frank_wolfe",
        radius=1.0,
        alpha=0.0,
        data_norm="auto",
        bounds_fraction="auto",
        y_bound="auto",
        fit_intercept=True,
        data_norm_ord="auto",
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
