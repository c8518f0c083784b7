"""Exact steps of the constraint sets' geometries (used through :mod:`skdp.geometry`).

Two families, each exact (closed form, one sort, or a one-dimensional root):

* mirror steps ``argmin_{x in C} w(x) - <theta, x>`` for a mirror map ``w`` that is not
  the set's Euclidean one (the l1 ball with the p-norm map),
* gradient steps ``argmin_{y in C} (L/2) ||y - x||^2 + <g, y - x>`` in the norm of the
  set's geometry (l1 ball, simplex, l_p ball), used by accelerated mirror descent.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from scipy.optimize import brentq

from skdp.geometry._maps import PNormMirrorMap, _pnorm_grad, dual_exponent

if TYPE_CHECKING:
    from skdp.geometry import LpBall

__all__ = ["l1_ball_gradient_step", "simplex_gradient_step"]


def _l1_pnorm_step(theta: np.ndarray, mm: PNormMirrorMap, radius: float) -> np.ndarray:
    """``argmin_{||x||_1 <= R} w(x) - <theta, x>`` for the p-norm map ``w``.

    Derivation. KKT with a multiplier ``mu >= 0`` for ``||x||_1 <= R``:
    ``theta - mu s = nabla w(x)``, ``s`` in the subdifferential of ``||.||_1`` at ``x``.
    ``nabla w(x)_j`` has the sign of ``x_j`` and vanishes exactly where ``x_j = 0``, so
    ``x_j != 0`` forces ``s_j = sign(x_j) = sign(theta_j)`` and ``|theta_j| > mu``, with
    ``nabla w(x)_j = sign(theta_j)(|theta_j| - mu)``; ``x_j = 0`` needs ``|theta_j| <= mu``.
    Hence ``nabla w(x) = S_mu(theta)`` (soft-thresholding), i.e.
    ``x(mu) = nabla w^*(S_mu(theta))``. ``mu = 0`` if ``x(0)`` is feasible; otherwise the
    constraint is active and ``||x(mu)||_1 = (p-1) ||u||_q^(2-q) ||u||_(q-1)^(q-1)`` with
    ``u = S_mu(theta)`` is continuous and decreasing from ``||x(0)||_1 > R`` to 0 at
    ``mu = ||theta||_inf``: a one-dimensional root, found by Brent's method to machine
    precision (the iterate is finally rescaled onto the sphere, feasible by construction).
    """
    x = mm.grad_conjugate(theta)
    if float(np.sum(np.abs(x))) <= radius:
        return x
    a = np.abs(theta)
    sign = np.sign(theta)
    top = float(a.max())

    def excess(mu: float) -> float:
        u = sign * np.maximum(a - mu, 0.0)
        return float(np.sum(np.abs(mm.grad_conjugate(u)))) - radius

    mu = brentq(excess, 0.0, top, xtol=1e-15 * top, rtol=4 * np.finfo(float).eps, maxiter=300)
    x = mm.grad_conjugate(sign * np.maximum(a - mu, 0.0))
    total = float(np.sum(np.abs(x)))
    return x * (radius / total) if total > 0 else x


def l1_ball_gradient_step(x: np.ndarray, g: np.ndarray, smooth: float, radius: float
                          ) -> np.ndarray:
    """Exact ``argmin_{||y||_1 <= radius} (L/2) ||y - x||_1^2 + <g, y - x>``.

    Derivation. With ``d = y - x``, ``t = ||d||_1`` and multipliers ``lambda = L t`` (for
    the l1 length) and ``nu >= 0`` (for the ball), KKT separates per coordinate into a
    linear programme over unit "activities", each costing one unit of length:

    - *A_j* (``sign x_j = sign g_j``): move ``x_j`` towards 0; gain ``|g_j|``, frees one
      unit of norm; capacity ``|x_j|``; used iff ``|g_j| + nu > lambda``.
    - *C_j* (otherwise, ``x_j != 0``): move ``x_j`` towards 0 against the gradient; gain
      ``-|g_j|``, frees one unit of norm; capacity ``|x_j|``; used iff
      ``nu - |g_j| > lambda``.
    - *B* (any ``j`` with ``|g_j| = G = ||g||_inf``): move away from 0 along ``-g``; gain
      ``G``, uses one unit of norm; unlimited, so ``lambda + nu >= G``.

    If the unconstrained l1 step (``t = G / L`` along the largest ``|g_j|``, shrinking
    coordinates of the same sign first) is feasible, it is the answer (``nu = 0``).
    Otherwise the ball is tight, ``nu = G - lambda > 0`` and ``B`` is used at the margin:
    its length ``b`` balances the norm, ``b = S + (radius - ||x||_1)`` with ``S`` the
    length of the A/C moves, and ``t = S + b``, i.e. ``lambda / L = 2 S(lambda) + s_0``.
    Each coordinate enters ``S`` below its breakpoint ``(G + |g_j|) / 2`` (A) or
    ``(G - |g_j|) / 2`` (C), so ``S`` is a non-increasing step function and the root is
    found exactly after one sort (the breakpoint coordinate is moved partially).

    Parameters
    ----------
    x : ndarray
        Current point, ``||x||_1 <= radius`` (any shape; treated as a flat vector).
    g : ndarray
        Gradient (same shape).
    smooth : float
        ``L > 0``.
    radius : float

    Returns
    -------
    ndarray of the shape of ``x``
    """
    shape = x.shape
    x, g = np.ravel(np.asarray(x, dtype=float)), np.ravel(np.asarray(g, dtype=float))
    a = np.abs(g)
    G = float(a.max(initial=0.0))
    if G == 0.0:
        return x.reshape(shape).copy()
    slack = max(radius - float(np.abs(x).sum()), 0.0)
    top = int(np.argmax(a))
    same = (x != 0) & (np.sign(x) == np.sign(g))
    # nu = 0: the unconstrained step, shrinking same-sign top coordinates first.
    t_free = G / smooth
    is_top_a = same & (a == G)
    top_mass = float(np.abs(x[is_top_a]).sum())
    d = np.zeros_like(x)
    if t_free - 2.0 * min(top_mass, t_free) <= slack:
        shrink = min(top_mass, t_free)
        idx = np.flatnonzero(is_top_a)
        mags = np.abs(x[idx])
        cum = np.cumsum(mags)
        used = np.clip(shrink - (cum - mags), 0.0, mags)  # fill in order
        d[idx] = -np.sign(x[idx]) * used
        rest = t_free - shrink
        if rest > 0:
            j = int(idx[-1]) if idx.size else top
            d[j] -= np.sign(g[j]) * rest
        y = x + d
    else:
        # nu > 0: solve lambda / L = 2 S(lambda) + slack, lambda in [0, G).
        nz = np.flatnonzero(x != 0)
        brk = np.where(same[nz], 0.5 * (G + a[nz]), 0.5 * (G - a[nz]))
        order = np.argsort(-brk, kind="stable")
        nz, brk = nz[order], brk[order]
        w = np.abs(x[nz])
        cum = np.concatenate([[0.0], np.cumsum(w)])  # W_0 .. W_M
        upper = np.concatenate([[G], brk])  # beta_0 = G, beta_1.. beta_M
        lower = np.concatenate([brk, [0.0]])  # beta_1 .. beta_M, beta_{M+1} = 0
        cand = smooth * (2.0 * cum + slack)
        k = int(np.flatnonzero(cand >= lower)[0])
        if cand[k] <= upper[k]:
            lam, full, part = float(cand[k]), k, 0.0
        else:  # the root sits on breakpoint k: coordinate k moves partially
            lam = float(upper[k])
            full = k - 1
            part = min(max(0.5 * (lam / smooth - slack) - cum[k - 1], 0.0), w[k - 1])
        moved = nz[:full]
        d[moved] = -x[moved]
        if part > 0:
            j = nz[full]
            d[j] = -np.sign(x[j]) * part
        s_len = float(cum[full] + part)
        b = lam / smooth - s_len  # the B length: t - S
        d[top] -= np.sign(g[top]) * max(b, 0.0)
        y = x + d
    norm = float(np.abs(y).sum())
    if norm > radius:  # rounding only
        y *= radius / norm
    return y.reshape(shape)


def simplex_gradient_step(x: np.ndarray, g: np.ndarray, smooth: float) -> np.ndarray:
    """Exact ``argmin_{y in simplex} (L/2) ||y - x||_1^2 + <g, y - x>``.

    On the simplex ``sum_j d_j = 0``: moving mass ``m`` costs l1 length ``2 m``, and is best
    moved into one coordinate ``j0`` of smallest gradient, taken from the coordinates of
    largest gradient first (gain ``g_i - g_min`` per unit). Minimising
    ``2 L m^2 - gain(m)`` (``gain`` concave, piecewise linear) gives ``4 L m = g_src(m) -
    g_min`` with ``g_src(m)`` the gradient of the coordinate drained at ``m``: a threshold
    ``theta = g_min + 4 L m`` such that every coordinate with ``g_i > theta`` is emptied
    (the one at ``theta`` partially), found exactly after one sort.
    """
    shape = x.shape
    x, g = np.ravel(np.asarray(x, dtype=float)), np.ravel(np.asarray(g, dtype=float))
    j0 = int(np.argmin(g))
    gmin = float(g[j0])
    src = np.flatnonzero((x > 0) & (g > gmin))
    src = src[src != j0]
    y = x.copy()
    if src.size == 0:
        return y.reshape(shape)
    order = np.argsort(-g[src], kind="stable")
    src = src[order]
    gs, w = g[src], x[src]
    cum = np.concatenate([[0.0], np.cumsum(w)])
    upper = np.concatenate([[math.inf], gs])
    lower = np.concatenate([gs, [gmin]])
    cand = gmin + 4.0 * smooth * cum
    k = int(np.flatnonzero(cand >= lower)[0])
    if cand[k] <= upper[k]:
        full, part = k, 0.0
    else:
        full = k - 1
        theta = float(upper[k])
        part = min(max((theta - gmin) / (4.0 * smooth) - cum[k - 1], 0.0), w[k - 1])
    y[src[:full]] = 0.0
    if part > 0:
        y[src[full]] -= part
    y[j0] += float(cum[full] + part)
    return y.reshape(shape)


def _dual_grad(g: np.ndarray, q: float) -> np.ndarray:
    """``nabla (||g||_q^2 / 2)``: the unconstrained l_p gradient direction (``1/p+1/q=1``)."""
    return _pnorm_grad(g, q, 1.0)


def _lp_gradient_step(x: np.ndarray, g: np.ndarray, smooth: float, ball: LpBall,
                       v: np.ndarray) -> np.ndarray:
    """The l_p gradient step: exact when the unconstrained step is feasible.

    Unconstrained, ``argmin (L/2) ||d||_p^2 + <g, d>`` is ``d = -nabla(||.||_q^2/2)(g) /
    L``. When it leaves the ball there is no closed form; the step returns the candidate
    of smallest model value ``(L/2) ||y - x||_p^2 + <g, y - x>`` among the radial rescaling
    and the Euclidean projection of the unconstrained step and the coupling point ``v =
    r z_{k+1} + (1 - r) y_k``. The convergence proof (supplement, (52)-(56)) only uses that
    the model value at ``y_{k+1}`` is at most the one at ``v``, which this guarantees.
    """
    q = dual_exponent(ball.p)
    y_free = x - _dual_grad(g, q) / smooth
    norm = ball.norm(y_free)
    if norm <= ball.radius:
        return y_free
    cands = [y_free * (ball.radius / norm), ball.project(y_free), v]

    def model(y: np.ndarray) -> float:
        return 0.5 * smooth * ball.norm(y - x) ** 2 + float(np.sum(g * (y - x)))

    return min(cands, key=model)
