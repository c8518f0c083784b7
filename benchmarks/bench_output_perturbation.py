"""Benchmark: skdp's output perturbation against a pure-DP peer and scikit-learn.

Issue 3's benchmark. ``solver="output_perturbation"`` (black-box output perturbation,
Lowy & Razaviyayn) head to head with objective perturbation as implemented by IBM's
diffprivlib (the pure-DP peer, ``peer_objective_perturbation.py``) and with non-private
scikit-learn, on bundled real data (breast cancer, digits 0-4 vs 5-9, diabetes for
regression) and on the Covertype-shaped data of ``datasets.py``:

* L2-regularised logistic regression, ``epsilon in {0.1, 0.2, 0.5, 1, 2, 5}``,
  ``delta in {0, 1e-5}``, 10 seeds: excess empirical risk ``F(w) - F*`` (skdp's
  objective, intercept penalised), the trivial private output ``w = 0``, test accuracy,
  fit time against scikit-learn's ``LogisticRegression`` (and a sweep over ``alpha``);
* ridge regression (``DPLinearRegression``) against scikit-learn's ``Ridge`` and
  diffprivlib's functional mechanism, on diabetes;
* linear SVMs (``DPLinearSVC``, hinge and smoothed hinge) against ``LinearSVC``;
* adversarial training: robust accuracy / privacy / runtime trade-off.

Run from the repository root::

    python benchmarks/bench_output_perturbation.py            # full run (~4-6 min, 2 cores)
    python benchmarks/bench_output_perturbation.py --quick    # smoke test (< 1 min)

Results: ``benchmarks/results/output_perturbation{,_quick}.{json,md,png}`` and
``output_perturbation{,_quick}_robust.png``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy
import sklearn
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits
from sklearn.linear_model import LinearRegression as OLS
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import train_test_split
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_info, threadpool_limits

import skdp
from skdp._demo import public_preprocess
from skdp.exceptions import PrivacyLeakWarning
from skdp.solvers import ObjectivePerturbation, OutputPerturbation

sys.path.insert(0, str(Path(__file__).resolve().parent))
from datasets import make_covertype_like
from peer_objective_perturbation import (
    PeerLinearRegression,
    PeerLogisticRegression,
    diffprivlib_info,
)

RESULTS = Path(__file__).resolve().parent / "results"
EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
DELTAS = (0.0, 1e-5)
DATA_NORM = 1.0
#: Public regularisation constants (NOT tuned on the data): each estimator's default.
ALPHA_LOGISTIC = 1e-2  # DPLogisticRegression's default (also bench_covertype, the demo)
ALPHA_SVC = 1e-2  # DPLinearSVC's default
ALPHA_RIDGE = 1.0  # DPLinearRegression's default
ALPHA_SWEEP = (1e-3, 1e-2, 1e-1)
ALPHA_SWEEP_RIDGE = (1e-2, 1e-1, 1.0)
SPLIT_SEED = 0
TEST_SIZE = 0.25
TARGET_TIME_RATIO = 1.5
#: Adversarial training grid (perturbations in the preprocessed, unit-norm feature space).
ADV_RADII = {2: (0.02, 0.05, 0.1), math.inf: (0.005, 0.01, 0.02)}
ADV_EPSILONS = (0.5, 1.0, 2.0, 5.0, math.inf)
ADV_EPSILONS_LARGE = (1.0, math.inf)  # covertype-like (3 seeds)
#: Data sets on which the "tight" certified radius is also run (checked to certify fast;
#: an uncertified fit would run the sure fallback's ~1e8-1e9 steps).
TIGHT_RADIUS_DATASETS = ("breast_cancer", "digits")


# ---------------------------------------------------------------------------------------
# Data: fixed, data-independent preprocessing, rows scaled to unit l2 norm
# ---------------------------------------------------------------------------------------
def unit_rows(X):
    """Divide every row by its own l2 norm: a per-record map (no statistic of the data
    set), so it costs no privacy. A zero row stays zero."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    return np.ascontiguousarray(X / np.where(norms > 0, norms, 1.0)[:, None])


#: Diabetes (Efron et al. 2004, scikit-learn's ``load_diabetes(scaled=False)``): PUBLIC
#: ranges of each raw attribute from its meaning and units, not from the data.
#: (scikit-learn's ``scaled=True`` version is mean-centred and scaled by the standard
#: deviation OF THIS DATA SET, a data-dependent transform, so it is not used.) Each column
#: is mapped to [-0.5, 0.5] by ``(x - lo) / (hi - lo) - 0.5`` and clipped, as skdp's demo
#: does for breast cancer.
DIABETES_PUBLIC_RANGES = (
    ("age", 0.0, 100.0),  # years
    ("sex", 1.0, 2.0),  # coded 1 / 2
    ("bmi", 10.0, 60.0),  # body-mass index, kg/m^2 (physiological range)
    ("bp", 40.0, 160.0),  # average (mean arterial) blood pressure, mm Hg
    ("s1_tc", 50.0, 400.0),  # total serum cholesterol, mg/dL
    ("s2_ldl", 20.0, 300.0),  # low-density lipoproteins, mg/dL
    ("s3_hdl", 10.0, 120.0),  # high-density lipoproteins, mg/dL
    ("s4_tch", 1.0, 12.0),  # total cholesterol / HDL ratio
    ("s5_ltg", 3.0, 7.0),  # log of serum triglycerides (ln mg/dL: 20-1100 mg/dL)
    ("s6_glu", 40.0, 200.0),  # blood sugar, mg/dL
)
#: The target "disease progression one year after baseline" is documented as an integer
#: in 25-346 (``load_diabetes`` docstring): centred by the mid-range and divided by the
#: half-range, public constants, so that ``|y| <= 1 = y_bound``.
DIABETES_Y_RANGE = (25.0, 346.0)


def _split(X, y, stratify):
    return train_test_split(X, y, test_size=TEST_SIZE, random_state=SPLIT_SEED,
                            stratify=y if stratify else None)


def diabetes_dataset():
    """Diabetes with public-range preprocessing, unit rows, ``|y| <= 1``, fixed split."""
    d = load_diabetes(scaled=False)
    lo = np.array([r[1] for r in DIABETES_PUBLIC_RANGES])
    hi = np.array([r[2] for r in DIABETES_PUBLIC_RANGES])
    X = unit_rows(np.clip((d.data - lo) / (hi - lo), 0.0, 1.0) - 0.5)
    ylo, yhi = DIABETES_Y_RANGE
    y = np.clip((d.target - 0.5 * (ylo + yhi)) / (0.5 * (yhi - ylo)), -1.0, 1.0)
    return dict(
        task="regression", data=_split(X, y, False),
        preprocessing="raw load_diabetes(scaled=False), each column by its public range "
                      "(DIABETES_PUBLIC_RANGES) to [-0.5, 0.5], then rows / ||row||; "
                      "y = (target - 185.5) / 160.5 (documented range 25-346)",
        clipped_fraction=float(np.mean((d.data < lo) | (d.data > hi))))


def load_datasets(covertype_n):
    """The four data sets, preprocessed and split with a fixed seed."""
    out = {}
    X, y = load_breast_cancer(return_X_y=True)
    X = unit_rows(public_preprocess(X))
    out["breast_cancer"] = dict(
        task="classification", data=_split(X, y.astype(float), True),
        preprocessing="skdp._demo.public_preprocess (published feature ranges -> "
                      "[-0.5, 0.5]), then rows / ||row||; y = 1: benign")
    X, y = load_digits(return_X_y=True)
    X = unit_rows(X / 16.0)
    out["digits"] = dict(
        task="classification", data=_split(X, (y >= 5).astype(float), True),
        preprocessing="pixels / 16 (pixel range 0-16), then rows / ||row||; y = 1: "
                      "digit >= 5")
    X, y = make_covertype_like(n_samples=covertype_n, random_state=0)
    X = unit_rows(X)
    out["covertype_like"] = dict(
        task="classification", data=_split(X, y, True),
        preprocessing=f"make_covertype_like(n_samples={covertype_n}, random_state=0) "
                      "(columns / documented ranges, rows / sqrt(12)), then rows / ||row||")
    out["diabetes"] = diabetes_dataset()
    for _name, info in out.items():
        X_tr, X_te, y_tr, y_te = info["data"]
        info.update(n_train=X_tr.shape[0], n_test=X_te.shape[0], n_features=X_tr.shape[1],
                    max_row_norm=float(np.sqrt(np.einsum("ij,ij->i", X_tr, X_tr)).max()))
        if info["task"] == "classification":
            info["positive_rate"] = float(y_tr.mean())
    return out


# ---------------------------------------------------------------------------------------
# Objectives, exactly as skdp's output perturbation defines them
# ---------------------------------------------------------------------------------------
# theta = (w, b / data_norm): the intercept is the coefficient of a constant feature of
# value data_norm, and output perturbation PENALISES it:
#   F(theta) = mean_i phi(<theta, (x_i, data_norm)>, t_i) + (alpha / 2) ||theta||^2.
SMOOTHING = 0.5  # DPLinearSVC's default smoothing of "smoothed_hinge"


def augment(X):
    return np.hstack([X, np.full((X.shape[0], 1), DATA_NORM)])


def theta_of(coef, intercept):
    if intercept is None:  # no intercept fitted (the matched-objective comparison)
        return np.ravel(coef).astype(float).copy()
    return np.concatenate([np.ravel(coef), [float(np.ravel([intercept])[0]) / DATA_NORM]])


def matched_design(X):
    """``[x, 1] / sqrt(2)``: the constant feature as an ordinary, penalised coefficient, so
    that skdp and diffprivlib (both with ``fit_intercept=False``) minimise the SAME
    objective ``mean loss + (alpha/2)||theta||^2``; rows still have unit norm."""
    return np.hstack([X, np.ones((X.shape[0], 1))]) / math.sqrt(2.0)


MATCHED = "logistic_matched"


