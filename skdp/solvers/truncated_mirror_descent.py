"""Truncated private mirror descent for heavy-tailed gradients (Su, Zhao & Wang, Alg. 7, 4).

Both solvers make one pass over the data in a data-independent random order, split into
``T`` disjoint batches. Each per-example gradient whose dual norm exceeds the public
threshold ``tau`` is set to zero (truncation, Nazin et al. 2019), the batch mean drives
one mirror step in the l_p geometry (``1 < p <= 2``), and the output is the average of the
iterates.

* :class:`TruncatedMirrorDescent` (Algorithm 7): one generalized Gaussian noise per batch
  mean; the batches are disjoint, so the whole run is one GG release (central DP).
* :class:`ShuffledTruncatedMirrorDescent` (Algorithm 4): every record is privatised
  locally (pure epsilon_0-DP K-norm noise in l_q) and privacy is amplified by shuffling
  (the B10 bound lives in :mod:`skdp.solvers._shuffle_amplification`).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from dataclasses import dataclass
from numbers import Real
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe

from skdp._params import COUNT, OPTIONAL_COUNT, store_params
from skdp._sklearn_compat import Interval, StrOptions
from skdp.geometry import LpDualIterate
from skdp.losses import NORM_SAFETY, vector_norms
from skdp.privacy.accounting import (
    ApproxDpEvent,
    PureDpEvent,
    check_sensitivity,
    gaussian_event,
)
from skdp.privacy.budget import Budget
from skdp.privacy.noise import NoiseSource
from skdp.solvers import _compiled
from skdp.solvers._base import BaseDPSolver, Plan, Problem, ProblemSpec, averaged_from
from skdp.solvers._capabilities import Capabilities
from skdp.solvers._shuffle_amplification import (  # re-exported: public import path
    shuffle_amplified_epsilon,
    shuffle_local_epsilon,
    shuffle_local_epsilon_limit,  # noqa: F401
)
from skdp.solvers.regularized_mirror_descent import (
    LpGeometry,
    calibrate_gg_multiplier,
    gg_noise_geometry,
    lp_geometry,
)

__all__ = [
    "ShuffledTruncatedMirrorDescent",
    "ShuffledTruncatedMirrorDescentPlan",
    "TruncatedMirrorDescent",
    "TruncatedMirrorDescentPlan",
    "shuffle_amplified_epsilon",
    "shuffle_local_epsilon",
    "truncated_coefficients",
]

#: Output rules: the paper's uniform average of every iterate, or the suffix average of
#: the last half of them (:func:`~skdp.solvers._base.tail_start`).
ITERATES = ("average", "tail")


#: Why neither truncated method reaches the optimum at epsilon=inf (their capabilities).
_INEXACT = ("one pass over about sqrt(n) batches with the paper's mirror step, whose "
            "gradients are truncated at beta M even without noise: an O(1/sqrt(T)) "
            "stochastic method (8e-2 excess risk on a 2000 x 5 logistic problem)")


def truncated_coefficients(
    D: np.ndarray, row_norms_q: np.ndarray, threshold: float, q: float
) -> np.ndarray:
    """Derivative rows of the truncated per-example gradients ``g_i 1{||g_i||_q <= tau}``.

    The per-example gradient of a GLM is ``x_i d_i^T`` with entrywise l_q norm
    ``||x_i||_q ||d_i||_q``: truncation zeroes the rows ``d_i`` of the records above the
    threshold (and of records whose gradient is not finite). Vectorised; a per-record map.
    """
    with np.errstate(all="ignore"):
        return _truncate(D, row_norms_q[:, None], threshold * NORM_SAFETY, q)


def _truncate(D: np.ndarray, row_norms_q: np.ndarray, limit: float, q: float) -> np.ndarray:
    """:func:`truncated_coefficients` with the target ``limit = tau * NORM_SAFETY`` and
    the row norms as a column, under the caller's ``np.errstate`` (a solver's run
    has floating-point warnings off: :meth:`~skdp.solvers.BaseDPSolver.solve`).

    One output (``K = 1``): ``||d_i||_q = |d_i|`` (what ``vector_norms`` returns), and
    ``norm <= limit`` is False for a NaN or infinite norm (``limit`` is finite), so the
    finiteness test is implied.
    """
    if D.shape[1] == 1:
        return np.where(row_norms_q * np.abs(D) <= limit, D, 0.0)
    norms = row_norms_q[:, 0] * vector_norms(D, q)
    keep = np.isfinite(norms) & (norms <= limit)
    return np.where(keep[:, None], D, 0.0)


#: Elements (rows x parameters) of one gathered chunk of records, about 2 MB of float64:
#: the rows of many small batches are gathered in one copy, and a batch larger than this
#: is summed in pieces of this size (no n x d temporary).
_CHUNK_ELEMENTS = 1 << 18


def _truncated_batch_sum(
    problem: Problem, W: np.ndarray, index: np.ndarray, threshold: float, q: float,
    row_norms_q: np.ndarray, piece: int,
) -> np.ndarray:
    """``sum_{i in batch} g_i 1{||g_i||_q <= tau}`` (products with the batch's rows).

    A batch of all ``n`` records (``n_iter=1``) is summed by the blocked full pass
    (:meth:`Problem.row_blocks`, views of ``X``); other batches are gathered in pieces of
    at most ``piece`` rows.
    """
    loss = problem.spec.loss
    if index.size == problem.spec.n_samples:
        blocks = problem.row_blocks()
    else:
        blocks = ((part, problem.rows(part))
                  for part in (index[s:s + piece] for s in range(0, index.size, piece)))
    total = np.zeros((problem.spec.n_params, problem.spec.n_outputs))
    for block, rows in blocks:
        D = loss.derivative(problem.scores(W, rows), problem.Y[block])
        total += problem.gradient_sum(
            truncated_coefficients(D, row_norms_q[block], threshold, q), rows)
    return total


def _augmented_rows(problem: Problem, index: np.ndarray) -> np.ndarray:
    """The augmented clipped rows ``x'_i = [s_i x_i, c]`` of ``index`` as one dense copy
    (dense ``X`` only; ``index.size x n_params``, a chunk, never all ``n`` rows). Without
    an intercept, float64 rows are gathered straight into the copy (no second one)."""
    X = problem.X
    d = X.shape[1]
    if not problem.intercept and isinstance(X, np.ndarray) and X.dtype == np.float64:
        A = np.take(X, index, axis=0)
        A *= problem.row_scale[index, None]
        return A
    A = np.empty((index.size, problem.spec.n_params))
    np.multiply(np.take(X, index, axis=0), problem.row_scale[index, None], out=A[:, :d])
    if problem.intercept:
        A[:, d] = problem.intercept
    return A


def _chunk_elements(n: int, n_params: int) -> int:
    """Elements of one chunk: :data:`_CHUNK_ELEMENTS` (about 2 MB), at most 1/32 of the
    ``n x n_params`` augmented data, so that a chunk's copy, its noise and the noise
    sampler's temporaries (several arrays of the chunk's size for the K-norm draws) stay
    a small fraction of ``X`` (public: a function of the shape only). With 1/8 the
    shuffled method peaked at 0.83x a 20000 x 50 input, with 1/32 at 0.36x."""
    return max(1, min(_CHUNK_ELEMENTS, n * n_params // 32))


def _capped_by_alpha(eta: float, alpha: float) -> float:
    """The default step, at most ``1 / alpha``: the step on the ridge term ``alpha W`` is
    taken explicitly, and ``eta alpha > 2`` would make it diverge (large ``alpha`` occurs
    with private bounds, whose ``alpha`` is in units of the bounds). Public quantities."""
    return min(eta, 1.0 / alpha) if alpha > 0 else eta


@dataclass(frozen=True, kw_only=True)
class _TruncatedPlan(Plan):
    """Constants both truncated methods have (their shared batch loop reads them).

    Attributes
    ----------
    sigma : float
        The noise scale (see each subclass).
    truncation : float
        Threshold ``tau`` on the per-example gradient's l_q norm.
    min_batch : int
        Size ``floor(n / T)`` of the smallest batches.
    p, q : float
        Exponent of the geometry and its dual ``p / (p - 1)``.
    step_size : float
        Mirror step ``eta = 1 / gamma``.
    """

    sigma: float
    truncation: float
    min_batch: int
    p: float
    q: float
    step_size: float


@dataclass(frozen=True, kw_only=True)
class TruncatedMirrorDescentPlan(_TruncatedPlan):
    """Plan of :class:`TruncatedMirrorDescent` (``n_iter = epochs * batches`` steps).

    Attributes
    ----------
    batches : int
        Disjoint batches ``T`` per pass.
    epochs : int
        Passes ``E`` over the data.
    sigma : float
        Generalized Gaussian noise scale of the smallest batches' mean (a batch of size
        ``|B|`` gets ``sigma * min_batch / |B|``).
    noise_multiplier : float
        ``z = sigma / (sqrt(kappa_plus) sensitivity_r)``, the Gaussian multiplier whose
        RDP curve each pass has.
    noise_order : float
        Order ``r`` of the generalized Gaussian.
    kappa_plus : float
        Smoothness constant ``r - 1`` of ``||.||_r^2 / 2``.
    sensitivity_q : float
        l_q sensitivity ``2 tau / min_batch`` of the smallest batches' mean.
    sensitivity_r : float
        Its l_r sensitivity (Hoelder).
    """

    batches: int
    epochs: int
    noise_multiplier: float
    noise_order: float
    kappa_plus: float
    sensitivity_q: float
    sensitivity_r: float


@dataclass(frozen=True, kw_only=True)
class ShuffledTruncatedMirrorDescentPlan(_TruncatedPlan):
    """Plan of :class:`ShuffledTruncatedMirrorDescent` (one pass of ``n_iter`` batches).

    Attributes
    ----------
    sigma : float
        Scale ``2 tau / local_epsilon`` of each record's K-norm noise (l_q); 0 without
        privacy.
    local_epsilon : float
        Pure local DP parameter ``eps_0`` of each report (``inf`` without privacy).
    local_sensitivity : float
        l_q distance ``2 tau`` between any two truncated gradients.
    """

    local_epsilon: float
    local_sensitivity: float

    @property
    def batches(self) -> int:
        """Batches per pass: every step is one batch of the single pass."""
        return self.n_iter

    @property
    def epochs(self) -> int:
        """Passes over the data (Algorithm 4 makes one)."""
        return 1


_TruncatedPlan = TruncatedMirrorDescentPlan | ShuffledTruncatedMirrorDescentPlan


class _TruncatedBase(BaseDPSolver):
    """Shared parameters, defaults and the one-pass loop of Algorithms 4 and 7."""

    _parameter_constraints: ClassVar[dict] = {
        "n_iter": OPTIONAL_COUNT,
        "truncation": [Interval(Real, 0, math.inf, closed="neither"), None],
        "step_size": [Interval(Real, 0, math.inf, closed="neither"), None],
        "p": [Interval(Real, 1, 2, closed="right"), None],
        "iterate": [StrOptions(set(ITERATES))],
    }

    def __init__(self, n_iter=None, truncation=None, step_size=None, p=None,
                 iterate="average"):
        store_params(self, locals())

    def check_compatible(self, spec: ProblemSpec, accounting: str, relation: str) -> None:
        """The generic check, then the solver's ``p`` against the constraint's exponent.

        <<check_sections>>
            If a generic check fails or ``p`` does not fit the constraint.
        """
        super().check_compatible(spec, accounting, relation)
        # The declaration admits no constraint, l2 and l_p with p <= 2; what remains is
        # the solver's own p against a constraint's exponent.
        lp_geometry(spec, self.p, self.name)

    # -- public defaults -------------------------------------------------------------------
    @staticmethod
    def _paper_lambda(spec: ProblemSpec, budget: Budget, kappa: float, diameter: float,
                      ) -> float:
        """Theorem 16's ``lambda = (sqrt(n eps) M / (kappa (d ln(1/delta))^(1/4)))^(2/3)``."""
        root = (spec.dimension * math.log(1.0 / budget.delta)) ** 0.25
        return (math.sqrt(spec.n_samples * budget.epsilon) * diameter / (kappa * root)) ** (
            2.0 / 3.0)

    def threshold(self, spec: ProblemSpec, budget: Budget, geometry: LpGeometry,
                  kappa: float) -> float:
        """``tau``: the solver's ``truncation``, else ``min(beta M + lambda, G_q)``.

        ``beta M + lambda`` is the paper's threshold (Theorem 16's ``lambda``, constant 1,
        ``M`` the l_p diameter, 2 when unconstrained, ``beta`` the l_p smoothness); ``G_q``
        is the public bound on the per-example gradient's l_q norm (truncation above it
        never happens). Both are public.

        Parameters
        ----------
        <<spec>>
        <<budget>>
        geometry : LpGeometry
            The l_p geometry of the mirror map (:func:`lp_geometry`).
        kappa : float
            The noise geometry's ``kappa`` of Theorem 16's ``lambda``.

        Returns
        -------
        float
            ``tau``, positive and finite.
        """
        if self.truncation is not None:
            return float(self.truncation)
        q = geometry.q
        diameter = 2.0 * geometry.scale_radius()
        beta = spec.loss.curvature_bound * spec.row_bound(q) ** 2 + spec.alpha
        if budget.is_private and budget.delta > 0:
            lam = self._paper_lambda(spec, budget, kappa, diameter)
        else:
            lam = 0.0
        tau = min(beta * diameter + lam, spec.gradient_bound_in(q))
        return check_sensitivity(tau, "truncation threshold tau")

    def auto_n_iter(self, spec: ProblemSpec, budget: Budget, geometry: LpGeometry,
                    kappa: float) -> int:
        """Number of batches ``T`` in ``[1, n]``, from public quantities only.

        Parameters
        ----------
        <<spec>>
        <<budget>>
        geometry : LpGeometry
            The l_p geometry of the mirror map.
        kappa : float
            The noise geometry's ``kappa`` of the paper's rule.

        Returns
        -------
        int
            ``n_iter``, else ``sqrt(n)`` without privacy, else the subclass's private rule
            (its paper's theorem), rounded up and kept in ``[1, n]``.
        """
        n = spec.n_samples
        if self.n_iter is not None:
            return int(min(self.n_iter, n))
        if not budget.is_private:
            t = math.sqrt(n)
        else:
            t = self._private_n_iter(spec, budget, 2.0 * geometry.scale_radius(), kappa)
        return int(min(max(math.ceil(t), 1), n))

    @abstractmethod
    def _private_n_iter(self, spec: ProblemSpec, budget: Budget, diameter: float,
                        kappa: float) -> float:
        """The (real) private number of batches of the paper's theorem."""

    @staticmethod
    def _step(geometry: LpGeometry, n_iter: int, scale_sq: float) -> float:
        """Mirror descent step ``eta = R / (sqrt(p - 1) G sqrt(T))`` (``gamma = 1/eta``).

        Standard mirror descent tuning: ``D_Phi(w*, 0) <= R^2 / (2 (p - 1))`` on the l_p
        ball and ``E||g||_q^2 <= G^2`` give the regret ``D / eta + eta T G^2 / 2``,
        minimised at this ``eta`` (the paper's ``gamma = sqrt(T)`` in units where
        ``M, G = O(1)``). ``G^2 = scale_sq`` comes from public quantities only.
        """
        radius = geometry.scale_radius()
        p_minus = geometry.p - 1.0
        return radius / (math.sqrt(p_minus * scale_sq * n_iter))

    def _one_pass(self, problem: Problem, plan: _TruncatedPlan,
                  noise: NoiseSource) -> np.ndarray:
        spec = problem.spec
        geometry = lp_geometry(spec, self.p, self.name)
        q, tau, eta = plan.q, plan.truncation, plan.step_size
        n, T = spec.n_samples, plan.batches
        epochs = plan.epochs
        k, alpha = spec.n_penalized, spec.alpha
        row_norms_q = problem.row_norms_in(q)
        shape = (spec.n_params, spec.n_outputs)
        iterate = geometry.dual_iterate(shape)
        W = iterate.W
        total = np.zeros(shape)
        # Constant gamma_t: the paper's weights gamma_t^{-1} make a uniform average of the
        # E T iterates; "tail" averages the last half of them (post-processing).
        n_steps = T * epochs
        first = averaged_from(self.iterate, n_steps)
        # np.array_split(order, T): the first n % T batches hold floor(n / T) + 1 records.
        sizes = np.full(T, n // T, dtype=np.intp)
        sizes[: n % T] += 1
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        # Chunks of consecutive whole batches with at most `piece` records (at least one
        # batch): public, a function of n, T and the shape only.
        piece = max(1, _chunk_elements(n, spec.n_params) // (spec.n_params * spec.n_outputs))
        dense = not sp.issparse(problem.X)
        kernel = self._kernel(problem, n_steps) if dense else None
        step = 0
        for _ in range(epochs):
            # Data-independent random order, drawn independently of the data (a fresh one
            # per epoch); T disjoint batches.
            order = noise.permutation(n)
            j0 = 0
            while j0 < T:
                j1 = max(j0 + 1, int(np.searchsorted(bounds, bounds[j0] + piece,
                                                     side="right")) - 1)
                j1 = min(j1, T)
                chunk = order[bounds[j0]:bounds[j1]]
                # The noise of the chunk's batches, drawn before its steps (the local
                # reports' sums of Algorithm 4, or the central releases' Z_t).
                local = self._chunk_noise(sizes[j0:j1], shape, plan, noise, piece)
                offsets = (bounds[j0:j1 + 1] - bounds[j0]).tolist()
                if dense and j1 - j0 > 1:
                    # Several small batches: their rows in one dense copy, steps on views.
                    W, step = self._dense_chunk(problem, plan, iterate, chunk, offsets,
                                                local, row_norms_q, total, step, first,
                                                kernel)
                    problem.advance(j1 - j0)
                    j0 = j1
                    continue
                for j in range(j1 - j0):
                    a, b = offsets[j], offsets[j + 1]
                    # Sorted rows: faster CSR/dense gathers, same batch. A single batch
                    # holds every record and is summed over views of X in storage order,
                    # so it is not sorted.
                    index = chunk[a:b] if T == 1 else np.sort(chunk[a:b])
                    g_sum = _truncated_batch_sum(problem, W, index, tau, q, row_norms_q,
                                                 piece)
                    g = g_sum + self._noise_sum(local[j], b - a, plan)
                    # eta (privatised batch mean + the L2 term on the penalised rows).
                    g *= eta / (b - a)
                    if alpha:
                        g[:k] += (eta * alpha) * W[:k]
                    # w_t = argmin_{w in C} <g, w> + gamma D_Phi(w, w_{t-1}), gamma = 1/eta.
                    W = iterate.step(g)
                    if step >= first:
                        total += W
                    step += 1
                    problem.advance()
                j0 = j1
        return total / (n_steps - first)

    @staticmethod
    def _kernel(problem: Problem, n_steps: int) -> tuple | None:
        """``(compiled chunk loop, loss code, loss parameter)`` when the compiled kernel
        runs (:mod:`skdp.solvers._compiled`: numba installed, a one-output loss it knows,
        at least ``KERNEL_MIN_STEPS`` planned steps or ``SKDP_NUMBA=always``; public facts
        only), else ``None``."""
        spec = problem.spec
        return _compiled.scalar_kernel_for(spec.loss, spec.n_outputs, n_steps,
                                           _compiled.KERNEL_MIN_STEPS,
                                           _compiled.truncated_chunk)

    def _dense_chunk(self, problem: Problem, plan: _TruncatedPlan, iterate: LpDualIterate,
                     chunk: np.ndarray, offsets: list[int], local: np.ndarray,
                     row_norms_q: np.ndarray, total: np.ndarray, step: int, first: int,
                     kernel: tuple | None) -> tuple[np.ndarray, int]:
        """The steps of a chunk of small batches of dense rows: the same batch sums and
        mirror steps as the general loop of :meth:`_one_pass`, on views of one gathered
        copy of the chunk's augmented rows (no per-step gathers or validation), compiled
        when ``kernel`` is given (:meth:`_kernel`). Adds the averaged iterates to
        ``total``; returns the last iterate and the step count."""
        spec = problem.spec
        loss, k, alpha = spec.loss, spec.n_penalized, spec.alpha
        eta, q = plan.step_size, plan.q
        limit = plan.truncation * NORM_SAFETY
        A = _augmented_rows(problem, chunk)
        Yc, norms_c = problem.Y[chunk], row_norms_q[chunk][:, None]
        ridge = eta * alpha
        if kernel is not None:
            run, code, parameter = kernel
            bounds = np.asarray(offsets, dtype=np.int64)
            sizes = np.diff(bounds)
            noise_sums = np.ascontiguousarray(
                self._noise_sum(local, sizes[:, None, None], plan)[:, :, 0])
            W = np.array(iterate.W[:, 0])  # updated in place, then the new iterate
            radius = math.inf if iterate.radius is None else float(iterate.radius)
            step = run(A, np.ascontiguousarray(Yc[:, 0], dtype=np.float64),
                       np.ascontiguousarray(norms_c[:, 0], dtype=np.float64),
                       bounds, noise_sums,
                       iterate.theta[:, 0], W, total[:, 0], step, first, float(eta),
                       float(ridge), int(k), float(limit), code, parameter,
                       float(iterate.p), float(iterate.q), radius)
            iterate.W = W[:, None]
            return iterate.W, step
        W = iterate.W
        for j in range(len(offsets) - 1):
            a, b = offsets[j], offsets[j + 1]
            rows = A[a:b]
            D = _truncate(loss.derivative(rows @ W, Yc[a:b]), norms_c[a:b], limit, q)
            g = rows.T @ D
            g += self._noise_sum(local[j], b - a, plan)
            g *= eta / (b - a)
            if ridge:
                g[:k] += ridge * W[:k]
            W = iterate.step(g)
            if step >= first:
                total += W
            step += 1
        return W, step

    @abstractmethod
    def _chunk_noise(self, sizes: np.ndarray, shape: tuple[int, int], plan: _TruncatedPlan,
                     noise: NoiseSource, piece: int) -> np.ndarray:
        """Noise of each batch of a chunk, drawn before its steps (see the subclasses)."""

    @abstractmethod
    def _noise_sum(self, local: np.ndarray, size: int | np.ndarray, plan: _TruncatedPlan
                   ) -> np.ndarray:
        """The noise a batch of ``size`` records adds to its gradient sum, from its draw
        ``local`` of :meth:`_chunk_noise` (central or local noise; see the subclasses).
        Vectorised: ``size`` may be an array of batch sizes that broadcasts against a
        chunk's draws."""

    def _run(self, problem: Problem, plan: _TruncatedPlan, noise: NoiseSource) -> np.ndarray:
        return self._one_pass(problem, plan, noise)


class TruncatedMirrorDescent(_TruncatedBase):
    """Truncated DP batched mirror descent for heavy tails (Su, Zhao & Wang, Algorithm 7).

    One pass over a data-independent random permutation split into ``T`` disjoint
    batches ``B_t``. At ``w_{t-1}``, every per-example gradient whose dual norm
    ``||g_i||_q`` exceeds the public threshold ``tau`` is set to 0; the batch mean plus one
    generalized Gaussian noise ``Z_t`` (density ``exp(-||z||_r^2 / (2 sigma_t^2))``) drives
    the mirror step ``w_t = argmin_{w in C} <mean_t + Z_t, w> + gamma D_Phi(w, w_{t-1})``.
    The output is the average of ``w_1..w_T``. Works with any smooth GLM loss (squared,
    Huber, logistic, ...): only ``phi'`` is used.

    Parameters
    ----------
    n_iter : int, optional
        Number of batches ``T`` (``<= n``). Default: Theorem 16's
        ``n eps / (M lambda sqrt(d ln(1/delta)))`` with ``lambda`` as in :meth:`threshold`
        (constants 1, ``M`` the l_p diameter, 2 when unconstrained); ``ceil(sqrt(n))``
        when ``epsilon = inf``.
    truncation : float, optional
        Public threshold ``tau`` on the per-example gradient's l_q norm. Default: the
        paper's ``beta M + lambda``, capped by the public gradient bound; with heavy-tailed
        data and a large ``data_norm`` set it explicitly (for example a high quantile of
        the gradient norms of public or synthetic data).
    step_size : float, optional
        Mirror step ``eta = 1 / gamma``. Default
        ``R / sqrt((p - 1) E T (tau^2 + d sigma^2))`` (standard mirror descent tuning over
        the ``E T`` steps, ``R`` the radius, 1 when unconstrained), at most ``1 / alpha``.
    p : float, optional
        Exponent for unconstrained problems (``1 < p <= 2``); default ``1 + 1/ln d``.
    n_epochs : int, default=1
        Passes over the data. 1 is the paper's one-pass algorithm; ``E > 1`` repeats it
        with a fresh data-independent permutation per pass (``E T`` mirror steps, the
        average of all iterates), and the noise is calibrated for ``E`` releases per
        record. An extension of the paper (its analysis is one-pass): on finite data
        several passes with more noise per step often beat one pass.
    iterate : {"average", "tail"}, default="average"
        Output the paper's uniform average of the ``E T`` iterates, or the suffix average
        of the last ``ceil(E T / 2)`` of them (no weight on the early, far-off iterates;
        post-processing, so the guarantee is the same).

    Notes
    -----
    **Privacy guarantee.** ``(epsilon, delta)``-DP under replace-one. The permutation is
    independent of the data, so the replaced record lies in one batch per pass for both
    datasets, and by parallel composition (design note B9, adaptive) a pass is as private
    as that batch's release; ``E`` passes compose ``E`` such releases. Truncated gradients
    lie in the l_q ball of radius ``tau``, so a batch mean has l_q sensitivity
    ``2 tau / |B|``; the generalized Gaussian release is zCDP with the RDP curve of a
    Gaussian of multiplier ``z`` (design note B5), the same ``z`` for every batch. The
    ledger is ``E`` compositions of ``GaussianDpEvent(z)``, read by RDP accounting
    only, with ``z`` solved to spend exactly ``epsilon`` (any ``epsilon > 0``).

    Assumptions: none on the tails; rows are still clipped to the public ``data_norm`` by
    the problem (make it large for heavy-tailed data). Truncation, unlike clipping, leaves
    each retained gradient unchanged, which the paper's heavy-tail analysis uses.

    Reference: Su, Zhao & Wang, "Differentially private stochastic convex optimization in
    (non)-Euclidean space revisited", Algorithm 7 and Theorem 16 (constant-free noise
    formula, replaced by the exact B5 calibration). Derivations, defaults and corrections:
    ``docs/algorithms/truncated_mirror_descent.md``.
    """

    name = "truncated_mirror_descent"
    capabilities = Capabilities(
        algorithm="truncated batched mirror descent for heavy tails, Su-Zhao-Wang Alg. 7",
        accounting_methods=("rdp",), constraints=("none", "l2", "lp"), max_lp=2.0,
        inexact_at_inf=_INEXACT,
    )

    _parameter_constraints: ClassVar[dict] = {
        **_TruncatedBase._parameter_constraints,
        "n_epochs": COUNT,
    }

    def __init__(self, n_iter=None, truncation=None, step_size=None, p=None, n_epochs=1,
                 iterate="average"):
        super().__init__(n_iter=n_iter, truncation=truncation, step_size=step_size, p=p,
                         iterate=iterate)
        self.n_epochs = n_epochs

    def _private_n_iter(self, spec: ProblemSpec, budget: Budget, diameter: float,
                        kappa: float) -> float:
        lam = self._paper_lambda(spec, budget, kappa, diameter)
        return spec.n_samples * budget.epsilon / (
            diameter * lam * math.sqrt(spec.dimension * math.log(1.0 / budget.delta)))

    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str,
             ) -> TruncatedMirrorDescentPlan:
        """Fix ``tau``, the batches and the generalized Gaussian noise of the batch means.

        <<plan_parameters>>

        Returns
        -------
        TruncatedMirrorDescentPlan
            ``T`` batches (per pass) of truncated gradient means, each released once with
            noise calibrated to its sensitivity ``2 tau / |B|``, and the step size.
        """
        geometry = lp_geometry(spec, self.p, self.name)
        q, d = geometry.q, spec.dimension
        r, factor = gg_noise_geometry(q, d)
        kappa_plus = r - 1.0
        tau = self.threshold(spec, budget, geometry, kappa_plus)
        n_iter = self.auto_n_iter(spec, budget, geometry, kappa_plus)
        # np.array_split: every batch has at least floor(n / T) records.
        min_batch = spec.n_samples // n_iter
        # Replace-one within a batch: two truncated gradients differ by <= 2 tau in l_q.
        s_q = check_sensitivity(2.0 * tau / min_batch, "batch sensitivity 2 tau / |B|")
        equivalent = math.sqrt(kappa_plus) * s_q * factor
        # Each epoch is one pass (parallel composition over its disjoint batches); a
        # record is in exactly one batch per epoch, so E epochs compose E releases of
        # multiplier z (adaptive sequential composition of the RDP curves).
        epochs = int(self.n_epochs)
        z = calibrate_gg_multiplier(budget, epochs, relation)
        sigma = z * equivalent  # noise of the smallest batches; sigma_t = sigma min_b / |B_t|
        event = gaussian_event(sigma, equivalent, accounting="rdp", relation=relation)
        if epochs > 1 and not isinstance(event, dpe.NonPrivateDpEvent):
            event = dpe.SelfComposedDpEvent(event, epochs)
        if self.step_size is not None:
            eta = float(self.step_size)
        else:
            # E||mean + Z||_q^2 <= tau^2 + E||Z||_r^2 = tau^2 + d sigma^2 (r <= q), over
            # E T steps.
            eta = _capped_by_alpha(
                self._step(geometry, epochs * n_iter, tau**2 + d * sigma**2), spec.alpha)
        return TruncatedMirrorDescentPlan(
            n_iter=epochs * n_iter, event=event, accounting="rdp", relation=relation,
            batches=n_iter, epochs=epochs, sigma=sigma, noise_multiplier=z, noise_order=r,
            kappa_plus=kappa_plus, sensitivity_q=s_q, sensitivity_r=s_q * factor,
            truncation=tau, min_batch=min_batch, p=geometry.p, q=q, step_size=eta,
        )

    def _chunk_noise(self, sizes: np.ndarray, shape: tuple[int, int],
                     plan: TruncatedMirrorDescentPlan, noise: NoiseSource,
                     piece: int) -> np.ndarray:
        """The generalized Gaussian noise ``Z_t`` of each batch mean of a chunk, drawn
        before its steps: one :meth:`NoiseSource.generalized_gaussians` call per run of
        equal batch sizes (at most two: ``np.array_split``'s sizes are non-increasing), in
        batch order. Same multiplier ``z`` for every batch: ``sigma_t = sigma min_batch /
        |B_t|`` (``z sqrt(kappa_+) s_+(|B_t|)``); the count and scales are public."""
        out = np.empty((sizes.size, *shape))
        cuts = [0, *(np.flatnonzero(np.diff(sizes)) + 1).tolist(), sizes.size]
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            sigma_t = plan.sigma * plan.min_batch / int(sizes[a])
            out[a:b] = noise.generalized_gaussians(shape, sigma_t, plan.noise_order, b - a)
        return out

    def _noise_sum(self, local: np.ndarray, size: int | np.ndarray,
                   plan: TruncatedMirrorDescentPlan) -> np.ndarray:
        # The noise is added to the batch mean (here: size * Z_t on the batch sum; Z_t was
        # drawn with its chunk, _chunk_noise).
        return size * local


class ShuffledTruncatedMirrorDescent(_TruncatedBase):
    """Shuffled truncated DP mirror descent (Su, Zhao & Wang, Algorithm 4), pure-LDP reports.

    Like :class:`TruncatedMirrorDescent`, but every record is privatised on its own: the
    report of record ``x`` in batch ``t`` is ``g_x + Z_x``, ``g_x`` its truncated gradient
    at ``w_{t-1}`` and ``Z_x`` K-norm noise with density ``exp(-eps_0 ||z||_q / (2 tau))``
    (pure ``eps_0``-LDP), and the mirror step uses the mean of the batch's reports. The
    records are processed in a uniformly random order that stays secret (the shuffler).

    Parameters
    ----------
    n_iter : int, optional
        Number of batches ``T`` (``<= n``). Default: Theorem 10's
        ``M^2 n eps kappa / sqrt(d ln(1/delta))`` (constant 1, ``M`` the l_p diameter, 2
        when unconstrained); ``ceil(sqrt(n))`` when ``epsilon = inf``.
    truncation : float, optional
        Public threshold ``tau``, as in :class:`TruncatedMirrorDescent`.
    step_size : float, optional
        Mirror step, as in :class:`TruncatedMirrorDescent`; the default uses
        ``G^2 = tau^2 + d^(1 - 2/q) E||Z||_q^2 / |B|``, ``E||Z||_q^2 = d (d+1) (2 tau/eps_0)^2``.
    p : float, optional
        Exponent for unconstrained problems, as in :class:`TruncatedMirrorDescent`.
    iterate : {"average", "tail"}, default="average"
        Output rule, as in :class:`TruncatedMirrorDescent`.

    Notes
    -----
    **Privacy guarantee.** ``(epsilon, delta)``-DP under replace-one (pure
    ``epsilon``-DP when unamplified). Any two truncated gradients are within ``2 tau`` in
    l_q, so each report ``g_x + Z_x`` is pure ``eps_0``-DP for any two inputs (K-norm
    mechanism, Hardt & Talwar 2010). The reports form the adaptive shuffle model of
    Feldman, McMillan & Talwar (2021, Thm. 3.8): ``n`` shuffled reports are
    ``(eps, delta)``-DP with ``eps`` the closed form of design note B10, and ``eps_0`` is
    the largest value (bisection) whose ``eps`` is at most the budget; the ledger is one
    ``ApproxDpEvent(eps, delta)`` for the ``"basic"`` accounting method. Where B10 does not hold
    (``n <= 16 ln(4/delta)``) or would not allow ``eps_0 > epsilon``, the run is
    unamplified with ``eps_0 = epsilon`` and ledger ``PureDpEvent(epsilon)``: each record
    enters one report. The released model is post-processing of the reports.

    Assumptions: as in :class:`TruncatedMirrorDescent`; the processing order stays secret
    (the shuffler).

    Reference: Su, Zhao & Wang, Algorithm 4 and Theorem 9; this implementation ships the
    pure-LDP variant of the local randomizer (the paper's is generalized Gaussian,
    design note 2.5). Derivations and corrections:
    ``docs/algorithms/truncated_mirror_descent.md``.
    """

    name = "shuffled_truncated_mirror_descent"
    capabilities = Capabilities(
        algorithm=("shuffled truncated mirror descent, Su-Zhao-Wang Alg. 4 (pure-LDP "
                   "reports + shuffling)"),
        accounting_methods=("basic",), default_accounting="basic",
        constraints=("none", "l2", "lp"), max_lp=2.0, inexact_at_inf=_INEXACT,
    )

    def _private_n_iter(self, spec: ProblemSpec, budget: Budget, diameter: float,
                        kappa: float) -> float:
        return diameter**2 * spec.n_samples * budget.epsilon * kappa / math.sqrt(
            spec.dimension * math.log(1.0 / budget.delta))

    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str,
             ) -> ShuffledTruncatedMirrorDescentPlan:
        """Fix ``tau``, the batches and the local ``eps_0`` amplified by shuffling.

        <<plan_parameters>>

        Returns
        -------
        ShuffledTruncatedMirrorDescentPlan
            One pass of ``T`` batches of K-norm reports with local budget ``eps_0`` (the
            largest whose shuffled guarantee meets the budget, or ``epsilon`` unamplified).
        """
        geometry = lp_geometry(spec, self.p, self.name)
        q, d, n = geometry.q, spec.dimension, spec.n_samples
        r, _ = gg_noise_geometry(q, d)
        tau = self.threshold(spec, budget, geometry, r - 1.0)
        n_iter = self.auto_n_iter(spec, budget, geometry, r - 1.0)
        # Local sensitivity: any two truncated gradients are within 2 tau in l_q.
        delta_k = check_sensitivity(2.0 * tau, "local l_q sensitivity 2 tau")
        if budget.is_private:
            # Without shuffling, an adaptive protocol of epsilon0-LDP reports, each record
            # in exactly one report, is epsilon0-DP centrally (the changed record affects
            # one report; the others' randomizers see only earlier outputs). So the local
            # epsilon is never below the central one: amplification is used only where
            # B10 holds (n > 16 ln(4/delta)) and allows a LARGER epsilon0.
            amplified = (shuffle_local_epsilon(budget.epsilon, n, budget.delta)
                         if n > 16.0 * math.log(4.0 / budget.delta) else 0.0)
            if amplified > budget.epsilon:
                eps0 = amplified
                central = shuffle_amplified_epsilon(eps0, n, budget.delta)
                event = ApproxDpEvent(
                    central, budget.delta,
                    mechanism=(f"shuffled truncated mirror descent: n={n} pure {eps0!r}-LDP "
                               f"K-norm (l_{q:g}) reports, FMT21 closed form"),
                )
            else:
                eps0 = budget.epsilon
                event = PureDpEvent(eps0)
            scale = delta_k / eps0
        else:
            eps0, scale, event = math.inf, 0.0, dpe.NonPrivateDpEvent()
        min_batch = n // n_iter
        if self.step_size is not None:
            eta = float(self.step_size)
        else:
            # ||mean Z||_q <= ||mean Z||_2, E||mean Z||_2^2 = E||Z||_2^2 / |B| and
            # ||Z||_2 <= d^(1/2 - 1/q) ||Z||_q with E||Z||_q^2 = d (d + 1) scale^2.
            noise_sq = d ** (1.0 - 2.0 / q) * d * (d + 1.0) * scale**2 / min_batch
            eta = _capped_by_alpha(self._step(geometry, n_iter, tau**2 + noise_sq), spec.alpha)
        return ShuffledTruncatedMirrorDescentPlan(
            n_iter=n_iter, event=event, accounting="basic", relation=relation,
            sigma=scale, local_epsilon=eps0, truncation=tau, local_sensitivity=delta_k,
            min_batch=min_batch, p=geometry.p, q=q, step_size=eta,
        )

    def _chunk_noise(self, sizes: np.ndarray, shape: tuple[int, int],
                     plan: ShuffledTruncatedMirrorDescentPlan, noise: NoiseSource,
                     piece: int) -> np.ndarray:
        """Per-batch sums of the reports' K-norm noise for a chunk of batches.

        Every record gets one independent draw ``Z_x`` (``sum(sizes)`` draws, in pieces of
        at most ``piece`` records, one ``k_norm`` call each); only its batch sum enters the
        step. The count and the scale are public; the draws do not depend on the data.
        """
        total = int(sizes.sum())
        if sizes.size == 1:
            out = np.zeros((1, *shape))
            for start in range(0, total, piece):
                out[0] += noise.k_norm(shape, plan.sigma, plan.q,
                                       count=min(piece, total - start)).sum(axis=0)
            return out
        # A chunk of several batches has at most `piece` records: one draw.
        draws = noise.k_norm(shape, plan.sigma, plan.q, count=total)
        return np.add.reduceat(draws, np.concatenate([[0], np.cumsum(sizes[:-1])]), axis=0)

    def _noise_sum(self, local: np.ndarray, size: int | np.ndarray,
                   plan: ShuffledTruncatedMirrorDescentPlan) -> np.ndarray:
        # Each record's report is g_x + Z_x; the step uses the sum of the batch's reports
        # (the sum of the batch's Z_x was drawn with its chunk, _chunk_noise).
        return local
