"""Differentially private logistic regression."""

from __future__ import annotations

from numbers import Real
from types import MappingProxyType

import numpy as np
from scipy.special import expit

from skdp._array_api import device_log_softmax, namespace
from skdp._params import declared_init
from skdp._planning import NoiseScaledAlpha
from skdp._sklearn_compat import Interval, StrOptions
from skdp.linear_model._classifier import BaseDPClassifier
from skdp.linear_model._docs import shared_docs
from skdp.linear_model._inference import IntervalsMixin
from skdp.linear_model._parameters import BOUNDS, OPTIONS, PRIVACY
from skdp.losses import LogisticLoss, MultinomialLogisticLoss
from skdp.privacy.budget import Budget
from skdp.solvers import DPNewton
from skdp.solvers.newton import hessian_frobenius_bound, relative_hessian_noise

__all__ = ["DPLogisticRegression"]

#: ``solver="auto"`` runs DP Newton where the default plan's Hessian noise edge is at most
#: this share of the per-example curvature bound (:func:`relative_hessian_noise`): about
#: 100,000 rows for 54 features at epsilon 1 (the edge falls like ``1 / (n epsilon)``
#: and grows like ``sqrt(D)``). Median excess risk over unseeded fits, DP-GD against DP
#: Newton (docs/algorithms/newton.md, "The default"; measured with the former split
#: ``gradient_share = 0.9``, whose edges were ``1 / sqrt(2)`` of those given here, so the
#: threshold moved with them and the crossover stayed at the same rows): covertype-shaped,
#: two draws, 30,000 rows (edge 0.011) 1.2e-4 / 9.5e-5 against 2.0e-4 / 2.3e-4, 60,000
#: (0.0057) 4.1e-5 / 3.7e-5 against 6.0e-5 / 4.6e-5, 100,000 (0.0035) 2.0e-5 / 2.6e-5
#: against 2.2e-5 / 2.2e-5, 150,000 (0.0024) 1.5e-5 / 1.5e-5 against 9.6e-6 / 9.9e-6; 4
#: classes at 50,000 (0.011) 1.8e-4 against 4.4e-4; 20 features at 50,000 (0.0042)
#: 1.4e-5 against 2.6e-5.
AUTO_NEWTON_NOISE = 0.0035

#: ``alpha="auto"`` by solver, in units of the bounds: DP-GD's follows the noise of one
#: release (:class:`~skdp._planning.NoiseScaledAlpha`; its measurements in
#: docs/algorithms/gd.md, "alpha='auto'"), the others keep the former fixed 1e-2 (DP
#: Newton's crossover above was measured with it; output and objective perturbation's
#: sensitivity falls like ``1 / alpha``).
AUTO_ALPHA = MappingProxyType({"gd": NoiseScaledAlpha(), "default": 1e-2})