def loss_parts(kind, z, t):
    """Per-example value, derivative and (generalised) second derivative in the score."""
    if kind == "logistic":  # t in {-1, +1}
        m = t * z
        return np.logaddexp(0.0, -m), -t * expit(-m), expit(m) * expit(-m)
    if kind == "squared":
        r = z - t
        return 0.5 * r * r, r, np.ones_like(z)
    m = t * z
    if kind == "hinge":
        return np.maximum(0.0, 1.0 - m), -t * (m < 1.0), np.zeros_like(z)
    if kind == "smoothed_hinge":
        h = SMOOTHING
        u = np.clip((1.0 - m) / h, 0.0, 1.0)
        value = np.where(m >= 1.0, 0.0,
                         np.where(m > 1.0 - h, (1.0 - m) ** 2 / (2 * h), 1.0 - m - h / 2))
        return value, -t * u, ((m < 1.0) & (m > 1.0 - h)) / h
    raise ValueError(kind)


def _penalty(p, penalize_intercept):
    """Per-coordinate penalty weights: skdp's output perturbation penalises the intercept
    (1 everywhere); scikit-learn and diffprivlib do not (0 on the last coordinate)."""
    pen = np.ones(p)
    if not penalize_intercept:
        pen[-1] = 0.0
    return pen


def objective(kind, Xa, t, theta, alpha, penalize_intercept=True):
    value, _, _ = loss_parts(kind, Xa @ theta, t)
    pen = _penalty(theta.size, penalize_intercept)
    return float(np.mean(value) + 0.5 * alpha * float(theta @ (pen * theta)))


def _value_grad(theta, kind, Xa, t, alpha, pen):
    value, d, _ = loss_parts(kind, Xa @ theta, t)
    return (float(np.mean(value) + 0.5 * alpha * float(theta @ (pen * theta))),
            Xa.T @ d / Xa.shape[0] + alpha * pen * theta)


def solve_optimum(kind, Xa, t, alpha, gtol=1e-10, penalize_intercept=True):
    """High-precision non-private minimiser of :func:`objective`.

    Squared loss: the normal equations. Logistic / smoothed hinge: L-BFGS-B to a tight
    tolerance, then exact (generalised) Newton steps while the gradient norm decreases.
    Hinge: liblinear's dual coordinate descent (``LinearSVC(loss="hinge",
    intercept_scaling=data_norm)`` minimises exactly this objective, intercept penalised)
    at ``tol=1e-10``; no gradient exists, so the check is against skdp's own certified
    non-private fit (see the caller).
    """
    n, p = Xa.shape
    pen = _penalty(p, penalize_intercept)
    t0 = time.perf_counter()
    info = {"kind": kind, "alpha": alpha, "penalize_intercept": penalize_intercept}
    if kind == "squared":
        theta = np.linalg.solve(Xa.T @ Xa / n + alpha * np.diag(pen), Xa.T @ t / n)
        method = "normal equations"
    elif kind == "hinge":
        assert penalize_intercept
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            svc = LinearSVC(loss="hinge", C=1.0 / (n * alpha), fit_intercept=True,
                            intercept_scaling=DATA_NORM, dual=True, tol=1e-10,
                            max_iter=1_000_000).fit(Xa[:, :-1], t)
        theta = theta_of(svc.coef_, svc.intercept_)
        method = "liblinear dual CD, tol 1e-10"
    else:
        res = minimize(_value_grad, np.zeros(p), args=(kind, Xa, t, alpha, pen), jac=True,
                       method="L-BFGS-B",
                       options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 20000, "maxcor": 30})
        theta = res.x
        f, g = _value_grad(theta, kind, Xa, t, alpha, pen)
        for _ in range(30):
            if np.linalg.norm(g) < 1e-3 * gtol:
                break
            _, _, c = loss_parts(kind, Xa @ theta, t)
            H = (Xa * (c / n)[:, None]).T @ Xa + alpha * np.diag(pen)
            cand = theta - np.linalg.solve(H, g)
            f_new, g_new = _value_grad(cand, kind, Xa, t, alpha, pen)
            if not np.linalg.norm(g_new) < np.linalg.norm(g):
                break
            theta, _f, g = cand, f_new, g_new
        method = "L-BFGS-B + Newton polish"
    F = objective(kind, Xa, t, theta, alpha, penalize_intercept)
    info.update(F_star=F, method=method, seconds=time.perf_counter() - t0,
                theta_norm=float(np.linalg.norm(theta)))
    if kind != "hinge":
        info["grad_norm"] = float(np.linalg.norm(
            _value_grad(theta, kind, Xa, t, alpha, pen)[1]))
    return theta, info


# ---------------------------------------------------------------------------------------
# Fits
# ---------------------------------------------------------------------------------------
def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def fit_skdp(model, X, y, epsilon, delta, alpha, seed, **params):
    """One skdp fit with ``solver="output_perturbation"``; returns (theta, seconds, info)."""
    fit_intercept = model != MATCHED
    common = dict(solver="output_perturbation", alpha=alpha, data_norm=DATA_NORM,
                  fit_intercept=fit_intercept, random_state=seed)
    common.update(params)  # may replace the solver by a configured OutputPerturbation
    if model in ("logistic", MATCHED):
        est = skdp.DPLogisticRegression(epsilon, delta, **common)
    elif model == "ridge":
        est = skdp.DPLinearRegression(epsilon, delta, y_bound=1.0, **common)
    else:
        est = skdp.DPLinearSVC(epsilon, delta, loss=model.removeprefix("svc_"), **common)
    est, seconds = _timed(lambda: est.fit(X, y))
    s = est.privacy_plan_.constants()
    info = {
        "epsilon_spent": float(est.privacy_spent_.epsilon),
        "delta_spent": float(est.privacy_spent_.delta),
        "mechanism": s.get("mechanism"),
        "sensitivity": s.get("sensitivity"),
        "minimizer_sensitivity": s.get("minimizer_sensitivity"),
        "certified_radius": s.get("certified_radius"),
        "domain_radius": s.get("domain_radius"),
        "noise_scale": s.get("laplace_scale") or s.get("sigma"),
        "fallback_steps": s.get("fallback_steps"),
    }
    return theta_of(est.coef_, est.intercept_ if fit_intercept else None), seconds, info


