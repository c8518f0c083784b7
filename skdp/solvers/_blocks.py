"""Row blocks of a :class:`~skdp.solvers.Problem` and the out-of-core (Dask) backend.

Every full-batch pass of skdp is a sum over blocks of rows of a function of the block:
``sum_b f(X_b, Y_b, s_b, norms_b)`` (scores and gradient of a block, its Gram matrix, ...).
:class:`Block` is what ``f`` sees; :meth:`Problem.block_sum
<skdp.solvers.Problem.block_sum>` runs the sum over cache-sized blocks of an in-memory
``X`` (a ``numpy.ndarray``, a ``numpy.memmap`` or a CSR matrix) and, through
:class:`DaskBackend`, over the chunks of a ``dask.array`` (``map_blocks``, then dask's
tree reduction of the per-chunk sums). Only the public structure decides the work: the
number of blocks, chunks and tasks depends on the shape and the chunking of ``X``, never
on its values. Noise is never drawn here: the solvers draw it on the client, in ``_run``.

See docs/scaling_out.md.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["Block", "DaskBackend", "RowBackend", "as_float_rows"]


def as_float_rows(X: Any) -> Any:
    """A block of rows as float64 (a view when it already is): float32 and integer input
    is stored as given and converted one block at a time."""
    if sp.issparse(X):
        return X if X.dtype == np.float64 else X.astype(np.float64)
    return np.asarray(X, dtype=np.float64)


def block_scores(X: Any, scale: np.ndarray | None, W: np.ndarray, intercept: float
                 ) -> np.ndarray:
    """``x'_i^T W`` of a block of stored rows with clipping factors ``scale``."""
    Z = np.asarray(X @ W[: X.shape[1]])
    if scale is not None:
        Z *= scale[:, None]
    if intercept:
        Z = Z + intercept * W[X.shape[1]]
    return Z


def block_gradient_sum(X: Any, scale: np.ndarray | None, D: np.ndarray, intercept: float,
                       n_params: int) -> np.ndarray:
    """``sum_i x'_i D_i^T`` of a block of stored rows with clipping factors ``scale``."""
    d = X.shape[1]
    G = np.empty((n_params, D.shape[1]))
    G[:d] = np.asarray(X.T @ (D if scale is None else D * scale[:, None]))
    if intercept:
        G[d] = intercept * D.sum(axis=0)
    return G


@dataclass(frozen=True)
class Block:
    """One block of rows as a pass function sees it.

    Attributes
    ----------
    X : ndarray or CSR matrix
        The stored rows, float64.
    scale : ndarray or None
        Their clipping factors (``None``: all 1).
    Y : ndarray
        Their encoded targets.
    norms : ndarray
        Euclidean norms of their augmented clipped rows.
    intercept : float
        The intercept feature ``c`` (0: none).
    n_params : int
        Rows of ``W``.
    """

    X: Any
    scale: np.ndarray | None
    Y: np.ndarray
    norms: np.ndarray
    intercept: float
    n_params: int

    def scores(self, W: np.ndarray) -> np.ndarray:
        """``x'_i^T W`` for the rows of the block."""
        return block_scores(self.X, self.scale, W, self.intercept)

    def gradient_sum(self, D: np.ndarray) -> np.ndarray:
        """``sum_i x'_i D_i^T`` over the rows of the block."""
        return block_gradient_sum(self.X, self.scale, D, self.intercept, self.n_params)

    def scaled_rows(self) -> Any:
        """The clipped rows ``s_i x_i`` (without the intercept feature): a block copy."""
        if self.scale is None:
            return self.X
        if sp.issparse(self.X):
            return sp.diags(self.scale) @ self.X
        return self.X * self.scale[:, None]

    def weighted_gram(self, weight: np.ndarray) -> np.ndarray:
        """``sum_i weight_i x'_i x'_i^T`` over the block's augmented, clipped rows."""
        X, p, c0 = self.X, self.n_params, self.intercept
        d = X.shape[1]
        w = weight if self.scale is None else weight * self.scale
        w2 = weight if self.scale is None else w * self.scale
        G = np.empty((p, p))
        if sp.issparse(X):
            G[:d, :d] = (X.T @ X.multiply(w2[:, None])).toarray()
        elif np.all(w2 >= 0):
            R = X * np.sqrt(w2)[:, None]
            G[:d, :d] = R.T @ R
        else:
            G[:d, :d] = X.T @ (X * w2[:, None])
        if c0:
            cross = c0 * np.asarray(X.T @ w).ravel()
            G[:d, d] = cross
            G[d, :d] = cross
            G[d, d] = c0 * c0 * float(np.sum(weight))
        return G


def make_block(X: Any, scale: np.ndarray, Y: np.ndarray, norms: np.ndarray, intercept: float,
               n_params: int) -> Block:
    """A :class:`Block` with ``scale = None`` when no row of it is clipped."""
    return Block(as_float_rows(X), None if np.all(scale == 1.0) else scale, Y, norms,
                 float(intercept), int(n_params))


