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

Mirror-descent geometry: each set owns it, so solvers call methods and never branch on
the set's type. ``constraint.mirror_geometry(d)`` returns a :class:`MirrorGeometry` (the
map, norm and dual exponents, modulus, Bregman radius, radius and map exponent) whose
``mirror_step`` is the set's exact Bregman step (:meth:`Constraint.mirror_step`) and whose
``gradient_step`` is the exact (or model-decreasing) step in the geometry's norm
(:meth:`Constraint.gradient_step`); ``support_pairing`` gives Hoelder's bound on the
support function. The package's modules: the sets (``_constraints``), the mirror maps
(``_maps``), the step algorithms (``_steps``), the mirror geometry (``_mirror``) and
the split l_p geometry of the l_p solvers (``_lp``);
every public name is exported here.
"""

from skdp.geometry._constraints import Constraint, L1Ball, L2Ball, LpBall, Simplex, Unconstrained
from skdp.geometry._lp import LpDualIterate, LpGeometry, default_exponent
from skdp.geometry._maps import (
    EntropyMirrorMap,
    EuclideanMirrorMap,
    L1PNormMirrorMap,
    MirrorMap,
    PNormMirrorMap,
    dual_exponent,
    pnorm,
)
from skdp.geometry._mirror import MirrorGeometry, mirror_stepper
from skdp.geometry._steps import l1_ball_gradient_step, simplex_gradient_step

__all__ = [
    "Constraint",
    "EntropyMirrorMap",
    "EuclideanMirrorMap",
    "L1Ball",
    "L1PNormMirrorMap",
    "L2Ball",
    "LpBall",
    "LpDualIterate",
    "LpGeometry",
    "MirrorGeometry",
    "MirrorMap",
    "PNormMirrorMap",
    "Simplex",
    "Unconstrained",
    "default_exponent",
    "dual_exponent",
    "l1_ball_gradient_step",
    "mirror_stepper",
    "pnorm",
    "simplex_gradient_step",
]
