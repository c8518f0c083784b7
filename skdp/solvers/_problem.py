"""The problem a solver sees: its public description (:class:`ProblemSpec`, everything
``plan`` may depend on) and the data with lazy row clipping (:class:`Problem`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from skdp._array_api import (
    as_float64,
    device_all_finite,
    device_has_nan,
    device_row_norms,
    is_device_array,
    namespace,
    to_device,
    to_numpy,
)
from skdp.geometry import Constraint, Unconstrained
from skdp.losses import (
    BUILTIN_LOSSES,
    NORM_SAFETY,
    GLMLoss,
    clip_coefficients,
    is_dask_array,
    row_block_size,
    row_norms,
    vector_norms,
)
from skdp.privacy.budget import Budget
from skdp.solvers import _compiled
from skdp.solvers._blocks import (
    Block,
    DaskBackend,
    as_float_rows,
    block_gradient_sum,
    block_scores,
)
from skdp.solvers._device import (
    DeviceBackend,
    clipped_gradient_pass,
    device_pass,
    loss_and_gradient_pass,
)

__all__ = [
    "ROW_BOUND_TOLERANCE",
    "clip_unless_lossless",
    "exactly_bounded",
    "UNIT_ROUNDOFF",
    "Problem",
    "ProblemSpec",
    "RowBlock",
    "with_intercept",
]

# A full-precision optimisation target: the auto iteration counts aim at an optimisation
# error 1e-12 times the initial one when epsilon = inf (privacy gives no noise floor).
_NON_PRIVATE_SNR = 1e12
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
    if ord == 2.0:
        # hypot: sqrt(a^2 + c^2) without under- or overflow (inf stays inf, NaN NaN).
        return np.hypot(norms, abs(float(intercept)))
    pairs = np.column_stack([norms, np.full(norms.shape, abs(float(intercept)))])
    # An infinite row norm stays infinite (scaling by it would give inf / inf = NaN).
    return np.where(np.isinf(norms), math.inf, vector_norms(pairs, ord))


@dataclass(frozen=True)
class ProblemSpec:
    """Public description of an ERM problem: everything ``plan`` may depend on.

    The objective is ``F(W) = mean_i phi(x_i^T W, y_i) + (alpha / 2) ||W[:n_penalized]||^2``
    over ``W[:n_penalized]`` in ``constraint``; ``W`` has shape ``(n_params, n_outputs)``
    (the last row is the intercept when ``n_penalized < n_params``). Every parameter is
    kept as the attribute of the same name.

    Parameters
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
    tilt : float, default=0.0
        Tilt ``tau >= 0`` of tilted ERM (0: plain ERM), see
        :class:`~skdp.solvers.OutputPerturbation`.
    adversarial_radius : float, default=0.0
        Radius ``rho >= 0`` of feature perturbations for adversarial training (0: none).
    adversarial_norm : float, default=2.0
        Norm of the perturbation ball: 2 or ``inf``.
    intercept_feature : float, default=0.0
        Value ``c`` of the constant intercept feature (0 without intercept); it is part of
        ``row_norm_bound`` and is never perturbed by the adversary.
    row_norm_ord : float, default=2.0
        The norm of ``row_norm_bound``: 2 (default), ``inf`` (the dual of the l1
        geometry), or any ``q >= 1``. :meth:`row_bound` converts it to other norms.
    inference : bool, default=True
        Whether the fit reads the solver's releases for standard errors
        (:class:`~skdp.solvers._base.Inference`); ``False`` for an estimator without
        intervals, several outputs, or an intercept chosen after the solver. Public: the
        estimator, the label set and its settings. The solvers read
        :attr:`standard_errors`.
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
    inference: bool = True

    @property
    def standard_errors(self) -> bool:
        """Whether the run releases what standard errors need.

        ``inference`` and no constraint (a minimiser held on the constraint's boundary
        has no normal law). Where false, a solver skips those releases (DP Newton: its
        Hessian near the output and the dispersion; sufficient statistics: ``y'y``) and
        returns no ``Inference``.
        """
        return bool(self.inference) and isinstance(self.constraint, Unconstrained)

    def row_bound(self, ord: float = 2.0) -> float:
        """Public bound on ``||x'_i||_ord`` implied by ``row_norm_bound``.

        In ``R^m`` (``m = n_params``), ``||x||_r <= ||x||_q`` for ``r >= q`` and
        ``||x||_r <= m^(1/r - 1/q) ||x||_q`` for ``r < q`` (Hoelder).

        Parameters
        ----------
        ord : float, default=2.0
            The norm of the bound (``>= 1``, ``inf`` allowed).

        Returns
        -------
        float
            The bound on every augmented row's ``ord``-norm.
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

        Returns
        -------
        float
            The bound on ``||x_i||_2``.
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

        Parameters
        ----------
        ord : float
            The entrywise norm (``>= 1``, ``inf`` allowed).

        Returns
        -------
        float
            The loss's derivative bound over the feasible scores times the row bound in
            that norm (``inf`` when unbounded).
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

        Parameters
        ----------
        budget : Budget
            The budget of the fit.
        gradient_bound : float
            The per-example gradient bound ``G``.
        strongly_convex : bool, default=True
            Use the strongly convex floor when ``alpha > 0`` (otherwise the convex one).

        Returns
        -------
        float
            ``initial_gap / floor``, in ``[e, 1e12]``.
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
    """A subset of the stored rows (float64) and their lazy clipping factors (see
    :class:`Problem`)."""

    X: Any
    scale: np.ndarray | None

    @property
    def shape(self) -> tuple[int, int]:
        return self.X.shape


# Per-row columns of the clipping statistics (:func:`_clipping_statistics`).
_SCALE, _NORM, _AUGMENTED, _RAW = range(4)


def _clipping_statistics(X: Any, ord: float, data_norm: float | None,
                         intercept: float) -> np.ndarray:
    """Per-row ``[s_i, ||x'_i||_2, ||x'_i||_ord, ||x_i||_ord]`` of a float64 block.

    ``s_i = min(1, data_norm NORM_SAFETY / ||x_i||_ord)`` (1 without ``data_norm``) and
    ``x'_i = [s_i x_i, c]``. Every entry is a function of its own row only.
    """
    with np.errstate(all="ignore"):
        raw = row_norms(X, ord)
        l2 = raw if ord == 2.0 else row_norms(X, 2.0)
    return statistics_from_norms(raw, l2, ord, data_norm, intercept)


def statistics_from_norms(raw: np.ndarray, l2: np.ndarray, ord: float,
                          data_norm: float | None, intercept: float) -> np.ndarray:
    """:func:`_clipping_statistics` from the rows' ``ord``-norms ``raw`` and l2 norms."""
    with np.errstate(all="ignore"):
        scale = np.ones_like(raw) if data_norm is None else \
            np.minimum(1.0, data_norm * NORM_SAFETY / raw)
        out = np.empty((raw.shape[0], 4))
        out[:, _SCALE] = scale
        out[:, _NORM] = with_intercept(scale * l2, intercept, 2.0)
        out[:, _AUGMENTED] = out[:, _NORM] if ord == 2.0 else \
            with_intercept(scale * raw, intercept, ord)
        out[:, _RAW] = raw
    return out


