"""Full-batch passes over rows held by another array library, where they are.

A fit whose ``X`` is a PyTorch, CuPy or ``array_api_strict`` array (with scikit-learn's
``array_api_dispatch=True``) keeps ``X`` on its device: :class:`DeviceBackend` runs every
pass of :meth:`Problem.block_sum <skdp.solvers.Problem.block_sum>` (and the scores and
gradient sums) there, with the array API standard's functions, and returns only the
public-size result (a gradient of ``n_params x n_outputs``, a Gram matrix) to the host.
The solver's iterate, its noise (one :class:`~skdp.privacy.noise.NoiseSource`, the same
law for every namespace) and its ledger stay on the host, so the plan, the calibration
and the privacy argument are exactly those of a NumPy fit; only where the products are
computed changes. Each pass function of the NumPy path names its device twin with
:func:`device_pass` (a pass without one is refused). Arithmetic is float64, as on the
host: float32 rows are converted one block at a time. See docs/scaling_out.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from skdp._array_api import as_float64, blocks, device_norms, namespace, to_device, to_numpy
from skdp.losses import NORM_SAFETY, GLMLoss
from skdp.solvers._blocks import Block, RowBackend

__all__ = ["DeviceBackend", "DeviceBlock", "device_pass"]


def device_pass(twin: Callable) -> Callable[[Callable], Callable]:
    """Declare ``twin`` as the device form of the decorated NumPy pass function.

    ``twin(block, *args)`` takes a :class:`DeviceBlock` and the same arguments (arrays
    already moved to the device) and returns the same values as an array of the block's
    namespace, or a NumPy array.
    """
    def mark(fn: Callable) -> Callable:
        fn.on_device = twin
        return fn
    return mark


def device_clip(D: Any, norms: Any, clip_norm: float, xp: Any, skip: bool = False) -> Any:
    """:func:`~skdp.solvers._problem.clip_unless_lossless` (l2) on the device: each
    per-example gradient ``x_i d_i^T`` scaled to norm at most ``clip_norm * NORM_SAFETY``,
    a non-finite one dropped; skipped, as on the host, when ``skip`` (public facts prove
    the clip lossless) and every derivative is finite (one reduction)."""
    if skip and math.isfinite(float(xp.sum(D))):
        return D
    target = clip_norm * NORM_SAFETY
    # ||d_i|| as the host computes it: |d_i| for one output, else scaled by the largest
    # entry (a plain sum of squares underflows below ~1e-154 and would read a large
    # gradient of tiny derivatives as norm 0, or overflow above ~1e154).
    d_norms = xp.abs(D[:, 0]) if D.shape[1] == 1 else device_norms(xp, D, 2.0)
    grad_norms = norms * d_norms
    ones = xp.ones_like(grad_norms)
    scale = xp.where(grad_norms > target, target / grad_norms, ones)
    finite = xp.isfinite(grad_norms)
    scale = xp.where(finite, scale, xp.zeros_like(scale))
    return xp.where(finite[:, None], D * scale[:, None], xp.zeros_like(D))


@dataclass(frozen=True)
class DeviceBlock(Block):
    """A :class:`~skdp.solvers._blocks.Block` whose arrays live on a device: ``X`` (float64),
    ``scale`` (always an array), ``Y`` and ``norms`` are arrays of the namespace ``xp``,
    and the products are computed there.

    Attributes
    ----------
    xp : module
        The array namespace.
    """

    xp: Any = None

    def scores(self, W: Any) -> Any:
        """``x'_i^T W`` for the rows of the block."""
        d = self.X.shape[1]
        Z = (self.X @ W[:d, ...]) * self.scale[:, None]
        if self.intercept:
            Z = Z + self.intercept * W[d, ...]
        return Z

    def gradient_sum(self, D: Any) -> Any:
        """``sum_i x'_i D_i^T`` over the rows of the block, intercept row last."""
        xp = self.xp
        G = self.X.T @ (D * self.scale[:, None])
        if self.intercept:
            G = xp.concat([G, self.intercept * xp.sum(D, axis=0)[None, :]], axis=0)
        return G

    def scaled_rows(self) -> Any:
        """The clipped rows ``s_i x_i`` (without the intercept feature)."""
        return self.X * self.scale[:, None]

    def weighted_gram(self, weight: Any) -> Any:
        """``sum_i weight_i x'_i x'_i^T`` over the block's augmented, clipped rows."""
        xp, X, c0 = self.xp, self.X, self.intercept
        w = weight * self.scale
        G = X.T @ (X * (w * self.scale)[:, None])
        if c0:
            cross = c0 * (X.T @ w)
            corner = c0 * c0 * xp.sum(weight)
            G = xp.concat([xp.concat([G, cross[:, None]], axis=1),
                           xp.concat([cross, xp.reshape(corner, (1,))])[None, :]], axis=0)
        return G


