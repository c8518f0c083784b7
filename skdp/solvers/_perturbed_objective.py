"""The perturbed objective of GLM objective perturbation and its certified minimiser.

Private module of :mod:`skdp.solvers.objective_perturbation` (which re-exports every
public name): ``J(W) = sum_i phi(x_i^T W, y_i) + (1/2) sum_j Lambda_j ||W_j||^2 + <B, W>``
with exact Hessian-vector products, and the certified solve (B8): a point ``theta_2``
with ``||theta_2 - theta_1|| <= r_max`` for the exact minimiser ``theta_1``, whatever
the data (docs/algorithms/objective_perturbation.md, "Certified solve").
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize

from skdp.losses import LogisticLoss, MultinomialLogisticLoss, SmoothedHingeLoss
from skdp.solvers._base import Problem
from skdp.solvers._hessian import curvature, hessian_block
from skdp.solvers.output_perturbation import CERTIFICATE_MARGIN, CertificateError

__all__ = [
    "CERTIFICATE_MARGIN",
    "DENSE_HESSIAN_MAX",
    "SUPPORTED_LOSSES",
    "PerturbedObjective",
    "certified_argmin",
    "supports_loss",
]

#: Losses whose second derivative the certified solver knows (Hessian-vector products);
#: a ``HuberLoss`` (bounded ``phi'``, ``phi'' <= 1``) is recognised too, see
#: :func:`supports_loss`.
SUPPORTED_LOSSES = (LogisticLoss, MultinomialLogisticLoss, SmoothedHingeLoss)
#: Newton uses the dense Hessian (one BLAS-3 pass, Cholesky) up to this many parameters
#: ``p K``, and Newton-CG with Hessian-vector products above.
DENSE_HESSIAN_MAX = 512


# ---------------------------------------------------------------------------------------
# The perturbed objective and its certified minimiser (B8)
# ---------------------------------------------------------------------------------------
def _is_huber(loss) -> bool:
    return type(loss).__name__ == "HuberLoss" and hasattr(loss, "huber_delta")


def supports_loss(loss) -> bool:
    """Whether objective perturbation covers ``loss``: a convex GLM loss with bounded
    ``||phi'||`` and ``phi''`` whose Hessian-vector product the solver implements."""
    return isinstance(loss, SUPPORTED_LOSSES) or _is_huber(loss)


