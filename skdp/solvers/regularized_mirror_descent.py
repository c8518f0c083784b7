"""Noisy regularized mirror descent in l_p, 1 < p <= 2 (Su, Zhao & Wang, Algorithm 3).

Also home of the l_p geometry shared with the truncated mirror descent solvers
(:mod:`skdp.solvers.truncated_mirror_descent`): the choice of ``p`` from the problem, the
smooth norm ``l_r`` of the generalized Gaussian noise (design note B5) and the mirror step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import ClassVar

import numpy as np
from dp_accounting import dp_event as dpe

from skdp._params import OPTIONAL_COUNT, store_params
from skdp._sklearn_compat import Interval
from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import LpGeometry, default_exponent
from skdp.privacy.accounting import (
    analytic_gaussian_multiplier,
    calibrate_noise_multiplier,
    check_sensitivity,
    gaussian_event,
)
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import BaseDPSolver, Plan, Problem, ProblemSpec
from skdp.solvers._capabilities import Capabilities

__all__ = [
    "LpGeometry",
    "RegularizedMirrorDescent",
    "RegularizedMirrorDescentPlan",
    "default_exponent",
    "gg_noise_geometry",
    "lp_geometry",
]

#: Cap of regularized mirror descent's automatic iteration count (each iteration is one
#: pass over the data; the count grows as base^0.4, docs/algorithms/regularized_mirror_descent.md).
MAX_AUTO_PASSES = 1000


def lp_geometry(spec: ProblemSpec, p: float | None, solver_name: str) -> LpGeometry:
    """The l_p geometry of ``spec``: ``p`` from an l_p / l2 ball, else from the solver.

    Raises :class:`IncompatibleSolverError` when the solver's ``p`` conflicts with the
    constraint's exponent. Other constraint sets, and l_p balls with ``p > 2``, are refused
    by the solvers' capability declarations before planning (the algorithms are for
    ``1 < p <= 2``, where the dual norm ``l_q`` has a smooth norm ``l_r`` with a
    dimension-free constant); a direct call with one raises too.
    """
    constraint = spec.constraint
    kind = constraint.kind
    if kind == "none":
        exponent = default_exponent(spec.dimension) if p is None else float(p)
        radius = None
    elif kind == "lp" and constraint.p <= 2.0:
        exponent, radius = float(constraint.p), float(constraint.radius)
    elif kind == "l2":
        exponent, radius = 2.0, float(constraint.radius)
    else:
        raise IncompatibleSolverError(
            f"solver {solver_name!r} works in l_p geometry with 1 < p <= 2: use "
            "constraint='lp' with 1 < p <= 2 (p = 1 + 1/ln d mimics l1), 'l2', or no "
            f"constraint, not {type(constraint).__name__}."
        )
    if p is not None and radius is not None and float(p) != exponent:
        raise IncompatibleSolverError(
            f"solver {solver_name!r}: p={p} conflicts with the constraint's exponent "
            f"{exponent}; leave the solver's p unset when the problem is constrained."
        )
    return LpGeometry(exponent, spec.n_penalized, radius)


def gg_noise_geometry(q: float, dim: int) -> tuple[float, float]:
    """Order ``r`` of the generalized Gaussian noise and ``s_+ / s_q`` (design note B5).

    The smooth norm of ``(R^d, ||.||_q)`` is ``||.||_r`` with ``r = min(q, 2 ln d + 1)``:
    ``||.||_r^2 / 2`` is ``(r - 1)``-smooth in ``l_r`` (``kappa_+ = r - 1``), and
    ``||v||_r <= d^(1/r - 1/q) ||v||_q`` (Hoelder) converts an l_q sensitivity into an
    l_r one. ``r >= 2`` is enforced (B5 needs a norm whose square is smooth; only
    ``d <= 1`` would give ``2 ln d + 1 < 2``).

    Returns
    -------
    r : float
    factor : float
        ``d^max(0, 1/r - 1/q)``, so that ``s_+ = factor * s_q``.
    """
    r = max(2.0, min(q, 2.0 * math.log(dim) + 1.0)) if dim > 1 else 2.0
    inv_q = 0.0 if q == math.inf else 1.0 / q
    factor = float(dim) ** max(0.0, 1.0 / r - inv_q)
    return r, factor


def _rdp_gaussian_event(z: float, count: int, relation: str) -> dpe.DpEvent:
    """``count`` releases with the RDP curve of a Gaussian of multiplier ``z``."""
    inner = gaussian_event(z, 1.0, accounting="rdp", relation=relation)
    return inner if count == 1 else dpe.SelfComposedDpEvent(inner, count)


def calibrate_gg_multiplier(budget: Budget, count: int, relation: str) -> float:
    """Smallest ``z`` such that ``count`` B5 releases of multiplier ``z`` meet ``budget``.

    A generalized Gaussian release with noise ``sigma`` and l_r sensitivity ``s_+`` is
    ``rho``-zCDP with ``rho = kappa_+ s_+^2 / (2 sigma^2)`` (design note B5), i.e. it has
    the RDP curve ``alpha / (2 z^2)`` of a Gaussian with multiplier
    ``z = sigma / (sqrt(kappa_+) s_+)``. Only RDP accounting may read it (PLD and the
    exact Gaussian accounting use more of the Gaussian than its RDP curve). The exact
    Gaussian multiplier is a lower bound of the RDP solution and starts the search.
    """
    if not budget.is_private:
        return 0.0
    return calibrate_noise_multiplier(
        _rdp_gaussian_event, (count, relation), budget, accounting="rdp", relation=relation,
        lower_bound=analytic_gaussian_multiplier(budget, count),
    )


@dataclass(frozen=True, kw_only=True)
class RegularizedMirrorDescentPlan(Plan):
    """Plan of :class:`RegularizedMirrorDescent` (``n_iter`` is ``T``).

    Attributes
    ----------
    sigma : float
        Scale of the generalized Gaussian noise on each released mean gradient.
    noise_multiplier : float
        ``z = sigma / (sqrt(kappa_plus) sensitivity_r)``: the Gaussian multiplier whose
        RDP curve each release has.
    noise_order : float
        Order ``r`` of the generalized Gaussian (density ``exp(-||g||_r^2 / (2 sigma^2))``).
    kappa_plus : float
        Smoothness constant ``r - 1`` of ``||.||_r^2 / 2``.
    sensitivity_q : float
        l_q sensitivity ``2 L / n`` of the clipped mean gradient.
    sensitivity_r : float
        Its l_r sensitivity (Hoelder).
    clip_norm : float
        Per-example gradient clip ``L`` in the entrywise l_q norm.
    p, q : float
        Exponent of the geometry and its dual ``p / (p - 1)``.
    smoothness : float
        ``beta``, the smoothness of the objective in l_p.
    regularization : float
        Weight ``a`` of the regulariser ``a Phi``.
    """

    sigma: float
    noise_multiplier: float
    noise_order: float
    kappa_plus: float
    sensitivity_q: float
    sensitivity_r: float
    clip_norm: float
    p: float
    q: float
    smoothness: float
    regularization: float


class RegularizedMirrorDescent(BaseDPSolver):
    """Noisy regularized mirror descent in l_p, ``1 < p <= 2`` (Su, Zhao & Wang, Alg. 3).

    Starting from ``w_1 = 0``, each of ``T`` full-batch iterations releases the mean of
    the per-example gradients clipped in the dual norm ``l_q`` (``q = p / (p - 1)``) plus
    generalized Gaussian noise ``g_t`` (density ``exp(-||g||_r^2 / (2 sigma^2))``), then
    solves ``w_{t+1} = argmin_w <G_t + g_t, w - w_t> + beta D_Phi(w, w_t) +
    a Phi(w)`` (closed form, see :class:`LpGeometry`), where ``G_t`` also contains the
    (data-independent) ridge term. The output is the weighted average
    ``sum_t rho^t w_{t+1} / sum_t rho^t``, ``rho = (2 beta + a) / (2 beta)``.

    Parameters
    ----------
    n_iter : int, optional
        Iterations ``T``. Default: Theorem 7's ``(n eps kappa / sqrt(d ln(1/delta)))^(2/5)``
        (constant 1), capped at 1000; 1000 when ``epsilon = inf``.
    regularization : float, optional
        Weight ``a >= 0`` of the regulariser ``a Phi``. Default: Theorem 7's
        ``(4 beta / T) max(1, log2(n / T))``. ``0`` gives plain noisy mirror descent with a
        uniform output average.
    clip_norm : float, optional
        Per-example gradient clip ``L`` in ``l_q``. Default: the public bound
        ``sup |phi'| * ||x||_q`` (lossless); required when that bound is infinite (the
        squared loss without a constraint).
    p : float, optional
        Exponent for unconstrained problems (``1 < p <= 2``); default ``1 + 1/ln d``
        (``2`` for ``d <= 2``). With an ``lp``/``l2`` constraint ``p`` is the constraint's.

    Notes
    -----
    **Privacy guarantee.** ``(epsilon, delta)``-DP under replace-one. Per-example
    gradients are clipped to ``L`` in ``l_q`` (entrywise over ``W``), so the mean with the
    public denominator ``n`` has l_q sensitivity ``s_q = 2 L / n`` and, by Hoelder, l_r
    sensitivity ``s_+``. Each generalized Gaussian release is
    ``kappa_+ s_+^2 / (2 sigma^2)``-zCDP with ``kappa_+ = r - 1`` (design note B5), i.e.
    has the RDP curve of a Gaussian of multiplier ``z = sigma / (sqrt(kappa_+) s_+)``. The
    ledger is ``T`` such events, read by RDP accounting only, and ``z`` is solved to
    spend exactly ``epsilon`` at ``delta``. The mirror steps, the regulariser and the
    output average are post-processing.

    Assumptions: the paper's L-Lipschitz loss is enforced by clipping, which changes the
    objective on records whose gradient exceeds ``L`` (not the privacy); the smoothness
    ``beta`` in l_p uses the loss's public curvature bound.

    Reference: Su, Zhao & Wang, "Differentially private stochastic convex optimization in
    (non)-Euclidean space revisited", Algorithm 3 and Theorems 6-7; their constant-free
    (eps, delta) noise formula is replaced by the exact zCDP calibration above. Geometry,
    derivations, defaults and corrections: ``docs/algorithms/regularized_mirror_descent.md``.
    """

    name = "regularized_mirror_descent"
    capabilities = Capabilities(
        algorithm=("noisy regularized mirror descent in l_p, Su-Zhao-Wang Alg. 3 "
                   "(generalized Gaussian noise)"),
        accounting_methods=("rdp",), constraints=("none", "l2", "lp"), max_lp=2.0,
        inexact_at_inf=("a public count of mirror steps with the paper's step size, "
                        "tuned for the noise; without noise it stops where the schedule "
                        "ends (6e-3 excess risk on a 2000 x 5 logistic problem)"),
    )

    def __init__(self, n_iter=None, regularization=None, clip_norm=None, p=None):
        store_params(self, locals())

    _parameter_constraints: ClassVar[dict] = {
        "n_iter": OPTIONAL_COUNT,
        "regularization": [Interval(Real, 0, math.inf, closed="left"), None],
        "clip_norm": [Interval(Real, 0, math.inf, closed="neither"), None],
        "p": [Interval(Real, 1, 2, closed="right"), None],
    }

    def check_compatible(self, spec: ProblemSpec, accounting: str, relation: str) -> None:
        """Run the generic check; then ``p`` must agree with an l_p constraint's exponent.

        <<check_sections>>
            If the generic check fails, or ``p`` does not fit the constraint.
        """
        super().check_compatible(spec, accounting, relation)
        # The declaration admits no constraint, l2 and l_p with p <= 2; what remains is
        # the solver's own p against a constraint's exponent.
        lp_geometry(spec, self.p, self.name)

    def auto_n_iter(self, spec: ProblemSpec, budget: Budget, kappa: float) -> int:
        """Theorem 7's ``T = (n eps kappa / sqrt(d ln(1/delta)))^(2/5)`` (constant 1).

        Parameters
        ----------
        <<spec>>
        <<budget>>
        kappa : float
            The generalized Gaussian noise geometry's ``kappa``.

        Returns
        -------
        int
            ``n_iter`` when set; the cap (1000 passes) without privacy; otherwise the
            theorem's ``T``, at least 1 and at most the cap.
        """
        if self.n_iter is not None:
            return int(self.n_iter)
        if not budget.is_private:
            return MAX_AUTO_PASSES
        base = spec.n_samples * budget.epsilon * kappa / math.sqrt(
            spec.dimension * math.log(1.0 / budget.delta))
        return int(min(max(math.ceil(base ** 0.4), 1), MAX_AUTO_PASSES))

    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str,
             ) -> RegularizedMirrorDescentPlan:
        """Fix ``T``, the gradient clip and the generalized Gaussian noise of the steps.

        <<plan_parameters>>

        Returns
        -------
        RegularizedMirrorDescentPlan
            ``T`` full-batch releases of the clipped mean gradient (sensitivity ``2 L / n``
            in l_q), their noise and the mirror steps' constants.

        Raises
        ------
        IncompatibleSolverError
            If the loss's gradients are unbounded and no ``clip_norm`` is set.
        """
        geometry = lp_geometry(spec, self.p, self.name)
        q, d = geometry.q, spec.dimension
        r, factor = gg_noise_geometry(q, d)
        kappa_plus = r - 1.0
        bound = spec.gradient_bound_in(q)
        if self.clip_norm is None and not math.isfinite(bound):
            raise IncompatibleSolverError(
                f"the gradients of {type(spec.loss).__name__} are unbounded on this problem, "
                f"so solver {self.name!r} needs a public clip_norm (in the dual norm l_q), "
                "or constraint='lp' with a radius and fit_intercept=False."
            )
        clip = bound if self.clip_norm is None else min(float(self.clip_norm), bound)
        # Replace-one: two clipped per-example gradients differ by at most 2L in l_q, and
        # the mean has the public denominator n. Hoelder turns it into an l_r bound.
        s_q = check_sensitivity(2.0 * clip / spec.n_samples, "l_q gradient sensitivity 2L/n")
        s_plus = s_q * factor
        # B5: the GG release is a Gaussian-like release of sensitivity sqrt(kappa_+) s_+.
        equivalent = math.sqrt(kappa_plus) * s_plus
        n_iter = self.auto_n_iter(spec, budget, kappa_plus)
        z = calibrate_gg_multiplier(budget, n_iter, relation)
        sigma = z * equivalent
        event = dpe.SelfComposedDpEvent(
            gaussian_event(sigma, equivalent, accounting="rdp", relation=relation), n_iter)
        # Smoothness in l_p: ||x (phi'(a) - phi'(b))||_q <= c ||x||_q |<x, w - v>|
        # <= c ||x||_q^2 ||w - v||_p, plus the ridge alpha (||.||_q <= ||.||_2 <= ||.||_p).
        beta = spec.loss.curvature_bound * spec.row_bound(q) ** 2 + spec.alpha
        if self.regularization is not None:
            reg = float(self.regularization)
        else:
            # Theorem 7: a = (4 beta / T) log2(n / T), floored at log2 = 1 (T close to n).
            reg = 4.0 * beta / n_iter * max(1.0, math.log2(spec.n_samples / n_iter))
        return RegularizedMirrorDescentPlan(
            n_iter=n_iter, event=event, accounting="rdp", relation=relation,
            sigma=sigma, noise_multiplier=z, noise_order=r, kappa_plus=kappa_plus,
            sensitivity_q=s_q, sensitivity_r=s_plus, clip_norm=clip, p=geometry.p, q=q,
            smoothness=beta, regularization=reg,
        )

    def _run(self, problem: Problem, plan: RegularizedMirrorDescentPlan,
             noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        geometry = lp_geometry(spec, self.p, self.name)
        q, clip, sigma, r = plan.q, plan.clip_norm, plan.sigma, plan.noise_order
        beta, reg = plan.smoothness, plan.regularization
        k = spec.n_penalized
        row_norms_q = problem.row_norms_in(q)
        W = np.zeros((spec.n_params, spec.n_outputs))
        # Output weights rho^t, rho = (2 beta + a) / (2 beta), kept as rho^(t - T) <= 1.
        log_rho = math.log1p(reg / (2.0 * beta))
        total = np.zeros_like(W)
        weight_sum = 0.0
        for t in range(1, plan.n_iter + 1):
            # Mean of the gradients clipped in entrywise l_q: ||x_i d_i^T||_q =
            # ||x_i||_q ||d_i||_q, so the clip rescales the derivatives (one blocked pass;
            # compiled for one output when the planned passes are worth it).
            grad = problem.clipped_gradient(W, clip, passes=plan.n_iter, norms=row_norms_q,
                                            ord=q)
            grad[:k] += spec.alpha * W[:k]
            grad += noise.generalized_gaussian(W.shape, sigma, r)
            # argmin <G + g, w - w_t> + beta D_Phi(w, w_t) + a Phi(w)
            #   = argmin <G + g - beta grad Phi(w_t), w> + (beta + a) Phi(w).
            W = geometry.prox(grad - beta * geometry.grad(W), beta + reg)
            weight = math.exp(log_rho * (t - plan.n_iter))
            total += weight * W
            weight_sum += weight
            problem.advance()
        return total / weight_sum
