"""The Hessian of a GLM loss in one blocked pass: ``sum_i h_i kron x'_i x'_i^T``.

Shared by DP Newton (which releases it with noise, docs/algorithms/newton.md) and
objective perturbation (which minimises the perturbed objective exactly). The curvature
weights are clipped to the loss's declared ``curvature_bound``: a no-op for the exact
second derivatives, and the bound DP Newton's sensitivity relies on.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, softmax

from skdp.exceptions import IncompatibleSolverError
from skdp.losses import (
    HuberLoss,
    LogisticLoss,
    MultinomialLogisticLoss,
    SmoothedHingeLoss,
    SquaredLoss,
)
from skdp.solvers._blocks import Block
from skdp.solvers._device import device_pass, hessian_pass

__all__ = ["curvature", "curvature_grams", "hessian_block", "weighted_gram"]


def curvature(loss, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Second derivative of ``phi`` at the scores, per row (shape ``(n, K)``).

    Scalar losses: ``phi''(z_i, y_i)``, clipped to ``[0, curvature_bound]`` (a declared
    bound that then holds whatever the implementation computes). The multinomial loss: its
    softmax probabilities ``P`` (the Hessian in the score is ``diag(p) - p p^T``).

    Parameters
    ----------
    loss : GLMLoss
        Logistic, multinomial, squared, Huber or smoothed hinge.
    Z : ndarray of shape (n, K)
        Scores.
    Y : ndarray of shape (n, K)
        Encoded labels.

    Returns
    -------
    ndarray of shape (n, K)
        The curvature weights (or the probabilities, multinomial).

    Raises
    ------
    IncompatibleSolverError
        For a loss without a known second derivative.
    """
    if isinstance(loss, MultinomialLogisticLoss):
        return softmax(Z, axis=1)
    if isinstance(loss, SmoothedHingeLoss):
        gap = 1.0 - Y * Z
        c = np.where((gap > 0) & (gap < loss.smoothing), 1.0 / loss.smoothing, 0.0)
    elif isinstance(loss, LogisticLoss):
        s = expit(Z)
        c = s * (1.0 - s)
    elif isinstance(loss, HuberLoss):
        c = np.where(np.abs(Z - Y) < loss.huber_delta, 1.0, 0.0)
    elif isinstance(loss, SquaredLoss):
        c = np.ones_like(Z, dtype=float)
    else:  # refused before planning by the declared capabilities
        raise IncompatibleSolverError(f"no second derivative for {type(loss).__name__}")
    return np.clip(c, 0.0, float(loss.curvature_bound))


def weighted_gram(block: Block, weight: np.ndarray) -> np.ndarray:
    """``sum_i weight_i x'_i x'_i^T`` over one block of augmented, clipped rows."""
    X, p, c0 = block.X, block.n_params, block.intercept
    d = X.shape[1]
    w = weight if block.scale is None else weight * block.scale
    w2 = weight if block.scale is None else w * block.scale
    G = np.empty((p, p))
    if sp.issparse(X):
        G[:d, :d] = (X.T @ X.multiply(w2[:, None])).toarray()
    elif np.all(w2 >= 0):
        R = X * np.sqrt(w2)[:, None]
        G[:d, :d] = R.T @ R
    else:
        G[:d, :d] = X.T @ (X * w2[:, None])
    if c0:
        cross = c0 * np.asarray(X.T @ w).ravel()
        G[:d, d] = cross
        G[d, :d] = cross
        G[d, d] = c0 * c0 * float(np.sum(weight))
    return G


@device_pass(hessian_pass)
def hessian_block(block: Block, W: np.ndarray, loss) -> np.ndarray:
    """``sum_i h_i kron x'_i x'_i^T`` of one block, shape ``(p, K, p, K)``."""
    return curvature_grams(block, curvature(loss, block.scores(W), block.Y), loss, W.shape)


def curvature_grams(block: Block, C: np.ndarray, loss, shape: tuple[int, int]
                     ) -> np.ndarray:
    """``sum_i h_i kron x'_i x'_i^T`` of one block from its curvature weights ``C``
    (:func:`curvature`), shape ``(p, K, p, K)``."""
    p, k = shape
    H = np.zeros((p, k, p, k))
    if isinstance(loss, MultinomialLogisticLoss):
        for a in range(k):
            for b in range(a, k):
                G = weighted_gram(block, C[:, a] * ((a == b) - C[:, b]))
                H[:, a, :, b] = G
                if b != a:
                    H[:, b, :, a] = G
    else:
        for a in range(k):
            H[:, a, :, a] = weighted_gram(block, C[:, a])
    return H
