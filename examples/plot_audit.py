"""
An empirical privacy audit
==========================

:func:`skdp.audit.audit_estimator` trains an estimator many times on two neighbouring
data sets (one record, the *canary*, replaced), attacks every released model with a
membership test and turns the test's error rates into a **statistical lower bound** on
the epsilon the code really spends. A lower bound above the claimed epsilon would be a
bug; a bound below it is what a correct implementation shows (it is not a proof of
privacy: see :doc:`/audit`).

This example audits :class:`~skdp.linear_model.DPLogisticRegression` at three claimed
budgets and plots the audit's lower bound against the claim, with the largest bound that
the number of trials could ever certify (the detection limit).
"""

# %%
# The audits
# ----------
# With ``X_prime`` omitted, the audit builds the neighbouring data set itself: the
# canary is row 0, moved to the point that saturates the sensitivity, and the statistic
# is the model's coefficient along it. 150 trainings on each data set keep this page
# fast; real audits use thousands (``n_trials=1000`` by default).
import warnings

import matplotlib.pyplot as plt
import numpy as np

from skdp.audit import audit_estimator, detection_limit
from skdp.linear_model import DPLogisticRegression

rng = np.random.default_rng(0)
X, y = rng.normal(size=(20, 2)), rng.integers(0, 2, 20)
CLAIMED = [0.5, 2.0, 4.0]
N_TRIALS = 150

results = []
for epsilon in CLAIMED:
    clf = DPLogisticRegression(epsilon=epsilon, delta=1e-5, data_norm=1.0, classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "cannot certify more than ..."
        result = audit_estimator(clf, X, y, n_trials=N_TRIALS, confidence=0.95,
                                 random_state=int(10 * epsilon))
    results.append(result)
    print(f"claimed epsilon {result.epsilon:.2f}: lower bound {result.epsilon_lower_bound:.3f} "
          f"(violated: {result.epsilon_lower_bound > result.epsilon}; "
          f"FPR {result.fpr:.2f}, FNR {result.fnr:.2f})")

# %%
# Lower bound against the claim
# -----------------------------
limit = detection_limit(N_TRIALS, 0.95, 1e-5)
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
grid = np.linspace(0, max(CLAIMED) * 1.1, 50)
left.plot(grid, grid, "k--", label="claimed epsilon (a bound above it is a bug)")
left.axhline(limit, color="0.6", linestyle=":", label=f"detection limit, {N_TRIALS} trials")
left.plot(CLAIMED, [r.epsilon_lower_bound for r in results], "o-", label="audit lower bound")
left.set(xlabel="claimed epsilon", ylabel="epsilon", title="Audit of DPLogisticRegression",
         ylim=(-0.1, max(CLAIMED) * 1.1))
left.legend(fontsize="small", loc="upper left")

# %%
# The two distributions the test separates, at the largest budget: the statistic of the
# models trained without the canary (``D``) and with it (``D'``).
last = results[-1]
bins = np.histogram_bin_edges(np.concatenate([last.scores, last.scores_prime]), 30)
right.hist(last.scores, bins=bins, alpha=0.6, label="D (canary absent)")
right.hist(last.scores_prime, bins=bins, alpha=0.6, label="D' (canary present)")
right.axvline(last.threshold, color="k", linestyle="--", label="chosen threshold")
right.set(xlabel="statistic: coefficient along the canary", ylabel="trainings",
          title=f"claimed epsilon = {last.epsilon:.1f}")
right.legend(fontsize="small")
fig.tight_layout()
plt.show()

# %%
# The lower bounds stay well below the claims: no violation. With 150 trials no bound
# above the detection limit could ever be certified, so a claim above it cannot be
# tested at all; more trials raise the limit. The audit's power (that it does flag an
# under-noised mechanism) is tested in skdp's test suite with
# :class:`~skdp.audit.ScaledNoiseSource`.
