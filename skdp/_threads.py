"""One BLAS thread for the fits of narrow data (docs/scaling_out.md, "BLAS threads").

skdp reads ``X`` by blocks of rows (bounded memory, out-of-core input), so a fit of a
narrow matrix makes a few hundred small BLAS calls (block scores, gradient sums, weighted
Gram matrices). On such calls a second thread saves little on an idle machine, and on a
loaded one each multithreaded call waits for its descheduled thread. With two busy
processes on two cores, the default ``DPLogisticRegression`` on 200,000 x 54 rows took a
median 3.6x scikit-learn's time (p95 27x) with the pool at its default size, and 0.93x
on one thread. scikit-learn limits BLAS the same way inside its own loops (``KMeans``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from threadpoolctl import ThreadpoolController

from skdp._array_api import is_device_array

__all__ = ["ONE_THREAD_WIDTH", "fit_threads"]

#: Widths (features) up to which a fit runs its BLAS calls on one thread. A wider block's
#: calls carry enough work per call (the Gram matrices grow as ``d^2``) for threads to pay.
ONE_THREAD_WIDTH = 256

_controller: ThreadpoolController | None = None
# The BLAS thread counts are global to the process: fits running at once in several
# threads (a threading joblib backend) share one limit, set by the first to enter and
# restored by the last to leave, so the user's counts come back whatever the order.
_lock = threading.Lock()
_active = 0
_limiter: Any = None


def _blas() -> ThreadpoolController:
    """The process's BLAS libraries, inspected once (numpy's and scipy's are loaded by
    then)."""
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller


@contextmanager
def _one_blas_thread() -> Iterator[None]:
    """BLAS on one thread while any fit holds it (re-entrant, thread-safe)."""
    global _active, _limiter
    with _lock:
        if _active == 0:
            _limiter = _blas().limit(limits=1, user_api="blas")
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                _limiter.restore_original_limits()
                _limiter = None


def fit_threads(X: Any) -> AbstractContextManager:
    """The BLAS threads of one fit on ``X``: one for a host matrix of at most
    :data:`ONE_THREAD_WIDTH` columns, the library's own count otherwise.

    Public: the shape and the kind of ``X``. An array kept on its device (array API) and
    input without a shape (lists, validated later) keep the library's count.

    Parameters
    ----------
    X : array-like
        The training data.

    Returns
    -------
    context manager
        Restores the thread counts on exit.
    """
    shape = getattr(X, "shape", None)
    if (shape is None or len(shape) != 2 or is_device_array(X)
            or not shape[1] <= ONE_THREAD_WIDTH):
        return nullcontext()
    return _one_blas_thread()
