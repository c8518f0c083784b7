"""The constraint sets (see :mod:`skdp.geometry`)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from skdp.exceptions import IncompatibleSolverError
from skdp.geometry._maps import (
    EntropyMirrorMap,
    EuclideanMirrorMap,
    L1PNormMirrorMap,
    MirrorMap,
    PNormMirrorMap,
    _check_dim,
    dual_exponent,
    pnorm,
)
from skdp.geometry._mirror import (
    MirrorGeometry,
    _euclidean_geometry,
    _pnorm_geometry,
    _radial_projection,
)
from skdp.geometry._steps import (
    _l1_pnorm_step,
    _lp_gradient_step,
    l1_ball_gradient_step,
    simplex_gradient_step,
)

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

    @staticmethod
    def norm_ball(p: float, radius: float) -> Constraint:
        """The origin-centred ball ``{||x||_p <= radius}`` (``p`` in ``(1, 2]``; no
        constraint for an infinite radius): how a mirror geometry builds the ball of its
        map's own norm without importing the set classes."""
        if not math.isfinite(radius):
            return Unconstrained()
        if p == 2.0:
            return L2Ball(radius)
        return LpBall(radius, p)

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

    def support_pairing(self) -> tuple[float, float]:
        """``(radius, q)`` with ``sup_{u in set} <x, u> <= radius ||x||_q`` (Hoelder).

        ``(inf, 2)`` for an unbounded set. Unlike :meth:`score_exponent`, the l2 ball and
        the simplex state their pairing too (``q = 2`` and ``q = inf``).
        """
        return math.inf, 2.0

    def contains(self, w: np.ndarray, tol: float = 1e-10) -> bool:
        """Whether ``w`` lies in the set up to ``tol``."""
        return bool(np.allclose(self.project(w), w, atol=tol, rtol=0))

    # -- mirror-descent geometry ----------------------------------------------------------
    def mirror_geometry(self, dim: int) -> MirrorGeometry:
        """The norm, mirror map and constants mirror-descent solvers run in, for
        parameters of ``dim`` coordinates (see :class:`MirrorGeometry`)."""
        raise IncompatibleSolverError(
            f"{type(self).__name__} has no mirror-descent geometry (norm, mirror map and "
            "exact steps); use constraint='l2', 'l1', 'lp' or the simplex."
        )

    def mirror_step(self, mirror_map: MirrorMap, x: np.ndarray, g: np.ndarray,
                    eta: float) -> np.ndarray:
        """One exact constrained mirror step.

        ``x_+ = argmin_{x' in C} <g, x'> + D_w(x', x) / eta``; equivalently
        ``argmin_{x' in C} w(x') - <theta, x'>`` with ``theta = nabla w(x) - eta g`` (the
        Bregman projection of ``nabla w^*(theta)`` onto ``C``).

        Supported pairs (each exact; a ``1-D`` root where there is no closed form):

        * Euclidean map, any set: the Euclidean projection of ``x - eta g``.
        * p-norm map ``||x||_p^2 / (2(p-1))`` and the origin-centred l_p ball of the same
          ``p`` (or the l2 ball for ``p = 2``, or no constraint): for a fixed norm
          ``||x'||_p = s`` the objective is minimised along Hoelder's direction of
          ``theta``, which is the direction of ``nabla w^*(theta)``, and the remaining
          convex function ``s^2 / (2(p-1)) - s ||theta||_q`` of ``s`` is minimised at
          ``(p-1) ||theta||_q = ||nabla w^*(theta)||_p`` clipped to ``[0, R]``: rescale
          ``nabla w^*(theta)`` onto the ball if it lies outside.
        * p-norm map and the l1 ball (the l1 geometry, ``p = 1 + 1/ln d``):
          soft-thresholding in the dual (:func:`skdp.geometry._steps._l1_pnorm_step`).
        * Negative entropy and the simplex: the multiplicative-weights update.

        Parameters
        ----------
        mirror_map : MirrorMap
            The map ``w`` (``self.mirror_map_for(x.size)`` for the set's own geometry).
        x : ndarray
            Current point, in the set.
        g : ndarray of the shape of ``x``
            The (noisy) gradient.
        eta : float
            Step size, ``> 0``.

        Returns
        -------
        ndarray of the shape of ``x``

        Raises
        ------
        IncompatibleSolverError
            For a pair of map and set without an exact step.
        """
        x = np.asarray(x, dtype=float)
        g = np.asarray(g, dtype=float)
        mm = mirror_map.for_size(x.size)
        if isinstance(mm, EuclideanMirrorMap):
            return np.asarray(self.project(x - eta * g), dtype=float)
        out = self._bregman_step(mm, x, g, eta)
        if out is not None:
            return out
        if isinstance(mm, EntropyMirrorMap):
            raise IncompatibleSolverError(
                "the entropy mirror map has an exact step on the simplex only; use "
                "constraint Simplex, or the constraint's own mirror_map_for(dim)."
            )
        raise IncompatibleSolverError(
            f"no exact mirror step for {type(mm).__name__} on {type(self).__name__}; use "
            "the constraint's own mirror map (constraint.mirror_map_for(dim))."
        )

    def _bregman_step(self, mm: MirrorMap, x: np.ndarray, g: np.ndarray,
                      eta: float) -> np.ndarray | None:
        """The exact step for a non-Euclidean map ``mm``, or ``None`` if the set has none.

        Default: the p-norm map's Bregman projection of ``theta = nabla w(x) - eta g``
        where the set has one (:meth:`bregman_projection`).
        """
        if isinstance(mm, PNormMirrorMap):
            return self._pnorm_projection(mm, mm.grad(x) - eta * g)
        return None

    def bregman_projection(self, mirror_map: PNormMirrorMap, theta: np.ndarray) -> np.ndarray:
        """``argmin_{x in set} w(x) - <theta, x>`` for the p-norm map ``w`` (exact).

        The prox of a linear term, ``argmin_{x in set} <c, x> + s w(x)``, is this at
        ``theta = -c / s``. Defined for no constraint (``nabla w^*(theta)``), the l_p ball
        of the map's own ``p`` (and the l2 ball for ``p = 2``: ``nabla w^*(theta)``
        rescaled onto the ball) and the l1 ball (soft-thresholding in the dual); see
        :meth:`mirror_step`.

        Raises
        ------
        IncompatibleSolverError
            For a set and map without an exact projection.
        """
        theta = np.asarray(theta, dtype=float)
        out = self._pnorm_projection(mirror_map, theta)
        if out is None:
            raise IncompatibleSolverError(
                f"no exact Bregman projection for {type(mirror_map).__name__}(p="
                f"{mirror_map.p:g}) on {type(self).__name__}."
            )
        return out

    def _pnorm_projection(self, mm: PNormMirrorMap, theta: np.ndarray) -> np.ndarray | None:
        """:meth:`bregman_projection`, or ``None`` where the set has none."""
        return None

    def gradient_step(self, x: np.ndarray, g: np.ndarray, smooth: float,
                      anchor: np.ndarray) -> np.ndarray:
        """``argmin_{y in set} (L/2) ||y - x||^2 + <g, y - x>`` in the norm ``||.||`` of the
        set's mirror geometry, ``L = smooth``.

        ``anchor`` is a feasible point whose model value the step must not exceed (used
        where the step has no closed form: the l_p ball). Default (l2 geometry): the
        projected gradient step ``project(x - g / L)``.
        """
        return self.project(x - g / smooth)


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

    def __repr__(self) -> str:
        return "Unconstrained()"

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

    def mirror_geometry(self, dim: int) -> MirrorGeometry:
        """The Euclidean geometry, unbounded."""
        _check_dim(dim)
        return _euclidean_geometry(self, dim, math.inf)

    def _pnorm_projection(self, mm: PNormMirrorMap, theta: np.ndarray) -> np.ndarray:
        return mm.grad_conjugate(theta)  # no constraint: nabla w^*(theta)


