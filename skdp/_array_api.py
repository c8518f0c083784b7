"""Arrays of other libraries (PyTorch, CuPy, ``array_api_strict``) through the array API.

With ``sklearn.set_config(array_api_dispatch=True)``, a fit whose ``X`` is such an array
keeps ``X`` where it is (its namespace and device): the passes over the rows run there
(:mod:`skdp.solvers._device`), and only public-size results come back to the host (the
``n_params x n_outputs`` gradient of a pass, a Gram matrix, the per-row norms the private
bounds read). The noise is drawn on the host by the fit's one
:class:`~skdp.privacy.noise.NoiseSource`, so its law, its ledger and its tests are the
same for every namespace (docs/scaling_out.md, "Arrays on a GPU").

The namespace is read with ``array_api_compat`` (scikit-learn's vendored copy when the
package itself is not installed); NumPy arrays, sparse matrices and dask arrays never take
this path.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

try:  # pragma: no cover - which copy is present depends on the install
    import array_api_compat as compat
except ImportError:  # pragma: no cover
    try:
        from sklearn.externals import array_api_compat as compat
    except ImportError:
        # Neither (scikit-learn < 1.7 without the package): scikit-learn cannot turn its
        # dispatch on either, so no input takes this path.
        compat = None

__all__ = ["dispatch_enabled", "is_device_array", "namespace", "device", "to_numpy",
           "to_device", "check_same_namespace", "device_row_norms", "device_has_nan",
           "device_all_finite", "device_blocks",
           "clip_device_rows",
           "device_norms", "device_log_softmax"]

#: float64 values per converted block of rows (256 MB): float32 rows are converted one
#: block at a time; float64 rows are used in place, in one block.
DEVICE_BLOCK_ELEMENTS = 1 << 25


def dispatch_enabled() -> bool:
    """Whether ``sklearn.set_config(array_api_dispatch=True)`` is in effect."""
    from sklearn import get_config

    return bool(get_config().get("array_api_dispatch", False))


def is_device_array(X: Any) -> bool:
    """Whether ``X`` takes the array API path: array API dispatch is on and ``X`` is an
    array of a namespace other than NumPy (not a sparse matrix, a dask array or a list).

    Parameters
    ----------
    X : object
        The input.

    Returns
    -------
    bool
        True for a PyTorch, CuPy or ``array_api_strict`` array (any array API namespace
        but NumPy's) while dispatch is enabled.
    """
    if compat is None or isinstance(X, np.ndarray) or sp.issparse(X) or not hasattr(X, "shape"):
        return False
    if type(X).__module__.split(".")[0] == "dask":
        return False
    if not compat.is_array_api_obj(X) or not dispatch_enabled():
        return False
    return not compat.is_numpy_array(X)


def namespace(X: Any) -> Any:
    """The array API namespace of ``X`` (``array_api_compat``'s wrapper where needed)."""
    return compat.array_namespace(X)


def device(X: Any) -> Any:
    """The device ``X`` lives on."""
    return compat.device(X)


def to_numpy(X: Any, dtype: Any = None) -> np.ndarray:
    """A NumPy copy of ``X`` on the host (``X`` itself when it is a NumPy array).

    Parameters
    ----------
    X : array
        An array of any namespace and device.
    dtype : dtype or None, default=None
        The NumPy dtype of the result (``None``: the array's own).

    Returns
    -------
    ndarray
        The values on the host.
    """
    if compat is None or isinstance(X, (np.ndarray, np.generic, float, int)):
        out = X
    elif compat.is_torch_array(X):
        out = X.detach().cpu().numpy()
    elif compat.is_cupy_array(X):
        out = X.get()
    else:
        xp = namespace(X)
        try:
            out = np.from_dlpack(X)
        except (BufferError, RuntimeError, TypeError, ValueError):
            # A non-CPU device of a namespace without its own host copy (array_api_strict's
            # test devices): through the namespace's CPU device.
            out = np.from_dlpack(compat.to_device(X, _cpu_device(xp)))
    return np.asarray(out, dtype=dtype)


def _cpu_device(xp: Any) -> Any:
    if hasattr(xp, "Device"):  # array_api_strict
        return xp.Device("CPU_DEVICE")
    return "cpu"


def to_device(A: Any, like: Any, dtype: Any = None) -> Any:
    """``A`` (a NumPy array or a scalar) as an array of ``like``'s namespace, on its device.

    Parameters
    ----------
    A : array-like
        The values (host memory).
    like : array
        An array of the target namespace and device.
    dtype : dtype or None, default=None
        The target namespace's dtype (``None``: float64).

    Returns
    -------
    array
        The values in ``like``'s namespace and device.
    """
    xp = namespace(like)
    dtype = xp.float64 if dtype is None else dtype
    if compat.is_torch_array(like):
        import torch

        return torch.as_tensor(np.ascontiguousarray(A), dtype=dtype, device=like.device)
    return xp.asarray(np.ascontiguousarray(A), dtype=dtype, device=device(like))


def blocks(n: int, d: int, dtype_is_float64: bool) -> list[slice]:
    """The row blocks of a device pass: public (the shape and the dtype only)."""
    step = n if dtype_is_float64 else DEVICE_BLOCK_ELEMENTS // max(d, 1)
    step = max(step, 1)
    return [slice(start, min(start + step, n)) for start in range(0, n, step)]


def as_float64(xp: Any, X: Any) -> Any:
    return X if X.dtype == xp.float64 else xp.astype(X, xp.float64)


def device_norms(xp: Any, A: Any, ord: float) -> Any:
    """Row ``ord``-norms of a float64 block of ``xp`` arrays (on their device), scaled by
    each row's largest entry (no overflow or underflow; a NaN or infinite entry gives a
    NaN or infinite norm)."""
    a = xp.abs(A)
    peak = xp.max(a, axis=1)
    if ord == math.inf:
        return peak
    safe = xp.where(peak > 0, peak, xp.ones_like(peak))
    s = a / safe[:, None]
    if ord == 2.0:
        inner = xp.sqrt(xp.sum(s * s, axis=1))
    elif ord == 1.0:
        inner = xp.sum(s, axis=1)
    else:
        inner = xp.sum(s**ord, axis=1) ** (1.0 / ord)
    return peak * inner


def device_row_norms(X: Any, ord: float = 2.0) -> np.ndarray:
    """The ``ord``-norm of every row of a device array, as a host float64 vector.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        Rows of an array API namespace (any device).
    ord : float, default=2.0
        The norm (``>= 1``, ``inf`` allowed).

    Returns
    -------
    ndarray of shape (n_samples,)
        The norms (the only ``O(n)`` values that come back to the host).
    """
    parts = device_blocks(X, lambda xp, rows: device_norms(xp, rows, float(ord)))
    return np.concatenate(parts) if parts else np.zeros(0)


def device_blocks(X: Any, fn: Any) -> list[np.ndarray]:
    """``fn(xp, rows)`` for each block of rows of a device array (float64 rows, at most
    :data:`DEVICE_BLOCK_ELEMENTS` values each), every result brought to the host.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        Rows of an array API namespace (any device).
    fn : callable
        ``fn(xp, rows)``, an array of the block's namespace.

    Returns
    -------
    list of ndarray
        The float64 results, block by block (to sum or to concatenate).
    """
    xp = namespace(X)
    return [to_numpy(fn(xp, as_float64(xp, X[rows, ...])), np.float64)
            for rows in blocks(*X.shape, False)]


def device_all_finite(X: Any) -> bool:
    """Whether every entry of a device array is finite."""
    xp = namespace(X)
    return bool(xp.all(xp.isfinite(X)))


def device_has_nan(X: Any) -> bool:
    """Whether a device array holds a NaN (for scikit-learn's message, once a row norm
    was found non-finite)."""
    xp = namespace(X)
    return bool(xp.any(xp.isnan(X)))


def device_log_softmax(xp: Any, S: Any) -> Any:
    """Row-wise ``log softmax`` of scores on their device (shifted by the row maximum)."""
    top = xp.max(S, axis=1, keepdims=True)
    shifted = S - top
    return shifted - xp.log(xp.sum(xp.exp(shifted), axis=1, keepdims=True))


def _placement(A: Any) -> tuple[str, str] | None:
    """``(namespace, device)`` of a device array; ``None`` for host input (NumPy arrays,
    sparse matrices, lists, data frames)."""
    if (compat is None or A is None or isinstance(A, (np.ndarray, np.generic, list, tuple))
            or sp.issparse(A) or not compat.is_array_api_obj(A) or compat.is_numpy_array(A)):
        return None
    return namespace(A).__name__.split(".")[-1], str(device(A))


def check_same_namespace(fitted: Any, X: Any, where: str) -> None:
    """Refuse ``X`` from another namespace or device than the fitted attribute ``fitted``
    while array API dispatch is on (scikit-learn's rule for array API estimators).

    Parameters
    ----------
    fitted : array
        A fitted attribute (it lives where the fit's ``X`` was).
    X : array-like
        The input of ``where``.
    where : str
        The method, as ``"Estimator.method()"``, for the message.

    Raises
    ------
    ValueError
        If dispatch is on and ``X`` is not where ``fitted`` is.
    """
    if not dispatch_enabled():
        return
    model, given = _placement(fitted), _placement(X)
    if model != given:
        def said(place):
            return "NumPy (the host)" if place is None else f"{place[0]} on device {place[1]}"

        raise ValueError(
            f"{where} must use the same namespace and device as fit: the model was fitted "
            f"on {said(model)} and X is {said(given)}. Convert X (for example "
            "torch.asarray(X, device=...) or X.cpu().numpy()), or refit.")


def clip_device_rows(xp: Any, X: Any, target: float, ord: float = 2.0) -> Any:
    """Float64 rows on a device scaled down to ``ord``-norm ``target`` (the caller's bound
    times :data:`~skdp.losses.NORM_SAFETY`), as the host clips them: a row above it is
    divided by its norm first, then scaled (a single factor ``target / ||x||`` can be
    subnormal for huge rows and keep too few bits)."""
    norms = device_norms(xp, X, ord)
    over = norms > target
    safe = xp.where(over, norms, xp.ones_like(norms))
    return xp.where(over[:, None], (X / safe[:, None]) * target, X)
