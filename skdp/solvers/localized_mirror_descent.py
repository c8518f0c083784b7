"""Localized noisy mirror descent (Asi, Feldman, Koren & Talwar 2021, Algorithms 2 and 6).

Also the strongly convex reduction of their Section 5 (Theorems 8 and 9, after Feldman,
Koren & Talwar 2020, Thm. 5.1) as the option ``strongly_convex=True``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from dp_accounting import dp_event as dpe

from skdp._params import COUNT, OPTIONAL_COUNT, OPTIONAL_POSITIVE, POSITIVE, store_params
from skdp._sklearn_compat import StrOptions
from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import EuclideanMirrorMap, MirrorGeometry, mirror_stepper
from skdp.privacy.accounting import add_remove_budget, epsilon_spent
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import BaseDPSolver, Plan, Problem, ProblemSpec
from skdp.solvers._capabilities import LOSS_NAMES, Capabilities
from skdp.solvers._sampling import BatchSampling
from skdp.solvers.mirror_descent import (
    MAX_AUTO_STEPS,
    MDPhase,
    calibrate_md_phase,
    capped_schedule,
    dual_gradient_bound,
    md_gradient_clip,
    paper_batch_size,
    run_noisy_md,
)

__all__ = ["LocalizedMirrorDescent", "LocalizedMirrorDescentPlan", "PhaseSpec"]

PHASE_BUDGETS = ("full", "halving")


@dataclass(frozen=True)
class PhaseSpec:
    """One public phase: its block of the permutation and its calibrated Algorithm 1.

    Attributes
    ----------
    start : int
        Offset of the phase's block in the data-independent permutation (blocks of
        different phases are disjoint).
    md : MDPhase
        ``n`` (block size), ``b``, ``T``, noise.
    eta : float
        The phase's ``eta_i = 2^{-4i} eta``.
    lam : float
        Weight ``lambda_i = 2 / (eta_i n_i)`` of the regulariser ``lambda_i w(x - x_{i-1})``.
    radius : float
        Radius ``r_i`` of the localisation ball around ``x_{i-1}`` (map's norm).
    epsilon : float
        The phase's target epsilon.
    """

    start: int
    md: MDPhase
    eta: float
    lam: float
    radius: float
    epsilon: float


@dataclass(frozen=True, kw_only=True)
class LocalizedMirrorDescentPlan(Plan):
    """The public constants of one run of :class:`LocalizedMirrorDescent`, one tuple entry
    per phase (the phases of every round of the strongly convex reduction, in order).

    Attributes
    ----------
    phase_starts : tuple of int
        Offset of each phase's block in the data-independent permutation.
    phase_sizes : tuple of int
        ``n_i``: records in each block.
    batch_sizes : tuple of int
        ``b_i``.
    phase_iters : tuple of int
        ``T_i``: noisy steps of each phase.
    noise_multiplier : tuple of float
        ``z_i``: noise in units of the phase's batch-mean sensitivity.
    sigma : tuple of float
        Standard deviation of each phase's Gaussian noise, ``z_i * sensitivity_i``.
    sensitivity : tuple of float
        l2 sensitivity of each phase's batch mean (``2C/b_i``; ``C/b_i`` with Poisson).
    phase_epsilons : tuple of float
        Each phase's target epsilon.
    step_sizes : tuple of float
        ``eta_i = 2^{-4i} eta``.
    lambdas : tuple of float
        ``lambda_i = 2 / (eta_i n_i)``: weight of the localisation regulariser.
    radii : tuple of float
        ``r_i``: radius of the localisation ball, in the map's norm (``inf``: none).
    worst_phase : int
        Index of the phase whose event is the ledger (the largest epsilon spent).
    clip_norm : float
        ``C``: per-example l2 gradient clip.
    """

    phase_starts: tuple[int, ...]
    phase_sizes: tuple[int, ...]
    batch_sizes: tuple[int, ...]
    phase_iters: tuple[int, ...]
    noise_multiplier: tuple[float, ...]
    sigma: tuple[float, ...]
    sensitivity: tuple[float, ...]
    phase_epsilons: tuple[float, ...]
    step_sizes: tuple[float, ...]
    lambdas: tuple[float, ...]
    radii: tuple[float, ...]
    worst_phase: int
    clip_norm: float


def _log_dim(dim: int) -> float:
    return max(math.log(max(dim, 1)), 1.0)


class LocalizedMirrorDescent(BatchSampling, BaseDPSolver):
    """Localized noisy mirror descent (Asi, Feldman, Koren & Talwar 2021, Alg. 2 and 6).

    ``k = ceil(log2 n)`` phases. Phase ``i`` takes a fresh block of ``n_i = floor(n 2^{-i})``
    records of a data-independent random permutation (blocks are disjoint) and runs
    noisy mirror descent (:class:`~skdp.solvers.NoisyMirrorDescent`, strongly convex
    schedule) on
    ``F_i(x) = (1/n_i) sum_{j in block i} f(x; z_j) + (alpha/2)||x||^2 + lambda_i w(x - x_{i-1})``
    with ``lambda_i = 2 / (eta_i n_i)``, ``eta_i = 2^{-4i} eta``, ``w`` the p-norm map of
    the geometry (``p = 1 + 1/ln d`` for the l1 ball, the ball's ``p`` for an l_p ball,
    ``1 < p <= 2``, Euclidean for l2; the paper's ``(1/(eta_i n_i (p-1)))||x - x_{i-1}||_p^2``),
    the map ``w(. - x_{i-1})`` centred at the previous noisy output and the localisation
    ball ``||x - x_{i-1}||_p <= r_i = kappa L eta_i n_i (p - 1)`` (``kappa = d^{1-1/p}``
    for the l1 geometry, else 1). The output of phase ``i`` (the weighted average of its
    iterates) is projected onto the constraint and becomes ``x_i``; ``x_k`` is returned.

    Parameters
    ----------
    n_phases : int, optional
        ``k``. Default ``ceil(log2 n)`` (per round).
    step_size : float, optional
        The base ``eta``. Default: Theorem 4 / 13 (see the page); required when the
        constraint is unbounded.
    step_scale : float, default=1.0
        Multiplier of the automatic base ``eta`` (ignored with ``step_size``). The
        theorems' constants are worst-case; a public scale (tuned on public data) often
        helps a lot.
    batch_size : int, optional
        Batch size of every phase (capped at ``n_i``). Default: the paper's
        ``b_i = max(sqrt(n_i / ln d), sqrt(d / eps_i))``, enlarged so that the phase's
        ``T_i = n_i^2 / b_i^2 <= max_iter``.
    max_iter : int, default=1000
        Cap of every phase's ``T_i``.
    phase_budget : {"full", "halving"}, default="full"
        ``"full"``: every phase runs at ``(epsilon, delta)`` (parallel composition makes
        that free). ``"halving"``: the paper's geometric schedule ``eps_i = 2^{1-i} eps``
        (up to the factor 2 that parallel composition gives back).
    strongly_convex : bool, default=False
        The reduction of Section 5 (Theorem 8): ``ceil(log2 log2 n)`` rounds on disjoint
        blocks of doubling sizes, each running the localized algorithm from the previous
        round's output with a diameter shrunk by strong convexity. Needs ``alpha > 0``.
    n_rounds : int, optional
        Number of rounds of the reduction (default ``ceil(log2 log2 n)``).
    clip_norm : float, optional
        Per-example l2 clip ``C``; default ``min(sqrt(d) L_inf, L_2)`` (lossless).
    sampling : {"without_replacement", "poisson"}, default="without_replacement"
        Batches inside a phase's block (see :class:`~skdp.solvers.NoisyMirrorDescent`).

    Notes
    -----
    **Privacy guarantee.** Replace-one, ``(epsilon, delta)``-DP. Each phase is an instance
    of Algorithm 1 on its own block of ``n_i`` records: per-example l2 clipping to ``C``,
    batch means with public denominator ``b_i`` (sensitivity ``2C/b_i``), ledger
    ``SelfComposed(SampledWithoutReplacement(n_i, b_i, Gaussian(z_i)), T_i)`` calibrated
    exactly by RDP accounting at the phase's ``(eps_i, delta)``. The blocks are
    disjoint slices of a permutation of the record positions drawn independently of the
    data, so under replace-one the changed record lies in at most one block (at its
    position); every other phase sees
    identical records and the previous outputs only. By parallel composition (adaptive:
    later phases are post-processing of earlier outputs and independent records) the
    whole run is as private as its worst phase: the ledger IS that single phase's event,
    the one spending the largest epsilon at ``delta``. The regulariser, the centre
    ``x_{i-1}``, the localisation ball, the projections and the averaging are
    post-processing; phase sizes, batch sizes, ``T_i``, step sizes and radii come from
    public quantities only. With ``sampling="poisson"`` each phase, as a mechanism of its
    own block (any multiset, public ``n_i`` and ``b_i``), is calibrated to
    ``(e, delta / (1 + e^e))`` under add/remove, ``e = min(eps_i/2, 5)``, hence
    ``(eps_i, delta)`` under replace-one by group privacy applied to that phase; parallel
    composition over the replace-one blocks then gives the worst phase. (Group privacy is
    applied per phase, not to the whole run: adding a record would shift the positions
    of the permutation and change several blocks.)
    The paper's Algorithm 2 runs every phase on the same leading records (sequential
    composition, ``k delta``); the disjoint blocks fix it (see the page).

    Assumptions: a GLM loss with public gradient bounds (or a public ``clip_norm``), the
    l1 ball, an l_p ball with ``1 < p <= 2``, the l2 ball, or no constraint with a public
    ``step_size``. Reference: Asi, Feldman, Koren & Talwar, ICML 2021, Algorithms 2 and
    6, Theorems 4, 8 and 13. Step sizes, the strongly convex reduction, corrections and
    deviations from the paper: ``docs/algorithms/mirror_descent.md``.
    """

    name = "localized_mirror_descent"
    capabilities = Capabilities(
        algorithm="localized noisy mirror descent, AFKT 2021 Algs. 2, 6",
        losses=LOSS_NAMES,
        constraints=("none", "l2", "l1", "lp"), max_lp=2.0,
        inexact_at_inf=("phases of stochastic mirror descent localized around the previous "
                        "phase's output, tuned for the noise (3.7e-2 excess risk on a "
                        "2000 x 5 logistic problem in an l1 ball of radius 1)"),
    )
    _parameter_constraints: ClassVar[dict] = {
        "n_phases": OPTIONAL_COUNT,
        "step_size": OPTIONAL_POSITIVE,
        "step_scale": POSITIVE,
        "batch_size": OPTIONAL_COUNT,
        "max_iter": COUNT,
        "phase_budget": [StrOptions(set(PHASE_BUDGETS))],
        "strongly_convex": ["boolean"],
        "n_rounds": OPTIONAL_COUNT,
        "clip_norm": OPTIONAL_POSITIVE,
        **BatchSampling._parameter_constraints,
    }

    def __init__(
        self,
        n_phases=None,
        step_size=None,
        step_scale=1.0,
        batch_size=None,
        max_iter=MAX_AUTO_STEPS,
        phase_budget="full",
        strongly_convex=False,
        n_rounds=None,
        clip_norm=None,
        sampling="without_replacement",
    ):
        store_params(self, locals())

    # -- checks ----------------------------------------------------------------------------
    def gradient_clip(self, spec: ProblemSpec) -> float:
        """Per-example gradient clip ``min(clip_norm, sqrt(d) L_inf, L_2)``.

        See :func:`~skdp.solvers.mirror_descent.md_gradient_clip`.

        <<spec_parameters>>

        Returns
        -------
        float
            The public l2 clip of every per-example gradient.
        """
        return md_gradient_clip(spec, self.clip_norm, self.name)

    def check_compatible(self, spec: ProblemSpec, accounting: str, relation: str) -> None:
        """The sampling and generic checks, then the default step size's conditions.

        <<check_sections>>
            If a sampling or generic check fails, the default step size meets an
            unbounded constraint, or ``strongly_convex=True`` with ``alpha = 0``.
        """
        super().check_compatible(spec, accounting, relation)  # sampling, then declarations
        if self.step_size is None and not spec.constraint.bounded:
            raise IncompatibleSolverError(
                f"solver {self.name!r} needs a bounded constraint for its default step "
                "size; set constraint='l1'/'l2'/'lp' with a radius, or the solver's "
                "step_size."
            )
        if self.strongly_convex and spec.alpha <= 0:
            raise IncompatibleSolverError(
                f"solver {self.name!r} with strongly_convex=True needs alpha > 0.")

    # -- plan ------------------------------------------------------------------------------
    @staticmethod
    def _kappa(geometry: MirrorGeometry, dim: int) -> float:
        # ||v||_1 <= d^{1 - 1/p} ||v||_p (Hoelder); other geometries measure in l_p itself.
        if geometry.kind == "l1":
            return float(dim) ** (1.0 - 1.0 / geometry.map_p)
        return 1.0

    @staticmethod
    def _rates(geometry: MirrorGeometry, dim: int, n: int,
               budget: Budget) -> tuple[float, float]:
        """The statistical and privacy terms ``(a, b)`` of Theorems 4 / 13 (constant 1).

        ``eta = (D/L) min(a, 1/b')`` and the error bound ``L D (a + b)``.
        """
        eps, delta = budget.epsilon, budget.delta
        ld = _log_dim(dim)
        private = budget.is_private and delta > 0
        log_delta = math.log(1.0 / delta) if private else 0.0
        if geometry.kind == "l1":  # Theorem 4; else Theorem 13 (l_p)
            stat = math.sqrt(ld / n)
            priv = math.sqrt(dim * ld * log_delta) / (n * eps) if private else 0.0
        else:
            pm1 = geometry.map_p - 1.0
            extra = ld if geometry.map_p < 2 else 0.0
            stat = 1.0 / math.sqrt(pm1 * n)
            priv = math.sqrt(dim * log_delta * (1.0 + extra)) / (pm1 * n * eps) if private else 0.0
        return stat, priv

    def _base_eta(self, geometry: MirrorGeometry, dim: int, n: int, budget: Budget,
                  diameter: float, lip: float) -> float:
        """``eta = (D/L) min(a, eps / sqrt(d ln(1/delta) c))`` of Theorems 4 / 13.

        With ``(a, b)`` from :meth:`_rates`, the second argument is ``1 / (n b)`` (l1) and
        ``1 / ((p-1) n b)`` (l_p).
        """
        if self.step_size is not None:
            return float(self.step_size)
        stat, priv = self._rates(geometry, dim, n, budget)
        scale = 1.0 if geometry.kind == "l1" else geometry.map_p - 1.0
        second = 1.0 / (scale * n * priv) if priv > 0 else math.inf
        return float(self.step_scale) * diameter / lip * min(stat, second)

    def _round_sizes(self, n: int) -> list[int]:
        if not self.strongly_convex:
            return [n]
        rounds = self.n_rounds
        if rounds is None:
            rounds = max(1, math.ceil(math.log2(max(math.log2(max(n, 2)), 1.0))))
        # Doubling sizes (the paper's n_r = 2^{r-2} n / log n), rescaled to use all n records.
        sizes = [n * 2 ** (r - 1) // (2**rounds - 1) for r in range(1, rounds + 1)]
        sizes = [s for s in sizes if s >= 1]
        return sizes or [n]

    def phases(self, spec: ProblemSpec, budget: Budget, accounting: str,
               relation: str) -> list[PhaseSpec]:
        """Every phase of every round, calibrated (public quantities only).

        <<plan_parameters>>

        Returns
        -------
        list of PhaseSpec
            Per phase, in order: its first record, its mirror-descent calibration
            (sizes, steps, noise), step size, regularisation weight, localisation radius
            and epsilon.

        Raises
        ------
        IncompatibleSolverError
            If ``n_phases`` needs more records than ``n_samples``.
        """
        n = spec.n_samples
        dim = max(spec.n_penalized * spec.n_outputs, 1)
        geometry = spec.constraint.mirror_geometry(dim)
        clip = self.gradient_clip(spec)
        lip = dual_gradient_bound(spec, clip, geometry)
        kappa = self._kappa(geometry, dim)
        pm1 = geometry.map_p - 1.0
        if spec.constraint.bounded:
            diameter = spec.constraint.diameter(geometry.norm_ord, dim=dim)
        else:
            diameter = math.inf
        # Strong convexity of (alpha/2)||x||_2^2 in the geometry's norm: ||x||_2^2 >=
        # d^{1 - 2/s} ||x||_s^2 for s <= 2.
        lam_geom = spec.alpha * dim ** (1.0 - 2.0 / geometry.norm_ord)
        out: list[PhaseSpec] = []
        start = 0
        for size in self._round_sizes(n):
            eta = self._base_eta(geometry, dim, size, budget, diameter, lip)
            k = self.n_phases or max(1, math.ceil(math.log2(max(size, 2))))
            for i in range(1, k + 1):
                n_i = max(1, size >> i)
                eps_i = (budget.epsilon if self.phase_budget == "full"
                         else budget.epsilon * 2.0 ** (1 - i))
                budget_i = Budget(eps_i, budget.delta)
                if self.batch_size is not None:
                    b = int(min(self.batch_size, n_i))
                    t = int(min(max(math.ceil(n_i * n_i / (b * b)), 1), self.max_iter))
                else:
                    b, t = capped_schedule(n_i, paper_batch_size(n_i, dim, eps_i),
                                           self.max_iter)
                md = calibrate_md_phase(n_i, b, t, clip, budget_i, sampling=self.sampling,
                                        accounting=accounting, relation=relation)
                eta_i = eta * 2.0 ** (-4 * i)
                # F_i's regulariser (1 / (eta_i n_i (p-1))) ||x - c||_p^2 = lambda_i w(x - c)
                # with w = ||.||_p^2 / (2 (p-1)): lambda_i = 2 / (eta_i n_i). Its minimiser
                # lies within r_i of c (Lemma 3.3): lambda_i ||y||_p^2 / (2(p-1)) <=
                # L ||y|| <= L kappa ||y||_p gives ||y||_p <= kappa L eta_i n_i (p-1).
                lam = 2.0 / (eta_i * n_i)
                radius = kappa * lip * eta_i * n_i * pm1
                out.append(PhaseSpec(start, md, eta_i, lam, radius, eps_i))
                start += n_i
            # Strongly convex reduction: shrink the diameter for the next round.
            if self.strongly_convex and self.step_size is None and lam_geom > 0:
                stat, priv = self._rates(geometry, dim, size, budget)
                err = lip * diameter * (stat + priv)
                diameter = min(diameter, math.sqrt(2.0 * err / lam_geom))
        if start > n:
            # Only a user n_phases larger than log2(n) gets here (public quantities).
            raise IncompatibleSolverError(
                f"n_phases={self.n_phases} needs more records than the dataset's "
                f"n_samples = {n} (each phase uses at least one fresh record); use "
                "n_phases=None or fewer phases."
            )
        return out

    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str,
             relation: str) -> LocalizedMirrorDescentPlan:
        """Calibrate every phase; the ledger is the phase that spends the most.

        The phases read disjoint records (parallel composition).

        <<plan_parameters>>

        Returns
        -------
        LocalizedMirrorDescentPlan
            The per-phase sizes, batches, steps, noise, regularisation and radii, and the
            worst phase's event.
        """
        phases = self.phases(spec, budget, accounting, relation)
        worst = 0
        if budget.is_private:
            # Parallel composition: the ledger is the single phase spending the most.
            poisson = self.sampling == "poisson"
            rel = "add_remove" if poisson else relation
            delta = add_remove_budget(budget).delta if poisson else budget.delta
            spent = [epsilon_spent(ph.md.event, delta, accounting=accounting, relation=rel)
                     for ph in phases]
            worst = int(np.argmax(spent))
            event = phases[worst].md.event
        else:
            event = dpe.NonPrivateDpEvent()
        return LocalizedMirrorDescentPlan(
            n_iter=sum(ph.md.n_iter for ph in phases),
            event=event,
            accounting=accounting,
            relation=relation,
            via_add_remove=self.sampling == "poisson",
            phase_starts=tuple(ph.start for ph in phases),
            phase_sizes=tuple(ph.md.n for ph in phases),
            batch_sizes=tuple(ph.md.batch_size for ph in phases),
            phase_iters=tuple(ph.md.n_iter for ph in phases),
            noise_multiplier=tuple(ph.md.noise_multiplier for ph in phases),
            sigma=tuple(ph.md.sigma for ph in phases),
            sensitivity=tuple(ph.md.sensitivity for ph in phases),
            phase_epsilons=tuple(ph.epsilon for ph in phases),
            step_sizes=tuple(ph.eta for ph in phases),
            lambdas=tuple(ph.lam for ph in phases),
            radii=tuple(ph.radius for ph in phases),
            worst_phase=worst,
            clip_norm=self.gradient_clip(spec),
        )

    # -- run -------------------------------------------------------------------------------
    def _run(self, problem: Problem, plan: LocalizedMirrorDescentPlan,
             noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        p, alpha = spec.n_penalized, spec.alpha
        geometry = spec.constraint.mirror_geometry(max(p * spec.n_outputs, 1))
        mm = geometry.mirror_map
        euclid = isinstance(mm, EuclideanMirrorMap)
        clip = plan.clip_norm
        # The blocks: disjoint slices of a permutation drawn before the data is read.
        perm = noise.permutation(spec.n_samples)
        W = np.zeros((spec.n_params, spec.n_outputs))
        W[:p] = spec.constraint.feasible_point((p, spec.n_outputs))
        for j, start in enumerate(plan.phase_starts):
            n_i, t = plan.phase_sizes[j], plan.phase_iters[j]
            lam, radius = plan.lambdas[j], plan.radii[j]
            md = MDPhase(n_i, plan.batch_sizes[j], t, plan.noise_multiplier[j],
                         plan.sensitivity[j], plan.sigma[j], plan.event, math.nan)
            center = W.copy()
            # The localisation ball ||x - c||_{map_p} <= r_i (none when unbounded), on which
            # the map's step is exact.
            ball = geometry.ball(radius)

            ball_step = mirror_stepper(ball, mm, center[:p].size)

            def step(x, g, eta, c=center[:p], ball_step=ball_step):
                return c + ball_step(x - c, g, eta)

            prime = getattr(ball_step, "prime", None)

            def extra(Wk, c=center, lam=lam, prime=prime):
                out = np.empty_like(Wk)
                # The Euclidean map's gradient is the identity (its copy skipped). A
                # p-norm map's gradient at x - c is also the step's starting dual point
                # (the step from Wk follows): handed over, not computed twice.
                shift = Wk[:p] - c[:p]
                if euclid:
                    dual = shift
                else:
                    dual = mm.grad(shift)
                    if prime is not None:
                        prime(shift, dual)
                out[:p] = lam * dual + alpha * Wk[:p]
                out[p:] = lam * (Wk[p:] - c[p:])
                return out

            # Theorem 3, second part: F_i is lambda_i-strongly convex relative to the map.
            ks = np.arange(1, t + 1, dtype=float)
            steps = 2.0 / (lam * (ks + 1.0))
            weights = 2.0 * ks / (t * (t + 1.0))
            pool = perm[start:start + n_i]
            W = run_noisy_md(problem, pool, center, md, clip, steps, weights, step, extra,
                             noise, self.sampling)
            W[:p] = spec.constraint.project(W[:p])
        return W
