"""Accounting-method conventions, the exact Gaussian engine and calibration round trips."""

import math

import dp_accounting as dpa
import mpmath
import pytest
from dp_accounting import dp_event as dpe

from skdp.exceptions import BudgetError, IncompatibleSolverError, PrivacyAccountingError
from skdp.privacy import (
    Budget,
    GaussianEngine,
    analytic_gaussian_multiplier,
    calibrate_noise_multiplier,
    epsilon_spent,
    gaussian_event,
    gaussian_log_delta,
    gaussian_noise_multiplier,
    make_engine,
    subsampled_gaussian_event,
)
from skdp.privacy.accounting import PrivacySpent, randomized_response_event


def _mp_delta(mu, eps):
    mpmath.mp.dps = 50
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)


@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 2.5, 8.0])
@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0, 5.0])
def test_gaussian_log_delta_matches_high_precision(mu, eps):
    exact = _mp_delta(mu, eps)
    got = gaussian_log_delta(mu, eps)
    if exact < 1e-300:
        assert got < -600
    else:
        assert math.exp(got) == pytest.approx(float(exact), rel=1e-9)


def test_noise_multiplier_conventions_table():
    """Section 6.1 of the calibration note: single Gaussian, delta = 1e-3, replace-one."""
    delta = 1e-3
    for z, rdp_ref, pld_ref in [(1, 3.537, 7.581), (2, 1.546, 3.139), (4, 0.688, 1.352)]:
        ev = dpe.GaussianDpEvent(z)
        rdp = make_engine("rdp", "replace_one").compose(ev).get_epsilon(delta)
        pld = make_engine("pld", "replace_one").compose(ev).get_epsilon(delta)
        # skdp's RDP orders are a subset of dp_accounting's: at most 0.5% looser.
        assert rdp_ref - 2e-3 <= rdp <= 1.005 * rdp_ref
        assert pld == pytest.approx(pld_ref, abs=2e-3)


@pytest.mark.parametrize("sigma, sens", [(3.0, 1.0), (0.7, 0.2)])
def test_one_helper_gives_the_same_mechanism_to_every_accounting_method(sigma, sens):
    """The same (sigma, replace sensitivity) must give ~ the same epsilon everywhere."""
    delta = 1e-5
    exact = epsilon_spent(
        gaussian_event(sigma, sens, accounting="gaussian", relation="replace_one"),
        delta, accounting="gaussian", relation="replace_one",
    )
    pld = epsilon_spent(
        gaussian_event(sigma, sens, accounting="pld", relation="replace_one"),
        delta, accounting="pld", relation="replace_one",
    )
    rdp = epsilon_spent(
        gaussian_event(sigma, sens, accounting="rdp", relation="replace_one"),
        delta, accounting="rdp", relation="replace_one",
    )
    assert exact <= pld <= exact * 1.01 + 1e-3  # PLD is a (tight) upper bound
    assert exact <= rdp  # RDP is looser
    assert exact == pytest.approx(dpa.get_epsilon_gaussian(sigma / sens, delta), rel=1e-8)
    assert gaussian_noise_multiplier(sigma, sens, accounting="pld", relation="replace_one") == (
        pytest.approx(2 * sigma / sens)
    )


def test_exact_gaussian_engine_composition_is_sqrt_t():
    delta = 1e-6
    composed = dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(10.0), 25)
    single = dpe.GaussianDpEvent(2.0)
    e1 = epsilon_spent(composed, delta, accounting="gaussian", relation="replace_one")
    e2 = epsilon_spent(single, delta, accounting="gaussian", relation="replace_one")
    assert e1 == pytest.approx(e2, rel=1e-12)
    # PLD accounting agrees up to its pessimistic discretisation.
    pld = epsilon_spent(composed, delta, accounting="pld", relation="add_remove")
    assert e1 <= pld <= 1.01 * e1


