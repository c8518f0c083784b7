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
from numbers import Integral

import numpy as np
from dp_accounting import dp_event as dpe

from skdp._params import OPTIONAL_COUNT, OPTIONAL_POSITIVE, store_params
from skdp._sklearn_compat import Interval
from skdp.exceptions import IncompatibleSolverError
from skdp.privacy.accounting import PureDpEvent, check_sensitivity, epsilon_spent
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import BaseDPSolver, Plan, Problem, ProblemSpec
from skdp.solvers._capabilities import Capabilities
from skdp.solvers._frank_wolfe_tree import (
    TreeSchedule,
    _movement_bounds,
    _selections_event,
    _vertex,
    report_noisy_min,
    selection_epsilon,
    tree_schedule,
    vertex_contribution,
    vertex_scores,
)

__all__ = [
    "FrankWolfePlan",
    "PrivateFrankWolfe",
]

# Largest automatic number of phases: phase t has 2^t leaves (Frank-Wolfe steps), each
# costing O(d) for the noisy scores, so 2^(T+1) leaves in all.
MAX_AUTO_PHASES = 12
# Largest user-given number of phases (2^21 leaves).
MAX_PHASES = 20
# Laplace scales are raised by this factor so that rounding never puts the recomputed
# epsilon above the budget.
_SCALE_SAFETY = 1.0 + 1e-12


