"""Standard errors and confidence intervals from what a solver released (post-processing).

The argument and its assumptions are in docs/inference.md.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm
from sklearn.utils.validation import check_is_fitted

from skdp._array_api import to_device, to_numpy
from skdp._warnings import warn_user

__all__ = ["PENALTY_SHIFT_WARNING", "IntervalsMixin", "coefficient_covariance",
           "penalty_shift"]

#: :meth:`IntervalsMixin.conf_int` warns when the L2 terms move a coefficient by more
#: than this many standard errors (coverage of 95% intervals falls below 94%).
PENALTY_SHIFT_WARNING = 0.25


def coefficient_covariance(inference, *, n_features: int, intercept_feature: float
                           ) -> np.ndarray:
    """Approximate covariance of the released coefficients ``[coef_, intercept_]``.

    Two independent parts, both computed from released quantities and public constants:

    - **sampling**: the sandwich ``phi A^-1 H A^-1 / n`` of the regularised M-estimator,
      with ``A`` the released Hessian of the penalised mean objective, ``H = A - diag(P)``
      that of the loss (its PSD part) and ``phi`` the dispersion: the per-example
      gradients' covariance is ``phi H`` for a well-specified model (logistic: ``phi = 1``,
      the information identity, as statsmodels' ``Logit``; squared loss: ``phi = sigma^2``,
      the residual variance, as statsmodels' ``OLS``);
    - **privacy noise**: the output carries ``-A^-1 xi`` with ``xi`` the noise in its mean
      gradient, of the released covariance ``S`` (DP Newton: the ``m`` averaged steps'
      diagonal covariances summed over ``m^2``, ``(s^2 / m) I`` when isotropic;
      sufficient statistics: the Gram's and moments' noise at the
      output), so ``A^-1 S A^-1``.

    Parameters
    ----------
    inference : skdp.solvers._base.Inference
        What the solver released (one output).
    n_features : int
        Number of features; an intercept, if any, is the next coordinate.
    intercept_feature : float
        The constant feature's value ``c`` in the solver's rows (the intercept is ``c``
        times its coefficient); 0 without an intercept.

    Returns
    -------
    ndarray of shape (n_features + 1, n_features + 1) or (n_features, n_features)
        The covariance, the intercept last.
    """
    A = np.asarray(inference.hessian, dtype=float)
    A_inv = np.linalg.inv(A)
    A_inv = 0.5 * (A_inv + A_inv.T)
    values, vectors = np.linalg.eigh(A - np.diag(inference.penalty))
    H = (vectors * np.maximum(values, 0.0)) @ vectors.T
    sampling = inference.dispersion * (A_inv @ H @ A_inv) / inference.n_samples
    noise = A_inv @ np.asarray(inference.noise_covariance, dtype=float) @ A_inv
    cov = sampling + noise
    scale = np.ones(A.shape[0])
    if intercept_feature:
        scale[n_features] = intercept_feature
    return cov * np.outer(scale, scale)


def penalty_shift(inference, coef: np.ndarray, *, intercept_feature: float) -> np.ndarray:
    """First-order shift of the coefficients caused by the L2 penalty, ``H^-1 (alpha P w)``.

    The penalised minimiser ``w`` solves ``grad L(w) + alpha P w = 0``; one Newton step on
    the unpenalised loss from ``w`` moves it by ``H^-1 alpha P w`` (``H`` the loss's
    Hessian: the released ``A`` minus the penalty). Released quantities only.

    Parameters
    ----------
    inference : skdp.solvers._base.Inference
        What the solver released (one output).
    coef : ndarray of shape (n_params,)
        The solver's coefficients (the intercept's in solver units, last).
    intercept_feature : float
        The constant feature's value (0 without an intercept).

    Returns
    -------
    ndarray of shape (n_params,)
        The shift in the estimator's units (the intercept's times ``intercept_feature``).
    """
    H = np.asarray(inference.hessian, dtype=float) - np.diag(inference.penalty)
    values, vectors = np.linalg.eigh(0.5 * (H + H.T))
    floor = max(float(values.max(initial=0.0)) * 1e-12, np.finfo(float).tiny)
    pulled = coef if inference.penalty_centre is None else coef - inference.penalty_centre
    shift = vectors @ ((vectors.T @ (inference.penalty * pulled)) / np.maximum(values, floor))
    if intercept_feature:
        shift[-1] *= intercept_feature
    return shift


class IntervalsMixin:
    """Standard errors and confidence intervals of the estimators whose solver releases
    what they need (:class:`~skdp.solvers._base.Inference`): ``coef_covariance_``,
    ``standard_errors_``, ``penalty_shift_`` and :meth:`conf_int`.

    The estimator names what the intervals need in ``_intervals_need`` and the setting
    that gives it in ``_intervals_fix`` (the error of :meth:`conf_int`).
    """

    _intervals_need = ""
    _intervals_fix = ""
    # Read by the planning (ProblemSpec.inference): the solver releases what the standard
    # errors need only where they are computed.
    _offers_intervals = True

    def _set_fitted(self, result, solver, spec, label_attrs, bounds, ledger, spent,
                    like=None):
        super()._set_fitted(result, solver, spec, label_attrs, bounds, ledger, spent, like)
        self.coef_covariance_ = self.standard_errors_ = self.penalty_shift_ = None
        if result.inference is not None and spec.n_outputs == 1:
            # Post-processing of the solver's releases (docs/inference.md).
            c = self._intercept_feature(bounds.data_norm)
            self.coef_covariance_ = coefficient_covariance(
                result.inference, n_features=spec.n_params - int(self.fit_intercept),
                intercept_feature=c)
            self.standard_errors_ = np.sqrt(np.diag(self.coef_covariance_))
            self.penalty_shift_ = penalty_shift(result.inference, result.coef[:, 0],
                                                intercept_feature=c)
            if like is not None:  # fitted on an array API X: in its namespace and device
                for name in ("coef_covariance_", "standard_errors_", "penalty_shift_"):
                    setattr(self, name, to_device(getattr(self, name), like))

    def conf_int(self, alpha=0.05):
        """Confidence intervals of the coefficients (and the intercept, last).

        Normal intervals ``estimate -/+ z_(1 - alpha/2) standard_errors_``, the standard
        errors covering both the sampling error and the privacy noise (post-processing of
        the fit's releases: no budget). They assume a well-specified model and no clipped
        record: declare ``data_norm`` (and a regressor's ``y_bound``) at least the
        largest row norm (label) from public knowledge (a private bound at a quantile
        clips records and moves the target), and keep ``alpha`` small against ``1 / n``
        (the intervals are for the penalised minimiser). Method and measured coverage:
        docs/inference.md.

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
            If ``alpha`` is not in ``(0, 1)`` or the fit released nothing to compute
            them from (another solver; see the message).
        """
        check_is_fitted(self)
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}; set alpha to 0.05 "
                             "for 95% intervals.")
        if self.coef_covariance_ is None:
            if self.solver_.name == "intercept_only" and self.solver != "intercept_only":
                # Decided from public quantities (docs/algorithms/intercept_only.md).
                raise ValueError(
                    "conf_int has nothing to read: this fit was noise-dominated and "
                    "released the intercept-only model (the private mean target) instead "
                    "of running its solver. Raise epsilon, or set noise_dominated='fit' "
                    "to run the solver anyway.")
            if (self.solver_.releases_inference
                    and "threshold" in dict(getattr(self.privacy_ledger_, "parts", ()))):
                # DP Newton released its Hessian, but the threshold replaced its intercept.
                chosen = isinstance(self.solver, str) and self.solver == "auto"
                raise ValueError(
                    "conf_int has no intervals for this fit: its intercept was chosen by "
                    "the private threshold after the solver (threshold_fraction), and the "
                    "released Hessian describes the solver's own intercept. Set "
                    "threshold_fraction=0" + (" (or solver='newton')." if chosen else "."))
            if getattr(self, "constraint", None) is not None and \
                    self.solver_.releases_inference:
                # Public: the settings (ProblemSpec.standard_errors).
                raise ValueError(
                    "conf_int has no intervals for a constrained fit: a minimiser held on "
                    "the constraint's boundary has no normal law, so the fit released no "
                    "standard errors. Set constraint=None.")
            raise ValueError(
                f"conf_int needs {self._intervals_need}; this fit used solver "
                f"{self.solver_.name!r}"
                + (f" with {len(self.classes_)} classes" if hasattr(self, "classes_")
                   else "") + f". {self._intervals_fix}.")
        estimate = np.concatenate([to_numpy(self.coef_).ravel(),
                                   np.atleast_1d(to_numpy(self.intercept_))
                                   if self.fit_intercept else []])
        errors = to_numpy(self.standard_errors_)
        shift = to_numpy(self.penalty_shift_) / errors
        if np.max(np.abs(shift)) > PENALTY_SHIFT_WARNING:
            # Released quantities only (the coefficients and their Hessian): no data.
            warn_user(
                f"the L2 terms (alpha={self.alpha_:g}, or the solver's "
                f"ridge) move the coefficients by up to {np.max(np.abs(shift)):.2g} "
                "standard errors (estimated from the released Hessian): the intervals are "
                "centred on the penalised minimiser, not on the model's parameter. Refit "
                "with a smaller alpha for inference.", UserWarning)
        half = norm.ppf(1.0 - alpha / 2.0) * errors
        return np.column_stack([estimate - half, estimate + half])
