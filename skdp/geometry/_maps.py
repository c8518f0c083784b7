"""Mirror maps (distance-generating functions) of the constraint sets' geometries.

Re-exported by :mod:`skdp.geometry`, which documents how each set chooses its map.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
from scipy.special import xlogy

__all__ = [
    "EntropyMirrorMap",
    "EuclideanMirrorMap",
    "L1PNormMirrorMap",
    "MirrorMap",
    "PNormMirrorMap",
    "pnorm",
]


def _check_dim(dim: int) -> int:
    if isinstance(dim, bool) or int(dim) != dim or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim}.")
    return int(dim)


def dual_exponent(p: float) -> float:
    """The Hoelder conjugate ``q`` of ``p`` (``1/p + 1/q = 1``): ``|<w, x>| <= ||w||_p
    ||x||_q``; ``1`` and ``inf`` are each other's."""
    p = float(p)
    if p == 1.0:
        return math.inf
    return 1.0 if math.isinf(p) else p / (p - 1.0)


def pnorm(x: np.ndarray, p: float) -> float:
    """``||x||_p`` of the flattened array, scaled by ``max |x_j|`` against overflow."""
    a = np.abs(np.ravel(np.asarray(x, dtype=float)))
    m = float(a.max(initial=0.0))
    if p == math.inf or m == 0 or not math.isfinite(m):
        return m
    return m * float(np.sum((a / m) ** p)) ** (1.0 / p)


# --------------------------------------------------------------------------------------
# Mirror maps
# --------------------------------------------------------------------------------------


class MirrorMap(ABC):
    """A strongly convex distance-generating function ``w`` for mirror descent.

    Attributes
    ----------
    strong_convexity : float
        Modulus ``mu`` of strong convexity of ``w`` with respect to the set's norm:
        ``bregman(x, y) >= mu / 2 ||x - y||^2`` on the set.
    """

    strong_convexity: float

    @abstractmethod
    def value(self, x: np.ndarray) -> float:
        """``w(x)``."""

    @abstractmethod
    def grad(self, x: np.ndarray) -> np.ndarray:
        """``nabla w(x)``: primal to dual."""

    @abstractmethod
    def grad_conjugate(self, theta: np.ndarray) -> np.ndarray:
        """``nabla w^*(theta)``: dual to primal (the inverse of :meth:`grad`)."""

    def for_size(self, size: int) -> MirrorMap:
        """The map used on a parameter of ``size`` coordinates (itself by default).

        A map that reads the dimension from its argument fixes it here once, so that a
        whole step uses one map (see :class:`L1PNormMirrorMap`).
        """
        return self

    def bregman(self, x: np.ndarray, y: np.ndarray) -> float:
        """``D_w(x, y) = w(x) - w(y) - <nabla w(y), x - y>``."""
        diff = np.ravel(np.asarray(x, dtype=float) - np.asarray(y, dtype=float))
        return self.value(x) - self.value(y) - float(np.ravel(self.grad(y)) @ diff)


class EuclideanMirrorMap(MirrorMap):
    """``w(x) = ||x||_2^2 / 2``: mirror descent reduces to gradient descent.

    ``strong_convexity = 1`` with respect to l2, and with respect to every l_p with
    ``p >= 2`` (``||x||_p <= ||x||_2``), which is how :class:`LpBall` uses it for p > 2.
    """

    strong_convexity = 1.0

    def __repr__(self) -> str:
        return "EuclideanMirrorMap()"

    def value(self, x: np.ndarray) -> float:
        return 0.5 * float(np.sum(np.square(x)))

    def grad(self, x: np.ndarray) -> np.ndarray:
        return np.array(x, dtype=float, copy=True)

    def grad_conjugate(self, theta: np.ndarray) -> np.ndarray:
        return np.array(theta, dtype=float, copy=True)


