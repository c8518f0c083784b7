"""The RDP calibration searches one Renyi order at a time (docs/privacy_accounting_speed.md).

Sound: the returned multiplier meets the budget under the FULL engine (every order of
``RDP_ORDERS``, as the ledger is re-accounted). Optimal: a multiplier 0.1% smaller does
not meet it. Cheap: it never composes with the full engine, and evaluates few orders.
"""

import math

import dp_accounting as dpa
import pytest
from dp_accounting import dp_event as dpe

from skdp.exceptions import BudgetError
from skdp.privacy import (
    Budget,
    calibrate_noise_multiplier,
    calibration,
    make_engine,
    subsampled_gaussian_event,
)
from skdp.privacy.calibration import (
    _calibrate_rdp,
    _orders_meeting,
    _rdp_order_guess,
    single_gaussian_multiplier,
)
from skdp.privacy.engines import RDP_ORDERS


def sampled_steps(z, n, b, steps, sampling):
    """``steps`` Gaussian releases on batches of ``b`` of ``n`` records."""
    relation = "replace_one" if sampling == "without_replacement" else "add_remove"
    inner = subsampled_gaussian_event(z, 1.0, n_samples=n, batch_size=b, sampling=sampling,
                                      accounting="rdp", relation=relation)
    return dpe.SelfComposedDpEvent(inner, steps)


def snapshots_and_steps(z, n, b, steps):
    """Two full-batch releases (multiplier ``4 z``) and subsampled steps (as DP-SVRG)."""
    return dpe.ComposedDpEvent([dpe.GaussianDpEvent(4.0 * z), dpe.GaussianDpEvent(4.0 * z),
                                sampled_steps(z, n, b, steps, "without_replacement")])


def one_gaussian(z):
    return dpe.GaussianDpEvent(z)


def _full_epsilon(event, delta, relation):
    return make_engine("rdp", relation).compose(event).get_epsilon(delta)


# (factory, args, epsilon, delta, relation): optimal orders from 2 to 80; batches without
# replacement and Poisson; few and many steps; an epsilon too large for any subsampling.
CASES = [
    (sampled_steps, (500, 16, 977, "without_replacement"), 1.0, 1e-5, "replace_one"),
    (sampled_steps, (15, 5, 9, "without_replacement"), 1.0, 1e-5, "replace_one"),
    (sampled_steps, (100_000, 10, 10_000, "without_replacement"), 1.0, 1e-5, "replace_one"),
    (sampled_steps, (1000, 300, 50, "without_replacement"), 0.1, 1e-9, "replace_one"),
    (sampled_steps, (500, 16, 977, "poisson"), 1.0, 1e-5, "add_remove"),
    (sampled_steps, (10_000, 100, 2000, "poisson"), 8.0, 1e-5, "add_remove"),
    (snapshots_and_steps, (500, 23, 44), 1.0, 1e-5, "replace_one"),
    (one_gaussian, (), 0.5, 1e-6, "replace_one"),
]


@pytest.mark.parametrize("factory, args, eps, delta, relation", CASES)
def test_order_search_is_sound_and_optimal_for_the_full_engine(factory, args, eps, delta,
                                                                   relation):
    z = _calibrate_rdp(lambda x: factory(x, *args), eps, delta, relation, None)
    # Sound: every order together (the ledger's engine) meets the budget ...
    assert _full_epsilon(factory(z, *args), delta, relation) <= eps
    # ... and optimal: 0.1% less noise does not (the search tolerance is 0.01%).
    assert _full_epsilon(factory(z / 1.001, *args), delta, relation) > eps


def test_order_search_uses_the_full_engine_once(monkeypatch):
    used = []
    real = calibration.make_engine

    def recording(accounting, relation="replace_one", *, orders=None):
        used.append(orders)
        return real(accounting, relation, orders=orders)

    monkeypatch.setattr(calibration, "make_engine", recording)
    factory, args, eps, delta, relation = CASES[0]
    _calibrate_rdp(lambda x: factory(x, *args), eps, delta, relation, None)
    # One support check and one check of the result with every order ...
    assert used.count(None) == 2
    # ... and a dozen evaluations at one order each (was ~14 with every order).
    single = [orders for orders in used if orders is not None]
    assert all(len(orders) == 1 for orders in single) and len(single) <= 20