def _all_finite(X: Any) -> bool:
    values = X.data if sp.issparse(X) else X
    return bool(np.all(np.isfinite(values)))


def non_finite_message(has_nan: bool, dtype: Any) -> str:
    """scikit-learn's message for an ``X`` with a NaN (first) or an infinite entry, shared
    by :meth:`Problem.build` and the estimators' lazy check of a dask ``X``."""
    if has_nan:
        return "Input X contains NaN."
    return f"Input X contains infinity or a value too large for dtype('{np.dtype(dtype)}')."


def _huge(raw: np.ndarray) -> np.ndarray:
    """Rows whose products could overflow before the clipping factor is applied."""
    return np.flatnonzero(~(raw <= _PRESCALE_NORM))


def _prescale_targets(raw: np.ndarray, scale: np.ndarray | float, data_norm: float | None
                      ) -> np.ndarray:
    """The norms huge rows are scaled to (once, before any product)."""
    if data_norm is None:
        return np.minimum(raw, raw * scale)
    return np.minimum(raw, data_norm * NORM_SAFETY)


def _scale_dense_rows(X: Any, huge: np.ndarray, raw: np.ndarray, target: np.ndarray
                      ) -> np.ndarray:
    """A float64 copy of dense ``X`` with rows ``huge`` (of norms ``raw``) scaled to the
    norms ``target``: divided by the norm first, then scaled (a single factor ``target /
    raw`` can be subnormal, ``data_norm`` tiny and ``||x|| ~ 1e308``, and would then round
    the clipped row above ``data_norm``)."""
    with np.errstate(all="ignore"):
        X = np.array(X, dtype=float)
        X[huge] = (X[huge] / raw[:, None]) * target[:, None]
    return X


def _prescale_dense(X: np.ndarray, ord: float, data_norm: float | None) -> np.ndarray:
    """A dense float64 block with its huge rows scaled (a copy if there are any).

    The same map as :meth:`Problem._statistics` applies to an in-memory ``X``.
    """
    with np.errstate(all="ignore"):
        raw = row_norms(X, ord)
    huge = _huge(raw)
    if not huge.size:
        return X
    return _scale_dense_rows(X, huge, raw[huge], _prescale_targets(raw[huge], 1.0, data_norm))


def _chunk_statistics(X: Any, *, ord: float, data_norm: float | None, intercept: float
                      ) -> np.ndarray:
    """:func:`_clipping_statistics` of a dask chunk as :meth:`Problem._statistics` gives
    them (huge rows prescaled, then unclipped), plus a status column: 1 for a non-finite
    chunk, 2 for a chunk with huge rows (prescaled lazily in every pass)."""
    X = as_float_rows(X)
    out = np.zeros((X.shape[0], 5))
    if not _all_finite(X):
        out[:, 4] = 1.0
        return out
    out[:, :4] = _clipping_statistics(X, ord, data_norm, intercept)
    huge = _huge(out[:, _RAW])
    if huge.size:
        if sp.issparse(X):
            raise ValueError("rows of norm above 1e100 in a sparse dask chunk; scale them "
                             "or pass a dense dask array.")
        out[huge, :4] = _clipping_statistics(_prescale_dense(X, ord, data_norm)[huge], ord,
                                             None, intercept)
        out[:, 4] = 2.0
    return out


def _chunk_prescale(X: Any, *, ord: float, data_norm: float | None) -> np.ndarray:
    return _prescale_dense(as_float_rows(X), ord, data_norm)


def clip_unless_lossless(D: np.ndarray, norms: np.ndarray, clip_norm: float, skip: bool,
                         ord: float = 2.0) -> np.ndarray:
    """:func:`~skdp.losses.clip_coefficients` of the derivatives ``D``, skipped when
    ``skip`` (:meth:`Problem.clip_cannot_bind`: public facts prove the clip lossless) and
    every derivative is finite. A non-finite derivative (an overflowing iterate) takes the
    clipping path, which drops it: the skip never changes a result.

    ``skip`` holds only for a loss whose derivative is bounded by a finite constant
    (``exactly_bounded``), so the sum of ``D`` is finite exactly when every entry is (a
    NaN or an infinity makes it NaN or infinite; finite bounded entries cannot overflow
    it): one reduction, no temporary.
    """
    if skip and math.isfinite(float(D.sum())):
        return D
    return clip_coefficients(D, norms, clip_norm, ord=ord)