def fit_peer(model, X, y, epsilon, alpha, seed):
    n = X.shape[0]
    fit_intercept = model != MATCHED
    if model in ("logistic", MATCHED):
        est = PeerLogisticRegression(epsilon=epsilon, data_norm=DATA_NORM, C=1.0 / (n * alpha),
                                     fit_intercept=fit_intercept, random_state=seed)
    else:  # rows have unit norm, so every coordinate lies in [-1, 1]; |y| <= 1
        est = PeerLinearRegression(epsilon=epsilon, bounds_X=(-DATA_NORM, DATA_NORM),
                                   bounds_y=(-1.0, 1.0), fit_intercept=True, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lbfgs ConvergenceWarning at the peer's max_iter
        est, seconds = _timed(lambda: est.fit(X, y))
    info = {"via": est.via}
    if hasattr(est, "n_iter_"):
        info["n_iter"] = int(np.max(est.n_iter_))
    return theta_of(est.coef_, est.intercept_ if fit_intercept else None), seconds, info


def sklearn_estimator(model, n, alpha, exact=False):
    """The non-private scikit-learn counterpart of ``model`` (default tolerances).

    ``LogisticRegression(C=1/(n alpha))`` minimises ``sum loss + ||w||^2/(2C)``, i.e.
    ``n (mean loss + (alpha/2)||w||^2)``, intercept UNpenalised (the usual baseline; its
    solution differs slightly from skdp's penalised-intercept optimum). ``Ridge(alpha=n
    alpha)``: ``||y - z||^2 + n alpha ||w||^2 = 2n (mean (y-z)^2/2 + (alpha/2)||w||^2)``;
    with ``exact=True`` it is fitted without intercept on the augmented design, which is
    exactly skdp's objective. ``LinearSVC(loss="hinge", C=1/(n alpha),
    intercept_scaling=data_norm)`` penalises the intercept like skdp: the same objective.
    """
    if model in ("logistic", MATCHED):
        return LogisticRegression(C=1.0 / (n * alpha), max_iter=10000,
                                  fit_intercept=model != MATCHED)
    if model == "ridge":
        return Ridge(alpha=n * alpha, fit_intercept=not exact)
    return LinearSVC(loss="hinge", C=1.0 / (n * alpha), intercept_scaling=DATA_NORM,
                     dual=True, max_iter=100000)


def fit_sklearn(model, X, y, alpha, exact=False):
    est = sklearn_estimator(model, X.shape[0], alpha, exact)
    Xf = augment(X) if exact else X
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, seconds = _timed(lambda: est.fit(Xf, y))
    if exact or model == MATCHED:
        return np.ravel(est.coef_).copy(), seconds
    return theta_of(est.coef_, est.intercept_), seconds


def labels(model, y):
    return y if model == "ridge" else 2.0 * y - 1.0


def kind_of(model):
    return {"logistic": "logistic", MATCHED: "logistic", "ridge": "squared", "svc_hinge": "hinge",
            "svc_smoothed_hinge": "smoothed_hinge"}[model]


def test_metric(model, theta, X_te, y_te):
    # theta has one entry more than X_te has columns when an intercept was fitted.
    z = (augment(X_te) if theta.size == X_te.shape[1] + 1 else X_te) @ theta
    if model == "ridge":
        return float(1.0 - np.sum((y_te - z) ** 2) / np.sum((y_te - y_te.mean()) ** 2))
    return float(np.mean((z > 0) == (y_te == 1)))


def robust_accuracy(theta, X, y, radius, norm):
    """Accuracy under the worst-case perturbation of l_norm size ``radius`` (closed form for
    a linear model: the margin ``s (<w, x> + b) - radius ||w||_dual`` must be > 0)."""
    w = theta[:-1]
    dual = np.linalg.norm(w, 1 if norm == math.inf else 2)
    margin = (2.0 * y - 1.0) * (augment(X) @ theta) - radius * dual
    return float(np.mean(margin > 0))


# ---------------------------------------------------------------------------------------
# Experiments
# ---------------------------------------------------------------------------------------
class Problem:
    """A (data set, model, alpha) triple with its optimum and its trivial output."""

    def __init__(self, name, info, model, alpha):
        self.name, self.model, self.alpha = name, model, alpha
        self.X, self.X_te, self.y, self.y_te = info["data"]
        self.kind = kind_of(model)
        if model == MATCHED:
            self.X, self.X_te = matched_design(self.X), matched_design(self.X_te)
            self.Xa = self.X
        else:
            self.Xa = augment(self.X)
        self.t = labels(model, self.y)
        self.theta_star, self.optimum = solve_optimum(self.kind, self.Xa, self.t, alpha)
        self.F_star = self.optimum["F_star"]
        zero = np.zeros(self.Xa.shape[1])
        self.excess_zero = objective(self.kind, self.Xa, self.t, zero, alpha) - self.F_star
        self.metric_star = test_metric(model, self.theta_star, self.X_te, self.y_te)
        self.metric_zero = test_metric(model, zero, self.X_te, self.y_te)
        # The objective scikit-learn and diffprivlib minimise: intercept NOT penalised.
        self.unpen = None
        if model == "logistic":
            theta_u, info_u = solve_optimum(self.kind, self.Xa, self.t, alpha,
                                            penalize_intercept=False)
            self.unpen = {
                "optimum": info_u,
                "excess_zero": objective(self.kind, self.Xa, self.t, zero, alpha, False)
                - info_u["F_star"],
                # Objective-mismatch floors: each optimum measured on the other objective.
                "ours_optimum_excess_on_unpenalised": objective(
                    self.kind, self.Xa, self.t, self.theta_star, alpha, False)
                - info_u["F_star"],
                "unpenalised_optimum_excess_on_ours": objective(
                    self.kind, self.Xa, self.t, theta_u, alpha) - self.F_star,
                "test_metric_optimum": test_metric(model, theta_u, self.X_te, self.y_te),
            }

    def record(self, method, epsilon, delta, seed, theta, seconds, **extra):
        F = objective(self.kind, self.Xa, self.t, theta, self.alpha)
        if self.unpen is not None:
            extra["excess_risk_unpenalised"] = objective(
                self.kind, self.Xa, self.t, theta, self.alpha, False) \
                - self.unpen["optimum"]["F_star"]
        return {
            "dataset": self.name, "model": self.model, "method": method,
            "alpha": self.alpha, "epsilon": epsilon, "delta": delta, "seed": seed,
            "F": F, "excess_risk": F - self.F_star,
            "worse_than_zero": bool(F - self.F_star > self.excess_zero),
            "test_metric": test_metric(self.model, theta, self.X_te, self.y_te),
            "fit_seconds": seconds, **extra,
        }

    def describe(self):
        return {"dataset": self.name, "model": self.model, "alpha": self.alpha,
                "n_train": int(self.X.shape[0]), "optimum": self.optimum,
                "excess_zero": self.excess_zero, "test_metric_optimum": self.metric_star,
                "test_metric_zero": self.metric_zero, "unpenalised_intercept": self.unpen,
                "n_test": int(self.X_te.shape[0])}


def _log(msg):
    print(msg, flush=True)


def run_private_grid(prob, epsilons, seeds, deltas=DELTAS, with_peer=True, interleave=True,
                     tag="", with_objp=False):
    """ours (every delta) and the peer at every epsilon and seed, with an interleaved
    non-private scikit-learn fit timed right before each private fit. ``with_objp``: also
    skdp's pure-DP objective perturbation (``solver="objective_perturbation"``, delta =
    0, default settings), method ``"objp"``, and with ``shrinkage="threshold"``, method
    ``"objp_thr"``."""
    runs = []
    methods = [("op", d) for d in deltas] \
        + ([("objp", 0.0), ("objp_thr", 0.0)] if with_objp else []) \
        + ([("peer", 0.0)] if with_peer else [])
    for method, delta in methods:
        for eps in epsilons:
            for seed in seeds:
                sk_seconds = fit_sklearn(prob.model, prob.X, prob.y, prob.alpha)[1] \
                    if interleave else None
                if method == "op":
                    theta, sec, info = fit_skdp(prob.model, prob.X, prob.y, eps, delta,
                                                prob.alpha, seed)
                elif method in ("objp", "objp_thr"):
                    solver = "objective_perturbation" if method == "objp" else \
                        ObjectivePerturbation(shrinkage="threshold")
                    theta, sec, info = fit_skdp(prob.model, prob.X, prob.y, eps, 0.0,
                                                prob.alpha, seed, solver=solver)
                else:
                    theta, sec, info = fit_peer(prob.model, prob.X, prob.y, eps, prob.alpha,
                                                seed)
                runs.append(prob.record(method, eps, delta, seed, theta, sec,
                                        sklearn_seconds_interleaved=sk_seconds, **info))
            rows = [r for r in runs if r["method"] == method and r["delta"] == delta
                    and r["epsilon"] == eps]
            _log(f"  {tag}{prob.name:14s} {prob.model:8s} a={prob.alpha:<5g} {method:4s} "
                 f"d={delta:<6g} eps={eps:<4g} median excess "
                 f"{np.median([r['excess_risk'] for r in rows]):.3e} (F(0)-F* "
                 f"{prob.excess_zero:.3e})  metric "
                 f"{np.median([r['test_metric'] for r in rows]):.3f}  time "
                 f"{np.median([r['fit_seconds'] for r in rows]) * 1e3:7.1f} ms"
                 + (" (sklearn "
                    f"{np.median([r['sklearn_seconds_interleaved'] for r in rows]) * 1e3:.1f}"
                    " ms)" if interleave else ""))
    return runs


def sklearn_reference(prob, repeats):
    """Non-private scikit-learn fits: median time and their excess risk / test metric."""
    out = {}
    variants = [("default", False)] + ([("exact_objective", True)]
                                       if prob.model == "ridge" else [])
    for label, exact in variants:
        times, theta = [], None
        for _ in range(repeats):
            theta, sec = fit_sklearn(prob.model, prob.X, prob.y, prob.alpha, exact)
            times.append(sec)
        F = objective(prob.kind, prob.Xa, prob.t, theta, prob.alpha)
        out[label] = {"median_seconds": float(np.median(times)),
                      "excess_risk": F - prob.F_star,
                      "test_metric": test_metric(prob.model, theta, prob.X_te, prob.y_te)}
    if prob.model == "ridge":  # the peer's non-private target: unregularised OLS
        ols = OLS().fit(prob.X, prob.y)
        theta = theta_of(ols.coef_, ols.intercept_)
        out["ols"] = {"excess_risk": objective(prob.kind, prob.Xa, prob.t, theta, prob.alpha)
                      - prob.F_star,
                      "test_metric": test_metric("ridge", theta, prob.X_te, prob.y_te)}
    return out


def skdp_nonprivate_check(prob):
    """skdp at epsilon = inf: its certified minimiser must match our optimum."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        theta, sec, info = fit_skdp(prob.model, prob.X, prob.y, math.inf, 0.0, prob.alpha, 0)
    F = objective(prob.kind, prob.Xa, prob.t, theta, prob.alpha)
    return {"excess_risk": F - prob.F_star, "seconds": sec,
            "distance_to_optimum": float(np.linalg.norm(theta - prob.theta_star)),
            "certified_radius": info["certified_radius"],
            "test_metric": test_metric(prob.model, theta, prob.X_te, prob.y_te)}


def public_minimizer_sensitivity(prob, **params):
    """``Delta_F`` of the exact minimiser: a function of public quantities only (n, alpha,
    data_norm, the loss, the adversarial radius), read from skdp's plan."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        est = skdp.DPLogisticRegression(math.inf, 0.0, solver="output_perturbation",
                                        alpha=prob.alpha, data_norm=DATA_NORM, **params)
        est.fit(prob.X, prob.y)
    return est.privacy_plan_.minimizer_sensitivity


def run_adversarial(prob, seeds, epsilons, tight=False):
    """Adversarially trained private logistic regression: (norm, radius, epsilon) grid.

    ``variant="default"``: skdp's default certified radius. For non-smooth objectives it is
    ``max(0.05 Delta_F, 2 L_F / (mu sqrt(max_iter + 1)))`` with ``max_iter = 1e5``, so
    that the sure subgradient fallback needs at most 1e5 steps. ``variant="tight"`` (with
    ``tight=True``): the public radius ``0.05 Delta_F`` used for smooth objectives,
    ``OutputPerturbation(certified_radius=0.05 Delta_F, max_iter=1e10)``: less noise, but
    a worst-case (uncertified) fit would run ``fallback_steps`` subgradient steps. The
    certificate does not depend on the noise, so a data set certifies for every seed.
    """
    runs = []
    grid = [(2, 0.0)] + [(p, r) for p, radii in ADV_RADII.items() for r in radii]
    eval_grid = [(p, r) for p, radii in ADV_RADII.items() for r in radii]
    variants = [("default", 2, 0.0)] + [(v, p, r) for v in (("default", "tight") if tight
                                                           else ("default",))
                                        for p, r in grid if r > 0]
    for variant, norm, radius in variants:
        base = ({} if radius == 0 else
                {"adversarial_radius": radius, "adversarial_norm": norm})
        if variant == "tight":
            delta_f = public_minimizer_sensitivity(prob, **base)
        for eps in epsilons:
            for seed in (seeds if math.isfinite(eps) else seeds[:1]):
                params = dict(base)
                if variant == "tight":
                    params["solver"] = OutputPerturbation(certified_radius=0.05 * delta_f,
                                                          max_iter=10**10)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PrivacyLeakWarning)
                    theta, sec, info = fit_skdp("logistic", prob.X, prob.y, eps, 0.0,
                                                prob.alpha, seed, **params)
                runs.append({
                    "dataset": prob.name, "variant": variant,
                    "train_norm": "inf" if norm == math.inf else 2,
                    "train_radius": radius, "epsilon": eps, "seed": seed,
                    "fit_seconds": sec, "sensitivity": info["sensitivity"],
                    "minimizer_sensitivity": info["minimizer_sensitivity"],
                    "certified_radius": info["certified_radius"],
                    "fallback_steps": info["fallback_steps"],
                    "clean_accuracy": test_metric("logistic", theta, prob.X_te, prob.y_te),
                    "robust_accuracy": robust_accuracy(theta, prob.X_te, prob.y_te, radius,
                                                       norm),
                    "robust_accuracy_grid": {
                        f"{'inf' if p == math.inf else 2}|{r:g}":
                            robust_accuracy(theta, prob.X_te, prob.y_te, r, p)
                        for p, r in eval_grid},
                })
            rows = [r for r in runs if r["train_radius"] == radius and r["epsilon"] == eps
                    and r["train_norm"] == ("inf" if norm == math.inf else 2)
                    and r["variant"] == variant]
            _log(f"  adv {variant:7s} {prob.name:14s} l{'inf' if norm == math.inf else 2} "
                 f"r={radius:<5g} "
                 f"eps={eps:<4g} clean {np.median([r['clean_accuracy'] for r in rows]):.3f} "
                 f"robust {np.median([r['robust_accuracy'] for r in rows]):.3f} "
                 f"time {np.median([r['fit_seconds'] for r in rows]) * 1e3:.1f} ms "
                 f"(sensitivity {rows[0]['sensitivity']:.3g})")
    return runs


