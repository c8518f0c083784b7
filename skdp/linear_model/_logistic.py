"""Differentially private logistic regression."""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from scipy.stats import norm
from sklearn.utils.validation import check_is_fitted

from skdp._array_api import device_log_softmax, namespace, to_device, to_numpy
from skdp._params import store_params
from skdp._warnings import warn_user
from skdp.linear_model._classifier import BaseDPClassifier
from skdp.linear_model._docs import shared_docs
from skdp.linear_model._inference import coefficient_covariance, penalty_shift
from skdp.losses import LogisticLoss, MultinomialLogisticLoss

__all__ = ["DPLogisticRegression"]

#: :meth:`DPLogisticRegression.conf_int` warns when the L2 penalty moves a coefficient by
#: more than this many standard errors (coverage of 95% intervals falls below 94%).
PENALTY_SHIFT_WARNING = 0.25


@shared_docs
class DPLogisticRegression(BaseDPClassifier):
    """Logistic regression with (epsilon, delta)-differential privacy.

    Minimises ``mean_i loss_i + (alpha / 2) ||coef||^2`` (binary logistic loss for two
    classes, multinomial with ONE joint calibration for more) with a private solver.

    Parameters
    ----------
    <<epsilon>>
    <<delta:1e-5>>
    <<classes>>
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

    def _set_fitted(self, result, solver, spec, label_attrs, bounds, ledger, spent,
                    like=None):
        super()._set_fitted(result, solver, spec, label_attrs, bounds, ledger, spent, like)
        self.coef_covariance_ = self.standard_errors_ = self.penalty_shift_ = None
        if result.inference is not None and spec.n_outputs == 1:
            # Post-processing of the solver's releases (docs/inference.md).
            self.coef_covariance_ = coefficient_covariance(
                result.inference, n_features=spec.n_params - int(self.fit_intercept),
                intercept_feature=self._intercept_feature(bounds.data_norm))
            self.standard_errors_ = np.sqrt(np.diag(self.coef_covariance_))
            self.penalty_shift_ = penalty_shift(
                result.inference, result.coef[:, 0],
                intercept_feature=self._intercept_feature(bounds.data_norm))
            if like is not None:  # fitted on an array API X: in its namespace and device
                for name in ("coef_covariance_", "standard_errors_", "penalty_shift_"):
                    setattr(self, name, to_device(getattr(self, name), like))

    def conf_int(self, alpha=0.05):
        """Confidence intervals of the coefficients (and the intercept, last).

        Normal intervals ``estimate -/+ z_(1 - alpha/2) standard_errors_``, the standard
        errors covering both the sampling error and the privacy noise. They need
        ``solver="newton"`` (which releases the Hessian), two classes, a well-specified
        logistic model, and no clipped row: declare ``data_norm`` at least the largest
        row norm (a private bound at a quantile clips rows and moves the target), and
        keep ``alpha`` small against ``1 / n`` (the intervals are for the penalised
        minimiser). Measured coverage: docs/inference.md.

        Parameters
        ----------
        alpha : float, default=0.05
            One minus the confidence level, in ``(0, 1)``.

        Returns
        -------
        ndarray of shape (n_features + 1, 2) or (n_features, 2)
            Lower and upper bounds, one row per coefficient (the intercept last when
            ``fit_intercept=True``), as statsmodels' ``conf_int``.

        Raises
        ------
        ValueError
            If ``alpha`` is not in ``(0, 1)`` or the fit released no Hessian (another
            solver, or more than two classes).
        """
        check_is_fitted(self)
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}; set alpha to 0.05 "
                             "for 95% intervals.")
        if self.coef_covariance_ is None:
            raise ValueError(
                f"conf_int needs the Hessian that solver='newton' releases, for two "
                f"classes; this fit used solver {self.solver_.name!r} with "
                f"{len(self.classes_)} classes. Set solver='newton'.")
        estimate = np.concatenate([to_numpy(self.coef_).ravel(),
                                   to_numpy(self.intercept_) if self.fit_intercept else []])
        errors = to_numpy(self.standard_errors_)
        shift = to_numpy(self.penalty_shift_) / errors
        if np.max(np.abs(shift)) > PENALTY_SHIFT_WARNING:
            # Released quantities only (the coefficients and their Hessian): no data.
            warn_user(
                f"the L2 penalty alpha={self.alpha:g} moves the coefficients by up to "
                f"{np.max(np.abs(shift)):.2g} standard errors (estimated from the released "
                "Hessian): the intervals are centred on the penalised minimiser, not on "
                "the model's parameter. Refit with a smaller alpha for inference.",
                UserWarning)
        half = norm.ppf(1.0 - alpha / 2.0) * errors
        return np.column_stack([estimate - half, estimate + half])

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
