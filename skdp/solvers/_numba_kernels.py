"""The numba kernels of :mod:`skdp.solvers._compiled` (imported only when one runs).

Each is the scalar-loop form of a numpy loop of a solver, compiled; the primitives they
call are the plain-Python scalar forms kept next to their numpy versions
(:func:`skdp.losses.scalar_derivative`, :func:`skdp.geometry._lp.lp_dual_step_vector`).
"""

from __future__ import annotations

import numba
import numpy as np

from skdp.geometry._lp import lp_dual_step_vector
from skdp.losses import scalar_derivative

#: sha256 of the sources of the two helpers compiled into the kernels. numba's on-disk cache
#: is keyed by THIS file only, so a change to a helper must change this file: a test
#: recomputes the hash and fails until it is updated here (which invalidates the cache).
HELPERS_SHA256 = "7b0f6c1186e4d4899370c794b0b9cb72b6b3720ac8b5398da607b6ba00b8117e"

_derivative = numba.njit(cache=True, nogil=True)(scalar_derivative)
_mirror_step = numba.njit(cache=True, nogil=True)(lp_dual_step_vector)


def helpers_sha256() -> str:
    """The sha256 of the helpers' current sources (compared with :data:`HELPERS_SHA256`)."""
    import hashlib
    import inspect

    text = inspect.getsource(scalar_derivative) + inspect.getsource(lp_dual_step_vector)
    return hashlib.sha256(text.encode()).hexdigest()


@numba.njit(cache=True, nogil=True)
def truncated_chunk(A, Y, norms, offsets, noise_sums, theta, W, total, step, first, eta,
                    ridge, k, limit, code, parameter, p, q, radius):  # pragma: no cover
    """The steps of ``_TruncatedBase._dense_chunk`` for one output, in place.

    Batch ``j`` holds rows ``offsets[j]:offsets[j + 1]`` of ``A`` (augmented rows), ``Y``
    (labels) and ``norms`` (their l_q norms). Its step: ``g = sum_i phi'_i x'_i`` over the
    records with ``norms_i |phi'_i| <= limit`` (truncation; a NaN derivative is dropped),
    ``g = (g + noise_sums[j]) eta / |B_j|``, ``g[:k] += ridge W[:k]``, then the mirror step
    of ``(theta, W)``; ``W`` is added to ``total`` from step ``first`` on. Returns the step
    count after the chunk.
    """
    n_params = A.shape[1]
    g = np.empty(n_params)
    for j in range(offsets.shape[0] - 1):
        for c in range(n_params):
            g[c] = 0.0
        for i in range(offsets[j], offsets[j + 1]):
            score = 0.0
            for c in range(n_params):
                score += A[i, c] * W[c]
            d = _derivative(code, parameter, score, Y[i])
            if not norms[i] * abs(d) <= limit:
                d = 0.0  # truncated (or not finite); accumulated all the same (no branch)
            for c in range(n_params):
                g[c] += d * A[i, c]
        scale = eta / (offsets[j + 1] - offsets[j])
        for c in range(n_params):
            g[c] = (g[c] + noise_sums[j, c]) * scale
        if ridge != 0.0:
            for c in range(k):
                g[c] += ridge * W[c]
        _mirror_step(theta, W, g, k, p, q, radius)
        if step >= first:
            for c in range(n_params):
                total[c] += W[c]
        step += 1
    return step
