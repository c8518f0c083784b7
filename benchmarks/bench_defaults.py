"""Issue 19: every estimator with its defaults on raw bundled data.

Median over seeds (70/30 splits), epsilon = 1 (and 5 for diabetes), every parameter at
its default: ``data_norm="auto"`` (and ``y_bound="auto"``) estimate the bounds privately
inside the budget. Baselines in the same run: scikit-learn (non-private, standardized),
the majority class / the mean, and the previous defaults (``data_norm=1``,
``y_bound=1``). References: the fit with the SAME bound rule computed exactly (not
private) and the whole epsilon, which no private bound estimate can beat.

Run: ``python benchmarks/bench_defaults.py [--quick]``; results in
``benchmarks/results/defaults[_quick].{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp import (
    DPHuberRegressor,
    DPLasso,
    DPLinearRegression,
    DPLinearSVC,
    DPLogisticRegression,
    PrivacyLeakWarning,
    privacy_spent,
)
from skdp._demo import PUBLIC_FEATURE_RANGES
from skdp.preprocessing import DPStandardScaler

RESULTS = Path(__file__).parent / "results"
PUBLIC = (PUBLIC_FEATURE_RANGES[:, 0], PUBLIC_FEATURE_RANGES[:, 1])


def exact_bounds_regression(eps):
    """The default's bound rule (2 x median) computed exactly, all of epsilon on the fit."""

    class Exact:
        def fit(self, X, y):
            c = float(np.median(y))
            b = 2 * float(np.median(np.abs(y - c)))
            d = 2 * float(np.median(np.linalg.norm(X, axis=1)))
            self.c, self.b = c, b
            self.m = DPLinearRegression(epsilon=eps, data_norm=d, y_bound=b,
                                        alpha=1e-2 * d * d).fit(X, y - c)
            return self

        def score(self, X, y):
            pred = np.clip(self.m.predict(X), -self.b, self.b) + self.c
            return 1 - np.mean((pred - y) ** 2) / np.var(y)

    return Exact()


def tasks(eps: float):
    clf = {
        "DPLogisticRegression()": lambda: DPLogisticRegression(epsilon=eps),
        "DPLinearSVC()": lambda: DPLinearSVC(epsilon=eps),
        "DPStandardScaler(0.3, public bounds) + DPLogisticRegression(0.7)":
            lambda: make_pipeline(DPStandardScaler(0.3 * eps, bounds=PUBLIC),
                                  DPLogisticRegression(0.7 * eps)),
        "DPStandardScaler(0.3) + DPLogisticRegression(0.7)":
            lambda: make_pipeline(DPStandardScaler(0.3 * eps),
                                  DPLogisticRegression(0.7 * eps)),
        "previous default DPLogisticRegression(data_norm=1)":
            lambda: DPLogisticRegression(epsilon=eps, data_norm=1.0),
        "scikit-learn LogisticRegression (standardized, not private)":
            lambda: make_pipeline(StandardScaler(), LogisticRegression()),
        "majority class": None,
    }
    reg = {
        "DPLinearRegression()": lambda: DPLinearRegression(epsilon=eps),
        "DPLasso()": lambda: DPLasso(epsilon=eps),
        "DPHuberRegressor()": lambda: DPHuberRegressor(epsilon=eps),
        "previous default DPLinearRegression(data_norm=1, y_bound=1, delta=0, "
        "output_perturbation, alpha=1)":
            lambda: DPLinearRegression(epsilon=eps, delta=0.0, solver="output_perturbation",
                                       alpha=1.0, data_norm=1.0, y_bound=1.0),
        "same bound rule computed exactly (not private), all of epsilon on the fit":
            lambda: exact_bounds_regression(eps),
        "scikit-learn LinearRegression (not private)": lambda: LinearRegression(),
        "mean": None,
    }
    return clf, reg


def run(seeds, epsilons) -> dict:
    Xb, yb = load_breast_cancer(return_X_y=True)
    Xd, yd = load_diabetes(return_X_y=True)
    out = {}
    for eps in epsilons:
        clf, reg = tasks(eps)
        for data, (X, y), models in (("breast_cancer", (Xb, yb), clf),
                                     ("diabetes", (Xd, yd), reg)):
            for name, make in models.items():
                scores, spent, times = [], [], []
                for seed in seeds:
                    X_tr, X_te, y_tr, y_te = train_test_split(
                        X, y, test_size=0.3, random_state=seed,
                        stratify=y if data == "breast_cancer" else None)
                    if make is None:
                        if data == "breast_cancer":
                            major = np.bincount(y_tr).argmax()
                            scores.append(float(np.mean(y_te == major)))
                        else:
                            scores.append(1 - np.mean((y_te - y_tr.mean()) ** 2)
                                          / np.var(y_te))
                        continue
                    model = make()
                    start = time.perf_counter()
                    model.fit(X_tr, y_tr)
                    times.append(time.perf_counter() - start)
                    scores.append(float(model.score(X_te, y_te)))
                    try:
                        spent.append(list(privacy_spent(model)))
                    except (TypeError, AttributeError):
                        pass
                out.setdefault(f"{data}, epsilon={eps:g}", []).append({
                    "model": name, "median": statistics.median(scores), "scores": scores,
                    "spent_max": (max(spent, key=lambda s: s[0]) if spent else None),
                    "fit_seconds_median": statistics.median(times) if times else None})
    return out


def markdown(result: dict) -> str:
    lines = [f"# Defaults on raw bundled data ({result['profile']})", "",
             f"Median of {result['n_seeds']} seeds (70/30 splits); test accuracy "
             "(breast cancer) or R^2 (diabetes). Generated by "
             "`benchmarks/bench_defaults.py`.", ""]
    for task, rows in result["tasks"].items():
        lines += [f"## {task}", "", "| model | median | max (epsilon, delta) spent |",
                  "|---|---|---|"]
        for r in rows:
            spent = ("" if r["spent_max"] is None
                     else f"({r['spent_max'][0]:.3f}, {r['spent_max'][1]:.2g})")
            lines.append(f"| {r['model']} | {r['median']:.3f} | {spent} |")
        lines.append("")
    lines.append(f"Machine: {result['machine']}.")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    seeds = list(range(3 if args.quick else 21))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        result = {"profile": "quick" if args.quick else "full", "n_seeds": len(seeds),
                  "tasks": run(seeds, (1.0, 5.0)),
                  "machine": f"{platform.machine()}, Python {sys.version.split()[0]}, "
                             f"scikit-learn {sklearn.__version__}"}
    name = "defaults_quick" if args.quick else "defaults"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1))
    (RESULTS / f"{name}.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
