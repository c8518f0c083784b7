"""Pointwise generalised-linear-model losses with the derivative bounds privacy needs.

A GLM loss is ``phi(z, y)`` evaluated at the linear scores ``z = x^T W`` (``K`` outputs).
The per-example gradient with respect to ``W`` is the outer product ``x phi'(z, y)^T``,
whose Frobenius norm is ``||x||_2 ||phi'(z, y)||_2``. Every sensitivity in skdp is built
from the declared constants below times a public bound on ``||x||_2``, never from data.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, log_softmax, logsumexp, softmax

from skdp._array_api import device_row_norms, is_device_array, to_device, to_numpy

__all__ = [
    "BUILTIN_LOSSES",
    "GLMLoss",
    "HingeLoss",
    "HuberLoss",
    "LogisticLoss",
    "MultinomialLogisticLoss",
    "SmoothedHingeLoss",
    "SquaredLoss",
    "clip_coefficients",
    "clip_rows",
    "is_dask_array",
    "row_block_size",
    "row_norms",
    "vector_norms",
]

#: DP-GD's default clip for the squared loss (:meth:`SquaredLoss.default_clip_derivative`):
#: this share of the label bound ``B`` times the row bound, the Huber threshold that
#: ``DPHuberRegressor``'s ``huber_delta="auto"`` also takes. Diabetes at epsilon 1
#: (``DPLinearRegression(solver="gd")`` with its defaults, 500 unseeded fits each, median /
#: p5 / min test R^2): 0.312 / 0.074 / -0.481 at 0.5, 0.250 / -0.109 / -1.449 at 1 (the
#: start's bound ``B``: no gradient clipped at ``w = 0``). docs/algorithms/gd.md.
SQUARED_CLIP_SHARE = 0.5


class GLMLoss(ABC):
    """Base class of GLM losses ``phi(z, y)``, ``z`` in ``R^K``.

    Attributes
    ----------
    derivative_bound : float
        ``sup_{z, y} ||phi'(z, y)||_2``: with rows ``||x|| <= X`` the per-example gradient
        norm is at most ``derivative_bound * X``.
    derivative_diameter : float
        ``sup_{z, z', y} ||phi'(z, y) - phi'(z', y)||_2``: bounds the norm of the
        difference of one record's gradients at two parameters (SVRG corrections).
    curvature_bound : float
        ``sup ||d^2 phi / dz^2||_op``: the mean loss is ``curvature_bound * X^2``-smooth.
    name : str
        The loss's name in solver capability declarations
        (the keys of :data:`BUILTIN_LOSSES`).
    """

    name: str

    derivative_bound: float
    derivative_diameter: float
    curvature_bound: float

    @property
    def smooth(self) -> bool:
        """Whether ``phi`` has a Lipschitz derivative (``curvature_bound < inf``)."""
        return bool(np.isfinite(self.curvature_bound))

    def derivative_bound_at(self, score_bound: float) -> float:
        """``sup ||phi'(z, y)||_2`` over scores ``||z||_inf <= score_bound`` and all labels.

        Equal to :attr:`derivative_bound` for losses with a globally bounded derivative;
        losses whose derivative grows with the score (the squared loss) override it.
        """
        return self.derivative_bound

    def value_range(self, score_bound: float) -> float:
        """``sup phi - inf phi`` over scores ``||z||_inf <= score_bound`` and all labels.

        Used by tilted ERM, whose sensitivity depends on the spread ``A - a`` of the loss
        on the domain. ``inf`` (the default) when no finite bound is known.
        """
        return float("inf")

    @abstractmethod
    def initial_gap(self, n_outputs: int) -> float:
        """``sup_y phi(0, y) - inf_{z, y} phi(z, y)``: bounds ``F(0) - F*`` for any data.

        ``F(0)`` is the mean of ``phi(0, y_i)`` (the regulariser vanishes at 0) and
        ``F* >= inf phi``, so this public constant bounds the initial suboptimality of
        every solver started at 0.
        """

    @abstractmethod
    def value(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """Per-example losses, shape ``(n,)``, for scores ``Z`` of shape ``(n, K)``."""

    @abstractmethod
    def derivative(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """``phi'(z_i, y_i)`` for every row, shape ``(n, K)``."""

    def value_and_derivative(self, Z: np.ndarray, Y: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray]:
        """``(value(Z, Y), derivative(Z, Y))``; losses override it to share work."""
        return self.value(Z, Y), self.derivative(Z, Y)

    def derivative_inplace(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """:meth:`derivative`, allowed to overwrite the scratch scores ``Z`` (hot paths);
        equal to it bit for bit. Losses override it to skip temporaries."""
        return self.derivative(Z, Y)

    def device_derivative(self, Z: Any, Y: Any, xp: Any) -> Any:
        """:meth:`derivative` of arrays of the array API namespace ``xp`` (on their device).

        Built-in losses compute it there with the standard's functions; this default, for
        a loss that defines only :meth:`derivative`, computes it on the host and moves it
        back (the same values, ``n x K`` numbers each way; docs/scaling_out.md).
        """
        return to_device(self.derivative(to_numpy(Z, np.float64), to_numpy(Y, np.float64)),
                         Z)

    def device_value(self, Z: Any, Y: Any, xp: Any) -> Any:
        """:meth:`value` of arrays of the array API namespace ``xp`` (see
        :meth:`device_derivative`; the default goes through the host)."""
        return to_device(self.value(to_numpy(Z, np.float64), to_numpy(Y, np.float64)), Z)

    def default_clip_derivative(self, n_outputs: int, score_bound: float = math.inf
                                ) -> float:
        """The derivative bound at which DP-GD clips by default with a private budget.

        DP-GD's default clip is this bound times the row bound, tightened to the lossless
        one (:class:`skdp.solvers.NoisyGD`; docs/algorithms/gd.md, "The default clip").
        The logistic losses return ``sup_y ||phi'(0, y)||_2``, the largest derivative at
        the starting scores 0, so no gradient is clipped at the start ``w = 0``;
        :class:`SquaredLoss` a public share of its label bound where its scores are
        unbounded. The default is :attr:`derivative_bound` (the clip stays the lossless
        one).

        Parameters
        ----------
        n_outputs : int
            ``K``.
        score_bound : float, default=inf
            The problem's public bound on the scores (``inf`` without a bounded
            constraint).

        Returns
        -------
        float
            The derivative bound (public).
        """
        return self.derivative_bound

    def target_diameter(self, n_outputs: int) -> float:
        """``sup ||y - y'||_2`` over two labels of the loss's label domain.

        Bounds how far replacing one record moves the mean of the encoded targets, times
        ``n`` (the intercept-only release, :class:`skdp.solvers.InterceptOnly`). ``inf``
        (the default, for a loss whose label domain is unbounded): that release refuses it.
        """
        return float("inf")

    def intercept_only(self, mean: np.ndarray, n_samples: int) -> np.ndarray:
        """The intercept-only model's scores from the (noisy) mean of the encoded targets.

        Post-processing of the released mean and the public ``n``: the minimiser of the
        mean loss over constant scores where it is a function of the mean target (the
        logistic losses, the squared loss), otherwise a score whose sign or argmax is
        the majority's. The default returns the mean (the squared loss's answer).

        Parameters
        ----------
        mean : ndarray of shape (n_outputs,)
            The released mean of the encoded targets.
        n_samples : int
            The public number of rows.

        Returns
        -------
        ndarray of shape (n_outputs,)
            The constant scores (the intercept).
        """
        return np.asarray(mean, dtype=float)

    def label_error(self, Y: np.ndarray) -> str | None:
        """Why the labels ``Y`` (shape ``(n, K)``) are outside the loss's label domain.

        ``None`` when every label is in the domain on which the declared bounds
        (:attr:`derivative_bound`, :meth:`value_range`, ...) hold; otherwise a message.
        The estimators encode or clip labels into the domain (a per-record map);
        :meth:`~skdp.solvers.Problem.build` refuses labels outside it, as it refuses rows
        above the declared bound. The default asks for finite labels only: a loss whose
        bounds need a smaller domain must override it (every skdp loss does).
        """
        return _bounded_label_error(Y, None)


def _sign_label_error(Y: np.ndarray) -> str | None:
    if np.all((Y == 1.0) | (Y == -1.0)):
        return None
    return "labels must be -1 or +1 (encode the classes, as the classifiers do)"


def _bounded_label_error(Y: np.ndarray, bound: float | None) -> str | None:
    if bound is None:
        return None if np.all(np.isfinite(Y)) else "labels must be finite"
    if np.all(np.abs(Y) <= bound):
        return None
    return f"labels must lie in [-{bound:g}, {bound:g}] (clip them to the public bound)"


class LogisticLoss(GLMLoss):
    """Binary logistic loss ``log(1 + exp(-y z))`` with ``y`` in ``{-1, +1}``, ``K = 1``.

    ``phi'(z, y) = -y expit(-y z)`` lies in ``(-1, 0)`` for ``y = 1`` and in ``(0, 1)`` for
    ``y = -1``: so ``|phi'| <= 1`` and, for a fixed label, two derivatives differ by at
    most 1 (an interval of length 1). ``phi'' = expit(z) expit(-z) <= 1/4``.
    """

    name = "logistic"

    derivative_bound = 1.0
    derivative_diameter = 1.0
    curvature_bound = 0.25

    def default_clip_derivative(self, n_outputs: int, score_bound: float = math.inf
                                ) -> float:
        # sup_y |phi'(0, y)|: phi'(0, y) = -y expit(0) = -y / 2.
        return 0.5

    def target_diameter(self, n_outputs: int) -> float:
        # Labels -1 and +1.
        return 2.0

    def intercept_only(self, mean: np.ndarray, n_samples: int) -> np.ndarray:
        # The constant minimising the mean of log(1 + exp(-y b)) is the log odds of the
        # share p = (1 + mean) / 2 of +1 labels; the noisy share is kept within the
        # public [1 / (2 n), 1 - 1 / (2 n)] (half a record from either end).
        floor = 0.5 / n_samples
        p = np.clip((1.0 + np.asarray(mean, dtype=float)) / 2.0, floor, 1.0 - floor)
        return np.log(p) - np.log1p(-p)

    def label_error(self, Y: np.ndarray) -> str | None:
        return _sign_label_error(Y)

    def value_range(self, score_bound: float) -> float:
        # phi is monotone in the margin y z in [-S, S]:
        # ln(1 + e^S) - ln(1 + e^-S) = S exactly.
        return float(score_bound)

    def initial_gap(self, n_outputs: int) -> float:
        # phi(0, y) = ln 2 and phi > 0.
        return float(np.log(2.0))

    def value(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.logaddexp(0.0, -Y[:, 0] * Z[:, 0])

    def derivative(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return -Y * expit(-Y * Z)

    def derivative_inplace(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        # -(Y Z), expit, -(Y e): the same roundings as derivative (negation is exact).
        np.multiply(Y, Z, out=Z)
        np.negative(Z, out=Z)
        expit(Z, out=Z)
        np.multiply(Y, Z, out=Z)
        return np.negative(Z, out=Z)

    def value_and_derivative(self, Z: np.ndarray, Y: np.ndarray
                             ) -> tuple[np.ndarray, np.ndarray]:
        # One exponential for both: with m = -y z and e = exp(-|m|),
        # log(1 + e^m) = max(m, 0) + log1p(e) and expit(m) = 1/(1+e) (m >= 0) or e/(1+e).
        M = -Y * Z
        E = np.exp(-np.abs(M))
        value = np.maximum(M[:, 0], 0.0) + np.log1p(E[:, 0])
        inv = 1.0 / (1.0 + E)
        sig = np.where(M >= 0.0, inv, E * inv)
        return value, -Y * sig

    def device_value(self, Z: Any, Y: Any, xp: Any) -> Any:
        # log(1 + e^m), m = -y z: max(m, 0) + log1p(e^-|m|) (no overflow).
        m = -Y[:, 0] * Z[:, 0]
        return xp.maximum(m, xp.zeros_like(m)) + xp.log1p(xp.exp(-xp.abs(m)))

    def device_derivative(self, Z: Any, Y: Any, xp: Any) -> Any:
        # -y expit(t), t = -y z, from e = exp(-|t|) <= 1: 1 / (1 + e) for t >= 0, else
        # e / (1 + e) (scipy's expit, overflow-free).
        t = -Y * Z
        e = xp.exp(-xp.abs(t))
        inv = 1.0 / (1.0 + e)
        return -Y * xp.where(t >= 0.0, inv, e * inv)


class MultinomialLogisticLoss(GLMLoss):
    """Multinomial logistic loss ``logsumexp(z) - z_y`` with one-hot ``Y``, ``K`` classes.

    ``phi'(z, y) = softmax(z) - e_y``; its squared norm is
    ``(1 - p_y)^2 + sum_{k != y} p_k^2 <= 2 (1 - p_y)^2 <= 2``, so ``||phi'|| <= sqrt(2)``;
    two softmax vectors differ by at most ``||e_j - e_k|| = sqrt(2)`` (the simplex's
    diameter). The Hessian ``diag(p) - p p^T`` has operator norm at most ``1/2``.
    """

    name = "multinomial"

    derivative_bound = float(np.sqrt(2.0))
    derivative_diameter = float(np.sqrt(2.0))
    curvature_bound = 0.5

    def __init__(self, n_outputs: int = 2) -> None:
        self.n_outputs_hint = int(n_outputs)

    def default_clip_derivative(self, n_outputs: int, score_bound: float = math.inf
                                ) -> float:
        # sup_y ||phi'(0, y)||: phi'(0, y) = 1/K - e_y: (1 - 1/K)^2 + (K - 1) / K^2 = (K - 1) / K.
        k = max(int(n_outputs), 1)
        return float(np.sqrt((k - 1) / k)) if k > 1 else self.derivative_bound

    def target_diameter(self, n_outputs: int) -> float:
        # Two one-hot rows: ||e_j - e_k|| = sqrt(2).
        return float(np.sqrt(2.0))

    def intercept_only(self, mean: np.ndarray, n_samples: int) -> np.ndarray:
        # softmax(b) = p minimises the mean of logsumexp(b) - b_y: b = log p (up to a
        # constant), with each noisy share kept within [1 / (2 n), 1] (half a record).
        return np.log(np.clip(np.asarray(mean, dtype=float), 0.5 / n_samples, 1.0))

    def label_error(self, Y: np.ndarray) -> str | None:
        if np.all((Y == 0.0) | (Y == 1.0)) and np.all(np.sum(Y, axis=1) == 1.0):
            return None
        return "labels must be one-hot rows (encode the classes, as the classifiers do)"

    def value_range(self, score_bound: float) -> float:
        # With |z_k| <= S: phi = logsumexp(z) - z_y <= ln(K e^S) + S = ln K + 2S, phi > 0.
        # (K is not stored on the loss; the caller passes it through n_outputs_hint.)
        return float(np.log(self.n_outputs_hint) + 2.0 * score_bound)

    def initial_gap(self, n_outputs: int) -> float:
        # phi(0, y) = ln K and phi > 0.
        return float(np.log(n_outputs))

    def value(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return logsumexp(Z, axis=1) - np.sum(Z * Y, axis=1)

    def derivative(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return softmax(Z, axis=1) - Y

    @staticmethod
    def log_proba(Z: np.ndarray) -> np.ndarray:
        """Log class probabilities for scores ``Z``."""
        return log_softmax(Z, axis=1)

    def device_value(self, Z: Any, Y: Any, xp: Any) -> Any:
        top = xp.max(Z, axis=1, keepdims=True)
        lse = top[:, 0] + xp.log(xp.sum(xp.exp(Z - top), axis=1))
        return lse - xp.sum(Z * Y, axis=1)

    def device_derivative(self, Z: Any, Y: Any, xp: Any) -> Any:
        # softmax(Z) - Y, shifted by the row maximum (no overflow).
        E = xp.exp(Z - xp.max(Z, axis=1, keepdims=True))
        return E / xp.sum(E, axis=1, keepdims=True) - Y


class SquaredLoss(GLMLoss):
    """Squared loss ``(z - y)^2 / 2`` for regression, ``K = 1``, labels in ``[-B, B]``.

    ``phi'(z, y) = z - y`` is unbounded in ``z``: on scores ``|z| <= S`` it is at most
    ``S + B``, so privacy needs a bounded domain (a constraint radius, or the radius
    implied by strong convexity, see :class:`~skdp.solvers.OutputPerturbation`).
    ``phi'' = 1``. Labels are clipped to ``[-B, B]`` by the estimator (a per-record map).

    Parameters
    ----------
    label_bound : float
        Public bound ``B`` on ``|y|``.
    """

    name = "squared"

    derivative_bound = float("inf")
    derivative_diameter = float("inf")
    curvature_bound = 1.0

    def __init__(self, label_bound: float) -> None:
        self.label_bound = float(label_bound)

    def target_diameter(self, n_outputs: int) -> float:
        # Labels in [-Y, Y].
        return 2.0 * self.label_bound

    def intercept_only(self, mean: np.ndarray, n_samples: int) -> np.ndarray:
        # The mean minimises the mean squared error; kept within the labels' [-Y, Y].
        return np.clip(np.asarray(mean, dtype=float), -self.label_bound, self.label_bound)

    def label_error(self, Y: np.ndarray) -> str | None:
        return _bounded_label_error(Y, self.label_bound)

    def default_clip_derivative(self, n_outputs: int, score_bound: float = math.inf
                                ) -> float:
        # On bounded scores |z| <= S the lossless S + B (the former default). Without a
        # bound no lossless clip exists: clipping the residual z - y at c, for a row at the
        # row bound, is the Huber loss of threshold c, so DP-GD's default makes the
        # squared loss a Huber fit of threshold SQUARED_CLIP_SHARE * B for the largest
        # rows (smaller rows are clipped at a larger residual). sup_y |phi'(0, y)| = B
        # would clip no gradient at the start; half of it measured better
        # (docs/algorithms/gd.md, "The default clip").
        if math.isfinite(score_bound):
            return self.derivative_bound_at(score_bound)
        return SQUARED_CLIP_SHARE * self.label_bound

    def derivative_bound_at(self, score_bound: float) -> float:
        # |z - y| <= |z| + |y| <= S + B.
        return float(score_bound + self.label_bound)

    def value_range(self, score_bound: float) -> float:
        # 0 <= (z - y)^2 / 2 <= (S + B)^2 / 2.
        return 0.5 * float(score_bound + self.label_bound) ** 2

    def initial_gap(self, n_outputs: int) -> float:
        # phi(0, y) = y^2 / 2 <= B^2 / 2 and phi >= 0.
        return 0.5 * self.label_bound**2

    def value(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return 0.5 * (Z[:, 0] - Y[:, 0]) ** 2

    def derivative(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return Z - Y

    def device_value(self, Z: Any, Y: Any, xp: Any) -> Any:
        return 0.5 * (Z[:, 0] - Y[:, 0]) ** 2

    def device_derivative(self, Z: Any, Y: Any, xp: Any) -> Any:
        return Z - Y


class HuberLoss(GLMLoss):
    """Huber loss of the residual, ``phi(z, y) = h(z - y)``, for robust regression, ``K = 1``.

    ``h(r) = r^2 / 2`` for ``|r| <= c`` and ``c |r| - c^2 / 2`` beyond, with the threshold
    ``c = huber_delta``. ``phi'(z, y) = clip(z - y, -c, c)``: bounded by ``c`` for every
    score and label (unlike :class:`SquaredLoss`, no bounded domain is needed), two
    derivatives differ by at most ``2c``, and ``0 <= phi'' <= 1`` (``phi'`` is
    1-Lipschitz), so the loss is smooth with curvature bound 1.

    Relation to scikit-learn: :class:`sklearn.linear_model.HuberRegressor` minimises
    ``sum_i (sigma + H_eps(r_i / sigma) sigma) + alpha_sk ||w||^2`` with ``H_eps(t) = t^2``
    for ``|t| < eps`` and ``2 eps |t| - eps^2`` beyond, jointly in ``w`` and the scale
    ``sigma``. For a fixed scale, ``sigma H_eps(r / sigma) = (2 / sigma) h(r)`` with
    ``c = eps * sigma``; so at sklearn's fitted ``scale_`` its coefficients minimise
    ``mean_i h(r_i) + (alpha / 2) ||w||^2`` with ``huber_delta = epsilon * scale_`` and
    ``alpha = alpha_sk * scale_ / n``. skdp cannot estimate the scale from private data
    for free: ``huber_delta`` is a public constant in the units of ``y``.

    Parameters
    ----------
    huber_delta : float, default=1.0
        Threshold ``c > 0`` between the quadratic and the linear zone.
    label_bound : float, optional
        Public bound ``B`` on ``|y|`` (labels clipped by the estimator). It enters only
        the value bounds (:meth:`initial_gap`, :meth:`value_range`) and the derivative
        bound on bounded scores; ``None``: those bounds are infinite.
    """

    name = "huber"

    curvature_bound = 1.0

    def __init__(self, huber_delta: float = 1.0, label_bound: float | None = None) -> None:
        huber_delta = float(huber_delta)
        if not (math.isfinite(huber_delta) and huber_delta > 0):
            raise ValueError(f"huber_delta must be a positive finite number, got {huber_delta}.")
        if label_bound is not None:
            label_bound = float(label_bound)
            if not label_bound >= 0:
                raise ValueError(f"label_bound must be >= 0 or None, got {label_bound}.")
        self.huber_delta = huber_delta
        self.label_bound = label_bound
        # |phi'| = |clip(r, -c, c)| <= c; two values in [-c, c] differ by at most 2c.
        self.derivative_bound = huber_delta
        self.derivative_diameter = 2.0 * huber_delta

    def target_diameter(self, n_outputs: int) -> float:
        # Labels in [-Y, Y] (unbounded without a label bound).
        return float("inf") if self.label_bound is None else 2.0 * self.label_bound

    def intercept_only(self, mean: np.ndarray, n_samples: int) -> np.ndarray:
        # The mean of the clipped labels (the squared loss's constant, not Huber's
        # M-estimate of location, which is not a function of the mean).
        mean = np.asarray(mean, dtype=float)
        if self.label_bound is None:
            return mean
        return np.clip(mean, -self.label_bound, self.label_bound)

    def label_error(self, Y: np.ndarray) -> str | None:
        return _bounded_label_error(Y, self.label_bound)

    def _huber(self, r: float) -> float:
        r = abs(r)
        m = min(r, self.huber_delta)
        return m * (r - 0.5 * m)

    def derivative_bound_at(self, score_bound: float) -> float:
        # |phi'| = min(|z - y|, c) <= min(S + B, c).
        if self.label_bound is None:
            return self.huber_delta
        return float(min(self.huber_delta, score_bound + self.label_bound))

    def value_range(self, score_bound: float) -> float:
        # h >= 0 (attained at z = y when S >= B; a lower bound otherwise) and h is
        # increasing in |r| <= S + B: the range is at most h(S + B).
        if self.label_bound is None:
            return float("inf")
        return self._huber(float(score_bound) + self.label_bound)

    def initial_gap(self, n_outputs: int) -> float:
        # phi(0, y) = h(y) <= h(B) and phi >= 0.
        if self.label_bound is None:
            return float("inf")
        return self._huber(self.label_bound)

    def value(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        # h(r) = m (|r| - m / 2) with m = min(|r|, c): r^2 / 2 inside, c |r| - c^2 / 2
        # outside (and no r^2 overflow for huge residuals).
        r = np.abs(Z[:, 0] - Y[:, 0])
        m = np.minimum(r, self.huber_delta)
        return m * (r - 0.5 * m)

    def derivative(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.clip(Z - Y, -self.huber_delta, self.huber_delta)

    def device_value(self, Z: Any, Y: Any, xp: Any) -> Any:
        r = xp.abs(Z[:, 0] - Y[:, 0])
        m = xp.clip(r, max=self.huber_delta)
        return m * (r - 0.5 * m)

    def device_derivative(self, Z: Any, Y: Any, xp: Any) -> Any:
        return xp.clip(Z - Y, min=-self.huber_delta, max=self.huber_delta)


class HingeLoss(GLMLoss):
    """One-vs-rest hinge loss ``sum_k max(0, 1 - y_k z_k)`` with ``y_k`` in ``{-1, +1}``.

    Not differentiable at margin 1: :meth:`derivative` returns the subgradient
    ``-y_k 1[y_k z_k < 1]``. Each of the ``K`` coordinates lies in an interval of length 1
    containing 0, so ``||phi'||_2 <= sqrt(K)`` and two (sub)gradients differ by at most
    ``sqrt(K)``. ``curvature_bound = inf``: only solvers for non-smooth objectives apply.
    """

    name = "hinge"

    curvature_bound = float("inf")

    def __init__(self, n_outputs: int = 1) -> None:
        self.n_outputs_hint = int(n_outputs)
        self.derivative_bound = float(np.sqrt(n_outputs))
        self.derivative_diameter = float(np.sqrt(n_outputs))

    def target_diameter(self, n_outputs: int) -> float:
        # One-vs-rest +-1 rows: replacing a record flips two coordinates by 2 each
        # (one when K = 1).
        return 2.0 if n_outputs == 1 else 2.0 * float(np.sqrt(2.0))

    def intercept_only(self, mean: np.ndarray, n_samples: int) -> np.ndarray:
        # The mean of the +-1 labels per class, in [-1, 1]: its sign (K = 1) or argmax
        # is the (private) majority, which is what a constant hinge model predicts.
        return np.clip(np.asarray(mean, dtype=float), -1.0, 1.0)

    def label_error(self, Y: np.ndarray) -> str | None:
        return _sign_label_error(Y)

    def value_range(self, score_bound: float) -> float:
        # Each coordinate lies in [max(0, 1 - S), 1 + S].
        return float(self.n_outputs_hint * (1.0 + score_bound - max(0.0, 1.0 - score_bound)))

    def initial_gap(self, n_outputs: int) -> float:
        # phi(0, y) = K and phi >= 0.
        return float(n_outputs)

    def value(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.sum(np.maximum(0.0, 1.0 - Y * Z), axis=1)

    def derivative(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return np.where(Y * Z < 1.0, -Y, 0.0)

    def device_value(self, Z: Any, Y: Any, xp: Any) -> Any:
        return xp.sum(xp.clip(1.0 - Y * Z, min=0.0), axis=1)

    def device_derivative(self, Z: Any, Y: Any, xp: Any) -> Any:
        return xp.where(Y * Z < 1.0, -Y, xp.zeros_like(Y))


class SmoothedHingeLoss(HingeLoss):
    """One-vs-rest smoothed hinge: quadratic within ``smoothing`` of the margin.

    Per coordinate, with margin ``m = y z`` and ``h = smoothing``: ``0`` for ``m >= 1``,
    ``(1 - m)^2 / (2 h)`` for ``1 - h < m < 1``, ``1 - m - h / 2`` for ``m <= 1 - h``
    (the Moreau envelope of the hinge). It is within ``h / 2`` of the hinge, its
    derivative keeps the hinge's bounds, and ``phi'' <= 1 / h``.

    Parameters
    ----------
    smoothing : float, default=0.5
        Width ``h > 0`` of the quadratic zone.
    """

    name = "smoothed_hinge"

    def __init__(self, n_outputs: int = 1, smoothing: float = 0.5) -> None:
        super().__init__(n_outputs)
        self.smoothing = float(smoothing)
        self.curvature_bound = 1.0 / self.smoothing

    def value(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        h = self.smoothing
        gap = 1.0 - Y * Z
        quad = np.where(gap > 0, gap * gap / (2.0 * h), 0.0)
        return np.sum(np.where(gap >= h, gap - 0.5 * h, quad), axis=1)

    def derivative(self, Z: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return -Y * np.clip((1.0 - Y * Z) / self.smoothing, 0.0, 1.0)

    def device_value(self, Z: Any, Y: Any, xp: Any) -> Any:
        h = self.smoothing
        gap = 1.0 - Y * Z
        zero = xp.zeros_like(gap)
        quad = xp.where(gap > 0, gap * gap / (2.0 * h), zero)
        return xp.sum(xp.where(gap >= h, gap - 0.5 * h, quad), axis=1)

    def device_derivative(self, Z: Any, Y: Any, xp: Any) -> Any:
        return -Y * xp.clip((1.0 - Y * Z) / self.smoothing, min=0.0, max=1.0)


#: Rows per block of the passes and of :func:`row_norms`: about 4 MB of float64 values per
#: block, so no ``n x d`` temporary (``|X|``, a float64 copy of float32 input) is ever
#: formed. Measured on 200,000 x 54 rows (2 cores, 1 MB of L2 each, 32 MB of L3; 8-12
#: interleaved fits each): against 2 MB blocks, DP Newton's default fit 0.093 s instead of
#: 0.104 s and objective perturbation's 0.101 s instead of 0.113 s (their weighted Gram
#: matrices run on taller blocks), DP-GD unchanged (0.205 s against 0.208 s); 8 MB blocks
#: were slower again (0.097 s), 16 MB much slower (0.150 s).
ROW_BLOCK_ELEMENTS = 1 << 19
#: On a small ``X`` a block is also at most ``1 / SMALL_INPUT_BLOCKS`` of its rows (and at
#: least 256 rows), so that a block and its float64 temporaries (a scaled copy, the
#: weighted rows of a Gram matrix) stay a fraction of ``X``: on 20,000 x 50 rows (8 MB)
#: the 4 MB blocks left DP Newton and the sufficient statistics 0.60-0.66 of ``X`` of
#: extra memory at their peak (benchmark target 0.5). Inputs of at least
#: ``SMALL_INPUT_BLOCKS`` cache-sized blocks (about 78,000 rows of 54 features) keep
#: the cache-sized blocks.
SMALL_INPUT_BLOCKS = 8


def is_dask_array(X: object) -> bool:
    """Whether ``X`` is a ``dask.array.Array`` (without importing dask)."""
    return type(X).__module__.startswith("dask.array") and hasattr(X, "chunks")


def row_block_size(n_features: int, n_rows: int | None = None,
                   parts: int = SMALL_INPUT_BLOCKS) -> int:
    """Rows per block of a pass over a matrix with ``n_features`` columns.

    Cache-sized (:data:`ROW_BLOCK_ELEMENTS`), and with ``n_rows`` given at most
    ``ceil(n_rows / parts)`` rows (at least 256): the temporaries of a pass over a small
    ``X`` stay a fraction of it (:data:`SMALL_INPUT_BLOCKS`).

    Parameters
    ----------
    n_features : int
        Columns of the matrix.
    n_rows : int or None, default=None
        Rows of the matrix (``None``: the cache-sized block).
    parts : int, default=SMALL_INPUT_BLOCKS
        The fewest blocks a small matrix is cut into.

    Returns
    -------
    int
        Rows per block.
    """
    rows = max(256, ROW_BLOCK_ELEMENTS // max(1, int(n_features)))
    if n_rows is None:
        return rows
    return min(rows, max(256, -(-int(n_rows) // parts)))


def row_norms(X: np.ndarray | sp.spmatrix, ord: float = 2.0) -> np.ndarray:
    """The ``ord``-norm (``1 <= ord <= inf``) of every row of a dense array or sparse matrix.

    Computed by blocks of rows (:func:`row_block_size`), each converted to float64: the
    temporaries are one block, never ``n x d`` (the input may be float32 or a
    ``numpy.memmap``). Rows whose norm overflows (entries beyond ~1e154 for ``ord = 2``)
    are recomputed after scaling by their largest absolute entry, so that huge finite rows
    get a finite norm.
    """
    ord = float(ord)
    if is_device_array(X):
        # An array API array (PyTorch, CuPy, ...): computed on its device.
        return device_row_norms(X, ord)
    if is_dask_array(X):
        # A dask array: one task per chunk of rows (whole rows per chunk).
        X = X.rechunk({1: -1})
        return X.map_blocks(_chunk_row_norms, ord=ord, dtype=float,
                            chunks=(X.chunks[0], (1,))).compute()[:, 0]
    if sp.issparse(X) and X.format != "csr":
        X = sp.csr_matrix(X)
    n = X.shape[0]
    if ord == 2.0 and not sp.issparse(X) and X.dtype == np.float64:
        # One einsum streams the rows with no temporary (the overflow and underflow
        # recomputation takes only the offending rows).
        return _block_row_norms(X, ord)
    step = _norm_block_rows(n, X.shape[1])
    if n <= step:
        return _block_row_norms(X, ord)
    out = np.empty(n)
    for start in range(0, n, step):
        stop = min(start + step, n)
        out[start:stop] = _block_row_norms(X[start:stop], ord)
    return out


def _norm_block_rows(n_rows: int, n_features: int) -> int:
    """Rows per block of a row-norm computation: a block and its few float64 temporaries
    (|x|, x / max|x|, its power) stay a small fraction of X on small inputs too (at most
    1/16 of the rows, and at most :func:`row_block_size`)."""
    return row_block_size(n_features, n_rows, parts=16)


def _chunk_row_norms(X: np.ndarray, *, ord: float) -> np.ndarray:
    return _block_row_norms(X, ord)[:, None]


def _block_row_norms(X: np.ndarray | sp.spmatrix, ord: float) -> np.ndarray:
    """:func:`row_norms` of one block of rows (float64 arithmetic)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=float)
    else:
        X = np.asarray(X, dtype=float)
    with np.errstate(all="ignore"):
        if ord == math.inf:
            if sp.issparse(X):
                return np.asarray(abs(X).max(axis=1).toarray()).ravel().astype(float)
            return np.max(np.abs(X), axis=1, initial=0.0)
        if ord == 2.0:
            if sp.issparse(X):
                norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
            else:
                norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        elif ord == 1.0:
            norms = np.asarray(abs(X).sum(axis=1)).ravel().astype(float)
        elif sp.issparse(X):
            return _sparse_scaled_norms(X, ord)
        else:
            return vector_norms(X, ord)
    # ord = 1, 2: squares (or sums) of huge entries overflow and of tiny ones underflow
    # (a norm of 0 would leave the row unclipped): recompute those rows scaled.
    bad = np.flatnonzero(~(norms < _SAFE_NORM_MAX) | (norms < _SAFE_NORM_MIN))
    # By blocks (zero rows are among them): the copies stay a small fraction of X.
    step = _norm_block_rows(*X.shape)
    for start in range(0, bad.size, step):
        part = bad[start:start + step]
        # Still inf when the norm itself exceeds the largest float (such a row is then
        # scaled to 0 by clipping: a per-record map, privacy is unaffected). Sparse rows
        # stay sparse (empty rows are among them: a dense copy of 256 of them would be
        # 2 GB at d = 1e6).
        norms[part] = _sparse_scaled_norms(X[part], ord) if sp.issparse(X) else \
            vector_norms(np.asarray(X[part]), ord)
    return norms


def _sparse_scaled_norms(X: sp.csr_matrix, ord: float) -> np.ndarray:
    """``||x_i||_ord`` of float64 CSR rows as ``m_i ||x_i / m_i||_ord`` with ``m_i =
    max_j |x_ij|`` (:func:`vector_norms` for sparse rows: no under- or overflow of
    ``|x|^ord``, an empty row has norm 0, a NaN or infinite entry gives NaN)."""
    A = abs(X)
    peak = np.asarray(A.max(axis=1).toarray()).ravel().astype(float)
    with np.errstate(all="ignore"):
        scaled = sp.diags(1.0 / np.where(peak > 0, peak, 1.0)) @ A
        if ord == 2.0:
            inner = np.sqrt(np.asarray(scaled.multiply(scaled).sum(axis=1)).ravel())
        elif ord == 1.0:
            inner = np.asarray(scaled.sum(axis=1)).ravel()
        else:
            inner = np.asarray(scaled.power(ord).sum(axis=1)).ravel() ** (1.0 / ord)
        return peak * inner


#: Clipping and truncation aim at ``bound * NORM_SAFETY``: a norm computed as the product
#: of two rounded norms may exceed the true entrywise norm by a few ulps, and the declared
#: sensitivity must hold for the true one (measured excess without it: 4.4e-16 relative).
NORM_SAFETY = 1.0 - 1e-12


def clip_rows(X: np.ndarray, norm: float, norms: np.ndarray | None = None) -> np.ndarray:
    """Rows scaled down to the l2 norm ``norm`` (times :data:`NORM_SAFETY`): a float64 copy.

    A row above the bound is divided by its norm first and then multiplied by the bound:
    one factor ``norm / ||x||`` can be subnormal for huge rows and keep too few bits, which
    let clipped rows exceed the bound (by up to 2x at ``norm = 3e-16``, rows near 1e308).
    Rows at or below the bound (the zero row included) are copied unchanged.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The rows (finite).
    norm : float
        The l2 bound, positive.
    norms : ndarray of shape (n_samples,), optional
        The rows' l2 norms as :func:`row_norms` computes them, when the caller has them
        already (a private bound read them): not computed a second time.

    Returns
    -------
    ndarray of shape (n_samples, n_features)
        The clipped rows, each of l2 norm at most ``norm``.
    """
    X = np.array(X, dtype=float)
    norms = row_norms(X, 2.0) if norms is None else norms
    over = norms > norm * NORM_SAFETY
    X[over] = (X[over] / norms[over, None]) * (norm * NORM_SAFETY)
    return X

#: Row norms outside [_SAFE_NORM_MIN, _SAFE_NORM_MAX] are recomputed with scaling.
_SAFE_NORM_MIN = 1e-150
_SAFE_NORM_MAX = 1e150


def vector_norms(A: np.ndarray, ord: float = 2.0) -> np.ndarray:
    """``||a_i||_ord`` of every row of a dense 2-D array, safe against under/overflow.

    Computed as ``m_i ||a_i / m_i||_ord`` with ``m_i = max_j |a_ij|``: ``|a|^ord`` of
    entries far below 1 underflows to 0 for large ``ord`` (with ``ord = 1001`` already at
    0.49), and a norm of 0 would leave a row or gradient unclipped.
    """
    a = np.abs(np.asarray(A, dtype=float))
    if a.ndim == 2 and a.shape[1] == 1:
        # One column (a single-output derivative): the norm is |a| in every ord, as the
        # scaled formula gives (peak * 1), NaN where that formula gives NaN (inf/inf).
        col = a[:, 0]
        return col if ord == math.inf else np.where(np.isinf(col), np.nan, col)
    peak = a.max(axis=1, initial=0.0)
    if ord == math.inf:
        return peak
    with np.errstate(all="ignore"):
        # In place on the fresh |A| (the same operations as out of place, without two
        # more arrays of A's size).
        a /= np.where(peak > 0, peak, 1.0)[:, None]
        if ord == 2.0:
            inner = np.sqrt(np.einsum("ij,ij->i", a, a))
        elif ord == 1.0:
            inner = a.sum(axis=1)
        else:
            inner = np.sum(np.power(a, ord, out=a), axis=1) ** (1.0 / ord)
        return peak * inner


def clip_coefficients(
    D: np.ndarray, norms: np.ndarray, clip_norm: float, ord: float = 2.0
) -> np.ndarray:
    """Clip per-example gradients ``x_i d_i^T`` to entrywise ``ord``-norm ``clip_norm``.

    The per-example gradient of a GLM is the outer product of the row ``x_i`` and the
    loss derivative ``d_i``; its entrywise ``ord``-norm is ``||x_i||_ord ||d_i||_ord``
    (``ord = 2``: the Frobenius norm). Clipping it therefore only rescales ``d_i`` by
    ``min(1, clip_norm / (||x_i|| ||d_i||))``: no ``n x d`` array is formed. ``norms``
    holds the row norms ``||x_i||_ord``. One output (``K = 1``, the hot path of the
    mini-batch solvers): ``||d_i||_ord = |d_i|`` in every norm, and ``min(1, target /
    norm)`` is the same factor (1 up to the target, 1 for a zero norm).
    """
    target = clip_norm * NORM_SAFETY
    if D.ndim == 2 and D.shape[1] == 1:
        with np.errstate(all="ignore"):
            grad_norms = np.asarray(norms).reshape(-1, 1) * np.abs(D)
            clipped = D * np.minimum(1.0, target / grad_norms)
        return np.where(np.isfinite(grad_norms), clipped, 0.0)
    with np.errstate(all="ignore"):
        grad_norms = norms * vector_norms(D, ord)
        scale = np.where(grad_norms > target, target / grad_norms, 1.0)
    # A non-finite gradient (overflow in an extreme record) is dropped, never passed on:
    # NaN > clip is False, so without this a NaN would slip through unclipped.
    finite = np.isfinite(grad_norms)
    return np.where(finite[:, None], D * np.where(finite, scale, 0.0)[:, None], 0.0)


# ---------------------------------------------------------------------------------------
# One-output derivatives, one record at a time (compiled kernels)
# ---------------------------------------------------------------------------------------
#: Codes of the one-output losses whose derivative :func:`scalar_derivative` computes.
_SCALAR_LOGISTIC, _SCALAR_SQUARED, _SCALAR_HUBER = 1, 2, 3


def scalar_kernel(loss: GLMLoss) -> tuple[int, float] | None:
    """``(code, parameter)`` of :func:`scalar_derivative` for ``loss``, or ``None``.

    Exact built-in classes only (a subclass may change the derivative): the logistic loss,
    the squared loss and the Huber loss (parameter ``huber_delta``).
    """
    kind = type(loss)
    if kind is LogisticLoss:
        return _SCALAR_LOGISTIC, 0.0
    if kind is SquaredLoss:
        return _SCALAR_SQUARED, 0.0
    if kind is HuberLoss:
        return _SCALAR_HUBER, float(loss.huber_delta)
    return None


def scalar_derivative(code: int, parameter: float, z: float, y: float) -> float:
    """``phi'(z, y)`` of one record for the loss :func:`scalar_kernel` coded as ``code``.

    The same formulas as the classes' ``derivative`` (equal to rounding; tested), written
    on scalars so that the compiled kernels (:mod:`skdp.solvers._compiled`) can use them.
    Logistic: ``-y expit(-y z)`` (``expit`` in its overflow-free form, as
    :meth:`LogisticLoss.value_and_derivative`); squared:
    ``z - y``; Huber: ``z - y`` clipped to ``[-parameter, parameter]``.
    """
    if code == _SCALAR_LOGISTIC:
        # expit(t), t = -y z, from u = exp(-|t|) <= 1 (no overflow): 1 / (1 + u) for
        # t >= 0, u / (1 + u) otherwise, as a select rather than a branch (the sign of t
        # is data-dependent, and a mispredicted branch costs more than the product).
        t = -y * z
        u = math.exp(-abs(t))
        inverse = 1.0 / (1.0 + u)
        return -y * (inverse if t >= 0.0 else u * inverse)
    r = z - y
    if code == _SCALAR_HUBER:
        return min(max(r, -parameter), parameter) if r == r else r
    return r


#: The built-in loss class of each ``GLMLoss.name`` (a subclass counts as the built-in
#: loss); the solvers' capability declarations name losses by these keys.
BUILTIN_LOSSES = {cls.name: cls for cls in (LogisticLoss, MultinomialLogisticLoss, HingeLoss,
                                            SmoothedHingeLoss, SquaredLoss, HuberLoss)}
