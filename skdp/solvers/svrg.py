"""DP-SVRG (Wang, Ye & Xu 2017, Algorithm 1), with a per-epoch noisy snapshot."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe

from skdp._params import OPTIONAL_COUNT, OPTIONAL_POSITIVE, store_params
from skdp.geometry import Unconstrained
from skdp.privacy.accounting import (
    add_remove_budget,
    analytic_gaussian_multiplier,
    calibrate_noise_multiplier,
    check_sensitivity,
    gaussian_event,
    subsampled_gaussian_event,
)
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import BaseDPSolver, Plan, Problem, ProblemSpec
from skdp.solvers._capabilities import Capabilities
from skdp.solvers._problem import clip_unless_lossless
from skdp.solvers._sampling import BatchSampling
from skdp.solvers.mirror_descent import batch_block, noise_block

__all__ = ["DPSVRG", "SVRGPlan", "svrg_event"]

MAX_AUTO_EPOCHS = 40
# DP-SVRG++ doubles its epochs: 2^16 inner steps at least already in its last epoch.
MAX_AUTO_EPOCHS_PP = 16


def svrg_event(
    z: float,
    n_samples: int,
    batch_size: int,
    epoch_lengths: tuple[int, ...],
    snapshot_ratio: float,
    sampling: str,
    accounting: str,
    relation: str,
) -> dpe.DpEvent:
    """Ledger of DP-SVRG(++) for inner noise multiplier ``z = sigma_in / Delta_in``.

    Epoch ``s`` releases the snapshot gradient once with noise
    ``sigma_s = sigma_in / sqrt(m_s)``, i.e. multiplier ``z / (sqrt(m_s) * ratio)`` with
    ``ratio = Delta_snap / Delta_in``, then ``m_s`` subsampled corrections with multiplier
    ``z``. The inner events of all epochs are identical and are merged into one
    self-composition (one RDP evaluation).
    """
    snapshots = [
        gaussian_event(z / (math.sqrt(m) * snapshot_ratio), 1.0,
                       accounting=accounting, relation=relation)
        for m in epoch_lengths
    ]
    inner = subsampled_gaussian_event(
        z, 1.0, n_samples=n_samples, batch_size=batch_size, sampling=sampling,
        accounting=accounting, relation=relation,
    )
    return dpe.ComposedDpEvent(snapshots + [dpe.SelfComposedDpEvent(inner, sum(epoch_lengths))])


@dataclass(frozen=True, kw_only=True)
class SVRGPlan(Plan):
    """Constants of a DP-SVRG or DP-SVRG++ run, fixed before any data is read.

    Attributes
    ----------
    epoch_lengths : tuple of int
        Inner steps ``m_s`` of every epoch (``n_iter`` is their sum).
    batch_size : int
        Inner mini-batch size ``b`` (the expected size for Poisson sampling).
    noise_multiplier : float
        ``z = sigma_inner / sensitivity_inner``, solved by the calibration.
    sigma_inner : float
        Per-coordinate noise std of every inner correction (gradient units).
    sigma_snapshots : tuple of float
        Per-coordinate noise std of each epoch's snapshot gradient,
        ``sigma_inner / sqrt(m_s)``.
    sensitivity_inner : float
        l2 sensitivity of one batch-mean correction (``2C/b``; ``C/b`` under add/remove
        for Poisson batches).
    sensitivity_snapshot : float
        l2 sensitivity of the snapshot gradient (``2G/n``; ``G/n`` for Poisson batches).
    clip_norm : float
        Per-example gradient clip ``G``.
    correction_clip : float
        Per-example correction clip ``C``.
    step_size : float
        Step size ``eta``.
    """

    epoch_lengths: tuple[int, ...]
    batch_size: int
    noise_multiplier: float
    sigma_inner: float
    sigma_snapshots: tuple[float, ...]
    sensitivity_inner: float
    sensitivity_snapshot: float
    clip_norm: float
    correction_clip: float
    step_size: float


class DPSVRG(BatchSampling, BaseDPSolver):
    """DP-SVRG: proximal SVRG with a noisy snapshot gradient and noisy mini-batch corrections.

    Epoch ``s`` (of ``T``) releases ``v~_s = mean_i clip_G(grad f(w~; z_i)) + N(0,
    sigma_s^2 I)`` once, then runs ``m`` inner steps
    ``v_t = mean_{i in B_t} clip_C(grad f(x_{t-1}; z_i) - grad f(w~; z_i)) + v~_s +
    N(0, sigma_in^2 I)``, ``x_t = Proj(prox_{eta alpha/2 ||.||^2}(x_{t-1} - eta v_t))``;
    the next snapshot is the average of the epoch's iterates (Algorithm 1).

    Parameters
    ----------
    n_epochs : int, optional
        Number of epochs ``T``. Default: Theorem 4.2's ``t = ceil(log2(Delta0 / floor))``;
        when private and ``t > 6``, ``ceil(t / 2) + 3`` (measured more accurate and
        faster); capped at 40 (see docs/algorithms/svrg.md).
    inner_steps : int, optional
        Inner steps per epoch ``m``. Default ``ceil(n / batch_size)`` (one pass of inner
        samples per epoch).
    batch_size : int, optional
        Inner mini-batch size ``b`` (``b = 1`` is the paper's algorithm). Default
        ``ceil(sqrt(n))``: per-step noise on the mean falls as ``1/b``.
    step_size : float, optional
        Default ``1 / (12 beta)``, the largest step Theorem 4.2 allows.
    clip_norm : float, optional
        Per-example gradient clip ``G``. Default: lossless ``sup|phi'| * data_norm``.
    correction_clip : float, optional
        Clip ``C`` of the per-example correction ``d_i = grad f(x; z_i) - grad f(w~;
        z_i)``. Default and maximum: ``min(2G, diam(phi') * data_norm)``, a bound every
        correction already satisfies.
    sampling : {"without_replacement", "poisson"}, default="without_replacement"
        Inner batches: uniform subsets of exactly ``b`` records (RDP accounting), or
        Poisson sampling with rate ``b/n`` (PLD or RDP accounting, through group privacy;
        see docs/algorithms/svrg.md).

    Notes
    -----
    **Privacy guarantee.** Replace-one ``(epsilon, delta)``-DP, accounted by RDP by
    default. The snapshot gradient (sensitivity ``2G/n``) is released once per epoch with
    noise ``sigma_in / sqrt(m)`` and reused; each inner correction is clipped to ``C``,
    and its mean over a batch of exactly ``b`` records drawn without replacement has
    sensitivity ``2C/b`` (``SampledWithoutReplacementDpEvent``). The ledger composes the
    ``T`` snapshot Gaussians with the ``T m`` subsampled Gaussians, and one noise
    multiplier is solved by ``dp_accounting``. With ``sampling="poisson"`` the ledger is
    accounted under add/remove (PLD by default) and converted to replace-one by group
    privacy. Averages, the prox step and the projection are post-processing; no step
    size is computed from private data.

    This release scheme corrects gaps in the paper's proof (listed in
    docs/algorithms/svrg.md, with the accounting details and the default epoch count).
    Assumptions: ``alpha > 0`` (strongly convex objective, for the utility theorem and
    the default schedule); ``n`` public.

    Reference: Wang, Ye & Xu, NeurIPS 2017, Algorithm 1, Theorems 4.1 and 4.2.
    """

    name = "svrg"
    capabilities = Capabilities(
        algorithm="DP-SVRG, Wang-Ye-Xu 2017 Alg. 1, Thms 4.1-4.2",
        constraints=("none", "l2", "l1", "lp", "simplex"), strongly_convex=True, secure=True,
        inexact_at_inf=("Theorem 4.2 counts epochs down to the privacy floor, capped at 40; "
                        "without noise 40 epochs of the step 1/(12 beta) can stop short of "
                        "the optimum (4e-4 excess risk on a 2000 x 5 logistic problem)"),
    )
    #: Theorem 4.2: eta <= 1 / (12 L).
    step_divisor = 12.0
    _parameter_constraints = {
        "n_epochs": OPTIONAL_COUNT,
        "inner_steps": OPTIONAL_COUNT,
        "batch_size": OPTIONAL_COUNT,
        "step_size": OPTIONAL_POSITIVE,
        "clip_norm": OPTIONAL_POSITIVE,
        "correction_clip": OPTIONAL_POSITIVE,
        **BatchSampling._parameter_constraints,
    }

    def __init__(
        self,
        n_epochs=None,
        inner_steps=None,
        batch_size=None,
        step_size=None,
        clip_norm=None,
        correction_clip=None,
        sampling="without_replacement",
    ):
        store_params(self, locals())

    # -- schedule ------------------------------------------------------------------------
    def _batch_size(self, spec: ProblemSpec) -> int:
        # Default b = ceil(sqrt(n)): the per-step noise on the mean falls as 1/b while an
        # epoch of m = n/b steps keeps sqrt(n) noisy releases.
        if self.batch_size is None:
            b = math.ceil(math.sqrt(spec.n_samples))
        else:
            b = int(self.batch_size)
        return max(1, min(b, spec.n_samples))

    def epoch_lengths(self, spec: ProblemSpec, budget: Budget) -> tuple[int, ...]:
        """Inner steps of every epoch (public).

        <<epochs_parameters>>

        Returns
        -------
        tuple of int
            ``T`` epochs (``n_epochs``, else Theorem 4.2's halving count, trimmed when
            private and capped at 40) of ``m`` inner steps each.
        """
        b = self._batch_size(spec)
        m = self.inner_steps if self.inner_steps is not None else math.ceil(spec.n_samples / b)
        if self.n_epochs is not None:
            n_epochs = int(self.n_epochs)
        else:
            # Theorem 4.2: each epoch halves E[F - F*]; reduce it from its public bound to
            # the privacy floor.
            ratio = spec.gap_reduction(budget, self.gradient_clip(spec))
            n_epochs = max(math.ceil(math.log2(ratio)), 1)
            if budget.is_private:
                # Every epoch adds noise (sigma_in grows as sqrt(T)); beyond 6 epochs the
                # theorem's halving per epoch over-counts what one pass achieves: half
                # of the extra epochs measured best (docs/algorithms/svrg.md, Defaults).
                n_epochs = min(n_epochs, math.ceil(n_epochs / 2) + 3)
            n_epochs = min(n_epochs, MAX_AUTO_EPOCHS)
        return (int(m),) * n_epochs

    def correction_bound(self, spec: ProblemSpec) -> float:
        """Largest per-example correction norm ``C``.

        ``d_i = (c_i(x) - c_i(w~)) x_i`` with ``c`` the clipped loss derivative; clipping to
        ``G`` maps ``phi'`` into a set of diameter ``min(diam(phi'), 2G/||x_i||)``, so
        ``||d_i|| <= min(diam(phi') X, 2G)``.

        <<spec_parameters>>

        Returns
        -------
        float
            ``C``: that bound, or ``correction_clip`` if smaller.
        """
        g = self.gradient_clip(spec)
        bound = min(spec.loss.derivative_diameter * spec.row_bound(2.0), 2.0 * g)
        return bound if self.correction_clip is None else min(float(self.correction_clip), bound)

    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str
             ) -> SVRGPlan:
        """Fix the epochs, the batch size, the clips and one noise multiplier.

        The multiplier is solved by the accounting method for the ledger of the ``T``
        snapshot Gaussians and the subsampled inner releases.

        <<plan_parameters>>

        Returns
        -------
        SVRGPlan
            The epoch lengths, batch size, step size, clips, sensitivities and noise of
            the snapshots and the inner steps.
        """
        n = spec.n_samples
        b = self._batch_size(spec)
        lengths = self.epoch_lengths(spec, budget)
        g = self.gradient_clip(spec)
        c = self.correction_bound(spec)
        poisson = self.sampling == "poisson"
        if poisson:
            # Poisson batches are accounted under add/remove (the mechanism with the public
            # constants n and b, applied to any multiset), where adding or removing a record
            # moves the snapshot sum by G and a batch sum by C; replace-one = remove + add,
            # so the add/remove budget is (eps/2, delta/(1+e^(eps/2))) (group privacy).
            event_relation, event_budget = "add_remove", add_remove_budget(budget)
            delta_snap, delta_in = g / n, c / b
        else:
            # Replacing a record moves a sum of norm-bounded vectors by twice the bound.
            event_relation, event_budget = relation, budget
            delta_snap, delta_in = 2.0 * g / n, 2.0 * c / b
        check_sensitivity(delta_snap, "snapshot sensitivity")
        check_sensitivity(delta_in, "inner (correction) sensitivity")
        ratio = delta_snap / delta_in
        args = (n, b, lengths, ratio, self.sampling, accounting, event_relation)
        start = None
        if budget.is_private:
            # A snapshot's multiplier is z / (sqrt(m_s) ratio), far below z when the
            # correction clip is small, and the PLD engine's memory explodes at tiny
            # multipliers. The T snapshot releases together are exactly one Gaussian of
            # multiplier z / (ratio sqrt(sum m_s)) (Gaussian composition), which must be
            # at least z1, the exact single-Gaussian multiplier of the budget (no sound
            # accounting method beats it): z >= z1 ratio sqrt(sum m_s). The search starts there
            # when that is above 1 (below, at 1 as before).
            start = max(1.0, analytic_gaussian_multiplier(event_budget, 1)
                        * math.sqrt(sum(lengths)) * ratio)
        z = calibrate_noise_multiplier(svrg_event, args,
                                       event_budget if budget.is_private else budget,
                                       accounting=accounting, relation=event_relation,
                                       start=start)
        sigma_in = z * delta_in
        if budget.is_private:
            event = svrg_event(z, *args)
        else:
            event = dpe.NonPrivateDpEvent()
        step = self.step_size if self.step_size is not None else (
            1.0 / (self.step_divisor * spec.smoothness))
        return SVRGPlan(
            n_iter=sum(lengths),
            event=event,
            accounting=accounting,
            relation=relation,
            via_add_remove=poisson,
            epoch_lengths=lengths,
            batch_size=b,
            noise_multiplier=z,
            sigma_inner=sigma_in,
            sigma_snapshots=tuple(sigma_in / math.sqrt(m) for m in lengths),
            sensitivity_inner=delta_in,
            sensitivity_snapshot=delta_snap,
            clip_norm=g,
            correction_clip=c,
            step_size=float(step),
        )

    def release_noise_scale(self, plan: SVRGPlan) -> float:
        """Noise scale of the released snapshot, ``eta sigma_in / sqrt(m)``.

        <<release_parameters>>

        Returns
        -------
        float
            A public lower bound on the per-coordinate noise of the release (the average
            of the last epoch's ``m`` noisy inner iterates).
        """
        # The released snapshot averages the last epoch's m inner iterates, each step
        # adding eta * N(0, sigma_in^2): at least eta sigma_in / sqrt(m) per coordinate.
        return plan.step_size * plan.sigma_inner / math.sqrt(plan.epoch_lengths[-1])

    # -- the algorithm -------------------------------------------------------------------
    #: DP-SVRG restarts each epoch at the snapshot; DP-SVRG++ continues from the last iterate.
    restart_at_snapshot = True

    def _run(self, problem: Problem, plan: SVRGPlan, noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        n, p, alpha = spec.n_samples, spec.n_penalized, spec.alpha
        step, g = plan.step_size, plan.clip_norm
        shape = (spec.n_params, spec.n_outputs)
        shrink = 1.0 / (1.0 + step * alpha)  # prox of (eta alpha / 2) ||.||^2
        # The inner noise of up to `block` steps is drawn in one call (about 2 MB), the
        # batches of up to `batches` of those steps in one call (mirror_descent.batch_block).
        block = noise_block(spec.n_params * spec.n_outputs)
        batches = batch_block(plan.batch_size, n * spec.n_params)
        batch = _InnerBatches(problem, plan, self.sampling)
        # The projection onto an unconstrained set is the identity (skipped).
        unconstrained = type(spec.constraint) is Unconstrained
        snapshot = np.zeros(shape)
        x = snapshot
        for m, sigma_snap in zip(plan.epoch_lengths, plan.sigma_snapshots, strict=True):
            coef_snap = np.empty((n, spec.n_outputs))
            v_snap = problem.clipped_gradient(snapshot, g, out_coefficients=coef_snap,
                                              passes=len(plan.epoch_lengths))
            v_snap += noise.gaussian(shape, sigma_snap)
            if self.restart_at_snapshot:
                x = snapshot
            total = np.zeros(shape)
            for first in range(0, m, block):
                steps = min(block, m - first)
                # N(0, sigma_in^2 I) of each of the next `steps` corrections, drawn before
                # their batches (independent of the data and of each other).
                inner_noise = noise.gaussian((steps, *shape), plan.sigma_inner)
                # The data-independent part of each step, eta (v~ + noise), in one pass.
                inner_noise += v_snap
                inner_noise *= step
                pending: list = []
                for t in range(steps):
                    if t % batches == 0:
                        # The batches of the next steps of the block, before those
                        # steps (data-independent; each with the law of one per-step
                        # draw), with their labels and snapshot coefficients.
                        pending = batch.draw_steps(noise, min(batches, steps - t),
                                                   coef_snap)
                    # eta v = eta mean_{i in B} clip_C(grad_i(x) - grad_i(w~))
                    #         + eta (v~ + noise).
                    v = batch.step_correction(x, step, *pending[t % batches])
                    v += inner_noise[t]
                    np.subtract(x, v, out=v)
                    x = v
                    if unconstrained:
                        x[:p] *= shrink
                    else:
                        x[:p] = spec.constraint.project(shrink * x[:p])
                    total += x
                problem.advance(steps)
            snapshot = total / m
        return snapshot


class _InnerBatches:
    """The inner mini-batch corrections of one DP-SVRG(++) run.

    :meth:`draw_steps` draws the batches of a block of steps from the
    :class:`NoiseSource` (uniform ``b``-subsets without replacement, or Poisson at rate
    ``b/n``; data-independent); :meth:`step_correction` returns ``eta`` times
    ``(1/b) sum_{i in B} clip_C(c_i(x) - c_i(w~)) x'_i`` with ``c_i`` the clipped loss
    derivative (public denominator ``b``). For dense rows the clipping factor ``s_i`` and
    the intercept ``c`` of the augmented rows ``x'_i = [s_i x_i, c]`` are applied to the
    ``b x K`` scores and coefficients, as :meth:`Problem.scores` and
    :meth:`Problem.gradient_sum` do, without their per-call checks; sparse rows use those
    methods. Clips that public facts prove lossless are skipped (same result); dense rows
    none of which was clipped then take an unclipped fast path.
    """

    def __init__(self, problem: Problem, plan: SVRGPlan, sampling: str) -> None:
        self.problem = problem
        spec = problem.spec
        self.n, self.b = spec.n_samples, plan.batch_size
        self.n_steps = plan.n_iter
        self.poisson = sampling == "poisson"
        self.clip, self.correction_clip = plan.clip_norm, plan.correction_clip
        self.d = problem.X.shape[1]
        self.dense = not sp.issparse(problem.X)
        self.loss = spec.loss
        self.intercept = problem.intercept
        # Public facts (no data read; Problem.clip_cannot_bind): the gradient clip G cannot
        # bind, and then neither can the correction clip C when C >= diam(phi') X, since
        # each correction is (phi'_i(x) - phi'_i(w~)) x'_i with unclipped derivatives.
        # The clipping arithmetic is then skipped (same result); a non-finite derivative
        # still takes the clipping path, which drops it.
        loss = spec.loss
        self.skip_clip = problem.clip_cannot_bind(self.clip)
        diameter, bound = loss.derivative_diameter, loss.derivative_bound_at(math.inf)
        self.skip_correction_clip = (
            self.skip_clip and 0.0 < diameter < math.inf and 0.0 < bound < math.inf
            and problem.clip_cannot_bind(self.correction_clip * bound / diameter))
        # Clipping factors of the rows (None: all 1, nothing to apply).
        self.scale = None if problem.unclipped else problem.row_scale
        # Dense rows, no clipping factor, both clips lossless: the unclipped fast path.
        self.fast = self.dense and problem.unclipped and self.skip_correction_clip

    def draw(self, noise: NoiseSource, count: int) -> Sequence[np.ndarray]:
        """The batches of ``count`` steps in one call: uniform ``b``-subsets
        (:meth:`NoiseSource.batches_without_replacement`, a ``count x b`` array) or
        Poisson batches at rate ``b/n`` (:meth:`NoiseSource.poisson_batches`), each with
        the law of one per-step draw."""
        if self.poisson:
            return noise.poisson_batches(self.n, self.b / self.n, count)
        return noise.batches_without_replacement(self.n, self.b, count)

    def draw_steps(self, noise: NoiseSource, count: int, coef_snap: np.ndarray) -> list:
        """:meth:`draw`, with each batch's labels and snapshot coefficients gathered in
        one call per block for equal-sized batches: ``(idx, Y[idx], coef_snap[idx])`` per
        step."""
        indices = self.draw(noise, count)
        if isinstance(indices, np.ndarray):
            labels, coefs = self._gather(indices, coef_snap)
            return list(zip(indices, labels, coefs, strict=True))
        return [(idx, self.problem.Y[idx], coef_snap[idx]) for idx in indices]

    def _gather(self, indices: np.ndarray, coef_snap: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
        """The labels and snapshot coefficients of a ``count x b`` array of batches, one
        call each (``count x b x K``)."""
        return self.problem.Y.take(indices, axis=0), coef_snap.take(indices, axis=0)

    def _dense_fast(self, x: np.ndarray, factor: float, rows: np.ndarray, Y: np.ndarray,
                    coef_snap: np.ndarray) -> np.ndarray | None:
        """``factor * sum_i (phi'_i(x) - c~_i) x'_i`` without clipping, or ``None`` when a
        derivative is not finite (the caller then takes the clipping path); the derivative
        overwrites the scratch scores (:meth:`GLMLoss.derivative_inplace`)."""
        d = self.d
        scores = rows @ x[:d]
        if self.intercept:
            scores += self.intercept * x[d]
        diff = self.loss.derivative_inplace(scores, Y)
        diff -= coef_snap
        sums = diff.sum(axis=0)
        # The snapshot coefficients are finite and a sum of bounded finite values is
        # finite, so the sum is finite exactly when every derivative is.
        if not math.isfinite(float(sums.sum())):
            return None
        diff *= factor
        v = np.empty_like(x)
        np.matmul(rows.T, diff, out=v[:d])
        if self.intercept:
            np.multiply(sums, self.intercept * factor, out=v[d])
        return v

    def _clip(self, D: np.ndarray, idx: np.ndarray, clip: float, skip: bool) -> np.ndarray:
        return clip_unless_lossless(D, self.problem.norms[idx], clip, skip)

    def step_correction(self, x: np.ndarray, step: float, idx: np.ndarray, Y: np.ndarray,
                        coef_snap: np.ndarray) -> np.ndarray:
        """``eta`` times the batch ``idx``'s mean clipped correction at ``x`` (a new
        array), inside the solver's run (whose floating-point warnings
        :meth:`~skdp.solvers.BaseDPSolver.solve` turns off); ``Y`` and ``coef_snap`` are the
        batch's labels and snapshot coefficients."""
        problem, b, loss = self.problem, self.b, self.loss
        factor = step / b  # eta times the mean, with the public denominator b
        if not self.dense:
            rows = problem.rows(idx)
            coef_x = self._clip(loss.derivative(problem.scores(x, rows), Y),
                                idx, self.clip, self.skip_clip)
            diff = self._clip(coef_x - coef_snap, idx, self.correction_clip,
                              self.skip_correction_clip)
            v = problem.gradient_sum(diff, rows)
            v *= factor
            return v
        d = self.d
        rows = problem.X.take(idx, axis=0)  # a gather, faster than X[idx]
        if self.fast:
            v = self._dense_fast(x, factor, rows, Y, coef_snap)
            if v is not None:
                return v
        scores = rows @ x[:d]
        scale = None if self.scale is None else self.scale[idx][:, None]
        if scale is not None:
            scores *= scale
        if self.intercept:
            scores += self.intercept * x[d]
        coef_x = loss.derivative(scores, Y)
        diff = coef_x - coef_snap
        sums = diff.sum(axis=0)
        # Both clips provably lossless: skip them unless a derivative is not finite (the
        # snapshot coefficients are finite, and a sum of bounded finite values is finite,
        # so the column sums are finite exactly when the derivatives are).
        if not (self.skip_correction_clip and math.isfinite(float(sums.sum()))):
            coef_x = self._clip(coef_x, idx, self.clip, self.skip_clip)
            diff = self._clip(coef_x - coef_snap, idx, self.correction_clip,
                              self.skip_correction_clip)
            sums = diff.sum(axis=0)
        diff *= factor
        v = np.empty_like(x)
        np.matmul(rows.T, diff if scale is None else diff * scale, out=v[:d])
        if self.intercept:
            np.multiply(sums, self.intercept * factor, out=v[d])
        return v
