"""Differentially private logistic regression."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from skdp.linear_model._classifier import BaseDPClassifier
from skdp.linear_model._docs import shared_docs
from skdp.losses import LogisticLoss, MultinomialLogisticLoss

__all__ = ["DPLogisticRegression"]


@shared_docs
class DPLogisticRegression(BaseDPClassifier):
    """Logistic regression with (epsilon, delta)-differential privacy.

    Minimises ``mean_i loss_i + (alpha / 2) ||coef||^2`` (binary logistic loss for two
    classes, multinomial with ONE joint calibration for more) with a private solver.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget, in ``(0, inf]``. ``inf`` fits without privacy (a
        :class:`~skdp.exceptions.PrivacyLeakWarning` is emitted).
    delta : float, default=1e-5
        Failure probability, in ``[0, 1)``; use much less than ``1 / n_samples``.
    <<classes>>
    solver : str or solver object, default="gd"
        A name from :data:`skdp.solvers.SOLVERS` or a solver instance
        (``DPSVRG(batch_size=64)``) whose parameters nest as ``solver__batch_size`` in
        parameter grids.
        <<solvers>>
    alpha : float, default=1e-2
        L2 strength in ``mean_i loss_i + (alpha / 2) ||coef||^2`` (the intercept is not
        penalised, except by ``"output_perturbation"``, whose sensitivity needs strong
        convexity in every coordinate). ``"svrg"`` and ``"output_perturbation"`` need
        ``alpha > 0``.
    <<data_norm>>
    <<bounds_fraction:"auto">>
    fit_intercept : bool, default=True
        Fit an intercept, as an extra feature of constant value ``data_norm`` (the
        augmented row norm bound ``sqrt(2) data_norm`` enters the sensitivity).
    constraint : {"l2", "l1", "lp"} or None, default=None
        Constrain ``coef`` to the l2, l1 or lp ball of radius ``radius``.
    radius : float, default=None
        Public radius of the constraint.
    p : float, default=None
        Exponent of ``constraint="lp"`` (``p > 1``).
    data_norm_ord : "auto" or float >= 1, default="auto"
        Norm in which ``data_norm`` bounds the rows. ``"auto"`` is the dual norm of the
        constraint: l2 without a constraint or for ``"l2"``, l-infinity (the largest
        absolute feature) for ``"l1"``, ``p / (p - 1)`` for ``"lp"``.
    tilt : float, default=None
        Tilted ERM (``"output_perturbation"`` only): minimise
        ``(1/tilt) ln(mean_i exp(tilt loss_i)) + (alpha/2)||w||^2``, which moves from the
        mean loss (``tilt -> 0``) towards the worst-case loss as ``tilt`` grows. Must be
        positive; ``None`` is plain ERM.
    adversarial_radius : float, default=None
        Adversarial training (``"output_perturbation"`` only, binary problems): minimise
        the worst-case loss over feature perturbations of norm ``<= adversarial_radius``.
    adversarial_norm : {2, inf}, default=2
        Norm of the feature perturbations.
    accounting : {"auto", "gaussian", "rdp", "pld", "pure", "basic"}, default="auto"
        How the privacy loss is accounted: ``"auto"`` uses each solver's default (the exact
        closed form for ``"gd"``; RDP for ``"svrg"``/``"svrg++"`` with batches sampled
        without replacement, PLD with Poisson batches; for ``"output_perturbation"`` pure
        DP when ``delta=0`` and the exact Gaussian otherwise).
    <<accountant>>
    neighboring : {"replace_one"}, default="replace_one"
        Neighbouring relation of the guarantee: data sets of the same size differing in
        one record. (Add/remove needs a public dataset size, which is not offered yet.)
    random_state : None, int, numpy Generator or RandomState, default=None
        Source of the noise. ``None`` draws fresh OS entropy: use it for real releases.
        An integer makes the noise reproducible by anyone who knows it.
    secure : bool, default=False
        Snap the released coefficients to a grid of spacing ``2^-10`` times the
        release's noise scale (a power of two, from public quantities): a mitigation of
        the floating-point attacks on textbook noise samplers (Mironov 2012), at a
        negligible accuracy cost. Not a proof; see docs/privacy.md, "Secure mode".

    <<verbose>>

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels. The label SET is treated as public (it is read from ``y``).
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_iter_ : int
        Number of noisy gradient steps run, fixed in advance and data-independent (for
        ``"svrg"``/``"svrg++"``: the inner steps; their per-epoch snapshot releases are
        listed in the typed ``privacy_plan_``).
    privacy_spent_ : PrivacySpent
        ``(epsilon, delta)`` spent, from re-accounting the ledger.
    privacy_ledger_ : PrivacyLedger or CompositeLedger
        The ``dp_accounting`` events of everything that ran (with ``"auto"`` bounds, the
        parts ``"bounds"`` and ``"fit"``), their accounting methods and relation.
    privacy_plan_ : Plan
        The public plan (iteration counts, noise levels, step size).
    data_norm_ : float
        The row bound used: ``data_norm``, or its private estimate for ``"auto"``.
    solver_ : BaseDPSolver
        The solver object used.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.

    Notes
    -----
    The privacy unit is one training example (row and label); the guarantee covers
    ``coef_`` and ``intercept_`` and everything derived from them. Hyper-parameter
    searches (for example ``GridSearchCV`` over ``epsilon``) release one model per fit and
    compose: the total cost is the sum over all fits, which skdp does not hide.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdp import DPLogisticRegression
    >>> X, y = make_classification(n_samples=500, random_state=0)
    >>> clf = DPLogisticRegression(epsilon=1.0, delta=1e-5, data_norm=5.0, random_state=0)
    >>> clf.fit(X, y).privacy_spent_.epsilon <= 1.0
    True
    """

    # The losses and constraint kinds this estimator offers (its solver list in the
    # docstring and its solver validation come from the solvers' declarations).
    _solver_losses = ('logistic', 'multinomial')
    _solver_constraints = ("none", "l2", "l1", "lp")

    def __init__(
        self,
        epsilon=1.0,
        delta=1e-5,
        *,
        classes=None,
        solver="gd",
        alpha=1e-2,
        data_norm="auto",
        bounds_fraction="auto",
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
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.solver = solver
        self.alpha = alpha
        self.data_norm = data_norm
        self.bounds_fraction = bounds_fraction
        self.fit_intercept = fit_intercept
        self.constraint = constraint
        self.radius = radius
        self.p = p
        self.data_norm_ord = data_norm_ord
        self.tilt = tilt
        self.adversarial_radius = adversarial_radius
        self.adversarial_norm = adversarial_norm
        self.accounting = accounting
        self.accountant = accountant
        self.neighboring = neighboring
        self.random_state = random_state
        self.secure = secure
        self.verbose = verbose

    def _encode_targets(self, y, bounds):
        classes = self._check_classes(y)
        if classes.size == 2:
            Y = np.where(y == classes[1], 1.0, -1.0)[:, None]
            return Y, LogisticLoss(), {"classes_": classes}
        Y = (y[:, None] == classes[None, :]).astype(float)
        return Y, MultinomialLogisticLoss(classes.size), {"classes_": classes}

    def predict_proba(self, X):
        """Class probabilities.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        scores = self._decision_scores(X)
        if scores.shape[1] == 1:
            s = scores[:, 0]
            return np.column_stack([expit(-s), expit(s)])
        return np.exp(MultinomialLogisticLoss.log_proba(scores))

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        scores = self._decision_scores(X)
        if scores.shape[1] == 1:
            s = scores[:, 0]
            return np.column_stack([-np.logaddexp(0, s), -np.logaddexp(0, -s)])
        return MultinomialLogisticLoss.log_proba(scores)