# ---------------------------------------------------------------------------------------
# Summaries and verdicts
# ---------------------------------------------------------------------------------------
def _q(values, q):
    return float(np.quantile(values, q))


def summarise(runs, problems):
    """Medians over seeds per (dataset, model, alpha, method, delta, epsilon)."""
    table = {}
    keys = sorted({(r["dataset"], r["model"], r["alpha"], r["method"], r["delta"],
                    r["epsilon"]) for r in runs}, key=lambda k: tuple(map(str, k[:4])) + k[4:])
    for key in keys:
        rows = [r for r in runs if (r["dataset"], r["model"], r["alpha"], r["method"],
                                    r["delta"], r["epsilon"]) == key]
        ex = np.array([r["excess_risk"] for r in rows])
        met = np.array([r["test_metric"] for r in rows])
        t = np.array([r["fit_seconds"] for r in rows])
        sk = [r["sklearn_seconds_interleaved"] for r in rows
              if r.get("sklearn_seconds_interleaved") is not None]
        prob = problems[key[:3]]
        entry = {
            "dataset": key[0], "model": key[1], "alpha": key[2], "method": key[3],
            "delta": key[4], "epsilon": key[5], "n_runs": len(rows),
            "excess_median": float(np.median(ex)), "excess_q25": _q(ex, 0.25),
            "excess_q75": _q(ex, 0.75), "excess_zero": prob.excess_zero,
            "median_beats_zero": bool(np.median(ex) <= prob.excess_zero),
            "fraction_worse_than_zero": float(np.mean(ex > prob.excess_zero)),
            "metric_median": float(np.median(met)), "metric_q25": _q(met, 0.25),
            "excess_unpenalised_median": (
                float(np.median([r["excess_risk_unpenalised"] for r in rows]))
                if "excess_risk_unpenalised" in rows[0] else None),
            "metric_q75": _q(met, 0.75), "time_median": float(np.median(t)),
        }
        if sk:
            entry["sklearn_time_median"] = float(np.median(sk))
            entry["time_ratio"] = entry["time_median"] / entry["sklearn_time_median"]
        table["|".join(map(str, key))] = entry
    return table


def _get(table, dataset, model, alpha, method, delta, eps):
    return table.get("|".join(map(str, (dataset, model, alpha, method, delta, eps))))


def verdicts(table, datasets, model, alpha, epsilons, problems, method="op"):
    """The issue's targets (delta = 0), per data set, for skdp's ``method``."""
    out = {}
    for ds in datasets:
        prob = problems[(ds, model, alpha)]
        ours = [_get(table, ds, model, alpha, method, 0.0, e) for e in epsilons]
        peer = [_get(table, ds, model, alpha, "peer", 0.0, e) for e in epsilons]
        gauss = [_get(table, ds, model, alpha, method, 1e-5, e) for e in epsilons]
        if any(o is None for o in ours):
            continue
        v = {"epsilons": list(epsilons)}
        if all(p is not None for p in peer):
            v["ratio_ours_over_peer"] = [o["excess_median"] / p["excess_median"]
                                         for o, p in zip(ours, peer, strict=True)]
            v["beats_peer"] = [o["excess_median"] < p["excess_median"]
                               for o, p in zip(ours, peer, strict=True)]
            v["target_beats_peer_every_eps"] = all(v["beats_peer"])
            v["peer_median_beats_zero"] = [p["median_beats_zero"] for p in peer]
            if ours[0].get("excess_unpenalised_median") is not None:
                # The same comparison on the objective the peer minimises.
                v["ratio_ours_over_peer_unpenalised"] = [
                    o["excess_unpenalised_median"] / p["excess_unpenalised_median"]
                    for o, p in zip(ours, peer, strict=True)]
                v["beats_peer_unpenalised"] = [
                    o["excess_unpenalised_median"] < p["excess_unpenalised_median"]
                    for o, p in zip(ours, peer, strict=True)]
        v["excess_over_zero"] = [o["excess_median"] / o["excess_zero"] for o in ours]
        v["median_beats_zero"] = [o["median_beats_zero"] for o in ours]
        v["fraction_worse_than_zero"] = [o["fraction_worse_than_zero"] for o in ours]
        v["target_never_worse_than_zero"] = all(v["median_beats_zero"])
        for label, rows in (("", ours), ("_gaussian", gauss)):
            if any(r is None for r in rows):
                continue
            acc = [r["metric_median"] for r in rows]
            drops = [(epsilons[i + 1], acc[i] - acc[i + 1]) for i in range(len(acc) - 1)
                     if acc[i + 1] < acc[i]]
            # Binomial standard error of a test accuracy near the optimum's.
            p_opt = prob.metric_star
            se = math.sqrt(p_opt * (1 - p_opt) / prob.X_te.shape[0])
            v[f"metric_median{label}"] = acc
            v[f"target_monotone{label}"] = not drops
            # The same target up to sampling error: no drop larger than one test-set
            # standard error (the epsilon = inf limit, the optimum's accuracy, can lie
            # below the accuracies of noisier fits, so strict monotonicity can fail for
            # any consistent method).
            v[f"target_monotone_within_se{label}"] = all(d <= se for _, d in drops)
            v[f"monotone_violations{label}"] = [
                {"at_epsilon": e, "drop": d, "within_one_test_se": d <= se} for e, d in drops]
            v["test_accuracy_se"] = se
        ratios = [o.get("time_ratio") for o in ours]
        if all(r is not None for r in ratios):
            v["time_ratio"] = ratios
            v["time_ratio_median_over_eps"] = float(np.median(ratios))
            v["target_time_every_eps"] = all(r <= TARGET_TIME_RATIO for r in ratios)
            v["target_time_median"] = float(np.median(ratios)) <= TARGET_TIME_RATIO
        out[ds] = v
    return out


# ---------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------
def _e(x):
    return "n/a" if x is None else f"{x:.2e}"


def _yn(b):
    return "**yes**" if b else "**NO**"


def _pairs(eps, values):
    return ", ".join(f"{e:g}: {r:.2g}" for e, r in zip(eps, values, strict=True))


def _objp_section(res):
    """skdp's pure-DP objective perturbation against the peer (issue 3's delta = 0
    targets, for the solver that can use the data curvature)."""
    cfg, table = res["config"], res["summary"]
    a = cfg["alpha_logistic"]
    L = ["## Pure-DP objective perturbation (skdp) vs the peer (delta = 0)", "",
         "`DPLogisticRegression(solver=\"objective_perturbation\", delta=0)` with its "
         "defaults: K-norm noise over the product of the feature ball (radius 2 data_norm) "
         "and the intercept interval (radius 2), epsilon = epsilon_B + epsilon_J "
         "(docs/algorithms/objective_perturbation.md). Its intercept is not penalised by "
         "alpha (like the peer and sklearn), so both objectives are shown: skdp's output-"
         "perturbation objective (intercept penalised) / the peer's (unpenalised). Cells: "
         "median excess risk; `vs w=0`: median excess over F(0) - F* (<= 1: no worse "
         "than the trivial output); `matched`: the [x, 1]/sqrt(2) design of the previous "
         "section, ours / peer.", ""]
    for ds, v in res["verdicts_objp"].items():
        prob = res["problems"][f"{ds}|logistic|{a}"]
        L += [f"**{ds}** (F(0) - F* = {prob['excess_zero']:.3e})", "",
              "| epsilon | objp excess | peer excess | objp / peer | objp / peer "
              "(unpenalised) | vs w=0 | acc objp | acc peer | time objp / sklearn "
              "| matched objp / peer |", "|---|---|---|---|---|---|---|---|---|---|"]
        vm = res.get("verdicts_objp_matched", {}).get(ds, {})
        for i, eps in enumerate(cfg["epsilons"]):
            o = _get(table, ds, "logistic", a, "objp", 0.0, eps)
            p = _get(table, ds, "logistic", a, "peer", 0.0, eps)
            m = vm.get("ratio_ours_over_peer")
            L.append(
                f"| {eps:g} | {_e(o['excess_median'])} | {_e(p['excess_median'])} | "
                f"{v['ratio_ours_over_peer'][i]:.2g} | "
                f"{v['ratio_ours_over_peer_unpenalised'][i]:.2g} | "
                f"{v['excess_over_zero'][i]:.3g} | {o['metric_median']:.3f} | "
                f"{p['metric_median']:.3f} | {o.get('time_ratio', float('nan')):.2f} | "
                + (f"{m[i]:.2g}" if m else "n/a") + " |")
        L += ["",
              f"- Lower median excess risk than the peer at every epsilon: "
              f"{_yn(v['target_beats_peer_every_eps'])}; on the peer's objective: "
              f"{_yn(all(v['beats_peer_unpenalised']))}; matched objective: "
              f"{_yn(vm.get('target_beats_peer_every_eps', False))}.",
              f"- Never worse than w = 0 (median): {_yn(v['target_never_worse_than_zero'])}"
              + ("" if v["target_never_worse_than_zero"] else " (worse at: " + ", ".join(
                  f"{e:g} ({r:.3g} x F(0) - F*)" for e, r, b in zip(
                      v["epsilons"], v["excess_over_zero"], v["median_beats_zero"],
                      strict=True) if not b) + ")") + ".",
              f"- Median test accuracy monotone in epsilon: {_yn(v['target_monotone'])} ("
              + ", ".join(f"{x:.3f}" for x in v["metric_median"])
              + f"; optimum {prob['test_metric_optimum']:.3f}); no drop above one "
              f"test-set standard error ({v['test_accuracy_se']:.3f}): "
              f"{_yn(v['target_monotone_within_se'])}.",
              f"- Fit time within {TARGET_TIME_RATIO}x sklearn: every epsilon "
              f"{_yn(v.get('target_time_every_eps', False))}, median over epsilons "
              f"{v.get('time_ratio_median_over_eps', float('nan')):.2f}x."]
        t = res.get("verdicts_objp_threshold", {}).get(ds)
        if t:
            L += ["- With `shrinkage=\"threshold\"` (opt-in: release 0 when the release is "
                  "within the noise's public reach of 0): median excess / (F(0) - F*) "
                  + _pairs(t["epsilons"], t["excess_over_zero"]) + "; median accuracy "
                  + ", ".join(f"{x:.3f}" for x in t["metric_median"])
                  + f"; lower than the peer at every epsilon: "
                  f"{_yn(t['target_beats_peer_every_eps'])}; never worse than w = 0: "
                  f"{_yn(t['target_never_worse_than_zero'])}; accuracy monotone: "
                  f"{_yn(t['target_monotone'])}."]
        L.append("")
    return L


