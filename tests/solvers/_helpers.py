"""Plain-numpy pieces shared by the solvers' reference implementations: a noise source
that records its draws, the clipped logistic gradient of one example, and the l1-ball
mirror step of the p-norm mirror map written out by bisection."""

from __future__ import annotations

import inspect
from typing import Any, NamedTuple

import numpy as np

from skdp.privacy.noise import NoiseSource


class Draw(NamedTuple):
    """One recorded draw: the ``NoiseSource`` method, its arguments by name, the value."""

    kind: str
    args: dict[str, Any]
    value: Any


def recording_source(*kinds: str) -> type[NoiseSource]:
    """A ``NoiseSource`` subclass that records every draw of the single-draw methods
    ``kinds``, in order, as :class:`Draw` entries in ``draws``.

    Only those methods are overridden: a batched draw calls an overridden single-draw
    method once per draw (``NoiseSource._overrides``), so the record sees every draw,
    while the draws not recorded keep the library's own path."""

    def recorder(kind):
        draw = getattr(NoiseSource, kind)
        signature = inspect.signature(draw)

        def method(self, *args, **kwargs):
            value = draw(self, *args, **kwargs)
            bound = signature.bind(self, *args, **kwargs).arguments
            bound.pop("self")
            self.draws.append(Draw(kind, bound, np.copy(value)))
            return value

        method.__name__ = method.__qualname__ = kind
        return method

    def __init__(self, rng):
        NoiseSource.__init__(self, rng)
        self.draws = []

    name = "Recording" + "".join(k.title().replace("_", "") for k in kinds) + "Source"
    return type(name, (NoiseSource,), {"__init__": __init__,
                                       **{kind: recorder(kind) for kind in kinds}})


def clipped_logistic_gradient(w, x, y, clip):
    """The logistic loss gradient of one example ``(x, y)``, ``y`` in {-1, 1}, at ``w``,
    clipped to l2 norm ``clip``."""
    g = -y * x / (1.0 + np.exp(y * float(x @ w)))
    norm = np.linalg.norm(g)
    return g if norm <= clip else g * (clip / norm)


def grad_w(y, p):
    """grad of ``w(y) = ||y||_p^2 / (2 (p - 1))``, written out."""
    nrm = np.sum(np.abs(y) ** p) ** (1 / p)
    if nrm == 0:
        return np.zeros_like(y)
    return nrm ** (2 - p) * np.sign(y) * np.abs(y) ** (p - 1) / (p - 1)


def grad_w_conj(t, p):
    """grad of the convex conjugate of ``w``: the inverse of :func:`grad_w`."""
    q = p / (p - 1)
    nrm = np.sum(np.abs(t) ** q) ** (1 / q)
    if nrm == 0:
        return np.zeros_like(t)
    return (p - 1) * nrm ** (2 - q) * np.sign(t) * np.abs(t) ** (q - 1)


def ref_l1_mirror_step(x, g, eta, p, radius):
    """``argmin_{||u||_1 <= radius} D_w(u, x) + eta <g, u>``: bisection on the
    soft-threshold level (independent of the library's brentq)."""
    theta = grad_w(x, p) - eta * g
    y = grad_w_conj(theta, p)
    if np.abs(y).sum() <= radius:
        return y
    lo, hi = 0.0, np.abs(theta).max()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        u = np.sign(theta) * np.maximum(np.abs(theta) - mid, 0)
        if np.abs(grad_w_conj(u, p)).sum() > radius:
            lo = mid
        else:
            hi = mid
    u = np.sign(theta) * np.maximum(np.abs(theta) - 0.5 * (lo + hi), 0)
    y = grad_w_conj(u, p)
    return y * radius / np.abs(y).sum()
