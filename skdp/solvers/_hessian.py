"""The Hessian of a GLM loss in one blocked pass: ``sum_i h_i kron x'_i x'_i^T``.

Shared by DP Newton (which releases it with noise, docs/algorithms/newton.md) and
objective perturbation (which minimises the perturbed objective exactly). The curvature
weights are clipped to the loss's declared ``curvature_bound``: a no-op for the exact
second derivatives, and the bound DP Newton's sensitivity relies on.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit, softmax

from skdp._array_api import to_numpy
from skdp.exceptions import IncompatibleSolverError
from skdp.losses import (
    HuberLoss,
    LogisticLoss,
    MultinomialLogisticLoss,
    SmoothedHingeLoss,
    SquaredLoss,
)
from skdp.solvers._blocks import Block
from skdp.solvers._device import device_pass

__all__ = ["curvature", "curvature_grams", "device_curvature", "hessian_block"]


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


def device_curvature(loss, Z: Any, Y: Any, xp: Any) -> Any:
    """:func:`curvature` of scores on an array API device (the same cases, the same clip
    to ``[0, curvature_bound]``)."""
    zero, one = xp.zeros_like(Z), xp.ones_like(Z)
    if isinstance(loss, MultinomialLogisticLoss):
        E = xp.exp(Z - xp.max(Z, axis=1, keepdims=True))
        return E / xp.sum(E, axis=1, keepdims=True)
    if isinstance(loss, SmoothedHingeLoss):
        gap = 1.0 - Y * Z
        c = xp.where((gap > 0) & (gap < loss.smoothing), one / loss.smoothing, zero)
    elif isinstance(loss, LogisticLoss):
        e = xp.exp(-xp.abs(Z))
        c = e / ((1.0 + e) * (1.0 + e))
    elif isinstance(loss, HuberLoss):
        c = xp.where(xp.abs(Z - Y) < loss.huber_delta, one, zero)
    elif isinstance(loss, SquaredLoss):
        c = one
    else:  # refused before planning by the declared capabilities
        raise IncompatibleSolverError(f"no second derivative for {type(loss).__name__}")
    return xp.clip(c, min=0.0, max=float(loss.curvature_bound))


def hessian_pass(block, W: Any, loss) -> np.ndarray:
    """Device twin of :func:`hessian_block` (:mod:`skdp.solvers._device`)."""
    return curvature_grams(block, device_curvature(loss, block.scores(W), block.Y, block.xp),
                           loss, tuple(W.shape))


@device_pass(hessian_pass)
def hessian_block(block: Block, W: np.ndarray, loss) -> np.ndarray:
    """``sum_i h_i kron x'_i x'_i^T`` of one block, shape ``(p, K, p, K)``."""
    return curvature_grams(block, curvature(loss, block.scores(W), block.Y), loss, W.shape)


def curvature_grams(block: Block, C: np.ndarray, loss, shape: tuple[int, int]
                     ) -> np.ndarray:
    """``sum_i h_i kron x'_i x'_i^T`` of one block from its curvature weights ``C``
    (:func:`curvature`, or :func:`device_curvature` on a device block), shape ``(p, K, p,
    K)``, on the host."""
    p, k = shape
    H = np.zeros((p, k, p, k))
    if isinstance(loss, MultinomialLogisticLoss):
        for a in range(k):
            for b in range(a, k):
                G = to_numpy(block.weighted_gram(C[:, a] * (float(a == b) - C[:, b])),
                             np.float64)
                H[:, a, :, b] = G
                if b != a:
                    H[:, b, :, a] = G
    else:
        for a in range(k):
            H[:, a, :, a] = to_numpy(block.weighted_gram(C[:, a]), np.float64)
    return H