@dataclass(frozen=True, kw_only=True)
class FrankWolfePlan(Plan):
    """The public schedule and noise of one private Frank-Wolfe run.

    Per-phase tuples are indexed ``[t - 1]`` (phase ``t = 1..T``), per-vertex ones
    ``[t - 1][j]`` (depth ``j = 0..t``; ``j = 0`` the root).

    Attributes
    ----------
    difference_clips : tuple of tuple of float
        ``C_{t,j}``: the l-inf clip of root gradients (``j = 0``: ``L``) and of gradient
        differences (``j >= 1``).
    score_sensitivity : tuple of tuple of float
        ``Delta_{t,j} = 2 r C_{t,j} / b_j``: replace-one sensitivity of every vertex score.
    laplace_scales : tuple of float
        ``lambda_t``, the report-noisy-min scale of phase ``t`` (0 without privacy).
    vertex_epsilon : tuple of tuple of float
        Basic-composition epsilon of the ``2^(t-j)`` selections below a vertex.
    smoothness_l1 : float
        ``beta_1 = c X^2``, the l1-smoothness of one record's loss.
    diameter_l1 : float
        ``D = 2 r``, the l1 diameter of the polytope.
    sigma : tuple of float
        The Laplace scales again, under the name the conformance suite reads.
    clip_norm : float
        ``L``, the l-inf clip of root gradients.
    n_phases : int
        ``T``.
    batch_size : int
        ``b``, the root sample size.
    vertex_sizes : tuple of int
        ``b_j = floor(b / 2^j)``, records of a sampling vertex at depth ``j``.
    n_used : int
        Records used in all (each in exactly one vertex).
    n_candidates : int
        Vertices of the polytope (``2 p K`` for the l1 ball, ``p K`` for the simplex).
    mechanism : {"laplace_report_noisy_min", "none"}
        The selection mechanism.
    """

    difference_clips: tuple[tuple[float, ...], ...]
    score_sensitivity: tuple[tuple[float, ...], ...]
    laplace_scales: tuple[float, ...]
    vertex_epsilon: tuple[tuple[float, ...], ...]
    smoothness_l1: float
    diameter_l1: float
    sigma: tuple[float, ...]
    clip_norm: float
    n_phases: int
    batch_size: int
    vertex_sizes: tuple[int, ...]
    n_used: int
    n_candidates: int
    mechanism: str


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
        Number of phases ``T`` (``2^(T+1) - 2`` Frank-Wolfe steps, ``T <= 20``).
        Default: the ``T <= 12`` minimising the bound in the proof of Theorem 6 with unit
        constants (the largest feasible ``T`` without privacy; docs/algorithms/
        frank_wolfe.md, "The schedule").
    batch_size : int, optional
        Root sample size ``b`` (``>= 2^T``). Default: the largest ``b`` whose schedule
        uses at most ``n`` records.
    clip_norm : float, optional
        Per-example l-infinity clip ``L`` of root gradients. Default: the loss bound
        ``sup|phi'| * ||x||_inf`` on the ball (lossless).

    Notes
    -----
    **Privacy guarantee.** Pure epsilon-DP (``delta = 0``; also ``(epsilon, delta)``-DP
    for every ``delta``) under the replace-one relation, for every dataset. Rows are
    clipped to the public ``data_norm`` in l-infinity, labels to their public bound, root
    gradients to ``L`` and gradient differences to ``C_{t,j}`` (l-inf). Vertex record
    sets are consecutive blocks of a data-independent permutation, so each record is in
    exactly one vertex and moves the scores of the ``2^(t-j)`` leaves below it by at most
    ``Delta_{t,j} = 2 r C_{t,j} / b_j``. Laplace report-noisy-min of scale ``lambda_t``
    is ``2 Delta / lambda_t``-DP (non-monotone scores); basic composition over the leaves
    and parallel composition over the vertices give ``lambda_t = max_j 2^(t-j) 2
    Delta_{t,j} / epsilon``. Ledger: the worst vertex's selections as ``PureDpEvent``s
    (``"pure"`` or ``"basic"``). With ``delta > 0`` (accounting ``"pld"``, the ``"auto"``
    choice) the selections below a vertex compose optimally instead (randomized-response
    domination, :func:`selection_epsilon`), never with more noise.

    Reference: Asi, Feldman, Koren & Talwar, ICML 2021, Algorithm 3, Lemma 4.1 and
    Theorem 6, with the corrections of docs/algorithms/frank_wolfe.md (non-root score
    sensitivity doubled; disjoint vertex record sets; non-monotone report-noisy-min),
    where the difference clip, the schedule and the approximate-DP variant are derived.
    """

    name = "frank_wolfe"
    capabilities = Capabilities(
        algorithm=("private variance-reduced Frank-Wolfe, Asi-Feldman-Koren-Talwar 2021 "
                   "Alg. 3"),
        needs_delta=False, accounting_methods=("pure", "basic", "pld"), default_accounting="pure",
        constraints=("l1", "simplex"), bounded_constraint=True, intercept="constrained",
        secure=True, out_of_core=True,
        inexact_at_inf=("a public count of Frank-Wolfe phases, whose vertex steps converge "
                        "like O(1/T) (4.4e-3 excess risk on a 2000 x 5 logistic problem in "
                        "an l1 ball of radius 1)"),
    )

    def resolve_accounting(self, accounting: str, budget: Budget | None = None) -> str:
        """Resolve ``"auto"``: ``"pld"`` when the budget has ``delta > 0``, else ``"pure"``.

        PLD is the optimal composition of the selections (approximate DP); ``"pure"`` is
        their basic composition.

        Parameters
        ----------
        accounting : str
            ``"auto"`` or an accounting method (returned unchanged).
        budget : Budget or None, default=None
            The budget of the fit; ``None`` resolves to ``"pure"``.

        Returns
        -------
        str
            The accounting method used.
        """
        if (accounting == "auto" and budget is not None and budget.is_private
                and budget.delta > 0):
            return "pld"
        return super().resolve_accounting(accounting, budget)

    _parameter_constraints = {
        # n_phases <= MAX_PHASES: 2^(T+1) Frank-Wolfe steps.
        "n_phases": [Interval(Integral, 1, MAX_PHASES, closed="both"), None],
        "batch_size": OPTIONAL_COUNT,
        "clip_norm": OPTIONAL_POSITIVE,
    }

    def __init__(self, n_phases=None, batch_size=None, clip_norm=None):
        store_params(self, locals())

    # The declaration covers the constraint (a polytope with finitely many vertices: the
    # l1 ball or the simplex; l2/lp balls have a continuum of extreme points and no finite
    # candidate set with a known score sensitivity) and the intercept (every coefficient
    # inside the ball: a free intercept leaves no finite vertex set).

    # -- public constants -------------------------------------------------------------------
    def lipschitz_inf(self, spec: ProblemSpec) -> float:
        """Clip ``L`` of root gradients in l-inf (``clip_norm`` or the loss bound).

        Scores satisfy ``|x^T w_k| <= ||w_k||_1 ||x||_inf <= r X`` on the ball (and the
        simplex), so ``||phi'||_inf <= ||phi'||_2 <= sup_{|z| <= r X} ||phi'(z)||`` and
        ``||x phi'^T||_inf = ||x||_inf ||phi'||_inf``.

        <<spec_parameters>>

        Returns
        -------
        float
            ``L``: the smaller of ``clip_norm`` and the loss's bound.

        Raises
        ------
        IncompatibleSolverError
            If the loss's gradients are unbounded on this problem and no ``clip_norm``
            is set.
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
                            L: float, accounting: str = "pure",
                            relation: str = "replace_one") -> dict:
        """Clips, sensitivities and Laplace scales of every (phase, depth).

        ``accounting="pure"``/``"basic"``: the selections below a vertex compose by basic
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
            if budget.is_private and accounting == "pld":
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
        return m if spec.constraint.kind == "simplex" else 2 * m

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
        """The schedule from ``n_phases``/``batch_size`` or the default rule (Notes).

        Parameters
        ----------
        <<spec>>
        <<budget>>
        L : float
            The l-inf gradient clip (:meth:`lipschitz_inf`).

        Returns
        -------
        TreeSchedule
            The phases, the batch size and the vertex sizes: the declared ones, or the
            phase count (up to the largest the data allows) that minimises Theorem 6's
            bound, from public quantities only.
        """
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
    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str
             ) -> FrankWolfePlan:
        """Fix the tree schedule, the clips and the Laplace scales of the selections.

        <<plan_parameters>>

        Returns
        -------
        FrankWolfePlan
            The schedule and, per phase, the clips, the score sensitivities and the
            Laplace scale of report-noisy-min; its event is the worst vertex's
            selections.

        Raises
        ------
        IncompatibleSolverError
            If ``accounting="pld"`` with ``delta = 0``, or the scores could swamp the
            selection noise.
        """
        if accounting == "pld" and budget.is_private and budget.delta == 0:
            raise IncompatibleSolverError(
                "accounting='pld' composes Frank-Wolfe's selections for delta > 0; with "
                "delta=0 use accounting='pure' (or 'auto')."
            )
        L = self.lipschitz_inf(spec)
        # The schedule is chosen with the pure-DP scales whatever the accounting method, so that
        # delta > 0 keeps the same schedule with a smaller (never larger) noise per phase.
        schedule = self.choose_schedule(spec, budget, L)
        consts = self._schedule_constants(spec, budget, schedule, L, accounting, relation)
        self._check_scores_register_noise(spec, consts)
        if budget.is_private and accounting == "pld":
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
        return FrankWolfePlan(
            n_iter=schedule.n_steps, event=event, accounting=accounting, relation=relation,
            **consts,
            # Laplace scales per phase, also under the name the conformance suite reads.
            sigma=consts["laplace_scales"], clip_norm=L, n_phases=schedule.n_phases,
            batch_size=schedule.batch_size, vertex_sizes=schedule.sizes,
            n_used=schedule.n_used, n_candidates=self._n_candidates(spec),
            mechanism="laplace_report_noisy_min" if budget.is_private else "none")

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
        return max(events, key=lambda ev: epsilon_spent(ev, budget.delta, accounting="pld",
                                                       relation=relation))

    # -- run ---------------------------------------------------------------------------------
    def release_noise_scale(self, plan: FrankWolfePlan) -> float:
        """No noise is added to the release: 0.

        <<release_parameters>>

        Returns
        -------
        float
            0: the release is a convex combination of vertices with public weights.
        """
        # The release is a convex combination of vertices +-r e_j with public weights: no
        # noise is added to it (the Laplace noise only decides discrete selections), so
        # there are no low-order bits of a noisy float to hide and no grid to snap to.
        return 0.0

    def _run(self, problem: Problem, plan: FrankWolfePlan, noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        constraint = spec.constraint
        shape = (spec.n_params, spec.n_outputs)
        T, sizes = plan.n_phases, plan.vertex_sizes
        L, clips, scales = plan.clip_norm, plan.difference_clips, plan.laplace_scales
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
            problem.advance()

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
