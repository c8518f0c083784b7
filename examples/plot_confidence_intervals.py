"""
Confidence intervals from a private fit
=======================================

:class:`~skdp.linear_model.DPLogisticRegression` with ``solver="newton"`` releases noisy
Hessians along with its noisy gradients; :class:`~skdp.linear_model.DPLinearRegression`
releases noisy ``X'X``, ``X'y`` and ``y'y``. From them, and from the noise's known law,
both report standard errors that cover the sampling error and the privacy noise, at no
extra privacy cost (:doc:`/inference`).

Here: data drawn from a known logistic model, one private fit and its 95% intervals next
to the non-private ones, then the coverage of the true parameter over repeated data sets;
then the same for a linear model. Every fit draws fresh noise (no seed), so the numbers
change from run to run.
"""

# %%
# One fit and its intervals
# -------------------------
import matplotlib.pyplot as plt
import numpy as np
from scipy.special import expit

from skdp.linear_model import DPLogisticRegression
from skdp.solvers import DPNewton

theta, bias = np.array([1.0, -0.5, 0.25]), 0.2
truth = np.r_[theta, bias]
rng = np.random.default_rng()


def sample(n):
    X = rng.uniform(-1, 1, size=(n, 3))  # public ranges: rows of norm at most sqrt(3)
    return X, (rng.random(n) < expit(X @ theta + bias)).astype(int)


def fit(X, y, epsilon):
    # A public data_norm covering every row (no clipping), a small penalty (the
    # intervals are then for the model's parameter) and a Hessian at every Newton step.
    return DPLogisticRegression(
        epsilon, solver=DPNewton(hessian_steps=10), alpha=1e-4, data_norm=np.sqrt(3),
        classes=[0, 1],
    ).fit(X, y)


X, y = sample(10_000)
private, exact = fit(X, y, 1.0), fit(X, y, np.inf)
names = ["x1", "x2", "x3", "intercept"]
fig, ax = plt.subplots(figsize=(6.4, 3.2))
for offset, model, label in ((-0.1, exact, "not private"), (0.1, private, "epsilon = 1")):
    ci = model.conf_int(0.05)
    centre = ci.mean(axis=1)
    ax.errorbar(np.arange(4) + offset, centre, yerr=(ci[:, 1] - ci[:, 0]) / 2, fmt="o",
                capsize=4, label=label)
ax.scatter(np.arange(4), truth, marker="x", color="k", zorder=3, label="true value")
ax.set_xticks(range(4), names)
ax.set_ylabel("coefficient, 95% interval")
ax.legend(fontsize=8)
fig.tight_layout()
print("private standard errors:", private.standard_errors_.round(3))
print("non-private standard errors:", exact.standard_errors_.round(3))

# %%
# Coverage over repeated data sets
# --------------------------------
# Nominal 95% intervals should contain the true parameter in about 95% of data sets
# (the docs measure 0.951 over 1,000 runs; 100 here to keep the page fast).
covers = np.zeros(4)
for _ in range(100):
    ci = fit(*sample(10_000), 1.0).conf_int(0.05)
    covers += (ci[:, 0] <= truth) & (truth <= ci[:, 1])
print("coverage per coefficient:", dict(zip(names, (covers / 100).tolist(), strict=True)))

# %%
# Linear regression
# -----------------
# Public bounds that clip no row (``data_norm``) and no label (``y_bound``): the
# intervals are then for the model's parameter. The residual variance comes from the
# released ``y'y``.
from skdp.linear_model import DPLinearRegression  # noqa: E402


def sample_linear(n):
    X = rng.uniform(-1, 1, size=(n, 3))
    return X, X @ theta + bias + np.clip(rng.normal(0, 0.5, n), -1.5, 1.5)


def fit_linear(X, y, epsilon):
    # The statistics give intervals ("auto" would also run them at this size).
    return DPLinearRegression(epsilon, solver="sufficient_statistics", alpha=1e-4,
                              data_norm=np.sqrt(3), y_bound=4.0).fit(X, y)


X, y = sample_linear(10_000)
print("private 95% intervals:\n", fit_linear(X, y, 1.0).conf_int(0.05).round(3))
print("non-private 95% intervals:\n", fit_linear(X, y, np.inf).conf_int(0.05).round(3))
covers = np.zeros(4)
for _ in range(100):
    ci = fit_linear(*sample_linear(10_000), 1.0).conf_int(0.05)
    covers += (ci[:, 0] <= truth) & (truth <= ci[:, 1])
print("coverage per coefficient:", dict(zip(names, (covers / 100).tolist(), strict=True)))
plt.show()
