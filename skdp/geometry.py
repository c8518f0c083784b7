"""Constraint sets: projection, linear minimisation oracle, diameters and mirror maps.

Every set offers the whole interface (so that a solver's requirements are checked up
front, never discovered at run time): Euclidean ``project``, ``lmo`` (Frank-Wolfe),
``diameter`` in a norm, the ``norm`` and ``dual_norm`` of the set's geometry, and a
``mirror_map``. Parameters may be matrices (one column per class); sets act on them as
flattened vectors (Frobenius geometry for the l2 ball).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from skdp.exceptions import IncompatibleSolverError

__all__ = ["Constraint", "EuclideanMirrorMap", "L2Ball", "MirrorMap", "Unconstrained"]


class MirrorMap(ABC):
    """A strongly convex distance-generating function ``w`` for mirror descent.

    Attributes
    ----------
    strong_convexity : float
        Modulus of strong convexity of ``w`` with respect to the set's norm.
    """

    strong_convexity: float

    @abstractmethod
    def grad(self, x: np.ndarray) -> np.ndarray:
        """``nabla w(x)``: primal to dual."""

    @abstractmethod
    def grad_conjugate(self, theta: np.ndarray) -> np.ndarray:
        """``nabla w^*(theta)``: dual to primal (the inverse of :meth:`grad`)."""


class EuclideanMirrorMap(MirrorMap):
    """``w(x) = ||x||_2^2 / 2``: mirror descent reduces to gradient descent."""

    strong_convexity = 1.0

    def grad(self, x: np.ndarray) -> np.ndarray:
        return np.array(x, dtype=float, copy=True)

    def grad_conjugate(self, theta: np.ndarray) -> np.ndarray:
        return np.array(theta, dtype=float, copy=True)


class Constraint(ABC):
    """A closed convex set containing the origin."""

    #: ``True`` when the set is bounded (required by Frank-Wolfe and output bounds).
    bounded: bool

    @abstractmethod
    def project(self, w: np.ndarray) -> np.ndarray:
        """Euclidean projection of ``w`` onto the set."""

    @abstractmethod
    def lmo(self, g: np.ndarray) -> np.ndarray:
        """A point ``s`` of the set minimising ``<g, s>``."""

    @abstractmethod
    def diameter(self, norm: float = 2) -> float:
        """``sup_{a, b in set} ||a - b||`` in the l-``norm``."""

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

    def contains(self, w: np.ndarray, tol: float = 1e-10) -> bool:
        """Whether ``w`` lies in the set up to ``tol``."""
        return bool(np.allclose(self.project(w), w, atol=tol, rtol=0))


class Unconstrained(Constraint):
    """The whole space: projection is the identity."""

    bounded = False

    def project(self, w: np.ndarray) -> np.ndarray:
        return w

    def lmo(self, g: np.ndarray) -> np.ndarray:
        raise IncompatibleSolverError(
            "the linear minimisation oracle of an unconstrained problem is unbounded; "
            "set constraint='l2' (or another bounded set) and a finite radius."
        )

    def diameter(self, norm: float = 2) -> float:
        return math.inf

    def norm(self, w: np.ndarray) -> float:
        return float(np.linalg.norm(np.ravel(w)))

    def dual_norm(self, g: np.ndarray) -> float:
        return float(np.linalg.norm(np.ravel(g)))

    @property
    def mirror_map(self) -> MirrorMap:
        return EuclideanMirrorMap()


@dataclass(frozen=True)
class L2Ball(Constraint):
    """``{w : ||w||_2 <= radius}`` (Frobenius norm for matrices)."""

    radius: float
    bounded = True

    def __post_init__(self) -> None:
        if not (self.radius > 0 and math.isfinite(self.radius)):
            raise ValueError(f"radius must be positive and finite, got {self.radius}.")

    def project(self, w: np.ndarray) -> np.ndarray:
        norm = np.linalg.norm(np.ravel(w))
        return w if norm <= self.radius else w * (self.radius / norm)

    def lmo(self, g: np.ndarray) -> np.ndarray:
        norm = np.linalg.norm(np.ravel(g))
        if norm == 0:
            return np.zeros_like(g, dtype=float)
        return -self.radius * g / norm

    def diameter(self, norm: float = 2) -> float:
        if norm == 2:
            return 2.0 * self.radius
        # The ball's extreme points in a p-norm: ||v||_p <= d^{max(0, 1/p - 1/2)} ||v||_2
        # holds with equality on constant-magnitude vectors; the dimension is not known
        # here, so only the l2 diameter is defined.
        raise ValueError("L2Ball.diameter is defined for norm=2 only.")

    def norm(self, w: np.ndarray) -> float:
        return float(np.linalg.norm(np.ravel(w)))

    def dual_norm(self, g: np.ndarray) -> float:
        return float(np.linalg.norm(np.ravel(g)))

    @property
    def mirror_map(self) -> MirrorMap:
        return EuclideanMirrorMap()
