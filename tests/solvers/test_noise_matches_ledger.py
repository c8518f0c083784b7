"""The noise actually drawn is the noise the ledger accounts (solvers outside the
conformance suite's zero-signal test: report-noisy-min and shuffled local reports)."""

from __future__ import annotations

import numpy as np
import pytest

from skdp.privacy import ApproxDpEvent, Budget, PureDpEvent
from skdp.privacy.noise import NoiseSource
from skdp.solvers import PrivateFrankWolfe, ShuffledTruncatedMirrorDescent
from skdp.solvers.truncated_mirror_descent import shuffle_amplified_epsilon
from tests.solvers.test_frank_wolfe import lasso_problem
from tests.solvers.test_truncated_mirror_descent import _heavy_problem


class _Recorder(NoiseSource):
    def __init__(self, rng):
        super().__init__(rng)
        self.calls = []

    def laplace(self, shape, scale):
        self.calls.append(("laplace", scale, shape))
        return super().laplace(shape, scale)

    def k_norm(self, shape, scale, q, count=None):
        self.calls.append(("k_norm", scale, q, count))
        return super().k_norm(shape, scale, q, count=count)


@pytest.mark.parametrize("eps", [0.5, 2.0])
@pytest.mark.parametrize("delta, accounting", [(0.0, "pure"), (1e-5, "pld")])
def test_frank_wolfe_draws_the_accounted_laplace_scales(eps, delta, accounting):
    problem, _ = lasso_problem(n=3000, d=20)
    solver = PrivateFrankWolfe(n_phases=3)
    recorder = _Recorder(np.random.default_rng(0))
    res = solver.solve(problem, Budget(eps, delta), recorder)
    scales = res.plan.laplace_scales
    drawn = [scale for kind, scale, _ in recorder.calls if kind == "laplace"]
    # Phase t runs 2^t Frank-Wolfe steps, each one report-noisy-min at scale lambda_t
    # over the 2 d vertex scores.
    expected = [lam for t, lam in enumerate(scales, start=1) for _ in range(2**t)]
    assert drawn == expected
    assert all(shape == (2 * problem.spec.n_params,) for kind, _, shape in recorder.calls)
    # The ledger: pure DP (delta = 0) or the optimal composition (delta > 0), at most
    # the budget.
    assert res.ledger.accounting == accounting and res.spent.epsilon <= eps


@pytest.mark.parametrize("n, eps", [(20_000, 1.0), (100, 1.0), (20_000, 50.0)])
def test_shuffled_reports_draw_the_accounted_local_noise(n, eps):
    problem = _heavy_problem(n=n, d=3)
    solver = ShuffledTruncatedMirrorDescent(n_iter=5, truncation=1.0)
    budget = Budget(eps, 1e-5)
    recorder = _Recorder(np.random.default_rng(1))
    res = solver.solve(problem, budget, recorder, accounting="basic")
    s = res.plan
    eps0 = s.local_epsilon
    # Every record's report carries K-norm noise of scale Delta_K / eps0 = 2 tau / eps0.
    draws = [c for c in recorder.calls if c[0] == "k_norm"]
    assert sum(c[3] for c in draws) == problem.spec.n_samples
    assert all(c[1] == pytest.approx(2 * s.truncation / eps0, rel=1e-12) for c in draws)
    event = res.ledger.event
    if isinstance(event, ApproxDpEvent):  # amplified: the FMT21 bound at eps0
        assert eps0 > eps
        assert event.epsilon == pytest.approx(shuffle_amplified_epsilon(eps0, n, 1e-5))
    else:  # unamplified: each record's eps0-LDP report makes the run eps0-DP
        assert isinstance(event, PureDpEvent) and event.epsilon == eps0 == eps
    assert res.spent.epsilon <= eps