def test_exact_gaussian_engine_rejects_subsampled_events():
    ev = subsampled_gaussian_event(
        1.0, 1.0, n_samples=100, batch_size=10, sampling="without_replacement",
        accounting="rdp", relation="replace_one",
    )
    with pytest.raises(IncompatibleSolverError, match="gaussian"):
        epsilon_spent(ev, 1e-5, accounting="gaussian", relation="replace_one")


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("count", [1, 50, 2000])
def test_analytic_calibration_round_trip(eps, count):
    budget = Budget(eps, 1e-5)
    z = analytic_gaussian_multiplier(budget, count)
    ev = dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(z), count)
    spent = epsilon_spent(ev, budget.delta, accounting="gaussian", relation="replace_one")
    assert spent <= eps
    assert spent >= 0.99999 * eps


def test_analytic_multiplier_cache_keys_both_inputs():
    """The memoised sigma_B1 is keyed by epsilon and delta: each budget gets its own
    value, equal to the uncached computation, whatever was asked before."""
    from skdp.privacy import calibration

    budgets = [Budget(1.0, 1e-5), Budget(1.0, 1e-6), Budget(2.0, 1e-5), Budget(1.0, 1e-5)]
    got = [analytic_gaussian_multiplier(budget, 4) for budget in budgets]
    fresh = [2.0 * calibration._analytic_unit_multiplier.__wrapped__(b.epsilon, b.delta)
             for b in budgets]
    assert got == fresh
    assert len({got[0], got[1], got[2]}) == 3 and got[0] == got[3]


def _wor_event(z, n, b, steps):
    return dpe.SelfComposedDpEvent(
        subsampled_gaussian_event(z, 1.0, n_samples=n, batch_size=b,
                                  sampling="without_replacement", accounting="rdp",
                                  relation="replace_one"),
        steps,
    )


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_numerical_calibration_round_trip(eps):
    budget = Budget(eps, 1e-5)
    z = calibrate_noise_multiplier(_wor_event, (1000, 20, 300), budget,
                                   accounting="rdp", relation="replace_one")
    spent = epsilon_spent(_wor_event(z, 1000, 20, 300), budget.delta,
                          accounting="rdp", relation="replace_one")
    assert 0.99 * eps <= spent <= eps


def test_calibration_noise_decreases_with_epsilon():
    zs = [calibrate_noise_multiplier(_wor_event, (1000, 20, 300), Budget(e, 1e-5),
                                     accounting="rdp", relation="replace_one")
          for e in (0.25, 0.5, 1.0, 2.0, 4.0)]
    assert all(a > b for a, b in zip(zs, zs[1:], strict=False))
    gd = [analytic_gaussian_multiplier(Budget(e, 1e-5), 10) for e in (0.25, 0.5, 1.0, 2.0)]
    assert all(a > b for a, b in zip(gd, gd[1:], strict=False))


def test_pld_poisson_is_tighter_than_rdp():
    ev = lambda acc: dpe.SelfComposedDpEvent(  # noqa: E731
        subsampled_gaussian_event(1.0, 1.0, n_samples=10_000, batch_size=100,
                                  sampling="poisson", accounting=acc, relation="add_remove"),
        500,
    )
    rdp = epsilon_spent(ev("rdp"), 1e-5, accounting="rdp", relation="add_remove")
    pld = epsilon_spent(ev("pld"), 1e-5, accounting="pld", relation="add_remove")
    assert pld < rdp


def test_impossible_budget_is_reported_clearly():
    def huge(z, steps):
        return _wor_event(z, 10, 10, steps)

    with pytest.raises(BudgetError, match="no noise level"):
        calibrate_noise_multiplier(huge, (10**9,), Budget(1e-9, 1e-300),
                                   accounting="rdp", relation="replace_one")


@pytest.mark.parametrize("n, b, steps", [(426, 128, 6), (426, 128, 32), (2000, 100, 100)])
def test_without_replacement_epsilon_is_monotone_in_noise(n, b, steps):
    """Regression: dp_accounting's WOR bound is erratic at orders > 64 for large q."""
    import numpy as np

    eps = [epsilon_spent(_wor_event(z, n, b, steps), 1e-5, accounting="rdp",
                         relation="replace_one") for z in np.geomspace(0.5, 300, 60)]
    assert np.all(np.diff(eps) <= 0)