@dataclass(frozen=True, eq=False)
class DeviceBackend(RowBackend):
    """The rows and per-row arrays of a problem whose ``X`` stays on its device.

    ``Y``, the clipping factors and the row norms are copied to ``X``'s device once, at
    build; a pass then ships only ``W`` (``n_params x n_outputs``) to the device and
    one public-size result back.
    """

    @classmethod
    def build(cls, X: Any, Y: np.ndarray, scale: np.ndarray, norms: np.ndarray
              ) -> DeviceBackend:
        """Copy the host arrays next to ``X``."""
        return cls(X=X, Y=to_device(np.asarray(Y, dtype=float), X),
                   scale=to_device(scale, X), norms=to_device(norms, X))

    @property
    def xp(self) -> Any:
        return namespace(self.X)

    def _device_blocks(self, intercept: float, n_params: int):
        xp = self.xp
        n, d = self.X.shape
        for rows in blocks(n, d, self.X.dtype == xp.float64):
            yield DeviceBlock(as_float64(xp, self.X[rows, ...]), self.scale[rows],
                              self.Y[rows, ...], self.norms[rows], float(intercept),
                              int(n_params), xp)

    def _on_device(self, value: Any) -> Any:
        return to_device(value, self.X) if isinstance(value, np.ndarray) else value

    def block_sum(self, fn: Callable, shape: tuple[int, ...], args: tuple, intercept: float,
                  n_params: int) -> np.ndarray:
        """``sum over blocks of fn's device twin``, returned to the host as float64.

        Raises
        ------
        TypeError
            If ``fn`` has no device twin (:func:`device_pass`).
        """
        twin = getattr(fn, "on_device", None)
        if twin is None:
            raise TypeError(f"the pass {fn.__name__} has no array API form; pass NumPy "
                            "arrays to this solver.")
        args = tuple(self._on_device(a) for a in args)
        total = np.zeros(int(np.prod(shape)))
        for block in self._device_blocks(intercept, n_params):
            total += np.reshape(to_numpy(twin(block, *args), np.float64), -1)
        return total.reshape(shape)

    def scores(self, W: np.ndarray, intercept: float) -> np.ndarray:
        """All scores ``x'_i^T W``, returned to the host (``n x K``)."""
        Wd = self._on_device(W)
        parts = [to_numpy(block.scores(Wd), np.float64)
                 for block in self._device_blocks(intercept, W.shape[0])]
        return np.concatenate(parts, axis=0)

    def gradient_sum(self, D: np.ndarray, intercept: float, n_params: int) -> np.ndarray:
        """``sum_i x'_i D_i^T`` for host coefficients ``D`` (``n x K``)."""
        Dd = self._on_device(np.asarray(D, dtype=float))
        total = np.zeros((n_params, D.shape[1]))
        start = 0
        for block in self._device_blocks(intercept, n_params):
            stop = start + block.X.shape[0]
            total += to_numpy(block.gradient_sum(Dd[start:stop, ...]), np.float64)
            start = stop
        return total


# -- device twins of the NumPy passes -------------------------------------------------------
def clipped_gradient_pass(block: DeviceBlock, W: Any, loss: GLMLoss, clip_norm: float,
                          skip: bool) -> Any:
    """Device twin of ``_clipped_gradient_block`` (:mod:`skdp.solvers._problem`)."""
    D = loss.device_derivative(block.scores(W), block.Y, block.xp)
    return block.gradient_sum(device_clip(D, block.norms, clip_norm, block.xp, skip))


def loss_and_gradient_pass(block: DeviceBlock, W: Any, loss: GLMLoss) -> Any:
    """Device twin of ``_loss_and_gradient_block``: ``[sum_i phi_i, vec(gradient sum)]``."""
    xp = block.xp
    Z = block.scores(W)
    total = xp.reshape(xp.sum(loss.device_value(Z, block.Y, xp)), (1,))
    G = block.gradient_sum(loss.device_derivative(Z, block.Y, xp))
    return xp.concat([total, xp.reshape(G, (-1,))])


def statistics_pass(block: DeviceBlock) -> Any:
    """Device twin of the sufficient statistics' block: ``[vec(X_b^T X_b), X_b^T y_b,
    1^T X_b]`` of the clipped rows."""
    xp = block.xp
    Xs = block.scaled_rows()
    return xp.concat([xp.reshape(Xs.T @ Xs, (-1,)), Xs.T @ block.Y[:, 0],
                      xp.sum(Xs, axis=0)])
