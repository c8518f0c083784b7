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
def _pair_dots(typingctx, X, a, b, w):  # pragma: no cover
    """The dot products ``(x_a . w, x_b . w)`` of rows ``a`` and ``b`` of ``X`` with the
    first ``d`` entries of ``w``, in an order fixed here rather than by the compiler.

    Four lanes per row: lane ``k`` sums, in increasing ``j``, ``X[r, j] * w[j]`` over
    ``j = k mod 4``, ``j < d4 = d - d mod 4``; the last ``d - d4`` terms are added to lane
    0 in increasing ``j``; the result is ``(l0 + l1) + (l2 + l3)``. One multiply and one
    add per term (no fused multiply-add); a float32 ``X`` is widened first. These are the
    sums the kernels used to write as scalar loops, bit for bit (tested); numba kept them
    scalar, and the lanes written here as one 4-wide vector make the pass's products about
    15% faster (docs/scaling_out.md). Needs C-contiguous ``X`` and ``w`` (the kernels'
    callers guarantee it).
    """
    if not (isinstance(X, types.Array) and X.ndim == 2 and X.layout == "C"
            and isinstance(w, types.Array) and w.ndim == 1 and w.layout == "C"
            and w.dtype == types.float64 and X.dtype in (types.float64, types.float32)):
        return None
    signature = types.UniTuple(types.float64, 2)(X, a, b, w)

    def codegen(context, builder, sig, args):
        X_arr = context.make_array(sig.args[0])(context, builder, args[0])
        w_arr = context.make_array(sig.args[3])(context, builder, args[3])
        d = cgutils.unpack_tuple(builder, X_arr.shape, 2)[1]
        index = d.type
        rows = [builder.gep(X_arr.data, [builder.mul(context.cast(
            builder, args[k], sig.args[k], types.intp), d)]) for k in (1, 2)]
        double = ir.DoubleType()
        lanes = ir.VectorType(double, 4)
        element = context.get_data_type(sig.args[0].dtype)
        width = 8 if element == double else 4
        zero = ir.Constant(lanes, [0.0] * 4)
        stop = builder.sub(d, builder.and_(d, ir.Constant(index, 3)))  # d4
        i32 = ir.IntType(32)

        def widen(value, kind):
            return value if element == double else builder.fpext(value, kind)

        def loop(name, start, end, carried, body):
            """``for j in range(start, end)`` (step in ``body``): the carried values."""
            entry = builder.block
            block = builder.append_basic_block(name)
            after = builder.append_basic_block(name + ".done")
            builder.cbranch(builder.icmp_signed("<", start, end), block, after)
            builder.position_at_end(block)
            j = builder.phi(index)
            values = [builder.phi(v.type) for v in carried]
            step, updated = body(j, values)
            following = builder.add(j, ir.Constant(index, step))
            for phi, first, last in zip([j, *values], [start, *carried],
                                        [following, *updated], strict=True):
                phi.add_incoming(first, entry)
                phi.add_incoming(last, block)
            builder.cbranch(builder.icmp_signed("<", following, end), block, after)
            builder.position_at_end(after)
            finals = [builder.phi(v.type) for v in carried]  # phis first in their block
            for final, first, last in zip(finals, carried, updated, strict=True):
                final.add_incoming(first, entry)
                final.add_incoming(last, block)
            return finals

        def vector_terms(j, sums):
            w4 = builder.load(builder.bitcast(builder.gep(w_arr.data, [j]),
                                              lanes.as_pointer()), align=8)
            return 4, [builder.fadd(total, builder.fmul(widen(builder.load(
                builder.bitcast(builder.gep(row, [j]), ir.VectorType(element, 4)
                                .as_pointer()), align=width), lanes), w4))
                for total, row in zip(sums, rows, strict=True)]

        def tail_terms(j, sums):
            wj = builder.load(builder.gep(w_arr.data, [j]))
            return 1, [builder.fadd(total, builder.fmul(widen(builder.load(
                builder.gep(row, [j])), double), wj))
                for total, row in zip(sums, rows, strict=True)]

        sums = loop("lanes", ir.Constant(index, 0), stop, [zero, zero], vector_terms)
        parts = [[builder.extract_element(v, ir.Constant(i32, k)) for k in range(4)]
                 for v in sums]
        firsts = loop("tail", stop, d, [part[0] for part in parts], tail_terms)
        dots = [builder.fadd(builder.fadd(first, part[1]), builder.fadd(part[2], part[3]))
                for first, part in zip(firsts, parts, strict=True)]
        return context.make_tuple(builder, sig.return_type, dots)

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
            za, zb = _pair_dots(X, ra, rb, x)
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
