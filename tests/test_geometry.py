"""Constraint sets and mirror maps: projections, LMOs, diameters, moduli, validation, and
the mirror-descent geometry each set owns (map, constants, exact steps)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq, minimize

from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import (
    EntropyMirrorMap,
    EuclideanMirrorMap,
    L1Ball,
    L1PNormMirrorMap,
    L2Ball,
    LpBall,
    MirrorGeometry,
    PNormMirrorMap,
    Simplex,
    Unconstrained,
    l1_ball_gradient_step,
    simplex_gradient_step,
)
from tests.conftest import box_constraint

SETS = [
    L2Ball(1.5),
    L1Ball(0.7),
    L1Ball(3.0),
    LpBall(1.3, 1.5),
    LpBall(0.8, 1.05),
    LpBall(2.0, 2.0),
    LpBall(1.2, 3.0),
    LpBall(1.0, 10.0),
    Simplex(),
    Simplex(2.5),
]
BALLS = [c for c in SETS if not isinstance(c, Simplex)]
SHAPES = [(7,), (1,), (4, 3)]


def _ids(c):
    return repr(c)


def _vertices(c, shape):
    """All vertices of a polytope (l1 ball or simplex) of the given shape."""
    d = math.prod(shape)
    eye = np.eye(d).reshape((d, *shape)) * c.radius
    return list(eye) if isinstance(c, Simplex) else list(eye) + list(-eye)


def _points_in(c, shape, rng, n=30):
    """Points of ``c``: extreme points, projections, convex combinations, the start."""
    ext = [c.lmo(rng.normal(size=shape)) for _ in range(n)]
    proj = [c.project(rng.normal(size=shape) * s) for s in np.geomspace(0.01, 100, n)]
    base = ext + proj + [c.feasible_point(shape)]
    if isinstance(c, (L1Ball, Simplex)):
        base += _vertices(c, shape)
    mixes = []
    for _ in range(n):
        i, j = rng.integers(len(base), size=2)
        t = rng.uniform()
        mixes.append(t * base[i] + (1 - t) * base[j])
    return base + mixes


def _outside(c, shape, rng):
    """Points outside ``c`` at several scales, with ties and zeros for the sort methods."""
    out = [rng.normal(size=shape) * s for s in (0.5, 3.0, 50.0)]
    tied = np.full(shape, 2.0 * c.radius)
    out.append(tied)
    sparse = rng.normal(size=shape) * 5.0
    sparse.ravel()[::2] = 0.0
    out.append(sparse)
    return [v for v in out if not c.contains(v, tol=1e-6)]


# ------------------------------------------------------------------------------------
# Projections
# ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("c", SETS, ids=_ids)
def test_projection_lands_in_set_is_idempotent_and_keeps_shape(c, shape):
    rng = np.random.default_rng(0)
    for v in _outside(c, shape, rng) + [rng.normal(size=shape) * 0.01]:
        x = c.project(v)
        assert x.shape == v.shape
        assert c.contains(x, tol=1e-10)
        if not isinstance(c, Simplex):
            assert c.norm(x) <= c.radius * (1 + 1e-12)
        else:
            assert np.all(x >= 0) and abs(x.sum() - c.radius) <= 1e-12 * c.radius
        np.testing.assert_allclose(c.project(x), x, rtol=0, atol=1e-12 * c.radius)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("c", SETS, ids=_ids)
def test_projection_variational_inequality(c, shape):
    """``<v - x, y - x> <= 0`` for all ``y`` in the set: sampled and exact (via the LMO)."""
    rng = np.random.default_rng(1)
    points = _points_in(c, shape, rng)
    for v in _outside(c, shape, rng):
        x = c.project(v)
        r = np.ravel(v - x)
        tol = 1e-9 * (1.0 + np.linalg.norm(r) * c.radius)
        worst = max(float(r @ np.ravel(y - x)) for y in points)
        assert worst <= tol
        # sup_{y in C} <r, y> = <r, lmo(-r)>: the condition is checked over all of C.
        exact = float(r @ np.ravel(c.lmo(-r.reshape(shape)) - x))
        assert exact <= tol


@pytest.mark.parametrize("c", BALLS, ids=_ids)
def test_projection_of_inside_point_is_identity(c):
    rng = np.random.default_rng(2)
    for y in _points_in(c, (6,), rng, n=10):
        y = y * 0.999
        np.testing.assert_array_equal(c.project(y), y)


@pytest.mark.parametrize("radius", [1.0, 2.5])
def test_simplex_projection_of_inside_point_is_identity(radius):
    rng = np.random.default_rng(3)
    c = Simplex(radius)
    for y in _points_in(c, (6,), rng, n=10):
        np.testing.assert_allclose(c.project(y), y, rtol=0, atol=1e-14 * radius)


def _slsqp_projection(v, constraints, bounds=None, x0=None):
    res = minimize(
        lambda z: 0.5 * np.sum((z - v) ** 2),
        x0=np.zeros_like(v) if x0 is None else x0,
        jac=lambda z: z - v,
        method="SLSQP",
        bounds=bounds,
        constraints=constraints,
        options={"ftol": 1e-12, "maxiter": 1000},
    )
    # Status 8 ("positive directional derivative for linesearch"): SLSQP stalled because no
    # step improves in floating point. That is accepted here only because every caller then
    # compares the point with skdp's projection: a stall away from the optimum still fails.
    assert res.success or res.status == 8, res.message
    return res.x


@pytest.mark.parametrize("p", [1.2, 1.3, 1.8, 2.0, 2.5, 4.0, 9.0])
def test_lp_projection_matches_slsqp(p):
    """Reference: SLSQP on the magnitudes ``0 <= t <= |v|`` (smooth there), signs of v.

    SLSQP itself stalls closer to p = 1 (the constraint's curvature blows up at t = 0);
    there the exact variational-inequality test above is the reference.
    """
    rng = np.random.default_rng(4)
    c, r = LpBall(0.7, p), 0.7
    for _ in range(3):
        v = rng.normal(size=4) * 2.0
        a = np.abs(v)
        t = _slsqp_projection(
            a,
            [{
                "type": "ineq",
                "fun": lambda t: 1.0 - np.sum((t / r) ** p),
                "jac": lambda t: -p * (t / r) ** (p - 1) / r,
            }],
            bounds=[(0, ai) for ai in a],
            x0=0.5 * r * a / np.linalg.norm(a, p),
        )
        np.testing.assert_allclose(c.project(v), np.sign(v) * t, atol=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_l1_and_simplex_projections_match_references(seed):
    """SLSQP (l1 split into positive and negative parts) and a root-found threshold."""
    v = np.random.default_rng(seed).normal(size=5) * 2.0
    r = 1.3
    # l1 ball: x = x+ - x-, x+- >= 0, sum(x+ + x-) <= r.
    split = _slsqp_projection(
        np.concatenate([v, -v]),
        [{"type": "ineq", "fun": lambda z: r - np.sum(z)}],
        bounds=[(0, None)] * 10,
    )
    assert np.sum(np.abs(v)) > r
    np.testing.assert_allclose(L1Ball(r).project(v), split[:5] - split[5:], atol=1e-6)
    # Independent threshold: brentq on theta -> sum max(u - theta, 0) - total.
    theta = brentq(lambda t: np.maximum(np.abs(v) - t, 0).sum() - r, 0, np.abs(v).max())
    ref = np.sign(v) * np.maximum(np.abs(v) - theta, 0)
    np.testing.assert_allclose(L1Ball(r).project(v), ref, atol=1e-12)
    theta = brentq(lambda t: np.maximum(v - t, 0).sum() - r, v.min() - r, v.max())
    np.testing.assert_allclose(Simplex(r).project(v), np.maximum(v - theta, 0), atol=1e-12)


@pytest.mark.parametrize("c", SETS, ids=_ids)
def test_matrix_projection_equals_flattened_projection(c):
    rng = np.random.default_rng(6)
    v = rng.normal(size=(5, 3)) * 4.0
    np.testing.assert_allclose(c.project(v), c.project(v.ravel()).reshape(5, 3), atol=1e-14)
    g = rng.normal(size=(5, 3))
    np.testing.assert_allclose(c.lmo(g), c.lmo(g.ravel()).reshape(5, 3), atol=1e-14)


@pytest.mark.parametrize("scale", [1e-12, 1e-6, 1e6, 1e12])
@pytest.mark.parametrize("p", [1.05, 1.5, 3.0, 10.0])
def test_lp_projection_extreme_scales(p, scale):
    rng = np.random.default_rng(7)
    c = LpBall(scale, p)
    v = rng.normal(size=20) * scale * 10.0
    x = c.project(v)
    r = v - x
    assert np.all(np.isfinite(x))
    assert abs(c.norm(x) / scale - 1.0) <= 1e-12
    assert float(r @ (c.lmo(-r) - x)) <= 1e-9 * np.linalg.norm(r) * scale


def test_zero_inputs():
    for c in BALLS:
        for shape in [(4,), (3, 2)]:
            z = np.zeros(shape)
            np.testing.assert_array_equal(c.project(z), z)
            np.testing.assert_array_equal(c.lmo(z), z)
            assert c.lmo(z).shape == shape
            assert c.norm(z) == 0 and c.dual_norm(z) == 0
    s = Simplex(2.0)
    np.testing.assert_allclose(s.project(np.zeros((2, 2))), np.full((2, 2), 0.5))
    assert s.contains(s.lmo(np.zeros(3)))
    for m in [PNormMirrorMap(1.3), L1PNormMirrorMap(), EuclideanMirrorMap()]:
        np.testing.assert_array_equal(m.grad(np.zeros(3)), np.zeros(3))
        np.testing.assert_array_equal(m.grad_conjugate(np.zeros(3)), np.zeros(3))
        assert m.value(np.zeros(3)) == 0


# ------------------------------------------------------------------------------------
# Linear minimisation oracles
# ------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("c", [L1Ball(0.7), L1Ball(3.0), Simplex(), Simplex(2.5)], ids=_ids)
def test_polytope_lmo_matches_vertex_enumeration(c, shape):
    rng = np.random.default_rng(8)
    vertices = _vertices(c, shape)
    for _ in range(20):
        g = rng.normal(size=shape)
        s = c.lmo(g)
        assert s.shape == shape
        assert any(np.array_equal(s, v) for v in vertices)
        best = min(float(np.sum(g * v)) for v in vertices)
        assert float(np.sum(g * s)) == pytest.approx(best, abs=1e-14)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("c", BALLS, ids=_ids)
def test_ball_lmo_is_holder_equality(c, shape):
    """``<g, s> = -radius ||g||_*``, ``||s|| = radius``, and no sampled point does better."""
    rng = np.random.default_rng(9)
    points = _points_in(c, shape, rng)
    for _ in range(10):
        g = rng.normal(size=shape) * rng.choice([1e-8, 1.0, 1e8])
        s = c.lmo(g)
        assert s.shape == shape
        value = float(np.sum(g * s))
        assert value == pytest.approx(-c.radius * c.dual_norm(g), rel=1e-12)
        assert c.norm(s) == pytest.approx(c.radius, rel=1e-12)
        assert min(float(np.sum(g * y)) for y in points) >= value - 1e-12 * abs(value)


def test_unconstrained_lmo_and_diameter():
    with pytest.raises(ValueError, match="unbounded"):
        Unconstrained().lmo(np.ones(2))
    assert Unconstrained().diameter(1) == math.inf
    np.testing.assert_array_equal(Unconstrained().feasible_point((2, 3)), np.zeros((2, 3)))


# ------------------------------------------------------------------------------------
# Diameters, norms, feasible points
# ------------------------------------------------------------------------------------


def _brute_diameter(points, s):
    return max(
        float(np.linalg.norm(np.ravel(a - b), ord=s)) for a in points for b in points
    )


@pytest.mark.parametrize("s", [1, 1.5, 2, 3, math.inf])
def test_l1_ball_diameter_is_two_radius_in_every_norm(s):
    c = L1Ball(1.7)
    assert c.diameter(s) == 3.4
    assert _brute_diameter(_vertices(c, (4,)), s) == pytest.approx(3.4)


@pytest.mark.parametrize("s", [1, 1.5, 2, 3, math.inf])
def test_simplex_diameter(s):
    c = Simplex(1.7)
    expected = {1: 3.4, 2: math.sqrt(2) * 1.7, math.inf: 1.7}.get(s, 2 ** (1 / s) * 1.7)
    assert c.diameter(s) == pytest.approx(expected, rel=1e-15)
    assert _brute_diameter(_vertices(c, (4,)), s) == pytest.approx(expected, rel=1e-15)
    assert c.diameter(s, dim=1) == 0.0


@pytest.mark.parametrize("p", [1.5, 2.0, 3.0])
@pytest.mark.parametrize("s", [1, 2, 2.5, math.inf])
def test_lp_and_l2_ball_diameter(p, s):
    c = L2Ball(0.9) if p == 2.0 else LpBall(0.9, p)
    d = 5
    # Attained by +-radius e_1 (s >= p) or by +- a constant-magnitude point (s < p).
    pair = [np.eye(d)[0] * 0.9, np.full(d, 0.9 * d ** (-1 / p))]
    candidates = [_brute_diameter([v, -v], s) for v in pair]
    if s >= p:
        assert c.diameter(s) == 1.8
    else:
        with pytest.raises(ValueError, match="dim"):
            c.diameter(s)
    assert c.diameter(s, dim=d) == pytest.approx(max(candidates), rel=1e-14)


@pytest.mark.parametrize("c", SETS, ids=_ids)
@pytest.mark.parametrize("bad", [0.5, 0, -1, float("nan")])
def test_diameter_rejects_invalid_norm(c, bad):
    with pytest.raises(ValueError, match="norm"):
        c.diameter(bad, dim=3)


@pytest.mark.parametrize("c", SETS, ids=_ids)
@pytest.mark.parametrize("bad", [0, -2, 2.5, True])
def test_rejects_invalid_dim(c, bad):
    with pytest.raises(ValueError, match="dim"):
        c.mirror_map_for(bad)


def test_norms_and_dual_norms():
    rng = np.random.default_rng(10)
    w = rng.normal(size=(4, 3))
    flat = w.ravel()
    assert L1Ball(1).norm(w) == pytest.approx(np.linalg.norm(flat, 1))
    assert L1Ball(1).dual_norm(w) == pytest.approx(np.linalg.norm(flat, np.inf))
    assert Simplex().norm(w) == pytest.approx(np.linalg.norm(flat, 1))
    assert Simplex().dual_norm(w) == pytest.approx(np.linalg.norm(flat, np.inf))
    c = LpBall(1, 3.0)
    assert c.q == pytest.approx(1.5)
    assert c.norm(w) == pytest.approx(np.linalg.norm(flat, 3))
    assert c.dual_norm(w) == pytest.approx(np.linalg.norm(flat, 1.5))
    # Scaled evaluation: no overflow where |w|^p would overflow.
    assert LpBall(1, 10.0).norm(np.array([1e200, 1e200])) == pytest.approx(1e200 * 2**0.1)


@pytest.mark.parametrize("shape", [5, (5,), (4, 3)])
@pytest.mark.parametrize("c", SETS, ids=_ids)
def test_feasible_point(c, shape):
    x = c.feasible_point(shape)
    assert x.shape == (np.zeros(shape)).shape
    assert c.contains(x)
    if isinstance(c, Simplex):
        np.testing.assert_allclose(x, c.radius / x.size)
    else:
        np.testing.assert_array_equal(x, 0.0)


def test_simplex_does_not_contain_origin():
    assert not Simplex().contains(np.zeros(3))
    with pytest.raises(ValueError, match="empty"):
        Simplex().project(np.zeros(0))


# ------------------------------------------------------------------------------------
# Mirror maps
# ------------------------------------------------------------------------------------


def _maps_and_shapes():
    for p in [1.05, 1.3, 1.5, 2.0]:
        yield PNormMirrorMap(p), (6,)
    for shape in [(1,), (2,), (3,), (50,), (10, 4)]:
        yield L1PNormMirrorMap(), shape
        yield L1Ball(1.0).mirror_map_for(math.prod(shape)), shape
    yield EuclideanMirrorMap(), (4, 2)


@pytest.mark.parametrize("m, shape", list(_maps_and_shapes()), ids=repr)
def test_mirror_map_round_trips(m, shape):
    rng = np.random.default_rng(11)
    for scale in [1e-6, 1.0, 1e6]:
        x = rng.normal(size=shape) * scale
        np.testing.assert_allclose(m.grad_conjugate(m.grad(x)), x, rtol=1e-12, atol=0)
        theta = rng.normal(size=shape) * scale
        np.testing.assert_allclose(m.grad(m.grad_conjugate(theta)), theta, rtol=1e-12)
        assert m.grad(x).shape == shape


def test_pnorm_gradients_match_finite_differences():
    rng = np.random.default_rng(12)
    m = PNormMirrorMap(1.4)
    x = rng.normal(size=5)
    h = 1e-6
    fd = [(m.value(x + h * e) - m.value(x - h * e)) / (2 * h) for e in np.eye(5)]
    np.testing.assert_allclose(m.grad(x), fd, rtol=1e-6)
    # The conjugate value ||theta||_q^2 / (2 (q - 1)): its gradient is grad_conjugate.
    theta, q = rng.normal(size=5), m.q
    conj = lambda t: np.linalg.norm(t, q) ** 2 / (2 * (q - 1))  # noqa: E731
    fd = [(conj(theta + h * e) - conj(theta - h * e)) / (2 * h) for e in np.eye(5)]
    np.testing.assert_allclose(m.grad_conjugate(theta), fd, rtol=1e-6)
    # Fenchel-Young equality at theta = grad(x): w(x) + w*(theta) = <x, theta>.
    assert m.value(x) + conj(m.grad(x)) == pytest.approx(float(x @ m.grad(x)), rel=1e-12)


@pytest.mark.parametrize("radius", [1.0, 0.3, 4.0])
def test_entropy_round_trips(radius):
    rng = np.random.default_rng(13)
    m = Simplex(radius).mirror_map
    assert isinstance(m, EntropyMirrorMap) and m.total == radius
    for shape in [(6,), (3, 4)]:
        x = rng.dirichlet(np.ones(math.prod(shape))).reshape(shape) * radius
        np.testing.assert_allclose(m.grad_conjugate(m.grad(x)), x, rtol=1e-12)
        theta = rng.normal(size=shape) * 5.0
        y = m.grad_conjugate(theta)
        assert y.shape == shape and Simplex(radius).contains(y, tol=1e-12)
        shift = m.grad(y) - theta  # equal up to an additive constant
        np.testing.assert_allclose(shift, shift.ravel()[0], atol=1e-12)
    # Boundary: zeros map to -inf and back to zeros.
    x = np.array([0.0, 0.25, 0.75]) * radius
    np.testing.assert_allclose(m.grad_conjugate(m.grad(x)), x, rtol=1e-12)
    assert m.value(np.array([radius, 0.0])) == pytest.approx(radius * math.log(radius))


@pytest.mark.parametrize("shape", [(1,), (2,), (5,), (40,), (6, 3)])
@pytest.mark.parametrize("c", SETS, ids=_ids)
def test_strong_convexity_modulus(c, shape):
    """``D_w(x, y) >= mu / 2 ||x - y||^2`` in the set's norm, for the dimensional map
    and for the dimension-free one."""
    rng = np.random.default_rng(14)
    points = _points_in(c, shape, rng, n=15)
    if isinstance(c, Simplex):  # entropy needs the relative interior
        points = [0.9 * y + 0.1 * c.feasible_point(shape) for y in points]
    d = math.prod(shape)
    for m in [c.mirror_map, c.mirror_map_for(d)]:
        assert m.strong_convexity > 0
        for _ in range(60):
            i, j = rng.integers(len(points), size=2)
            x, y = points[i], points[j]
            lower = 0.5 * m.strong_convexity * c.norm(x - y) ** 2
            assert m.bregman(x, y) >= lower * (1 - 1e-9) - 1e-12


def test_l1_mirror_map_choice_and_modulus():
    assert isinstance(L1Ball(1).mirror_map, L1PNormMirrorMap)
    assert L1PNormMirrorMap.exponent(1) == L1PNormMirrorMap.exponent(2) == 2.0
    assert L1PNormMirrorMap.exponent(100) == pytest.approx(1 + 1 / math.log(100))
    for d in [1, 2, 3, 10, 10**6]:
        m = L1Ball(2.0).mirror_map_for(d)
        assert isinstance(m, PNormMirrorMap) and m.p == L1PNormMirrorMap.exponent(d)
        assert m.strong_convexity == pytest.approx(d ** (-2 * (1 - 1 / m.p)))
        assert m.strong_convexity >= L1PNormMirrorMap.strong_convexity
    assert L1PNormMirrorMap.strong_convexity == pytest.approx(math.exp(-2))
    # The dimension-free map agrees with the dimensional one at the argument's size.
    rng = np.random.default_rng(15)
    x = rng.normal(size=(8, 2))
    np.testing.assert_array_equal(
        L1PNormMirrorMap().grad(x), L1Ball(1).mirror_map_for(16).grad(x)
    )


def test_lp_ball_mirror_maps():
    assert LpBall(1, 1.5).mirror_map == PNormMirrorMap(1.5)
    assert LpBall(1, 1.5).mirror_map.strong_convexity == 1.0
    assert isinstance(LpBall(1, 3.0).mirror_map, EuclideanMirrorMap)
    assert isinstance(LpBall(1, 3.0).mirror_map_for(4), EuclideanMirrorMap)
    assert isinstance(L2Ball(1).mirror_map, EuclideanMirrorMap)


# ------------------------------------------------------------------------------------
# Validation
# ------------------------------------------------------------------------------------


BAD_RADII = [0.0, -1.0, float("nan"), math.inf]


@pytest.mark.parametrize("radius", BAD_RADII)
def test_invalid_radius(radius):
    for make in [L2Ball, L1Ball, Simplex, lambda r: LpBall(r, 1.5)]:
        with pytest.raises(ValueError, match="radius"):
            make(radius)
    with pytest.raises(ValueError, match="total"):
        EntropyMirrorMap(radius)


@pytest.mark.parametrize("p", [1.0, 0.5, -2.0, float("nan"), math.inf])
def test_invalid_lp_exponent(p):
    with pytest.raises(ValueError, match="1 < p < inf"):
        LpBall(1.0, p)


@pytest.mark.parametrize("p", [1.0, 0.5, 2.5, float("nan"), math.inf])
def test_invalid_pnorm_exponent(p):
    with pytest.raises(ValueError, match="1 < p <= 2"):
        PNormMirrorMap(p)


@pytest.mark.parametrize("mu", [0.0, -1.0, float("nan"), math.inf])
def test_invalid_pnorm_modulus(mu):
    with pytest.raises(ValueError, match="strong_convexity"):
        PNormMirrorMap(1.5, strong_convexity=mu)


def test_sets_are_frozen_and_hashable():
    c = LpBall(1.0, 3.0)
    with pytest.raises(AttributeError):
        c.p = 2.0  # type: ignore[misc]
    assert len({L1Ball(1.0), L1Ball(1.0), Simplex(), LpBall(1.0, 3.0), c}) == 3
    assert all(s.bounded for s in SETS)


# ---------------------------------------------------------------------------------------
# The mirror-descent geometry owned by each set
# ---------------------------------------------------------------------------------------
def test_mirror_geometry_constants():
    d = 50
    p1 = 1.0 + 1.0 / math.log(d)
    mu1 = d ** (-2.0 * (1.0 - 1.0 / p1))
    cases = [
        # set, kind, norm, dual, modulus, sup D_w(x, x_0), sup ||x||, map p
        (Unconstrained(), "euclidean", 2.0, 2.0, 1.0, math.inf, math.inf, 2.0),
        (L2Ball(1.5), "euclidean", 2.0, 2.0, 1.0, 1.125, 1.5, 2.0),
        (LpBall(1.2, 3.0), "euclidean", 2.0, 2.0, 1.0, 0.5 * (1.2 * d ** (1 / 6)) ** 2,
         1.2 * d ** (1 / 6), 2.0),
        (LpBall(1.3, 1.5), "lp", 1.5, 3.0, 1.0, 1.69, 1.3, 1.5),
        (L1Ball(0.7), "l1", 1.0, math.inf, mu1, 0.49 / (2 * (p1 - 1)), 0.7, p1),
        (Simplex(2.5), "simplex", 1.0, math.inf, 0.4, 2.5 * math.log(d), 2.5, 2.0),
    ]
    for c, kind, s, s_dual, mu, breg, radius, map_p in cases:
        g = c.mirror_geometry(d)
        assert isinstance(g, MirrorGeometry) and g.constraint is c and g.dim == d
        assert g.kind == kind
        assert (g.norm_ord, g.dual_ord, g.map_p) == pytest.approx((s, s_dual, map_p))
        assert g.modulus == pytest.approx(mu, rel=1e-12)
        assert g.bregman_radius == pytest.approx(breg, rel=1e-12)
        assert g.radius == pytest.approx(radius, rel=1e-12)
        assert g.scaled_bregman_radius() == pytest.approx(breg / mu, rel=1e-12)
        if math.isfinite(g.radius):
            assert g.mirror_map.strong_convexity == pytest.approx(mu, rel=1e-12)
    with pytest.raises(ValueError, match="dim"):
        L2Ball(1.0).mirror_geometry(0)


def test_a_set_without_geometry_is_incompatible():
    box = box_constraint(EuclideanMirrorMap())
    with pytest.raises(IncompatibleSolverError, match="Box"):
        box.mirror_geometry(3)
    x = np.array([0.5, 2.0, -3.0])
    np.testing.assert_array_equal(box.mirror_step(EuclideanMirrorMap(), x, x, 0.5),
                                  np.clip(0.5 * x, -1, 1))
    with pytest.raises(IncompatibleSolverError, match="mirror map"):
        box.mirror_step(PNormMirrorMap(1.5), x, x, 0.5)


def test_support_pairing_is_the_support_function_bound():
    rng = np.random.default_rng(0)
    x = rng.normal(size=6)
    assert Unconstrained().support_pairing() == (math.inf, 2.0)
    for c in [L2Ball(1.5), L1Ball(0.7), LpBall(1.3, 1.5), LpBall(1.2, 3.0), Simplex(2.5)]:
        radius, q = c.support_pairing()
        support = -float(np.ravel(c.lmo(-x)) @ x)  # sup_{u in C} <x, u>
        assert support <= radius * float(np.linalg.norm(x, q)) * (1 + 1e-12)


@pytest.mark.parametrize("c", [L2Ball(0.5), L1Ball(0.5), LpBall(0.5, 1.5), LpBall(0.5, 3.0),
                               Simplex(1.0), Unconstrained()], ids=_ids)
def test_geometry_steps_are_the_sets_exact_steps(c):
    rng = np.random.default_rng(1)
    d = 8
    geom = c.mirror_geometry(d)
    x = c.project(rng.normal(size=d) * 0.1) if c.bounded else rng.normal(size=d)
    g = rng.normal(size=d)
    z = geom.mirror_step(x, g, 0.3)
    np.testing.assert_array_equal(z, c.mirror_step(c.mirror_map_for(d), x, g, 0.3))
    y = geom.gradient_step(x, g, 2.0, x)
    if geom.kind == "euclidean":
        np.testing.assert_array_equal(y, c.project(x - g / 2.0))
    elif geom.kind == "l1":
        np.testing.assert_array_equal(y, l1_ball_gradient_step(x, g, 2.0, 0.5))
    elif geom.kind == "simplex":
        np.testing.assert_array_equal(y, simplex_gradient_step(x, g, 2.0))
    if c.bounded:
        assert c.contains(z, tol=1e-10) and c.contains(y, tol=1e-10)


def test_geometry_ball_is_the_maps_own_ball():
    assert isinstance(L2Ball(1.0).mirror_geometry(5).ball(math.inf), Unconstrained)
    assert L2Ball(1.0).mirror_geometry(5).ball(0.3) == L2Ball(0.3)
    assert LpBall(1.0, 1.5).mirror_geometry(5).ball(0.3) == LpBall(0.3, 1.5)
    geom = L1Ball(1.0).mirror_geometry(20)
    ball = geom.ball(0.3)
    assert ball == LpBall(0.3, geom.map_p)
    x = np.zeros(20)
    g = np.linspace(-1.0, 1.0, 20)
    assert ball.contains(ball.mirror_step(geom.mirror_map, x, g, 10.0), tol=1e-12)


def test_l1_pnorm_map_is_fixed_per_size():
    mm = L1PNormMirrorMap()
    assert mm.for_size(30) == L1PNormMirrorMap.for_dim(30)
    assert mm.for_size(0) == L1PNormMirrorMap.for_dim(1)
    p = PNormMirrorMap(1.5)
    assert p.for_size(30) is p


def test_bregman_projection_is_the_mirror_steps_projection():
    rng = np.random.default_rng(2)
    x = L1Ball(0.5).project(rng.normal(size=9) * 0.2)
    g = rng.normal(size=9)
    for c, mm in [(LpBall(0.5, 1.5), PNormMirrorMap(1.5)), (L2Ball(0.5), PNormMirrorMap(2.0)),
                  (L1Ball(0.5), L1PNormMirrorMap.for_dim(9)),
                  (Unconstrained(), PNormMirrorMap(1.3))]:
        theta = mm.grad(x) - 0.7 * g
        np.testing.assert_array_equal(c.bregman_projection(mm, theta),
                                      c.mirror_step(mm, x, g, 0.7))
    # The prox of a linear term: argmin <C, w> + s w(w) over the ball.
    ball, mm = LpBall(0.3, 1.5), PNormMirrorMap(1.5)
    w = ball.bregman_projection(mm, -g / 2.0)
    assert ball.contains(w, tol=1e-12)
    def phi(v):
        return float(g @ v) + 2.0 * mm.value(v)

    for _ in range(50):
        v = ball.project(w + 0.05 * rng.normal(size=9))
        assert phi(w) <= phi(v) + 1e-12
    with pytest.raises(IncompatibleSolverError, match="Bregman projection"):
        LpBall(1.0, 1.5).bregman_projection(PNormMirrorMap(1.3), g)
    with pytest.raises(IncompatibleSolverError, match="Bregman projection"):
        Simplex(1.0).bregman_projection(PNormMirrorMap(1.3), g)


@pytest.mark.parametrize("constraint", [L2Ball(0.7), L2Ball(50.0), Unconstrained(),
                                        LpBall(0.8, 3.0), Simplex(1.0)])
@pytest.mark.parametrize("shape", [(7, 1), (4, 3)])
def test_mirror_stepper_is_the_mirror_step(constraint, shape):
    """The resolved step (fast Euclidean paths included) returns mirror_step's array
    (the p-norm maps' steps, equal to rounding: the next test)."""
    from skdp.geometry import mirror_stepper

    rng = np.random.default_rng(5)
    size = int(np.prod(shape))
    geometry = constraint.mirror_geometry(size)
    step = geometry.stepper()
    maps = [geometry.mirror_map]
    if constraint.kind in ("l2", "none"):
        maps.append(EuclideanMirrorMap())
    x = constraint.feasible_point(shape)
    for _ in range(20):
        g = rng.normal(size=shape) * rng.choice([0.01, 1.0, 100.0])
        eta = float(rng.choice([0.01, 0.5, 3.0]))
        expected = constraint.mirror_step(geometry.mirror_map, x, g, eta)
        np.testing.assert_array_equal(step(x, g, eta), expected)
        for mm in maps:
            np.testing.assert_array_equal(mirror_stepper(constraint, mm, size)(x, g, eta),
                                          constraint.mirror_step(mm, x, g, eta))
        x = expected


@pytest.mark.parametrize("constraint", [L1Ball(0.5), L1Ball(50.0), LpBall(0.8, 1.5),
                                        LpBall(50.0, 1.3), Unconstrained()])
@pytest.mark.parametrize("shape", [(40, 1), (6, 3)])
def test_pnorm_stepper_keeps_the_dual_point(constraint, shape):
    """The p-norm steps that keep their dual point follow mirror_step's iterates to
    rounding, from their own outputs (kept dual) and from fresh points (recomputed)."""
    from skdp.geometry import mirror_stepper

    rng = np.random.default_rng(11)
    size = int(np.prod(shape))
    mm = (PNormMirrorMap(1.4) if isinstance(constraint, Unconstrained)
          else constraint.mirror_geometry(size).mirror_map)
    step = mirror_stepper(constraint, mm, size)
    x_fast = x_ref = np.full(shape, 0.01)
    for k in range(60):
        g = rng.normal(size=shape) * rng.choice([0.01, 1.0, 30.0])
        eta = float(rng.choice([0.01, 0.3, 2.0]))
        if k % 17 == 16:  # a point the step did not return: its dual is recomputed
            x_fast = x_ref = x_ref * 0.5
        x_ref = constraint.mirror_step(mm, x_ref, g, eta)
        x_fast = np.array(step(np.array(x_fast), g, eta))
        scale = max(1.0, float(np.abs(x_ref).max()))
        np.testing.assert_allclose(x_fast, x_ref, rtol=0, atol=1e-11 * scale)
