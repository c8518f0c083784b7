"""Phased DP-SGD (Feldman, Koren & Talwar 2020; Su, Zhao & Wang, Algorithm 6).

One pass of (mini-batch) SGD over disjoint phases of geometrically shrinking size and
step; each phase releases its averaged iterate plus noise calibrated to the *stability*
of one-pass SGD. The phases touch disjoint records, so they compose in parallel.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event as dpe

from skdp.exceptions import IncompatibleSolverError
from skdp.privacy.accounting import (
    PureDpEvent,
    check_sensitivity,
    gaussian_event,
    single_gaussian_multiplier,
)
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import BaseDPSolver, Plan, Problem, ProblemSpec, _legacy_plan
from skdp.solvers._capabilities import Capabilities

__all__ = ["PhasedDPSGD", "phase_sizes", "phase_indices"]

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


def phase_indices(permutation: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    """Consecutive disjoint blocks of a data-independent permutation, one per phase."""
    bounds = np.cumsum([0, *sizes])
    return [permutation[bounds[i]:bounds[i + 1]] for i in range(len(sizes))]


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
        stability condition ``b eta_1 <= 2 / gamma`` (see Notes), else ``ValueError``.
    batch_size : int, optional
        Mini-batch size ``b`` (public, the same in every phase; the last batch of a phase
        may be smaller). Default: the largest ``b <= 256`` with ``b eta_1 <= 1 / gamma``.
    n_phases : int, optional
        Cap on the number of phases (default and maximum ``floor(log2 n)``).

    Notes
    -----
    **Privacy guarantee.** Replace-one neighbouring relation. Assumptions, all enforced:
    rows clipped to the public ``data_norm`` (so ``||x'_i||_2 <= X = spec.row_bound(2)``),
    a smooth convex GLM loss with ``|phi'| <= c_1`` on the feasible scores and
    ``phi'' <= c_2``, so that every per-record gradient has l2 norm at most
    ``L = c_1 X`` (:attr:`ProblemSpec.gradient_bound`) and every per-record objective
    ``f_j(w) = phi(x_j^T w, y_j) + (alpha / 2) ||w_pen||^2`` is convex and
    ``gamma``-smooth with ``gamma = c_2 X^2 + alpha``. NO per-example gradient clipping:
    clipping a gradient field destroys the co-coercivity the argument needs.

    *Stability of one phase (derived here for mini-batches and projections).* The batch
    map ``G_B(w) = Proj_C(w - eta_i |B| grad f_B(w))`` with ``f_B`` the mean of ``f_j``
    over ``B`` (convex, ``gamma``-smooth) is non-expansive when ``eta_i |B| <= 2 / gamma``:
    by co-coercivity ``<grad f(u) - grad f(v), u - v> >= ||grad f(u) - grad f(v)||^2 /
    gamma``, so ``||u - s g_u - v + s g_v||^2 <= ||u - v||^2 - s (2 / gamma - s)
    ||g_u - g_v||^2`` for ``s = eta_i |B|``; the Euclidean projection onto a closed convex
    set is non-expansive too (the intercept row is not projected, which keeps the map a
    projection onto the convex set ``C x R``). Run the phase on neighbouring data with the
    same permutation and the same start: the iterates agree until the batch holding the
    replaced record; at that batch (same ``w``) the arguments of ``Proj`` differ by
    ``eta_i ||grad f(w; z) - grad f(w; z')|| <= 2 L eta_i`` (the regulariser cancels),
    and every later map is the same non-expansive map on both sides. Each of the
    ``T_i + 1`` averaged iterates therefore moves by at most ``2 L eta_i``, and so does
    their average: the l2 sensitivity of ``w_bar_i`` is ``Delta_i = 2 L eta_i`` for every
    batch size (the sum form ``eta_i sum_{j in B}`` keeps the per-record weight
    ``eta_i``; the mini-batch only has to respect ``|B| eta_i <= 2 / gamma``, checked
    before any data is read). For a squared loss ``L`` needs bounded scores: the start of
    each phase is projected onto ``C`` and every iterate stays in ``C``, where
    ``|z| <= spec.score_bound``.

    *Calibration.* ``delta > 0``: the analytic Gaussian (Balle & Wang 2018, exact)
    ``sigma_i = Delta_i sigma_B1(epsilon, delta)``; the paper's ``4 L eta_i
    sqrt(ln(1/delta)) / epsilon`` is valid for ``epsilon <= 2 ln(1/delta)`` but 2-2.7x
    noisier. ``"rdp"``/``"pld"`` calibrate the same single release with
    ``dp_accounting``. ``delta = 0``: the density ratio of the l2 Laplace noise at ``u``
    and ``u + v`` is at most ``exp(epsilon ||v||_2 / Delta_i)`` (triangle inequality),
    so each phase is epsilon-DP (``PureDpEvent``, accountant ``"pure"``).

    *Composition.* Phases read disjoint blocks of a data-independent permutation; a
    replaced record lies in one phase ``j``: phases before ``j`` see identical data,
    phase ``j`` is one ``(epsilon, delta)``-DP release given its (public, released)
    start, and later phases are post-processing of it (their records are identical).
    Hence the whole run is ``(epsilon, delta)``-DP (parallel composition): the ledger is
    the event of the worst phase (all phases share one noise multiplier). The final
    projection is post-processing.

    Reference: Feldman, Koren & Talwar, "Private stochastic convex optimization: optimal
    rates in linear time", STOC 2020 (Algorithm 2, Theorem 4.4); Su, Zhao & Wang,
    "Differentially private stochastic convex optimization in (non)-Euclidean space
    revisited", Algorithm 6 and Lemma 14 (unconstrained; this class also projects, which
    the argument above covers). Corrections: exact calibration, enforced ``L`` and
    ``gamma`` (row clipping, GLM bounds) instead of assumed ones, the stability
    condition ``eta <= 2 / gamma`` checked (the paper assumes ``eta <= 1 / beta``), the
    regulariser's smoothness added to ``gamma``, mini-batches in sum form.

    **l_p geometry, 2 <= p <= inf (the paper's reduction, Theorem 8).** The algorithm is
    Euclidean for every p: only the public bounds change. With rows bounded in the dual
    norm ``q = p / (p - 1) <= 2`` (``data_norm_ord``), ``||x||_2 <= ||x||_q``, so the
    loss is ``L``-Lipschitz and ``beta``-smooth in l2 with the l_q constants
    (``spec.row_bound(2)`` performs this conversion; ``p = inf`` is ``q = 1``). The l2
    size of the solution grows to ``||theta*||_2 <= d^(1/2 - 1/p) ||theta*||_p``, which
    gives the paper's ``d^(1 - 2/p)`` factor in the excess risk; an l_p-ball constraint
    is handled by its Euclidean projection (``spec.score_bound`` uses the Hoelder pairing
    ``radius * ||x||_q`` for the squared loss). For ``1 < p < 2`` the same algorithm is
    private but not rate-optimal (use regularized mirror descent).
    """

    name = "phased_sgd"
    capabilities = Capabilities(
        algorithm="phased DP-SGD, Feldman-Koren-Talwar 2020 / Su-Zhao-Wang Alg. 6",
        needs_delta=False, accountants=("gaussian", "rdp", "pld", "pure"),
        default_accountant="gaussian", constraints=("none", "l2", "l1", "lp", "simplex"),
        bounded_gradients=True,
        min_samples=2, secure=True,
    )

    def __init__(self, step_size=None, batch_size=None, n_phases=None):
        self.step_size = step_size
        self.batch_size = batch_size
        self.n_phases = n_phases

    def _validate_params(self) -> None:
        self._check_positive_real("step_size")
        self._check_positive_int("batch_size")
        self._check_positive_int("n_phases")

    def check_compatible(self, spec: ProblemSpec, accountant: str, relation: str) -> None:
        super().check_compatible(spec, accountant, relation)
        if not math.isfinite(spec.gradient_bound):
            raise IncompatibleSolverError(
                f"phased_sgd needs per-record gradients bounded without clipping (its "
                f"privacy rests on the stability of exact SGD steps), but "
                f"{type(spec.loss).__name__} has an unbounded derivative on this problem: "
                "bound the scores with constraint='l2' (or 'l1'/'lp') and a radius, and "
                "fit_intercept=False, or use a loss with a bounded derivative (Huber)."
            )
        if spec.n_samples < 2:
            raise IncompatibleSolverError(
                "phased_sgd needs at least 2 samples (the first phase has floor(n/2) "
                "records); got 1 sample."
            )

    # -- plan ------------------------------------------------------------------------------
    def _noise_ratio(self, spec: ProblemSpec, budget: Budget, accountant: str, z: float
                     ) -> float:
        """``sqrt(E||xi||^2) / Delta`` of one release (0 without privacy)."""
        m = spec.dimension
        if not budget.is_private:
            return 0.0
        if accountant == "pure":
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

    def plan(self, spec: ProblemSpec, budget: Budget, accountant: str, relation: str) -> Plan:
        sizes = phase_sizes(spec.n_samples, self.n_phases)
        lipschitz = float(spec.gradient_bound)
        # Smoothness of f_j = phi(x_j^T w) + (alpha/2)||w_pen||^2: c_2 X^2 + alpha.
        gamma = float(spec.smoothness)
        stable = 2.0 / gamma if gamma > 0 else math.inf
        # Every phase is one release of its own block (parallel composition).
        z = 0.0 if accountant == "pure" else single_gaussian_multiplier(budget, accountant,
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
            nu = self._noise_ratio(spec, budget, accountant, z)
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
        steps = [eta * STEP_DECAY ** -(i + 1) for i in range(len(sizes))]
        # Stability: the released average of phase i moves by at most 2 L eta_i when one
        # record is replaced (class Notes); all phases share the multiplier z.
        sens = [check_sensitivity(2.0 * lipschitz * s, "phase sensitivity 2 L eta_i")
                for s in steps]
        settings = {
            "step_size": eta,
            "step_sizes": steps,
            "batch_size": batch,
            "phase_sizes": sizes,
            "n_phases": len(sizes),
            "lipschitz": lipschitz,
            "smoothness": gamma,
            "sensitivity": sens,
        }
        if not budget.is_private:
            event: dpe.DpEvent = dpe.NonPrivateDpEvent()
            settings.update(mechanism="none", sigma=[0.0] * len(sizes),
                            laplace_scale=[0.0] * len(sizes), noise_multiplier=0.0)
        elif accountant == "pure":
            # Each phase: density ∝ exp(-eps ||xi|| / Delta_i) is eps-DP; parallel phases.
            event = PureDpEvent(budget.epsilon)
            settings.update(mechanism="l2_laplace", sigma=[0.0] * len(sizes),
                            laplace_scale=[d / budget.epsilon for d in sens],
                            noise_multiplier=0.0)
        else:
            sigmas = [z * d for d in sens]
            # Parallel composition: the ledger is the worst phase's release; every phase
            # has sigma_i / Delta_i = z, so phase 1's event describes each of them.
            event = gaussian_event(sigmas[0], sens[0], accountant=accountant,
                                   relation=relation)
            settings.update(mechanism="gaussian", sigma=sigmas,
                            laplace_scale=[0.0] * len(sizes), noise_multiplier=z)
        n_iter = sum(math.ceil(size / batch) for size in sizes)
        return _legacy_plan(n_iter=n_iter, event=event, accountant=accountant, relation=relation,
                    settings=settings)

    # -- run -------------------------------------------------------------------------------
    def release_noise_scale(self, plan: Plan) -> float:
        # The output is the last phase's average plus that phase's noise draw.
        s = plan.settings
        if s["mechanism"] == "l2_laplace":
            return float(s["laplace_scale"][-1])
        return float(s["sigma"][-1])

    def _run(self, problem: Problem, plan: Plan, noise: NoiseSource) -> np.ndarray:
        return self.run_phases(problem, plan, noise)

    def draw_randomness(self, problem: Problem, plan: Plan, noise: NoiseSource
                        ) -> tuple[np.ndarray, list[np.ndarray]]:
        """The permutation and the per-phase noise, drawn before any data is read."""
        spec = problem.spec
        shape = (spec.n_params, spec.n_outputs)
        permutation = noise.permutation(spec.n_samples)
        mechanism = plan.settings["mechanism"]
        scales = plan.settings["laplace_scale" if mechanism == "l2_laplace" else "sigma"]
        xis = [noise.release(mechanism, shape, b) for b in scales]
        return permutation, xis

    def run_phases(
        self, problem: Problem, plan: Plan, noise: NoiseSource,
        averages: list[np.ndarray] | None = None,
    ) -> np.ndarray:
        """Run every phase; ``averages`` (if given) receives the pre-noise ``w_bar_i``."""
        spec = problem.spec
        p = spec.n_penalized
        permutation, xis = self.draw_randomness(problem, plan, noise)
        blocks = phase_indices(permutation, plan.settings["phase_sizes"])
        batch = plan.settings["batch_size"]
        W = np.zeros((spec.n_params, spec.n_outputs))
        W[:p] = spec.constraint.feasible_point(W[:p].shape)
        for index, eta, xi in zip(blocks, plan.settings["step_sizes"], xis, strict=True):
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
        return total / count
