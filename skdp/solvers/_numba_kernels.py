"""The numba kernels of :mod:`skdp.solvers._compiled` (imported only when one runs).

Each is the scalar-loop form of a numpy loop of a solver, compiled; the primitives they
call are the plain-Python scalar forms kept next to their numpy versions
(:func:`skdp.losses.scalar_derivative`, :func:`skdp.geometry._lp.lp_dual_step_vector`).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

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


@intrinsic
def _pair_lanes(typingctx, X, a, b, w, stop):  # pragma: no cover
    """The four lanes of the dot products of rows ``a`` and ``b`` of ``X`` with ``w``.

    Returns ``(a0, a1, a2, a3, b0, b1, b2, b3)``, lane ``k`` of row ``r`` being the sum,
    in increasing ``j``, of ``X[r, j] * w[j]`` over ``j = k mod 4``, ``j < stop`` (a
    multiple of 4; a float32 ``X`` is widened first). These are the four interleaved
    partial sums the kernels used to write as scalar loops, with the same roundings (one
    multiply and one add per term, no fused multiply-add), so the results are bit for bit
    the same; the compiler kept them scalar, and the four lanes written here as one
    4-wide vector make the pass's products about 15% faster (docs/scaling_out.md).
    Needs C-contiguous ``X`` and ``w`` (the kernels' callers guarantee it).
    """
    if not (isinstance(X, types.Array) and X.ndim == 2 and X.layout == "C"
            and isinstance(w, types.Array) and w.ndim == 1 and w.layout == "C"
            and w.dtype == types.float64 and X.dtype in (types.float64, types.float32)):
        return None
    signature = types.UniTuple(types.float64, 8)(X, a, b, w, types.intp)

    def codegen(context, builder, sig, args):
        X_arr = context.make_array(sig.args[0])(context, builder, args[0])
        w_arr = context.make_array(sig.args[3])(context, builder, args[3])
        row_a, row_b, stop = args[1], args[2], args[4]
        d = cgutils.unpack_tuple(builder, X_arr.shape, 2)[1]
        index = stop.type
        row_a = builder.gep(X_arr.data, [builder.mul(context.cast(
            builder, row_a, sig.args[1], types.intp), d)])
        row_b = builder.gep(X_arr.data, [builder.mul(context.cast(
            builder, row_b, sig.args[2], types.intp), d)])
        double = ir.DoubleType()
        lanes = ir.VectorType(double, 4)
        element = context.get_data_type(sig.args[0].dtype)
        width = 8 if element == double else 4
        zero = ir.Constant(lanes, [0.0] * 4)
        entry = builder.block
        loop = builder.append_basic_block("lanes.loop")
        done = builder.append_basic_block("lanes.done")
        builder.cbranch(builder.icmp_signed(">", stop, ir.Constant(index, 0)), loop, done)

        builder.position_at_end(loop)
        j = builder.phi(index)
        sum_a = builder.phi(lanes)
        sum_b = builder.phi(lanes)

        def load4(base, kind, align):
            return builder.load(builder.bitcast(builder.gep(base, [j]),
                                                ir.VectorType(kind, 4).as_pointer()),
                                align=align)

        def row(base):
            x = load4(base, element, width)
            return x if element == double else builder.fpext(x, lanes)

        w4 = load4(w_arr.data, double, 8)
        next_a = builder.fadd(sum_a, builder.fmul(row(row_a), w4))
        next_b = builder.fadd(sum_b, builder.fmul(row(row_b), w4))
        next_j = builder.add(j, ir.Constant(index, 4))
        for phi, start, value in ((j, ir.Constant(index, 0), next_j), (sum_a, zero, next_a),
                                  (sum_b, zero, next_b)):
            phi.add_incoming(start, entry)
            phi.add_incoming(value, loop)
        builder.cbranch(builder.icmp_signed("<", next_j, stop), loop, done)

        builder.position_at_end(done)
        finals = [builder.phi(lanes) for _ in range(2)]  # phis first in their block
        for final, result in zip(finals, (next_a, next_b), strict=True):
            final.add_incoming(zero, entry)
            final.add_incoming(result, loop)
        values = [builder.extract_element(final, ir.Constant(ir.IntType(32), k))
                  for final in finals for k in range(4)]
        return context.make_tuple(builder, sig.return_type, values)

    return signature, codegen


@intrinsic
def _prefetch_row(typingctx, X, r):  # pragma: no cover
    """Ask the CPU to start loading row ``r`` of ``X`` (each of its cache lines) into
    its caches (``llvm.prefetch``, a hint: no effect on any result). The SVRG steps read
    rows at random places; issued some rows ahead, the loads overlap the work on the
    current rows instead of each row waiting for memory in turn."""
    if not (isinstance(X, types.Array) and X.ndim == 2 and X.layout == "C"):
        return None
    signature = types.void(X, types.intp)

    def codegen(context, builder, sig, args):
        X_arr = context.make_array(sig.args[0])(context, builder, args[0])
        d = cgutils.unpack_tuple(builder, X_arr.shape, 2)[1]
        index = d.type
        row = builder.gep(X_arr.data, [builder.mul(args[1], d)])
        byte = ir.IntType(8).as_pointer()
        start = builder.ptrtoint(row, index)
        itemsize = context.get_abi_sizeof(context.get_data_type(sig.args[0].dtype))
        end = builder.add(start, builder.mul(d, ir.Constant(index, itemsize)))
        i32 = ir.IntType(32)
        prefetch = builder.module.declare_intrinsic(
            "llvm.prefetch", [byte], ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32]))
        last = builder.sub(end, ir.Constant(index, 1))  # the row's last byte
        entry = builder.block
        loop = builder.append_basic_block("prefetch.loop")
        done = builder.append_basic_block("prefetch.done")
        builder.cbranch(builder.icmp_unsigned("<", start, end), loop, done)
        builder.position_at_end(loop)
        address = builder.phi(index)
        # read access, keep in all cache levels, data cache
        builder.call(prefetch, [builder.inttoptr(address, byte), ir.Constant(i32, 0),
                                ir.Constant(i32, 3), ir.Constant(i32, 1)])
        following = builder.add(address, ir.Constant(index, 64))
        address.add_incoming(start, entry)
        address.add_incoming(following, loop)
        # one address per 64-byte line from the row's start, and its last byte
        builder.cbranch(builder.icmp_unsigned("<", following, end), loop, done)
        builder.position_at_end(done)
        with builder.if_then(builder.icmp_unsigned("<", start, end)):
            builder.call(prefetch, [builder.inttoptr(last, byte), ir.Constant(i32, 0),
                                    ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return signature, codegen


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
    dot products (four interleaved partial sums each, :func:`_pair_lanes`, in an order
    fixed here rather than by the compiler), derivatives and update of ``G`` overlap; an
    odd last row is paired with itself at weight 0. Equal to the numpy pass to rounding
    (the order of the sums differs).
    """
    n, d = X.shape
    for j in range(G.shape[0]):
        G[j] = 0.0
    shift = intercept * w[d] if intercept != 0.0 else 0.0
    scaled = scale.shape[0] > 0
    d4 = d - d % 4
    total = 0.0
    for a in range(0, n, 2):
        b = min(a + 1, n - 1)
        a0, a1, a2, a3, b0, b1, b2, b3 = _pair_lanes(X, a, b, w, d4)
        for j in range(d4, d):
            a0 += X[a, j] * w[j]
            b0 += X[b, j] * w[j]
        za = (a0 + a1) + (a2 + a3)
        zb = (b0 + b1) + (b2 + b3)
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


@numba.njit(cache=True, nogil=True)
def svrg_steps(X, scale, norms, intercept, code, parameter, rows, labels, snapshot,
               offsets, x, total, factor, shrink, n_penalized, clip_target, skip_clip,
               correction_target, skip_correction, ahead):  # pragma: no cover
    """``rows.shape[0]`` unconstrained DP-SVRG inner steps for one output, in place.

    Step ``t`` on batch ``B = rows[t]`` (labels ``labels[t]``, snapshot derivatives
    ``snapshot[t]``): for each record, the derivative at ``x`` clipped as the full pass
    clips it (``clip_target``, unless ``skip_clip``), minus its snapshot derivative,
    clipped again (``correction_target``, unless ``skip_correction``; a non-finite one
    dropped), times the augmented row, summed; times ``factor``; then ``x -= (that +
    offsets[t])`` (``offsets``: the step's data-free part, ``eta (v~ + noise)``), the
    first ``n_penalized`` coordinates shrunk by ``shrink`` (the ridge's prox), and ``x``
    added to ``total``. Rows go in pairs as in :func:`clipped_gradient_pass`; the rows
    ``ahead`` records later in the block are prefetched (:func:`_prefetch_row`). Equal to
    the numpy steps to rounding (the order of the sums differs).
    """
    count, b = rows.shape
    d = X.shape[1]
    n_params = x.shape[0]
    scaled = scale.shape[0] > 0
    d4 = d - d % 4
    v = np.empty(n_params)
    flat = rows.ravel()
    m = flat.shape[0]
    for k in range(min(ahead, m)):
        _prefetch_row(X, flat[k])
    for t in range(count):
        for c in range(n_params):
            v[c] = 0.0
        shift = intercept * x[d] if intercept != 0.0 else 0.0
        sum_diff = 0.0
        for k in range(0, b, 2):
            k2 = min(k + 1, b - 1)
            following = t * b + k + ahead
            if following + 1 < m:
                _prefetch_row(X, flat[following])
                _prefetch_row(X, flat[following + 1])
            elif following < m:
                _prefetch_row(X, flat[following])
            ra = rows[t, k]
            rb = rows[t, k2]
            # The pair's scores as in clipped_gradient_pass, written out: the same lines
            # as a shared helper (numba-inlined or not) made the full pass 16-30% slower.
            a0, a1, a2, a3, b0, b1, b2, b3 = _pair_lanes(X, ra, rb, x, d4)
            for j in range(d4, d):
                a0 += X[ra, j] * x[j]
                b0 += X[rb, j] * x[j]
            za = (a0 + a1) + (a2 + a3)
            zb = (b0 + b1) + (b2 + b3)
            if scaled:
                za *= scale[ra]
                zb *= scale[rb]
            ca = _clipped(_derivative(code, parameter, za + shift, labels[t, k]), norms[ra],
                          clip_target, skip_clip)
            cb = _clipped(_derivative(code, parameter, zb + shift, labels[t, k2]),
                          norms[rb], clip_target, skip_clip)
            da = _clipped(ca - snapshot[t, k], norms[ra], correction_target, skip_correction)
            db = _clipped(cb - snapshot[t, k2], norms[rb], correction_target,
                          skip_correction)
            if k2 == k:
                db = 0.0
            sum_diff += da + db
            fa = da * scale[ra] if scaled else da
            fb = db * scale[rb] if scaled else db
            for j in range(d):
                v[j] += fa * X[ra, j] + fb * X[rb, j]
        for j in range(d):
            v[j] *= factor
        if intercept != 0.0:
            v[d] = sum_diff * (intercept * factor)
        for c in range(n_params):
            value = x[c] - (v[c] + offsets[t, c])
            if c < n_penalized:
                value *= shrink
            x[c] = value
            total[c] += value