def _pnorm_grad(x: np.ndarray, p: float, scale: float) -> np.ndarray:
    """``scale * nabla (||x||_p^2 / 2) = scale ||x||_p^{2-p} sign(x) |x|^{p-1}``.

    The map is positively homogeneous of degree 1, so it is evaluated on ``x / max|x_j|``
    and scaled back (no overflow or underflow of ``|x|^{p-1}``).
    """
    x = np.asarray(x, dtype=float)
    m = float(np.max(np.abs(x), initial=0.0))
    if m == 0:
        return np.zeros_like(x)
    y = x / m
    return (scale * m * pnorm(y, p) ** (2.0 - p)) * np.sign(y) * np.abs(y) ** (p - 1.0)


@dataclass(frozen=True)
class PNormMirrorMap(MirrorMap):
    """The p-norm map ``w(x) = ||x||_p^2 / (2 (p - 1))`` for ``1 < p <= 2``.

    ``||x||_p^2 / 2`` is ``(p - 1)``-strongly convex with respect to ``||.||_p`` (Ball,
    Carlen and Lieb 1994; Ben-Tal, Margalit and Nemirovski 2001), so ``w`` is 1-strongly
    convex with respect to ``||.||_p``.

    With ``q = p / (p - 1)`` (so ``(p - 1)(q - 1) = 1``), the conjugate of
    ``c ||x||_p^2 / 2`` is ``||theta||_q^2 / (2 c)``; for ``c = 1 / (p - 1) = q - 1``:
    ``w^*(theta) = ||theta||_q^2 / (2 (q - 1))``. Hence

    - ``grad(x) = ||x||_p^{2-p} sign(x) |x|^{p-1} / (p - 1)``,
    - ``grad_conjugate(theta) = (p - 1) ||theta||_q^{2-q} sign(theta) |theta|^{q-1}``,

    inverse to each other (``||grad(x)||_q = ||x||_p / (p - 1)``).

    Parameters
    ----------
    p : float
        The exponent, ``1 < p <= 2``.
    strong_convexity : float, default=1.0
        The modulus with respect to the owning set's norm. ``1`` is the modulus with
        respect to ``||.||_p``; a set measured in another norm passes its own (see
        :meth:`L1Ball.mirror_map_for`).
    """

    p: float
    strong_convexity: float = 1.0

    def __post_init__(self) -> None:
        if not (1 < self.p <= 2):  # also rejects nan
            raise ValueError(f"PNormMirrorMap requires 1 < p <= 2, got p={self.p}.")
        mu = self.strong_convexity
        if not (mu > 0 and math.isfinite(mu)):
            raise ValueError(f"strong_convexity must be positive and finite, got {mu}.")

    @property
    def q(self) -> float:
        """The conjugate exponent ``p / (p - 1)``."""
        return dual_exponent(self.p)

    def value(self, x: np.ndarray) -> float:
        return pnorm(x, self.p) ** 2 / (2.0 * (self.p - 1.0))

    def grad(self, x: np.ndarray) -> np.ndarray:
        return _pnorm_grad(x, self.p, 1.0 / (self.p - 1.0))

    def grad_conjugate(self, theta: np.ndarray) -> np.ndarray:
        return _pnorm_grad(theta, self.q, self.p - 1.0)