def test_the_check_with_every_order_finds_a_far_better_order():
    # q = 1e-4, 10^4 steps, epsilon 0.1: orders 2 to 64 never reach 0.1 (their conversion
    # term alone exceeds it); orders >= 80 do at z ~ 3400 (the local optimum the search
    # reaches first); order 1.1 does at z ~ 2000, where dp_accounting's KL bound makes
    # its epsilon 0. Only the check with every order finds it.
    args = (100_000, 10, 10_000, "without_replacement")
    z = _calibrate_rdp(lambda x: sampled_steps(x, *args), 0.1, 1e-5, "replace_one", None)
    assert z < 2100
    assert _full_epsilon(sampled_steps(z, *args), 1e-5, "replace_one") <= 0.1
    assert _full_epsilon(sampled_steps(z / 1.001, *args), 1e-5, "replace_one") > 0.1


@pytest.mark.slow
@pytest.mark.parametrize("factory, args, eps, delta, relation", CASES[:3] + CASES[4:5])
def test_order_search_matches_dp_accountings_calibration(factory, args, eps, delta,
                                                         relation):
    # The previous calibration: brentq over every order (absolute tolerance 1e-4 here).
    reference = dpa.calibrate_dp_mechanism(
        lambda: make_engine("rdp", relation), lambda x: factory(x, *args), eps, delta,
        bracket_interval=dpa.ExplicitBracketInterval(0.1, 100.0), tol=1e-4)
    z = _calibrate_rdp(lambda x: factory(x, *args), eps, delta, relation, None)
    assert z == pytest.approx(reference, rel=3e-4)


def test_calibrate_noise_multiplier_uses_the_order_search_for_rdp():
    budget = Budget(1.0, 1e-5)
    args = (500, 16, 977, "without_replacement")
    z = calibrate_noise_multiplier(sampled_steps, args, budget, accounting="rdp",
                                   relation="replace_one")
    assert z == _calibrate_rdp(lambda x: sampled_steps(x, *args), 1.0, 1e-5, "replace_one",
                               None)


def test_single_gaussian_under_rdp_starts_from_the_exact_multiplier():
    budget = Budget(1.0, 1e-5)
    exact = single_gaussian_multiplier(budget, "gaussian", "replace_one")
    z = single_gaussian_multiplier(budget, "rdp", "replace_one")
    assert exact < z  # RDP is an upper bound: it needs more noise than the exact curve
    assert _full_epsilon(dpe.GaussianDpEvent(z), 1e-5, "replace_one") <= 1.0
    assert _full_epsilon(dpe.GaussianDpEvent(z / 1.001), 1e-5, "replace_one") > 1.0


def test_an_unreachable_budget_still_raises():
    # 10^6 steps on the whole data set at epsilon 1e-3: beyond any multiplier <= 1e6.
    with pytest.raises(BudgetError):
        _calibrate_rdp(lambda x: dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(x), 10**12),
                       1e-3, 1e-5, "replace_one", None)


def test_a_huge_budget_gives_a_negligible_multiplier():
    z = _calibrate_rdp(one_gaussian, 1e15, 0.5, "replace_one", None)
    assert 0 < z <= 1.000001e-6  # the lower end of the search, where it was accounted
    assert _full_epsilon(dpe.GaussianDpEvent(z), 0.5, "replace_one") <= 1e15


def test_order_guess_is_the_optimal_order_of_a_gaussian():
    # A Gaussian's RDP is alpha / (2 z^2): its optimal order is the guess, for any z.
    for eps, delta in [(0.1, 1e-9), (1.0, 1e-5), (8.0, 1e-5)]:
        budget = Budget(eps, delta)
        z = single_gaussian_multiplier(budget, "rdp", "replace_one")
        acc = make_engine("rdp", "replace_one").compose(dpe.GaussianDpEvent(z))
        _, order = acc.get_epsilon_and_optimal_order(delta)
        assert abs(RDP_ORDERS.index(order) - _rdp_order_guess(eps, delta)) <= 1