def test_clamped_rdp_is_never_looser_than_dp_accounting_on_stable_orders():
    from dp_accounting.rdp import rdp_privacy_accountant

    from skdp.privacy.accounting import RDP_ORDERS, WOR_MAX_STABLE_ORDER

    orders = [o for o in RDP_ORDERS if o <= WOR_MAX_STABLE_ORDER]
    for z in (0.6, 1.5, 8.0):
        ev = _wor_event(z, 5000, 50, 200)
        ours = epsilon_spent(ev, 1e-6, accounting="rdp", relation="replace_one")
        plain = rdp_privacy_accountant.RdpAccountant(
            orders=orders, neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE
        ).compose(ev).get_epsilon(1e-6)
        assert ours <= plain * (1 + 1e-12)


def test_group_privacy_conversion_of_a_poisson_ledger():
    """Replace-one via add/remove: (e, d) -> (2e, (1 + e^e) d) never exceeds the budget."""
    from skdp.privacy import PrivacyLedger, add_remove_budget

    budget = Budget(1.0, 1e-5)
    inner = add_remove_budget(budget)
    assert inner.epsilon == 0.5 and inner.delta == pytest.approx(1e-5 / (1 + math.exp(0.5)))
    event = dpe.SelfComposedDpEvent(
        subsampled_gaussian_event(1.0, 1.0, n_samples=1000, batch_size=10, sampling="poisson",
                                  accounting="pld", relation="add_remove"), 50)
    spent = PrivacyLedger(event, "pld", "replace_one", budget, via_add_remove=True).spent()
    half = epsilon_spent(event, inner.delta, accounting="pld", relation="add_remove")
    assert spent.epsilon == pytest.approx(2 * half)
    assert spent.delta == pytest.approx((1 + math.exp(half)) * inner.delta)


@pytest.mark.parametrize("sigma, sens", [(1.0, 0.0), (1.0, float("nan")), (float("inf"), 1.0),
                                         (1.0, float("inf")), (-1.0, 1.0)])
def test_degenerate_gaussian_events_are_refused(sigma, sens):
    """An underflowed sensitivity must not be accounted as a free release (and NaN noise
    multipliers read as epsilon = 0 by the RDP engine)."""
    with pytest.raises(ValueError, match="sensitivity|sigma"):
        gaussian_event(sigma, sens, accounting="rdp", relation="replace_one")


@pytest.mark.parametrize("eps, delta", [(1e-6, 1e-50), (1e-4, 1e-12), (30.0, 1e-3)])
def test_closed_form_is_rounded_up_even_where_double_precision_cancels(eps, delta):
    """Regression (review): at tiny mu the double-precision delta formula cancels."""
    z = analytic_gaussian_multiplier(Budget(eps, delta))
    assert float(_mp_delta(1.0 / z, eps)) <= delta
    mu = 1.0 / z
    got = GaussianEngine(dpa.NeighboringRelation.REPLACE_ONE)
    got.compose(dpe.GaussianDpEvent(1.0 / mu))
    assert float(_mp_delta(mu, got.get_epsilon(delta))) <= delta


def test_pure_engine_adds_epsilons_and_rejects_gaussians():
    from dp_accounting import dp_event as dpe

    from skdp.privacy import PureDpEvent, make_engine

    event = dpe.ComposedDpEvent([
        PureDpEvent(0.5), dpe.SelfComposedDpEvent(PureDpEvent(0.25), 4),
        dpe.LaplaceDpEvent(2.0),
    ])
    acc = make_engine("pure")
    acc.compose(event)
    assert acc.get_epsilon(0.0) == pytest.approx(0.5 + 1.0 + 0.5)
    assert acc.get_delta(2.0) == 0.0 and acc.get_delta(1.9) == 1.0
    assert not make_engine("pure").supports(dpe.GaussianDpEvent(1.0))


def _rr_composition_delta(e, count, eps):
    # Kairouz, Oh & Viswanath (2015): count randomized responses have privacy loss
    # (count - 2 i) e, i ~ Binomial(count, 1 / (1 + e^e)).
    mpmath.mp.dps = 40
    e, eps = mpmath.mpf(e), mpmath.mpf(eps)
    q = 1 / (1 + mpmath.exp(e))
    total = mpmath.mpf(0)
    for i in range(count + 1):
        loss = (count - 2 * i) * e
        if loss > eps:
            total += mpmath.binomial(count, i) * q**i * (1 - q) ** (count - i) * (
                1 - mpmath.exp(eps - loss))
    return float(total)


