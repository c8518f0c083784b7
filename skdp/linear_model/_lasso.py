"""Differentially private Lasso: least squares over an l1 ball."""

from __future__ import annotations

from numbers import Real

from skdp._sklearn_compat import Interval
from skdp.linear_model._regressor import BaseDPRegressor
from skdp.losses import SquaredLoss

__all__ = ["DPLasso"]


class DPLasso(BaseDPRegressor):
    """Lasso with differential privacy: least squares over an l1 ball of public radius.

    Minimises ``mean_i (y_i - <w, x_i> - b)^2 / 2 + (alpha / 2) ||w||^2`` over
    ``||(w, b')||_1 <= radius`` with a private solver built for the l1 geometry, whose
    error grows like ``log(d)`` instead of ``sqrt(d)``: the tool for sparse,
    high-dimensional data (``d`` much larger than ``n``).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget, in ``(0, inf]``.
    delta : float, default=0.0
        ``0`` gives pure epsilon-DP with the default ``"frank_wolfe"``; the mirror-descent
        solvers need ``delta > 0``.
    solver : str or solver object, default="frank_wolfe"
        A name from :data:`skdp.solvers.SOLVERS` (``"frank_wolfe"``, ``"mirror_descent"``,
        ``"localized_mirror_descent"``, ``"accelerated_mirror_descent"``, or any solver
        that supports an l1 constraint) or a solver instance.
    radius : float, default=1.0
        Public l1 radius. It plays the role of scikit-learn's ``alpha``: for every
        ``Lasso(alpha=a)`` solution ``w_a`` the constrained problem with
        ``radius = ||w_a||_1`` has the same solution (Lagrangian duality), and a smaller
        radius is a stronger penalty. Choose it from public knowledge; tuning it on the
        private data costs privacy.
    alpha : float, default=0.0
        Optional L2 strength (elastic net); ``0`` is the plain constrained Lasso.
    data_norm : float or "auto", default="auto"
        Bound on the norm of a row of ``X`` (in the ``data_norm_ord`` norm): rows are
        clipped to it in ``fit`` and ``predict``. ``"auto"``: twice a private median of
        the row norms, estimated with a share ``bounds_fraction`` of ``epsilon`` (pure DP,
        in the same ledger; ``data_norm_`` holds the value), and ``alpha``, ``radius`` and
        ``huber_delta`` then refer to the rows divided by ``data_norm_`` (units-free). A
        number is a PUBLIC bound (never compute it from the private data) and keeps the raw
        units. See docs/privacy.md, "Private bounds".
    bounds_fraction : float in (0, 1), default=0.3
        Share of ``epsilon`` spent on the ``"auto"`` bounds; the fit gets the rest (and
        all of ``delta``). Unused when every bound is a number.
    y_bound : float or "auto", default="auto"
        Bound on ``|y - centre|``: targets are clipped to ``centre +- y_bound`` in ``fit``.
        ``"auto"``: a private median of ``y`` is the centre (with an intercept; otherwise
        0) and twice a private median of ``|y - centre|`` the bound (``y_centre_``,
        ``y_bound_``), each with an equal part of ``bounds_fraction * epsilon``; the model
        then fits ``(y - centre) / y_bound`` and predictions are clipped to
        ``y_centre_ +- y_bound_``. A number is a PUBLIC bound with centre 0 (raw units).
    fit_intercept : bool, default=True
        Fit an intercept as the coefficient ``b'`` of a constant feature of value
        ``data_norm`` (``intercept_ = data_norm * b'``); ``b'`` counts towards the l1
        radius, so that the feasible set stays bounded.
    data_norm_ord : "auto" or float >= 1, default="auto"
        Norm in which ``data_norm`` bounds the rows; ``"auto"`` is l-infinity, the dual
        of the l1 ball (scores satisfy ``|<w, x>| <= ||w||_1 ||x||_inf``).
    accounting : {"auto", "gaussian", "rdp", "pld", "pure", "basic"}, default="auto"
        How the privacy loss is accounted (``"auto"``: the solver's default).
    accountant : BudgetAccountant or None, default=None
        A :class:`~skdp.BudgetAccountant` the user owns: ``fit`` records its ledger there
        and is refused (:class:`~skdp.exceptions.BudgetError`, before any value of ``X`` is
        read) if the accountant's total would pass its ceiling. Survives ``clone`` (the
        same object), so every fit of a ``GridSearchCV`` is counted; see
        docs/tuning_and_budgets.md.
    neighboring : {"replace_one"}, default="replace_one"
        Neighbouring relation of the guarantee.
    random_state : None, int, numpy Generator or RandomState, default=None
        Source of the noise; ``None`` draws fresh OS entropy (use it for releases).
    secure : bool, default=False
        Snap the released coefficients to a grid of spacing ``2^-10`` times the
        release's noise scale (a power of two, from public quantities): a mitigation of
        the floating-point attacks on textbook noise samplers (Mironov 2012), at a
        negligible accuracy cost. Not a proof; see docs/privacy.md, "Secure mode".

    verbose : int, default=0
        ``1``: print the phases of the fit with public quantities only (the same text on
        neighbouring data sets); ``2``: also the planned iteration count (it follows the
        private bounds) and elapsed times (a timing channel).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_iter_ : int
    privacy_spent_ : PrivacySpent
    privacy_ledger_ : PrivacyLedger or CompositeLedger
    privacy_plan_ : Plan
    data_norm_ : float
        The row bound used: ``data_norm``, or its private estimate for ``"auto"``.
    y_bound_, y_centre_ : float
        The target bound and centre used (declared: ``y_bound`` and 0; ``"auto"``: the
        private estimates).
    solver_ : BaseDPSolver
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.

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
        bounds_fraction=0.3,
        y_bound="auto",
        fit_intercept=True,
        data_norm_ord="auto",
        accounting="auto",
        accountant=None,
        neighboring="replace_one",
        random_state=None,
        secure=False,
        verbose=0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.solver = solver
        self.radius = radius
        self.alpha = alpha
        self.data_norm = data_norm
        self.bounds_fraction = bounds_fraction
        self.y_bound = y_bound
        self.fit_intercept = fit_intercept
        self.data_norm_ord = data_norm_ord
        self.accounting = accounting
        self.accountant = accountant
        self.neighboring = neighboring
        self.random_state = random_state
        self.secure = secure
        self.verbose = verbose

    def _encode_targets(self, y, bounds):
        Y, bound = self._clipped_labels(y, bounds)
        return Y, SquaredLoss(bound), {}