class PerturbedObjective:
    """``J(W) = sum_i phi(x_i^T W) + (1/2) sum_j Lam_j ||W_j||^2 + <B, W>`` on a problem.

    ``lam`` has one entry per row of ``W``. Hessian-vector products are exact for the
    supported losses; sparse ``X`` stays sparse (only ``X v`` and ``X^T u`` products).
    """

    def __init__(self, problem: Problem, lam: np.ndarray, B: np.ndarray) -> None:
        self.problem = problem
        self.loss = problem.spec.loss
        self.lam = np.asarray(lam, dtype=float)[:, None]
        self.B = B
        self.shape = B.shape

    def value_and_gradient(self, W: np.ndarray) -> tuple[float, np.ndarray]:
        value, g = self.problem.loss_and_gradient_sums(W, self.loss)
        g += self.lam * W + self.B
        value += 0.5 * float(np.sum(self.lam * W * W)) + float(np.sum(self.B * W))
        return value, g

    def gradient(self, W: np.ndarray) -> np.ndarray:
        return self.value_and_gradient(W)[1]

    def hessian_operator(self, W: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """``V -> nabla^2 J(W) V`` (exact), with the curvature at ``W`` computed once (a
        conjugate-gradient solve applies it many times at the same ``W``)."""
        C = curvature(self.loss, self.problem.scores(W), self.problem.Y)
        multinomial = isinstance(self.loss, MultinomialLogisticLoss)

        def apply(V: np.ndarray) -> np.ndarray:
            U = self.problem.scores(V)
            D = C * U - C * np.sum(C * U, axis=1, keepdims=True) if multinomial else C * U
            return self.problem.gradient_sum(D) + self.lam * V

        return apply

    def hessian_vector(self, W: np.ndarray, V: np.ndarray) -> np.ndarray:
        """``nabla^2 J(W) V`` (exact)."""
        return self.hessian_operator(W)(V)

    def hessian_matrix(self, W: np.ndarray) -> np.ndarray:
        """``nabla^2 J(W)`` as a dense ``(p K) x (p K)`` matrix (row-major ``W`` order),
        in one blocked pass over the rows: ``sum_i (x_i x_i^T) kron h_i + diag(Lam)``,
        ``h_i`` the ``K x K`` Hessian of ``phi`` in the score (BLAS-3 instead of the
        memory-bound products of Newton-CG; for small ``p K``)."""
        p, k = self.shape
        H = self.problem.block_sum(hessian_block, (p, k, p, k), W, self.loss)
        H = H.reshape(p * k, p * k)
        H[np.diag_indices_from(H)] += np.repeat(self.lam[:, 0], k)
        return H


def _flat(fun: Callable, shape, scale: float) -> Callable:
    def wrapped(w):
        value, g = fun(w.reshape(shape))
        return value / scale, g.ravel() / scale
    return wrapped


def _conjugate_gradient(hessp: Callable, rhs: np.ndarray, rtol: float, max_iter: int
                        ) -> np.ndarray:
    """Solve ``H p = rhs`` for symmetric positive definite ``H`` given by products."""
    x = np.zeros_like(rhs)
    r = rhs.copy()
    d = r.copy()
    rr = float(np.sum(r * r))
    stop = (rtol**2) * rr
    for _ in range(max_iter):
        if rr <= stop:
            break
        Hd = hessp(d)
        step = rr / float(np.sum(d * Hd))
        x += step * d
        r -= step * Hd
        rr_new = float(np.sum(r * r))
        d = r + (rr_new / rr) * d
        rr = rr_new
    return x


def _newton(objective: PerturbedObjective, W0: np.ndarray, gtol: float, max_iter: int
            ) -> np.ndarray:
    """Damped Newton-CG (exact Hessian-vector products) on the merit ``||grad J||``.

    Function values of ``J`` (sums of ``n`` terms) cannot resolve the last digits, so the
    line search backtracks on the gradient norm, which the inexact Newton direction
    ``p`` (``||H p + g|| <= eta ||g||``) decreases: ``d/dt ||g(W + t p)||^2 / 2 = g^T H p
    <= -(1 - eta) ||g||^2``.
    """
    W = W0.copy()
    g = objective.gradient(W)
    norm = float(np.linalg.norm(g))
    cg_iter = min(2 * W.size + 10, 2000)
    for _ in range(max_iter):
        if not norm > gtol:
            break
        p = None
        if W.size <= DENSE_HESSIAN_MAX:
            try:  # exact Newton direction (H is positive definite when Lambda > 0)
                p = -cho_solve(cho_factor(objective.hessian_matrix(W)), g.ravel()
                               ).reshape(W.shape)
            except (np.linalg.LinAlgError, ValueError):  # singular or non-finite H
                p = None
        if p is None or not np.all(np.isfinite(p)):
            p = _conjugate_gradient(objective.hessian_operator(W), -g, 1e-10, cg_iter)
        step = 1.0
        for _ in range(40):
            trial = W + step * p
            g_trial = objective.gradient(trial)
            norm_trial = float(np.linalg.norm(g_trial))
            if norm_trial < norm:
                break
            step *= 0.5
        else:
            break  # no decrease representable in floating point
        W, g, norm = trial, g_trial, norm_trial
    return W


def _accelerated_gradient(objective: PerturbedObjective, W0: np.ndarray, mu: float,
                          beta: float, steps: int) -> np.ndarray:
    """Nesterov's constant-momentum method for ``mu``-strongly convex, ``beta``-smooth J.

    ``J(W_k) - J* <= (1 - sqrt(mu/beta))^k (J(W_0) - J* + mu/2 ||W_0 - W*||^2)``
    (Nesterov 2004, Thm. 2.2.3 / scheme 2.2.19).
    """
    # mu <= beta for any valid pair; rounding can make the public ratio exceed 1.
    q = math.sqrt(min(mu / beta, 1.0))
    momentum = (1.0 - q) / (1.0 + q)
    W = W0.copy()
    previous = W0.copy()
    for _ in range(steps):
        Y = W + momentum * (W - previous)
        previous = W
        W = Y - objective.gradient(Y) / beta
    return W


def certified_argmin(
    objective: PerturbedObjective,
    strong_convexity: float,
    smoothness: float,
    certified_radius: float | None,
    max_iter: int,
    start_bound: float | None = None,
) -> tuple[np.ndarray, float]:
    """A point ``W`` with ``||W - argmin J|| <= certified_radius``, and its certificate.

    ``J`` is ``mu``-strongly convex (``mu = strong_convexity = min Lambda``) and
    ``beta_J``-smooth (``beta_J = smoothness``), unconstrained: ``||W - W*|| <= ||grad
    J(W)||_2 / mu`` (B8). Stages: damped Newton-CG with exact Hessian-vector products from
    0, then from an L-BFGS solution, each certified against ``CERTIFICATE_MARGIN *
    r_max``; if none certifies,
    Nesterov's accelerated gradient from the best candidate for the count that provably
    reaches the target from its certified distance (then the certificate is that proven
    target, ``r_max / 2``). A count above ``max_iter`` raises :class:`CertificateError`,
    decided from public quantities when ``start_bound`` is given; the output is never
    released uncertified. ``certified_radius=None`` (epsilon = inf): solve to full
    precision, no certificate.

    ``start_bound`` is a bound on ``||0 - argmin J||`` computed WITHOUT the data (from the
    public gradient bound and the noise): with it, the sure method's step count and the
    ``max_iter`` check are fixed before any data is read, so whether the solve can fail
    never depends on a record (the solvers always pass it).
    """
    shape = objective.shape
    n = float(objective.problem.spec.n_samples)
    if certified_radius is None:
        W = _lbfgs(objective, np.zeros(shape), 1e-12 * n)
        # Newton only ever accepts steps that lower the gradient norm (also when an
        # unpenalised intercept leaves J merely convex).
        W = _newton(objective, W, 1e-14 * n, 50)
        return W, math.nan
    mu = strong_convexity
    target = CERTIFICATE_MARGIN * certified_radius
    gtol = 0.5 * mu * target  # optimisers stop at half the certified gradient norm
    # A perfectly conditioned J (mu = smoothness: a ridge-dominated objective, e.g. rows
    # clipped to a tiny bound) made log1p(-1) raise "math domain error" (issue 36). A
    # ratio just below 1 under-states the contraction, so the step count stays sure.
    rate = -math.log1p(-math.sqrt(min(mu / smoothness, 1.0 - 1e-12)))
    factor = math.sqrt((smoothness + mu) / mu)

    def sure_steps(distance: float) -> int:
        # Accelerated gradient from W_0 with d_0 = ||W_0 - W*|| <= distance: J(W_0) - J*
        # <= beta/2 d_0^2, so ||W_k - W*||^2 <= (2/mu)(J(W_k) - J*) <= ((beta + mu)/mu)
        # (1 - sqrt(mu/beta))^k d_0^2, and k = 2 ln(sqrt((beta + mu)/mu) d_0 / target) /
        # -ln(1 - sqrt(mu/beta)) steps suffice.
        return max(0, math.ceil(2.0 * math.log(factor * distance / target) / rate))

    def check_steps(steps: int) -> None:
        if steps > max_iter:
            raise CertificateError(
                f"certifying the minimiser needs {steps} gradient steps > max_iter="
                f"{max_iter} (floating-point limits); raise max_iter or certified_radius."
            )

    if start_bound is not None:
        # Decided from public quantities and the noise only, before the data is read.
        public_steps = sure_steps(start_bound)
        check_steps(public_steps)

    def bound(W: np.ndarray) -> float:
        return float(np.linalg.norm(objective.gradient(W))) / mu

    best, best_bound = np.zeros(shape), math.inf
    for start in ("zero", "lbfgs"):
        W0 = np.zeros(shape) if start == "zero" else _lbfgs(objective, np.zeros(shape), gtol)
        W = _newton(objective, W0, gtol, 50)
        for candidate in (W0, W):
            b = bound(candidate)
            if b < best_bound:
                best, best_bound = candidate, b
        if best_bound <= target:
            return best, best_bound
    # The sure method: accelerated gradient from the best candidate W_0, whose certified
    # distance best_bound is at most the data-free start_bound (W = 0 is a candidate).
    if not math.isfinite(best_bound):
        raise CertificateError("the solver diverged (non-finite gradient).")
    if start_bound is not None:
        steps = public_steps
    else:
        steps = sure_steps(best_bound)
        check_steps(steps)
    # Its step count guarantees ||W - W*|| <= target = r_max / 2; that is the certificate.
    # No check of W follows: the gradient bound ||grad J(W)|| / mu can exceed the true
    # distance by up to beta_J / mu, so a check could fail on one data set and pass on its
    # neighbour, and an abort that depends on the data breaks the guarantee.
    return _accelerated_gradient(objective, best, mu, smoothness, steps), target


def _lbfgs(objective: PerturbedObjective, W0: np.ndarray, gtol: float) -> np.ndarray:
    shape = objective.shape
    scale = float(objective.problem.spec.n_samples)
    result = minimize(_flat(objective.value_and_gradient, shape, scale), W0.ravel(), jac=True,
                      method="L-BFGS-B",
                      options={"maxiter": 5000, "gtol": gtol / scale / math.sqrt(W0.size),
                               "ftol": 0.0, "maxcor": 30})
    return result.x.reshape(shape)