@pytest.mark.parametrize("eps0, count", [(0.3, 1), (0.1, 7), (0.02, 64), (0.005, 300),
                                         (5e-5, 1000)])
def test_pld_composes_randomized_response_count_times_exactly(eps0, count):
    # dp_accounting 0.6.0 composes a self-composed randomized response once and rounds
    # its losses to a 1e-4 grid; skdp's PLD engine must give the exact optimal
    # composition (never below it), and agree with `count` explicit compositions.
    rr = randomized_response_event(eps0)
    assert math.log((1 - rr.noise_parameter / 2) / (rr.noise_parameter / 2)) == \
        pytest.approx(eps0, rel=1e-12)
    delta = 1e-6
    ours = epsilon_spent(dpe.SelfComposedDpEvent(rr, count), delta, accounting="pld",
                         relation="replace_one")
    assert _rr_composition_delta(eps0, count, ours) <= delta * (1 + 1e-6)
    assert _rr_composition_delta(eps0, count, ours * (1 - 1e-3) - 1e-9) > delta
    if count <= 64:
        composed = epsilon_spent(dpe.ComposedDpEvent([rr] * count), delta, accounting="pld",
                                 relation="replace_one")
        assert ours == pytest.approx(composed, rel=1e-9)
    assert ours <= count * eps0 * (1 + 1e-9)


def test_pld_refuses_to_mix_randomized_response_with_other_events():
    rr = randomized_response_event(0.1)
    for event in (dpe.ComposedDpEvent([rr, dpe.GaussianDpEvent(1.0)]),
                  dpe.ComposedDpEvent([dpe.GaussianDpEvent(1.0), rr]),
                  dpe.ComposedDpEvent([rr, randomized_response_event(0.2)])):
        with pytest.raises(IncompatibleSolverError, match="cannot account"):
            epsilon_spent(event, 1e-6, accounting="pld", relation="replace_one")


@pytest.mark.slow  # long PLD compositions
@pytest.mark.parametrize("e, count, delta", [(0.0016837632489423212, 8192, 1e-12),
                                             (0.001, 4096, 1e-12), (3e-4, 65536, 1e-9)])
def test_pld_randomized_response_is_an_upper_bound_at_small_delta(e, count, delta):
    # Regression: an FFT self-composition left negative probabilities (~1e-11) and
    # under-stated epsilon at delta = 1e-12. The binomial lattice must never be below the
    # exact optimal composition.
    ours = epsilon_spent(dpe.SelfComposedDpEvent(randomized_response_event(e), count), delta,
                         accounting="pld", relation="replace_one")
    assert _rr_composition_delta(e, count, ours) <= delta * (1 + 1e-6)


@pytest.mark.parametrize("e", [1e-9, 1e-7, 3e-5, 0.01, 0.3, 1.0, 7.0, 20.0, 35.0])
def test_randomized_response_event_is_never_weaker_than_asked(e):
    rr = randomized_response_event(e)
    p = mpmath.mpf(rr.noise_parameter)
    mpmath.mp.dps = 50
    assert mpmath.log((1 - p / 2) / (p / 2)) >= e


def test_pld_refuses_other_randomized_response_and_leaves_no_state():
    many_buckets = dpe.SelfComposedDpEvent(
        dpe.RandomizedResponseDpEvent(noise_parameter=0.5, num_buckets=3), 100)
    with pytest.raises(IncompatibleSolverError, match="cannot account"):
        epsilon_spent(many_buckets, 1e-6, accounting="pld", relation="replace_one")
    engine = make_engine("pld", "replace_one")
    mixed = dpe.ComposedDpEvent([randomized_response_event(0.1), dpe.GaussianDpEvent(1.0)])
    assert not engine.supports(mixed)
    with pytest.raises(PrivacyAccountingError):
        engine.compose(mixed)
    # Nothing was composed: the engine still reads a fresh randomized response right.
    engine.compose(randomized_response_event(0.1))
    assert engine.get_epsilon(1e-6) == pytest.approx(
        epsilon_spent(randomized_response_event(0.1), 1e-6, accounting="pld",
                      relation="replace_one"), rel=1e-12)


