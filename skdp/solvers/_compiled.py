"""Compiled kernels for per-step loops that the benchmark suite shows are Python-bound.

numba is an optional extra (``pip install "skdp[numba]"``); without it, or with the
environment variable ``SKDP_NUMBA=0`` (or ``false``, ``no``, ``off``), every solver runs
its numpy code, which stays the reference. A kernel computes the same released quantities
from the same pre-drawn noise (equal to rounding: the order of the floating-point sums
differs; tested against the numpy path and the plain-numpy references), so privacy does
not depend on which path runs.
Whether it runs is decided from public facts only: numba importable, the loss and the
shapes, and the planned number of steps (:data:`KERNEL_MIN_STEPS`: importing numba and
loading a compiled kernel costs about half a second, which a short fit would not earn
back). Compiled code is cached on disk (``cache=True``; the first fit on a machine also
compiles, a few seconds). When numba is installed but the kernels cannot be loaded (an
incompatible numba, no writable cache location), a ``RuntimeWarning`` says so once and the
numpy code runs.

Kernels: the chunk loop of the truncated mirror descent solvers (one-output losses of
``skdp.losses.scalar_kernel``; measured in docs/algorithms/truncated_mirror_descent.md).
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Callable

import numpy as np

__all__ = ["KERNEL_MIN_STEPS", "enabled", "truncated_chunk"]

#: Fewest planned steps of a fit for which a kernel is used (public: a function of the
#: plan). Measured: at 16384 steps the numpy loop (0.48 s) still beats a process's first
#: kernel fit (0.65 s, numba's import included); at 65536 the kernel takes 0.85 s, numpy 2-4 s.
KERNEL_MIN_STEPS = 20_000

_LOADED: dict = {}


#: Values of ``SKDP_NUMBA`` that switch the kernels off (case-insensitive).
_OFF = ("0", "false", "no", "off")


def enabled() -> bool:
    """Whether compiled kernels may run: numba is installed and ``SKDP_NUMBA`` is not
    ``0``/``false``/``no``/``off`` (:func:`truncated_chunk` still falls back when numba
    fails to load)."""
    return (os.environ.get("SKDP_NUMBA", "1").strip().lower() not in _OFF
            and importlib.util.find_spec("numba") is not None)


def truncated_chunk() -> Callable[..., int] | None:
    """The compiled chunk loop of the truncated mirror descent solvers, or ``None`` when
    the kernels cannot be loaded (then a ``RuntimeWarning``, once per process).

    The first call imports numba and runs the kernel on a one-record chunk, so that a
    failure to compile or to load the cache surfaces here, before any step of a fit.
    """
    if "truncated_chunk" not in _LOADED:
        try:
            from skdp.solvers._numba_kernels import truncated_chunk as kernel

            one = np.zeros(1)
            kernel(np.zeros((1, 1)), one, one, np.array([0, 1], dtype=np.int64),
                   np.zeros((1, 1)), np.zeros(1), np.zeros(1), np.zeros(1), 0, 0, 1.0, 0.0,
                   1, 1.0, 1, 0.0, 2.0, 2.0, float("inf"))
        except Exception as exc:  # numba's import, typing or cache errors vary by version
            warnings.warn(f"skdp's compiled kernels are unavailable ({type(exc).__name__}: "
                          f"{exc}); the numpy code runs instead. SKDP_NUMBA=0 skips them.",
                          RuntimeWarning, stacklevel=2)
            kernel = None
        _LOADED["truncated_chunk"] = kernel
    return _LOADED["truncated_chunk"]
