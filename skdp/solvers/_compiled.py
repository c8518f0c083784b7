"""Compiled kernels for per-step loops that the benchmark suite shows are Python-bound.

numba is an optional extra (``pip install "skdp[numba]"``); without it, or with the
environment variable ``SKDP_NUMBA=0``, every solver runs its numpy code, which stays the
reference. A kernel computes the same released quantities from the same pre-drawn noise
(equal to rounding: the order of the floating-point sums differs, tested against the numpy
path), so privacy does not depend on which path runs. Whether it runs is decided from
public facts only: numba importable, the loss and the shapes, and the planned number of
steps (:data:`KERNEL_MIN_STEPS`: importing numba and loading a compiled kernel costs about
a second, which a short fit would not earn back). Compiled code is cached on disk
(``cache=True``): the first fit on a machine also compiles (a few seconds).

Kernels: :func:`truncated_chunk`, the steps of a chunk of small batches of the truncated
mirror descent solvers (one-output losses of :func:`~skdp.losses.scalar_kernel`; measured
in benchmarks/results, docs/scaling_out.md).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable

__all__ = ["KERNEL_MIN_STEPS", "enabled", "truncated_chunk"]

#: Fewest planned steps of a fit for which a kernel is used (public: a function of the plan).
KERNEL_MIN_STEPS = 4096


def enabled() -> bool:
    """Whether compiled kernels may run: numba is installed and ``SKDP_NUMBA`` is not
    ``"0"``."""
    return (os.environ.get("SKDP_NUMBA", "1") != "0"
            and importlib.util.find_spec("numba") is not None)


def truncated_chunk() -> Callable[..., int]:
    """The compiled chunk loop of the truncated mirror descent solvers (imports numba)."""
    from skdp.solvers._numba_kernels import truncated_chunk as kernel

    return kernel
