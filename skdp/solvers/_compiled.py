"""Compiled kernels for per-step loops that the benchmark suite shows are Python-bound.

numba is an optional extra (``pip install "skdp[numba]"``); without it, or with the
environment variable ``SKDP_NUMBA=0`` (or ``false``, ``no``, ``off``), every solver runs
its numpy code, which stays the reference. A kernel computes the same released quantities
from the same pre-drawn noise (equal to rounding: the order of the floating-point sums
differs; tested against the numpy path and the plain-numpy references), so privacy does
not depend on which path runs.
Whether it runs is decided from public facts only: numba importable, the loss and the
shapes, and the planned work (:data:`KERNEL_MIN_STEPS`, :data:`FULL_PASS_MIN_WORK`):
importing numba and loading a compiled kernel costs most of a second once per process, so
a fit runs compiled only when its measured saving repays that load within
:data:`REPAID_WITHIN_FITS` fits; or ``SKDP_NUMBA=always`` (every size). Compiled code is cached on
disk (``cache=True``; the first fit on a machine also compiles, a few seconds). When numba
is installed but the kernels cannot be loaded (an incompatible numba, no writable cache
location), a ``RuntimeWarning`` says so once and the numpy code runs.

Kernels (one-output losses of ``skdp.losses.scalar_kernel``):

- the chunk loop of the truncated mirror descent solvers (measured in
  docs/algorithms/truncated_mirror_descent.md);
- the full pass of :meth:`skdp.solvers.Problem.clipped_gradient` on a dense in-memory
  ``X`` (DP-GD, DP-AccMD, the SVRG snapshots, regularized mirror descent's ``l_q``-clipped
  pass): scores, derivative, clipping and gradient
  sum of each row while it is in cache, one read of ``X`` per pass where the numpy path
  reads each block twice through BLAS (measured in docs/scaling_out.md, "Compiled full
  passes").

The kernels are plain ``@numba.njit`` functions (no hand-written LLVM IR, no fast-math
flags): the order of every floating-point sum is the one written in the loop.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import warnings
from collections.abc import Callable

import numpy as np

from skdp.losses import scalar_kernel

__all__ = ["FULL_PASS_MIN_WORK", "KERNEL_MIN_STEPS", "always",
           "clipped_gradient_pass", "enabled", "scalar_kernel_for",
           "truncated_chunk", "worth_it"]

#: The constants below were measured together on one machine (stop 34: AMD EPYC, 2 cores,
#: covertype-shaped data, one BLAS thread; docs/scaling_out.md, "When a kernel runs"), so
#: that their ratios, which decide, are consistent; an earlier, slower machine gave a load
#: of 0.85 s against savings about twice these, the same thresholds within 1.5x.
#:
#: One-time cost, per process, of importing numba and loading the cached kernels: 0.28-0.34
#: s in fresh interpreters for the first kernel (numba's import included), 3-4 ms for each
#: further one (they share one module).
LOAD_SECONDS = 0.30
#: A kernel runs for a fit whose estimated saving repays that load within this many fits of
#: the process (a 5-fold cross-validation, a short search or notebook session); smaller
#: fits, whose saving is within a fit's timing noise, keep the numpy code. The cost: a
#: process that makes one such fit only is up to the load slower (SKDP_NUMBA=0 avoids it).
REPAID_WITHIN_FITS = 5
#: Measured saving of the compiled full pass against the numpy pass, seconds per
#: row-feature product (DP-GD 0.18 ns, DP-AccMD 0.16 ns on covertype).
FULL_PASS_SAVING = 0.17e-9
#: Measured saving of the truncated solvers' compiled chunk loop against the numpy loop,
#: seconds per step (shuffled truncated mirror descent, covertype-shaped, 10k-20k rows:
#: 10.1-10.5 us).
CHUNK_STEP_SAVING = 10e-6

#: Fewest planned steps of a fit for which the truncated solvers' chunk loop runs compiled
#: (public: a function of the plan): its saving repays the load within
#: ``REPAID_WITHIN_FITS`` fits, 6000 steps.
KERNEL_MIN_STEPS = round(LOAD_SECONDS / REPAID_WITHIN_FITS / CHUNK_STEP_SAVING)

#: Fewest planned row-feature products of a fit (passes x n_samples x n_features) for which
#: the compiled full pass is used (public: the plan and the shape): its saving repays the
#: load within ``REPAID_WITHIN_FITS`` fits, 3.5e8 products (DP-GD on covertype, 5.5e8,
#: runs compiled).
FULL_PASS_MIN_WORK = round(LOAD_SECONDS / REPAID_WITHIN_FITS / FULL_PASS_SAVING)

_LOADED: dict = {}


#: Values of ``SKDP_NUMBA`` that switch the kernels off (case-insensitive).
_OFF = ("0", "false", "no", "off")
#: The value of ``SKDP_NUMBA`` that runs the kernels at every size (no work threshold).
_ALWAYS = "always"


def enabled() -> bool:
    """Whether compiled kernels may run: numba is installed and ``SKDP_NUMBA`` is not
    ``0``/``false``/``no``/``off`` (:func:`truncated_chunk` still falls back when numba
    fails to load)."""
    return (_setting() not in _OFF
            and importlib.util.find_spec("numba") is not None)


def always() -> bool:
    """Whether ``SKDP_NUMBA=always`` asks for the kernels at every size: for a process
    that fits many times (a search, a notebook), which pays the one-time load once,
    rather than per fit as the work thresholds assume."""
    return _setting() == _ALWAYS


def worth_it(work: float, threshold: float) -> bool:
    """Whether a fit's planned ``work`` (public) runs compiled: at least ``threshold``,
    or any work with ``SKDP_NUMBA=always``; and :func:`enabled`."""
    return (work >= threshold or always()) and enabled()


def scalar_kernel_for(loss, n_outputs: int, work: float, threshold: float,
                      load: Callable[[], Callable | None]) -> tuple | None:
    """``(kernel, loss code, loss parameter)`` when a kernel runs for this fit, else
    ``None``: one output of a loss with a scalar form (:func:`skdp.losses.scalar_kernel`),
    :func:`worth_it` for the planned ``work``, and ``load()`` (the kernel's loader, such as
    :func:`truncated_chunk`) provides it. Public facts only."""
    coded = scalar_kernel(loss) if n_outputs == 1 else None
    if coded is None or not worth_it(work, threshold):
        return None
    run = load()
    return None if run is None else (run, *coded)


def _setting() -> str:
    return os.environ.get("SKDP_NUMBA", "1").strip().lower()


def _load(name: str, warm_up: Callable[[Callable], object]) -> Callable | None:
    """The kernel ``name`` of :mod:`skdp.solvers._numba_kernels`, run once by ``warm_up``
    on a one-record input so that a failure to compile or to load the cache surfaces
    here, before any step of a fit; ``None`` (and a ``RuntimeWarning``, once per process)
    when numba cannot provide it."""
    if name not in _LOADED:
        try:
            kernel = getattr(importlib.import_module("skdp.solvers._numba_kernels"), name)
            warm_up(kernel)
        except Exception as exc:  # numba's import, typing or cache errors vary by version
            if not any(value is None for value in _LOADED.values()):
                warnings.warn(f"skdp's compiled kernels are unavailable ({type(exc).__name__}"
                              f": {exc}); the numpy code runs instead. SKDP_NUMBA=0 skips "
                              "them.", RuntimeWarning, stacklevel=3)
            kernel = None
        _LOADED[name] = kernel
    return _LOADED[name]


def _warm_truncated_chunk(kernel: Callable) -> None:
    one = np.zeros(1)
    kernel(np.zeros((1, 1)), one, one, np.array([0, 1], dtype=np.int64), np.zeros((1, 1)),
           np.zeros(1), np.zeros(1), np.zeros(1), 0, 0, 1.0, 0.0, 1, 1.0, 1, 0.0, 2.0, 2.0,
           float("inf"))


def _warm_clipped_gradient_pass(kernel: Callable) -> None:
    one = np.zeros(1)
    kernel(np.zeros((1, 1)), np.zeros(0), one, one, np.zeros(2), 1.0, 0, 0.0, 1.0, True,
           np.zeros(1), False, np.zeros(2))


def truncated_chunk() -> Callable[..., int] | None:
    """The compiled chunk loop of the truncated mirror descent solvers, or ``None`` when
    the kernels cannot be loaded (then a ``RuntimeWarning``, once per process)."""
    return _load("truncated_chunk", _warm_truncated_chunk)


def clipped_gradient_pass() -> Callable[..., None] | None:
    """The compiled full pass of :meth:`~skdp.solvers.Problem.clipped_gradient`, or
    ``None`` when the kernels cannot be loaded (then a ``RuntimeWarning``, once per
    process)."""
    return _load("clipped_gradient_pass", _warm_clipped_gradient_pass)