def _silent(fn: Callable) -> Callable:
    """``fn`` with floating-point warnings off: a chunk function runs on a dask worker,
    outside :meth:`BaseDPSolver.solve <skdp.solvers.BaseDPSolver.solve>`'s
    ``np.errstate``, and whether it overflows depends on the data."""

    @functools.wraps(fn)
    def quiet(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return quiet


@_silent
def _silent_sum(x: np.ndarray, axis: Any = None, keepdims: bool = False, **_: Any
                ) -> np.ndarray:
    return np.sum(x, axis=axis, keepdims=keepdims)


def _tree_sum(parts: Any) -> Any:
    """``parts.sum(axis=0)`` as dask's tree reduction, each step silent (:func:`_silent`:
    a sum of per-chunk values that overflows depends on the data)."""
    import dask.array as da

    return da.reduction(parts, _silent_sum, _silent_sum, axis=0, dtype=float)


@_silent
def _chunk_sum(X, Y, scale, norms, *, fn, args, size, intercept, n_params):
    """``fn`` on one chunk, flattened to a ``(1, size)`` row (dask sums the rows)."""
    block = make_block(X, scale[:, 0], Y, norms[:, 0], intercept, n_params)
    out = np.asarray(fn(block, *args), dtype=float).reshape(1, size)
    return out


@_silent
def _chunk_scores(X, scale, *, W, intercept):
    return block_scores(as_float_rows(X), scale[:, 0], W, intercept)


@_silent
def _chunk_gradient_sum(X, scale, D, *, intercept, n_params):
    G = block_gradient_sum(as_float_rows(X), scale[:, 0], D, intercept, n_params)
    return G.reshape(1, -1)


@dataclass(frozen=True, eq=False)
class RowBackend:
    """Rows that a :class:`~skdp.solvers.Problem` does not hold in host memory: ``X`` and
    its per-row arrays (encoded targets, clipping factors, augmented row norms), stored
    alike, and the passes the problem hands over (``block_sum``, ``scores``,
    ``gradient_sum``). :class:`DaskBackend` runs them chunk by chunk,
    :class:`~skdp.solvers._device.DeviceBackend` on an array API device.

    Attributes
    ----------
    X : array
        The rows.
    Y, scale, norms : array
        The per-row arrays, stored like ``X``.
    """

    X: Any
    Y: Any
    scale: Any
    norms: Any


@dataclass(frozen=True, eq=False)
class DaskBackend(RowBackend):
    """The per-row arrays of a dask-backed problem, chunked like the rows of ``X``.

    ``Y``, the clipping factors and the row norms are ``(n, k)`` dask arrays with the
    row chunks of ``X`` (persisted once at build: with a distributed client they stay on
    the workers), so that a pass ships only ``W`` to the chunks.
    """

    @classmethod
    def build(cls, X: Any, Y: np.ndarray, scale: np.ndarray, norms: np.ndarray
              ) -> DaskBackend:
        import dask
        import dask.array as da

        chunks = X.chunks[0]
        Yd = da.from_array(np.asarray(Y, dtype=float), chunks=(chunks, Y.shape[1]))
        sd = da.from_array(scale[:, None], chunks=(chunks, 1))
        nd = da.from_array(norms[:, None], chunks=(chunks, 1))
        Yd, sd, nd = dask.persist(Yd, sd, nd)
        return cls(X=X, Y=Yd, scale=sd, norms=nd)

    def block_sum(self, fn: Callable, shape: tuple[int, ...], args: tuple, intercept: float,
                  n_params: int) -> np.ndarray:
        """``sum over chunks of fn(Block, *args)``: one task per chunk, a tree reduction."""
        import dask.array as da

        size = int(np.prod(shape))
        parts = da.map_blocks(
            _chunk_sum, self.X, self.Y, self.scale, self.norms, fn=fn, args=args, size=size,
            intercept=intercept, n_params=n_params, dtype=float,
            chunks=((1,) * len(self.X.chunks[0]), (size,)),
        )
        return np.asarray(_tree_sum(parts).compute()).reshape(shape)

    def scores(self, W: np.ndarray, intercept: float) -> np.ndarray:
        """``x'_i^T W`` of every row, gathered on the client (``n x K``)."""
        import dask.array as da

        Z = da.map_blocks(_chunk_scores, self.X, self.scale, W=W, intercept=intercept,
                          dtype=float, chunks=(self.X.chunks[0], (W.shape[1],)))
        return np.asarray(Z.compute())

    def gradient_sum(self, D: np.ndarray, intercept: float, n_params: int) -> np.ndarray:
        """``sum_i x'_i D_i^T`` of every row for a client-side ``D`` (``n x K``)."""
        import dask.array as da

        size = n_params * D.shape[1]
        Dd = da.from_array(np.asarray(D, dtype=float), chunks=(self.X.chunks[0], D.shape[1]))
        parts = da.map_blocks(_chunk_gradient_sum, self.X, self.scale, Dd,
                              intercept=intercept, n_params=n_params, dtype=float,
                              chunks=((1,) * len(self.X.chunks[0]), (size,)))
        return np.asarray(_tree_sum(parts).compute()).reshape(n_params, D.shape[1])
