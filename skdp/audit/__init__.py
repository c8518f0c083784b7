"""Empirical privacy audit: a statistical lower bound on the epsilon a mechanism spends.

The audit trains many times on two neighbouring datasets ``D`` and ``D'`` (replace-one:
same size, one record replaced by a *canary*), reduces each released model to one number
(a *statistic*) and runs a membership test on it. By the hypothesis-testing
characterisation of differential privacy (Wasserman & Zhou 2010; Kairouz, Oh &
Viswanath 2015), every test of ``D`` against ``D'`` on the output of an
``(epsilon, delta)``-DP mechanism has false-positive and false-negative rates with

    FPR + e^epsilon FNR >= 1 - delta    and    FNR + e^epsilon FPR >= 1 - delta,

so upper confidence bounds on the two rates give a lower confidence bound on epsilon
(Jagielski, Ullman & Oprea, "Auditing differentially private machine learning: how
private is private SGD?", NeurIPS 2020; Nasr, Song, Thakurta, Papernot & Carlini,
"Adversary instantiation: lower bounds for differentially private machine learning",
IEEE S&P 2021).

**A passing audit is not a proof of privacy**: it only says that this canary, this
statistic and this many trials did not find a leak. **A failing audit is a bug**: a lower
bound above the claimed epsilon at the stated confidence means that the implementation
(or its accounting) does not deliver its guarantee, except with probability at most
``1 - confidence``.

Entry points: :func:`audit_estimator` (any skdp estimator, end users),
:func:`audit_solver` (the solver layer, used by the test-suite) and
:func:`audit_scores` (the statistics alone, for scores computed elsewhere). Canaries are
built by :func:`make_canary_pair`.
"""

from skdp.audit._canaries import CanaryPair, ScaledNoiseSource, make_canary_pair
from skdp.audit._runs import audit_estimator, audit_solver
from skdp.audit._statistics import (
    AuditResult,
    audit_scores,
    clopper_pearson,
    clopper_pearson_upper,
    detection_limit,
    epsilon_lower_bound,
)

__all__ = [
    "AuditResult",
    "CanaryPair",
    "ScaledNoiseSource",
    "audit_estimator",
    "audit_scores",
    "audit_solver",
    "clopper_pearson",
    "clopper_pearson_upper",
    "detection_limit",
    "epsilon_lower_bound",
    "make_canary_pair",
]
