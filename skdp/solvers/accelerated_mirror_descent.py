"""DP-AccMD: noisy accelerated mirror descent (Wang, Ye & Xu 2017, Algorithm 3).

Linear coupling of a gradient step and a mirror step (Allen-Zhu & Orecchia 2017) in the
geometry of the constraint set, fed by ONE noisy clipped full-batch gradient per iteration.
The paper's listing takes the gradient step (the ``y``-step) with the exact gradient, which
is not private; here both steps use the same released gradient (design note
``privacy-calibration.md``, section 1.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import (
    Constraint,
    EuclideanMirrorMap,
    L1Ball,
    L2Ball,
    LpBall,
    MirrorMap,
    PNormMirrorMap,
    Simplex,
    Unconstrained,
    _pnorm_grad,
)
from skdp.privacy.accounting import (
    analytic_gaussian_multiplier,
    check_sensitivity,
)
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import (
    _NON_PRIVATE_SNR,
    BaseDPSolver,
    Plan,
    Problem,
    ProblemSpec,
    _legacy_plan,
)
from skdp.solvers._capabilities import Capabilities
from skdp.solvers.gd import full_batch_gaussian
from skdp.solvers.mirror_descent import mirror_step

__all__ = ["DPAccMD", "l1_ball_gradient_step", "simplex_gradient_step"]

# Upper limit of the automatic iteration count (each iteration is one pass over the data).
MAX_AUTO_ITER = 2000
GEOMETRIES = ("euclidean", "l1", "lp", "simplex")


# --------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Geometry:
    """The norm, mirror map and modulus the algorithm runs in (public, from the set).

    Attributes
    ----------
    kind : {"euclidean", "l1", "lp", "simplex"}
    norm_ord : float
        ``s``: the geometry's norm is the entrywise l_s norm of ``W[:n_penalized]``.
    dual_ord : float
        ``s* = s / (s - 1)``: the norm gradients are measured in.
    mirror_map : MirrorMap
        The constraint's mirror map (for ``dim`` coordinates).
    modulus : float
        Strong convexity ``mu`` of ``mirror_map`` with respect to the l_s norm; the
        algorithm uses the 1-strongly convex ``w / mu``.
    """

    kind: str
    norm_ord: float
    dual_ord: float
    mirror_map: MirrorMap
    modulus: float

    @classmethod
    def of(cls, constraint: Constraint, dim: int) -> Geometry:
        """The geometry of ``constraint`` for parameters of ``dim`` coordinates."""
        if isinstance(constraint, L2Ball | Unconstrained) or (
            isinstance(constraint, LpBall) and constraint.p > 2
        ):
            # l2 (and, for p > 2, the l2 geometry of the lp ball: ||.||_p^2 has no
            # dimension-free modulus in l_p, so the Euclidean map and norm are used).
            return cls("euclidean", 2.0, 2.0, EuclideanMirrorMap(), 1.0)
        if isinstance(constraint, L1Ball):
            # p-norm map with p = 1 + 1/ln d and its exact l1 modulus d^(-2 (1 - 1/p)).
            mm = constraint.mirror_map_for(dim)
            return cls("l1", 1.0, math.inf, mm, float(mm.strong_convexity))
        if isinstance(constraint, LpBall):
            p = float(constraint.p)
            return cls("lp", p, p / (p - 1.0), PNormMirrorMap(p), 1.0)
        if isinstance(constraint, Simplex):
            mm = constraint.mirror_map_for(dim)
            return cls("simplex", 1.0, math.inf, mm, float(mm.strong_convexity))
        raise IncompatibleSolverError(
            f"solver 'accelerated_mirror_descent' has no geometry for "
            f"{type(constraint).__name__}; use constraint='l2', 'l1' or 'lp'."
        )


def _set_radius_dual(constraint: Constraint) -> tuple[float, float]:
    """``(radius, q)``: ``sup_{u in C} <x, u> <= radius ||x||_q`` (Hoelder), or ``(inf, 2)``."""
    if isinstance(constraint, L2Ball):
        return float(constraint.radius), 2.0
    if isinstance(constraint, L1Ball | Simplex):
        return float(constraint.radius), math.inf
    if isinstance(constraint, LpBall):
        return float(constraint.radius), float(constraint.q)
    return math.inf, 2.0


def _expected_dual_sq(dual_ord: float, dim: int) -> float:
    """A public upper bound on ``E ||xi||_{s*}^2`` for ``xi ~ N(0, I_dim)``.

    ``s* = 2``: ``dim`` exactly. ``s* = inf``: ``E max_j xi_j^2 <= 1 + 2 ln(2 dim)`` (the
    Gaussian maximal inequality; used only to choose ``T``). Finite ``s* > 2``: Jensen,
    ``E ||xi||_s*^2 <= (dim E|xi_1|^s*)^(2/s*)``, ``E|xi_1|^r = 2^(r/2) Gamma((r+1)/2) /
    sqrt(pi)``, capped by the ``s* = inf`` value times ``dim^(2/s*)``.
    """
    if dim == 0:
        return 0.0
    if dual_ord == 2.0:
        return float(dim)
    inf_bound = 1.0 + 2.0 * math.log(2.0 * dim)
    if dual_ord == math.inf:
        return inf_bound
    r = dual_ord
    log_moment = 0.5 * r * math.log(2.0) + gammaln(0.5 * (r + 1.0)) - 0.5 * math.log(math.pi)
    jensen = math.exp((2.0 / r) * (math.log(dim) + log_moment))
    return float(min(jensen, inf_bound * dim ** (2.0 / r)))


# --------------------------------------------------------------------------------------
# The y-step: argmin_{y in C} (L/2) ||y - x||^2 + <g, y - x> in the geometry's norm
# --------------------------------------------------------------------------------------


def l1_ball_gradient_step(x: np.ndarray, g: np.ndarray, smooth: float, radius: float
                          ) -> np.ndarray:
    """Exact ``argmin_{||y||_1 <= radius} (L/2) ||y - x||_1^2 + <g, y - x>``.

    Derivation. With ``d = y - x``, ``t = ||d||_1`` and multipliers ``lambda = L t`` (for
    the l1 length) and ``nu >= 0`` (for the ball), KKT separates per coordinate into a
    linear programme over unit "activities", each costing one unit of length:

    - *A_j* (``sign x_j = sign g_j``): move ``x_j`` towards 0; gain ``|g_j|``, frees one
      unit of norm; capacity ``|x_j|``; used iff ``|g_j| + nu > lambda``.
    - *C_j* (otherwise, ``x_j != 0``): move ``x_j`` towards 0 against the gradient; gain
      ``-|g_j|``, frees one unit of norm; capacity ``|x_j|``; used iff
      ``nu - |g_j| > lambda``.
    - *B* (any ``j`` with ``|g_j| = G = ||g||_inf``): move away from 0 along ``-g``; gain
      ``G``, uses one unit of norm; unlimited, so ``lambda + nu >= G``.

    If the unconstrained l1 step (``t = G / L`` along the largest ``|g_j|``, shrinking
    coordinates of the same sign first) is feasible, it is the answer (``nu = 0``).
    Otherwise the ball is tight, ``nu = G - lambda > 0`` and ``B`` is used at the margin:
    its length ``b`` balances the norm, ``b = S + (radius - ||x||_1)`` with ``S`` the
    length of the A/C moves, and ``t = S + b``, i.e. ``lambda / L = 2 S(lambda) + s_0``.
    Each coordinate enters ``S`` below its breakpoint ``(G + |g_j|) / 2`` (A) or
    ``(G - |g_j|) / 2`` (C), so ``S`` is a non-increasing step function and the root is
    found exactly after one sort (the breakpoint coordinate is moved partially).

    Parameters
    ----------
    x : ndarray
        Current point, ``||x||_1 <= radius`` (any shape; treated as a flat vector).
    g : ndarray
        Gradient (same shape).
    smooth : float
        ``L > 0``.
    radius : float

    Returns
    -------
    ndarray of the shape of ``x``
    """
    shape = x.shape
    x, g = np.ravel(np.asarray(x, dtype=float)), np.ravel(np.asarray(g, dtype=float))
    a = np.abs(g)
    G = float(a.max(initial=0.0))
    if G == 0.0:
        return x.reshape(shape).copy()
    slack = max(radius - float(np.abs(x).sum()), 0.0)
    top = int(np.argmax(a))
    same = (x != 0) & (np.sign(x) == np.sign(g))
    # nu = 0: the unconstrained step, shrinking same-sign top coordinates first.
    t_free = G / smooth
    is_top_a = same & (a == G)
    top_mass = float(np.abs(x[is_top_a]).sum())
    d = np.zeros_like(x)
    if t_free - 2.0 * min(top_mass, t_free) <= slack:
        shrink = min(top_mass, t_free)
        idx = np.flatnonzero(is_top_a)
        mags = np.abs(x[idx])
        cum = np.cumsum(mags)
        used = np.clip(shrink - (cum - mags), 0.0, mags)  # fill in order
        d[idx] = -np.sign(x[idx]) * used
        rest = t_free - shrink
        if rest > 0:
            j = int(idx[-1]) if idx.size else top
            d[j] -= np.sign(g[j]) * rest
        y = x + d
    else:
        # nu > 0: solve lambda / L = 2 S(lambda) + slack, lambda in [0, G).
        nz = np.flatnonzero(x != 0)
        brk = np.where(same[nz], 0.5 * (G + a[nz]), 0.5 * (G - a[nz]))
        order = np.argsort(-brk, kind="stable")
        nz, brk = nz[order], brk[order]
        w = np.abs(x[nz])
        cum = np.concatenate([[0.0], np.cumsum(w)])  # W_0 .. W_M
        upper = np.concatenate([[G], brk])  # beta_0 = G, beta_1.. beta_M
        lower = np.concatenate([brk, [0.0]])  # beta_1 .. beta_M, beta_{M+1} = 0
        cand = smooth * (2.0 * cum + slack)
        k = int(np.flatnonzero(cand >= lower)[0])
        if cand[k] <= upper[k]:
            lam, full, part = float(cand[k]), k, 0.0
        else:  # the root sits on breakpoint k: coordinate k moves partially
            lam = float(upper[k])
            full = k - 1
            part = min(max(0.5 * (lam / smooth - slack) - cum[k - 1], 0.0), w[k - 1])
        moved = nz[:full]
        d[moved] = -x[moved]
        if part > 0:
            j = nz[full]
            d[j] = -np.sign(x[j]) * part
        s_len = float(cum[full] + part)
        b = lam / smooth - s_len  # the B length: t - S
        d[top] -= np.sign(g[top]) * max(b, 0.0)
        y = x + d
    norm = float(np.abs(y).sum())
    if norm > radius:  # rounding only
        y *= radius / norm
    return y.reshape(shape)


def simplex_gradient_step(x: np.ndarray, g: np.ndarray, smooth: float) -> np.ndarray:
    """Exact ``argmin_{y in simplex} (L/2) ||y - x||_1^2 + <g, y - x>``.

    On the simplex ``sum_j d_j = 0``: moving mass ``m`` costs l1 length ``2 m``, and is best
    moved into one coordinate ``j0`` of smallest gradient, taken from the coordinates of
    largest gradient first (gain ``g_i - g_min`` per unit). Minimising
    ``2 L m^2 - gain(m)`` (``gain`` concave, piecewise linear) gives ``4 L m = g_src(m) -
    g_min`` with ``g_src(m)`` the gradient of the coordinate drained at ``m``: a threshold
    ``theta = g_min + 4 L m`` such that every coordinate with ``g_i > theta`` is emptied
    (the one at ``theta`` partially), found exactly after one sort.
    """
    shape = x.shape
    x, g = np.ravel(np.asarray(x, dtype=float)), np.ravel(np.asarray(g, dtype=float))
    j0 = int(np.argmin(g))
    gmin = float(g[j0])
    src = np.flatnonzero((x > 0) & (g > gmin))
    src = src[src != j0]
    y = x.copy()
    if src.size == 0:
        return y.reshape(shape)
    order = np.argsort(-g[src], kind="stable")
    src = src[order]
    gs, w = g[src], x[src]
    cum = np.concatenate([[0.0], np.cumsum(w)])
    upper = np.concatenate([[math.inf], gs])
    lower = np.concatenate([gs, [gmin]])
    cand = gmin + 4.0 * smooth * cum
    k = int(np.flatnonzero(cand >= lower)[0])
    if cand[k] <= upper[k]:
        full, part = k, 0.0
    else:
        full = k - 1
        theta = float(upper[k])
        part = min(max((theta - gmin) / (4.0 * smooth) - cum[k - 1], 0.0), w[k - 1])
    y[src[:full]] = 0.0
    if part > 0:
        y[src[full]] -= part
    y[j0] += float(cum[full] + part)
    return y.reshape(shape)


def _dual_grad(g: np.ndarray, q: float) -> np.ndarray:
    """``nabla (||g||_q^2 / 2)``: the unconstrained l_p gradient direction (``1/p+1/q=1``)."""
    return _pnorm_grad(g, q, 1.0)


def _lp_gradient_step(x, g, smooth, ball: LpBall, v):
    """The l_p gradient step: exact when the unconstrained step is feasible.

    Unconstrained, ``argmin (L/2) ||d||_p^2 + <g, d>`` is ``d = -nabla(||.||_q^2/2)(g) /
    L``. When it leaves the ball there is no closed form; the step returns the candidate
    of smallest model value ``(L/2) ||y - x||_p^2 + <g, y - x>`` among the radial rescaling
    and the Euclidean projection of the unconstrained step and the coupling point ``v =
    r z_{k+1} + (1 - r) y_k``. The convergence proof (supplement, (52)-(56)) only uses that
    the model value at ``y_{k+1}`` is at most the one at ``v``, which this guarantees.
    """
    p = float(ball.p)
    q = p / (p - 1.0)
    y_free = x - _dual_grad(g, q) / smooth
    norm = ball.norm(y_free)
    if norm <= ball.radius:
        return y_free
    cands = [y_free * (ball.radius / norm), ball.project(y_free), v]

    def model(y):
        return 0.5 * smooth * ball.norm(y - x) ** 2 + float(np.sum(g * (y - x)))

    return min(cands, key=model)


# --------------------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------------------


class DPAccMD(BaseDPSolver):
    """DP-AccMD: accelerated mirror descent on noisy clipped full-batch gradients.

    Each iteration ``k = 0..T-1`` (Algorithm 3 of Wang, Ye & Xu 2017, the linear coupling
    of Allen-Zhu & Orecchia) sets ``a_{k+1} = (k + 2) / (4 L)``, ``r_k = 2 / (k + 2)``,
    ``x_{k+1} = r_k z_k + (1 - r_k) y_k``, releases ONE noisy gradient
    ``g_k = mean_i clip_G(grad f(x_{k+1}; z_i)) + N(0, sigma^2 I) + alpha x_{k+1}`` and uses
    it in both

    - the gradient step ``y_{k+1} = argmin_{y in C} (L/2) ||y - x_{k+1}||^2 + <g_k, y>``
      in the norm ``||.||`` of the constraint's geometry, and
    - the mirror step ``z_{k+1} = argmin_{z in C} D_w(z, z_k) / mu + a_{k+1} <g_k, z>``,

    and returns ``y_T``. Geometries: l2 ball (Euclidean map, projected gradient step), l1
    ball (p-norm map, ``p = 1 + 1/ln d``, exact l1 gradient step, see
    :func:`l1_ball_gradient_step`), l_p ball (p-norm map for ``1 < p <= 2``; the l2
    geometry for ``p > 2``), simplex (entropy, exact step :func:`simplex_gradient_step`),
    and the unconstrained problem (Euclidean). A free intercept (``n_penalized <
    n_params``) is unconstrained and takes Euclidean steps in both updates (the norm is
    ``sqrt(||W_pen||^2 + ||b||_2^2)``, the map ``w / mu + ||b||^2 / 2``).

    Parameters
    ----------
    n_iter : int, optional
        Number of iterations ``T`` (one noisy gradient each). Default: from public
        quantities (see Notes).
    clip_norm : float, optional
        Per-example l2 gradient clip ``G``. Default: the public gradient bound
        ``spec.gradient_bound``, which makes clipping lossless.
    restart_every : "auto", int or None, default="auto"
        Restart the coupling (``z = y``, ``k = 0``) every so many iterations (a fixed,
        data-independent schedule). ``"auto"``: every ``ceil(e sqrt(8 L / alpha)) - 1``
        iterations when the objective is ``alpha``-strongly convex in the geometry's own
        (Euclidean) norm, i.e. Euclidean geometry, ``alpha > 0`` and no free intercept;
        never otherwise. ``None``: never.

    Notes
    -----
    **Privacy guarantee.** Replace-one neighbouring relation. Rows are clipped to the
    public ``data_norm`` and per-example gradients to ``G`` in l2, so the mean gradient
    with the public denominator ``n`` has l2 sensitivity ``2G/n``. The algorithm touches
    the data only through the ``T`` releases ``g_k`` (the paper's listing also reads the
    exact gradient in the ``y``-step, which is not private; here the ``y``-step reuses the
    released ``g_k``). ``T`` adaptively composed Gaussian releases with noise ``sigma`` are
    exactly ``mu``-GDP with ``mu = sqrt(T) (2G/n) / sigma`` (Dong, Roth & Su 2022), so the
    default accountant (``"gaussian"``) uses ``sigma = sqrt(T) (2G/n) sigma_B1(eps,
    delta)``, ``sigma_B1`` the analytic Gaussian calibration (Balle & Wang 2018): exact.
    With ``"rdp"``/``"pld"`` the same ledger is calibrated by ``dp_accounting`` (looser).
    Both steps, the regulariser, the mirror map and the restarts are post-processing of
    the releases. Reference: Wang, Ye & Xu, "Differentially private empirical risk
    minimization revisited: faster and more general", NeurIPS 2017, Algorithm 3 and
    Theorem 5.3 (whose constant ``c`` is replaced by the exact calibration).

    **Smoothness in the geometry.** For a GLM with ``phi'' <= c``, ``v^T H v <= c
    ||X v||^2 + alpha ||v||_2^2``; Hoelder with the dual exponent ``s*`` gives the
    smoothness ``L = c X_{s*}^2 + alpha`` in the entrywise l_s norm (``s <= 2``), with
    ``X_{s*}`` the public bound on ``||x_i||_{s*}`` (``spec.row_bound(s*)``; with a free
    intercept ``c`` the bound on ``||x_pen||_{s*}^2 + c^2``). For l2 this is
    ``spec.smoothness``; the paper's ``L ||C||_2^2`` is the same quantity for the
    Minkowski norm of ``C`` (the algorithm is invariant to rescaling the norm).

    **Iteration count.** With the noisy ``y``-step the paper's utility proof (Thm. 5.4)
    does not apply verbatim: the smoothness inequality at ``y_{k+1}`` now carries
    ``<b_k, x_{k+1} - y_{k+1}> <= ||b_k||_*^2 / (2L) + (L/2) ||y_{k+1} - x_{k+1}||^2``,
    which roughly doubles the noise term of the supplement's (57). Heuristically (not a
    theorem), ``E F(y_T) - F* ~ 8 L D / T^2 + T^2 s1^2 E||xi||_*^2 / (3 L)`` with
    ``sigma^2 = T s1^2`` (``s1`` the one-release noise), ``D`` the public bound on
    ``D_w(x*, x_0) / mu`` (``sup_{z in C} D_w(z, x_0) / mu``; ``initial_gap / alpha`` in
    the strongly convex Euclidean case; a unit-score heuristic for unbounded sets and the
    intercept) and ``E||xi||_*^2`` the expected squared dual norm of a standard Gaussian.
    The balance is ``T = (24 L^2 D / (s1^2 E||xi||_*^2))^(1/4)``. With restarts every
    ``T0`` iterations (each contracts ``F - F*`` by ``e^-2``), ``Delta0 e^(-2T/T0) + T0 T
    s1^2 E||xi||_*^2 / (3 L)`` is balanced at ``T = (T0 / 2) ln(6 L Delta0 / (T0^2 s1^2
    E||xi||_*^2))``. ``epsilon = inf`` aims at ``1e-12`` of the initial gap. Capped at
    2000.
    """

    name = "accelerated_mirror_descent"
    capabilities = Capabilities(
        algorithm="DP-AccMD, Wang-Ye-Xu 2017 Alg. 3, Thms 5.3-5.4",
        accountants=("gaussian", "rdp", "pld"), default_accountant="gaussian",
        constraints=("none", "l2", "l1", "lp", "simplex"), secure=True,
    )

    def __init__(self, n_iter=None, clip_norm=None, restart_every="auto"):
        self.n_iter = n_iter
        self.clip_norm = clip_norm
        self.restart_every = restart_every

    def _validate_params(self) -> None:
        self._check_positive_int("n_iter")
        self._check_positive_real("clip_norm")
        r = self.restart_every
        if not (r is None or (isinstance(r, str) and r == "auto")):
            if isinstance(r, bool) or not isinstance(r, int | np.integer) or r < 1:
                raise ValueError(
                    "DPAccMD.restart_every must be 'auto', None or an int >= 1, "
                    f"got {r!r}."
                )

    def check_compatible(self, spec: ProblemSpec, accountant: str, relation: str) -> None:
        super().check_compatible(spec, accountant, relation)
        Geometry.of(spec.constraint, max(spec.n_penalized * spec.n_outputs, 1))

    # -- public constants ------------------------------------------------------------------
    @staticmethod
    def geometry(spec: ProblemSpec) -> Geometry:
        """The geometry of ``spec.constraint`` for the penalised coordinates."""
        return Geometry.of(spec.constraint, max(spec.n_penalized * spec.n_outputs, 1))

    @staticmethod
    def _free_feature(spec: ProblemSpec) -> float:
        """Public bound on the l2 norm of the free (intercept) part of a row."""
        if spec.n_penalized == spec.n_params:
            return 0.0
        c = abs(spec.intercept_feature)
        return c if c > 0 else spec.row_bound(2.0)

    def smoothness(self, spec: ProblemSpec) -> float:
        """Smoothness ``L`` of ``F`` in the geometry's norm (see the class Notes).

        ``(x^T u + c b)^2 <= (||x_pen||_{s*}^2 + c^2)(||u||_s^2 + b^2)`` (Hoelder and
        Cauchy-Schwarz), and ``alpha ||u||_2^2 <= alpha ||u||_s^2`` for ``s <= 2``.
        """
        geom = self.geometry(spec)
        s_star = geom.dual_ord
        free = self._free_feature(spec)
        bound = spec.row_bound(s_star)
        if free == 0.0:
            row_sq = bound**2
        elif spec.intercept_feature == 0.0:
            # Free rows of unknown value: ||x_pen||_{s*}^{s*} + ||x_free||_{s*}^{s*} <=
            # B^{s*}, and a^2 + c^2 <= 2^(1 - 2/s*) (a^{s*} + c^{s*})^(2/s*) (power means).
            row_sq = 2.0 ** (1.0 - 2.0 / s_star) * bound**2
        elif s_star == math.inf:
            row_sq = bound**2 + free**2
        else:
            pen = max(bound**s_star - abs(spec.intercept_feature) ** s_star, 0.0)
            row_sq = pen ** (2.0 / s_star) + free**2
        return float(spec.loss.curvature_bound * row_sq + spec.alpha)

    def distance_bound(self, spec: ProblemSpec) -> float:
        """Public bound ``D`` on ``D_w(x*, x_0) / mu`` (see the class Notes)."""
        geom = self.geometry(spec)
        c = spec.constraint
        m = max(spec.n_penalized * spec.n_outputs, 1)
        if isinstance(c, L2Ball):
            dist = 0.5 * float(c.radius) ** 2
        elif isinstance(c, LpBall) and geom.kind == "euclidean":
            dist = 0.5 * (float(c.radius) * m ** (0.5 - 1.0 / float(c.p))) ** 2
        elif geom.kind in ("l1", "lp"):
            # w(z) = ||z||_p^2 / (2 (p - 1)) <= radius^2 / (2 (p - 1)) on the ball, x_0 = 0.
            p = geom.mirror_map.p
            dist = float(c.radius) ** 2 / (2.0 * (p - 1.0) * geom.modulus)
        elif geom.kind == "simplex":
            # D_w(z, uniform) = radius KL(z / radius || uniform) <= radius ln m, mu = 1/radius.
            dist = float(c.radius) ** 2 * math.log(m) if m > 1 else 0.0
        else:
            # Unbounded set: parameters of "unit score" (||w||_2 = 1 / X_2), a heuristic.
            dist = 0.5 / spec.row_bound(2.0) ** 2
        free = self._free_feature(spec)
        if free > 0:
            # Heuristic intercept scale: it offsets scores of size up to the features'
            # Hoelder bound sup_{u in C} <x, u> (plus one unit), divided by c.
            radius, q = _set_radius_dual(c)
            score = radius * spec.row_bound(q) if math.isfinite(radius) else 1.0
            dist += 0.5 * spec.n_outputs * (spec.n_params - spec.n_penalized) * (
                (1.0 + score) / free) ** 2
        elif spec.alpha > 0 and geom.kind == "euclidean":
            # alpha-strong convexity at the constrained optimum: F(0) - F* >=
            # (alpha / 2) ||x*||^2 (0 is feasible), so ||x* - 0||^2 / 2 <= gap / alpha.
            dist = min(dist, spec.initial_gap / spec.alpha)
        return float(max(dist, 1e-300))

    def restart_period(self, spec: ProblemSpec) -> int:
        """Fixed restart period ``T0`` (0: never); see ``restart_every``."""
        if self.restart_every is None:
            return 0
        if self.restart_every != "auto":
            return int(self.restart_every)
        geom = self.geometry(spec)
        if geom.kind != "euclidean" or spec.alpha <= 0 or spec.n_penalized < spec.n_params:
            return 0
        # From y: D_w(x*, y) = ||x* - y||^2 / 2 <= (F(y) - F*) / alpha, so T0 steps give
        # F - F* <= 8 L (F(y) - F*) / (alpha (T0 + 1)^2) <= e^-2 (F(y) - F*) for
        # T0 + 1 >= e sqrt(8 L / alpha) (the contraction e^-2 maximises the rate per step).
        return max(1, math.ceil(math.e * math.sqrt(8.0 * self.smoothness(spec) / spec.alpha))
                   - 1)

    def auto_n_iter(self, spec: ProblemSpec, budget: Budget, sensitivity: float) -> int:
        """Data-independent default ``T`` (see the class Notes)."""
        if self.n_iter is not None:
            return int(self.n_iter)
        L = self.smoothness(spec)
        D = self.distance_bound(spec)
        period = self.restart_period(spec)
        geom = self.geometry(spec)
        m_pen = spec.n_penalized * spec.n_outputs
        m_free = (spec.n_params - spec.n_penalized) * spec.n_outputs
        e_dual = _expected_dual_sq(geom.dual_ord, m_pen) + m_free
        if budget.is_private:
            s1 = sensitivity * analytic_gaussian_multiplier(budget, 1)
            noise = max(s1**2 * e_dual, 1e-300)
            # Minimiser of 8 L D / T^2 + T^2 s1^2 E / (3 L).
            t = (24.0 * L**2 * D / noise) ** 0.25
            if period and t > period:
                # Minimiser of Delta0 e^(-2 T / T0) + T0 T s1^2 E / (3 L).
                ratio = 6.0 * L * spec.initial_gap / (period**2 * noise)
                t = max(0.5 * period * math.log(max(ratio, math.e)), period)
        elif period:
            t = 0.5 * period * math.log(_NON_PRIVATE_SNR)
        else:
            t = math.sqrt(8.0 * L * D * _NON_PRIVATE_SNR / spec.initial_gap)
        return int(min(max(math.ceil(t), 1), MAX_AUTO_ITER))

    def plan(self, spec: ProblemSpec, budget: Budget, accountant: str, relation: str) -> Plan:
        clip = self.gradient_clip(spec)
        # Mean of n per-example gradients of l2 norm <= G with the public denominator n:
        # replacing one record moves it by at most 2G/n.
        sensitivity = check_sensitivity(2.0 * clip / spec.n_samples, "gradient sensitivity 2G/n")
        n_iter = self.auto_n_iter(spec, budget, sensitivity)
        # T releases, each (2G/n)-sensitive, compose exactly (the same ledger as DP-GD).
        z, sigma, event = full_batch_gaussian(sensitivity, n_iter, budget, accountant, relation)
        geom = self.geometry(spec)
        return _legacy_plan(
            n_iter=n_iter,
            event=event,
            accountant=accountant,
            relation=relation,
            settings={
                "sigma": sigma,
                "noise_multiplier": z,
                "sensitivity": sensitivity,
                "clip_norm": clip,
                "smoothness": self.smoothness(spec),
                "geometry": geom.kind,
                "mirror_modulus": geom.modulus,
                "restart_every": self.restart_period(spec),
            },
        )

    # -- the algorithm -----------------------------------------------------------------------
    def release_noise_scale(self, plan: Plan) -> float:
        # Each gradient step moves the iterate by (noisy gradient) / L: sigma / L.
        return plan.settings["sigma"] / plan.settings["smoothness"]

    def _run(self, problem: Problem, plan: Plan, noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        p, constraint = spec.n_penalized, spec.constraint
        geom = self.geometry(spec)
        sigma, clip, L = (plan.settings[k] for k in ("sigma", "clip_norm", "smoothness"))
        mu = plan.settings["mirror_modulus"]
        period = plan.settings["restart_every"]
        shape = (spec.n_params, spec.n_outputs)
        W0 = np.zeros(shape)
        W0[:p] = constraint.feasible_point((p, spec.n_outputs))
        y, z = W0.copy(), W0.copy()
        k = 0
        for _ in range(plan.n_iter):
            a_next = (k + 2) / (4.0 * L)
            r = 2.0 / (k + 2)  # r_k = 1 / (2 a_{k+1} L)
            x = r * z + (1.0 - r) * y
            g = problem.clipped_gradient(x, clip) + noise.gaussian(shape, sigma)
            g[:p] += spec.alpha * x[:p]
            # Mirror step with the 1-strongly convex map w / mu: eta = mu a_{k+1}.
            # (the exact constrained Bregman step of mirror_descent.mirror_step: Euclidean
            # projection; p-norm map rescaled onto the l_p sphere or soft-thresholded in
            # the dual for the l1 ball; multiplicative weights on the simplex).
            z_new = np.empty(shape)
            z_new[:p] = mirror_step(constraint, geom.mirror_map, z[:p], g[:p], mu * a_next)
            z_new[p:] = z[p:] - a_next * g[p:]
            # Gradient step in the geometry's norm with smoothness L.
            y_new = np.empty(shape)
            y_new[:p] = self._gradient_step(geom, constraint, x[:p], g[:p], L,
                                            r * z_new[:p] + (1.0 - r) * y[:p])
            y_new[p:] = x[p:] - g[p:] / L
            y, z = y_new, z_new
            k += 1
            if period and k == period:
                k = 0
                z = y.copy()
        return y

    @staticmethod
    def _gradient_step(geom: Geometry, constraint: Constraint, x: np.ndarray, g: np.ndarray,
                       L: float, v: np.ndarray) -> np.ndarray:
        if geom.kind == "euclidean":
            return constraint.project(x - g / L)
        if geom.kind == "l1":
            return l1_ball_gradient_step(x, g, L, float(constraint.radius))
        if geom.kind == "simplex":
            return simplex_gradient_step(x, g, L)
        return _lp_gradient_step(x, g, L, constraint, v)
