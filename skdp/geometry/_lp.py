"""The split l_p geometry of the l_p solvers: a p-norm mirror map on the penalised rows,
Euclidean on a free intercept row, with its closed-form constrained step (see
:mod:`skdp.geometry`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from skdp.geometry._maps import PNormMirrorMap, dual_exponent, pnorm

__all__ = ["LpDualIterate", "LpGeometry", "default_exponent", "lp_dual_step_vector"]


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
        return dual_exponent(self.p)

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

    def dual_iterate(self, shape: tuple[int, int]) -> LpDualIterate:
        """A mirror-descent iterate of ``shape`` at ``W = 0`` that keeps its dual point,
        so that each step is one closed-form map (:class:`LpDualIterate`)."""
        return LpDualIterate(self, shape)


class LpDualIterate:
    """An iterate ``W`` of mirror descent in an :class:`LpGeometry`, kept with its dual
    point ``theta = nabla Phi(W)`` (the mirror map's gradient); built by
    :meth:`LpGeometry.dual_iterate`, starting at ``W = 0``.

    The step ``W+ = argmin_{W in C} <eta g - nabla Phi(W), W> + Phi(W)``
    (``LpGeometry.prox(eta g - grad(W), 1)``) is computed as in the geometry's closed
    form: ``theta' = theta - eta g``, ``U = nabla Phi*(theta')`` and ``U`` scaled onto the
    ball when outside it. Keeping ``theta`` saves recomputing ``nabla Phi(W)`` each step:
    on the head block ``Phi`` is 2-homogeneous, so ``nabla Phi(c U) = c theta'`` for the
    radial scaling ``c > 0`` (the intercept block is Euclidean and never scaled). The head
    map is ``nabla Phi*(theta) = (p - 1) ||theta||_q^(2-q) sign(theta) |theta|^(q-1)``,
    evaluated on ``theta / m``, ``m = max |theta_j|`` (no under/overflow):
    ``(p - 1) m s^((2-q)/q) sign(theta) y^(q-1)`` with ``y = |theta| / m`` and
    ``s = sum y^q``; and ``||U||_p = (p - 1) ||theta||_q = (p - 1) m s^(1/q)``, since
    ``sum (y^(q-1))^p = s``. Post-processing of released quantities only.
    """

    def __init__(self, geometry: LpGeometry, shape: tuple[int, int]) -> None:
        self.p, self.q = geometry.p, geometry.q
        self.k, self.radius = geometry.n_penalized, geometry.radius
        self.W = np.zeros(shape)
        self.theta = np.zeros(shape)

    def step(self, direction: np.ndarray) -> np.ndarray:
        """``theta -= direction``; returns the new primal iterate ``W`` (a fresh array).

        With ``direction = eta g`` this is the mirror step ``LpGeometry.prox(eta g -
        grad(W), 1)`` from the current ``W``.
        """
        theta = self.theta
        theta -= direction
        k, p, q = self.k, self.p, self.q
        W = theta.copy()
        if k == 0 or (p == 2.0 and self.radius is None):
            return self._set(W)  # Euclidean and unconstrained: W = theta
        head = theta[:k]
        a = np.abs(head)
        m = float(np.maximum.reduce(a, axis=None))
        if not m > 0.0:  # theta = 0 (or NaN, kept as is)
            return self._set(W)
        a /= m  # not * (1 / m): 1 / m overflows for a subnormal m
        if p == 2.0:  # W = theta on the head too
            norm = m * math.sqrt(float(np.vdot(a, a)))
        else:
            y = a ** (q - 1.0)
            s = float(np.vdot(y, a))  # sum y^q, >= 1
            y *= (p - 1.0) * m * s ** ((2.0 - q) / q)
            np.copysign(y, head, out=W[:k])
            norm = (p - 1.0) * m * s ** (1.0 / q)
        if self.radius is not None and norm > self.radius:
            factor = self.radius / norm
            W[:k] *= factor
            head *= factor
        return self._set(W)

    def _set(self, W: np.ndarray) -> np.ndarray:
        self.W = W
        return W


def lp_dual_step_vector(theta: np.ndarray, W: np.ndarray, direction: np.ndarray, k: int,
                        p: float, q: float, radius: float) -> None:
    """:meth:`LpDualIterate.step` of a one-output iterate, in place, one entry at a time.

    ``theta`` and ``W`` are the iterate's dual and primal vectors (``n_params``), updated
    in place; ``radius = inf`` when unconstrained. The same map as the method (equal to
    rounding; tested), written with scalar loops so that the compiled kernels
    (:mod:`skdp.solvers._compiled`) can use it.
    """
    n = theta.shape[0]
    for j in range(n):
        theta[j] -= direction[j]
        W[j] = theta[j]
    if k == 0 or (p == 2.0 and radius == math.inf):
        return
    m = 0.0
    for j in range(k):
        a = abs(theta[j])
        if a != a:  # a NaN entry: W = theta (np.maximum.reduce propagates it)
            return
        m = max(m, a)
    if not m > 0.0:
        return
    if p == 2.0:
        s = 0.0
        for j in range(k):
            a = abs(theta[j]) / m
            s += a * a
        norm = m * math.sqrt(s)
    else:
        s = 0.0
        for j in range(k):
            a = abs(theta[j]) / m
            s += a ** (q - 1.0) * a
        scale = (p - 1.0) * m * s ** ((2.0 - q) / q)
        for j in range(k):
            W[j] = math.copysign((abs(theta[j]) / m) ** (q - 1.0) * scale, theta[j])
        norm = (p - 1.0) * m * s ** (1.0 / q)
    if norm > radius:
        factor = radius / norm
        for j in range(k):
            W[j] *= factor
            theta[j] *= factor
