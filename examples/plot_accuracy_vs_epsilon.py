"""
Accuracy against epsilon, one solver per family
===============================================

How much accuracy does privacy cost? This example fits
:class:`~skdp.linear_model.DPLogisticRegression` on scikit-learn's breast-cancer data
with one solver of each paper family and a range of privacy budgets epsilon
(delta = 1e-5), and draws scikit-learn's non-private
:class:`~sklearn.linear_model.LogisticRegression` as a line.

- ``"gd"``: DP-GD (Wang, Ye & Xu 2017), what the default ``solver="auto"`` runs on data
  this small;
- ``"output_perturbation"``: a certified non-private solve plus one noise draw
  (Lowy & Razaviyayn);
- ``"frank_wolfe"``: private Frank-Wolfe over an l1 ball (Asi, Feldman, Koren &
  Talwar 2021);
- ``"objective_perturbation"``: a random linear term added to the objective
  (Su, Zhao & Wang).

Each point is the mean of a few noise draws; the band is one standard deviation. The
right panel is the excess empirical risk: the training objective of the private model
minus that of the exact (non-private) minimiser of the same objective on the same
(clipped) rows.
"""

# %%
# Public preprocessing
# --------------------
# Private fits need public bounds. The feature ranges published with the data set (its
# documentation's "Summary Statistics" table, not the training rows) map every feature
# to ``[-1, 1]`` with :class:`~skdp.preprocessing.PublicBoundsScaler`, which reads no
# statistic of the data and so costs no privacy. Rows then have norm at most
# ``sqrt(30)``; ``data_norm=3.0`` clips the few largest.
import re
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from skdp.exceptions import PrivacyLeakWarning
from skdp.linear_model import DPLogisticRegression
from skdp.preprocessing import PublicBoundsScaler

data = load_breast_cancer()
summary = data.DESCR[data.DESCR.index("Summary Statistics") :]
ranges = np.array(
    re.findall(r"^[a-z ()]+:\s+([\d.]+)\s+([\d.]+)\s*$", summary, flags=re.M)[:30], dtype=float
)
X, y = data.data, data.target
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, random_state=0, stratify=y
)
scaler = PublicBoundsScaler((ranges[:, 0], ranges[:, 1])).fit(X_train)
Z_train, Z_test = scaler.transform(X_train), scaler.transform(X_test)
print(f"{Z_train.shape[0]} training rows, {Z_train.shape[1]} features")

# %%
# The private fits
# ----------------
# DP-GD and objective perturbation minimise ``mean logistic loss + (alpha / 2) ||w||^2``
# with ``alpha = 0.01``. Output perturbation's noise scales like ``1 / (alpha n)``, so it
# gets ``alpha = 0.1`` on these 398 rows. Frank-Wolfe minimises the mean loss over an l1
# ball of radius 3; it has no free intercept, so a public constant column carries one,
# and its rows are bounded in the dual (l-infinity) norm, 1 here. ``classes`` declares
# the public label set. Seeds make this page reproducible: never seed a real release.
DELTA = 1e-5
EPSILONS = [0.1, 0.3, 1.0, 3.0, 10.0]
REPEATS = 4
ONES_TRAIN, ONES_TEST = np.ones((len(Z_train), 1)), np.ones((len(Z_test), 1))
SOLVERS = {
    "gd": {"alpha": 0.01, "data_norm": 3.0},
    "output_perturbation": {"alpha": 0.1, "data_norm": 3.0},
    "frank_wolfe": {"constraint": "l1", "radius": 3.0, "data_norm": 1.0, "alpha": 0.0,
                    "fit_intercept": False},
    "objective_perturbation": {"alpha": 0.01, "data_norm": 3.0},
}


def design(name, Z, ones):
    """Frank-Wolfe's rows carry the public constant column."""
    return np.hstack([Z, ones]) if name == "frank_wolfe" else Z


