"""The mirror-descent geometry a constraint set gives its solvers (see :mod:`skdp.geometry`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from skdp.geometry._maps import (
    EuclideanMirrorMap,
    MirrorMap,
    PNormMirrorMap,
    pnorm,
)

if TYPE_CHECKING:
    from skdp.geometry._constraints import Constraint, L1Ball, LpBall

@dataclass(frozen=True)
class MirrorGeometry:
    """Public constants and exact steps of mirror descent on a constraint (no privacy role).

    Built by :meth:`Constraint.mirror_geometry` for parameters of ``dim`` coordinates.

    Attributes
    ----------
    constraint : Constraint
        The set.
    dim : int
        Number of constrained coordinates.
    kind : {"euclidean", "l1", "lp", "simplex"}
        The geometry: Euclidean (l2 ball, no constraint, l_p ball with ``p > 2``), the l1
        ball with the p-norm map, an l_p ball with ``p <= 2`` and its p-norm map, or the
        simplex with negative entropy.
    mirror_map : MirrorMap
        The map ``w`` (``constraint.mirror_map_for(dim)``; Euclidean for ``kind ==
        "euclidean"``).
    norm_ord : float
        The geometry's norm ``||.||``: entrywise l_s, ``s = norm_ord`` (1 for the l1 ball
        and the simplex, ``p`` for an l_p ball with ``p <= 2``, 2 for the Euclidean map).
    dual_ord : float
        Its dual exponent (gradients are measured in it).
    modulus : float
        Strong convexity ``mu`` of the map in ``||.||``.
    bregman_radius : float
        ``sup_{x in C} D_w(x, x_0)`` from the start ``x_0 = constraint.feasible_point``
        (``inf`` if unbounded).
    radius : float
        ``sup_{x in C} ||x||`` (``inf`` if unbounded); also bounds ``||x||_dual`` for
        ``dual_ord >= 2``.
    map_p : float
        The exponent of the p-norm map (2 for the Euclidean map and for entropy).
    """

    constraint: Constraint
    dim: int
    kind: str
    mirror_map: MirrorMap
    norm_ord: float
    dual_ord: float
    modulus: float
    bregman_radius: float
    radius: float
    map_p: float

    def scaled_bregman_radius(self) -> float:
        """``sup_{x in C} D_w(x, x_0) / mu``: the Bregman radius of the 1-strongly convex
        ``w / mu`` (``inf`` if unbounded).

        Euclidean: ``R_2^2 / 2``. p-norm map: ``w(x) <= R^2 / (2 (p - 1))`` from
        ``x_0 = 0`` (``||x||_p <= ||x||_1`` on the l1 ball). Entropy from the uniform
        point: ``R ln d`` with ``mu = 1 / R``.
        """
        r = self.radius
        if not math.isfinite(r):
            return math.inf
        if self.kind == "euclidean":
            return 0.5 * r**2
        if self.kind == "simplex":
            return r**2 * math.log(self.dim) if self.dim > 1 else 0.0
        return r**2 / (2.0 * (self.map_p - 1.0) * self.modulus)

    def mirror_step(self, x: np.ndarray, g: np.ndarray, eta: float) -> np.ndarray:
        """The exact constrained step ``argmin_{x' in C} <g, x'> + D_w(x', x) / eta``
        (:meth:`Constraint.mirror_step` with :attr:`mirror_map`)."""
        return self.constraint.mirror_step(self.mirror_map, x, g, eta)

    def stepper(self) -> Callable[[np.ndarray, np.ndarray, float], np.ndarray]:
        """:meth:`mirror_step` as a callable with its dispatch resolved once
        (:func:`mirror_stepper` for :attr:`dim` coordinates)."""
        return mirror_stepper(self.constraint, self.mirror_map, self.dim)

    def gradient_step(self, x: np.ndarray, g: np.ndarray, smooth: float,
                      anchor: np.ndarray) -> np.ndarray:
        """``argmin_{y in C} (L/2) ||y - x||^2 + <g, y - x>`` in :attr:`norm_ord`
        (:meth:`Constraint.gradient_step`)."""
        return self.constraint.gradient_step(x, g, smooth, anchor)

    def ball(self, radius: float) -> Constraint:
        """The origin-centred ball ``{||x||_{map_p} <= radius}`` of the map's own norm, on
        which :meth:`Constraint.mirror_step` with :attr:`mirror_map` is exact (no
        constraint for an infinite radius)."""
        return self.constraint.norm_ball(self.map_p, radius)


def mirror_stepper(constraint: Constraint, mirror_map: MirrorMap, size: int
                   ) -> Callable[[np.ndarray, np.ndarray, float], np.ndarray]:
    """``step(x, g, eta) = constraint.mirror_step(mirror_map, x, g, eta)`` for float
    arrays ``x``, ``g`` of ``size`` entries, with the map and the set's step resolved once.

    The Euclidean map on the l2 ball (and on no constraint) has a fast path that performs
    :meth:`Constraint.mirror_step`'s operations (``w = x - eta g``, its l2 norm as
    ``sqrt(w . w)`` like ``np.linalg.norm``, and the radial rescaling when outside), so
    its result is the same array; every other pair calls :meth:`Constraint.mirror_step`.
    Loops of many small steps (mirror descent) spend most of a step in that dispatch.
    """
    mm = mirror_map.for_size(size)
    if isinstance(mm, EuclideanMirrorMap):
        if constraint.kind == "none":
            def free_step(x: np.ndarray, g: np.ndarray, eta: float) -> np.ndarray:
                return x - eta * g

            return free_step
        if constraint.kind == "l2":
            radius = constraint.radius

            def ball_step(x: np.ndarray, g: np.ndarray, eta: float) -> np.ndarray:
                w = x - eta * g
                flat = w.ravel(order="K")
                norm = np.sqrt(flat.dot(flat))
                return w if norm <= radius else w * (radius / norm)

            return ball_step

    if isinstance(mm, PNormMirrorMap) and mm.p < 2.0:
        kind = constraint.kind
        if kind in ("l1", "none") or (kind == "lp" and constraint.p == mm.p):
            return _PNormDualStep(constraint, mm)

    def step(x: np.ndarray, g: np.ndarray, eta: float) -> np.ndarray:
        return constraint.mirror_step(mm, x, g, eta)

    return step


class _PNormDualStep:
    """The p-norm map's exact step (:meth:`Constraint.mirror_step`) keeping the dual point
    ``theta = nabla w(x)`` of the point it returned last, as :class:`LpDualIterate` does.

    A step from that same point (equal entries) starts from the kept ``theta`` instead of
    recomputing ``nabla w(x)``; any other ``x`` has its gradient computed. The map
    ``nabla w^*(theta) = (p-1) ||theta||_q^(2-q) sign(theta) |theta|^(q-1)`` is evaluated
    on ``theta / m``, ``m = max |theta_j|``, with one power: ``y = a^(q-1)`` for ``a =
    |theta| / m``, ``sum a^q = y . a``; and ``||nabla w^*(theta)||_p = (p-1)
    ||theta||_q``. The new dual point: ``theta`` when the unconstrained point is feasible;
    scaled by ``c`` when the point is scaled radially by ``c`` onto the l_p ball
    (``nabla w`` is positively 1-homogeneous); on an active l1 ball, ``nabla w`` of the
    set's own step (:func:`~skdp.geometry._steps._l1_pnorm_step`). Equal to
    :meth:`Constraint.mirror_step` up to rounding (the map is evaluated with different
    roundings); post-processing only.
    """

    def __init__(self, constraint: Constraint, mm: PNormMirrorMap) -> None:
        self.constraint, self.mm = constraint, mm
        self.p, self.q = mm.p, mm.q
        self.l1 = constraint.kind == "l1"
        self.radius = (math.inf if constraint.kind == "none"
                       else float(constraint.radius))
        self.x: np.ndarray | None = None
        self.theta: np.ndarray | None = None

    def _conjugate(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        """``(nabla w^*(theta), ||nabla w^*(theta)||_p)``."""
        a = np.abs(theta)
        m = float(a.max(initial=0.0))
        if not (m > 0.0 and math.isfinite(m)):
            x = self.mm.grad_conjugate(theta)
            return x, pnorm(x, self.p)
        p, q = self.p, self.q
        a *= 1.0 / m
        y = a ** (q - 1.0)
        s = float(np.vdot(y, a))
        y *= (p - 1.0) * m * s ** ((2.0 - q) / q)
        return np.copysign(y, theta, out=y), (p - 1.0) * m * s ** (1.0 / q)

    def prime(self, x: np.ndarray, theta: np.ndarray) -> None:
        """Record ``theta = nabla w(x)``, computed by the caller (neither is modified
        later), for a next step from ``x``."""
        self.x, self.theta = x, theta

    def __call__(self, x: np.ndarray, g: np.ndarray, eta: float) -> np.ndarray:
        last = self.x
        if last is not None and last.shape == x.shape and np.array_equal(last, x):
            theta = self.theta - eta * g
        else:
            theta = self.mm.grad(x) - eta * g
        out, norm_p = self._conjugate(theta)
        if self.l1:
            if float(np.abs(out).sum()) > self.radius:
                out = self.constraint.mirror_step(self.mm, x, g, eta)
                theta = self.mm.grad(out)
        elif norm_p > self.radius:
            factor = self.radius / norm_p
            out *= factor
            theta *= factor
        self.x, self.theta = out.copy(), theta
        return out


def _euclidean_geometry(constraint: Constraint, dim: int, r2: float) -> MirrorGeometry:
    """The Euclidean map measured in l2, for a set of l2 radius ``r2`` around 0."""
    return MirrorGeometry(constraint, dim, "euclidean", EuclideanMirrorMap(), 2.0, 2.0, 1.0,
                          0.5 * r2 * r2, r2, 2.0)


def _pnorm_geometry(ball: L1Ball | LpBall, dim: int, kind: str, mm: PNormMirrorMap,
                    norm_ord: float, dual_ord: float, modulus: float) -> MirrorGeometry:
    """The p-norm map on an origin-centred ball: ``w(x) <= R^2 / (2(p-1))`` on it."""
    r = float(ball.radius)
    return MirrorGeometry(ball, dim, kind, mm, norm_ord, dual_ord, modulus,
                          r * r / (2.0 * (mm.p - 1.0)), r, mm.p)


def _radial_projection(mm: PNormMirrorMap, theta: np.ndarray, radius: float) -> np.ndarray:
    """The p-norm map's Bregman projection on the l_p ball of its own ``p``:
    ``nabla w^*(theta)`` rescaled onto the ball when outside (see
    :meth:`Constraint.mirror_step`)."""
    y = mm.grad_conjugate(theta)
    norm = pnorm(y, mm.p)
    return y * (radius / norm) if norm > radius else y
