"""
Many features, few rows: private pipelines on digits
====================================================

Raw digits has 1,257 training rows of 64 pixels and 10 classes. A private logistic
regression on the raw pixels pays noise in every one of its 650 coefficients and
learns little at small ``epsilon``. Three ways to do better, each under one total budget
charged to one :class:`~skdp.BudgetAccountant`:

1. the **public pixel range** ``[0, 16]`` (published with the data set, so free): with
   :class:`~skdp.preprocessing.PublicBoundsScaler` no budget is spent on bounds;
2. :class:`~skdp.naive_bayes.DPGaussianNB`: per-class means and variances released once,
   a few hundred numbers instead of an iterative fit;
3. :class:`~skdp.decomposition.DPPCA`: a private projection on 12 components (one
   Gaussian release of the covariance), then :class:`~skdp.linear_model.DPLogisticRegression`
   on the projections (centred by the private mean, so without an intercept).

Every fit draws fresh noise (no seed): the numbers change from run to run. The benchmark
suite measures the same pipelines over 20 unseeded runs each, with diffprivlib side by
side (:doc:`/user_guide/benchmarks/index`).
"""

# %%
# The data and the three workflows
# --------------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline

from skdp import BudgetAccountant, privacy_report
from skdp.decomposition import DPPCA
from skdp.linear_model import DPLogisticRegression
from skdp.naive_bayes import DPGaussianNB
from skdp.preprocessing import PublicBoundsScaler

X, y = load_digits(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, random_state=0, stratify=y
)
classes = list(range(10))  # the label set is public: no budget is spent to learn it
pixels = (0.0, 16.0)  # the published pixel range


def workflows(epsilon, accountant):
    """The three workflows at a total ``epsilon``, all charged to ``accountant``."""
    return {
        "DPLogisticRegression (defaults, raw pixels)": DPLogisticRegression(
            epsilon, classes=classes, accountant=accountant
        ),
        "DPGaussianNB (public pixel range)": DPGaussianNB(
            epsilon, bounds=pixels, classes=classes, accountant=accountant
        ),
        "DPPCA(12) + DPLogisticRegression": make_pipeline(
            PublicBoundsScaler(pixels),
            DPPCA(12, epsilon=0.4 * epsilon, accountant=accountant),
            DPLogisticRegression(
                0.6 * epsilon, classes=classes, fit_intercept=False, accountant=accountant
            ),
        ),
    }


# %%
# Accuracy against the total budget
# ---------------------------------
# Three unseeded fits per point; the accountant reads what each fit spent.
epsilons = [1.0, 2.0, 5.0]
scores = {name: [] for name in workflows(1.0, None)}
accountant = BudgetAccountant(epsilon=np.inf, delta=1e-3)
for epsilon in epsilons:
    for name in scores:
        # Accuracy on the held-out (public) test rows.
        runs = [
            np.mean(workflows(epsilon, accountant)[name].fit(X_train, y_train).predict(X_test)
                    == y_test)
            for _ in range(3)
        ]
        scores[name].append(runs)
        print(f"epsilon={epsilon:g}  {name:<45} {np.median(runs):.3f}")

fig, ax = plt.subplots(figsize=(6.4, 4))
for name, values in scores.items():
    values = np.array(values)
    ax.plot(epsilons, np.median(values, axis=1), marker="o", label=name)
    ax.fill_between(epsilons, values.min(axis=1), values.max(axis=1), alpha=0.2)
ax.set_xscale("log")
ax.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
ax.set_xlabel("total epsilon")
ax.set_ylabel("test accuracy (median, range of 3 fits)")
ax.set_ylim(0, 1)
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# One pipeline's guarantee
# ------------------------
# The projection and the classifier are two private steps of one pipeline: their
# releases compose, and the report names each of them.
budget = BudgetAccountant(epsilon=1.0, delta=1e-4)
pipe = workflows(1.0, budget)["DPPCA(12) + DPLogisticRegression"].fit(X_train, y_train)
print(privacy_report(budget))
