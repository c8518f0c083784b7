"""The RDP engines' memo of subsampled-Gaussian RDP values (docs/privacy_accounting_speed.md).

A hit must return exactly what recomputation returns, and only for the same inputs: the
key covers the bound used (the dp_accounting function itself), its order cap, the
relation, q, z and the order.
"""

import math

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from dp_accounting.rdp import rdp_privacy_accountant

from skdp.privacy import (
    Budget,
    PrivacyLedger,
    calibrate_noise_multiplier,
    engines,
    make_engine,
    reaccount,
    subsampled_gaussian_event,
)


def sampled(z, n=500, b=16, steps=977, sampling="without_replacement"):
    relation = "replace_one" if sampling == "without_replacement" else "add_remove"
    inner = subsampled_gaussian_event(z, 1.0, n_samples=n, batch_size=b, sampling=sampling,
                                      accounting="rdp", relation=relation)
    return dpe.SelfComposedDpEvent(inner, steps)


def _rdp(event, relation="replace_one", orders=None):
    return make_engine("rdp", relation, orders=orders).compose(event).rdp


@pytest.fixture
def counted(monkeypatch):
    """Counts the calls of dp_accounting's two bounds (wrapped for the whole test)."""
    calls = {"wor": 0, "poisson": 0}
    for kind, name in [("wor", "_compute_rdp_sample_wor_gaussian"),
                       ("poisson", "_compute_rdp_poisson_subsampled_gaussian")]:
        real = getattr(rdp_privacy_accountant, name)

        def wrapper(*args, _real=real, _kind=kind, **kwargs):
            calls[_kind] += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(rdp_privacy_accountant, name, wrapper)
    monkeypatch.setattr(engines, "_RDP_MEMO", {})
    return calls


def _fresh(event, relation="replace_one", orders=None):
    """The RDP vector computed with an empty memo (the memo is restored afterwards)."""
    saved = dict(engines._RDP_MEMO)
    engines._RDP_MEMO.clear()
    try:
        return _rdp(event, relation, orders)
    finally:
        engines._RDP_MEMO.clear()
        engines._RDP_MEMO.update(saved)


@pytest.mark.parametrize("sampling, relation", [("without_replacement", "replace_one"),
                                                ("poisson", "add_remove")])
@pytest.mark.parametrize("z", [0.6, 3.0, 40.0])
def test_a_hit_is_exactly_the_recomputed_value(counted, sampling, relation, z):
    event = sampled(z, sampling=sampling)
    first = _rdp(event, relation)
    before = dict(counted)
    again = _rdp(event, relation)
    assert counted == before  # every order was a hit
    np.testing.assert_array_equal(again, first)
    np.testing.assert_array_equal(_fresh(event, relation), first)
    # The values of a subset of orders are those of the full vector, order by order.
    subset = (1.5, 18.0, 64.0, 512.0)
    index = [engines.RDP_ORDERS.index(a) for a in subset]
    np.testing.assert_array_equal(_fresh(event, relation, subset), first[index])


def test_every_input_is_in_the_key(counted, monkeypatch):
    one = (18.0,)
    base = _rdp(sampled(3.0), orders=one)
    assert counted == {"wor": 1, "poisson": 0}
    np.testing.assert_array_equal(_rdp(sampled(3.0), orders=one), base)
    assert counted["wor"] == 1

    def misses(event, relation="replace_one", orders=one, kind="wor"):
        """One more call of the bound, and the value recomputation gives."""
        n = counted[kind]
        value = _rdp(event, relation, orders)
        assert counted[kind] == n + 1
        np.testing.assert_array_equal(value, _fresh(event, relation, orders))
        return value

    # z (by one ulp), q, the order, the sampling kind: each a miss.
    misses(sampled(math.nextafter(3.0, 4.0)))
    assert misses(sampled(3.0, n=501))[0] < base[0]
    misses(sampled(3.0), orders=(20.0,))
    misses(sampled(3.0, sampling="poisson"), "add_remove", kind="poisson")
    # The same q from another (n, b) is the same input of the bound: a hit.
    n = counted["wor"]
    np.testing.assert_array_equal(_rdp(sampled(3.0, n=1000, b=32), orders=one), base)
    assert counted["wor"] == n
    # The order cap of the without-replacement bound: a miss (above it, no bound at all).
    monkeypatch.setattr(engines, "WOR_MAX_STABLE_ORDER", 16)
    capped = _rdp(sampled(3.0), orders=one)
    assert capped[0] == 18.0 * 977 / (2 * 3.0**2) > base[0]
    monkeypatch.setattr(engines, "WOR_MAX_STABLE_ORDER", 64)
    # A replaced bound (another dp_accounting, a test double) is a different key.
    monkeypatch.setattr(rdp_privacy_accountant, "_compute_rdp_sample_wor_gaussian",
                        lambda q, z, orders: np.full(len(orders), 1e-3))
    assert _rdp(sampled(3.0), orders=one)[0] == pytest.approx(977e-3)


def test_the_memo_is_bounded(counted, monkeypatch):
    monkeypatch.setattr(engines, "_RDP_MEMO_SIZE", 50)
    for z in np.linspace(1.0, 5.0, 20):
        _rdp(sampled(float(z)))
        assert len(engines._RDP_MEMO) <= 50 + len(engines.RDP_ORDERS)


def md(z, n, b, steps):
    return sampled(z, n=n, b=b, steps=steps)


def test_the_ledger_at_the_calibrated_noise_reads_the_checked_values(counted):
    args = (400, 16, 300)
    budget = Budget(1.0, 1e-5)
    z = calibrate_noise_multiplier(md, args, budget, accounting="rdp",
                                   relation="replace_one")
    ledger = PrivacyLedger(md(z, *args), "rdp", "replace_one", budget)
    n = counted["wor"]
    spent = reaccount(ledger)
    assert counted["wor"] == n  # the calibration's check accounted every order at z
    assert spent.within(budget)
    # The same number as a re-accounting with an empty memo.
    engines._RDP_MEMO.clear()
    assert reaccount(ledger) == spent and counted["wor"] > n