_LAST = len(RDP_ORDERS) - 1


@pytest.mark.parametrize("i, lo, hi", [
    (i, lo, hi) for i in (0, 5, 10, 30, _LAST)
    for lo, hi in [(0, 3), (12, 20), (31, _LAST), (3, 3)]
    if not lo <= i <= hi  # meets(i) is false by contract
])
def test_orders_meeting_finds_the_far_end_of_the_run(i, lo, hi):
    last = _LAST

    def meets(j):
        assert 0 <= j <= last
        return lo <= j <= hi

    got = _orders_meeting(meets, i, last)
    if i == hi + 1:
        assert got == lo
    elif i == lo - 1:
        assert got == hi
    else:
        assert got is None


def test_subset_engines_bound_the_full_one():
    event = sampled_steps(3.0, 500, 16, 977, "without_replacement")
    full = _full_epsilon(event, 1e-5, "replace_one")
    for orders in [(2.0,), (18.0,), (16.0, 18.0, 20.0), (1.5, 64.0, 512.0)]:
        sub = make_engine("rdp", "replace_one", orders=orders).compose(event)
        assert sub.get_epsilon(1e-5) >= full
    with pytest.raises(ValueError, match="subset"):
        make_engine("rdp", "replace_one", orders=(17.5,))
    with pytest.raises(ValueError, match="subset"):
        make_engine("pld", "replace_one", orders=(2.0,))
    with pytest.raises(ValueError, match="subset"):
        make_engine("rdp", "replace_one", orders=())
    assert math.isfinite(full)


def many_gaussians(z):
    return dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(z), 10**12)


def test_an_unreachable_budget_raises_through_the_generic_search():
    with pytest.raises(BudgetError):
        calibrate_noise_multiplier(many_gaussians, (), Budget(1e-3, 1e-5), accounting="rdp",
                                   relation="replace_one")


SEPARABLE = [
    dpe.GaussianDpEvent(2.0),
    dpe.LaplaceDpEvent(3.0),
    sampled_steps(2.0, 500, 16, 977, "without_replacement"),
    snapshots_and_steps(2.0, 500, 23, 44),
]


@pytest.mark.parametrize("event", SEPARABLE)
def test_separable_events_have_the_same_rdp_at_one_order_and_at_all(event):
    assert calibration._order_separable(event)
    full = make_engine("rdp", "replace_one").compose(event).rdp
    for k in (0, 9, 20, 40, len(RDP_ORDERS) - 1):
        one = make_engine("rdp", "replace_one", orders=(RDP_ORDERS[k],)).compose(event)
        assert one.rdp[0] == full[k]
    poisson = sampled_steps(2.0, 500, 16, 977, "poisson")
    full = make_engine("rdp", "add_remove").compose(poisson).rdp
    one = make_engine("rdp", "add_remove", orders=(RDP_ORDERS[20],)).compose(poisson)
    assert calibration._order_separable(poisson) and one.rdp[0] == full[20]


def repeat_and_select(z):
    return dpe.RepeatAndSelectDpEvent(dpe.GaussianDpEvent(z), 3.0, 0.5)


def test_repeat_and_select_goes_to_the_generic_search():
    # Its RDP at one order is optimised over the other orders: alone, an order gives a
    # valid but much larger value (the order search would return 12% too much noise).
    event = repeat_and_select(6.5)
    assert not calibration._order_separable(event)
    full = make_engine("rdp", "replace_one").compose(event)
    k = RDP_ORDERS.index(full.get_epsilon_and_optimal_order(1e-5)[1])
    one = make_engine("rdp", "replace_one", orders=(RDP_ORDERS[k],)).compose(event)
    assert one.rdp[0] > full.rdp[k]
    z = calibrate_noise_multiplier(repeat_and_select, (), Budget(1.0, 1e-5),
                                   accounting="rdp", relation="replace_one")
    assert _full_epsilon(repeat_and_select(z), 1e-5, "replace_one") <= 1.0
    assert _full_epsilon(repeat_and_select(z / 1.002), 1e-5, "replace_one") > 1.0