class L1PNormMirrorMap(MirrorMap):
    """The p-norm map for the l1 geometry, ``p`` chosen from the argument's size ``d``.

    Uses :class:`PNormMirrorMap` with ``p(d) = 1 + 1 / ln d`` for ``d >= 3`` and
    ``p(d) = 2`` for ``d <= 2`` (where ``1 + 1 / ln d`` would exceed 2), after Ben-Tal,
    Margalit and Nemirovski (2001). ``grad`` and ``grad_conjugate`` read ``d`` from the
    size of their argument (primal and dual have the same size), so they stay inverse.

    Strong convexity with respect to l1: ``||v||_1 <= d^{1 - 1/p} ||v||_p`` and the
    p-norm map is 1-strongly convex in l_p, so the modulus in l1 is
    ``d^{-2 (1 - 1/p)}``. For ``d >= 3`` that is ``exp(-2 ln d / (1 + ln d)) > e^{-2}``,
    and ``1 / d >= 1 / 2`` for ``d <= 2``: ``strong_convexity = e^{-2}`` holds in every
    dimension. :meth:`L1Ball.mirror_map_for` gives the exact modulus for a known ``d``.
    """

    strong_convexity = math.exp(-2.0)

    def __repr__(self) -> str:
        return "L1PNormMirrorMap()"

    @staticmethod
    def exponent(dim: int) -> float:
        """``p(d)``: ``2`` for ``d <= 2``, else ``1 + 1 / ln d``."""
        dim = _check_dim(dim)
        return 2.0 if dim <= 2 else 1.0 + 1.0 / math.log(dim)

    @classmethod
    def for_dim(cls, dim: int) -> PNormMirrorMap:
        """The p-norm map for dimension ``dim`` with its exact l1 modulus."""
        p = cls.exponent(dim)
        return PNormMirrorMap(p, strong_convexity=float(dim) ** (-2.0 * (1.0 - 1.0 / p)))

    def for_size(self, size: int) -> PNormMirrorMap:
        """:meth:`for_dim` of ``max(size, 1)``."""
        return self.for_dim(max(size, 1))

    def value(self, x: np.ndarray) -> float:
        return self.for_dim(max(np.size(x), 1)).value(x)

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self.for_dim(max(np.size(x), 1)).grad(x)

    def grad_conjugate(self, theta: np.ndarray) -> np.ndarray:
        return self.for_dim(max(np.size(theta), 1)).grad_conjugate(theta)


@dataclass(frozen=True)
class EntropyMirrorMap(MirrorMap):
    """Negative entropy ``w(x) = sum_j x_j log x_j`` on the simplex of mass ``total``.

    ``grad(x) = 1 + log x`` and ``grad_conjugate(theta) = total * softmax(theta)``: with
    ``x = total a``, ``sup_{x in simplex} <theta, x> - w(x) = total logsumexp(theta) -
    total log(total)`` (the sup over probability vectors ``a`` of ``<theta, a> + H(a)`` is
    ``logsumexp(theta)``), whose gradient is ``total * softmax(theta)``.
    ``grad_conjugate(grad(x)) = total x / sum(x) = x`` for ``x`` in the simplex;
    ``grad(grad_conjugate(theta))`` equals ``theta`` up to an additive constant (the
    dual is defined modulo the normal of the simplex's affine hull).

    Strong convexity with respect to l1: for ``x = total a``, ``y = total b`` with ``a``,
    ``b`` probability vectors, ``D_w(x, y) = total KL(a || b) >= total ||a - b||_1^2 / 2``
    (Pinsker) ``= ||x - y||_1^2 / (2 total)``, so ``strong_convexity = 1 / total``.
    Matrices are treated as flattened vectors (one simplex over all entries).

    Parameters
    ----------
    total : float, default=1.0
        The simplex's total mass (``Simplex.radius``).
    """

    total: float = 1.0

    def __post_init__(self) -> None:
        if not (self.total > 0 and math.isfinite(self.total)):
            raise ValueError(f"total must be positive and finite, got {self.total}.")

    @property
    def strong_convexity(self) -> float:  # type: ignore[override]
        return 1.0 / self.total

    def value(self, x: np.ndarray) -> float:
        x = np.asarray(x, dtype=float)
        return float(np.sum(xlogy(x, x)))  # 0 log 0 = 0

    def grad(self, x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):  # log 0 = -inf on the boundary
            return 1.0 + np.log(np.asarray(x, dtype=float))

    def grad_conjugate(self, theta: np.ndarray) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        e = np.exp(theta - np.max(theta))  # shift-invariant; max term is exp(0) = 1
        return self.total * e / np.sum(e)
