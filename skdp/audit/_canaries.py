"""Canary pairs (replace-one neighbours) and the scaled noise source of under-noised
twins (see :mod:`skdp.audit`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from skdp.geometry import Constraint, Unconstrained
from skdp.losses import GLMLoss
from skdp.privacy.noise import NoiseSource
from skdp.solvers._base import Problem, ProblemSpec

REFERENCES = ("flip", "zero")


# ---------------------------------------------------------------------------------------
# Canaries
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CanaryPair:
    """Two neighbouring datasets that differ in one record, and where to look.

    Built by :func:`make_canary_pair`. Both datasets have one more column than the
    original data, the *canary feature*, which is zero in every row except the canary's.

    Parameters
    ----------
    X, y : ndarray
        ``D``: the data with row ``index`` replaced by the reference record.
    X_prime, y_prime : ndarray
        ``D'``: the data with row ``index`` replaced by the canary.
    feature : int
        Column of the canary feature (the last one).
    index : int
        The replaced row.
    labels : tuple
        Labels of the reference record and of the canary.
    reference : str
        ``"flip"`` or ``"zero"`` (see :func:`make_canary_pair`).
    data_norm : float
        Norm of the canary row.
    """

    X: np.ndarray
    y: np.ndarray
    X_prime: np.ndarray
    y_prime: np.ndarray
    feature: int
    index: int
    labels: tuple
    reference: str
    data_norm: float

    # -- statistics ------------------------------------------------------------------------
    def coef_statistic(self, coef: np.ndarray) -> float:
        """Projection of solver coefficients ``W`` on the canary direction.

        ``W`` has shape ``(n_params, n_outputs)`` (as in
        :attr:`~skdp.solvers.SolverResult.coef`) and the targets ``y`` are those of the
        loss (for example ``+-1`` for the binary logistic loss, one-hot rows for the
        multinomial one). The canary moves row ``feature`` of ``W`` towards its own
        target and the reference record towards the other, so the statistic is
        ``W[feature] . (t' - t)``, ``t`` and ``t'`` their targets.

        Parameters
        ----------
        coef : ndarray of shape (n_params, n_outputs)
            A solver's coefficients.

        Returns
        -------
        float
            ``W[feature] . (t' - t)``.
        """
        t0, t1 = (np.atleast_1d(np.asarray(v, dtype=float)) for v in self.labels)
        return float(np.asarray(coef)[self.feature] @ (t1 - t0))

    def intercept_statistic(self, coef: np.ndarray) -> float:
        """Projection of the solver's intercept on the canary's target move.

        ``W[-1] . (t' - t)`` (the intercept is the last row of ``W``): the statistic of a
        model that reads no feature (:class:`~skdp.solvers.InterceptOnly`), whose
        intercept moves towards the canary's label.

        Parameters
        ----------
        coef : ndarray of shape (n_params, n_outputs)
            A solver's coefficients, fitted with an intercept (:meth:`problems` with
            ``intercept``).

        Returns
        -------
        float
            ``W[-1] . (t' - t)``.
        """
        t0, t1 = (np.atleast_1d(np.asarray(v, dtype=float)) for v in self.labels)
        return float(np.asarray(coef)[-1] @ (t1 - t0))

    def estimator_statistic(self, estimator: Any) -> float:
        """Projection of a fitted classifier's or regressor's ``coef_`` on the canary.

        Binary classifiers and single-output regressors: ``coef_[..., feature]`` (the sign
        does not matter, the audit picks the direction). Multiclass classifiers:
        ``coef_[k', feature] - coef_[k, feature]`` for the classes ``k`` and ``k'`` of the
        reference record and of the canary.

        Parameters
        ----------
        estimator : estimator
            A fitted estimator with ``coef_`` (and ``classes_`` when multiclass).

        Returns
        -------
        float
            The projection.
        """
        coef = np.atleast_2d(np.asarray(estimator.coef_, dtype=float))
        if coef.shape[0] == 1:
            return float(coef[0, self.feature])
        classes = list(estimator.classes_)
        k0, k1 = (classes.index(label) for label in self.labels)
        return float(coef[k1, self.feature] - coef[k0, self.feature])

    # -- solver-level problems -------------------------------------------------------------
    def problems(
        self,
        loss: GLMLoss,
        *,
        alpha: float = 0.0,
        constraint: Constraint | None = None,
        intercept: float = 0.0,
    ) -> tuple[Problem, Problem]:
        """The two datasets as solver :class:`~skdp.solvers.Problem` objects.

        ``y`` must already hold the loss's targets (``+-1``, one-hot rows, ...). Rows are
        clipped to ``data_norm``; the public row bound is ``data_norm``, or
        ``hypot(data_norm, intercept)`` with the constant feature ``intercept``.

        Parameters
        ----------
        loss : GLMLoss
            The loss of both problems.
        alpha : float, default=0.0
            L2 strength.
        constraint : Constraint, optional
            Feasible set (default unconstrained).
        intercept : float, default=0.0
            Value of the constant intercept feature (0: no intercept).

        Returns
        -------
        problem : Problem
            The problem of ``D``.
        neighbour_problem : Problem
            The problem of ``D'``.
        """
        Y0 = np.asarray(self.y, dtype=float)
        Y1 = np.asarray(self.y_prime, dtype=float)
        Y0 = Y0[:, None] if Y0.ndim == 1 else Y0
        Y1 = Y1[:, None] if Y1.ndim == 1 else Y1
        n, d = self.X.shape
        c = float(intercept)
        spec = ProblemSpec(
            n_samples=n,
            n_params=d + (1 if c else 0),
            n_outputs=Y0.shape[1],
            n_penalized=d,
            row_norm_bound=math.hypot(self.data_norm, c),
            loss=loss,
            constraint=constraint if constraint is not None else Unconstrained(),
            alpha=float(alpha),
            intercept_feature=c,
        )
        return (Problem.build(self.X, Y0, spec, data_norm=self.data_norm, intercept=c),
                Problem.build(self.X_prime, Y1, spec, data_norm=self.data_norm,
                              intercept=c))


def make_canary_pair(
    X: Any,
    y: Any,
    *,
    data_norm: float,
    labels: tuple | None = None,
    index: int = 0,
    reference: str = "flip",
) -> CanaryPair:
    """Neighbouring datasets ``D``, ``D'`` whose difference saturates the sensitivity.

    A new column, the canary feature, is appended to ``X`` (zero in every row). In ``D'``
    row ``index`` is replaced by the *canary*: ``data_norm`` on the canary feature, zero
    elsewhere, with label ``labels[1]``. In ``D`` it is replaced by the *reference
    record*: with ``reference="flip"`` the same row with label ``labels[0]``, with
    ``reference="zero"`` an all-zero row with label ``labels[0]``. No other record has
    a non-zero canary feature, so the coefficient on it is driven by the canary (or the
    reference record), the regulariser and the noise only: its projection
    (:meth:`CanaryPair.coef_statistic`, :meth:`CanaryPair.estimator_statistic`) is the
    natural one-dimensional statistic.

    What the pair saturates (see ``docs/audit.md``):

    * **Gradient releases** (DP-GD, the snapshot releases of DP-SVRG(++)): the
      per-example gradient of the canary is ``phi'(z, y') data_norm e``, in a direction
      ``e`` no other record touches. With ``reference="flip"`` and a loss whose
      derivative is odd in the label (logistic: ``phi'(z, -1) = -phi'(-z, 1)``) the
      reference record's gradient is its mirror image, so the gradient sums differ by up
      to ``2 C``, the replace-one sensitivity; exactly ``2 C`` while the clip ``C`` is
      active on both (``C <= |phi'| data_norm``; for the logistic loss, ``clip_norm <=
      data_norm / 2`` and margins below ``ln(data_norm / clip_norm - 1)``, which a small
      step size keeps). ``reference="zero"`` reaches ``C``, half the sensitivity.
    * **Output and objective perturbation**: the minimiser moves along ``e`` by
      ``phi'(z*, y') data_norm / (n alpha)``; with ``reference="flip"`` the minimisers
      of ``D`` and ``D'`` differ by the sensitivity ``2 L / (n alpha)`` when the
      derivative sits at its bound at both optima (a far-out regression label ``+-B``;
      a hinge-type loss while the canary's margin ``data_norm^2 / (n alpha)`` stays
      below 1). The logistic loss reaches at most half of it.
    * **Variance-reduced corrections** (DP-SVRG(++) inner steps): the correction
      ``grad f(x; z) - grad f(w~; z)`` of the canary is non-zero only when its gradient
      changes between the snapshot ``w~`` and the iterate ``x``, i.e. when its score
      crosses the region where ``phi'`` varies (a loss with a narrow transition, such
      as a smoothed hinge with small smoothing, and a step size that moves the canary's
      margin across it within an epoch). A constant-gradient canary leaves the
      corrections at zero and audits the snapshot releases only.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Data (a sparse matrix is densified; at least one row). Not modified.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Labels or loss targets. Not modified.
    data_norm : float
        The public row-norm bound of the mechanism (the canary row has this norm).
    labels : tuple of two labels, optional
        Labels (or target rows) of the reference record and of the canary. Default: the
        smallest and the largest distinct value of a 1-d ``y`` (two classes, or the two
        most extreme regression targets; for regression pass the public label bounds
        ``(-B, B)`` to make the canary "far out").
    index : int, default=0
        Row replaced in both datasets.
    reference : {"flip", "zero"}, default="flip"
        The record of ``D`` (see above).

    Returns
    -------
    CanaryPair
        The two datasets, the canary's column, row and labels.
    """
    if sp.issparse(X):
        X = X.toarray()
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] < 1 or y.shape[0] != X.shape[0]:
        raise ValueError("X must be 2-d with at least one row and as many rows as y.")
    if not (math.isfinite(data_norm) and data_norm > 0):
        raise ValueError(f"data_norm must be positive and finite, got {data_norm!r}.")
    if reference not in REFERENCES:
        raise ValueError(f"reference must be one of {REFERENCES}, got {reference!r}.")
    n, d = X.shape
    if not -n <= index < n:
        raise ValueError(f"index {index} is out of range for {n} rows.")
    index = index % n
    if labels is None:
        if y.ndim != 1:
            raise ValueError("labels must be given when y has more than one column.")
        values = np.unique(y)
        if values.size < 2:
            raise ValueError("y needs two distinct values to choose default labels.")
        labels = (values[0], values[-1])
    if len(labels) != 2:
        raise ValueError(f"labels must be a pair (reference, canary), got {labels!r}.")
    base = np.hstack([X, np.zeros((n, 1))])
    canary_row = np.zeros(d + 1)
    canary_row[d] = data_norm
    X_prime, X_ref = base.copy(), base
    X_prime[index] = canary_row
    X_ref[index] = canary_row if reference == "flip" else 0.0
    dtype = np.result_type(y, np.asarray(labels[0]), np.asarray(labels[1]))
    y_ref, y_prime = y.astype(dtype, copy=True), y.astype(dtype, copy=True)
    y_ref[index], y_prime[index] = labels[0], labels[1]
    return CanaryPair(
        X=X_ref, y=y_ref, X_prime=X_prime, y_prime=y_prime, feature=d, index=index,
        labels=(labels[0], labels[1]), reference=reference, data_norm=float(data_norm),
    )


# ---------------------------------------------------------------------------------------
# Test utility: the under-noised twin
# ---------------------------------------------------------------------------------------
class ScaledNoiseSource(NoiseSource):
    """TEST UTILITY: a noise source whose noise is ``factor`` times too small.

    Every Gaussian ``sigma`` and every l2-Laplace ``scale`` is divided by ``factor``;
    sampling draws (batches, integers) are untouched. A solver run with it is an
    under-noised twin that spends far more than its ledger claims: the audit must flag
    it, which shows that the audit has power. Never use it for a release.

    Parameters
    ----------
    rng : numpy.random.Generator
        The generator every draw comes from.
    factor : float
        Divisor of every noise scale, ``> 0``.
    """

    def __init__(self, rng: np.random.Generator, factor: float) -> None:
        if not (math.isfinite(factor) and factor > 0):
            raise ValueError(f"factor must be positive and finite, got {factor!r}.")
        super().__init__(rng)
        self.factor = float(factor)

    def gaussian(self, shape: tuple[int, ...], sigma: float) -> np.ndarray:
        """Draw ``N(0, (sigma / factor)^2)`` entries of the given shape.

        <<gaussian_parameters>>

        Returns
        -------
        ndarray of shape ``shape``
            Gaussian entries whose standard deviation is ``factor`` times too small.
        """
        return super().gaussian(shape, sigma / self.factor)

    def l2_laplace(self, shape: tuple[int, ...], scale: float) -> np.ndarray:
        """Draw l2-Laplace noise of scale ``scale / factor``.

        <<scale_parameters>>

        Returns
        -------
        ndarray of shape ``shape``
            A draw of density proportional to ``exp(-factor ||z||_2 / scale)``.
        """
        return super().l2_laplace(shape, scale / self.factor)

    def laplace(self, shape: tuple[int, ...], scale: float) -> np.ndarray:
        """Draw i.i.d. Laplace entries of scale ``scale / factor``.

        <<scale_parameters>>

        Returns
        -------
        ndarray of shape ``shape``
            I.i.d. ``Laplace(0, scale / factor)`` entries.
        """
        return super().laplace(shape, scale / self.factor)

    def generalized_gaussian(self, shape: tuple[int, ...], sigma: float, r: float) -> np.ndarray:
        """Draw generalized Gaussian noise of scale ``sigma / factor``.

        <<generalized_gaussian_parameters>>

        Returns
        -------
        ndarray of shape ``shape``
            The under-noised draw.
        """
        return super().generalized_gaussian(shape, sigma / self.factor, r)

    def k_norm(self, shape: tuple[int, ...], scale: float, q: float,
               count: int | None = None) -> np.ndarray:
        """Draw K-norm noise of scale ``scale / factor``.

        <<k_norm_parameters>>

        Returns
        -------
        ndarray of shape ``shape`` or ``(count, *shape)``
            The under-noised draw(s).
        """
        return super().k_norm(shape, scale / self.factor, q, count=count)

    def ball_product_k_norm(self, sizes: tuple[int, ...], radii: tuple[float, ...],
                            epsilon: float) -> np.ndarray:
        """Draw ball-product K-norm noise with every radius divided by ``factor``.

        <<ball_product_parameters>>

        Returns
        -------
        ndarray of shape (m,)
            The under-noised draw.
        """
        return super().ball_product_k_norm(sizes, tuple(r / self.factor for r in radii),
                                           epsilon)

    def spawn(self, n_children: int) -> list[NoiseSource]:
        """Independent child streams, under-noised by the same factor.

        <<spawn_parameters>>

        Returns
        -------
        list of ScaledNoiseSource
            ``n_children`` independent sources with this source's ``factor``.
        """
        return [ScaledNoiseSource(child, self.factor) for child in self.rng.spawn(n_children)]
