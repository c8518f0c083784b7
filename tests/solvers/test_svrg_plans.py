"""DP-SVRG++'s planned steps stay proportional to the data (issue 36, item 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from skdp import DPLogisticRegression


@pytest.mark.parametrize("n", [40, 100, 400])
@pytest.mark.parametrize("sparse", [False, True])
def test_svrg_pp_plans_at_most_32_passes_of_inner_samples(n, sparse):
    """Tiny data planned 2^17 inner steps (131,070 on 40 x 3: 17 s dense, 42 s sparse);
    the epochs are now capped at log2(n / b) + 4, so the inner steps are at most 32 n / b
    (m = 1) or the default m's two passes, and a sparse X gets the dense plan."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(int)
    if sparse:
        X = sp.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    # A tiny declared bound (as a private bound that fell below the data) made the
    # theorem's gap ratio, and so the epoch count, huge.
    clf = DPLogisticRegression(solver="svrg++", classes=[0, 1], data_norm=1e-4,
                               random_state=0).fit(X, y)
    plan = clf.privacy_plan_
    b = plan.batch_size
    assert len(plan.epoch_lengths) <= math.floor(math.log2(max(n / b, 1.0))) + 4
    assert sum(plan.epoch_lengths) <= max(32 * n / b, 2 * plan.epoch_lengths[0] + 2)


@pytest.mark.parametrize("sparse", [False, True])
def test_svrg_pp_non_private_plan_is_capped_too(sparse):
    """epsilon=inf: the theorem's count is the 16-epoch ceiling, 131,070 steps on 40 rows
    (10-35 s); the non-private cap log2(n / b) + 8 keeps it at a few thousand."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    if sparse:
        X = sp.csr_matrix(X)
    clf = DPLogisticRegression(solver="svrg++", classes=[0, 1], epsilon=math.inf).fit(X, y)
    plan = clf.privacy_plan_
    assert len(plan.epoch_lengths) <= math.floor(math.log2(40 / plan.batch_size)) + 8
    assert sum(plan.epoch_lengths) <= 512 * 40 / plan.batch_size