@dataclass(frozen=True)
class _Bounded(Constraint):
    """A bounded set of size ``radius`` (positive and finite, checked on creation)."""

    radius: float
    bounded = True

    def __post_init__(self) -> None:
        _check_radius(self.radius)


@dataclass(frozen=True)
class L2Ball(_EuclideanGeometry, _Bounded):
    """``{w : ||w||_2 <= radius}`` (Frobenius norm for matrices)."""

    kind = "l2"

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

    def support_pairing(self) -> tuple[float, float]:
        return float(self.radius), 2.0

    @property
    def mirror_map(self) -> MirrorMap:
        return EuclideanMirrorMap()

    def mirror_geometry(self, dim: int) -> MirrorGeometry:
        """The Euclidean geometry of radius ``radius``."""
        _check_dim(dim)
        return _euclidean_geometry(self, dim, self.l2_bound(dim))

    def _pnorm_projection(self, mm: PNormMirrorMap, theta: np.ndarray) -> np.ndarray | None:
        return _radial_projection(mm, theta, float(self.radius)) if mm.p == 2.0 else None


@dataclass(frozen=True)
class L1Ball(_L1Geometry, _Bounded):
    """``{w : ||w||_1 <= radius}`` (entrywise l1 norm for matrices).

    Its vertices are ``+-radius e_j``. Mirror map: the p-norm map with
    ``p = 1 + 1 / ln d`` (:class:`L1PNormMirrorMap`; :meth:`mirror_map_for` for a known
    ``d``).
    """

    kind = "l1"

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

    def support_pairing(self) -> tuple[float, float]:
        return float(self.radius), math.inf

    def diameter(self, norm: float = 2, dim: int | None = None) -> float:
        # ||x||_s <= ||x||_1 for every s >= 1; +-radius e_1 attain 2 radius.
        return _ball_diameter(self.radius, 1.0, norm, dim, "L1Ball")

    @property
    def mirror_map(self) -> MirrorMap:
        return L1PNormMirrorMap()

    def mirror_map_for(self, dim: int) -> MirrorMap:
        """:class:`PNormMirrorMap` with ``p(d)`` and modulus ``d^{-2 (1 - 1/p)}`` in l1."""
        return L1PNormMirrorMap.for_dim(dim)

    def mirror_geometry(self, dim: int) -> MirrorGeometry:
        """The l1 norm with the p-norm map ``p = 1 + 1/ln d`` and its exact l1 modulus."""
        mm = L1PNormMirrorMap.for_dim(dim)
        return _pnorm_geometry(self, dim, "l1", mm, 1.0, math.inf, mm.strong_convexity)

    def _pnorm_projection(self, mm: PNormMirrorMap, theta: np.ndarray) -> np.ndarray:
        return _l1_pnorm_step(theta, mm, float(self.radius)).reshape(theta.shape)

    def gradient_step(self, x: np.ndarray, g: np.ndarray, smooth: float,
                      anchor: np.ndarray) -> np.ndarray:
        """The exact l1 step (:func:`l1_ball_gradient_step`)."""
        return l1_ball_gradient_step(x, g, smooth, float(self.radius))


