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
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from scipy.special import gammaln

from skdp._params import OPTIONAL_COUNT, store_params
from skdp._sklearn_compat import Interval, StrOptions
from skdp.geometry import MirrorGeometry, l1_ball_gradient_step, simplex_gradient_step
from skdp.geometry._steps import _dual_grad as _dual_grad  # re-exported
from skdp.geometry._steps import _lp_gradient_step as _lp_gradient_step  # re-exported
from skdp.privacy.accounting import (
    analytic_gaussian_multiplier,
    check_sensitivity,
)
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import (
    MAX_AUTO_ITER,
    BaseDPSolver,
    Plan,
    Problem,
    ProblemSpec,
)
from skdp.solvers._capabilities import Capabilities
from skdp.solvers._problem import _NON_PRIVATE_SNR
from skdp.solvers.gd import full_batch_gaussian

__all__ = ["AccMDPlan", "DPAccMD", "l1_ball_gradient_step", "simplex_gradient_step"]

GEOMETRIES = ("euclidean", "l1", "lp", "simplex")

# The geometry the algorithm runs in (norm, mirror map, modulus, exact steps) is the
# constraint's MirrorGeometry (skdp.geometry.Constraint.mirror_geometry). The y-step
# helpers l1_ball_gradient_step, simplex_gradient_step, _lp_gradient_step and _dual_grad
# live in skdp.geometry._steps and are re-exported here.


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
# The solver
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class AccMDPlan(Plan):
    """The public constants of one run of :class:`DPAccMD`.

    Attributes
    ----------
    sigma : float
        Standard deviation of the Gaussian noise added to each coordinate of every mean
        gradient release.
    noise_multiplier : float
        ``sigma / sensitivity``.
    sensitivity : float
        l2 sensitivity ``2G/n`` of one mean clipped gradient (replace-one).
    clip_norm : float
        ``G``: per-example l2 gradient clip.
    smoothness : float
        ``L``: smoothness of the objective in the geometry's norm.
    geometry : {"euclidean", "l1", "lp", "simplex"}
        The geometry's kind (:attr:`skdp.geometry.MirrorGeometry.kind`).
    mirror_modulus : float
        ``mu``: strong convexity of the mirror map in the geometry's norm.
    restart_every : int
        Restart period ``T0`` of the coupling (0: never).
    """

    sigma: float
    noise_multiplier: float
    sensitivity: float
    clip_norm: float
    smoothness: float
    geometry: str
    mirror_modulus: float
    restart_every: int


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

    and returns ``y_T``. The geometry (norm, map, modulus and both exact steps) is the
    constraint's :meth:`~skdp.geometry.Constraint.mirror_geometry`: l2 ball and no
    constraint (Euclidean), l1 ball (p-norm map, ``p = 1 + 1/ln d``), l_p ball (p-norm map
    for ``1 < p <= 2``; the l2 geometry for ``p > 2``), simplex (entropy). A free
    intercept (``n_penalized < n_params``) is unconstrained and takes Euclidean steps in
    both updates.

    Parameters
    ----------
    n_iter : int, optional
        Number of iterations ``T`` (one noisy gradient each). Default: from public
        quantities (see the algorithm page).
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
    default accounting method (``"gaussian"``) uses ``sigma = sqrt(T) (2G/n) sigma_B1(eps,
    delta)``, ``sigma_B1`` the analytic Gaussian calibration (Balle & Wang 2018): exact.
    With ``"rdp"``/``"pld"`` the same ledger is calibrated by ``dp_accounting`` (looser).
    Both steps, the regulariser, the mirror map and the restarts are post-processing of
    the releases.

    Assumptions: a GLM loss with bounded curvature and public row bounds (the smoothness
    ``L`` in the geometry's norm is ``c X_{s*}^2 + alpha``). Reference: Wang, Ye & Xu,
    "Differentially private empirical risk minimization revisited: faster and more
    general", NeurIPS 2017, Algorithm 3 and Theorem 5.3 (whose constant ``c`` is replaced
    by the exact calibration). Smoothness, the exact gradient steps and the iteration
    count: ``docs/algorithms/accelerated_mirror_descent.md``.
    """

    name = "accelerated_mirror_descent"
    capabilities = Capabilities(
        algorithm="DP-AccMD, Wang-Ye-Xu 2017 Alg. 3, Thms 5.3-5.4",
        accounting_methods=("gaussian", "rdp", "pld"), default_accounting="gaussian",
        constraints=("none", "l2", "l1", "lp", "simplex"), secure=True, out_of_core=True,
    )
    _parameter_constraints: ClassVar[dict] = {
        "n_iter": OPTIONAL_COUNT,
        "clip_norm": [Interval(Real, 0, math.inf, closed="neither"), None],
        "restart_every": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left"),
                          None],
    }

    def __init__(self, n_iter=None, clip_norm=None, restart_every="auto"):
        store_params(self, locals())

    # -- public constants ------------------------------------------------------------------
    @staticmethod
    def geometry(spec: ProblemSpec) -> MirrorGeometry:
        """The geometry of ``spec.constraint`` for the penalised coordinates.

        <<spec_parameters>>

        Returns
        -------
        MirrorGeometry
            The constraint's mirror map (Euclidean, p-norm or entropic) on the
            ``n_penalized * n_outputs`` penalised coefficients.
        """
        return spec.constraint.mirror_geometry(max(spec.n_penalized * spec.n_outputs, 1))

    @staticmethod
    def _free_feature(spec: ProblemSpec) -> float:
        """Public bound on the l2 norm of the free (intercept) part of a row."""
        if spec.n_penalized == spec.n_params:
            return 0.0
        c = abs(spec.intercept_feature)
        return c if c > 0 else spec.row_bound(2.0)

    def smoothness(self, spec: ProblemSpec) -> float:
        """The smoothness ``L`` of ``F`` in the geometry's norm (see the algorithm page).

        ``(x^T u + c b)^2 <= (||x_pen||_{s*}^2 + c^2)(||u||_s^2 + b^2)`` (Hoelder and
        Cauchy-Schwarz), and ``alpha ||u||_2^2 <= alpha ||u||_s^2`` for ``s <= 2``.

        <<spec_parameters>>

        Returns
        -------
        float
            ``L``: the loss's curvature bound times the squared row bound (in the
            geometry's dual norm, with the intercept feature), plus ``alpha``.
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
        """Public bound ``D`` on ``D_w(x*, x_0) / mu`` (see the algorithm page).

        <<spec_parameters>>

        Returns
        -------
        float
            The Bregman radius of the constraint set (a heuristic unit-score radius for
            an unbounded set), plus a heuristic intercept term; positive.
        """
        geom = self.geometry(spec)
        # sup_{z in C} D_w(z, x_0) / mu: R_2^2 / 2 (Euclidean), R^2 / (2 (p - 1) mu) for the
        # p-norm map (x_0 = 0), radius^2 ln m on the simplex (mu = 1/radius).
        dist = geom.scaled_bregman_radius()
        if not math.isfinite(dist):
            # Unbounded set: parameters of "unit score" (||w||_2 = 1 / X_2), a heuristic.
            dist = 0.5 / spec.row_bound(2.0) ** 2
        free = self._free_feature(spec)
        if free > 0:
            # Heuristic intercept scale: it offsets scores of size up to the features'
            # Hoelder bound sup_{u in C} <x, u> (plus one unit), divided by c.
            radius, q = spec.constraint.support_pairing()
            score = radius * spec.row_bound(q) if math.isfinite(radius) else 1.0
            dist += 0.5 * spec.n_outputs * (spec.n_params - spec.n_penalized) * (
                (1.0 + score) / free) ** 2
        elif spec.alpha > 0 and geom.kind == "euclidean":
            # alpha-strong convexity at the constrained optimum: F(0) - F* >=
            # (alpha / 2) ||x*||^2 (0 is feasible), so ||x* - 0||^2 / 2 <= gap / alpha.
            dist = min(dist, spec.initial_gap / spec.alpha)
        return float(max(dist, 1e-300))

    def restart_period(self, spec: ProblemSpec) -> int:
        """Fixed restart period ``T0`` (0: never); see ``restart_every``.

        <<spec_parameters>>

        Returns
        -------
        int
            ``restart_every`` when it is a number, 0 for ``None``; for ``"auto"``,
            ``ceil(e sqrt(8 L / alpha)) - 1`` in the Euclidean geometry with ``alpha > 0``
            and every coefficient penalised, 0 otherwise.
        """
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
        """Data-independent default ``T`` (see the algorithm page).

        <<n_iter_parameters>>

        Returns
        -------
        int
            ``n_iter`` when set; otherwise the minimiser of the accelerated rate plus the
            accumulated noise (with restarts: of their contraction plus the noise), at
            least 1 and capped like DP-GD's.
        """
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

    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str) -> Plan:
        """Fix ``T``, the restart period and the Gaussian noise of DP-AccMD.

        <<plan_parameters>>

        Returns
        -------
        AccMDPlan
            ``T`` full-batch Gaussian releases of sensitivity ``2 G / n`` (the ledger of
            DP-GD), with the smoothness and the mirror geometry of the steps.
        """
        clip = self.gradient_clip(spec)
        # Mean of n per-example gradients of l2 norm <= G with the public denominator n:
        # replacing one record moves it by at most 2G/n.
        sensitivity = check_sensitivity(2.0 * clip / spec.n_samples, "gradient sensitivity 2G/n")
        n_iter = self.auto_n_iter(spec, budget, sensitivity)
        # T releases, each (2G/n)-sensitive, compose exactly (the same ledger as DP-GD).
        geom = self.geometry(spec)
        return AccMDPlan(
            **full_batch_gaussian(sensitivity, n_iter, budget, accounting, relation, clip),
            smoothness=self.smoothness(spec),
            geometry=geom.kind,
            mirror_modulus=geom.modulus,
            restart_every=self.restart_period(spec),
        )

    # -- the algorithm -----------------------------------------------------------------------
    def release_noise_scale(self, plan: AccMDPlan) -> float:
        """Noise scale of one gradient step, ``sigma / L``.

        <<release_parameters>>

        Returns
        -------
        float
            A public lower bound on the per-coordinate noise of the release.
        """
        # Each gradient step moves the iterate by (noisy gradient) / L: sigma / L.
        return plan.sigma / plan.smoothness

    def _run(self, problem: Problem, plan: AccMDPlan, noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        p, constraint = spec.n_penalized, spec.constraint
        geom = self.geometry(spec)
        sigma, clip, L = plan.sigma, plan.clip_norm, plan.smoothness
        mu = plan.mirror_modulus
        period = plan.restart_every
        shape = (spec.n_params, spec.n_outputs)
        W0 = np.zeros(shape)
        W0[:p] = constraint.feasible_point((p, spec.n_outputs))
        y, z = W0.copy(), W0.copy()
        k = 0
        for _ in range(plan.n_iter):
            a_next = (k + 2) / (4.0 * L)
            r = 2.0 / (k + 2)  # r_k = 1 / (2 a_{k+1} L)
            x = r * z + (1.0 - r) * y
            g = (problem.clipped_gradient(x, clip, passes=plan.n_iter)
                 + noise.gaussian(shape, sigma))
            g[:p] += spec.alpha * x[:p]
            problem.advance()
            # Mirror step with the 1-strongly convex map w / mu: eta = mu a_{k+1} (the
            # constraint's exact Bregman step: Euclidean projection; p-norm map rescaled
            # onto the l_p sphere or soft-thresholded in the dual for the l1 ball;
            # multiplicative weights on the simplex).
            z_new = np.empty(shape)
            z_new[:p] = geom.mirror_step(z[:p], g[:p], mu * a_next)
            z_new[p:] = z[p:] - a_next * g[p:]
            # Gradient step in the geometry's norm with smoothness L.
            y_new = np.empty(shape)
            y_new[:p] = geom.gradient_step(x[:p], g[:p], L, r * z_new[:p] + (1.0 - r) * y[:p])
            y_new[p:] = x[p:] - g[p:] / L
            y, z = y_new, z_new
            k += 1
            if period and k == period:
                k = 0
                z = y.copy()
        return y
