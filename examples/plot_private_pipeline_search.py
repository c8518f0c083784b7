"""
A tuned private pipeline and its true total spend
=================================================

A private workflow from raw data to a tuned model, charged to one
:class:`~skdp.BudgetAccountant`:

1. a :class:`~sklearn.pipeline.Pipeline` of :class:`~skdp.preprocessing.DPStandardScaler`
   (private means and variances) and :class:`~skdp.linear_model.DPLogisticRegression`;
2. :class:`~skdp.model_selection.PrivateRandomizedSearch` over its hyperparameters: the
   whole search, the choice of the winner included, is differentially private;
3. :func:`skdp.privacy_report` and the accountant's composed total.

``GridSearchCV`` over private fits spends the budget of every fold of every candidate,
and is private end to end only with a private scorer
(:func:`skdp.metrics.make_private_scorer`, see :doc:`/tuning_and_budgets`). Every fit
here draws fresh noise (no seed): the numbers change from run to run.
"""

# %%
# Data and the accountant
# -----------------------
# The accountant is a ceiling the user owns: every fit that names it is recorded, and a
# fit that would pass the ceiling is refused before it reads any data.
import re

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp import BudgetAccountant, privacy_report
from skdp.linear_model import DPLogisticRegression
from skdp.model_selection import PrivateRandomizedSearch
from skdp.preprocessing import DPStandardScaler

data = load_breast_cancer()
X, y = data.data, data.target
# Public per-feature bounds: the ranges published in the data set's documentation
# ("Summary Statistics"), not computed from the training rows.
summary = data.DESCR[data.DESCR.index("Summary Statistics") :]
ranges = np.array(
    re.findall(r"^[a-z ()]+:\s+([\d.]+)\s+([\d.]+)\s*$", summary, flags=re.M)[:30], dtype=float
)
bounds = (ranges[:, 0], ranges[:, 1])
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, random_state=0, stratify=y
)
accountant = BudgetAccountant(epsilon=4.0, delta=1e-4)

# %%
# One private pipeline
# --------------------
# The scaler spends epsilon = 0.3 on the means and variances within the public bounds
# (with ``bounds="auto"`` it would estimate them privately, but the 30 features' scales
# differ by four orders of magnitude); the classifier spends 0.7, a share of it on its
# private row bound ``data_norm="auto"``.
pipe = make_pipeline(
    DPStandardScaler(epsilon=0.3, bounds=bounds, accountant=accountant),
    DPLogisticRegression(epsilon=0.7, classes=[0, 1], accountant=accountant),
)
pipe.fit(X_train, y_train)
print(f"pipeline test accuracy: {pipe.score(X_test, y_test):.3f}")
print("spent so far:", accountant.spent())

# %%
# Private hyperparameter search
# -----------------------------
# ``PrivateRandomizedSearch`` runs a random number of candidates (Poisson with mean 10
# by default, Papernot & Steinke 2022), fits each on the training rows, scores it there
# with calibrated noise and releases the best: the whole run is (epsilon, delta)-DP. The
# bounds are hyperparameters like any other.
search = PrivateRandomizedSearch(
    make_pipeline(DPStandardScaler(bounds=bounds), DPLogisticRegression(classes=[0, 1])),
    {
        "dplogisticregression__alpha": [1e-3, 1e-2, 1e-1],
        "dplogisticregression__data_norm": [1.0, 3.0, 10.0, "auto"],
    },
    epsilon=2.0,
    delta=1e-5,
    accountant=accountant,
)
search.fit(X_train, y_train)
print("chosen:", search.best_params_)
print(f"search test accuracy: {search.score(X_test, y_test):.3f}")

# %%
# What was spent
# --------------
# ``privacy_report`` explains one estimator's guarantee; the accountant composes
# everything it recorded (with the tightest of its composition methods).
print(privacy_report(search))
print()
print("total, composed:", accountant.spent())
print("remaining:", accountant.remaining())

# %%
# Against scikit-learn's non-private pipeline:
sk = make_pipeline(StandardScaler(), LogisticRegression()).fit(X_train, y_train)
names = ["scikit-learn\n(non-private)", "DP pipeline\n(epsilon 1)", "DP search\n(epsilon 2)"]
scores = [sk.score(X_test, y_test), pipe.score(X_test, y_test), search.score(X_test, y_test)]
fig, ax = plt.subplots(figsize=(6, 3.5))
bars = ax.bar(names, scores, color=["0.6", "C0", "C1"])
ax.bar_label(bars, fmt="%.3f")
ax.set(ylabel="test accuracy", ylim=(0, 1.05),
       title=f"Total spent: epsilon = {accountant.spent().epsilon:.2f}, "
             f"delta = {accountant.spent().delta:.1e}")
fig.tight_layout()
plt.show()
