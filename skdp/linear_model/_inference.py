"""Standard errors and confidence intervals from what a solver released (post-processing).

The argument and its assumptions are in docs/inference.md.
"""

from __future__ import annotations

import numpy as np

__all__ = ["coefficient_covariance", "penalty_shift"]


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
      gradient, of the released covariance ``S`` (DP Newton: ``(s^2 / m) I`` for ``m``
      averaged steps; sufficient statistics: the Gram's and moments' noise at the
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
    shift = vectors @ ((vectors.T @ (inference.penalty * coef)) / np.maximum(values, floor))
    if intercept_feature:
        shift[-1] *= intercept_feature
    return shift
