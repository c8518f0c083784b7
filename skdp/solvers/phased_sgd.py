"""Phased DP-SGD (Feldman, Koren & Talwar 2020; Su, Zhao & Wang, Algorithm 6).

One pass of (mini-batch) SGD over disjoint phases of geometrically shrinking size and
step; each phase releases its averaged iterate plus noise calibrated to the *stability*
of one-pass SGD. The phases touch disjoint records, so they compose in parallel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from dp_accounting import dp_event as dpe

from skdp._params import OPTIONAL_COUNT, OPTIONAL_POSITIVE, store_params
from skdp.privacy.accounting import (
    PureDpEvent,
    check_sensitivity,
    gaussian_event,
    single_gaussian_multiplier,
)
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import BaseDPSolver, Plan, Problem, ProblemSpec
from skdp.solvers._capabilities import Capabilities

__all__ = ["PhasedDPSGD", "PhasedSGDPlan", "phase_indices", "phase_sizes"]

# Largest default mini-batch (a vectorisation knob: the sensitivity does not depend on it).
MAX_AUTO_BATCH = 256
# Step-size factor of the paper (eta_i = 4^-i eta) and phase-size factor (n_i = 2^-i n).
STEP_DECAY = 4.0


def phase_sizes(n_samples: int, n_phases: int | None = None) -> list[int]:
    """Sizes ``n_i = floor(2^-i n)``, ``i = 1..k``, of the phases (public).

    ``k = floor(log2 n)`` is the number of non-empty phases (the paper's
    ``ceil(log2 n)`` adds an empty last phase when ``n`` is not a power of two; an empty
    phase releases a data-independent point and is dropped). ``n_phases`` caps ``k``.
    The ``n - sum n_i >= 1`` remaining records are not used.
    """
    sizes = []
    i = 1
    while n_samples >> i >= 1 and (n_phases is None or i <= n_phases):
        sizes.append(n_samples >> i)
        i += 1
    return sizes


def phase_indices(permutation: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    """Consecutive disjoint blocks of a data-independent permutation, one per phase."""
    bounds = np.cumsum([0, *sizes])
    return [permutation[bounds[i]:bounds[i + 1]] for i in range(len(sizes))]


@dataclass(frozen=True, kw_only=True)
class PhasedSGDPlan(Plan):
    """Constants of a phased DP-SGD run, fixed before any data is read.

    Per-phase quantities are tuples with one entry per phase ``i = 1..k``.

    Attributes
    ----------
    step_size : float
        Base step ``eta`` (phase ``i`` uses ``4^-i eta`` per record).
    step_sizes : tuple of float
        Per-record steps ``eta_i = 4^-i eta``.
    batch_size : int
        Mini-batch size ``b`` (the last batch of a phase may be smaller).
    phase_sizes : tuple of int
        Records per phase ``n_i = floor(2^-i n)``.
    n_phases : int
        Number of phases ``k``.
    lipschitz : float
        Bound ``L`` on every per-record l2 gradient norm.
    smoothness : float
        Smoothness ``gamma = c_2 X^2 + alpha`` of every per-record objective.
    sensitivity : tuple of float
        l2 sensitivity ``2 L eta_i`` of each phase's averaged iterate.
    mechanism : {"gaussian", "l2_laplace", "none"}
        Noise of each release.
    sigma : tuple of float
        Per-coordinate Gaussian noise std of each release (zeros unless Gaussian).
    laplace_scale : tuple of float
        Scale ``Delta_i / epsilon`` of the l2 Laplace noise (zeros unless l2 Laplace).
    noise_multiplier : float
        ``sigma_i / Delta_i``, shared by all phases (0 unless Gaussian).
    """

    step_size: float
    step_sizes: tuple[float, ...]
    batch_size: int
    phase_sizes: tuple[int, ...]
    n_phases: int
    lipschitz: float
    smoothness: float
    sensitivity: tuple[float, ...]
    mechanism: str
    sigma: tuple[float, ...]
    laplace_scale: tuple[float, ...]
    noise_multiplier: float


class PhasedDPSGD(BaseDPSolver):
    """Phased DP-SGD: one pass of SGD in phases, each released with stability-calibrated noise.

    The records are split, by a uniformly random permutation drawn independently of the
    data, into ``k = floor(log2 n)`` disjoint phases of sizes ``n_i = floor(2^-i n)``.
    Phase ``i`` starts from the (projected) output of phase ``i - 1`` (``0`` for the
    first), makes one pass over its records in mini-batches ``B`` of public size ``b``,

        ``w <- Proj_C(w - eta_i sum_{j in B} (grad phi(x_j^T w, y_j) + alpha w_pen))``

    (``eta_i = 4^-i eta``; ``b = 1`` is the paper's SGD step), and releases the average
    ``w_bar_i`` of its ``T_i + 1`` iterates (start included) plus noise:
    ``N(0, sigma_i^2 I)`` with ``sigma_i = 2 L eta_i sigma_B1(epsilon, delta)``, or, for
    ``delta = 0``, l2 "multivariate Laplace" noise with density proportional to
    ``exp(-epsilon ||z||_2 / (2 L eta_i))``. The output is the projected last release.

    Parameters
    ----------
    step_size : float, optional
        Base step ``eta`` (phase ``i`` uses ``4^-i eta`` per record). Default (Lemma 14 of
        Su, Zhao & Wang with the exact noise): ``eta = (D / L) min(4 / sqrt(n), 1 / nu)``
        with ``nu = sqrt(E||xi||^2) / Delta`` the noise-to-sensitivity ratio of one
        release (``z sqrt(m)`` for the Gaussian, ``sqrt(m (m + 1)) / epsilon`` for the
        l2 Laplace, ``m`` coordinates, ``0`` at ``epsilon = inf``) and ``D`` a public l2
        scale of the solution (the constraint's l2 radius, else 1 as in the paper);
        capped so that ``b eta_1 <= 1 / gamma``. A given step must satisfy the
        stability condition ``b eta_1 <= 2 / gamma`` (see Notes), else ``ValueError``
        before any data is read.
    batch_size : int, optional
        Mini-batch size ``b`` (public, the same in every phase; the last batch of a phase
        may be smaller). Default: the largest ``b <= 256`` with ``b eta_1 <= 1 / gamma``.
    n_phases : int, optional
        Cap on the number of phases (default and maximum ``floor(log2 n)``).

    Notes
    -----
    **Privacy guarantee.** Replace-one ``(epsilon, delta)``-DP, or epsilon-DP with the
    l2 Laplace noise at ``delta = 0``. One-pass SGD on convex ``gamma``-smooth
    per-record objectives with ``L``-bounded gradients is stable: with
    ``b eta_i <= 2 / gamma`` every (projected) batch map is non-expansive, so replacing
    one record moves each phase's average by at most ``Delta_i = 2 L eta_i``, for every
    batch size. ``delta > 0``: ``sigma_i = Delta_i sigma_B1(epsilon, delta)`` (analytic
    Gaussian, exact; ``"rdp"``/``"pld"`` calibrate the same single release);
    ``delta = 0``: l2 Laplace noise, epsilon-DP by the triangle inequality. The phases
    read disjoint blocks of a data-independent permutation and compose in parallel: the
    ledger is one phase's event. The final projection is post-processing.

    Assumptions, all enforced before any data is read: rows clipped to the public
    ``data_norm``; a smooth convex GLM loss whose derivative is bounded on the feasible
    scores (``L = c_1 X``, :attr:`ProblemSpec.gradient_bound`; for the squared loss a
    bounded constraint and no free intercept), ``gamma = c_2 X^2 + alpha``; the
    stability condition on the step. No per-example gradient clipping (it would destroy
    the co-coercivity the argument needs).

    Reference: Feldman, Koren & Talwar, "Private stochastic convex optimization: optimal
    rates in linear time", STOC 2020 (Algorithm 2, Theorem 4.4); Su, Zhao & Wang,
    "Differentially private stochastic convex optimization in (non)-Euclidean space
    revisited", Algorithm 6, Lemma 14 and, for l_p geometry with ``2 <= p <= inf``,
    Theorem 8. The stability derivation, the corrections to the papers and the l_p
    reduction: docs/algorithms/phased_sgd.md.
    """

    name = "phased_sgd"
    capabilities = Capabilities(
        algorithm="phased DP-SGD, Feldman-Koren-Talwar 2020 / Su-Zhao-Wang Alg. 6",
        needs_delta=False, accounting_methods=("gaussian", "rdp", "pld", "pure"),
        default_accounting="gaussian", constraints=("none", "l2", "l1", "lp", "simplex"),
        bounded_gradients=True,
        min_samples=2, secure=True,
        inexact_at_inf=("one pass of phased SGD, an O(1/sqrt(n)) stochastic method even "
                        "without noise (2e-2 excess risk on a 2000 x 5 logistic problem)"),
    )

    _parameter_constraints = {
        "step_size": OPTIONAL_POSITIVE,
        "batch_size": OPTIONAL_COUNT,
        "n_phases": OPTIONAL_COUNT,
    }

    def __init__(self, step_size=None, batch_size=None, n_phases=None):
        store_params(self, locals())

    # -- plan ------------------------------------------------------------------------------
    def _noise_ratio(self, spec: ProblemSpec, budget: Budget, accounting: str, z: float
                     ) -> float:
        """``sqrt(E||xi||^2) / Delta`` of one release (0 without privacy)."""
        m = spec.dimension
        if not budget.is_private:
            return 0.0
        if accounting == "pure":
            # l2 Laplace: ||xi|| ~ Gamma(m, Delta/eps), E||xi||^2 = m (m + 1) (Delta/eps)^2.
            return math.sqrt(m * (m + 1.0)) / budget.epsilon
        return z * math.sqrt(m)

    def _solution_scale(self, spec: ProblemSpec) -> float:
        """Public l2 scale ``D`` of the solution (step-size heuristic only)."""
        # The constraint's l2 radius; unconstrained, the paper's eta = min(...) / L takes
        # ||theta*||_2 ~ 1 (the implied bound sqrt(2 gap0 / alpha) is far too loose for a
        # step size when alpha is small).
        if math.isfinite(spec.parameter_bound):
            return float(spec.parameter_bound)
        return 1.0

    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str
             ) -> PhasedSGDPlan:
        """Fix the phases, their step and batch sizes and each phase's output noise.

        Each phase reads its own block of records and releases one noisy average:
        parallel composition, so every phase spends the whole budget.

        <<plan_parameters>>

        Returns
        -------
        PhasedSGDPlan
            The phase sizes, step sizes, batch size and per-phase noise (Gaussian or
            l2-Laplace, from the stability bound of each phase's SGD).
        """
        sizes = tuple(phase_sizes(spec.n_samples, self.n_phases))
        lipschitz = float(spec.gradient_bound)
        # Smoothness of f_j = phi(x_j^T w) + (alpha/2)||w_pen||^2: c_2 X^2 + alpha.
        gamma = float(spec.smoothness)
        stable = 2.0 / gamma if gamma > 0 else math.inf
        # Every phase is one release of its own block (parallel composition).
        z = 0.0 if accounting == "pure" else single_gaussian_multiplier(budget, accounting,
                                                                        relation)
        # -- step size and batch size (public) ------------------------------------------
        if self.step_size is not None:
            eta = float(self.step_size)
            eta1 = eta / STEP_DECAY
            if self.batch_size is not None:
                batch = int(self.batch_size)
            else:
                batch = int(min(MAX_AUTO_BATCH, max(1.0, math.floor(0.5 * stable / eta1))))
            if not batch * eta1 <= stable:
                raise ValueError(
                    f"PhasedDPSGD.step_size={eta} violates the stability condition "
                    f"batch_size * step_size / 4 <= 2 / gamma = {stable:.6g} (gamma = "
                    f"{gamma:.6g}, batch_size = {batch}): SGD steps are then not "
                    "non-expansive and the sensitivity 2 L eta_i does not hold. Use a "
                    "smaller step_size or batch_size."
                )
        else:
            nu = self._noise_ratio(spec, budget, accounting, z)
            scale = self._solution_scale(spec)
            eta = scale / lipschitz * min(4.0 / math.sqrt(spec.n_samples),
                                          1.0 / nu if nu > 0 else math.inf)
            if self.batch_size is not None:
                batch = int(self.batch_size)
            else:
                batch = int(min(MAX_AUTO_BATCH,
                                max(1.0, math.floor(0.5 * stable * STEP_DECAY / eta))))
            # Default step: b eta_1 <= 1/gamma (half the stability limit, as the paper's
            # eta <= 1/beta).
            eta = min(eta, 0.5 * stable * STEP_DECAY / batch)
        steps = tuple(eta * STEP_DECAY ** -(i + 1) for i in range(len(sizes)))
        # Stability: the released average of phase i moves by at most 2 L eta_i when one
        # record is replaced (class Notes); all phases share the multiplier z.
        sens = tuple(check_sensitivity(2.0 * lipschitz * s, "phase sensitivity 2 L eta_i")
                     for s in steps)
        zeros = (0.0,) * len(sizes)
        if not budget.is_private:
            event: dpe.DpEvent = dpe.NonPrivateDpEvent()
            mechanism, sigmas, laplace, multiplier = "none", zeros, zeros, 0.0
        elif accounting == "pure":
            # Each phase: density ∝ exp(-eps ||xi|| / Delta_i) is eps-DP; parallel phases.
            event = PureDpEvent(budget.epsilon)
            mechanism, sigmas, multiplier = "l2_laplace", zeros, 0.0
            laplace = tuple(d / budget.epsilon for d in sens)
        else:
            sigmas = tuple(z * d for d in sens)
            # Parallel composition: the ledger is the worst phase's release; every phase
            # has sigma_i / Delta_i = z, so phase 1's event describes each of them.
            event = gaussian_event(sigmas[0], sens[0], accounting=accounting,
                                   relation=relation)
            mechanism, laplace, multiplier = "gaussian", zeros, z
        n_iter = sum(math.ceil(size / batch) for size in sizes)
        return PhasedSGDPlan(
            n_iter=n_iter, event=event, accounting=accounting, relation=relation,
            step_size=eta, step_sizes=steps, batch_size=batch, phase_sizes=sizes,
            n_phases=len(sizes), lipschitz=lipschitz, smoothness=gamma, sensitivity=sens,
            mechanism=mechanism, sigma=sigmas, laplace_scale=laplace,
            noise_multiplier=multiplier,
        )

    # -- run -------------------------------------------------------------------------------
    def release_noise_scale(self, plan: PhasedSGDPlan) -> float:
        """Scale of the last phase's noise draw, which the output carries.

        <<release_parameters>>

        Returns
        -------
        float
            The last phase's per-coordinate Gaussian or l2-Laplace scale.
        """
        # The output is the last phase's average plus that phase's noise draw.
        if plan.mechanism == "l2_laplace":
            return float(plan.laplace_scale[-1])
        return float(plan.sigma[-1])

    def _run(self, problem: Problem, plan: PhasedSGDPlan, noise: NoiseSource) -> np.ndarray:
        return self.run_phases(problem, plan, noise)

    def draw_randomness(self, problem: Problem, plan: PhasedSGDPlan, noise: NoiseSource
                        ) -> tuple[np.ndarray, list[np.ndarray]]:
        """The permutation and the per-phase noise, drawn before any data is read.

        Parameters
        ----------
        problem : Problem
            The problem (only its public specification is read).
        plan : PhasedSGDPlan
            The plan (phase noise mechanism and scales).
        noise : NoiseSource
            Source of every random draw.

        Returns
        -------
        permutation : ndarray of shape (n_samples,)
            The random order that splits the records into phases.
        noises : list of ndarray of shape (n_params, n_outputs)
            One noise draw per phase.
        """
        spec = problem.spec
        shape = (spec.n_params, spec.n_outputs)
        permutation = noise.permutation(spec.n_samples)
        mechanism = plan.mechanism
        scales = plan.laplace_scale if mechanism == "l2_laplace" else plan.sigma
        xis = [noise.release(mechanism, shape, b) for b in scales]
        return permutation, xis

    def run_phases(
        self, problem: Problem, plan: PhasedSGDPlan, noise: NoiseSource,
        averages: list[np.ndarray] | None = None,
    ) -> np.ndarray:
        """Run every phase: SGD on its block from the previous noisy output.

        Parameters
        ----------
        problem : Problem
            The data and its public specification.
        plan : PhasedSGDPlan
            The plan to run.
        noise : NoiseSource
            Source of every random draw (all drawn first, by :meth:`draw_randomness`).
        averages : list or None, default=None
            If given, receives each phase's average ``w_bar_i`` before its noise (for
            the tests).

        Returns
        -------
        ndarray of shape (n_params, n_outputs)
            The last phase's noisy average, projected onto the constraint.
        """
        spec = problem.spec
        p = spec.n_penalized
        permutation, xis = self.draw_randomness(problem, plan, noise)
        blocks = phase_indices(permutation, plan.phase_sizes)
        batch = plan.batch_size
        W = np.zeros((spec.n_params, spec.n_outputs))
        W[:p] = spec.constraint.feasible_point(W[:p].shape)
        for index, eta, xi in zip(blocks, plan.step_sizes, xis, strict=True):
            start = W.copy()
            # The start (a released point) is projected: iterates stay in C, where the
            # gradient bound L holds (post-processing).
            start[:p] = spec.constraint.project(start[:p])
            average = self._phase(problem, index, start, eta, batch)
            if averages is not None:
                averages.append(average.copy())
            W = average + xi
        W[:p] = spec.constraint.project(W[:p])
        return W

    @staticmethod
    def _phase(problem: Problem, index: np.ndarray, W: np.ndarray, eta: float,
               batch: int) -> np.ndarray:
        """One pass over ``index`` in mini-batches; the average of the iterates."""
        spec = problem.spec
        p, loss, alpha = spec.n_penalized, spec.loss, spec.alpha
        total = W.copy()
        count = 1
        for start in range(0, index.shape[0], batch):
            rows_index = index[start:start + batch]
            rows = problem.rows(rows_index)
            D = loss.derivative(problem.scores(W, rows), problem.Y[rows_index])
            # Sum form: each record's gradient enters with weight eta (stability).
            G = problem.gradient_sum(D, rows)
            if alpha:
                G[:p] += (rows_index.shape[0] * alpha) * W[:p]
            W = W - eta * G
            W[:p] = spec.constraint.project(W[:p])
            total += W
            count += 1
            problem.advance()
        return total / count
