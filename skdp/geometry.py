"""Constraint sets: projection, linear minimisation oracle, diameters and mirror maps.

Every set offers the whole interface (so that a solver's requirements are checked up
front, never discovered at run time): Euclidean ``project``, ``lmo`` (Frank-Wolfe),
``diameter`` in a norm, the ``norm`` and ``dual_norm`` of the set's geometry, a
``mirror_map`` and a ``feasible_point`` to start from. Parameters may be matrices (one
column per class); sets act on them as flattened vectors (Frobenius geometry for the l2
ball) and ``project``/``lmo`` return arrays of the input's shape.

Mirror maps and the dimension: the p-norm map suited to the l1 ball uses
``p = 1 + 1 / ln d``, so it depends on the number of coordinates ``d``. Two entry points:
``constraint.mirror_map_for(d)`` returns the map for that dimension with its exact
strong-convexity modulus, while the dimension-free ``constraint.mirror_map`` returns
:class:`L1PNormMirrorMap`, which reads ``d`` from the size of each argument and states the
dimension-free modulus ``e^{-2}``. Solvers that know the parameter's size should call
``mirror_map_for``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import xlogy

from skdp.exceptions import IncompatibleSolverError

__all__ = [
    "Constraint",
    "EntropyMirrorMap",
    "EuclideanMirrorMap",
    "L1Ball",
    "L1PNormMirrorMap",
    "L2Ball",
    "LpBall",
    "MirrorMap",
    "PNormMirrorMap",
    "Simplex",
    "Unconstrained",
    "pnorm",
]


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------


def _check_radius(radius: float) -> None:
    if not (radius > 0 and math.isfinite(radius)):
        raise ValueError(f"radius must be positive and finite, got {radius}.")


def _check_norm_order(norm: float) -> float:
    """Validate the order ``s >= 1`` of an l_s norm (``math.inf`` allowed)."""
    s = float(norm)
    if not s >= 1:  # also rejects nan
        raise ValueError(f"norm must be an l_s order with s >= 1 (or inf), got {norm}.")
    return s


def _check_dim(dim: int) -> int:
    if isinstance(dim, bool) or int(dim) != dim or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim}.")
    return int(dim)


def pnorm(x: np.ndarray, p: float) -> float:
    """``||x||_p`` of the flattened array, scaled by ``max |x_j|`` against overflow."""
    a = np.abs(np.ravel(np.asarray(x, dtype=float)))
    m = float(a.max(initial=0.0))
    if p == math.inf or m == 0 or not math.isfinite(m):
        return m
    return m * float(np.sum((a / m) ** p)) ** (1.0 / p)


def _ball_diameter(radius: float, p: float, norm: float, dim: int | None, name: str) -> float:
    """Diameter in the l_s norm of the l_p ball of ``radius`` in dimension ``dim``.

    For ``s >= p``, ``||x||_s <= ||x||_p`` and ``+-radius e_1`` attain ``2 radius``. For
    ``s < p``, Hoelder gives ``||x||_s <= d^{1/s - 1/p} ||x||_p`` with equality on
    constant-magnitude vectors, so the diameter is ``2 radius d^{1/s - 1/p}``.
    """
    s = _check_norm_order(norm)
    if s >= p:
        return 2.0 * radius
    if dim is None:
        raise ValueError(
            f"{name}.diameter in the l{s:g} norm depends on the dimension d "
            f"(2 radius d^(1/{s:g} - 1/{p:g})); pass dim=d."
        )
    return 2.0 * radius * _check_dim(dim) ** (1.0 / s - 1.0 / p)


def _sorted_threshold(u: np.ndarray, total: float) -> float:
    """The ``theta`` with ``sum_j max(u_j - theta, 0) = total`` (``total > 0``).

    Sort-based method (Held et al. 1974; Duchi et al. 2008; Condat 2016): with ``u``
    sorted decreasingly and partial sums ``c_k``, the active set is the first ``rho``
    entries, ``rho = max{k : u_(k) > (c_k - total) / k}``, and
    ``theta = (c_rho - total) / rho``. ``k = 1`` always qualifies since ``total > 0``.
    """
    desc = np.sort(np.ravel(u))[::-1]
    partial = np.cumsum(desc)
    k = np.arange(1, desc.size + 1)
    rho = int(np.flatnonzero(desc * k > partial - total)[-1])
    return float((partial[rho] - total) / (rho + 1))


def _solve_power_linear(a: np.ndarray, c_pow: float, c_lin: float, alpha: float) -> np.ndarray:
    """Solve ``c_pow z^alpha + c_lin z = a`` for ``z >= 0`` elementwise (``a >= 0``).

    Requires ``alpha > 1`` and ``c_pow, c_lin > 0``. The left side is convex and
    increasing on ``z >= 0``, so Newton started right of the root decreases monotonically
    to it. The start ``min((a / c_pow)^{1/alpha}, a / c_lin)`` is right of the root (each
    term alone reaches ``a``) and within a factor ``2`` of it (at the root one term is at
    least ``a / 2``), so a handful of steps reach machine precision.
    """
    z = np.minimum((a / c_pow) ** (1.0 / alpha), a / c_lin)
    for _ in range(100):
        f = c_pow * z**alpha + c_lin * z - a
        # Rounding may leave f slightly negative at the root: never step right.
        step = np.maximum(f / (alpha * c_pow * z ** (alpha - 1.0) + c_lin), 0.0)
        z = z - step
        if np.all(step <= 1e-15 * z):
            break
    return z


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
        return self.p / (self.p - 1.0)

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


# --------------------------------------------------------------------------------------
# Constraint sets
# --------------------------------------------------------------------------------------


class Constraint(ABC):
    """A closed convex set.

    Every set but :class:`Simplex` contains the origin. Solvers must start from
    :meth:`feasible_point` (the origin by default), never from zeros directly.
    """

    #: ``True`` when the set is bounded (required by Frank-Wolfe and output bounds).
    bounded: bool
    #: The set's kind in solver capability declarations: ``"none"``, ``"l2"``,
    #: ``"l1"``, ``"lp"`` or ``"simplex"``.
    kind: str

    @abstractmethod
    def project(self, w: np.ndarray) -> np.ndarray:
        """Euclidean projection of ``w`` onto the set."""

    @abstractmethod
    def lmo(self, g: np.ndarray) -> np.ndarray:
        """A point ``s`` of the set minimising ``<g, s>``."""

    @abstractmethod
    def diameter(self, norm: float = 2, dim: int | None = None) -> float:
        """``sup_{a, b in set} ||a - b||`` in the l-``norm``.

        ``dim`` (the number of coordinates) is needed only where the diameter depends on
        it; a ``ValueError`` says so when it is missing.
        """

    @abstractmethod
    def norm(self, w: np.ndarray) -> float:
        """The norm defining the set's geometry."""

    @abstractmethod
    def dual_norm(self, g: np.ndarray) -> float:
        """The dual of :meth:`norm` (gradients are measured in it)."""

    @property
    @abstractmethod
    def mirror_map(self) -> MirrorMap:
        """The mirror map suited to the set's geometry."""

    def mirror_map_for(self, dim: int) -> MirrorMap:
        """The mirror map for parameters of ``dim`` coordinates (sharpest modulus)."""
        _check_dim(dim)
        return self.mirror_map

    def feasible_point(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """A point of the set of the given shape (the origin by default)."""
        return np.zeros(shape)

    def l2_bound(self, dim: int) -> float:
        """Public bound on ``||w||_2`` over the set in ``dim`` coordinates (``inf``: none).

        Origin-centred balls: ``||w||_2 <= ||w||_p <= radius`` for ``p <= 2`` and
        ``||w||_2 <= dim^(1/2 - 1/p) ||w||_p`` for ``p > 2``. Other sets: no bound.
        """
        return math.inf

    def score_exponent(self) -> float | None:
        """``q`` with ``|x^T w| <= radius ||x||_q`` on the set (Hoelder with the dual
        exponent), for the l1 and lp balls; ``None`` where the l2 pairing is the only one.
        """
        return None

    def contains(self, w: np.ndarray, tol: float = 1e-10) -> bool:
        """Whether ``w`` lies in the set up to ``tol``."""
        return bool(np.allclose(self.project(w), w, atol=tol, rtol=0))


class _EuclideanGeometry:
    """l2 geometry: the norm is l2 (Frobenius for matrices) and self-dual."""

    def norm(self, w: np.ndarray) -> float:
        return float(np.linalg.norm(np.ravel(w)))

    def dual_norm(self, g: np.ndarray) -> float:
        return float(np.linalg.norm(np.ravel(g)))


class _L1Geometry:
    """l1 geometry: the norm is l1, its dual l-inf."""

    def norm(self, w: np.ndarray) -> float:
        return float(np.sum(np.abs(w)))

    def dual_norm(self, g: np.ndarray) -> float:
        return float(np.max(np.abs(g), initial=0.0))


class Unconstrained(_EuclideanGeometry, Constraint):
    """The whole space: projection is the identity."""

    bounded = False
    kind = "none"

    def project(self, w: np.ndarray) -> np.ndarray:
        return w

    def lmo(self, g: np.ndarray) -> np.ndarray:
        raise IncompatibleSolverError(
            "the linear minimisation oracle of an unconstrained problem is unbounded; "
            "set constraint='l2' (or another bounded set) and a finite radius."
        )

    def diameter(self, norm: float = 2, dim: int | None = None) -> float:
        return math.inf

    @property
    def mirror_map(self) -> MirrorMap:
        return EuclideanMirrorMap()


@dataclass(frozen=True)
class L2Ball(_EuclideanGeometry, Constraint):
    """``{w : ||w||_2 <= radius}`` (Frobenius norm for matrices)."""

    radius: float
    bounded = True
    kind = "l2"

    def __post_init__(self) -> None:
        _check_radius(self.radius)

    def project(self, w: np.ndarray) -> np.ndarray:
        norm = np.linalg.norm(np.ravel(w))
        return w if norm <= self.radius else w * (self.radius / norm)

    def lmo(self, g: np.ndarray) -> np.ndarray:
        norm = np.linalg.norm(np.ravel(g))
        if norm == 0:
            return np.zeros_like(g, dtype=float)
        return -self.radius * g / norm

    def l2_bound(self, dim: int) -> float:
        return float(self.radius)

    def diameter(self, norm: float = 2, dim: int | None = None) -> float:
        # 2 radius in every l_s with s >= 2; 2 radius d^{1/s - 1/2} below (needs dim).
        return _ball_diameter(self.radius, 2.0, norm, dim, "L2Ball")

    @property
    def mirror_map(self) -> MirrorMap:
        return EuclideanMirrorMap()


@dataclass(frozen=True)
class L1Ball(_L1Geometry, Constraint):
    """``{w : ||w||_1 <= radius}`` (entrywise l1 norm for matrices).

    Its vertices are ``+-radius e_j``. Mirror map: the p-norm map with
    ``p = 1 + 1 / ln d`` (:class:`L1PNormMirrorMap`; :meth:`mirror_map_for` for a known
    ``d``).
    """

    radius: float
    bounded = True
    kind = "l1"

    def __post_init__(self) -> None:
        _check_radius(self.radius)

    def project(self, w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, dtype=float)
        a = np.abs(w)
        if a.sum() <= self.radius:
            return w
        # Soft-thresholding at the theta with sum_j max(|w_j| - theta, 0) = radius.
        theta = _sorted_threshold(a, self.radius)
        return np.sign(w) * np.maximum(a - theta, 0.0)

    def lmo(self, g: np.ndarray) -> np.ndarray:
        g = np.asarray(g, dtype=float)
        s = np.zeros(g.size)
        if g.size == 0 or not np.any(g):
            return s.reshape(g.shape)
        # min over the vertices +-radius e_j of <g, s> = -radius ||g||_inf.
        j = int(np.argmax(np.abs(np.ravel(g))))
        s[j] = -self.radius * np.sign(np.ravel(g)[j])
        return s.reshape(g.shape)

    def l2_bound(self, dim: int) -> float:
        return float(self.radius)

    def score_exponent(self) -> float:
        return math.inf

    def diameter(self, norm: float = 2, dim: int | None = None) -> float:
        # ||x||_s <= ||x||_1 for every s >= 1; +-radius e_1 attain 2 radius.
        return _ball_diameter(self.radius, 1.0, norm, dim, "L1Ball")

    @property
    def mirror_map(self) -> MirrorMap:
        return L1PNormMirrorMap()

    def mirror_map_for(self, dim: int) -> MirrorMap:
        """:class:`PNormMirrorMap` with ``p(d)`` and modulus ``d^{-2 (1 - 1/p)}`` in l1."""
        return L1PNormMirrorMap.for_dim(dim)


@dataclass(frozen=True)
class LpBall(Constraint):
    """``{w : ||w||_p <= radius}`` for ``1 < p < inf`` (entrywise for matrices).

    Projection has no closed form: see :meth:`project`. Mirror map: the p-norm map
    (:class:`PNormMirrorMap`, modulus 1 in l_p) for ``p <= 2``; for ``p > 2``,
    ``||x||_p^2`` has no dimension-free modulus in l_p, and the Euclidean map is used
    (modulus 1 in l_p, since ``||x||_p <= ||x||_2``).
    """

    radius: float
    p: float
    bounded = True
    kind = "lp"

    def __post_init__(self) -> None:
        _check_radius(self.radius)
        if not (1 < self.p < math.inf):  # also rejects nan
            raise ValueError(
                f"LpBall requires 1 < p < inf, got p={self.p} (use L1Ball for p = 1)."
            )

    @property
    def q(self) -> float:
        """The dual exponent ``p / (p - 1)``."""
        return self.p / (self.p - 1.0)

    def project(self, w: np.ndarray) -> np.ndarray:
        """Euclidean projection, to about machine precision.

        KKT for ``min ||x - v||^2 / 2`` s.t. ``||x||_p^p <= 1`` (after dividing by the
        radius): ``x_j = sign(v_j) t_j`` with ``t_j + lambda p t_j^{p-1} = |v_j|``, and
        ``lambda >= 0`` such that ``||t(lambda)||_p = 1``. Each ``t_j(lambda)`` is found by
        a vectorised monotone Newton method, ``lambda`` by Brent's method on the bracket
        ``[0, 2 ||v||_q / p]`` (``t_j <= (|v_j| / (lambda p))^{q-1}`` gives
        ``||t||_p^p <= (lambda p)^{-q} ||v||_q^q = 2^{-q} < 1`` at the upper end). The
        result is finally rescaled onto the sphere. Points inside are returned unchanged.
        """
        w = np.asarray(w, dtype=float)
        p = self.p
        a = np.abs(np.ravel(w)) / self.radius
        if pnorm(a, p) <= 1.0:
            return w

        def t_of(lam: float) -> np.ndarray:
            if lam == 0:
                return a
            if p == 2:
                return a / (1.0 + 2.0 * lam)
            if p > 2:  # t + (lam p) t^{p-1} = a, convex in t
                return _solve_power_linear(a, lam * p, 1.0, p - 1.0)
            # p < 2: in s = t^{p-1}, s^{1/(p-1)} + (lam p) s = a is convex in s.
            return _solve_power_linear(a, 1.0, lam * p, 1.0 / (p - 1.0)) ** (1.0 / (p - 1.0))

        upper = 2.0 * pnorm(a, self.q) / p
        lam = brentq(
            lambda lam: pnorm(t_of(lam), p) - 1.0,
            0.0,
            upper,
            xtol=1e-16 * upper,
            rtol=4 * np.finfo(float).eps,
            maxiter=200,
        )
        t = t_of(lam)
        t = t / pnorm(t, p)
        return self.radius * np.sign(w) * t.reshape(w.shape)

    def lmo(self, g: np.ndarray) -> np.ndarray:
        """``s = -radius sign(g) |g|^{q-1} / ||g||_q^{q-1}``: Hoelder's equality case.

        ``||s||_p = radius`` (as ``(q - 1) p = q``) and ``<g, s> = -radius ||g||_q``.
        """
        g = np.asarray(g, dtype=float)
        m = float(np.max(np.abs(g), initial=0.0))
        if m == 0:
            return np.zeros_like(g)
        h = g / m  # the formula is invariant to scaling g
        mag = np.abs(h) ** (self.q - 1.0)
        return -self.radius * np.sign(h) * mag / pnorm(h, self.q) ** (self.q - 1.0)

    def l2_bound(self, dim: int) -> float:
        p = float(self.p)
        return float(self.radius) * (1.0 if p <= 2 else dim ** (0.5 - 1.0 / p))

    def score_exponent(self) -> float:
        p = float(self.p)
        return p / (p - 1.0)

    def diameter(self, norm: float = 2, dim: int | None = None) -> float:
        # 2 radius in every l_s with s >= p; 2 radius d^{1/s - 1/p} below (needs dim).
        return _ball_diameter(self.radius, self.p, norm, dim, "LpBall")

    def norm(self, w: np.ndarray) -> float:
        return pnorm(w, self.p)

    def dual_norm(self, g: np.ndarray) -> float:
        return pnorm(g, self.q)

    @property
    def mirror_map(self) -> MirrorMap:
        return PNormMirrorMap(self.p) if self.p <= 2 else EuclideanMirrorMap()


@dataclass(frozen=True)
class Simplex(_L1Geometry, Constraint):
    """``{w : w >= 0, sum_j w_j = radius}`` (over all entries for matrices).

    It does not contain the origin: :meth:`feasible_point` is the uniform point. Its
    vertices are ``radius e_j``; mirror map: negative entropy (:class:`EntropyMirrorMap`).
    """

    radius: float = 1.0
    bounded = True
    kind = "simplex"

    def __post_init__(self) -> None:
        _check_radius(self.radius)

    def project(self, w: np.ndarray) -> np.ndarray:
        w = np.asarray(w, dtype=float)
        if w.size == 0:
            raise ValueError("the simplex of an empty parameter is empty.")
        # x = max(w - theta, 0) with theta such that sum x = radius.
        return np.maximum(w - _sorted_threshold(w, self.radius), 0.0)

    def lmo(self, g: np.ndarray) -> np.ndarray:
        g = np.asarray(g, dtype=float)
        s = np.zeros(g.size)
        s[int(np.argmin(np.ravel(g)))] = self.radius  # min over vertices radius e_j
        return s.reshape(g.shape)

    def diameter(self, norm: float = 2, dim: int | None = None) -> float:
        s = _check_norm_order(norm)
        if dim is not None and _check_dim(dim) == 1:
            return 0.0  # a single point
        # ||a - b||_s is convex, so maximal at two vertices: ||radius (e_i - e_j)||_s =
        # 2^{1/s} radius (l1: 2 radius, l2: sqrt(2) radius, l_inf: radius), d >= 2.
        return 2.0 ** (1.0 / s) * self.radius

    @property
    def mirror_map(self) -> MirrorMap:
        return EntropyMirrorMap(self.radius)

    def feasible_point(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """The uniform point ``radius / size``."""
        size = math.prod(shape) if isinstance(shape, tuple) else int(shape)
        if size == 0:
            raise ValueError("the simplex of an empty parameter is empty.")
        return np.full(shape, self.radius / size)