def test_spent_delta_is_checked_against_the_budget():
    # Review regression: the re-checks compared epsilon only. A ledger converted from
    # add/remove by group privacy whose add/remove epsilon exceeds the capped half
    # reports delta = (1 + e^e) delta / (1 + e^h) > delta with epsilon inside the budget.
    from skdp.privacy.accounting import PrivacyLedger

    budget = Budget(12.0, 1e-6)
    ledger = PrivacyLedger(dpe.GaussianDpEvent(1.0), "pld", "replace_one", budget,
                           via_add_remove=True)
    spent = ledger.spent()
    assert spent.epsilon <= budget.epsilon and spent.delta > 2 * budget.delta
    assert not spent.within(budget)
    assert PrivacySpent(budget.epsilon, budget.delta).within(budget)
    assert not PrivacySpent(budget.epsilon * (1 + 1e-15), budget.delta).within(budget)


def test_tiny_poisson_rates_never_account_as_free():
    # Review regression: dp_accounting's Poisson-subsampled Gaussian RDP is about -1e-22 at
    # q = 1e-7, z = 1e4, and a negative order made the whole ledger report epsilon = 0.
    # The clamped engine stays an upper bound: never below the tight PLD value.
    event = dpe.SelfComposedDpEvent(dpe.PoissonSampledDpEvent(1e-7, dpe.GaussianDpEvent(1e4)),
                                    100_000)
    rdp = epsilon_spent(event, 1e-10, accounting="rdp", relation="add_remove")
    pld = epsilon_spent(event, 1e-10, accounting="pld", relation="add_remove")
    assert rdp >= pld > 0


# -- lazy orders of the RDP engine ----------------------------------------------------------
_LB_Q = (1e-5, 1e-3, 0.01, 0.032, 0.1, 0.26, 0.53, 0.9, 0.999)
_LB_Z = (0.3, 0.6, 1.0, 2.0, 5.9, 20.0, 300.0)


def test_wor_lower_bound_is_below_dp_accountings_bound_at_every_order():
    """The pruning's premise: at every (q, z, order) of a wide grid, the cheap bound is at
    most the clamped dp_accounting value, and tight (within 5%) where the i = 2 term
    dominates, so that it prunes."""
    import numpy as np

    from skdp.privacy.engines import RDP_ORDERS, _clamped_rdp, _wor_lower_bound

    orders = np.array(RDP_ORDERS)
    for q in _LB_Q:
        for z in _LB_Z:
            lower, exact = _wor_lower_bound(q, z, orders), _clamped_rdp(True, q, z, orders)
            assert np.all(lower <= exact), (q, z, orders[lower > exact])
            assert np.all(lower >= 0)
    tight = (orders >= 2) & (orders <= 32)
    ratio = (_wor_lower_bound(0.01, 5.9, orders) / _clamped_rdp(True, 0.01, 5.9, orders))
    assert np.all(ratio[tight] > 0.95)


def test_closed_form_forward_differences_are_below_dp_accountings():
    """The premise of the terms i >= 3 of the lower bound: for z up to _HIGHER_TERMS_MAX_Z,
    dp_accounting's log forward differences of exp(c x (x + 1)) at -1 (even orders up to
    64) are at least log(e^{-c/4} (2m)! c^m / m!), with room to spare for their rounding
    (a violation could only make the engine skip an order, never report less)."""
    import numpy as np
    from dp_accounting.rdp import rdp_privacy_accountant
    from scipy.special import gammaln

    from skdp.privacy.engines import _HIGHER_TERMS_MAX_Z

    for z in np.linspace(0.1, _HIGHER_TERMS_MAX_Z, 300):
        c = 1.0 / (2.0 * z * z)
        deltas, _ = rdp_privacy_accountant._get_forward_diffs(
            lambda x, z=z: x * (x + 1) / (2 * z * z), 65)
        m = np.arange(1, 33)
        bound = -c / 4 + gammaln(2 * m + 1) - gammaln(m + 1) + m * np.log(c)
        assert np.all(deltas[2 * m - 1] - bound > 1e-3), z


