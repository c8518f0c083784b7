"""Differentially private logistic regression."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from skdp._array_api import device_log_softmax, namespace
from skdp._params import store_params
from skdp.linear_model._classifier import BaseDPClassifier
from skdp.linear_model._docs import shared_docs
from skdp.linear_model._inference import IntervalsMixin
from skdp.losses import LogisticLoss, MultinomialLogisticLoss

__all__ = ["DPLogisticRegression"]

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
    <<solver:"gd">>

        <<solvers>>

    <<alpha:1e-2>>
        The intercept is not penalised, except by ``"output_perturbation"``, whose
        sensitivity needs strong convexity in every coordinate; ``"svrg"`` and
        ``"output_perturbation"`` need ``alpha > 0``.
    <<bounds>>
    <<options>>
    <<threshold_fraction>>

    <<attributes:classifier>>
    coef_covariance_ : ndarray of shape (n_features + 1, n_features + 1) or None
        Approximate covariance of ``[coef_, intercept_]`` (the intercept last, when
        fitted): sampling plus privacy noise, from the Hessian and the noise law that
        ``solver="newton"`` releases, for two classes (post-processing; docs/inference.md).
        ``None`` for the other solvers and for more classes.
    standard_errors_ : ndarray of shape (n_features + 1,) or None
        Square roots of its diagonal.
    penalty_shift_ : ndarray of shape (n_features + 1,) or None
        First-order estimate of how far the L2 penalty moved each coefficient from the
        unpenalised minimiser, ``alpha H^-1 w_pen`` (from the released Hessian ``H``);
        :meth:`conf_int` warns when it exceeds a quarter of a standard error.

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
        noise_dominated="intercept_only",
        threshold_fraction="auto",
    ):
        store_params(self, locals())

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
