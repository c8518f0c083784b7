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


@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})
def euclidean_md_block(X, scale, norms, Y, pool, use_pool, flat, offsets, noise, W, total,
                       weights, use_total, steps, k0, center, radius, lam, alpha, p,
                       intercept, target, inv_b, code, parameter):  # pragma: no cover
    """Steps ``k0 .. k0 + count - 1`` of ``run_noisy_md`` on dense rows, one output,
    Euclidean geometry (:class:`~skdp.solvers.mirror_descent.EuclideanForm`), in place.

    Step ``t`` (batch ``flat[offsets[t]:offsets[t + 1]]``, records ``pool[local]`` or
    ``local``): ``G = inv_b sum_i clip(phi'_i) s_i x'_i`` (the one-output clip of
    ``clip_coefficients``: factor ``min(1, target / (norm_i |phi'_i|))``, a non-finite
    product dropped), ``+ noise[t]``, ``+ lam (W - center)`` on every row and ``alpha W``
    on the first ``p``; then ``W[:p] = center + P_R(W - center - eta G)`` (``P_R`` the
    radial projection onto the l2 ball of ``radius``) and ``W[p:] -= eta G``; ``total +=
    weights[k] W`` when ``use_total``. The rows of a batch are read twice, as numpy's
    gather and products do: all scores first (independent loads), then the sum.
    """
    d = X.shape[1]
    n_params = W.shape[0]
    G = np.empty(n_params)
    w = np.empty(p)
    most = 0
    for t in range(offsets.shape[0] - 1):
        most = max(most, offsets[t + 1] - offsets[t])
    rows = np.empty(most, dtype=np.int64)
    coef = np.empty(most)
    for t in range(offsets.shape[0] - 1):
        m = offsets[t + 1] - offsets[t]
        for r in range(m):
            rows[r] = pool[flat[offsets[t] + r]] if use_pool else flat[offsets[t] + r]
        for r in range(m):
            i = rows[r]
            score = 0.0
            for c in range(d):
                score += X[i, c] * W[c]
            coef[r] = score
        d_sum = 0.0
        for r in range(m):
            i = rows[r]
            score = coef[r] * scale[i]
            if intercept != 0.0:
                score += intercept * W[d]
            D = _derivative(code, parameter, score, Y[i])
            grad_norm = norms[i] * abs(D)
            D = D * min(1.0, target / grad_norm) if np.isfinite(grad_norm) else 0.0
            D *= inv_b
            d_sum += D
            coef[r] = D * scale[i]
        for c in range(n_params):
            G[c] = 0.0
        for r in range(m):
            i = rows[r]
            f = coef[r]
            for c in range(d):
                G[c] += f * X[i, c]
        if intercept != 0.0:
            G[d] = intercept * d_sum
        k = k0 + t
        for c in range(n_params):
            G[c] += noise[t, c]
            G[c] += lam * (W[c] - center[c]) + (alpha * W[c] if c < p else 0.0)
        eta = steps[k]
        norm_sq = 0.0
        for c in range(p):
            w[c] = (W[c] - center[c]) - eta * G[c]
            norm_sq += w[c] * w[c]
        norm = np.sqrt(norm_sq)
        factor = 1.0 if norm <= radius else radius / norm
        for c in range(p):
            W[c] = center[c] + (w[c] if factor == 1.0 else w[c] * factor)
        for c in range(p, n_params):
            W[c] = W[c] - eta * G[c]
        if use_total:
            for c in range(n_params):
                total[c] += weights[k] * W[c]