def _lazy_cases():
    wor = lambda z, n, b, t: _wor_event(z, n, b, t)  # noqa: E731
    return [
        wor(5.9, 250, 8, 977),
        dpe.ComposedDpEvent([wor(2.0, 1000, 100, 50), dpe.GaussianDpEvent(3.0),
                             wor(5.0, 8, 4, 4)]),
        dpe.ComposedDpEvent([dpe.LaplaceDpEvent(1.0), wor(0.8, 100000, 100, 10000)]),
        dpe.ComposedDpEvent([wor(6.0, 500, 16, 300), wor(6.0, 250, 8, 300),
                             wor(30.0, 40, 39, 2)]),
        # The inner event of a repeat-and-select is evaluated at every order (eagerly),
        # next to a pending one.
        dpe.ComposedDpEvent([dpe.RepeatAndSelectDpEvent(wor(4.0, 2000, 20, 100), 3.0, 1.0),
                             wor(3.0, 2000, 40, 100)]),
        # A reviewer's reproducer: the Laplace curve is summed after the pending events
        # unless composition order is kept.
        dpe.ComposedDpEvent([wor(13.469829811105448, 1026, 1, 1),
                             wor(6.918206336055912, 31, 3, 1002),
                             dpe.SelfComposedDpEvent(dpe.LaplaceDpEvent(16.36198626222822), 9),
                             wor(14.193569510957353, 1957, 100, 38)]),
        dpe.SelfComposedDpEvent(dpe.NonPrivateDpEvent(), 1),
    ]


def _eager_curve(event):
    """The RDP curve composed in order, every order evaluated at once (the engine
    settled after each part, as eager composition sums it)."""
    acc = make_engine("rdp")
    for part in event.events if isinstance(event, dpe.ComposedDpEvent) else [event]:
        acc.compose(part)
        acc.rdp  # noqa: B018 (settles the pending parts)
    return acc


@pytest.mark.parametrize("case", range(len(_lazy_cases())))
@pytest.mark.parametrize("delta", [1e-9, 1e-5, 1e-3, 0.5])
def test_lazy_rdp_epsilon_equals_the_full_curves(case, delta):
    """get_epsilon evaluates the subsampled Gaussians at a few orders only; its epsilon is
    the eagerly composed curve's, float for float (dp_accounting's compute_epsilon on every
    order), and so is its curve once settled."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    event = _lazy_cases()[case]
    lazy = make_engine("rdp").compose(event)
    full = _eager_curve(event)
    expected = float(compute_epsilon(full.orders, full.rdp, delta)[0])
    assert lazy.get_epsilon(delta) == expected
    assert epsilon_spent(event, delta, accounting="rdp", relation="replace_one") == expected
    # The full curve of a partly evaluated engine is the same curve.
    lazy.get_epsilon(delta)
    assert lazy.rdp.tolist() == full.rdp.tolist()


@pytest.mark.parametrize("case", range(len(_lazy_cases()) - 1))
def test_lazy_order_epsilons_classify_every_order_exactly(case):
    """order_epsilons(delta, upto): exact where at most upto; above it elsewhere."""
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon

    event = _lazy_cases()[case]
    full = make_engine("rdp").compose(event)
    exact = [float(compute_epsilon([a], [r], 1e-5)[0])
             for a, r in zip(full.orders.tolist(), full.rdp.tolist(), strict=True)]
    upto = sorted(exact)[3]
    got = make_engine("rdp").compose(event).order_epsilons(1e-5, upto=upto)
    for e, g in zip(exact, got, strict=True):
        assert (g <= upto) == (e <= upto)
        if e <= upto:
            assert g == e


def test_lazy_rdp_epsilon_evaluates_few_orders(monkeypatch):
    """The point of the pruning: a small-q ledger is evaluated at a handful of orders."""
    from skdp.privacy import engines

    seen = []
    real = engines._clamped_rdp

    def counting(wor, q, z, orders):
        seen.extend(orders.tolist())
        return real(wor, q, z, orders)

    monkeypatch.setattr(engines, "_clamped_rdp", counting)
    monkeypatch.setattr(engines, "_RDP_MEMO", {})
    # A multiplier no other test uses (epsilon_spent memoises its answers).
    make_engine("rdp").compose(_wor_event(5.9371, 250, 8, 977)).get_epsilon(1e-3)
    assert 1 <= len(seen) <= 5
