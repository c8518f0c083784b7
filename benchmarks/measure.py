"""Measurement helpers shared by the runner and the floors part: the objective and its
certified optimum, paired timings against scikit-learn, peak memory, fresh interpreters.
Reads skdp's public API only."""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

from benchmarks.config import Scenario
from skdp.exceptions import IncompatibleSolverError  # noqa: F401 (used by floors)
from skdp.geometry import L1Ball, L2Ball
from skdp.losses import LogisticLoss, SquaredLoss
from skdp.solvers import SOLVERS  # noqa: F401 (used by floors)

ROOT = Path(__file__).resolve().parent


# Objective and certified optimum -------------------------------------------------------

def _loss(name: str):
    return LogisticLoss() if name == "logistic" else SquaredLoss(label_bound=np.inf)


def _labels(sc: Scenario, y: np.ndarray) -> np.ndarray:
    """Labels as the loss reads them: {-1, +1} for the logistic loss."""
    return (2.0 * y - 1.0 if sc.loss == "logistic" else y)[:, None]


class Objective:
    """``F(w, b) = mean_i loss(x_i.w + b, y_i) + alpha/2 (||w||^2 + (b / b_scale)^2)``;
    ``b_scale = inf`` leaves the intercept free (``b`` is fixed at 0 without intercept)."""

    def __init__(self, sc: Scenario, X, y, fit_intercept: bool, b_scale: float = np.inf):
        self.X, self.Y, self.loss = X, _labels(sc, y), _loss(sc.loss)
        self.alpha, self.intercept, self.b_scale = sc.alpha, fit_intercept, b_scale

    def __call__(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Value and gradient at ``theta = (w, b)``."""
        w, b = theta[:-1], theta[-1] if self.intercept else 0.0
        value, D = self.loss.value_and_derivative(np.asarray(self.X @ w)[:, None] + b, self.Y)
        n, pen = len(D), self.alpha / self.b_scale**2
        grad = np.append(np.asarray(self.X.T @ D[:, 0]) / n + self.alpha * w,
                         D.mean() + pen * b if self.intercept else 0.0)
        return (float(value.mean() + 0.5 * self.alpha * (w @ w) + 0.5 * pen * b * b),
                grad)

    def value(self, coef, intercept) -> float:
        return self(np.append(np.ravel(coef), np.ravel(intercept)[:1] if self.intercept
                              else 0.0))[0]


def _ball(kind: str, radius: float):
    """skdp's constraint of a scenario option (``None`` unconstrained)."""
    return {"l1": L1Ball, "l2": L2Ball}[kind](radius) if kind in ("l1", "l2") else None


def inside(theta: np.ndarray, kind: str, radius: float) -> bool:
    """Whether the coefficients of ``theta = (w, b)`` lie in the option's ball."""
    ball = _ball(kind, radius)
    return ball is None or ball.norm(theta[:-1]) <= radius


class Optimum(NamedTuple):
    value: float  # F*
    certificate: float  # gradient norm (unconstrained) or Frank-Wolfe gap (cut ball)
    theta: np.ndarray  # (w, b)
    cut: bool  # whether the ball cuts the unconstrained optimum


def certified_optimum(f: Objective, kind: str = "none", radius: float = np.inf) -> Optimum:
    """The optimum of ``f`` over the option's ball: L-BFGS to gradient norm 1e-10 (certificate: the
    gradient norm); over a ball that cuts the unconstrained optimum, FISTA with adaptive
    restart from its projection (certificate: the Frank-Wolfe gap, an upper bound on
    ``F(w) - F*``; the run stops below 1e-9 or after 5000 iterations)."""
    d = f.X.shape[1] + 1
    ball = _ball(kind, radius)
    theta = np.zeros(d)
    for maxiter in (50, 20_000):  # a short run first: enough to see a cut ball
        res = minimize(f, theta, jac=True, method="L-BFGS-B",
                       options=dict(maxiter=maxiter, maxcor=10, gtol=1e-11, ftol=1e-300))
        theta = res.x
        if not f.intercept:
            theta[-1] = 0.0
        if not inside(theta, kind, radius) or np.linalg.norm(res.jac) < 1e-10:
            break
    if inside(theta, kind, radius):
        return Optimum(float(res.fun), float(np.linalg.norm(res.jac)), theta, False)
    # Smoothness: largest eigenvalue of [X 1]^T [X 1] / n (power iteration) x curvature.
    v = np.ones(d) / np.sqrt(d)
    for _ in range(50):
        u = f.X @ v[:-1] + v[-1] * f.intercept
        v = np.append(f.X.T @ u, u.sum() * f.intercept) / len(u)
        lip = np.linalg.norm(v)
        v /= lip
    step = 1.0 / (lip * (0.25 if f.loss.name == "logistic" else 1.0) + f.alpha)

    def proj(t: np.ndarray) -> np.ndarray:
        return np.append(ball.project(t[:-1]), t[-1] if f.intercept else 0.0)

    def gap_at(x: np.ndarray) -> tuple[float, float]:
        # Frank-Wolfe gap <g, x - lmo(g)> (the free intercept's |g_b|): >= F(x) - F*.
        value, g = f(x)
        return value, float(g[:-1] @ (x[:-1] - ball.lmo(g[:-1])) + abs(g[-1]))

    x = z = proj(theta)
    momentum = 0
    for k in range(5000):
        g = f(z)[1]
        x_new = proj(z - step * g)
        # Restart the momentum when it points uphill (O'Donoghue & Candes 2015).
        momentum = 0 if (z - x_new) @ (x_new - x) > 0 else momentum + 1
        z, x = x_new + momentum / (momentum + 3) * (x_new - x), x_new
        if k % 25 == 0 and gap_at(x)[1] < 1e-9:
            break
    value, gap = gap_at(x)
    return Optimum(float(value), gap, x, True)


# Measurements --------------------------------------------------------------------------

def input_bytes(X) -> int:
    """Size of the training matrix as given (CSR: data + indices + indptr)."""
    if sp.issparse(X):
        return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return X.nbytes


def timed_fit(make, X, y, repeats: int, statistic=np.median) -> tuple[object, float]:
    """The fitted estimator and the median (or ``statistic``) time of up to ``repeats``
    fits (one more fit only while the fits so far took under a second in all)."""
    times = []
    while len(times) < repeats and sum(times) < 1.0:
        est = make()
        start = time.perf_counter()
        est.fit(X, y)
        times.append(time.perf_counter() - start)
    return est, float(statistic(times))


def paired_fit(make, make_sklearn, X, y, repeats: int, first: int = 0
               ) -> tuple[object, float, float]:
    """The fitted estimator, the median fit time and the median ratio of ``repeats`` pairs
    (the estimator's fit and a scikit-learn fit on the same data, in alternating order;
    with ``first=0`` the first fit is the estimator's, so an incompatible option fails
    before any other; a caller that pairs one fit at a time alternates ``first``)."""

    def timed(fit) -> float:
        gc.collect()  # neither fit pays for the other's garbage
        start = time.perf_counter()
        fit(X, y)
        return time.perf_counter() - start

    times, ratios = [], []
    for k in range(repeats):
        est = make()
        if (k + first) % 2 == 0:
            times.append(timed(est.fit))
            reference = timed(make_sklearn().fit)
        else:
            reference = timed(make_sklearn().fit)
            times.append(timed(est.fit))
        ratios.append(times[-1] / reference)
    return est, float(np.median(times)), float(np.median(ratios))


@contextlib.contextmanager
def busy_processes(count: int):
    """``count`` processes spinning on the CPU while the block runs (a loaded machine:
    other jobs competing for every core), killed on exit."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(count)]
    try:
        time.sleep(0.2)  # let them start spinning
        yield
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait()


def peak_memory(make, X, y) -> int:
    """Peak bytes allocated during one fit beyond those held before it (tracemalloc)."""
    est = make()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        est.fit(X, y)
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _options(sc: Scenario, caps) -> list[tuple[str, dict]]:
    """The scenario's constraint options the declaration accepts, in order."""
    out = []
    for kind, params in sc.constraints:
        if kind not in caps.constraints or (kind == "none" and caps.bounded_constraint):
            continue
        # A constrained intercept is refused unless there is none.
        extra = {"fit_intercept": False} if caps.intercept == "constrained" else {}
        out.append((kind, {**sc.params, **params, **extra}))
    return out


def _metric(est, X, y) -> float:
    """Test accuracy (classifiers) or R^2 (regressors): ``est.score``."""
    return float(est.score(X, y))


def run_fresh(code: str, *args: str) -> subprocess.CompletedProcess:
    """``python -c code *args`` in a fresh interpreter with one BLAS thread."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "PYTHONPATH": str(ROOT.parent)}
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, env=env, cwd=ROOT.parent)