@dataclass(frozen=True)
class LpBall(_Bounded):
    """``{w : ||w||_p <= radius}`` for ``1 < p < inf`` (entrywise for matrices).

    Projection has no closed form: see :meth:`project`. Mirror map: the p-norm map
    (:class:`PNormMirrorMap`, modulus 1 in l_p) for ``p <= 2``; for ``p > 2``,
    ``||x||_p^2`` has no dimension-free modulus in l_p, and the Euclidean map is used
    (modulus 1 in l_p, since ``||x||_p <= ||x||_2``).
    """

    p: float
    kind = "lp"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not (1 < self.p < math.inf):  # also rejects nan
            raise ValueError(
                f"LpBall requires 1 < p < inf, got p={self.p} (use L1Ball for p = 1)."
            )

    @property
    def q(self) -> float:
        """The dual exponent ``p / (p - 1)``."""
        return dual_exponent(self.p)

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
        return dual_exponent(self.p)

    def support_pairing(self) -> tuple[float, float]:
        return float(self.radius), float(self.q)

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

    def mirror_geometry(self, dim: int) -> MirrorGeometry:
        """The l_p norm with the p-norm map for ``p <= 2``; for ``p > 2`` the Euclidean
        geometry of the ball (``||x||_p^2`` has no dimension-free modulus in l_p), whose
        l2 radius is ``radius d^(1/2 - 1/p)``."""
        _check_dim(dim)
        if self.p > 2:
            return _euclidean_geometry(self, dim, self.l2_bound(dim))
        mm = PNormMirrorMap(self.p)
        return _pnorm_geometry(self, dim, "lp", mm, mm.p, dual_exponent(mm.p), 1.0)

    def _pnorm_projection(self, mm: PNormMirrorMap, theta: np.ndarray) -> np.ndarray | None:
        if abs(self.p - mm.p) < 1e-12:
            return _radial_projection(mm, theta, float(self.radius))
        return None

    def gradient_step(self, x: np.ndarray, g: np.ndarray, smooth: float,
                      anchor: np.ndarray) -> np.ndarray:
        """Euclidean for ``p > 2``; else the l_p step, exact when the unconstrained step is
        feasible, otherwise the best of three feasible candidates and ``anchor``
        (see :func:`skdp.geometry._steps._lp_gradient_step`)."""
        if self.p > 2:
            return self.project(x - g / smooth)
        return _lp_gradient_step(x, g, smooth, self, anchor)


