"""Compiled kernels for per-step loops that the benchmark suite shows are Python-bound.

numba is an optional extra (``pip install "skdp[numba]"``); without it, or with the
environment variable ``SKDP_NUMBA=0``, every solver runs its numpy code, which stays the
reference. A kernel computes the same released quantities from the same pre-drawn noise
(equal to rounding: the order of the floating-point sums differs, tested against the numpy
path and the plain-numpy references), so privacy does not depend on which path runs.
Whether it runs is decided from public facts only: numba importable, the loss and the
shapes, and the planned number of steps (:data:`KERNEL_MIN_STEPS`: importing numba and
loading a compiled kernel costs about half a second, which a short fit would not earn
back). Compiled code is cached on disk (``cache=True``; the first fit on a machine also
compiles, a few seconds). When numba is installed but the kernels cannot be loaded (an
incompatible numba, no writable cache location), a ``RuntimeWarning`` says so once and the
numpy code runs.

Kernels: the chunk loop of the truncated mirror descent solvers and the step loop of the
Euclidean mirror descent solvers (one-output losses of ``skdp.losses.scalar_kernel``;
measured in docs/algorithms/truncated_mirror_descent.md and docs/algorithms/mirror_descent.md).
"""

from __future__ import annotations

import importlib.util
import math
import os
import warnings
from collections.abc import Callable

import numpy as np

__all__ = ["KERNEL_MIN_STEPS", "enabled", "euclidean_md_block", "truncated_chunk"]

#: Fewest planned steps of a fit for which a kernel is used (public: a function of the
#: plan). Measured: at 16384 steps the numpy loop (0.48 s) still beats a process's first
#: kernel fit (0.65 s, numba's import included); at 65536 the kernel takes 0.85 s, numpy 2-4 s.
KERNEL_MIN_STEPS = 20_000

_LOADED: dict = {}


def enabled() -> bool:
    """Whether compiled kernels may run: numba is installed and ``SKDP_NUMBA`` is not
    ``"0"`` (:func:`truncated_chunk` still falls back when numba fails to load)."""
    return (os.environ.get("SKDP_NUMBA", "1") != "0"
            and importlib.util.find_spec("numba") is not None)


def _load(name: str, *warm_up) -> Callable | None:
    """The compiled kernel ``name`` of :mod:`skdp.solvers._numba_kernels`, run once on
    ``warm_up`` (a tiny input) so that a failure to compile or to load the cache surfaces
    here, before any data is read; ``None`` (and a ``RuntimeWarning``, once per kernel and
    process) when that fails."""
    if name not in _LOADED:
        try:
            from skdp.solvers import _numba_kernels

            kernel = getattr(_numba_kernels, name)
            kernel(*warm_up)
        except Exception as exc:  # numba's import, typing or cache errors vary by version
            warnings.warn(f"skdp's compiled kernels are unavailable ({type(exc).__name__}: "
                          f"{exc}); the numpy code runs instead. SKDP_NUMBA=0 skips them.",
                          RuntimeWarning, stacklevel=3)
            kernel = None
        _LOADED[name] = kernel
    return _LOADED[name]


def truncated_chunk() -> Callable[..., int] | None:
    """The compiled chunk loop of the truncated mirror descent solvers, or ``None`` when
    the kernels cannot be loaded (:func:`_load`)."""
    one, two = np.zeros(1), np.zeros((1, 1))
    return _load("truncated_chunk", two, one, one, np.array([0, 1], dtype=np.int64), two,
                 np.zeros(1), np.zeros(1), np.zeros(1), 0, 0, 1.0, 0.0, 1, 1.0, 1, 0.0, 2.0,
                 2.0, math.inf)


def euclidean_md_block() -> Callable[..., None] | None:
    """The compiled step loop of the Euclidean mirror descent solvers (``run_noisy_md``),
    or ``None`` when the kernels cannot be loaded (:func:`_load`)."""
    one, index = np.zeros(1), np.zeros(1, dtype=np.int64)
    return _load("euclidean_md_block", np.zeros((1, 1)), one, one, one, index, False, index,
                 np.array([0, 1], dtype=np.int64), np.zeros((1, 2)), np.zeros(2),
                 np.zeros(2), one, False, one, 0, np.zeros(2), math.inf, 0.0, 0.0, 1, 1.0,
                 1.0, 1.0, 1, 0.0)
