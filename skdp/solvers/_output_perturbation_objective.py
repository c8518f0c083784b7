"""The objective of output perturbation, its minimiser's sensitivity and certificates.

Private module of :mod:`skdp.solvers.output_perturbation` (which re-exports
:func:`output_sensitivity` and :class:`OutputSensitivity`): the public sensitivity bound
of the exact minimiser (Lowy & Razaviyayn, Lemmas 0.1/0.2, with the corrections of
docs/algorithms/output_perturbation.md), the strongly convex objective (ERM, tilted ERM,
adversarially robust ERM) with its certified distance bounds, and the inner solvers'
helpers.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

from skdp.privacy.accounting import check_sensitivity
from skdp.solvers._base import Problem, ProblemSpec

__all__ = ["OutputSensitivity", "output_sensitivity"]


@dataclass(frozen=True)
class OutputSensitivity:
    """The public constants of one output-perturbation release.

    Attributes
    ----------
    sensitivity : float
        ``Delta_F``: l2 sensitivity of the exact minimiser under replace-one.
    domain_radius : float
        ``R``: every possible minimiser lies in ``B(0, R)``.
    lipschitz : float
        ``L``: per-example gradient bound of the loss on ``B(0, R)``.
    objective_lipschitz : float
        ``L + alpha R``: subgradient bound of the whole objective on ``B(0, R)``.
    smoothness : float
        Smoothness of the objective (``inf`` when it is not smooth).
    """

    sensitivity: float
    domain_radius: float
    lipschitz: float
    objective_lipschitz: float
    smoothness: float


def output_sensitivity(spec: ProblemSpec) -> OutputSensitivity:
    """Sensitivity of the exact minimiser of ``spec``'s objective, from public bounds.

    Lemma (Lowy & Razaviyayn, Lemmas 0.1/0.2): if ``F_D`` and ``F_D'`` are ``mu``-strongly
    convex and their difference ``g`` has gradients bounded by ``L_g`` on a convex set
    containing both minimisers, then ``||w*(D) - w*(D')|| <= L_g / mu``.

    * Domain. ``F(w) >= inf phi + (alpha/2)||w||^2`` and ``F(w*) <= F(0) <= sup_y
      phi(0, y)`` (also for the tilted and robust objectives, which lie between the mean
      and the maximum of per-example losses, and equal ``phi(0, y)`` at ``w = 0``), so
      ``||w*|| <= R_impl = sqrt(2 gap0 / alpha)``; with an l2-ball constraint,
      ``R = min(radius, R_impl)``.
    * Rows. Features are clipped to ``X_f``; adversarial perturbations add at most
      ``rho_2`` (``rho`` for l2, ``rho sqrt(d)`` for l-inf balls); the intercept feature
      ``c`` is not perturbed: ``X = sqrt((X_f + rho_2)^2 + c^2)``. Scores on ``B(0, R)``
      satisfy ``|z| <= S = R X``, so ``L = sup_{|z| <= S} |phi'| X``.
    * ERM: ``g`` is ``(f(w; z') - f(w; z)) / n``, ``L_g = 2 L / n``: ``Delta = 2L/(alpha n)``.
    * Tilted ERM ``tau^-1 ln(mean e^{tau f_i})`` (regulariser outside the tilt):
      ``L_g <= 2 L C / (C + n - 1)`` with ``C = exp(tau (A - a))``, ``A - a`` the range
      of the loss on the domain (privacy-calibration.md 3.2, correcting the paper's
      Lemma 0.5 derivation).
    """
    mu = spec.alpha
    c = spec.intercept_feature
    x_feat = math.sqrt(max(spec.row_bound(2.0) ** 2 - c * c, 0.0))
    n_features = spec.n_params - (1 if c else 0)
    rho = spec.adversarial_radius
    rho_2 = rho if spec.adversarial_norm == 2 else rho * math.sqrt(n_features)
    x_bound = math.sqrt((x_feat + rho_2) ** 2 + c * c)
    # Every minimiser lies in the constraint too: min(R_impl, its l2 bound) (the radius
    # of an l2 ball; inf without a constraint).
    radius = min(math.sqrt(2.0 * spec.initial_gap / mu), spec.constraint.l2_bound(spec.dimension))
    score_bound = radius * x_bound
    lipschitz = spec.loss.derivative_bound_at(score_bound) * x_bound
    n = spec.n_samples
    if spec.tilt > 0:
        spread = spec.loss.value_range(score_bound)
        # C / (C + n - 1) = 1 / (1 + (n - 1) exp(-tau (A - a))), overflow-free.
        share = 1.0 / (1.0 + (n - 1) * math.exp(-spec.tilt * spread))
        delta_f = 2.0 * lipschitz * share / mu
    else:
        delta_f = 2.0 * lipschitz / (mu * n)
    smooth = spec.loss.smooth and spec.adversarial_radius == 0
    if smooth:
        # Loss curvature c X^2 plus alpha; tilting adds 2 L^2 tau (Lemma 4.2 of the
        # paper states L^2 tau; its proof gives 2 L^2 tau).
        beta = spec.loss.curvature_bound * x_bound**2 + mu + 2.0 * lipschitz**2 * spec.tilt
    else:
        beta = math.inf
    return OutputSensitivity(
        sensitivity=check_sensitivity(delta_f, "minimiser sensitivity"),
        domain_radius=radius,
        lipschitz=lipschitz,
        objective_lipschitz=lipschitz + mu * radius,
        smoothness=beta,
    )


class _Objective:
    """The strongly convex objective and its certificates on a :class:`Problem`.

    ``F(W) = agg_i ell_i(W) + (alpha/2) ||W||^2`` where ``ell_i`` is the loss (or its
    robust version ``max_{||v|| <= rho} phi((x_i + v)^T W)``) and ``agg`` is the mean or
    the tilted mean ``tau^-1 ln(mean e^{tau ell_i})``. For linear models the robust
    loss has a closed form: the perturbed score ranges over ``[z - r, z + r]`` with
    ``r = rho ||w_f||_*`` (``||.||_*`` the dual of the perturbation norm), and a convex
    ``phi`` is largest at an end point.
    """

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        spec = problem.spec
        self.spec = spec
        self.mu = spec.alpha
        self.n_features = problem.X.shape[1]
        self.dual_ord = 2 if spec.adversarial_norm == 2 else 1

    def _dual_norm(self, W: np.ndarray) -> float:
        return float(np.linalg.norm(W[: self.n_features, 0], ord=self.dual_ord))

    def parts(self, W: np.ndarray, dual_norm: float | None = None
              ) -> tuple[float, np.ndarray, float]:
        """``(F(W), g, c)``: every ``g + c u`` with ``u`` in the subdifferential of
        ``||w_f||_*`` (features only) is a subgradient of ``F`` at ``W``.

        ``dual_norm`` replaces ``||w_f||_*`` (the split l1 formulation passes
        ``sum(w+ + w-)``)."""
        spec = self.spec
        if spec.adversarial_radius == 0 and spec.tilt == 0:
            # Plain ERM: one blocked pass over X (the common, memory-bound case).
            total, g = self.problem.loss_and_gradient_sums(W)
            value, c = total / spec.n_samples, 0.0
            g /= spec.n_samples
        else:
            value, g, c = self._robust_or_tilted_parts(W, dual_norm)
        g += self.mu * W
        value += 0.5 * self.mu * float(np.sum(W * W))
        return value, g, c

    def _robust_or_tilted_parts(self, W: np.ndarray, dual_norm: float | None
                                ) -> tuple[float, np.ndarray, float]:
        """The loss part of :meth:`parts` for adversarial or tilted objectives."""
        spec, problem = self.spec, self.problem
        loss = spec.loss
        rho = spec.adversarial_radius
        Z = problem.scores(W)
        if rho > 0:
            r = rho * (self._dual_norm(W) if dual_norm is None else dual_norm)
            lo, hi = loss.value(Z - r, problem.Y), loss.value(Z + r, problem.Y)
            if r > 0:
                # At a tie both end points are active and the gradient of either piece is
                # a subgradient: take +1 (never 0, which would drop the rho u term).
                side = np.where(hi >= lo, 1.0, -1.0)
            else:
                # r = 0 (w_f = 0): the loss grows on the side where phi' points.
                side = np.sign(loss.derivative(Z, problem.Y)[:, 0])
            V = np.maximum(lo, hi)
            D = loss.derivative(Z + side[:, None] * r, problem.Y)
        else:
            V = loss.value(Z, problem.Y)
            D = loss.derivative(Z, problem.Y)
            side = None
        n = V.shape[0]
        if spec.tilt > 0:
            tau = spec.tilt
            value = (float(logsumexp(tau * V)) - math.log(n)) / tau
            weights = softmax(tau * V)
        else:
            value = float(np.mean(V))
            weights = np.full(n, 1.0 / n)
        g = problem.gradient_sum(D * weights[:, None])
        c = rho * float(np.sum(weights * D[:, 0] * side)) if side is not None else 0.0
        return value, g, c

    def value_and_gradient(self, W: np.ndarray) -> tuple[float, np.ndarray]:
        """``F(W)`` and one subgradient (the gradient where ``F`` is differentiable)."""
        value, g, c = self.parts(W)
        if c:
            g = g.copy()
            g[: self.n_features, 0] += c * self._dual_subgradient(W[: self.n_features, 0], None, c)
        return value, g

    def _dual_subgradient(self, w: np.ndarray, s: np.ndarray | None, c: float) -> np.ndarray:
        """``u`` in the subdifferential of ``||w||_*``; minimising ``||s + c u||`` if given."""
        if self.dual_ord == 1:
            u = np.sign(w)
            if s is not None:
                zero = w == 0
                u[zero] = np.clip(-s[zero] / c, -1.0, 1.0)
            return u
        norm = np.linalg.norm(w)
        if norm > 0:
            return w / norm
        if s is None:
            return np.zeros_like(w)
        s_norm = np.linalg.norm(s)
        return np.zeros_like(w) if s_norm == 0 else -s / s_norm * min(1.0, s_norm / c)

    def distance_bound(self, W: np.ndarray, radius: float | None) -> float:
        """Certified bound on ``||W - W*||`` from a subgradient (strong convexity).

        For a ``mu``-strongly convex ``F`` and any ``h`` in ``d(F + I_C)(W)``, ``W`` in
        ``C``: ``mu ||W - W*||^2 <= <h, W - W*>``, so ``||W - W*|| <= ||h|| / mu``. ``h``
        is the smallest such element we can form: the adversarial kink term and, on the
        boundary of the ball ``C = B(0, radius)``, the normal cone ``{lambda W}``.
        """
        on_sphere = False
        shift = 0.0
        if radius is not None:
            norm = float(np.linalg.norm(W))
            if norm > radius * (1 + 1e-12):
                return math.inf
            if norm >= radius * (1 - 1e-9):
                # The normal cone {lambda W} exists only ON the sphere: certify the point
                # moved radially onto it, and add the move (triangle inequality).
                sphere = W * (radius / norm)
                shift = float(np.linalg.norm(W - sphere))
                W, on_sphere = sphere, True
        _, g, c = self.parts(W)
        h = g.copy()
        if c:
            f = slice(0, self.n_features)
            h[f, 0] += c * self._dual_subgradient(W[f, 0], g[f, 0], c)
        if on_sphere:
            lam = max(0.0, -float(np.sum(h * W)) / float(np.sum(W * W)))
            h = h + lam * W
        return float(np.linalg.norm(h)) / self.mu + shift

    def hinge_gap_bound(self, W_dual: np.ndarray, smoothing: float
                        ) -> tuple[np.ndarray, float]:
        """Primal point and certified distance from a dual point (hinge ERM only).

        For ``P(W) = sum_k mean_i max(0, 1 - y_ik z_ik) + (alpha/2)||W||^2`` the dual is
        ``D(a) = sum_k [mean_i a_ik - ||sum_i a_ik y_ik x_i / n||^2 / (2 alpha)]`` over
        ``a`` in ``[0, 1]^{n x K}``; ``D(a) <= P*`` (weak duality) and strong convexity
        give ``||W(a) - W*|| <= sqrt(2 (P(W(a)) - D(a)) / alpha)`` with
        ``W(a) = sum_i a_ik y_ik x_i / (alpha n)``. ``a`` is the derivative of the hinge
        smoothed with width ``smoothing`` at ``W_dual`` (any ``a`` in the box is valid).
        """
        problem, mu = self.problem, self.mu
        Y = problem.Y
        n = Y.shape[0]
        A = np.clip((1.0 - Y * problem.scores(W_dual)) / smoothing, 0.0, 1.0)
        V = problem.gradient_sum(A * Y) / n
        W = V / mu
        dual = float(np.sum(A)) / n - 0.5 * float(np.sum(V * V)) / mu
        primal, _, _ = self.parts(W)
        gap = max(primal - dual, 0.0)
        return W, math.sqrt(2.0 * gap / mu)


def _flat(objective: _Objective, w: np.ndarray, shape) -> tuple[float, np.ndarray]:
    value, g = objective.value_and_gradient(w.reshape(shape))
    return value, g.ravel()


def _split_l1_solve(objective: _Objective, shape) -> np.ndarray:
    """Minimise the l-inf-robust objective over ``(p, m, rest)`` with ``p, m >= 0``."""
    k = objective.n_features
    size = int(np.prod(shape))
    extra = size - k  # the intercept coefficient (one output: shape = (n_params, 1))

    def unpack(v):
        W = np.empty(shape)
        W[:k, 0] = v[:k] - v[k: 2 * k]
        W[k:, 0] = v[2 * k:]
        return W

    def fun(v):
        W = unpack(v)
        value, g, c = objective.parts(W, dual_norm=float(np.sum(v[: 2 * k])))
        gf = g[:k, 0]
        return value, np.concatenate([gf + c, -gf + c, g[k:, 0]])

    bounds = [(0.0, None)] * (2 * k) + [(None, None)] * extra
    result = minimize(fun, np.zeros(2 * k + extra), jac=True, method="L-BFGS-B",
                      bounds=bounds,
                      options={"maxiter": 5000, "gtol": 1e-13, "ftol": 1e-15, "maxcor": 20})
    return unpack(result.x)


def _lbfgs(fun: Callable, w0: np.ndarray, gtol: float = 1e-13) -> np.ndarray:
    result = minimize(fun, w0, jac=True, method="L-BFGS-B",
                      options={"maxiter": 2000, "gtol": gtol, "ftol": 0.0, "maxcor": 20})
    return result.x


def _with_loss(problem: Problem, loss) -> Problem:
    return replace(problem, spec=replace(problem.spec, loss=loss))
