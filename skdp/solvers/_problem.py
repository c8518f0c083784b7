"""The problem a solver sees: its public description (:class:`ProblemSpec`, everything
``plan`` may depend on) and the data with lazy row clipping (:class:`Problem`)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from skdp.geometry import Constraint
from skdp.losses import NORM_SAFETY, GLMLoss, clip_coefficients, row_norms, vector_norms
from skdp.privacy.budget import Budget

__all__ = [
    "ROW_BOUND_TOLERANCE",
    "UNIT_ROUNDOFF",
    "Problem",
    "ProblemSpec",
    "RowBlock",
    "with_intercept",
]

# A full-precision optimisation target: the auto iteration counts aim at an optimisation
# error 1e-12 times the initial one when epsilon = inf (privacy gives no noise floor).
_NON_PRIVATE_SNR = 1e12
# Rows per block of the full-gradient pass: about 2 MB of float64 features per block.
_BLOCK_ELEMENTS = 1 << 18
#: Relative slack of the declared ``row_norm_bound`` that :meth:`Problem.build` accepts
#: (rounding of user-supplied bounds); solvers that split the bound into parts (the
#: feature/intercept body of objective perturbation) inflate it by this much.
ROW_BOUND_TOLERANCE = 1e-9
#: Unit roundoff of float64.
UNIT_ROUNDOFF = float(np.finfo(float).eps) / 2.0
# Rows with a larger norm are clipped in a copy before any product (overflow safety).
_PRESCALE_NORM = 1e100


def with_intercept(norms: np.ndarray, intercept: float, ord: float) -> np.ndarray:
    """``||(x_i, c)||_ord`` from the row norms ``||x_i||_ord`` and the intercept feature ``c``.

    The norm of the two-vector ``(||x_i||_ord, |c|)``, computed scaled by its larger entry
    (:func:`~skdp.losses.vector_norms`): ``a^ord + c^ord`` underflows to 0 for large ``ord``
    (both terms already at ``c = 0.48``, ``ord = 1001``), and a norm of 0 would leave the
    record untruncated and unclipped.
    """
    norms = np.asarray(norms, dtype=float)
    if not intercept:
        return norms
    pairs = np.column_stack([norms, np.full(norms.shape, abs(float(intercept)))])
    # An infinite row norm stays infinite (scaling by it would give inf / inf = NaN).
    return np.where(np.isinf(norms), math.inf, vector_norms(pairs, ord))


@dataclass(frozen=True)
class ProblemSpec:
    """Public description of an ERM problem: everything ``plan`` may depend on.

    The objective is ``F(W) = mean_i phi(x_i^T W, y_i) + (alpha / 2) ||W[:n_penalized]||^2``
    over ``W[:n_penalized]`` in ``constraint``; ``W`` has shape ``(n_params, n_outputs)``
    (the last row is the intercept when ``n_penalized < n_params``).

    Attributes
    ----------
    n_samples : int
        Dataset size ``n`` (public under replace-one).
    n_params : int
        Rows of ``W``: features plus the intercept feature, if any.
    n_outputs : int
        Columns of ``W`` (1 for binary problems, ``K`` for multinomial).
    n_penalized : int
        Leading rows of ``W`` that are penalised and constrained.
    row_norm_bound : float
        Public bound on ``||x_i||`` (in the ``row_norm_ord`` norm) of every augmented row,
        enforced by clipping.
    loss : GLMLoss
        The loss, with its declared derivative bounds.
    constraint : Constraint
        Feasible set of ``W[:n_penalized]``.
    alpha : float
        L2 strength.
    tilt : float
        Tilt ``tau >= 0`` of tilted ERM (0: plain ERM), see
        :class:`~skdp.solvers.OutputPerturbation`.
    adversarial_radius : float
        Radius ``rho >= 0`` of feature perturbations for adversarial training (0: none).
    adversarial_norm : float
        Norm of the perturbation ball: 2 or ``inf``.
    intercept_feature : float
        Value ``c`` of the constant intercept feature (0 without intercept); it is part of
        ``row_norm_bound`` and is never perturbed by the adversary.
    row_norm_ord : float
        The norm of ``row_norm_bound``: 2 (default), ``inf`` (the dual of the l1
        geometry), or any ``q >= 1``. :meth:`row_bound` converts it to other norms.
    """

    n_samples: int
    n_params: int
    n_outputs: int
    n_penalized: int
    row_norm_bound: float
    loss: GLMLoss
    constraint: Constraint
    alpha: float
    tilt: float = 0.0
    adversarial_radius: float = 0.0
    adversarial_norm: float = 2.0
    intercept_feature: float = 0.0
    row_norm_ord: float = 2.0

    def row_bound(self, ord: float = 2.0) -> float:
        """Public bound on ``||x'_i||_ord`` implied by ``row_norm_bound``.

        In ``R^m`` (``m = n_params``), ``||x||_r <= ||x||_q`` for ``r >= q`` and
        ``||x||_r <= m^(1/r - 1/q) ||x||_q`` for ``r < q`` (Hoelder).
        """
        q, r = float(self.row_norm_ord), float(ord)
        if r >= q:
            return float(self.row_norm_bound)
        exponent = (1.0 / r) - (0.0 if q == math.inf else 1.0 / q)
        return float(self.row_norm_bound * self.n_params**exponent)

    def feature_bound(self) -> float:
        """Public l2 bound on the feature part ``x_i`` of every augmented row ``(x_i, c)``.

        ``||x_i||^2 <= X^2 - c^2`` with ``X = row_bound(2)`` inflated by the slack that
        :meth:`Problem.build` accepts on the declared bound, plus ``8 u X^2`` for the
        rounding of ``X`` (``X^2 - c^2`` cancels when ``c ~ X``, which would otherwise
        amplify both into a bound below the rows it admits). ``X`` itself without an
        intercept.
        """
        x_up = self.row_bound(2.0) * (1.0 + ROW_BOUND_TOLERANCE)
        c = abs(float(self.intercept_feature))
        if not c:
            return x_up
        return math.sqrt(max(0.0, (x_up - c) * (x_up + c) + 8.0 * UNIT_ROUNDOFF * x_up * x_up))

    @property
    def score_bound(self) -> float:
        """Public bound on the scores ``|x'_i^T w|`` of feasible parameters (or ``inf``).

        The tightest Hoelder pairing available: ``||w||_2 ||x||_2`` and, for l1/lp balls
        without a free intercept, ``radius * ||x||_q`` with ``q`` the dual exponent.
        """
        bound = self.parameter_bound * self.row_bound(2.0)
        q = self.constraint.score_exponent()
        if self.n_penalized == self.n_params and q is not None:
            bound = min(bound, float(self.constraint.radius) * self.row_bound(q))
        return bound

    def gradient_bound_in(self, ord: float) -> float:
        """Largest entrywise ``ord``-norm of a per-example gradient ``x'_i phi'_i^T``.

        ``||x phi'^T||_ord = ||x||_ord ||phi'||_ord`` and ``||phi'||_ord <= ||phi'||_2``
        for ``ord >= 2``; for ``ord < 2`` the ``K`` outputs cost ``K^(1/ord - 1/2)``.
        """
        derivative = self.loss.derivative_bound_at(self.score_bound)
        if ord < 2:
            derivative *= self.n_outputs ** (1.0 / ord - 0.5)
        return derivative * self.row_bound(ord)

    @property
    def objective_kind(self) -> str:
        """``"erm"``, ``"tilted"``, ``"adversarial"`` or ``"tilted_adversarial"``."""
        parts = [name for name, on in (("tilted", self.tilt > 0),
                                       ("adversarial", self.adversarial_radius > 0)) if on]
        return "_".join(parts) or "erm"

    @property
    def parameter_bound(self) -> float:
        """Public bound on ``||W||_2`` of feasible parameters (``inf`` if none).

        The constraint applies to the penalised rows only, so with a free intercept the
        parameters are unbounded.
        """
        if self.n_penalized < self.n_params:
            return math.inf
        return self.constraint.l2_bound(self.n_params * self.n_outputs)

    @property
    def dimension(self) -> int:
        """Number of noisy coordinates ``n_params * n_outputs``."""
        return self.n_params * self.n_outputs

    @property
    def gradient_bound(self) -> float:
        """Largest per-example l2 gradient norm: ``sup ||phi'|| * ||x'||_2``.

        The derivative bound is taken over the scores reachable on the feasible set,
        :attr:`score_bound` (it matters for the squared loss only).
        """
        return self.gradient_bound_in(2.0)

    @property
    def smoothness(self) -> float:
        """Smoothness of ``F``: ``phi'' <= c`` and ``||x|| <= X`` give ``c X^2``, plus alpha."""
        return self.loss.curvature_bound * self.row_bound(2.0) ** 2 + self.alpha

    @property
    def initial_gap(self) -> float:
        """Public bound on ``F(0) - F*`` (see :meth:`GLMLoss.initial_gap`)."""
        return self.loss.initial_gap(self.n_outputs)

    def gap_reduction(
        self, budget: Budget, gradient_bound: float, strongly_convex: bool = True
    ) -> float:
        """Factor by which the optimisation error must fall to reach the privacy floor.

        The utility theorems of Wang, Ye & Xu (2017; Thm. 4.2 for DP-SVRG) bound the
        excess risk of the private solution by ``p G^2 ln(1/delta) / (n^2 eps^2 mu)``
        (up to constants and logs). Starting from ``F(0) - F* <= initial_gap``, the
        optimisation error must be reduced by ``initial_gap / floor``. ``mu = alpha``; with
        ``alpha = 0`` the convex floor ``G sqrt(p ln(1/delta)) / (n eps)`` (Thm. 4.4) is
        used. Clamped to ``[e, 1e12]``; ``1e12`` when ``epsilon = inf``.
        """
        if not budget.is_private or budget.delta <= 0:
            return _NON_PRIVATE_SNR
        root = math.sqrt(self.dimension * math.log(1.0 / budget.delta))
        if strongly_convex and self.alpha > 0:
            floor = (gradient_bound * root / (self.n_samples * budget.epsilon)) ** 2 / self.alpha
        else:
            floor = gradient_bound * root / (self.n_samples * budget.epsilon)
        ratio = self.initial_gap / floor
        return float(min(max(ratio, math.e), _NON_PRIVATE_SNR))


@dataclass(frozen=True)
class RowBlock:
    """A subset of the stored rows and their lazy clipping factors (see :class:`Problem`)."""

    X: Any
    scale: np.ndarray | None

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape


@dataclass(frozen=True)
class Problem:
    """A private ERM problem: the data plus its public :class:`ProblemSpec`.

    The model sees the augmented rows ``x'_i = [s_i x_i, c]``: ``s_i = min(1, data_norm /
    ||x_i||)`` clips each row to the public ``data_norm`` in the ``spec.row_norm_ord``
    norm (a per-record map), and ``c`` is the constant intercept feature (absent when
    ``c = 0``). Both are applied implicitly, as ``s_i (x_i^T W)`` and ``X^T (s * D)``:
    the user's ``X`` is neither copied nor modified, and the problem costs ``O(n)``
    memory beyond ``X``. (Rows so large that a product could overflow are the exception:
    they are scaled once, in a copy, at :meth:`build`.)

    Attributes
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        The stored rows (read only): the user's ``X``, or a copy with huge rows scaled.
    Y : ndarray of shape (n_samples, n_outputs)
        Targets encoded for the loss.
    spec : ProblemSpec
    row_scale : ndarray of shape (n_samples,)
        Clipping factors applied to the stored rows: ``x_i = row_scale[i] * X[i]``.
    intercept : float
        Value ``c`` of the constant feature (0 without intercept).
    norms : ndarray of shape (n_samples,)
        Euclidean norms of the augmented rows (for l2 gradient clipping).
    """

    X: Any
    Y: np.ndarray
    spec: ProblemSpec
    row_scale: np.ndarray = field(repr=False)
    intercept: float
    norms: np.ndarray = field(repr=False)

    @classmethod
    def build(
        cls,
        X: Any,
        Y: np.ndarray,
        spec: ProblemSpec,
        *,
        data_norm: float | None = None,
        intercept: float = 0.0,
    ) -> Problem:
        """Make a problem; rows are clipped to ``data_norm`` (default: no clipping).

        Clipping is in the ``spec.row_norm_ord`` norm, and the augmented row norm
        ``||[s_i x_i, c]||`` is checked against the declared ``spec.row_norm_bound``.
        """
        expected = X.shape[1] + (1 if intercept else 0)
        if spec.n_params != expected:
            raise ValueError(f"spec.n_params={spec.n_params} but the design has {expected}.")
        if spec.intercept_feature and abs(intercept) != spec.intercept_feature:
            # Solvers split the row bound into features and this declared constant.
            raise ValueError(f"the intercept feature {intercept} differs from the declared "
                             f"spec.intercept_feature={spec.intercept_feature}.")
        # A non-finite entry survives clipping as NaN (inf / inf, then NaN * 0 in X^T D)
        # and makes every later comparison deterministic; the estimators already refuse it.
        values = X.data if sp.issparse(X) else np.asarray(X)
        if not np.all(np.isfinite(values)):
            raise ValueError("X contains NaN or infinity; remove or impute those entries.")
        # Every declared bound (gradient, value range) holds for labels in the loss's
        # domain only; the estimators encode or clip them, a direct caller must too.
        label_error = spec.loss.label_error(np.asarray(Y, dtype=float))
        if label_error is not None:
            raise ValueError(f"{label_error}: the declared bounds of "
                             f"{type(spec.loss).__name__} would not hold.")
        ord = float(spec.row_norm_ord)
        with np.errstate(all="ignore"):
            raw = row_norms(X, ord)
            if data_norm is None:
                scale = np.ones_like(raw)
            else:
                scale = np.minimum(1.0, data_norm * NORM_SAFETY / raw)
            huge = np.flatnonzero(~(raw <= _PRESCALE_NORM))
            if huge.size:
                # Products with these rows could overflow before the clipping factor is
                # applied: scale them once, in a copy (X itself is never modified).
                # Divide by the norm first, then scale to the target norm: a single
                # factor data_norm / ||x|| can be subnormal (data_norm tiny, ||x|| ~ 1e308)
                # and would then round the clipped row above data_norm.
                target = np.minimum(raw[huge], raw[huge] * scale[huge]) if data_norm is None \
                    else np.minimum(raw[huge], data_norm * NORM_SAFETY)
                if sp.issparse(X):
                    rows = sp.csr_matrix(X[huge], dtype=float, copy=True)
                    counts = np.diff(rows.indptr)
                    rows.data = rows.data / np.repeat(raw[huge], counts)
                    rows.data = rows.data * np.repeat(target, counts)
                    X = X.tolil(copy=True)
                    X[huge] = rows
                    X = sp.csr_matrix(X)
                else:
                    X = np.array(X, dtype=float)
                    X[huge] = (X[huge] / raw[huge, None]) * target[:, None]
                raw = raw.copy()
                raw[huge] = row_norms(X[huge], ord)
                scale = scale.copy()
                scale[huge] = 1.0
            clipped = scale * (raw if ord == 2.0 else row_norms(X, 2.0))
            norms = with_intercept(clipped, intercept, 2.0)
            augmented = with_intercept(scale * raw, intercept, ord)
        # With data_norm given, the rows are clipped here; per-example gradients are clipped
        # with the actual norms anyway, so a rounding excess (subnormal scales) is harmless
        # and must not make the fit fail for one record. Without it, the caller's claim is
        # checked.
        if (data_norm is None and augmented.size
                and augmented.max() > spec.row_norm_bound * (1 + ROW_BOUND_TOLERANCE)):
            raise ValueError(
                "rows exceed the declared row_norm_bound; clip them (data_norm) before "
                "building the problem (the sensitivity would not hold)."
            )
        if data_norm is not None:
            # Public check (no data): clipped rows plus the intercept feature must fit the
            # declared bound in its norm.
            implied = float(with_intercept(np.array([float(data_norm)]), intercept, ord)[0])
            if not implied <= spec.row_norm_bound * (1 + ROW_BOUND_TOLERANCE):
                raise ValueError(
                    f"data_norm={data_norm} with the intercept feature {intercept} gives "
                    f"rows of {ord:g}-norm up to {implied:.6g} > the declared "
                    f"row_norm_bound={spec.row_norm_bound:.6g}; declare a bound that "
                    "covers them (the sensitivity would not hold)."
                )
        return cls(X=X, Y=Y, spec=spec, row_scale=scale, intercept=float(intercept),
                   norms=norms)

    def row_norms_in(self, ord: float) -> np.ndarray:
        """Norms ``||x'_i||_ord`` of the augmented clipped rows (one pass over ``X``)."""
        ord = float(ord)
        if ord == 2.0:
            return self.norms
        return with_intercept(self.row_scale * row_norms(self.X, ord), self.intercept, ord)

    # -- the linear model on (a subset of) the augmented rows ------------------------------
    def rows(self, index: Any) -> RowBlock:
        """The rows of a subset (a slice or an index array) with their clipping factors.

        Dense slices are views; the clipping factors are applied to the products.
        """
        scale = self.row_scale[index]
        return RowBlock(self.X[index], None if np.all(scale == 1.0) else scale)

    def row_blocks(self) -> Iterator[tuple[slice, RowBlock]]:
        """Consecutive cache-sized blocks of rows, ``(slice, RowBlock)``, covering all ``n``.

        A pass that computes scores and gradient block by block reads ``X`` from memory once
        (the full-batch passes are memory-bound on tall data)."""
        n = self.spec.n_samples
        step = max(256, _BLOCK_ELEMENTS // max(1, self.X.shape[1]))
        for start in range(0, n, step):
            block = slice(start, min(start + step, n))
            yield block, self.rows(block)

    def scores(self, W: np.ndarray, rows: RowBlock | None = None) -> np.ndarray:
        """``x'_i^T W`` for a :class:`RowBlock` (all rows by default)."""
        if rows is None:
            rows = self.rows(slice(None))
        Xs = rows.X
        Z = np.asarray(Xs @ W[: Xs.shape[1]])
        if rows.scale is not None:
            Z *= rows.scale[:, None]
        if self.intercept:
            Z = Z + self.intercept * W[Xs.shape[1]]
        return Z

    def gradient_sum(self, D: np.ndarray, rows: RowBlock | None = None) -> np.ndarray:
        """``sum_i x'_i D_i^T`` for a :class:`RowBlock` (all rows by default)."""
        if rows is None:
            rows = self.rows(slice(None))
        Xs = rows.X
        d = Xs.shape[1]
        G = np.empty((self.spec.n_params, D.shape[1]))
        G[:d] = np.asarray(Xs.T @ (D if rows.scale is None else D * rows.scale[:, None]))
        if self.intercept:
            G[d] = self.intercept * D.sum(axis=0)
        return G

    def design_matrix(self) -> np.ndarray:
        """The augmented rows as a dense array (tests and references only: O(n d))."""
        X = self.X.toarray() if sp.issparse(self.X) else np.array(self.X, dtype=float)
        X = X * self.row_scale[:, None]
        if self.intercept:
            X = np.hstack([X, np.full((X.shape[0], 1), self.intercept)])
        return X

    # -- clipped gradients -------------------------------------------------------------------
    def clipped_gradient(
        self, W: np.ndarray, clip_norm: float, out_coefficients: np.ndarray | None = None
    ) -> np.ndarray:
        """Mean of the clipped per-example gradients at ``W`` (public denominator ``n``).

        Rows are processed in cache-sized blocks so that ``X`` is read from memory once
        per call (scores and gradient of a block are computed while it is in cache); with
        ``out_coefficients`` the clipped derivatives are also stored (SVRG snapshots).
        """
        n, loss = self.spec.n_samples, self.spec.loss
        grad = np.zeros((self.spec.n_params, W.shape[1]))
        for block, Xs in self.row_blocks():
            D = clip_coefficients(loss.derivative(self.scores(W, Xs), self.Y[block]),
                                  self.norms[block], clip_norm)
            if out_coefficients is not None:
                out_coefficients[block] = D
            grad += self.gradient_sum(D, Xs)
        return grad / n

    def loss_and_gradient_sums(self, W: np.ndarray, loss: GLMLoss | None = None
                               ) -> tuple[float, np.ndarray]:
        """``(sum_i phi(x'_i^T W, y_i), sum_i x'_i phi'_i^T)``, unclipped, in one pass.

        Rows are processed in cache-sized blocks, so ``X`` is read from memory once per
        call instead of twice (scores, then gradient): the inner solvers of output and
        objective perturbation are memory-bound on tall data.
        """
        loss = self.spec.loss if loss is None else loss
        total = 0.0
        grad = np.zeros((self.spec.n_params, W.shape[1]))
        for block, Xs in self.row_blocks():
            V, D = loss.value_and_derivative(self.scores(W, Xs), self.Y[block])
            total += float(np.sum(V))
            grad += self.gradient_sum(D, Xs)
        return total, grad

    # -- unclipped objective (tests, certificates and benchmarks only) ------------------------
    def objective(self, W: np.ndarray) -> float:
        """``F(W)``, unclipped gradients (for tests, certificates and benchmarks only)."""
        p = self.spec.n_penalized
        loss = float(np.mean(self.spec.loss.value(self.scores(W), self.Y)))
        return loss + 0.5 * self.spec.alpha * float(np.sum(W[:p] ** 2))

    def gradient(self, W: np.ndarray) -> np.ndarray:
        """``nabla F(W)`` (for tests, certificates and benchmarks only)."""
        p = self.spec.n_penalized
        D = self.spec.loss.derivative(self.scores(W), self.Y)
        g = self.gradient_sum(D) / self.spec.n_samples
        g[:p] += self.spec.alpha * W[:p]
        return g
