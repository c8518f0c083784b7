"""The split l_p geometry of the l_p solvers: a p-norm mirror map on the penalised rows,
Euclidean on a free intercept row, with its closed-form constrained step (see
:mod:`skdp.geometry`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skdp.geometry._maps import PNormMirrorMap, pnorm

__all__ = ["LpGeometry", "default_exponent"]


def default_exponent(dim: int) -> float:
    """``p = 1 + 1 / ln d``, capped at ``2`` (``d <= 2``).

    Ben-Tal, Margalit & Nemirovski's choice for l1-like geometry: ``||.||_p`` is within a
    factor ``e`` of ``||.||_1`` on ``R^d`` and the p-norm map has modulus ``1`` in l_p.
    For ``d <= 2`` (``1 + 1/ln d >= 2.4``) the Euclidean ``p = 2`` is used.
    """
    return 2.0 if dim <= 2 else min(2.0, 1.0 + 1.0 / math.log(dim))


@dataclass(frozen=True)
class LpGeometry:
    """The l_p geometry of a problem: exponent, dual exponent, mirror map and radius.

    The mirror map is ``Phi(W) = ||W[:k]||_p^2 / (2 (p - 1)) + ||W[k:]||_2^2 / 2`` with
    ``k = n_penalized`` (entrywise norms; ``p = 2`` is the Euclidean map): the p-norm map
    (1-strongly convex in l_p) on the penalised and constrained rows, the Euclidean map on
    the free intercept row. It is separable, so the constrained mirror step has a closed
    form (:meth:`prox`). All of it acts on released (noisy) quantities: post-processing.

    Attributes
    ----------
    p : float
        Exponent, ``1 < p <= 2``.
    n_penalized : int
        Rows of ``W`` that carry the l_p geometry (and the constraint, if any).
    radius : float or None
        Radius of the l_p ball constraining ``W[:n_penalized]`` (``None``: unconstrained).
    """

    p: float
    n_penalized: int
    radius: float | None

    @property
    def q(self) -> float:
        """Dual exponent ``p / (p - 1)`` (``2`` for ``p = 2``)."""
        return self.p / (self.p - 1.0)

    def _map(self) -> PNormMirrorMap | None:
        return None if self.p == 2.0 else PNormMirrorMap(self.p)

    def grad(self, W: np.ndarray) -> np.ndarray:
        """``nabla Phi(W)``."""
        out = np.array(W, dtype=float)
        k, pmap = self.n_penalized, self._map()
        if pmap is not None:
            out[:k] = pmap.grad(W[:k])
        return out

    def value(self, W: np.ndarray) -> float:
        """``Phi(W)``."""
        k, pmap = self.n_penalized, self._map()
        head = 0.5 * float(np.sum(W[:k] ** 2)) if pmap is None else pmap.value(W[:k])
        return head + 0.5 * float(np.sum(W[k:] ** 2))

    def prox(self, C: np.ndarray, c: float) -> np.ndarray:
        """``argmin_{W feasible} <C, W> + c Phi(W)`` (``c > 0``), in closed form.

        The objective separates over the two blocks. Intercept block: ``-C[k:] / c``.
        Head block: unconstrained minimiser ``U = nabla phi*(-C[:k] / c)`` (``phi*`` the
        conjugate of the p-norm map). On the sphere ``||w||_p = rho``, ``<C, w>`` is
        minimised by Hoelder's equality case, which is the direction of ``U`` for every
        ``rho``; the remaining function of ``rho``, ``-rho ||C||_q + c rho^2 / (2 (p-1))``,
        is convex with minimiser ``||U||_p = (p - 1) ||C||_q / c``. So the constrained
        minimiser is ``U`` scaled radially onto the ball when ``||U||_p > radius``.
        """
        k, pmap = self.n_penalized, self._map()
        W = -np.asarray(C, dtype=float) / c
        if pmap is not None:
            W[:k] = pmap.grad_conjugate(W[:k])
        if self.radius is not None:
            head = W[:k]
            norm = pnorm(head, self.p)
            if norm > self.radius:
                W[:k] = head * (self.radius / norm)
        return W

    def scale_radius(self) -> float:
        """Radius used by step-size heuristics (1 when unconstrained)."""
        return 1.0 if self.radius is None else float(self.radius)
