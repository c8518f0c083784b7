"""The numba kernels of :mod:`skdp.solvers._compiled` (imported only when one runs).

Each is the scalar-loop form of a numpy loop of a solver, compiled; the primitives they
call are the plain-Python scalar forms kept next to their numpy versions
(:func:`skdp.losses.scalar_derivative`, :func:`skdp.geometry._lp.lp_dual_step_vector`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from skdp.geometry._lp import lp_dual_step_vector
from skdp.losses import scalar_derivative

#: sha256 of the sources of the two helpers compiled into the kernels. numba's on-disk cache
#: is keyed by THIS file only, so a change to a helper must change this file: a test
#: recomputes the hash and fails until it is updated here (which invalidates the cache).
HELPERS_SHA256 = "f6ac7e7dd7f6e68f4f48cf78552907611d9570f463d2a9bdbd96bfe478952fa9"

_derivative = numba.njit(cache=True, nogil=True, inline="always")(scalar_derivative)
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


@numba.njit(cache=True, nogil=True, inline="always")
def _pair_dots(X, a, b, w):  # pragma: no cover
    """The dot products ``(x_a . w, x_b . w)`` of rows ``a`` and ``b`` of ``X`` with the
    first ``d`` entries of ``w``, summed in an order written here rather than left to the
    compiler.

    Four lanes per row: lane ``k`` sums, in increasing ``j``, ``X[r, j] * w[j]`` over
    ``j = k mod 4``, ``j < d4 = d - d mod 4``; the last ``d - d4`` terms are added to lane
    0 in increasing ``j``; the result is ``(l0 + l1) + (l2 + l3)``. One multiply and one
    add per term (no fused multiply-add, no reassociation); a float32 ``X`` is widened
    first. The lanes are independent, so the compiler may run them as one 4-wide vector
    without changing a bit (tested against the scalar sums).
    """
    d = X.shape[1]
    d4 = d - d % 4
    a0 = a1 = a2 = a3 = 0.0
    b0 = b1 = b2 = b3 = 0.0
    for j in range(0, d4, 4):
        w0, w1, w2, w3 = w[j], w[j + 1], w[j + 2], w[j + 3]
        a0 += float(X[a, j]) * w0
        a1 += float(X[a, j + 1]) * w1
        a2 += float(X[a, j + 2]) * w2
        a3 += float(X[a, j + 3]) * w3
        b0 += float(X[b, j]) * w0
        b1 += float(X[b, j + 1]) * w1
        b2 += float(X[b, j + 2]) * w2
        b3 += float(X[b, j + 3]) * w3
    for j in range(d4, d):
        a0 += float(X[a, j]) * w[j]
        b0 += float(X[b, j]) * w[j]
    return (a0 + a1) + (a2 + a3), (b0 + b1) + (b2 + b3)


@numba.njit(cache=True, nogil=True, inline="always")
def _clipped(di, norm, target, skip):  # pragma: no cover
    """A derivative clipped as :func:`skdp.losses.clip_coefficients` clips it (``skip``:
    public facts prove the clip cannot bind); a non-finite one is dropped."""
    gradient_norm = norm * abs(di)
    if not math.isfinite(gradient_norm):
        return 0.0  # an overflowing record is dropped, never passed on
    if not skip and not gradient_norm <= target:  # as the numpy path for a NaN target
        return di * (target / gradient_norm)
    return di


@numba.njit(cache=True, nogil=True)
def clipped_gradient_pass(X, scale, Y, norms, w, intercept, code, parameter, target, skip,
                          coefficients, store, G):  # pragma: no cover
    """One full pass of :meth:`skdp.solvers.Problem.clipped_gradient` for one output.

    For each row ``i`` of ``X`` (float64 or float32, C order; its products in float64):
    the score ``z_i = scale_i (x_i . w[:d]) + c w[d]`` (``scale`` empty: all 1; ``c =
    intercept``, no ``w[d]`` when 0), the derivative ``phi'(z_i, y_i)``, clipped as
    :func:`skdp.losses.clip_coefficients` clips it (``norms_i |phi'_i|`` above ``target``
    is scaled down to it, unless ``skip``: public facts prove it cannot be; a non-finite
    one is dropped in both cases), stored in ``coefficients`` when ``store``, and added
    to ``G = sum_i x'_i phi'_i`` (``G[d] = c sum_i phi'_i``).

    Each row is read from memory once. Rows go in pairs ``a = i``, ``b = i + 1`` whose
    dot products (four interleaved partial sums each, :func:`_pair_dots`, in an order
    fixed here rather than by the compiler), derivatives and update of ``G`` overlap; an
    odd last row is paired with itself at weight 0. Equal to the numpy pass to rounding
    (the order of the sums differs).
    """
    n, d = X.shape
    for j in range(G.shape[0]):
        G[j] = 0.0
    shift = intercept * w[d] if intercept != 0.0 else 0.0
    scaled = scale.shape[0] > 0
    total = 0.0
    for a in range(0, n, 2):
        b = min(a + 1, n - 1)
        za, zb = _pair_dots(X, a, b, w)
        if scaled:
            za *= scale[a]
            zb *= scale[b]
        da = _clipped(_derivative(code, parameter, za + shift, Y[a]), norms[a], target, skip)
        db = _clipped(_derivative(code, parameter, zb + shift, Y[b]), norms[b], target, skip)
        if b == a:
            db = 0.0
        if store:
            coefficients[b] = db
            coefficients[a] = da  # after b: an odd last row (b == a) keeps its own
        total += da + db
        fa = da * scale[a] if scaled else da
        fb = db * scale[b] if scaled else db
        for j in range(d):
            G[j] += fa * X[a, j] + fb * X[b, j]
    if intercept != 0.0:
        G[d] = intercept * total