@dataclass(frozen=True)
class Simplex(_L1Geometry, _Bounded):
    """``{w : w >= 0, sum_j w_j = radius}`` (over all entries for matrices).

    It does not contain the origin: :meth:`feasible_point` is the uniform point. Its
    vertices are ``radius e_j``; mirror map: negative entropy (:class:`EntropyMirrorMap`).
    """

    radius: float = 1.0
    kind = "simplex"

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

    def support_pairing(self) -> tuple[float, float]:
        return float(self.radius), math.inf

    @property
    def mirror_map(self) -> MirrorMap:
        return EntropyMirrorMap(self.radius)

    def mirror_geometry(self, dim: int) -> MirrorGeometry:
        """The l1 norm with negative entropy (modulus ``1 / radius``), from the uniform point:
        ``D(x, uniform) = sum x log(x d / R) <= R ln d``."""
        _check_dim(dim)
        mm = EntropyMirrorMap(self.radius)
        r = float(self.radius)
        return MirrorGeometry(self, dim, "simplex", mm, 1.0, math.inf, mm.strong_convexity,
                              r * math.log(max(dim, 1)), r, 2.0)

    def _bregman_step(self, mm: MirrorMap, x: np.ndarray, g: np.ndarray,
                      eta: float) -> np.ndarray | None:
        if not isinstance(mm, EntropyMirrorMap):
            return None
        # x_+ proportional to x exp(-eta g), normalised to the simplex's mass: the step
        # argmin <g, x'> + KL(x', x) / eta over {x' >= 0, sum x' = R}.
        logits = np.log(np.maximum(x, np.finfo(float).tiny)) - eta * g
        logits -= logits.max()
        e = np.exp(logits)
        return self.radius * e / e.sum()

    def gradient_step(self, x: np.ndarray, g: np.ndarray, smooth: float,
                      anchor: np.ndarray) -> np.ndarray:
        """The exact l1 step on the simplex (:func:`simplex_gradient_step`)."""
        return simplex_gradient_step(x, g, smooth)

    def feasible_point(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """The uniform point ``radius / size``."""
        size = math.prod(shape) if isinstance(shape, tuple) else int(shape)
        if size == 0:
            raise ValueError("the simplex of an empty parameter is empty.")
        return np.full(shape, self.radius / size)


# --------------------------------------------------------------------------------------
# The geometry mirror-descent solvers run in
# --------------------------------------------------------------------------------------