@shared_docs
class DPLogisticRegression(IntervalsMixin, BaseDPClassifier):
    """Logistic regression with (epsilon, delta)-differential privacy.

    Minimises ``mean_i loss_i + (alpha / 2) ||coef||^2`` (binary logistic loss for two
    classes, multinomial with ONE joint calibration for more) with a private solver.

    Parameters
    ----------
    <<epsilon>>
    <<delta:1e-5>>
    <<classes:coefficients>>
    solver : "auto", str or solver object, default="auto"
        A name from :data:`skdp.solvers.SOLVERS` or a solver instance
        (``DPSVRG(batch_size=64)``) whose parameters nest as ``solver__batch_size`` in
        ``get_params`` and ``GridSearchCV``. ``"auto"`` (public: the shape, the number
        of classes and the settings) runs ``"newton"`` (10 passes) where its released
        Hessian is precise, that is where the noise edge of a default DP Newton plan at
        the total budget is at most 0.35% of the per-example curvature bound (about ``n
        >= 100,000`` for 54 features at epsilon 1) and ``alpha`` is at least that edge in the
        problem's units (below it the noise floor, not the penalty, conditions the
        step), and ``"gd"`` otherwise, or where
        DP Newton does not apply (``delta=0``, ``epsilon=inf``, ``secure=True``, an l1 or
        lp constraint, an ``accounting`` or objective it does not declare, more than
        2048 Hessian dimensions); the crossover is measured in docs/algorithms/newton.md.
        A binary fit that ``"auto"`` sends to DP Newton still chooses its intercept
        privately (``threshold_fraction``), so its :meth:`conf_int` needs
        ``solver="newton"`` or ``threshold_fraction=0``.

        <<solvers>>

    alpha : float or "auto", default="auto"
        Strength of the L2 penalty ``(alpha / 2) ||w||^2`` of the objective above.
        ``"auto"``, in units of the bounds (rows divided by ``data_norm``, declared or
        private): when DP-GD runs, ``0.25 sqrt(D ln(1/delta)) / (n epsilon)`` clipped to
        ``[1e-3, 1e-2]`` (``D`` coefficients, ``n`` rows: public), so the penalty
        follows the noise and a large ``n epsilon`` is not over-regularised (1e-3 at
        ``epsilon=inf``); ``1e-2`` for the other solvers (in units of the bounds too:
        with a declared ``data_norm=D`` they run ``1e-2 D^2`` in raw units, where the
        former numeric default ran ``1e-2``). On a 100,000 x 256 x 50-class
        probe at epsilon 8 the fixed 1e-2 read 0.836 test accuracy and ``"auto"`` 0.927
        (scikit-learn's non-private ``LogisticRegression()`` 0.929); measurements in
        docs/algorithms/gd.md, "alpha='auto'". ``alpha_`` holds the value used. A number
        keeps the raw units with declared bounds. The intercept is not penalised, except
        by ``"output_perturbation"``, whose sensitivity needs strong convexity in every
        coordinate; ``"svrg"`` and ``"output_perturbation"`` need ``alpha > 0``.
    <<bounds>>
    <<options>>
    <<threshold_fraction>>

    <<attributes:classifier>>
    <<coef_covariance_>>
        from the Hessian and the noise law that ``solver="newton"`` releases, for two
        classes. ``None`` for the other solvers and for more classes.
    <<standard_errors_>>
        The L2 penalty's shift from the unpenalised minimiser is ``alpha H^-1 w_pen``
        (from the released Hessian ``H``).

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
    # What conf_int needs (its error names it).
    _intervals_need = "the Hessian that solver='newton' releases, for two classes"
    _intervals_fix = "Set solver='newton'"
    _solver_constraints = ("none", "l2", "l1", "lp")

    _parameter_constraints: dict = {
        **BaseDPClassifier._parameter_constraints,
        "solver": [StrOptions({"auto"}), *BaseDPClassifier._parameter_constraints["solver"]],
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
    }
    # alpha="auto", in units of the bounds (PrivacyPlanning._raw_alpha): DP-GD's rule
    # follows the noise (NoiseScaledAlpha, measured in docs/algorithms/gd.md); every other
    # solver keeps the former fixed default.
    _auto_alpha = AUTO_ALPHA

    # The signature: epsilon and delta by position, then keyword-only parameters, the
    # shared groups declared once in skdp.linear_model._parameters.
    __init__ = declared_init(PRIVACY, dict(
        classes=None, solver="auto", alpha="auto",
        **BOUNDS, **OPTIONS, threshold_fraction="auto",
    ))

    def _solver_name(self, shape):
        """``solver="auto"``: ``"newton"`` where :func:`relative_hessian_noise` of the
        problem (``D = (d + 1) K`` Hessian dimensions, ``K`` outputs: 1 for two classes)
        at the total budget is at most :data:`AUTO_NEWTON_NOISE` and ``alpha`` is at
        least that noise edge in the problem's units, else ``"gd"`` (also while the
        shape is unknown, with an l1 or lp constraint, and where DP Newton's declaration
        or settings rule it out). Public: the shape ``(n, d)`` or ``(n, d, K)`` (``K = 1``
        when not given), ``epsilon``, ``delta`` and the parameters.

        The ``alpha`` condition, measured on covertype-shaped data (6 unseeded fits,
        median excess risk, DP-GD against DP Newton with ``gradient_share = 0.9``; the
        edges are those of the default split, 0.95): ``alpha = 1e-3`` at ``n =
        30,000`` (edge 3.7e-3) 8.9e-4 against 2.1e-3, at 60,000 (1.8e-3) 3.1e-4 against
        6.6e-4; ``alpha = 3e-4`` at 200,000 (5.5e-4) 1.2e-4 against 1.7e-4; above the
        edge, ``alpha = 1e-3`` at 200,000, DP Newton 4.6e-5 against 6.5e-5 (test
        accuracies within 0.002 throughout)."""
        if self.solver != "auto":
            return self.solver
        caps = DPNewton.capabilities
        if (shape is None or not self._settings_allow(caps) or self.tilt is not None
                or self.adversarial_radius or not self._approximate_private()):
            # At epsilon=inf DP-GD already reaches the non-private optimum; the others
            # are settings DP Newton does not declare.
            return "gd"
        if self.constraint not in (None, "l2"):
            # The rule's row bound is an l2 one (the l1 and lp balls measure rows in
            # their dual norms): DP-GD, the former default, there.
            return "gd"
        n, d = int(shape[0]), int(shape[1])
        outputs = int(shape[2]) if len(shape) > 2 else 1
        dim = (d + int(self.fit_intercept)) * outputs
        if dim > caps.max_params:
            return "gd"
        noise = relative_hessian_noise(n, dim, Budget(float(self.epsilon), float(self.delta)))
        # The noise edge in the problem's units, nu = noise * c_F * R^2: R the augmented l2
        # row bound of data_norm (1 in units of a private bound), c_F the loss's
        # curvature bound. Below alpha = nu the eigenvalue floor, not the penalty, sets
        # how much the step amplifies the gradient noise in the flat directions.
        bounds = self._placeholder_bounds()
        loss = LogisticLoss() if outputs == 1 else MultinomialLogisticLoss(outputs)
        edge = (noise * hessian_frobenius_bound(loss, outputs)
                * self._row_norm_bound(bounds.data_norm, 2.0) ** 2)
        # The penalty DP Newton would run, in the same units as the edge (the planner's
        # own conversion: alpha="auto" is 1e-2 in units of the bound, alpha_ D^2 raw with
        # a declared data_norm=D), so the choice does not depend on the units of the data.
        alpha = self._raw_alpha(DPNewton, bounds, n, dim)
        return "newton" if noise <= AUTO_NEWTON_NOISE and alpha >= edge else "gd"

    def _encode_targets(self, y, bounds):
        classes = self._check_classes(y)
        if classes.size == 2:
            Y = np.where(y == classes[1], 1.0, -1.0)[:, None]
            return Y, LogisticLoss(), {"classes_": classes}
        Y = (y[:, None] == classes[None, :]).astype(float)
        return Y, MultinomialLogisticLoss(classes.size), {"classes_": classes}

    def predict_proba(self, X):
        """Predict the probability of each class.

        <<parameters_X>>

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            The probability of each class of ``classes_`` (in that order) for each row:
            the logistic function of the score for two classes, the softmax of the
            scores for more.
        """
        scores = self._decision_scores(X, "predict_proba")
        if not isinstance(scores, np.ndarray):  # on a device (array API)
            return namespace(scores).exp(self._device_log_proba(scores))
        if scores.shape[1] == 1:
            s = scores[:, 0]
            return np.column_stack([expit(-s), expit(s)])
        return np.exp(MultinomialLogisticLoss.log_proba(scores))

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        <<parameters_X>>

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            The natural logarithm of each class probability, computed without forming
            the probabilities (no underflow to ``-inf`` for confident scores).
        """
        scores = self._decision_scores(X, "predict_log_proba")
        if not isinstance(scores, np.ndarray):  # on a device (array API)
            return self._device_log_proba(scores)
        if scores.shape[1] == 1:
            s = scores[:, 0]
            return np.column_stack([-np.logaddexp(0, s), -np.logaddexp(0, -s)])
        return MultinomialLogisticLoss.log_proba(scores)

    @staticmethod
    def _device_log_proba(scores):
        """Log probabilities of scores on a device: the log softmax of ``[0, s]`` for two
        classes (``-log(1 + e^s)``, ``-log(1 + e^-s)``), of the scores for more."""
        xp = namespace(scores)
        if scores.shape[1] == 1:
            scores = xp.concat([xp.zeros_like(scores), scores], axis=1)
        return device_log_softmax(xp, scores)
