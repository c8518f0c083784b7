"""Private variance-reduced Frank-Wolfe over l1-type polytopes (pure epsilon-DP).

Asi, Feldman, Koren & Talwar (2021), "Private stochastic convex optimization: optimal
rates in l1 geometry", Algorithm 3 with Lemma 4.1 / Theorem 6, with the corrections of
the design notes (privacy-calibration.md, section 4.3): the score sensitivity of a
non-root vertex is twice the paper's, every record is used in exactly one tree vertex
(vertex sets are consecutive blocks of a data-independent permutation, at most ``n``
records in total), and the Laplace report-noisy-min uses the non-monotone scale
``2 Delta / eps0``. The run is one pass over the data: linear time, and ``X`` stays
sparse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from dp_accounting import dp_event as dpe

from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import L1Ball, L2Ball, LpBall, Simplex, Unconstrained
from skdp.losses import clip_coefficients
from skdp.privacy.accounting import (
    PureDpEvent,
    calibrate_noise_multiplier,
    check_sensitivity,
    epsilon_spent,
    randomized_response_event,
)
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import BaseDPSolver, Plan, Problem, ProblemSpec, _legacy_plan
from skdp.solvers._capabilities import Capabilities

__all__ = [
    "PrivateFrankWolfe",
    "TreeSchedule",
    "report_noisy_min",
    "selection_epsilon",
    "tree_schedule",
    "vertex_contribution",
    "vertex_scores",
]

# Largest automatic number of phases: phase t has 2^t leaves (Frank-Wolfe steps), each
# costing O(d) for the noisy scores, so 2^(T+1) leaves in all.
MAX_AUTO_PHASES = 12
# Largest user-given number of phases (2^21 leaves).
MAX_PHASES = 20
# Laplace scales are raised by this factor so that rounding never puts the recomputed
# epsilon above the budget.
_SCALE_SAFETY = 1.0 + 1e-12
# Relative margins of the approximate-DP calibration (see selection_epsilon).
_PLD_EPSILON_MARGIN = 1e-9
_PLD_DELTA_MARGIN = 1e-3


# --------------------------------------------------------------------------------------
# The schedule: phases, tree vertices, sample sizes (public)
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TreeSchedule:
    """Sample sizes and step sizes of Algorithm 3, fixed from public quantities.

    Phase ``t = 1..T`` is a complete binary tree of depth ``t`` visited depth first. The
    root draws ``b`` fresh records, every right child at depth ``j >= 1`` draws
    ``b_j = floor(b / 2^j)`` fresh records, a left child reuses its parent's estimate,
    and each of the ``2^t`` leaves takes one Frank-Wolfe step. The global step ``k = 1,
    2, ...`` uses ``eta_k = 2 / (k + 1)``.

    Attributes
    ----------
    n_phases : int
        ``T``.
    batch_size : int
        ``b``, the root sample size.
    sizes : tuple of int
        ``sizes[j]`` = records of a sampling vertex at depth ``j`` (``sizes[0] = b``).
    n_used : int
        Records used in all (``<= n``); each is used in exactly one vertex.
    n_steps : int
        Frank-Wolfe steps ``2^(T+1) - 2``.
    """

    n_phases: int
    batch_size: int
    sizes: tuple[int, ...]
    n_used: int
    n_steps: int


def _records_used(batch_size: int, n_phases: int) -> int:
    """Records used by ``T`` phases with root size ``b``.

    Phase ``t`` uses ``b`` at the root plus ``2^(j-1)`` right children of size
    ``floor(b / 2^j)`` at each depth ``j = 1..t``.
    """
    total = 0
    for t in range(1, n_phases + 1):
        total += batch_size + sum((1 << (j - 1)) * (batch_size >> j) for j in range(1, t + 1))
    return total


def tree_schedule(n_samples: int, n_phases: int, batch_size: int | None = None) -> TreeSchedule:
    """The schedule of ``n_phases`` phases on ``n_samples`` records (public).

    Without ``batch_size`` the largest ``b`` whose schedule uses at most ``n`` records is
    taken (the paper's ``b = n / log^2 n`` bounds the count by ``T^2 b``; the exact count
    lets ``b`` be larger). Raises :class:`IncompatibleSolverError` when no schedule fits:
    the deepest vertices need ``b >= 2^T`` (Lemma 4.1's ``2^T <= b``).
    """
    T = int(n_phases)
    if batch_size is None:
        lo, hi = 0, n_samples
        while lo < hi:  # largest b with _records_used(b, T) <= n (monotone in b)
            mid = (lo + hi + 1) // 2
            if _records_used(mid, T) <= n_samples:
                lo = mid
            else:
                hi = mid - 1
        b = lo
    else:
        b = int(batch_size)
    if b < (1 << T) or _records_used(b, T) > n_samples:
        need = _records_used(1 << T, T)
        raise IncompatibleSolverError(
            f"Frank-Wolfe with n_phases={T} and batch_size={batch_size} needs "
            f"{_records_used(max(b, 1 << T), T)} records (each used once, the root batch "
            f"at least 2^T = {1 << T}); the dataset has n_samples = {n_samples}. Use fewer phases "
            f"(n_phases=None chooses them), a smaller batch_size, or at least {need} "
            "records."
        )
    sizes = tuple(b >> j for j in range(T + 1))
    return TreeSchedule(n_phases=T, batch_size=b, sizes=sizes, n_used=_records_used(b, T),
                        n_steps=(1 << (T + 1)) - 2)


def _movement_bounds(n_phases: int) -> list[list[float]]:
    """``M[t][j]``: largest ``sum eta_k`` between a right child at depth j and its parent.

    Between the visit of a parent at depth ``j - 1`` and of its right child the algorithm
    takes the ``2^(t-j)`` Frank-Wolfe steps of the left sibling's leaves; each moves the
    iterate by ``eta_k ||w_k - x_k||_1 <= eta_k D``. The steps are largest for the
    leftmost vertex (smallest ``k``): phase ``t`` starts at step ``k = 2^t - 1``.
    """
    out: list[list[float]] = []
    for t in range(n_phases + 1):
        row = [0.0]
        k0 = (1 << t) - 1 if t else 1
        for j in range(1, t + 1):
            k = np.arange(k0, k0 + (1 << (t - j)), dtype=float)
            row.append(float(np.sum(2.0 / (k + 1.0))))
        out.append(row)
    return out


# --------------------------------------------------------------------------------------
# Building blocks (also used by the tests)
# --------------------------------------------------------------------------------------
def vertex_scores(constraint: L1Ball | Simplex, G: np.ndarray) -> np.ndarray:
    """``<c_i, G>`` for every vertex ``c_i`` of the polytope, one vectorised op.

    L1 ball: vertices ``+radius e_j`` then ``-radius e_j`` (``2 m`` scores for ``m``
    entries of ``G``); simplex: ``radius e_j`` (``m`` scores).
    """
    g = constraint.radius * np.ravel(G)
    if isinstance(constraint, Simplex):
        return g
    return np.concatenate([g, -g])


def _vertex(constraint: L1Ball | Simplex, index: int, shape: tuple[int, ...]) -> np.ndarray:
    """The vertex number ``index`` of :func:`vertex_scores` as an array of ``shape``."""
    size = math.prod(shape)
    w = np.zeros(size)
    if isinstance(constraint, Simplex):
        w[index] = constraint.radius
    else:
        w[index % size] = constraint.radius if index < size else -constraint.radius
    return w.reshape(shape)


def report_noisy_min(scores: np.ndarray, scale: float, noise: NoiseSource) -> int:
    """Index of the smallest score after i.i.d. ``Laplace(scale)`` noise on every score.

    With scores of per-candidate sensitivity ``Delta`` that may move in different
    directions, ``scale = 2 Delta / eps0`` gives ``eps0``-DP (Dwork & Roth 2014, Claim
    3.9 with the non-monotone factor 2). ``scale = 0``: the exact argmin.
    """
    return int(np.argmin(scores + noise.laplace(scores.shape, scale)))


def vertex_contribution(
    problem: Problem,
    index: np.ndarray,
    W: np.ndarray,
    W_parent: np.ndarray | None,
    clip: float,
    size: int,
    norms_inf: np.ndarray,
) -> np.ndarray:
    """What the records ``index`` of one vertex add to the gradient estimate.

    Root (``W_parent is None``): ``(1/b) sum_i clip_L(grad f(W; z_i))``. Right child:
    ``(1/b_j) sum_i clip_C(grad f(W; z_i) - grad f(W_parent; z_i))``. Clipping is in the
    entrywise l-inf norm, vectorised on the GLM coefficients (``x_i d_i^T`` has l-inf
    norm ``||x_i||_inf ||d_i||_inf``), so one record moves the result by at most
    ``2 clip / size`` in l-inf (replace-one). ``size`` is the public vertex size.
    """
    loss = problem.spec.loss
    rows = problem.rows(index)
    Yb = problem.Y[index]
    D = loss.derivative(problem.scores(W, rows), Yb)
    if W_parent is not None:
        D = D - loss.derivative(problem.scores(W_parent, rows), Yb)
    D = clip_coefficients(D, norms_inf[index], clip, ord=math.inf)
    # Divided before the sum: size terms of l-inf norm up to clip could overflow a sum that
    # the mean (at most clip) never does.
    return problem.gradient_sum(D / size, rows)


def _selections_event(z: float, count: int) -> dpe.DpEvent:
    """``count`` adaptive ``(1/z)``-DP selections, each dominated by randomized response."""
    rr = randomized_response_event(1.0 / z)
    return rr if count == 1 else dpe.SelfComposedDpEvent(rr, count)


def selection_epsilon(count: int, budget: Budget, relation: str) -> float:
    """Largest ``e`` such that ``count`` adaptive ``e``-DP releases are ``budget``-DP.

    Every pure ``e``-DP mechanism is dominated by binary randomized response with the same
    ``e`` (Kairouz, Oh & Viswanath 2015), and dominating pairs compose adaptively, so the
    PLD of ``count`` randomized responses bounds the privacy profile of any ``count``
    adaptive ``e``-DP selections (the optimal composition theorem, computed numerically by
    dp_accounting's PLD; see :class:`~skdp.privacy.accounting.SelfComposingPldAccountant`).
    Calibrated as the noise multiplier ``z = 1/e`` (cached; re-accounted: spends at most
    the budget); the PLD of ``count`` randomized responses is the exact binomial, so a
    calibration costs milliseconds (0.3 s at ``count = 2^16``).
    """
    # Calibrate to a budget a hair inside the target: (epsilon (1 - 1e-9), delta (1 -
    # 1e-3)). The PLD sums probabilities in floating point (absolute error ~1e-16, i.e.
    # relative 1e-4 at delta = 1e-12), so the margin keeps the true delta within the
    # budget and the re-accounted ledger (the scales carry another 1 + 1e-12) below it.
    inner = Budget(budget.epsilon * (1.0 - _PLD_EPSILON_MARGIN),
                   budget.delta * (1.0 - _PLD_DELTA_MARGIN))
    z = calibrate_noise_multiplier(_selections_event, (int(count),), inner,
                                   accountant="pld", relation=relation)
    # epsilon / count (basic composition) is always within the budget; the numerical
    # calibration stops up to 0.1% below the solution, which can fall below it for
    # count <= 2, so never return less.
    return max(1.0 / z, inner.epsilon / count)


# --------------------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------------------
class PrivateFrankWolfe(BaseDPSolver):
    """Private variance-reduced Frank-Wolfe (Asi, Feldman, Koren & Talwar 2021, Alg. 3).

    One pass over a random permutation of the data. Phase ``t = 1..T`` visits a binary
    tree of depth ``t`` depth first: the root estimates the gradient at the current
    iterate from ``b`` fresh records, every right child at depth ``j`` corrects its
    parent's estimate with ``b / 2^j`` fresh records (``v += mean clip(grad f(x) -
    grad f(x_parent))``), a left child reuses its parent's, and every leaf takes a
    Frank-Wolfe step ``x <- (1 - eta_k) x + eta_k w_k`` towards the vertex ``w_k``
    chosen by Laplace report-noisy-min on the scores ``<c_i, v + alpha x>``. The
    constraint must be a polytope with finitely many vertices: the l1 ball (``2 d K``
    vertices ``+-radius e_j``) or the simplex; rows are bounded in l-infinity.

    Parameters
    ----------
    n_phases : int, optional
        Number of phases ``T`` (``2^(T+1) - 2`` Frank-Wolfe steps). Default: the integer
        minimising the bound in the proof of Theorem 6 (see Notes).
    batch_size : int, optional
        Root sample size ``b`` (``>= 2^T``). Default: the largest ``b`` whose schedule
        uses at most ``n`` records.
    clip_norm : float, optional
        Per-example l-infinity clip ``L`` of root gradients. Default: the loss bound
        ``sup|phi'| * ||x||_inf`` on the ball (lossless).

    Notes
    -----
    **Privacy guarantee.** Pure epsilon-DP (``delta = 0``; also ``(epsilon, delta)``-DP
    for every ``delta``) under the replace-one relation, for every dataset: nothing is
    assumed about the data. Rows are clipped to the public ``data_norm`` in l-infinity
    (``X``), labels to their public bound. Record sets of the vertices are consecutive
    blocks of a uniformly random permutation drawn before the data is read, so each
    record is used in exactly one vertex (at most ``n`` records in all). A record in the
    root of phase ``t`` enters through ``clip_L(grad f)/b``, a record in a right child
    at depth ``j`` through ``clip_{C_j}(grad f(x) - grad f(x_parent))/b_j``; replacing it
    moves every score ``<c_i, v>`` (``||c_i||_1 = radius = r``) of the ``2^(t-j)``
    leaves below that vertex by at most ``Delta_{t,0} = 2 r L / b`` resp.
    ``Delta_{t,j} = 2 r C_j / b_j``, given the earlier outputs (which fix the iterates).
    Laplace report-noisy-min with scale ``lambda_t`` is ``2 Delta / lambda_t``-DP for
    non-monotone scores, and the ``2^(t-j)`` selections compose (basic composition), so
    ``lambda_t = max_j 2^(t-j) 2 Delta_{t,j} / epsilon`` makes every record's
    contribution epsilon-DP; the leaves of other vertices do not depend on it (parallel
    composition over the vertices), and the iterates are post-processing of the
    selections. The ledger records the worst vertex's ``2^(t-j)`` selections as
    ``PureDpEvent``s, read by the ``"pure"`` (or ``"basic"``) accountant.

    **Approximate DP.** With ``delta > 0`` (accountant ``"pld"``, what ``"auto"`` picks)
    the ``k = 2^(t-j)`` selections below a vertex compose optimally instead of basically:
    each is ``e``-DP and dominated by binary randomized response, whose ``k``-fold PLD
    gives the largest admissible ``e(k)`` (:func:`selection_epsilon`), and ``lambda_t =
    max_j 2 Delta_{t,j} / e(2^(t-j))``, never above the pure scale. The ledger is the worst
    vertex's ``SelfComposedDpEvent(RandomizedResponseDpEvent(e), k)`` at the budget's
    ``delta`` (a bound at that delta only: the worst vertex can depend on delta). This is the first
    step of the paper's Section 4.2 (Theorem 7) with exact composition; its shuffling step
    is not used. The schedule is chosen with the pure scales in both cases. References:
    Asi, Feldman, Koren & Talwar, ICML 2021, Algorithm 3, Lemma 4.1 and Theorem 6, with
    two corrections: the paper's non-root sensitivity ``D L 2^j / b`` misses that a
    difference of two gradients changes by ``2 C = 4 L`` under replacement (ours is
    ``Delta_{t,j} = 4 r L 2^j / b`` with ``C_j = 2 L``: the paper's scale ``2 L D 2^t /
    (b eps)`` becomes ``8 r L 2^t / (b eps)``), and the paper draws samples without
    saying they must be disjoint, which the argument needs.

    **Difference clip.** ``C_j = min(2 L, beta_1 D M_{t,j})`` where ``beta_1 = c X^2``
    (``c`` the public curvature bound of the loss, ``X`` the l-inf row bound) is the
    l1-smoothness of the per-example loss, ``D = 2 r`` the l1 diameter and ``D M_{t,j}``
    the public bound on ``||x - x_parent||_1`` from the step sizes of the left sibling's
    leaves. The clip is never active (the loss's curvature bound holds by definition);
    when ``beta_1 D <= L`` the root term dominates and ``lambda_t`` is the paper's
    ``4 r L 2^t / (b eps)``, half of the worst case ``8 r L 2^t / (b eps)``.

    **Phases.** The proof of Theorem 6 bounds the excess risk by
    ``D (L + beta_1 D) sqrt(ln m / b) + beta_1 D^2 / 2^T + lambda_T ln m`` (the sampling
    error, the Frank-Wolfe error and the report-noisy-min error of the last phase, ``m``
    vertices). The default ``T`` minimises this expression with unit constants over
    ``1 <= T <= 12`` with the exact ``b(T)`` and ``lambda_T`` (the paper's
    ``T = log2(b eps beta D / (L log m)) / 2`` balances the last two terms). Without
    privacy (``epsilon = inf``) the selection term vanishes and the default is the
    largest feasible ``T <= 12`` (the paper's rule with ``lambda = 0``): the worst-case
    sampling term (Hoeffding at the lossless clip) would stop at ``T = 2-4``, i.e. 6-30
    Frank-Wolfe steps, whose iterate is still a mixture of a few vertices of norm ``r``
    (test MSE above the zero predictor's on the l1 benchmark at ``n = 1000``). Public
    quantities only; the privacy argument does not depend on ``T``.
    """

    name = "frank_wolfe"
    capabilities = Capabilities(
        algorithm=("private variance-reduced Frank-Wolfe, Asi-Feldman-Koren-Talwar 2021 "
                   "Alg. 3"),
        needs_delta=False, accountants=("pure", "basic", "pld"), default_accountant="pure",
        constraints=("l1", "simplex"), bounded_constraint=True, intercept="constrained",
        secure=True,
    )

    def resolve_accountant(self, accountant: str, budget: Budget | None = None) -> str:
        """``"auto"``: ``"pld"`` (optimal composition, approximate DP) when the budget has
        ``delta > 0``, else ``"pure"``."""
        if (accountant == "auto" and budget is not None and budget.is_private
                and budget.delta > 0):
            return "pld"
        return super().resolve_accountant(accountant, budget)

    def __init__(self, n_phases=None, batch_size=None, clip_norm=None):
        self.n_phases = n_phases
        self.batch_size = batch_size
        self.clip_norm = clip_norm

    def _validate_params(self) -> None:
        self._check_positive_int("n_phases")
        self._check_positive_int("batch_size")
        self._check_positive_real("clip_norm")
        if self.n_phases is not None and self.n_phases > MAX_PHASES:
            raise ValueError(f"PrivateFrankWolfe.n_phases must be <= {MAX_PHASES} "
                             f"(2^(T+1) Frank-Wolfe steps), got {self.n_phases}.")

    # -- checks ------------------------------------------------------------------------
    def check_compatible(self, spec: ProblemSpec, accountant: str, relation: str) -> None:
        c = spec.constraint
        if isinstance(c, Unconstrained):
            raise IncompatibleSolverError(
                "solver 'frank_wolfe' needs a bounded polytope (its steps move towards "
                "vertices); set constraint='l1' and a finite radius."
            )
        if isinstance(c, L2Ball | LpBall):
            raise IncompatibleSolverError(
                f"solver 'frank_wolfe' needs a polytope with finitely many vertices (the "
                f"private selection is over vertices), but {type(c).__name__} has a "
                "continuum of extreme points and no finite candidate set with a known "
                "score sensitivity; use constraint='l1', or a mirror-descent or "
                "gradient solver for l2/lp balls."
            )
        if not isinstance(c, L1Ball | Simplex):
            raise IncompatibleSolverError(
                f"solver 'frank_wolfe' supports L1Ball and Simplex constraints, not "
                f"{type(c).__name__}."
            )
        super().check_compatible(spec, accountant, relation)
        if spec.n_penalized != spec.n_params:
            raise IncompatibleSolverError(
                "solver 'frank_wolfe' needs every coefficient inside the l1 ball: a free "
                "intercept makes the feasible set unbounded (no finite vertex set). Set "
                "fit_intercept=False (centre the data with public constants), or use "
                "DPLasso, whose intercept counts towards the radius."
            )

    # -- public constants -------------------------------------------------------------------
    def lipschitz_inf(self, spec: ProblemSpec) -> float:
        """Clip ``L`` of root gradients in l-inf (``clip_norm`` or the loss bound).

        Scores satisfy ``|x^T w_k| <= ||w_k||_1 ||x||_inf <= r X`` on the ball (and the
        simplex), so ``||phi'||_inf <= ||phi'||_2 <= sup_{|z| <= r X} ||phi'(z)||`` and
        ``||x phi'^T||_inf = ||x||_inf ||phi'||_inf``.
        """
        X = spec.row_bound(math.inf)
        r = float(spec.constraint.radius)
        bound = spec.loss.derivative_bound_at(r * X) * X
        bound = min(bound, spec.gradient_bound_in(math.inf))
        if self.clip_norm is None and not math.isfinite(bound):
            raise IncompatibleSolverError(
                f"the gradients of {type(spec.loss).__name__} are unbounded on this "
                "problem; set the solver's clip_norm (an l-inf clip of per-example "
                "gradients) or a finite data_norm and radius."
            )
        return bound if self.clip_norm is None else min(float(self.clip_norm), bound)

    def _schedule_constants(self, spec: ProblemSpec, budget: Budget, schedule: TreeSchedule,
                            L: float, accountant: str = "pure",
                            relation: str = "replace_one") -> dict:
        """Clips, sensitivities and Laplace scales of every (phase, depth).

        ``accountant="pure"``/``"basic"``: the selections below a vertex compose by basic
        composition (pure DP); ``"pld"``: by the optimal composition of pure-DP mechanisms
        at the budget's ``delta`` (approximate DP, :func:`selection_epsilon`).
        """
        r = float(spec.constraint.radius)
        X = spec.row_bound(math.inf)
        D = 2.0 * r  # l1 diameter of the l1 ball and of the simplex
        # l1-smoothness of one record's loss: |phi'(z) - phi'(z')| <= c |z - z'| and
        # |z - z'| <= ||w - w'||_1 ||x||_inf give ||grad f(w) - grad f(w')||_inf <=
        # c X^2 ||w - w'||_1 (K outputs: ||phi'(z) - phi'(z')||_inf <= c ||z - z'||_2 <=
        # c ||z - z'||_1 <= c X ||W - W'||_1).
        beta1 = spec.loss.curvature_bound * X * X
        moves = _movement_bounds(schedule.n_phases)
        T = schedule.n_phases
        clips, sens, scales, eps_vertex = [], [], [], []
        for t in range(1, T + 1):
            # C_{t,0} = L (root); C_{t,j} = min(2 L, beta_1 ||x - x_parent||_1), the
            # movement bounded by D * (sum of the left sibling's step sizes).
            c_t = [L] + [min(2.0 * L, beta1 * D * moves[t][j]) for j in range(1, t + 1)]
            # One record moves a mean of per-record vectors of l-inf norm <= C by 2C/size
            # in l-inf, hence each score <c_i, v> by 2 r C / size (||c_i||_1 = r).
            d_t = [check_sensitivity(2.0 * r * c_t[j] / schedule.sizes[j],
                                     "Frank-Wolfe score sensitivity")
                   for j in range(t + 1)]
            clips.append(tuple(c_t))
            sens.append(tuple(d_t))
            if budget.is_private and accountant == "pld":
                # Each of the 2^(t-j) selections below a depth-j vertex is
                # (2 Delta_{t,j} / lambda)-DP; their composition meets the budget when
                # 2 Delta_{t,j} / lambda_t <= e(2^(t-j)), the largest per-selection
                # epsilon of selection_epsilon: lambda_t = max_j 2 Delta_{t,j} / e(2^(t-j)).
                lam = max(2.0 * d_t[j] / selection_epsilon(1 << (t - j), budget, relation)
                          for j in range(t + 1)) * _SCALE_SAFETY
            elif budget.is_private:
                # A record at depth j affects the 2^(t-j) leaves below its vertex; each
                # selection is (2 Delta / lambda)-DP (non-monotone report-noisy-min), so
                # basic composition needs lambda_t >= 2^(t-j) 2 Delta_{t,j} / eps.
                lam = max((1 << (t - j)) * 2.0 * d_t[j] for j in range(t + 1))
                lam = lam / budget.epsilon * _SCALE_SAFETY
            if budget.is_private:
                scales.append(lam)
                # Basic-composition epsilon of each vertex's 2^(t-j) selections.
                eps_vertex.append(tuple((1 << (t - j)) * 2.0 * d_t[j] / lam
                                        for j in range(t + 1)))
            else:
                scales.append(0.0)
                eps_vertex.append(tuple(0.0 for _ in range(t + 1)))
        return {
            "difference_clips": tuple(clips),
            "score_sensitivity": tuple(sens),
            "laplace_scales": tuple(scales),
            "vertex_epsilon": tuple(eps_vertex),
            "smoothness_l1": beta1,
            "diameter_l1": D,
        }

    def _n_candidates(self, spec: ProblemSpec) -> int:
        m = spec.n_params * spec.n_outputs
        return m if isinstance(spec.constraint, Simplex) else 2 * m

    def _utility_bound(self, spec: ProblemSpec, budget: Budget, schedule: TreeSchedule,
                       L: float) -> float:
        """The three-term bound of Theorem 6's proof (unit constants, pure-DP scales), for
        choosing T."""
        consts = self._schedule_constants(spec, budget, schedule, L)
        # The objective's l1-smoothness adds alpha (||alpha (w - w')||_inf <= alpha ||w - w'||_1).
        D, beta1 = consts["diameter_l1"], consts["smoothness_l1"] + spec.alpha
        log_m = math.log(max(self._n_candidates(spec), 2))
        sampling = D * (L + beta1 * D) * math.sqrt(log_m / schedule.batch_size)
        frank_wolfe = beta1 * D * D / (1 << schedule.n_phases)
        selection = consts["laplace_scales"][-1] * log_m
        return sampling + frank_wolfe + selection

    def choose_schedule(self, spec: ProblemSpec, budget: Budget, L: float) -> TreeSchedule:
        """The schedule from ``n_phases``/``batch_size`` or the default rule (Notes)."""
        n = spec.n_samples
        if self.n_phases is not None:
            return tree_schedule(n, self.n_phases, self.batch_size)
        best: tuple[float, TreeSchedule] | None = None
        for T in range(1, MAX_AUTO_PHASES + 1):
            try:
                schedule = tree_schedule(n, T, self.batch_size)
            except IncompatibleSolverError:
                break
            if budget.is_private:
                value = self._utility_bound(spec, budget, schedule, L)
            else:
                # No selection noise: Theorem 6's rule (T balances the Frank-Wolfe error
                # beta_1 D^2 / 2^T against the selection error, b fixed from n) takes the
                # most phases the data allows. The worst-case sampling term would stop at
                # 6-30 steps, worse than the zero predictor on real data (see Notes).
                value = 1.0 / (1 << T)
            if best is None or value < best[0]:
                best = (value, schedule)
        if best is None:
            return tree_schedule(n, 1, self.batch_size)  # raises with the explanation
        return best[1]

    # -- plan --------------------------------------------------------------------------------
    def plan(self, spec: ProblemSpec, budget: Budget, accountant: str, relation: str) -> Plan:
        if accountant == "pld" and budget.is_private and budget.delta == 0:
            raise IncompatibleSolverError(
                "accountant='pld' composes Frank-Wolfe's selections for delta > 0; with "
                "delta=0 use accounting='pure' (or 'auto')."
            )
        L = self.lipschitz_inf(spec)
        # The schedule is chosen with the pure-DP scales whatever the accountant, so that
        # delta > 0 keeps the same schedule with a smaller (never larger) noise per phase.
        schedule = self.choose_schedule(spec, budget, L)
        consts = self._schedule_constants(spec, budget, schedule, L, accountant, relation)
        self._check_scores_register_noise(spec, consts)
        if budget.is_private and accountant == "pld":
            event = self._pld_ledger(consts, schedule, budget, relation)
        elif budget.is_private:
            # Parallel composition over the vertices (each record lies in one vertex set,
            # drawn from a data-independent permutation): the guarantee is that of the
            # worst vertex, whose 2^(t-j) leaf selections compose sequentially.
            # vertex_epsilon[t-1][j] is already the composition of the 2^(t-j) leaves.
            worst = max(((t, j) for t in range(1, schedule.n_phases + 1)
                         for j in range(t + 1)),
                        key=lambda tj: consts["vertex_epsilon"][tj[0] - 1][tj[1]])
            t, j = worst
            event: dpe.DpEvent = dpe.SelfComposedDpEvent(
                PureDpEvent(consts["vertex_epsilon"][t - 1][j] / (1 << (t - j))), 1 << (t - j)
            )
        else:
            event = dpe.NonPrivateDpEvent()
        settings = {
            **consts,
            # Laplace scales per phase, also under the name the conformance suite reads.
            "sigma": consts["laplace_scales"],
            "clip_norm": L,
            "n_phases": schedule.n_phases,
            "batch_size": schedule.batch_size,
            "vertex_sizes": schedule.sizes,
            "n_used": schedule.n_used,
            "n_candidates": self._n_candidates(spec),
            "mechanism": "laplace_report_noisy_min" if budget.is_private else "none",
        }
        return _legacy_plan(n_iter=schedule.n_steps, event=event, accountant=accountant,
                    relation=relation, settings=settings)

    @staticmethod
    def _check_scores_register_noise(spec: ProblemSpec, consts: dict) -> None:
        """Refuse schedules whose scores could overflow or swamp the selection noise.

        Phase ``t``'s estimate has l-inf norm at most ``L + sum_j C_{t,j}`` (the root mean
        and one clipped difference mean per depth) and ``||alpha W||_inf <= alpha r``, so
        every score ``r (v + alpha W)_i`` lies within ``S_t = r (L + sum_j C_{t,j} +
        alpha r)``. Report-noisy-min needs ``S_t`` finite (an infinite or NaN score wins
        ``argmin`` whatever the noise) and the Laplace noise to register in
        ``S_t + noise``: floats near ``S_t`` are ``S_t 2^-52`` apart, and a public offset
        above ``2^32 lambda_t`` would round noise of scale ``lambda_t`` to a few of those
        steps, ordering tied candidates by the data alone. Decided from public constants.
        """
        r = float(spec.constraint.radius)
        for t, (clips, lam) in enumerate(zip(consts["difference_clips"],
                                             consts["laplace_scales"], strict=True), start=1):
            with np.errstate(over="ignore"):
                bound = r * (float(np.sum(clips)) + spec.alpha * r)
            if not math.isfinite(bound) or (lam > 0 and bound > 2.0**32 * lam):
                raise IncompatibleSolverError(
                    f"Frank-Wolfe phase {t}: the vertex scores can reach {bound:.3g}, "
                    f"against selection noise of scale {lam:.3g}; rounding would swallow "
                    "the noise (or the scores overflow). Use a smaller radius, alpha, "
                    "clip_norm or data_norm, or more data per vertex."
                )

    @staticmethod
    def _pld_ledger(consts: dict, schedule: TreeSchedule, budget: Budget, relation: str
                    ) -> dpe.DpEvent:
        """The worst vertex's selections as randomized-response events (PLD ledger).

        A vertex at distance ``m = t - j`` above the leaves has ``2^m`` selections of
        epsilon ``2 Delta_{t,j} / lambda_t``; for a fixed ``m`` the spent epsilon grows with
        it, so the worst vertex is among the ``T + 1`` per-``m`` maxima, compared by PLD.
        """
        best: dict[int, float] = {}
        for t in range(1, schedule.n_phases + 1):
            lam = consts["laplace_scales"][t - 1]
            for j in range(t + 1):
                e = 2.0 * consts["score_sensitivity"][t - 1][j] / lam
                best[t - j] = max(best.get(t - j, 0.0), e)
        events = [_selections_event(1.0 / e, 1 << m) for m, e in best.items()]
        return max(events, key=lambda ev: epsilon_spent(ev, budget.delta, accountant="pld",
                                                       relation=relation))

    # -- run ---------------------------------------------------------------------------------
    def release_noise_scale(self, plan: Plan) -> float:
        # The release is a convex combination of vertices +-r e_j with public weights: no
        # noise is added to it (the Laplace noise only decides discrete selections), so
        # there are no low-order bits of a noisy float to hide and no grid to snap to.
        return 0.0

    def _run(self, problem: Problem, plan: Plan, noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        s = plan.settings
        constraint = spec.constraint
        shape = (spec.n_params, spec.n_outputs)
        T, sizes = s["n_phases"], s["vertex_sizes"]
        L, clips, scales = s["clip_norm"], s["difference_clips"], s["laplace_scales"]
        alpha = spec.alpha
        # The vertex sets are consecutive blocks of this permutation, in DFS order: drawn
        # before the data is read, each record in at most one vertex.
        order = noise.permutation(spec.n_samples)
        norms_inf = problem.row_norms_in(math.inf)
        W = constraint.feasible_point(shape).astype(float)
        cursor = 0
        step = 0

        def take(size: int) -> np.ndarray:
            nonlocal cursor
            index = np.sort(order[cursor:cursor + size])  # sorted: faster CSR slicing
            cursor += size
            return index

        def leaf(v: np.ndarray, lam: float) -> None:
            nonlocal W, step
            step += 1
            g = v + alpha * W if alpha else v  # the regulariser's exact gradient
            w = _vertex(constraint, report_noisy_min(vertex_scores(constraint, g), lam, noise),
                        shape)
            eta = 2.0 / (step + 1.0)
            W = (1.0 - eta) * W + eta * w

        def visit(t: int, j: int, v: np.ndarray, W_parent: np.ndarray, right: bool) -> None:
            # Left child: the parent's estimate at the parent's iterate (no step between).
            if right:
                index = take(sizes[j])
                v = v + vertex_contribution(problem, index, W, W_parent, clips[t - 1][j],
                                            sizes[j], norms_inf)
            if j == t:
                leaf(v, scales[t - 1])
                return
            here = W
            visit(t, j + 1, v, here, False)
            visit(t, j + 1, v, here, True)

        for t in range(1, T + 1):
            index = take(sizes[0])
            v = vertex_contribution(problem, index, W, None, L, sizes[0], norms_inf)
            here = W
            visit(t, 1, v, here, False)
            visit(t, 1, v, here, True)
        return W