@device_pass(clipped_gradient_pass)
def _clipped_gradient_block(block: Block, W: np.ndarray, loss: GLMLoss, clip_norm: float,
                            skip: bool) -> np.ndarray:
    """``sum_i x'_i clip(phi'_i)^T`` over one block (see :meth:`Problem.clipped_gradient`).

    Floating-point warnings are silenced: an overflowing record is dropped by the clip,
    and a warning would say, from the data, that one did."""
    with np.errstate(over="ignore", invalid="ignore"):
        D = loss.derivative_inplace(block.scores(W), block.Y)  # the scores are scratch
        return block.gradient_sum(clip_unless_lossless(D, block.norms, clip_norm, skip))


@device_pass(loss_and_gradient_pass)
def _loss_and_gradient_block(block: Block, W: np.ndarray, loss: GLMLoss) -> np.ndarray:
    """``[sum_i phi_i, vec(sum_i x'_i phi'_i^T)]`` over one block."""
    V, D = loss.value_and_derivative(block.scores(W), block.Y)
    G = block.gradient_sum(D)
    out = np.empty(1 + G.size)
    out[0] = np.sum(V)
    out[1:] = G.ravel()
    return out


def exactly_bounded(loss: GLMLoss) -> bool:
    """Whether the computed derivative of ``loss`` never exceeds its declared global
    ``derivative_bound`` (up to a few ulps): the built-in classes themselves, not
    subclasses, which may override ``derivative``. Read where a bound on the derivative,
    not the clip, carries a sensitivity: :meth:`Problem.clip_cannot_bind` and DP Newton's
    shaped gradient noise (:func:`~skdp.solvers.newton.intercept_noise_bound`).

    Parameters
    ----------
    loss : GLMLoss
        The loss.

    Returns
    -------
    bool
        Whether ``derivative_bound`` bounds every computed derivative.
    """
    return (type(loss) in BUILTIN_LOSSES.values() and math.isfinite(loss.derivative_bound)
            and loss.derivative_bound_at(math.inf) == loss.derivative_bound)


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

    ``X`` may be a float64 or float32 array, a ``numpy.memmap``, a CSR matrix or a
    ``dask.array`` (see docs/scaling_out.md): it is stored as given and converted to
    float64 one block of rows at a time; every product and sum is in float64.

    Every parameter is kept as the attribute of the same name; :meth:`build` computes
    them from the user's data.

    Parameters
    ----------
    X : ndarray, memmap, CSR matrix or dask array of shape (n_samples, n_features)
        The stored rows (read only): the user's ``X``, or a copy with huge rows scaled.
    Y : ndarray of shape (n_samples, n_outputs)
        Targets encoded for the loss.
    spec : ProblemSpec
        The public description of the problem.
    row_scale : ndarray of shape (n_samples,)
        Clipping factors applied to the stored rows: ``x_i = row_scale[i] * X[i]``.
    intercept : float
        Value ``c`` of the constant feature (0 without intercept).
    norms : ndarray of shape (n_samples,)
        Euclidean norms of the augmented rows (for l2 gradient clipping).
    clipped_to : float or None, default=None
        The ``data_norm`` the rows were clipped to at :meth:`build` (public), if any.
    backend : DaskBackend or None, default=None
        The chunked per-row arrays of a dask-backed ``X`` (``None`` in memory).
    on_steps : callable or None, default=None
        Called with the number of planned steps done as the solver goes (progress
        output, see :meth:`advance`).
    compiled_rows : bool, default=False
        Whether the caller's ``X`` was a dense C-ordered float64 or float32 array (its
        layout, read at :meth:`build` before any copy): a condition of the compiled pass.
    """

    X: Any
    Y: np.ndarray
    spec: ProblemSpec
    row_scale: np.ndarray = field(repr=False)
    intercept: float
    norms: np.ndarray = field(repr=False)
    clipped_to: float | None = None
    backend: DaskBackend | None = field(default=None, repr=False, compare=False)
    on_steps: Callable[[int], None] | None = field(default=None, repr=False, compare=False)
    compiled_rows: bool = field(default=False, repr=False, compare=False)

    @classmethod
    def build(
        cls,
        X: Any,
        Y: np.ndarray,
        spec: ProblemSpec,
        *,
        data_norm: float | None = None,
        intercept: float = 0.0,
        on_steps: Callable[[int], None] | None = None,
        raw_norms: np.ndarray | None = None,
    ) -> Problem:
        """Make a problem; rows are clipped to ``data_norm`` (default: no clipping).

        Clipping is in the ``spec.row_norm_ord`` norm, and the augmented row norm
        ``||[s_i x_i, c]||`` is checked against the declared ``spec.row_norm_bound``.
        One pass over ``X`` by blocks of rows (by chunks for a dask array): no temporary
        beyond a block and ``O(n)`` per-row statistics.

        Parameters
        ----------
        X : array-like, sparse matrix or dask array of shape (n_samples, n_features)
            The rows (never modified).
        Y : ndarray of shape (n_samples, n_outputs)
            Targets encoded for ``spec.loss`` (in its label domain).
        spec : ProblemSpec
            The public description; ``n_params`` must count the intercept feature.
        data_norm : float or None, default=None
            Public bound the rows are clipped to; ``None`` checks them against
            ``spec.row_norm_bound`` instead.
        intercept : float, default=0.0
            Value of the constant intercept feature (0: none).
        on_steps : callable or None, default=None
            Progress callback (see :meth:`advance`).
        raw_norms : ndarray of shape (n_samples,) or None, default=None
            The rows' ``spec.row_norm_ord``-norms as :func:`~skdp.losses.row_norms` gives
            them, already computed by the caller (an estimator's private ``data_norm``
            reads them): with ``row_norm_ord = 2`` and a dense in-memory ``X`` they
            replace the pass that computes them here (the same numbers); otherwise
            ignored.

        Returns
        -------
        Problem
            The problem, with the clipping factors and row norms computed.

        Raises
        ------
        ValueError
            If the shapes, the intercept or the labels disagree with ``spec``, a row is
            not finite, or the rows exceed the declared bound.
        """
        expected = X.shape[1] + (1 if intercept else 0)
        if spec.n_params != expected:
            raise ValueError(f"spec.n_params={spec.n_params} but the design has {expected}.")
        if spec.intercept_feature and abs(intercept) != spec.intercept_feature:
            # Solvers split the row bound into features and this declared constant.
            raise ValueError(f"the intercept feature {intercept} differs from the declared "
                             f"spec.intercept_feature={spec.intercept_feature}.")
        # Every declared bound (gradient, value range) holds for labels in the loss's
        # domain only; the estimators encode or clip them, a direct caller must too.
        label_error = spec.loss.label_error(np.asarray(Y, dtype=float))
        if label_error is not None:
            raise ValueError(f"{label_error}: the declared bounds of "
                             f"{type(spec.loss).__name__} would not hold.")
        ord = float(spec.row_norm_ord)
        backend = None
        # The layout of the caller's X, before any copy of huge rows (whose occurrence
        # depends on the data): the compiled pass is decided from it.
        compiled_rows = (isinstance(X, np.ndarray) and X.dtype in (np.float64, np.float32)
                         and X.flags.c_contiguous)
        if is_dask_array(X):
            X, scale, norms, augmented_max = cls._dask_statistics(X, ord, data_norm, intercept)
        elif is_device_array(X):
            X, scale, norms, augmented_max = cls._device_statistics(X, ord, data_norm,
                                                                    intercept)
        else:
            reuse = (raw_norms is not None and ord == 2.0 and not sp.issparse(X)
                     and np.shape(raw_norms) == (X.shape[0],))
            X, scale, norms, augmented_max = cls._statistics(
                X, ord, data_norm, intercept, raw_norms if reuse else None)
        # With data_norm given, the rows are clipped here; per-example gradients are clipped
        # with the actual norms anyway, so a rounding excess (subnormal scales) is harmless
        # and must not make the fit fail for one record. Without it, the caller's claim is
        # checked.
        if (data_norm is None and scale.size
                and not augmented_max <= spec.row_norm_bound * (1 + ROW_BOUND_TOLERANCE)):
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
        Y = np.asarray(Y)
        if is_dask_array(X):
            backend = DaskBackend.build(X, Y, scale, norms)
        elif is_device_array(X):
            backend = DeviceBackend.build(X, Y, scale, norms)
        return cls(X=X, Y=Y, spec=spec, row_scale=scale, intercept=float(intercept),
                   norms=norms, clipped_to=None if data_norm is None else float(data_norm),
                   backend=backend, on_steps=on_steps, compiled_rows=compiled_rows)

    @staticmethod
    def _statistics(X: Any, ord: float, data_norm: float | None, intercept: float,
                    raw_norms: np.ndarray | None = None
                    ) -> tuple[Any, np.ndarray, np.ndarray, float]:
        """The stored ``X``, the clipping factors, the augmented l2 norms and the largest
        augmented ``ord``-norm (:func:`_clipping_statistics`), by blocks of rows: two
        ``n``-vectors and one block of temporaries. ``raw_norms``: the dense rows' l2
        norms (``ord = 2``), given: ``X`` is then read only where a norm is not finite."""
        if not sp.issparse(X) and not isinstance(X, np.ndarray):
            X = np.asarray(X)
        n = X.shape[0]
        step = row_block_size(X.shape[1], n)
        scale, norms = np.empty(n), np.empty(n)
        augmented_max = 0.0
        huge, huge_raw = [], []
        for start in range(0, n, step):
            block = slice(start, min(start + step, n))
            if raw_norms is None:
                Xb = as_float_rows(X[block])
                stats = _clipping_statistics(Xb, ord, data_norm, intercept)
            else:
                Xb = None
                stats = statistics_from_norms(raw_norms[block], raw_norms[block], ord,
                                              data_norm, intercept)
            # A non-finite entry survives clipping as NaN (inf / inf, then NaN * 0 in
            # X^T D) and makes every later comparison deterministic; the estimators
            # already refuse it. A dense row with a NaN or infinite entry has a NaN or
            # infinite norm, so the entries are checked only when a norm is (a finite
            # row whose norm exceeds the largest float is one too).
            suspect = sp.issparse(X) or not np.all(np.isfinite(stats[:, _RAW]))
            if suspect and Xb is None:
                Xb = as_float_rows(X[block])
            if suspect and not _all_finite(Xb):
                values = Xb.data if sp.issparse(Xb) else Xb
                raise ValueError(non_finite_message(bool(np.isnan(values).any()), X.dtype))
            scale[block], norms[block] = stats[:, _SCALE], stats[:, _NORM]
            augmented_max = max(augmented_max, float(stats[:, _AUGMENTED].max(initial=0.0)))
            rows = _huge(stats[:, _RAW])
            huge.append(rows + start)
            huge_raw.append(stats[rows, _RAW])
        huge = np.concatenate(huge) if huge else np.zeros(0, dtype=int)
        if huge.size:
            # Products with these rows could overflow before the clipping factor is
            # applied: scale them once, in a copy (X itself is never modified).
            raw = np.concatenate(huge_raw)
            target = _prescale_targets(raw, scale[huge], data_norm)
            with np.errstate(all="ignore"):
                if sp.issparse(X):
                    rows = sp.csr_matrix(X[huge], dtype=float, copy=True)
                    counts = np.diff(rows.indptr)
                    rows.data = rows.data / np.repeat(raw, counts)
                    rows.data = rows.data * np.repeat(target, counts)
                    X = X.tolil(copy=True)
                    X[huge] = rows
                    X = sp.csr_matrix(X)
                else:
                    X = _scale_dense_rows(X, huge, raw, target)
            stats = _clipping_statistics(as_float_rows(X[huge]), ord, None, intercept)
            scale[huge], norms[huge] = stats[:, _SCALE], stats[:, _NORM]
            augmented_max = float(max(augmented_max, stats[:, _AUGMENTED].max()))
        return X, scale, norms, augmented_max

    @staticmethod
    def _dask_statistics(X: Any, ord: float, data_norm: float | None, intercept: float
                         ) -> tuple[Any, np.ndarray, np.ndarray, float]:
        """:meth:`_statistics` of a dask array: one task per chunk of rows."""
        import dask.array as da

        if X.ndim != 2 or any(math.isnan(c) for c in X.chunks[0]):
            raise ValueError("a dask X needs known chunk sizes; call X.compute_chunk_sizes() "
                             "first.")
        # Whole rows per chunk (the row norms need them); the row chunks are the user's.
        X = X.rechunk({1: -1})
        stats = da.map_blocks(_chunk_statistics, X, ord=ord, data_norm=data_norm,
                              intercept=intercept, dtype=float,
                              chunks=(X.chunks[0], (5,))).compute()
        if np.any(stats[:, 4] == 1.0):
            # (the estimators check a dask X first, with the message of its kind)
            raise ValueError("Input X contains NaN or infinity.")
        if np.any(stats[:, 4] == 2.0):
            # Huge rows are scaled lazily, chunk by chunk, in every pass (X is not copied).
            X = da.map_blocks(_chunk_prescale, X, ord=ord, data_norm=data_norm, dtype=float)
        return (X, stats[:, _SCALE].copy(), stats[:, _NORM].copy(),
                float(stats[:, _AUGMENTED].max(initial=0.0)))

    @staticmethod
    def _device_statistics(X: Any, ord: float, data_norm: float | None, intercept: float
                           ) -> tuple[Any, np.ndarray, np.ndarray, float]:
        """:meth:`_statistics` of an array API ``X`` on its device: the row norms are
        computed there (scaled by each row's largest entry) and only they come back."""
        raw = device_row_norms(X, ord)
        if not np.all(np.isfinite(raw)) and not device_all_finite(X):
            # A non-finite norm comes from a non-finite entry, or from finite entries whose
            # norm overflows (a huge row, scaled below as on the host).
            raise ValueError(non_finite_message(device_has_nan(X), to_numpy(X[:1, :1]).dtype))
        l2 = raw if ord == 2.0 else device_row_norms(X, 2.0)
        huge = _huge(raw)
        if huge.size:
            # As on the host: rows whose products could overflow are scaled once, in a
            # float64 copy on the device (divided by their norm first, then scaled).
            divide, times = np.ones_like(raw), np.ones_like(raw)
            divide[huge] = raw[huge]
            times[huge] = _prescale_targets(raw[huge], 1.0, data_norm)
            xp = namespace(X)
            X = (as_float64(xp, X) / to_device(divide, X)[:, None]) * to_device(times, X)[:, None]
            raw = device_row_norms(X, ord)
            l2 = raw if ord == 2.0 else device_row_norms(X, 2.0)
            stats = statistics_from_norms(raw, l2, ord, data_norm, intercept)
            stats[huge] = statistics_from_norms(raw[huge], l2[huge], ord, None, intercept)
        else:
            stats = statistics_from_norms(raw, l2, ord, data_norm, intercept)
        return (X, stats[:, _SCALE].copy(), stats[:, _NORM].copy(),
                float(stats[:, _AUGMENTED].max(initial=0.0)))

    # -- public facts about the stored rows -----------------------------------------------
    @property
    def out_of_core(self) -> bool:
        """Whether ``X`` is a dask array (passes run chunk by chunk, on its scheduler)."""
        return isinstance(self.backend, DaskBackend)

    @property
    def on_device(self) -> bool:
        """Whether ``X`` is an array API array kept on its device (:mod:`skdp.solvers._device`)."""
        return isinstance(self.backend, DeviceBackend)

    def clip_cannot_bind(self, clip_norm: float) -> bool:
        """Whether public quantities prove that l2 clipping at ``clip_norm`` is lossless.

        True when ``clip_norm >= sup|phi'| * row_bound(2)`` with the loss's GLOBAL
        derivative bound (not :attr:`ProblemSpec.gradient_bound`, which bounds the scores
        of feasible parameters only: DP-GD's momentum evaluates gradients at extrapolated,
        unprojected points), the rows were clipped at :meth:`build` to a ``data_norm``
        whose augmented norm is within the declared ``row_norm_bound``, and the loss is a
        built-in class with a globally bounded derivative. Then every per-example
        gradient ``x'_i phi'_i^T``, at ANY parameters, has norm ``||x'_i|| ||phi'_i|| <=
        sup|phi'| row_bound(2) <= clip_norm``: the rows are clipped to
        ``data_norm * NORM_SAFETY`` (a ``1e-12`` relative margin in the row norm; at least
        a quarter of it survives the unclipped intercept feature and the Hoelder
        conversion to l2), which covers the few-ulp rounding of the computed derivative
        (``|expit - y| <= 1``, ``||softmax - e_y|| <= sqrt(2)``, ``|clip(r)| <= delta``)
        and of the bound itself. The sensitivity of the clipped sum therefore holds
        without the clip, and the decision reads no data.

        Parameters
        ----------
        clip_norm : float
            The l2 clip of the per-example gradients.

        Returns
        -------
        bool
            Whether clipping at ``clip_norm`` provably changes no gradient.
        """
        spec = self.spec
        if self.clipped_to is None or not exactly_bounded(spec.loss):
            return False
        implied = float(with_intercept(np.array([self.clipped_to]), self.intercept,
                                       float(spec.row_norm_ord))[0])
        # derivative_bound_at(inf) is the global bound (equal to derivative_bound for the
        # losses exactly_bounded admits); the K outputs enter as in gradient_bound_in(2).
        anywhere = spec.loss.derivative_bound_at(math.inf) * spec.row_bound(2.0)
        return implied <= spec.row_norm_bound and float(clip_norm) >= anywhere

    def row_norms_in(self, ord: float) -> np.ndarray:
        """Return the norms ``||x'_i||_ord`` of the augmented clipped rows.

        One pass over ``X`` (none for ``ord=2``: the stored l2 norms).

        Parameters
        ----------
        ord : float
            The norm (``>= 1``, ``inf`` allowed).

        Returns
        -------
        ndarray of shape (n_samples,)
            The norms, intercept feature included.
        """
        ord = float(ord)
        if ord == 2.0:
            return self.norms
        # row_norms runs a dask X chunk by chunk (one task per chunk of whole rows).
        return with_intercept(self.row_scale * row_norms(self.X, ord), self.intercept, ord)

    def advance(self, steps: int = 1) -> None:
        """Report ``steps`` planned steps done (progress output; a no-op by default).

        Solvers call it as they go; the count is fixed by the plan, never by the data.

        Parameters
        ----------
        steps : int, default=1
            Number of planned steps done since the last call.
        """
        if self.on_steps is not None:
            self.on_steps(steps)

    # -- the linear model on (a subset of) the augmented rows ------------------------------
    def rows(self, index: Any) -> RowBlock:
        """The rows of a subset (a slice or an index array) with their clipping factors.

        Dense float64 slices are views; other storage is converted (a dask subset is
        computed). The clipping factors are applied to the products.

        Parameters
        ----------
        index : slice or array of int
            The rows.

        Returns
        -------
        RowBlock
            The float64 rows and their clipping factors (``None`` when none is below 1).
        """
        if self.on_device:
            # Rows a solver indexes come to the host (the blocked passes stay on the device).
            if isinstance(index, np.ndarray):
                xp = self.backend.xp
                X = to_numpy(xp.take(self.X, to_device(index, self.X, dtype=xp.int64), axis=0))
            else:
                X = to_numpy(self.X[index, ...])
        else:
            X = self.X[index]
        if self.out_of_core:
            X = X.compute()
        if self.unclipped:
            return RowBlock(as_float_rows(X), None)
        scale = self.row_scale[index]
        return RowBlock(as_float_rows(X), None if np.all(scale == 1.0) else scale)

    @cached_property
    def unclipped(self) -> bool:
        """Whether no row was clipped (every clipping factor is 1), found once: the passes
        then skip the per-block check (a timing matter only; the products are the same)."""
        return bool(np.all(self.row_scale == 1.0))

    def row_blocks(self) -> Iterator[tuple[slice, RowBlock]]:
        """Consecutive cache-sized blocks of rows, ``(slice, RowBlock)``, covering all ``n``.

        A pass that computes scores and gradient block by block reads ``X`` from memory once
        (the full-batch passes are memory-bound on tall data). A dask ``X`` is read chunk by
        chunk on the client; :meth:`block_sum` runs a pass on the chunks' workers instead.

        Yields
        ------
        block : slice
            The rows of the block.
        rows : RowBlock
            Those rows with their clipping factors.
        """
        n = self.spec.n_samples
        if self.out_of_core:
            start = 0
            for size in self.X.chunks[0]:
                block = slice(start, start + size)
                start += size
                yield block, self.rows(block)
            return
        step = row_block_size(self.X.shape[1], n)
        for start in range(0, n, step):
            block = slice(start, min(start + step, n))
            yield block, self.rows(block)

    def block_sum(self, fn: Callable[..., np.ndarray], shape: tuple[int, ...], *args: Any
                  ) -> np.ndarray:
        """``sum over blocks b of fn(Block_b, *args)``, an array of shape ``shape``.

        The generic full-batch pass: ``fn`` maps a :class:`~skdp.solvers._blocks.Block`
        (rows, clipping factors, targets, row norms of the block) to an array of the
        public ``shape``. In memory the blocks are cache-sized and summed in order; on a
        dask ``X`` they are its chunks, ``fn`` runs where they are, and the per-chunk
        results are tree-reduced (``fn`` and ``args`` must pickle: a module-level
        function). The number of blocks and tasks depends on the shape and the chunking
        of ``X`` only.

        Parameters
        ----------
        fn : callable
            ``fn(block, *args)``, returning an array of shape ``shape``.
        shape : tuple of int
            The public shape of every block's result.
        *args
            Further arguments of ``fn``.

        Returns
        -------
        ndarray of shape ``shape``
            The sum of ``fn``'s results over all blocks.
        """
        if self.backend is not None:
            return self.backend.block_sum(fn, tuple(shape), args, self.intercept,
                                          self.spec.n_params)
        total = np.zeros(shape)
        for block, rows in self.row_blocks():
            total += fn(Block(rows.X, rows.scale, self.Y[block], self.norms[block],
                              self.intercept, self.spec.n_params), *args)
        return total

    def _in_memory_float64(self) -> bool:
        return self.backend is None and self.X.dtype == np.float64

    def scores(self, W: np.ndarray, rows: RowBlock | None = None) -> np.ndarray:
        """Compute the scores ``x'_i^T W`` of the augmented clipped rows.

        Parameters
        ----------
        W : ndarray of shape (n_params, n_outputs)
            The parameters.
        rows : RowBlock or None, default=None
            A block of rows (:meth:`rows`); ``None``: all rows.

        Returns
        -------
        ndarray of shape (n_rows, n_outputs)
            The scores, one row per row of the block.
        """
        if rows is None:
            if self.backend is not None:
                return self.backend.scores(W, self.intercept)
            if not self._in_memory_float64():
                Z = np.empty((self.spec.n_samples, W.shape[1]))
                for block, part in self.row_blocks():
                    Z[block] = self.scores(W, part)
                return Z
            rows = self.rows(slice(None))
        return block_scores(rows.X, rows.scale, W, self.intercept)

    def gradient_sum(self, D: np.ndarray, rows: RowBlock | None = None) -> np.ndarray:
        """Sum ``sum_i x'_i D_i^T`` of the rows weighted by per-row coefficients.

        Parameters
        ----------
        D : ndarray of shape (n_rows, n_outputs)
            One coefficient row per row of the block (loss derivatives).
        rows : RowBlock or None, default=None
            A block of rows (:meth:`rows`); ``None``: all rows.

        Returns
        -------
        ndarray of shape (n_params, n_outputs)
            The sum, the intercept feature's row last.
        """
        if rows is None:
            if self.backend is not None:
                return self.backend.gradient_sum(D, self.intercept, self.spec.n_params)
            if not self._in_memory_float64():
                G = np.zeros((self.spec.n_params, D.shape[1]))
                for block, part in self.row_blocks():
                    G += self.gradient_sum(D[block], part)
                return G
            rows = self.rows(slice(None))
        return block_gradient_sum(rows.X, rows.scale, D, self.intercept, self.spec.n_params)

    def design_matrix(self) -> np.ndarray:
        """The augmented rows as a dense array (tests and references only: O(n d)).

        Returns
        -------
        ndarray of shape (n_samples, n_params)
            The clipped rows, with the intercept feature's column last when there is one.
        """
        X = self.X.compute() if self.out_of_core else self.X
        if self.on_device:
            X = to_numpy(X)
        X = X.toarray() if sp.issparse(X) else np.array(X, dtype=float)
        X = X * self.row_scale[:, None]
        if self.intercept:
            X = np.hstack([X, np.full((X.shape[0], 1), self.intercept)])
        return X

    # -- clipped gradients -------------------------------------------------------------------
    def clipped_gradient(
        self, W: np.ndarray, clip_norm: float, out_coefficients: np.ndarray | None = None,
        *, passes: int = 1, norms: np.ndarray | None = None, ord: float = 2.0,
    ) -> np.ndarray:
        """Mean of the clipped per-example gradients at ``W`` (public denominator ``n``).

        Rows are processed in cache-sized blocks so that ``X`` is read from memory once
        per call (scores and gradient of a block are computed while it is in cache); with
        ``out_coefficients`` the clipped derivatives are also stored (SVRG snapshots).
        When :meth:`clip_cannot_bind` proves from public quantities that no gradient can
        exceed ``clip_norm``, the clipping arithmetic is skipped (the result is the same).
        ``passes``, the number of such calls the fit plans (public), decides whether the
        compiled pass runs (:meth:`_compiled_pass`); its result equals the numpy pass's to
        rounding.

        ``norms`` and ``ord`` clip in the entrywise ``l_ord`` norm instead (regularized
        mirror descent's dual norm), ``norms`` the rows' ``l_ord`` norms
        (:meth:`row_norms_in`): ``||x'_i d_i^T||_ord = ||x'_i||_ord ||d_i||_ord``
        (:func:`~skdp.losses.clip_coefficients`; one output: only the norms differ, so
        the compiled pass serves it too). No clip is skipped then (the lossless proof is
        for ``l2``), and ``out_coefficients`` is not supported.

        Parameters
        ----------
        W : ndarray of shape (n_params, n_outputs)
            The parameters.
        clip_norm : float
            The clip of every per-example gradient.
        out_coefficients : ndarray of shape (n_samples, n_outputs) or None, default=None
            If given, receives the clipped loss derivatives (in memory only).
        passes : int, default=1
            How many such calls the fit plans (public).
        norms : ndarray of shape (n_samples,) or None, default=None
            The rows' ``l_ord`` norms, to clip in that norm instead of l2.
        ord : float, default=2.0
            The norm of ``norms``.

        Returns
        -------
        ndarray of shape (n_params, n_outputs)
            The sum of the clipped gradients divided by ``n_samples``.

        Raises
        ------
        ValueError
            If ``norms`` or ``out_coefficients`` have the wrong shape, or
            ``out_coefficients`` is given with a dask ``X``.
        """
        n, loss = self.spec.n_samples, self.spec.loss
        shape = (self.spec.n_params, W.shape[1])
        custom = norms is not None
        if custom and (out_coefficients is not None or np.shape(norms) != (n,)):
            raise ValueError("norms must be the n_samples row norms of the clip's norm, "
                             "without out_coefficients.")
        skip = not custom and self.clip_cannot_bind(clip_norm)
        kernel = self._compiled_pass(passes, W.shape[1])
        if kernel is not None:
            run, code, parameter = kernel
            X = np.asarray(self.X)  # a numpy.memmap as its ndarray view (no copy)
            store = out_coefficients is not None
            # The kernel does not check bounds: the shapes are checked here.
            if W.shape[0] != shape[0] or (store and out_coefficients.shape != (n, 1)):
                raise ValueError(f"W has {W.shape[0]} rows for {shape[0]} parameters, or "
                                 "out_coefficients is not of shape (n_samples, 1).")
            G = np.empty(shape[0])
            run(X, np.empty(0) if self.unclipped else self.row_scale,
                np.ascontiguousarray(self.Y[:, 0], dtype=np.float64),
                np.ascontiguousarray(norms, dtype=np.float64) if custom else self.norms,
                np.ascontiguousarray(W[:, 0], dtype=np.float64),
                float(self.intercept), code,
                parameter, float(clip_norm) * NORM_SAFETY, skip,
                out_coefficients[:, 0] if store else np.empty(1), store, G)
            return G[:, None] / n
        if out_coefficients is None and not custom:
            return self.block_sum(_clipped_gradient_block, shape, W, loss, clip_norm,
                                  skip) / n
        if out_coefficients is not None and self.backend is not None:
            raise ValueError("out_coefficients needs X in memory (it stores n x K values "
                             "on the client); pass a numpy array.")
        # On the client, block by block: the stored coefficients, or another norm's clip.
        norms = norms if custom else self.norms
        grad = np.zeros(shape)
        for block, Xs in self.row_blocks():
            with np.errstate(over="ignore", invalid="ignore"):  # as _clipped_gradient_block
                D = clip_unless_lossless(loss.derivative(self.scores(W, Xs), self.Y[block]),
                                         norms[block], clip_norm, skip, ord)
            if out_coefficients is not None:
                out_coefficients[block] = D
            grad += self.gradient_sum(D, Xs)
        return grad / n

    def _compiled_pass(self, passes: int, n_outputs: int) -> tuple | None:
        """``(compiled pass, loss code, loss parameter)`` when :meth:`clipped_gradient`
        runs compiled, else ``None``. Public facts only: the caller's ``X`` was a dense
        C-ordered float64 or float32 array or memmap (``compiled_rows``; the stored ``X``,
        that array or its dense copy, then is too), and
        :func:`skdp.solvers._compiled.scalar_kernel_for` (numba enabled, one output of a
        loss with a scalar form, at least ``FULL_PASS_MIN_WORK`` planned products ``passes
        * n * d``, where the saving repays the kernel's one-time load within
        ``REPAID_WITHIN_FITS`` fits, unless ``SKDP_NUMBA=always``)."""
        if not self.compiled_rows:
            return None
        work = float(passes) * self.X.shape[0] * self.X.shape[1]
        return _compiled.scalar_kernel_for(
            self.spec.loss, n_outputs, work,
            _compiled.FULL_PASS_MIN_WORK,
            _compiled.clipped_gradient_pass)

    def loss_and_gradient_sums(self, W: np.ndarray, loss: GLMLoss | None = None
                               ) -> tuple[float, np.ndarray]:
        """``(sum_i phi(x'_i^T W, y_i), sum_i x'_i phi'_i^T)``, unclipped, in one pass.

        Rows are processed in cache-sized blocks, so ``X`` is read from memory once per
        call instead of twice (scores, then gradient): the inner solvers of output and
        objective perturbation are memory-bound on tall data.

        Parameters
        ----------
        W : ndarray of shape (n_params, n_outputs)
            The parameters.
        loss : GLMLoss or None, default=None
            The loss (``spec.loss`` by default).

        Returns
        -------
        loss_sum : float
            The summed loss.
        gradient_sum : ndarray of shape (n_params, n_outputs)
            The summed (unclipped) gradient.
        """
        loss = self.spec.loss if loss is None else loss
        shape = (self.spec.n_params, W.shape[1])
        packed = self.block_sum(_loss_and_gradient_block, (1 + shape[0] * shape[1],), W, loss)
        return float(packed[0]), packed[1:].reshape(shape)

    # -- unclipped objective (tests, certificates and benchmarks only) ------------------------
    def objective(self, W: np.ndarray) -> float:
        """``F(W)``, unclipped gradients (for tests, certificates and benchmarks only).

        Parameters
        ----------
        W : ndarray of shape (n_params, n_outputs)
            The point at which ``F`` is evaluated.

        Returns
        -------
        float
            The mean loss plus ``(alpha / 2) ||W[:n_penalized]||^2``.
        """
        p = self.spec.n_penalized
        loss = float(np.mean(self.spec.loss.value(self.scores(W), self.Y)))
        return loss + 0.5 * self.spec.alpha * float(np.sum(W[:p] ** 2))

    def gradient(self, W: np.ndarray) -> np.ndarray:
        """``nabla F(W)`` (for tests, certificates and benchmarks only).

        Parameters
        ----------
        W : ndarray of shape (n_params, n_outputs)
            The point at which the gradient is taken.

        Returns
        -------
        ndarray of shape (n_params, n_outputs)
            The gradient of the objective, with unclipped per-example gradients.
        """
        p = self.spec.n_penalized
        D = self.spec.loss.derivative(self.scores(W), self.Y)
        g = self.gradient_sum(D) / self.spec.n_samples
        g[:p] += self.spec.alpha * W[:p]
        return g