def write_markdown(path, res):
    cfg, table = res["config"], res["summary"]
    L = [
        "# Output perturbation (skdp) vs objective perturbation (diffprivlib) vs scikit-learn",
        "",
        f"`solver=\"output_perturbation\"`, `data_norm=1`, `fit_intercept=True` (intercept "
        f"penalised: coefficient of a constant feature 1). {len(cfg['seeds'])} seeds; "
        f"medians over seeds (IQR in the JSON). Excess risk `F(w) - F*` on the TRAINING set, "
        f"`F = mean loss + (alpha/2)||(w, b)||^2` (skdp's output-perturbation objective) for "
        f"every method; `F(0) - F*` is the trivial private output `w = 0`. Test metric on a "
        f"fixed {int(TEST_SIZE * 100)}% split (seed {SPLIT_SEED}). Peer: diffprivlib "
        f"{res['environment']['diffprivlib']['version']} `LogisticRegression(epsilon, "
        f"data_norm=1, C=1/(n alpha))` (pure DP). Time ratio: median fit time over the median "
        f"of non-private scikit-learn fits (`LogisticRegression(C=1/(n alpha))`, lbfgs, "
        f"default tol) timed right before each private fit; BLAS threads: "
        f"{cfg['blas_threads']}.",
        "",
    ]
    for ds, info in res["datasets"].items():
        if info["task"] != "classification":
            continue
        prob = res["problems"].get(f"{ds}|logistic|{cfg['alpha_logistic']}")
        if prob is None:
            continue
        sk = res["sklearn"][f"{ds}|logistic|{cfg['alpha_logistic']}"]["default"]
        L += [
            f"## {ds}: logistic regression, alpha = {cfg['alpha_logistic']:g}",
            "",
            f"n_train = {info['n_train']}, d = {info['n_features']}; F* = "
            f"{prob['optimum']['F_star']:.6f}, **F(0) - F* = {prob['excess_zero']:.3e}**; "
            f"test accuracy: optimum {prob['test_metric_optimum']:.3f}, sklearn "
            f"{sk['test_metric']:.3f} (its excess on F: {sk['excess_risk']:.1e}, time "
            f"{sk['median_seconds'] * 1e3:.1f} ms), w = 0 {prob['test_metric_zero']:.3f}. "
            f"skdp at epsilon = inf: excess {res['nonprivate_check'][ds]['excess_risk']:.1e}.",
            "",
            "| epsilon | ours d=0 excess | peer excess | ours / peer | ours d=1e-5 excess "
            "| acc ours d=0 | acc ours d=1e-5 | acc peer | ours worse than w=0 (seeds) "
            "| peer worse than w=0 (seeds) | time ours (ms) | time peer (ms) | ours / sklearn |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for eps in cfg["epsilons"]:
            o = _get(table, ds, "logistic", cfg["alpha_logistic"], "op", 0.0, eps)
            g = _get(table, ds, "logistic", cfg["alpha_logistic"], "op", 1e-5, eps)
            p = _get(table, ds, "logistic", cfg["alpha_logistic"], "peer", 0.0, eps)
            L.append(
                f"| {eps:g} | {_e(o['excess_median'])} | {_e(p['excess_median'])} | "
                f"{o['excess_median'] / p['excess_median']:.2f} | {_e(g['excess_median'])} | "
                f"{o['metric_median']:.3f} | {g['metric_median']:.3f} | "
                f"{p['metric_median']:.3f} | {o['fraction_worse_than_zero'] * o['n_runs']:.0f}"
                f"/{o['n_runs']} | {p['fraction_worse_than_zero'] * p['n_runs']:.0f}"
                f"/{p['n_runs']} | {o['time_median'] * 1e3:.1f} | {p['time_median'] * 1e3:.1f}"
                f" | {o['time_ratio']:.2f} |")
        L.append("")
    if res.get("verdicts_matched"):
        L += ["## Matched objective: skdp vs diffprivlib on the same objective (delta = 0)",
              "",
              "Both get the design `[x, 1] / sqrt(2)` (unit rows) with `fit_intercept=False`, so "
              "both minimise `mean loss + (alpha/2)||theta||^2` with every coordinate "
              "penalised (which is also what objective perturbation's privacy proof "
              "assumes). Cells: median excess risk ours / peer (ratio); w = 0 column: "
              "F(0) - F*.", "",
              "| data set | " + " | ".join(f"eps={e:g}" for e in cfg["epsilons"])
              + " | F(0)-F* |", "|---|" + "---|" * (len(cfg["epsilons"]) + 1)]
        for ds in res["verdicts_matched"]:
            cells = []
            for e in cfg["epsilons"]:
                o = _get(table, ds, MATCHED, cfg["alpha_logistic"], "op", 0.0, e)
                p = _get(table, ds, MATCHED, cfg["alpha_logistic"], "peer", 0.0, e)
                cells.append(f"{o['excess_median']:.2e} / {p['excess_median']:.2e} "
                             f"({o['excess_median'] / p['excess_median']:.2g})")
            prob = res["problems"][f"{ds}|{MATCHED}|{cfg['alpha_logistic']}"]
            L.append(f"| {ds} | " + " | ".join(cells) + f" | {prob['excess_zero']:.2e} |")
        L.append("")
    if res.get("verdicts_objp"):
        L += _objp_section(res)
    L += ["## Targets (delta = 0, headline alpha)", ""]
    for ds, v in res["verdicts"].items():
        eps = v["epsilons"]
        L.append(f"**{ds}**")
        L.append("")
        if "beats_peer" in v:
            L.append(
                f"- Lower median excess risk than the peer at every epsilon: "
                f"{_yn(v['target_beats_peer_every_eps'])} (ours / peer: "
                + _pairs(eps, v["ratio_ours_over_peer"]) + ").")
            if "ratio_ours_over_peer_unpenalised" in v:
                pu = res["problems"][f"{ds}|logistic|{cfg['alpha_logistic']}"][
                    "unpenalised_intercept"]
                L.append(
                    "- Same comparison on the objective the peer (and sklearn) minimises, "
                    "intercept unpenalised: ours / peer "
                    + ", ".join(f"{e:g}: {r:.2g}" for e, r in zip(
                        eps, v["ratio_ours_over_peer_unpenalised"], strict=True))
                    + f" (objective-mismatch floors: the unpenalised optimum has excess "
                    f"{pu['unpenalised_optimum_excess_on_ours']:.1e} on skdp's objective, "
                    f"skdp's optimum {pu['ours_optimum_excess_on_unpenalised']:.1e} on the "
                    f"unpenalised one).")
            L.append(
                "- Peer's median better than w = 0 at: "
                + (", ".join(f"{e:g}" for e, b in zip(eps, v["peer_median_beats_zero"],
                                                       strict=True) if b)
                   or "no epsilon") + ".")
            vm = res.get("verdicts_matched", {}).get(ds)
            if vm and "beats_peer" in vm:
                L.append(
                    "- Matched objective (table above): lower median excess risk than the "
                    f"peer at every epsilon: {_yn(vm['target_beats_peer_every_eps'])} (ours "
                    "/ peer: " + ", ".join(f"{e:g}: {r:.2g}" for e, r in zip(
                        eps, vm["ratio_ours_over_peer"], strict=True))
                    + f"); never worse than w = 0: "
                    f"{_yn(vm['target_never_worse_than_zero'])}; accuracy monotone: "
                    f"{_yn(vm['target_monotone'])}.")
        L.append(
            f"- Never worse than w = 0 (median): {_yn(v['target_never_worse_than_zero'])} "
            f"(median excess / (F(0) - F*): "
            + _pairs(eps, v["excess_over_zero"]) + ").")
        L.append(
            f"- Median test accuracy monotone in epsilon: {_yn(v['target_monotone'])} "
            f"(d=0: " + ", ".join(f"{a:.3f}" for a in v["metric_median"]) + ")"
            + ("" if v["target_monotone"] else " drops: " + ", ".join(
                f"{d['drop']:.3f} at eps={d['at_epsilon']:g}"
                + (" (within one test-set standard error)" if d["within_one_test_se"] else "")
                for d in v["monotone_violations"]))
            + (f"; d=1e-5: {_yn(v['target_monotone_gaussian'])}"
               if "target_monotone_gaussian" in v else "")
            + ("" if v.get("target_monotone_gaussian", True) else " (" + ", ".join(
                f"{d['drop']:.3f} at eps={d['at_epsilon']:g}"
                for d in v["monotone_violations_gaussian"]) + ")")
            + f"; test-accuracy standard error {v['test_accuracy_se']:.3f}.")
        if "time_ratio" in v:
            L.append(
                f"- Fit time within {TARGET_TIME_RATIO:g}x sklearn: every epsilon "
                f"{_yn(v['target_time_every_eps'])}, median over epsilons "
                f"{v['time_ratio_median_over_eps']:.2f}x (" + ", ".join(
                    f"{e:g}: {r:.2f}" for e, r in zip(eps, v["time_ratio"], strict=True)) + ").")
        L.append("")
    if res.get("boundary_rows_timing"):
        L += ["### Fit time: unit-norm rows vs rows scaled by (1 - 1e-9)", "",
              "Every unit-norm row lies on the `data_norm` sphere, so its clipping factor "
              "is 1 - 1e-12 (safety margin). skdp applies clipping factors lazily (to the "
              "products, not by copying rows), so boundary rows cost nothing extra; this "
              "table checks it. Same fits (delta = 0, eps = 1), interleaved:", "",
              "| data set | ours, unit rows (ms) | ours, rows x (1 - 1e-9) (ms) | sklearn (ms) "
              "| ratios to sklearn |", "|---|---|---|---|---|"]
        for ds, d in res["boundary_rows_timing"].items():
            L.append(f"| {ds} | {d['unit_rows_median'] * 1e3:.1f} | "
                     f"{d['inside_rows_median'] * 1e3:.1f} | {d['sklearn_median'] * 1e3:.1f} "
                     f"| {d['ratio_unit']:.2f} / {d['ratio_inside']:.2f} |")
        L.append("")
    if res.get("default_threads_timing"):
        L += ["### Fit time with the default BLAS thread pools", "",
              "| data set | ours (ms) | sklearn (ms) | ratio |", "|---|---|---|---|"]
        for ds, d in res["default_threads_timing"].items():
            L.append(f"| {ds} | {d['ours_median'] * 1e3:.1f} | {d['sklearn_median'] * 1e3:.1f}"
                     f" | {d['ratio']:.2f} |")
        L.append("")
    # alpha sweep
    if res.get("alpha_sweep_datasets"):
        L += ["## Sweep over alpha (delta = 0): median test accuracy / median excess risk",
              "", "The headline uses the public default; this sweep only shows the "
              "trade-off (choosing alpha from it would not be private).", "",
              "| data set | alpha | method | " + " | ".join(f"eps={e:g}" for e in
                                                        cfg["epsilons"]) + " | F(0)-F* | "
              "non-private acc |", "|---|---|---|" + "---|" * (len(cfg["epsilons"]) + 2)]
        for ds in res["alpha_sweep_datasets"]:
            for a in cfg["alpha_sweep"]:
                prob = res["problems"].get(f"{ds}|logistic|{a}")
                if prob is None:
                    continue
                for method in ("op", "peer"):
                    cells = []
                    for e in cfg["epsilons"]:
                        r = _get(table, ds, "logistic", a, method, 0.0, e)
                        cells.append("" if r is None else
                                     f"{r['metric_median']:.3f} / {r['excess_median']:.1e}")
                    L.append(f"| {ds} | {a:g} | {'ours' if method == 'op' else 'peer'} | "
                             + " | ".join(cells) + f" | {prob['excess_zero']:.2e} | "
                             f"{prob['test_metric_optimum']:.3f} |")
        L.append("")
    # regression
    for key, prob in res["problems"].items():
        ds, model, a = key.split("|")
        if model != "ridge" or float(a) != cfg["alpha_ridge"]:
            continue
        sk = res["sklearn"][key]
        a = float(a)
        L += [f"## {ds}: ridge regression (DPLinearRegression), alpha = {a:g}, y_bound = 1",
              "",
              f"n_train = {prob['n_train']}; test R^2: skdp optimum "
              f"{prob['test_metric_optimum']:.3f}, sklearn `Ridge(alpha=n*alpha)` on the "
              f"augmented design without intercept (exactly skdp's objective) "
              f"{sk['exact_objective']['test_metric']:.3f}, standard `Ridge(alpha=n*alpha)` "
              f"(intercept unpenalised) {sk['default']['test_metric']:.3f} (excess on F "
              f"{sk['default']['excess_risk']:.1e}), OLS (the peer's non-private target) "
              f"{sk['ols']['test_metric']:.3f}, w = 0 {prob['test_metric_zero']:.3f}. "
              f"F(0) - F* = {prob['excess_zero']:.3e}.", "",
              "| epsilon | ours d=0 R^2 | ours d=1e-5 R^2 | peer R^2 | ours d=0 excess | "
              "ours d=1e-5 excess | peer excess | time ours (ms) | time Ridge (ms) |",
              "|---|---|---|---|---|---|---|---|---|"]
        for e in cfg["epsilons"]:
            o = _get(table, ds, "ridge", a, "op", 0.0, e)
            g = _get(table, ds, "ridge", a, "op", 1e-5, e)
            p = _get(table, ds, "ridge", a, "peer", 0.0, e)
            if o is None:
                continue
            L.append(f"| {e:g} | {o['metric_median']:.3f} | {g['metric_median']:.3f} | "
                     f"{p['metric_median']:.3g} | {_e(o['excess_median'])} | "
                     f"{_e(g['excess_median'])} | {_e(p['excess_median'])} | "
                     f"{o['time_median'] * 1e3:.1f} | {o['sklearn_time_median'] * 1e3:.1f} |")
        L.append("")
        sweep = [x for x in cfg["alpha_sweep_ridge"] if x != a]
        if sweep:
            L += ["Other alphas (delta = 0, not the headline): median test R^2 of ours:", ""]
            for x in sweep:
                px = res["problems"].get(f"{ds}|ridge|{x}")
                if px is None:
                    continue
                cells = [f"{_get(table, ds, 'ridge', x, 'op', 0.0, e)['metric_median']:.3f}"
                         for e in cfg["epsilons"]]
                L.append(f"- alpha = {x:g} (optimum R^2 {px['test_metric_optimum']:.3f}): "
                         + ", ".join(f"eps={e:g}: {c}" for e, c in zip(cfg["epsilons"],
                                                                      cells, strict=True)))
            L.append("")
    # SVC
    svc_keys = [k for k in res["problems"] if k.split("|")[1].startswith("svc")]
    if svc_keys:
        L += [f"## Linear SVM (DPLinearSVC), alpha = {cfg['alpha_svc']:g}, delta = 0", "",
              "Baseline: `LinearSVC(loss=\"hinge\", C=1/(n alpha), intercept_scaling=1)` "
              "(the same hinge objective, intercept penalised). Cells: median test accuracy"
              " / median excess risk (against the optimum of the loss fitted).", "",
              "| data set | loss | " + " | ".join(f"eps={e:g}" for e in cfg["epsilons"])
              + " | F(0)-F* | optimum acc | sensitivity | time ours (ms) | time LinearSVC "
              "(ms) |", "|---|---|" + "---|" * (len(cfg["epsilons"]) + 5)]
        for key in svc_keys:
            ds, model, a = key.split("|")
            prob = res["problems"][key]
            cells, times, sks = [], [], []
            for e in cfg["epsilons"]:
                r = _get(table, ds, model, float(a), "op", 0.0, e)
                cells.append("" if r is None else
                             f"{r['metric_median']:.3f} / {r['excess_median']:.1e}")
                if r is not None:
                    times.append(r["time_median"])
                    sks.append(r.get("sklearn_time_median", math.nan))
            sens = res["svc_sensitivity"].get(key, {})
            L.append(f"| {ds} | {model.removeprefix('svc_')} | " + " | ".join(cells)
                     + f" | {prob['excess_zero']:.2e} | {prob['test_metric_optimum']:.3f} | "
                     f"{sens.get('sensitivity', math.nan):.3g} (minimiser "
                     f"{sens.get('minimizer_sensitivity', math.nan):.3g}) | "
                     f"{np.median(times) * 1e3:.1f} | {np.nanmedian(sks) * 1e3:.1f} |")
        L.append("")
    # adversarial
    if res.get("adversarial"):
        L += ["## Adversarial training: robust accuracy vs privacy vs runtime", "",
              "`DPLogisticRegression(solver=\"output_perturbation\", alpha="
              f"{cfg['alpha_logistic']:g}, delta=0, adversarial_radius=r, adversarial_norm=p)`."
              " Robust accuracy = test accuracy under the worst-case perturbation of norm "
              "<= r (closed form: `s (<w, x> + b) - r ||w||_dual > 0`), in the preprocessed "
              "unit-norm feature space, at the training (norm, radius). Cells: median clean / "
              "robust accuracy; eps = inf is the non-private adversarial fit.", "",
              "Certified radius: `default` = skdp's default for non-smooth objectives "
              "(worst case 1e5 subgradient steps); `tight` = the public radius 0.05 Delta_F "
              "(as for smooth objectives) via `OutputPerturbation(certified_radius=..., "
              "max_iter=1e10)`: every fit here was certified by L-BFGS, but an uncertified "
              "fit would run the sure fallback's step count (column `worst-case steps`).", "",
              "| data set | radius variant | norm | r | " + " | ".join(f"eps={e:g}" for e in
                                                                  ADV_EPSILONS)
              + " | median fit time (ms) | sensitivity (minimiser) | worst-case steps |",
              "|---|---|---|---|" + "---|" * (len(ADV_EPSILONS) + 3)]
        for row in res["adversarial_summary"]:
            cells = [f"{c['clean']:.3f} / {c['robust']:.3f}" if c else ""
                     for c in row["cells"]]
            steps = "" if row["radius"] == 0 else f"{row['fallback_steps']:.2g}"
            L.append(f"| {row['dataset']} | {row['variant']} | l{row['norm']} | "
                     f"{row['radius']:g} | " + " | ".join(cells)
                     + f" | {row['time_median'] * 1e3:.1f} | {row['sensitivity']:.3g} "
                     f"({row['minimizer_sensitivity']:.3g}) | {steps} |")
        L.append("")
    env = res["environment"]
    dirty = " (plus uncommitted changes)" if env["skdp_has_uncommitted_changes"] else ""
    via = ("its class" if env["diffprivlib"]["logistic_regression_class_constructible"]
           else "its `_logistic_regression_path`, see peer_objective_perturbation.py")
    L += [f"Total wall time {res['total_seconds'] / 60:.1f} min. skdp commit "
          f"{env['git_commit']}{dirty}; "
          f"diffprivlib {env['diffprivlib']['version']} (via {via}); "
          f"{env['platform']}, {env['cpu_count']} CPUs, numpy {env['numpy']}, scipy "
          f"{env['scipy']}, scikit-learn {env['scikit-learn']}, {env['date']}.", ""]
    path.write_text("\n".join(L))


def write_plots(stem, res):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cfg, table = res["config"], res["summary"]
    panels = [(ds, "logistic", cfg["alpha_logistic"]) for ds, i in res["datasets"].items()
              if i["task"] == "classification"]
    panels += [(ds, "ridge", cfg["alpha_ridge"]) for ds, i in res["datasets"].items()
               if i["task"] == "regression"]
    panels = [p for p in panels if f"{p[0]}|{p[1]}|{p[2]}" in res["problems"]]
    fig, axes = plt.subplots(2, len(panels), figsize=(4.2 * len(panels), 7.4), squeeze=False)
    styles = [("op", 0.0, "ours, delta=0", "C0", "o"), ("op", 1e-5, "ours, delta=1e-5", "C2", "s"),
              ("peer", 0.0, "diffprivlib (peer), delta=0", "C3", "^")]
    eps = np.array(cfg["epsilons"])
    for j, (ds, model, a) in enumerate(panels):
        prob = res["problems"][f"{ds}|{model}|{a}"]
        for row, field in ((0, "excess"), (1, "metric")):
            ax = axes[row, j]
            for method, delta, label, color, marker in styles:
                rs = [_get(table, ds, model, a, method, delta, e) for e in eps]
                if any(r is None for r in rs):
                    continue
                med = np.array([r[f"{field}_median"] for r in rs])
                q25 = np.array([r[f"{field}_q25"] for r in rs])
                q75 = np.array([r[f"{field}_q75"] for r in rs])
                # Off-scale values (the peer can diverge) are drawn at the axis limit.
                if field == "excess":
                    top = 100.0 * prob["excess_zero"]
                    med, q25, q75 = (np.minimum(v, top) for v in (med, q25, q75))
                    lo = np.minimum(med - q25, 0.95 * med)
                elif model == "ridge":
                    med, q25, q75 = (np.maximum(v, -1.0) for v in (med, q25, q75))
                    lo = med - q25
                else:
                    lo = med - q25
                ax.errorbar(eps, med, yerr=[lo, q75 - med], color=color, marker=marker,
                            capsize=2, label=label)
            if field == "excess":
                ax.axhline(prob["excess_zero"], color="k", ls="--", lw=1, label="w = 0")
                ax.set_yscale("log")
                ax.set_ylim(top=200.0 * prob["excess_zero"])
                ax.set_ylabel("excess empirical risk F(w) - F*")
                ax.set_title(f"{ds}, {model}, alpha={a:g}\n(values above 100 (F(0) - F*) "
                             "drawn at 100 (F(0) - F*))", fontsize=8)
            else:
                ax.axhline(prob["test_metric_optimum"], color="gray", ls=":", lw=1,
                           label="non-private optimum")
                ax.axhline(prob["test_metric_zero"], color="k", ls="--", lw=1, label="w = 0")
                ax.set_ylabel("test R^2 (values < -1 drawn at -1)" if model == "ridge"
                              else "test accuracy")
                if model == "ridge":
                    ax.set_ylim(-1.05, max(0.1, prob["test_metric_optimum"] + 0.05))
            ax.set_xscale("log")
            ax.set_xticks(list(eps), [f"{e:g}" for e in eps])
            ax.set_xlabel("epsilon")
            ax.grid(True, which="both", alpha=0.3)
            if j == 0:
                ax.legend(fontsize=7)
    fig.suptitle(f"Output perturbation vs objective perturbation; medians over "
                 f"{len(cfg['seeds'])} seeds, bars = IQR", fontsize=10)
    fig.tight_layout()
    fig.savefig(RESULTS / f"{stem}.png", dpi=110)
    plt.close(fig)

    if not res.get("adversarial_summary"):
        return
    dsets = list(dict.fromkeys(r["dataset"] for r in res["adversarial_summary"]))
    fig, axes = plt.subplots(len(dsets), 3, figsize=(13, 3.6 * len(dsets)), squeeze=False)
    adv_eps = [e for e in ADV_EPSILONS if math.isfinite(e)]
    for i, ds in enumerate(dsets):
        rows = [r for r in res["adversarial_summary"] if r["dataset"] == ds]
        for k, norm in enumerate((2, "inf")):
            ax = axes[i, k]
            colors = {}
            for r in rows:
                if r["norm"] != norm and r["radius"] != 0:
                    continue
                pts = [(e, c["robust"]) for c, e in zip(r["cells"], ADV_EPSILONS, strict=True)
                       if math.isfinite(e) and c]
                xs, robust = [e for e, _ in pts], [v for _, v in pts]
                tight = r["variant"] == "tight"
                line = ax.plot(xs, robust, marker="s" if tight else "o",
                               ls="--" if tight else "-", color=colors.get(r["radius"]),
                               label=f"r={r['radius']:g}" + (" (tight radius)" if tight
                                                             else ""))[0]
                colors[r["radius"]] = line.get_color()
                if not tight:
                    ax.axhline(r["cells"][-1]["robust"], color=line.get_color(), ls=":", lw=1)
            ax.set_xscale("log")
            ax.set_xticks(adv_eps, [f"{e:g}" for e in adv_eps])
            ax.minorticks_off()
            ax.set_xlabel("epsilon (dotted: non-private)")
            ax.set_ylabel(f"robust test accuracy (l{norm}, r = training radius)")
            ax.set_title(f"{ds}: l{norm} adversarial training", fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        ax = axes[i, 2]
        for norm, marker in ((2, "o"), ("inf", "s")):
            for variant, ls in (("default", "-"), ("tight", "--")):
                rs = sorted((r for r in rows if (r["norm"] == norm or r["radius"] == 0)
                             and (r["variant"] == variant or r["radius"] == 0)),
                            key=lambda r: r["radius"])
                if len(rs) > 1:
                    ax.plot([r["radius"] for r in rs], [r["time_median"] * 1e3 for r in rs],
                            marker=marker, ls=ls, label=f"l{norm}, {variant} radius")
        ax.set_xlabel("training radius r")
        ax.set_ylabel("median fit time (ms)")
        ax.set_title(f"{ds}: runtime", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / f"{stem}_robust.png", dpi=110)
    plt.close(fig)


def summarise_adversarial(runs):
    out = []
    keys = list(dict.fromkeys((r["dataset"], r["variant"], r["train_norm"], r["train_radius"])
                              for r in runs))
    for ds, variant, norm, radius in keys:
        rows = [r for r in runs if (r["dataset"], r["variant"], r["train_norm"],
                                    r["train_radius"]) == (ds, variant, norm, radius)]
        cells = []
        for e in ADV_EPSILONS:
            er = [r for r in rows if r["epsilon"] == e]
            cells.append({"clean": float(np.median([r["clean_accuracy"] for r in er])),
                          "robust": float(np.median([r["robust_accuracy"] for r in er])),
                          "robust_grid": {k: float(np.median([r["robust_accuracy_grid"][k]
                                                              for r in er]))
                                          for k in er[0]["robust_accuracy_grid"]}}
                         if er else None)
        priv = [r for r in rows if math.isfinite(r["epsilon"])]
        out.append({"dataset": ds, "variant": variant, "norm": norm, "radius": radius,
                    "cells": cells, "fallback_steps": priv[0]["fallback_steps"],
                    "time_median": float(np.median([r["fit_seconds"] for r in priv])),
                    "sensitivity": priv[0]["sensitivity"],
                    "minimizer_sensitivity": priv[0]["minimizer_sensitivity"],
                    "certified_radius": priv[0]["certified_radius"]})
    return out


# ---------------------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------------------
def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        value = float(value)
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def environment(blas_threads):
    def git(*args):
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, check=False,
                                  cwd=Path(__file__).resolve().parent).stdout.strip() or None
        except OSError:
            return None

    from importlib import metadata

    def version(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "unknown"

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(), "platform": platform.platform(),
        "cpu_count": os.cpu_count(), "numpy": np.__version__, "scipy": scipy.__version__,
        "scikit-learn": sklearn.__version__, "dp-accounting": version("dp-accounting"),
        "skdp": getattr(skdp, "__version__", version("skdp")),
        "git_commit": git("rev-parse", "HEAD"),
        "skdp_has_uncommitted_changes": bool(git("status", "--porcelain", "--", "../skdp")),
        "diffprivlib": diffprivlib_info(),
        "blas_threads_during_benchmark": blas_threads,
        "blas": [{k: p.get(k) for k in ("internal_api", "version", "num_threads")}
                 for p in threadpool_info()],
    }


def default_threads_timing(datasets, problems, repeats):
    """Ours (delta=0, eps=1) vs scikit-learn with the DEFAULT BLAS thread pools."""
    out = {}
    for ds, _info in datasets.items():
        key = (ds, "logistic", ALPHA_LOGISTIC)
        if key not in problems:
            continue
        prob = problems[key]
        ours, sk = [], []
        for seed in range(repeats):
            sk.append(fit_sklearn("logistic", prob.X, prob.y, ALPHA_LOGISTIC)[1])
            ours.append(fit_skdp("logistic", prob.X, prob.y, 1.0, 0.0, ALPHA_LOGISTIC,
                                 seed)[1])
        out[ds] = {"ours_median": float(np.median(ours)),
                   "sklearn_median": float(np.median(sk)),
                   "ratio": float(np.median(ours) / np.median(sk)), "repeats": repeats}
        _log(f"  default BLAS threads {ds:14s} ours {out[ds]['ours_median'] * 1e3:.1f} ms, "
             f"sklearn {out[ds]['sklearn_median'] * 1e3:.1f} ms, ratio {out[ds]['ratio']:.2f}")
    return out


def boundary_rows_timing(problems, repeats):
    """Fit time on unit-norm rows vs the same rows times ``1 - 1e-9``.

    skdp's ``Problem.rows`` returns ``X`` itself only when no row is rescaled; a row whose
    norm is at least ``data_norm (1 - 1e-12)`` gets a scale just below 1, and then every
    objective/gradient evaluation multiplies the whole matrix by the scales again (two
    copies of ``X`` per evaluation). Rows scaled to unit norm all sit on that boundary.
    This diagnostic times both (interleaved) to show the cost.
    """
    out = {}
    for (ds, model, alpha), prob in problems.items():
        if model != "logistic" or alpha != ALPHA_LOGISTIC:
            continue
        inside = prob.X * (1.0 - 1e-9)
        t_unit, t_inside, t_sk = [], [], []
        for seed in range(repeats):
            t_sk.append(fit_sklearn("logistic", prob.X, prob.y, alpha)[1])
            t_unit.append(fit_skdp("logistic", prob.X, prob.y, 1.0, 0.0, alpha, seed)[1])
            t_inside.append(fit_skdp("logistic", inside, prob.y, 1.0, 0.0, alpha, seed)[1])
        out[ds] = {"unit_rows_median": float(np.median(t_unit)),
                   "inside_rows_median": float(np.median(t_inside)),
                   "sklearn_median": float(np.median(t_sk)),
                   "ratio_unit": float(np.median(t_unit) / np.median(t_sk)),
                   "ratio_inside": float(np.median(t_inside) / np.median(t_sk)),
                   "repeats": repeats}
        _log(f"  {ds:14s} unit rows {out[ds]['unit_rows_median'] * 1e3:.1f} ms, rows x "
             f"(1 - 1e-9) {out[ds]['inside_rows_median'] * 1e3:.1f} ms, sklearn "
             f"{out[ds]['sklearn_median'] * 1e3:.1f} ms")
    return out


# ---------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: covertype n=20000, 2 seeds, results *_quick.*")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (10)")
    parser.add_argument("--covertype-n", type=int, default=None,
                        help="rows generated for the covertype-like data (200000; 75%% train)")
    parser.add_argument("--blas-threads", type=int, default=1,
                        help="BLAS/OpenMP threads during the benchmark (default 1; see README)")
    parser.add_argument("--output", type=str, default=None)
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite the markdown and plots from the existing JSON")
    args = parser.parse_args(argv)
    quick = args.quick
    n_seeds = args.seeds or (2 if quick else 10)
    seeds = list(range(n_seeds))
    few_seeds = seeds[: min(3, n_seeds)]
    covertype_n = args.covertype_n or (20000 if quick else 200000)
    stem = args.output or ("output_perturbation_quick" if quick else "output_perturbation")
    if args.report_only:
        res = json.loads((RESULTS / f"{stem}.json").read_text())
        _restore_inf(res)
        write_markdown(RESULTS / f"{stem}.md", res)
        write_plots(stem, res)
        print((RESULTS / f"{stem}.md").read_text())
        return res
    # Fixed seeds are the point of a benchmark; skdp rightly warns about them.
    warnings.filterwarnings("ignore", category=PrivacyLeakWarning)
    t_start = time.perf_counter()
    env = environment(args.blas_threads)
    _log(f"skdp {env['skdp']} ({env['git_commit']}), diffprivlib "
         f"{env['diffprivlib']['version']}, BLAS threads {args.blas_threads}")
    if "DPLinearRegression" not in skdp.__all__:
        _log("  (skdp.DPLinearRegression not available: regression skipped)")
    if "DPLinearSVC" not in skdp.__all__:
        _log("  (skdp.DPLinearSVC not available: SVM skipped)")

    datasets = load_datasets(covertype_n)
    for name, info in datasets.items():
        _log(f"Data {name}: {info['n_train']} train / {info['n_test']} test x "
             f"{info['n_features']}, max row norm {info['max_row_norm']:.6f}")

    problems, runs, sklearn_ref, nonprivate = {}, [], {}, {}
    svc_sensitivity, adv_runs = {}, []

    def problem(ds, model, alpha):
        key = (ds, model, alpha)
        if key not in problems:
            prob = Problem(ds, datasets[ds], model, alpha)
            problems[key] = prob
            o = prob.optimum
            _log(f"  optimum {ds}/{model}/alpha={alpha:g}: F* = {o['F_star']:.10f} "
                 f"({o['method']}, grad {o.get('grad_norm', float('nan')):.1e}), F(0)-F* = "
                 f"{prob.excess_zero:.3e}, test metric {prob.metric_star:.3f}")
            sklearn_ref["|".join(map(str, key))] = sklearn_reference(prob, 3)
        return problems[key]

    classification = [d for d, i in datasets.items() if i["task"] == "classification"]
    with threadpool_limits(limits=args.blas_threads):
        _log("Logistic regression, headline alpha:")
        for ds in classification:
            prob = problem(ds, "logistic", ALPHA_LOGISTIC)
            nonprivate[ds] = skdp_nonprivate_check(prob)
            _log(f"  skdp epsilon=inf: excess {nonprivate[ds]['excess_risk']:.2e}, distance "
                 f"{nonprivate[ds]['distance_to_optimum']:.2e} (certified radius "
                 f"{nonprivate[ds]['certified_radius']:.2e})")
            runs += run_private_grid(prob, EPSILONS, seeds, with_objp=True)

        _log("Matched objective: design [x, 1]/sqrt(2), fit_intercept=False for both:")
        for ds in classification:
            runs += run_private_grid(problem(ds, MATCHED, ALPHA_LOGISTIC), EPSILONS, seeds,
                                     deltas=(0.0,), interleave=False, tag="matched ",
                                     with_objp=True)

        _log("Alpha sweep (delta = 0):")
        sweep_sets = classification
        for ds in sweep_sets:
            sw_seeds = few_seeds if ds == "covertype_like" else seeds
            for a in ALPHA_SWEEP:
                if a == ALPHA_LOGISTIC:
                    continue
                runs += run_private_grid(problem(ds, "logistic", a), EPSILONS, sw_seeds,
                                         deltas=(0.0,), interleave=False, tag="sweep ")

        if "DPLinearRegression" in skdp.__all__:
            _log("Ridge regression (diabetes):")
            for a in ALPHA_SWEEP_RIDGE:
                prob = problem("diabetes", "ridge", a)
                headline = a == ALPHA_RIDGE
                runs += run_private_grid(prob, EPSILONS, seeds,
                                         deltas=DELTAS if headline else (0.0,),
                                         with_peer=headline, interleave=headline)

        if "DPLinearSVC" in skdp.__all__:
            _log("Linear SVM (delta = 0):")
            for ds in classification:
                for model in ("svc_hinge", "svc_smoothed_hinge"):
                    prob = problem(ds, model, ALPHA_SVC)
                    sv_seeds = few_seeds if ds == "covertype_like" else seeds
                    r = run_private_grid(prob, EPSILONS, sv_seeds, deltas=(0.0,),
                                         with_peer=False, interleave=True)
                    runs += r
                    svc_sensitivity["|".join(map(str, (ds, model, ALPHA_SVC)))] = {
                        k: r[0][k] for k in ("sensitivity", "minimizer_sensitivity",
                                             "certified_radius")}
                    nonprivate[f"{ds}|{model}"] = skdp_nonprivate_check(prob)

        _log("Diagnostic: unit-norm rows vs rows just inside the data_norm ball:")
        boundary_timing = boundary_rows_timing(problems, 3 if quick else 7)

        _log("Adversarial training (logistic, delta = 0):")
        for ds in classification:
            big = ds == "covertype_like"  # ~2 s a fit: fewer seeds and epsilons
            adv_runs += run_adversarial(problem(ds, "logistic", ALPHA_LOGISTIC),
                                        few_seeds if big else seeds,
                                        ADV_EPSILONS_LARGE if big else ADV_EPSILONS,
                                        tight=ds in TIGHT_RADIUS_DATASETS)

    _log("Timing with the default BLAS thread pools:")
    default_timing = default_threads_timing(datasets, problems, 3 if quick else 7)

    problems_s = {"|".join(map(str, k)): p for k, p in problems.items()}
    table = summarise(runs, problems)
    res = {
        "config": {
            "epsilons": list(EPSILONS), "deltas": list(DELTAS), "seeds": seeds,
            "seeds_covertype_sweeps": few_seeds, "alpha_logistic": ALPHA_LOGISTIC,
            "alpha_svc": ALPHA_SVC, "alpha_ridge": ALPHA_RIDGE,
            "alpha_sweep": list(ALPHA_SWEEP), "alpha_sweep_ridge": list(ALPHA_SWEEP_RIDGE),
            "data_norm": DATA_NORM, "fit_intercept": True, "test_size": TEST_SIZE,
            "split_seed": SPLIT_SEED, "covertype_n_generated": covertype_n,
            "target_time_ratio": TARGET_TIME_RATIO, "blas_threads": args.blas_threads,
            "adversarial_radii": {("inf" if p == math.inf else "2"): list(r)
                                  for p, r in ADV_RADII.items()},
            "adversarial_epsilons": list(ADV_EPSILONS), "quick": quick,
        },
        "datasets": {k: {kk: vv for kk, vv in v.items() if kk != "data"}
                     for k, v in datasets.items()},
        "problems": {k: p.describe() for k, p in problems_s.items()},
        "sklearn": sklearn_ref,
        "nonprivate_check": nonprivate,
        "svc_sensitivity": svc_sensitivity,
        "summary": table,
        "verdicts": verdicts(table, classification, "logistic", ALPHA_LOGISTIC, EPSILONS,
                             problems),
        "verdicts_matched": verdicts(table, classification, MATCHED, ALPHA_LOGISTIC,
                                     EPSILONS, problems),
        "verdicts_objp": verdicts(table, classification, "logistic", ALPHA_LOGISTIC,
                                  EPSILONS, problems, method="objp"),
        "verdicts_objp_matched": verdicts(table, classification, MATCHED, ALPHA_LOGISTIC,
                                          EPSILONS, problems, method="objp"),
        "verdicts_objp_threshold": verdicts(table, classification, "logistic",
                                            ALPHA_LOGISTIC, EPSILONS, problems,
                                            method="objp_thr"),
        "alpha_sweep_datasets": classification,
        "adversarial": adv_runs,
        "adversarial_summary": summarise_adversarial(adv_runs),
        "default_threads_timing": default_timing,
        "boundary_rows_timing": boundary_timing,
        "runs": runs,
    }
    res["total_seconds"] = time.perf_counter() - t_start
    res["environment"] = env
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_json(RESULTS / f"{stem}.json", _jsonable(res))
    res = json.loads((RESULTS / f"{stem}.json").read_text())
    _restore_inf(res)
    write_markdown(RESULTS / f"{stem}.md", res)
    write_plots(stem, res)
    _log(f"Wrote {RESULTS / stem}.{{json,md,png}} and {stem}_robust.png in "
         f"{res['total_seconds'] / 60:.1f} min")
    print((RESULTS / f"{stem}.md").read_text())
    return res


def write_json(path, res):
    """Indented JSON, except one line per run (diffable, a third of the indented size)."""
    res = dict(res)
    lines = {k: ",\n".join(json.dumps(r, separators=(",", ":")) for r in res.pop(k))
             for k in ("runs", "adversarial")}
    text = json.dumps(res, indent=1)
    text = (text[: text.rindex("}")].rstrip() + ',\n "runs": [\n' + lines["runs"]
            + '\n],\n "adversarial": [\n' + lines["adversarial"] + "\n]\n}\n")
    path.write_text(text)


def _restore_inf(obj):
    """The JSON stores non-finite floats as strings; turn them back for the reports."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if v in ("inf", "-inf", "nan") and k not in ("train_norm", "norm"):
                obj[k] = float(v)
            else:
                _restore_inf(v)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if v in ("inf", "-inf", "nan"):
                obj[i] = float(v)
            else:
                _restore_inf(v)


if __name__ == "__main__":
    main()