def clip_rows(Z, bound, ord):
    """The rows the estimator sees: clipped to ``data_norm`` in its norm."""
    norms = np.linalg.norm(Z, ord=ord, axis=1, keepdims=True)
    return Z * np.minimum(1.0, bound / np.maximum(norms, 1e-300))


def objective(w, b, Z, y, alpha):
    """Mean logistic loss plus the l2 penalty, as skdp minimises it."""
    margin = (2 * y - 1) * (Z @ w + b)
    return np.mean(np.logaddexp(0, -margin)) + 0.5 * alpha * w @ w


def exact_minimum(Z, alpha, fit_intercept):
    """The non-private minimiser of the same objective (scikit-learn, C = 1/(alpha n));
    for Frank-Wolfe a lower bound: the unconstrained minimum with a tiny penalty."""
    C = 1.0 / (max(alpha, 1e-6) * Z.shape[0])
    lr = LogisticRegression(C=C, fit_intercept=fit_intercept, tol=1e-10, max_iter=10_000)
    lr.fit(Z, y_train)
    return objective(lr.coef_[0], lr.intercept_[0], Z, y_train, alpha)


rows = {}
for name, params in SOLVERS.items():
    A_train, A_test = design(name, Z_train, ONES_TRAIN), design(name, Z_test, ONES_TEST)
    ord_ = np.inf if params.get("constraint") == "l1" else 2
    A_seen = clip_rows(A_train, params["data_norm"], ord_)
    best = exact_minimum(A_seen, params["alpha"], params.get("fit_intercept", True))
    acc, excess = np.zeros((len(EPSILONS), REPEATS)), np.zeros((len(EPSILONS), REPEATS))
    for i, eps in enumerate(EPSILONS):
        for r in range(REPEATS):
            clf = DPLogisticRegression(
                epsilon=eps, delta=DELTA, solver=name, classes=[0, 1], random_state=r, **params
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyLeakWarning)  # the seed, on purpose
                clf.fit(A_train, y_train)
            acc[i, r] = clf.score(A_test, y_test)
            w, b = clf.coef_[0], clf.intercept_[0]
            excess[i, r] = objective(w, b, A_seen, y_train, params["alpha"]) - best
    rows[name] = (acc, excess)
    print(f"{name:>24}: accuracy at epsilon = 1: {acc[EPSILONS.index(1.0)].mean():.3f}")

sk = LogisticRegression(max_iter=10_000).fit(Z_train, y_train)
sk_acc = sk.score(Z_test, y_test)
print(f"{'scikit-learn (no privacy)':>24}: accuracy {sk_acc:.3f}")

# %%
# The picture
# -----------
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
for name, (acc, excess) in rows.items():
    for ax, values in ((left, acc), (right, np.maximum(excess, 1e-4))):
        mean, std = values.mean(axis=1), values.std(axis=1)
        ax.plot(EPSILONS, mean, marker="o", label=name)
        ax.fill_between(EPSILONS, mean - std, mean + std, alpha=0.15)
left.axhline(sk_acc, color="k", linestyle="--", label="scikit-learn, non-private")
left.set(xscale="log", xlabel="epsilon (delta = 1e-5)", ylabel="test accuracy",
         title="Breast cancer: accuracy", ylim=(0.3, 1.0))
right.set(xscale="log", yscale="log", xlabel="epsilon (delta = 1e-5)",
          ylabel="training objective - exact minimum", title="Excess empirical risk")
left.legend(loc="lower right", fontsize="small")
fig.tight_layout()
plt.show()

# %%
# Reading the curves: on 398 rows and 30 features the default DP-GD comes closest to
# scikit-learn as epsilon grows, objective perturbation follows; output perturbation
# needs a larger epsilon (its noise scales like ``1 / (alpha n)``), and Frank-Wolfe is
# built for the l1 geometry with many more features than rows (see
# :ref:`sphx_glr_auto_examples_plot_lasso_sparse_recovery.py`), not for this problem.
# The excess risk falls as epsilon grows, as the papers' rates say. Which solver for
# which problem: :doc:`/user_guide/choosing_a_solver`.
