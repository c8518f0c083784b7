"""BudgetAccountant: one budget across scikit-learn workflows (issue 18, item 1, 2, 4)."""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import pickle
import sqlite3
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from scipy.stats import norm
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import skdp
from skdp import (
    BudgetAccountant,
    BudgetError,
    DPLinearRegression,
    DPLogisticRegression,
)
from skdp._warnings import reset_shown
from skdp.model_selection import privacy_cost
from skdp.privacy import Budget, PrivacyLedger, PureDpEvent
from skdp.privacy.accounting import make_engine
from tests.conftest import Untouchable

X_BC, Y_BC = load_breast_cancer(return_X_y=True)
X_BC = X_BC[:300] / 1000.0  # rows of norm about 1
Y_BC = Y_BC[:300]


def gdp_delta(mu: float, eps: float) -> float:
    """Exact delta(eps) of mu-GDP in plain scipy (Dong, Roth & Su 2022, Cor. 2.13)."""
    return norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu)


def gaussian_mu2(event: dpe.DpEvent) -> float:
    """Sum of 1 / z^2 over the Gaussian leaves of a ledger (independent walk)."""
    if isinstance(event, dpe.SelfComposedDpEvent):
        return event.count * gaussian_mu2(event.event)
    if isinstance(event, dpe.ComposedDpEvent):
        return sum(gaussian_mu2(e) for e in event.events)
    if isinstance(event, dpe.NoOpDpEvent):
        return 0.0
    assert isinstance(event, dpe.GaussianDpEvent), event
    return 1.0 / event.noise_multiplier ** 2


def recompose(acc: BudgetAccountant) -> float:
    """Epsilon of all entries at the total delta, by the exact GDP formula."""
    mu = math.sqrt(sum(gaussian_mu2(e.ledger.event) for e in acc.entries))
    delta = acc.spent().delta
    from scipy.optimize import brentq

    return brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, 50.0, xtol=1e-13)


def clf(acc=None, **kw):
    kw.setdefault("epsilon", 1.0)
    # Gaussian releases only (recompose's exact GDP formula): no pure threshold event.
    kw.setdefault("threshold_fraction", 0.0)
    return DPLogisticRegression(data_norm=1.0, accountant=acc, **kw)


# -- workflows -------------------------------------------------------------------------------
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_search_records_every_fit_and_matches_its_price(n_jobs, tmp_path):
    acc = BudgetAccountant(100.0, 1e-3, path=tmp_path / "b.sqlite" if n_jobs > 1 else None)
    search = GridSearchCV(clf(acc), {"epsilon": [0.5, 1.0, 2.0]}, cv=3, n_jobs=n_jobs)
    price = privacy_cost(search, X_BC, Y_BC)
    search.fit(X_BC, Y_BC)
    assert len(acc) == 3 * 3 + 1
    spent = acc.spent()
    # The refit's cost depends on the winner: the price is the largest over candidates.
    assert spent.epsilon <= price.epsilon * (1 + 1e-12)
    assert spent.delta == pytest.approx(price.delta, rel=1e-12)
    refit_eps = search.best_params_["epsilon"]
    if refit_eps == 2.0:
        assert spent.epsilon == pytest.approx(price.epsilon, rel=1e-12)
    assert acc.composition == "gaussian"
    assert spent.epsilon == pytest.approx(recompose(acc), rel=1e-6)
    # Far below basic composition (sum of the entries' epsilons).
    assert spent.epsilon < 0.6 * sum(e.spent.epsilon for e in acc.entries)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_search_whose_folds_and_refit_pick_different_solvers_charges_what_ran(
        n_jobs, tmp_path):
    """DPLasso(solver="auto") chooses from each fit's shape: on 240 rows of 10 features
    the 160-row folds run Frank-Wolfe and the 240-row refit the sufficient statistics.
    The accountant holds each fit's own events and equals the price read before."""
    from skdp import DPLasso

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(240, 10))
    y = np.clip(X[:, 0] + 0.1 * rng.normal(size=240), -1, 1)
    acc = BudgetAccountant(100.0, 1e-3, path=tmp_path / "b.sqlite" if n_jobs > 1 else None)
    est = DPLasso(epsilon=1.0, data_norm=1.0, y_bound=1.0, accountant=acc)
    search = GridSearchCV(est, {"radius": [0.5, 1.0]}, cv=KFold(3), n_jobs=n_jobs)
    price = privacy_cost(search, X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
    assert search.best_estimator_.solver_.name == "sufficient_statistics"
    assert est._solver_name((160, 10)) == "frank_wolfe"
    assert len(acc) == 2 * 3 + 1
    # The refit (last) holds the statistics' Gaussian release, the folds Frank-Wolfe's.
    assert acc.entries[-1].spent == search.best_estimator_.privacy_spent_
    assert "GaussianDpEvent" in repr(acc.entries[-1].ledger.event)
    assert not any("GaussianDpEvent" in repr(e.ledger.event) for e in acc.entries[:-1])
    spent = acc.spent()
    assert spent.epsilon == pytest.approx(price.epsilon, rel=1e-12)
    assert spent.delta == pytest.approx(price.delta, rel=1e-12)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_cross_val_score_records_every_fold(n_jobs, tmp_path):
    acc = BudgetAccountant(10.0, 1e-4, path=tmp_path / "b.sqlite" if n_jobs > 1 else None)
    cv = KFold(4, shuffle=True, random_state=0)
    price = privacy_cost(clf(acc), X_BC, Y_BC, cv=cv)
    cross_val_score(clf(acc), X_BC, Y_BC, cv=cv, n_jobs=n_jobs)
    assert len(acc) == 4
    assert acc.spent().epsilon == pytest.approx(price.epsilon, rel=1e-12)
    assert acc.spent().epsilon == pytest.approx(recompose(acc), rel=1e-6)
    assert {e.source for e in acc.entries} == {"DPLogisticRegression"}
    assert all("random_state" not in e.params for e in acc.entries)


def test_in_memory_accountant_refuses_process_workers_instead_of_undercounting():
    acc = BudgetAccountant(10.0, 1e-4)
    with pytest.raises(BudgetError, match="path="):
        cross_val_score(clf(acc), X_BC, Y_BC, cv=2, n_jobs=2, error_score="raise")
    assert len(acc) == 0


def test_pipeline_total_and_report():
    pipe = make_pipeline(FunctionTransformer(), clf(None, epsilon=0.7)).fit(X_BC, Y_BC)
    assert skdp.privacy_spent(pipe) == pipe[-1].privacy_spent_
    text = str(skdp.privacy_report(pipe))
    assert "GaussianDpEvent" in text and "epsilon=0.7" in text
    assert "<pre>" in skdp.privacy_report(pipe)._repr_html_()
    with pytest.raises(TypeError, match="BudgetAccountant"):
        skdp.privacy_spent(GridSearchCV(clf(), {"alpha": [0.1]}, cv=2).fit(X_BC, Y_BC))


# -- ceiling ---------------------------------------------------------------------------------
def test_ceiling_refuses_before_any_value_is_read():
    acc = BudgetAccountant(1.2, 1e-4)
    first = clf(acc).fit(X_BC, Y_BC)
    before = (len(acc), acc.spent(), acc.to_json())
    est = clf(acc)
    params = est.get_params()
    with pytest.raises(BudgetError, match="ceiling"):
        est.fit(Untouchable(X_BC.shape), Y_BC)
    assert (len(acc), acc.spent(), acc.to_json()) == before
    assert est.get_params() == params
    assert not hasattr(est, "coef_") and not hasattr(est, "privacy_spent_")
    assert first.privacy_spent_.epsilon <= 1.0


def test_failed_fit_takes_its_entry_back():
    acc = BudgetAccountant(10.0, 1e-4)
    clf(acc).fit(X_BC, Y_BC)
    before = acc.to_json()
    bad = X_BC.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        clf(acc).fit(bad, Y_BC)
    assert acc.to_json() == before


def test_non_private_fit_is_refused_by_a_finite_ceiling_and_counted_by_none():
    acc = BudgetAccountant(100.0, 0.5)
    with pytest.warns(skdp.PrivacyLeakWarning), pytest.raises(BudgetError):
        clf(acc, epsilon=math.inf).fit(X_BC, Y_BC)
    assert len(acc) == 0
    counter = BudgetAccountant(math.inf, 0.5)
    reset_shown()  # the epsilon=inf notice is shown once per process
    with pytest.warns(skdp.PrivacyLeakWarning):
        clf(counter, epsilon=math.inf).fit(X_BC, Y_BC)
    assert counter.spent().epsilon == math.inf


def test_pure_ceiling_admits_pure_fits_only():
    acc = BudgetAccountant(2.0)  # delta = 0
    DPLinearRegression(epsilon=1.0, delta=0.0, alpha=0.5, accountant=acc).fit(
        X_BC, Y_BC.astype(float))
    assert acc.spent() == (pytest.approx(1.0), 0.0)
    with pytest.raises(BudgetError, match="delta"):
        clf(acc, epsilon=0.5).fit(X_BC, Y_BC)
    assert len(acc) == 1


def _race(path, barrier, out):
    acc = BudgetAccountant(path=path)
    ledger = PrivacyLedger(PureDpEvent(0.6), "pure", "replace_one", Budget(0.6, 0.0))
    barrier.wait()
    try:
        acc.charge(ledger, source="race")
        out.put("ok")
    except BudgetError:
        out.put("refused")


@pytest.mark.slow  # spawns processes, repeated races
def test_two_processes_racing_for_the_last_budget(tmp_path):
    path = str(tmp_path / "race.sqlite")
    acc = BudgetAccountant(1.0, path=path)
    ctx = multiprocessing.get_context("spawn")
    for _ in range(3):
        barrier, out = ctx.Barrier(2), ctx.Queue()
        procs = [ctx.Process(target=_race, args=(path, barrier, out)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        results = sorted(out.get(timeout=10) for _ in procs)
        # 0.6 + 0.6 > 1: exactly one of the two may pass, whatever the interleaving.
        assert results == ["ok", "refused"]
        assert len(acc) == 1 and acc.spent().epsilon == pytest.approx(0.6)
        acc.refund(acc.entries[0].id)
        acc.resume()  # the refusal stopped it (stop_at_ceiling)


# -- identity, copies and audit trail -----------------------------------------------------------
def test_clone_keeps_the_same_accountant():
    acc = BudgetAccountant(5.0, 1e-5)
    est = clf(acc)
    assert clone(est).accountant is acc
    assert clone(make_pipeline(est)).steps[0][1].accountant is acc
    assert est.get_params()["accountant"] is acc
    assert clf().accountant is None  # no default object substituted


def test_pickle_and_json_keep_every_entry(tmp_path):
    acc = BudgetAccountant(10.0, 1e-4)
    for eps in (0.3, 0.5):
        clf(acc, epsilon=eps).fit(X_BC, Y_BC)
    DPLinearRegression(epsilon=0.4, delta=0.0, alpha=0.5, accountant=BudgetAccountant(1.0)
                       ).fit(X_BC, Y_BC.astype(float))
    copy = pickle.loads(pickle.dumps(acc))
    assert copy.to_json() == acc.to_json() and len(copy) == 2
    with pytest.raises(BudgetError, match="path="):
        clf(copy).fit(X_BC, Y_BC)
    again = BudgetAccountant.from_json(acc.to_json())
    assert again.spent() == acc.spent()
    assert [e.ledger for e in again.entries] == [e.ledger for e in acc.entries]
    json.loads(acc.to_json())  # valid JSON
    clf(again, epsilon=0.2).fit(X_BC, Y_BC)  # a restored accountant records again
    assert len(again) == 3

    path = tmp_path / "trail.sqlite"
    filed = BudgetAccountant.from_json(acc.to_json(), path=path)
    reopened = BudgetAccountant(path=path)
    assert reopened.spent() == acc.spent() and len(reopened) == 2
    assert pickle.loads(pickle.dumps(reopened)).to_json() == reopened.to_json()
    with pytest.raises(BudgetError, match="ceiling"):
        BudgetAccountant(3.0, 1e-4, path=path)
    assert filed.epsilon == 10.0


def test_repr_and_html_show_total_and_remaining():
    acc = BudgetAccountant(3.0, 1e-4)
    clf(acc).fit(X_BC, Y_BC)
    text = repr(acc)
    assert "1 entries" in text and "remaining" in text and "epsilon=1" in text
    page = acc._repr_html_()
    assert "DPLogisticRegression" in page and "remaining" in page


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), "1", True])
def test_bad_ceilings_are_refused(bad):
    with pytest.raises(BudgetError, match="epsilon"):
        BudgetAccountant(bad)
    with pytest.raises(BudgetError, match="delta"):
        BudgetAccountant(1.0, 1.5)


# -- composition bounds ----------------------------------------------------------------------
def test_rdp_composition_of_pure_and_gaussian_entries_beats_basic():
    acc = BudgetAccountant(100.0, 1e-3)
    for _ in range(20):
        acc.charge(PrivacyLedger(PureDpEvent(0.1), "pure", "replace_one", Budget(0.1, 0.0)),
                   source="t")
    gauss = PrivacyLedger(dpe.GaussianDpEvent(5.0), "gaussian", "replace_one",
                          Budget(1.0, 1e-5))
    acc.charge(gauss, source="t")
    spent = acc.spent()
    basic = 2.0 + gauss.spent().epsilon
    assert acc.composition == "rdp" and spent.epsilon < basic
    # Independent check: a fresh RDP engine on randomized response + Gaussian.
    from skdp.privacy.accounting import randomized_response_event

    rdp = make_engine("rdp", "replace_one")
    rdp.compose(dpe.SelfComposedDpEvent(randomized_response_event(0.1), 20))
    rdp.compose(dpe.GaussianDpEvent(5.0))
    assert spent.epsilon == pytest.approx(rdp.get_epsilon(spent.delta), rel=1e-9)


def test_pld_ledgers_enter_by_basic_composition_only():
    acc = BudgetAccountant(100.0, 1e-3)
    # Under replace-one the PLD scale reads z as noise z * Delta / 2: never mixed.
    ledger = PrivacyLedger(dpe.GaussianDpEvent(2.0), "pld", "replace_one", Budget(5.0, 1e-5))
    for _ in range(3):
        acc.charge(ledger, source="t")
    assert acc.composition == "basic"
    assert acc.spent().epsilon == pytest.approx(3 * ledger.spent().epsilon)


def test_accountant_is_fast_enough_to_record_many_entries(tmp_path):
    # Not a timing assert: the totals are sums, so a charge reads one row, not all entries.
    acc = BudgetAccountant(1e6, 1.0, path=tmp_path / "many.sqlite")
    ledger = PrivacyLedger(dpe.GaussianDpEvent(50.0), "gaussian", "replace_one",
                           Budget(0.1, 1e-7))
    with warnings.catch_warnings():
        for _ in range(50):
            acc.charge(ledger, source="t")
    assert len(acc) == 50
    assert acc.spent().epsilon == pytest.approx(recompose(acc), rel=1e-6)


def test_the_total_does_not_depend_on_the_order_of_the_charges(tmp_path):
    """Process workers charge a shared accountant in any order, and a refund or an
    amendment subtracts: the sums are exact, so every order reads the same bits."""
    ledgers = [PrivacyLedger(dpe.GaussianDpEvent(z), "gaussian", "replace_one",
                             Budget(0.1, 1e-6)) for z in (10.4, 18.2, 36.7, 42.0, 46.0)]
    ledgers += [PrivacyLedger(PureDpEvent(e), "pure", "replace_one", Budget(e, 0.0))
                for e in (0.17, 0.673, 0.967)]
    orders = [list(range(len(ledgers))), list(range(len(ledgers)))[::-1],
              [3, 0, 6, 1, 7, 4, 2, 5]]
    totals = set()
    for k, order in enumerate(orders):
        for path in (None, tmp_path / f"order{k}.sqlite"):
            acc = BudgetAccountant(1e3, 1e-2, path=path)
            for i in order:
                acc.charge(ledgers[i], source="t")
            totals.add((acc.spent().epsilon, acc.spent().delta))
            # An extra entry charged and refunded leaves the very same total.
            acc.refund(acc.charge(ledgers[2], source="extra"))
            totals.add((acc.spent().epsilon, acc.spent().delta))
    assert len(totals) == 1, totals


def test_a_non_private_entry_is_counted_apart_and_refunded_exactly(tmp_path):
    """An infinite epsilon (a non-private fit with private bounds: charged, then amended)
    makes the total infinite; refunding it restores the finite total exactly (inf - inf
    would be NaN in a float sum)."""
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    for path in (None, tmp_path / "inf.sqlite"):
        acc = BudgetAccountant(math.inf, 1e-3, path=path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            DPLinearRegression(epsilon=1.0, accountant=acc).fit(X, y)
            before = acc.spent()
            DPLinearRegression(epsilon=math.inf, accountant=acc).fit(X, y)
        assert acc.spent().epsilon == math.inf and len(acc) == 2
        acc.refund(acc.entries[1].id)
        assert acc.spent() == before and len(acc) == 1


def test_totals_on_file_stay_readable_as_floats(tmp_path):
    """The stored totals keep their float fields (what earlier versions read) next to the
    exact ones, and a record with floats only (an earlier version's) is read."""
    from skdp.privacy.composition import Totals

    path = tmp_path / "totals.sqlite"
    acc = BudgetAccountant(10.0, 1e-3, path=path)
    acc.charge(PrivacyLedger(PureDpEvent(0.1), "pure", "replace_one", Budget(0.1, 0.0)),
               source="t")
    with contextlib.closing(sqlite3.connect(path)) as con:
        raw = json.loads(con.execute("SELECT value FROM meta WHERE key='totals'").fetchone()[0])
    assert raw["epsilon"] == 0.1 and isinstance(raw["rdp"][0], float)
    legacy = {k: v for k, v in raw.items() if k != "exact"}
    assert Totals.from_dict(legacy).spent()[0] == Totals.from_dict(raw).spent()[0]


def test_refund_removes_the_entry_it_names(tmp_path):
    for path in (None, tmp_path / "ids.sqlite"):
        acc = BudgetAccountant(100.0, path=path)
        ids = [acc.charge(PrivacyLedger(PureDpEvent(e), "pure", "replace_one",
                                        Budget(e, 0.0)), source=str(e))
               for e in (0.1, 0.2, 5.0)]
        acc.refund(ids[0])
        acc.refund(ids[1])  # positions shifted: the id still names the right entry
        assert [e.source for e in acc.entries] == ["5.0"]
        assert acc.spent().epsilon == pytest.approx(5.0)
        with pytest.raises(KeyError):
            acc.refund(ids[0])


def test_file_accountant_survives_a_change_of_directory_and_never_recreates(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    acc = BudgetAccountant(1.0, path="rel.sqlite")
    acc.charge(PrivacyLedger(PureDpEvent(0.9), "pure", "replace_one", Budget(0.9, 0.0)),
               source="t")
    blob = pickle.dumps(acc)
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    copy = pickle.loads(blob)
    assert copy.spent().epsilon == pytest.approx(0.9)
    (tmp_path / "rel.sqlite").rename(tmp_path / "moved.sqlite")
    with pytest.raises(BudgetError, match="does not exist"):
        pickle.loads(blob)


def _legacy_ledger(d):
    """A stored ledger dict as written before the accounting method's key was renamed
    (``"accountant"``, now ``"accounting"``), composite ledgers included."""
    if "parts" in d:
        return {**d, "parts": [[name, _legacy_ledger(part)] for name, part in d["parts"]]}
    assert d["accounting"] == d["accountant"]  # what new records write
    return {k: v for k, v in d.items() if k != "accounting"}


def test_legacy_records_with_the_accountant_key_are_read(tmp_path):
    path = tmp_path / "legacy.sqlite"
    acc = BudgetAccountant(10.0, 1e-4, path=path)
    clf(acc, epsilon=0.5).fit(X_BC, Y_BC)
    DPLinearRegression(epsilon=0.4, delta=0.0, alpha=0.5, data_norm="auto", accountant=acc
                       ).fit(X_BC, Y_BC.astype(float))  # a composite ledger (auto bounds)
    ledgers, spent, text = [e.ledger for e in acc.entries], acc.spent(), acc.to_json()
    assert [hasattr(led, "parts") for led in ledgers] == [False, True]
    # The file, as a version that wrote "accountant" would have left it.
    with contextlib.closing(sqlite3.connect(path)) as con, con:
        rows = con.execute("SELECT id, ledger FROM entries").fetchall()
        assert len(rows) == 2
        for entry_id, stored in rows:
            con.execute("UPDATE entries SET ledger=? WHERE id=?",
                        (json.dumps(_legacy_ledger(json.loads(stored))), entry_id))
    reopened = BudgetAccountant(path=path)
    assert [e.ledger for e in reopened.entries] == ledgers
    assert reopened.spent() == spent
    # An audit trail exported by such a version.
    data = json.loads(text)
    for e in data["entries"]:
        e["ledger"] = _legacy_ledger(e["ledger"])
    again = BudgetAccountant.from_json(json.dumps(data))
    assert [e.ledger for e in again.entries] == ledgers and again.spent() == spent
    # Records written now use the new key, and repeat the method under the old one for
    # readers older than the rename.
    stored = json.loads(again.to_json())["entries"][0]["ledger"]
    assert stored["accounting"] == stored["accountant"] == ledgers[0].accounting


def test_legacy_pickled_ledger_is_read():
    ledger = PrivacyLedger(dpe.GaussianDpEvent(3.0), "rdp", "replace_one", Budget(1.0, 1e-5))
    legacy = PrivacyLedger.__new__(PrivacyLedger)
    legacy.__setstate__({"event": ledger.event, "accountant": "rdp",
                         "relation": "replace_one", "budget": ledger.budget,
                         "via_add_remove": False, "_spent": None})
    assert legacy == ledger and legacy.accounting == "rdp"
    assert pickle.loads(pickle.dumps(legacy)) == ledger


def test_auto_bounds_are_priced_exactly_and_the_ceiling_composes_as_spent():
    # The reservation is the bound estimates and the solver planned with placeholder
    # bounds, the plan that runs: price and accountant agree (issue 37: 1.09-1.83 before).
    acc = BudgetAccountant(100.0, 1e-3)
    price = privacy_cost(DPLogisticRegression(accountant=acc), X_BC, Y_BC, cv=3)
    cross_val_score(DPLogisticRegression(accountant=acc), X_BC, Y_BC, cv=3)
    assert len(acc) == 3
    assert acc.spent().epsilon == pytest.approx(price.epsilon, rel=1e-9)
    assert acc.spent().delta == pytest.approx(price.delta, rel=1e-9)
    assert price.epsilon < 3.0 * 0.75  # composed tightly, not basic composition of (1, 1e-5)
    # The ceiling check composes like spent(): fits at 0.5 are admitted while the composed
    # total stays under 2.5 (the check added the epsilons plainly: the 6th was refused).
    acc = BudgetAccountant(2.5, 1e-3)
    est = DPLogisticRegression(epsilon=0.5, accountant=acc, classes=[0, 1])
    for _ in range(6):
        est.fit(X_BC, Y_BC)
    assert len(acc) == 6 and acc.spent().epsilon <= 2.5


def test_an_amendment_beyond_the_ceiling_is_refused_and_the_bounds_stay_charged():
    acc = BudgetAccountant(10.0, 1e-3)
    est = DPLogisticRegression(epsilon=1.0, accountant=acc, classes=[0, 1])
    entry = acc.charge(est._planned_ledger(*X_BC.shape, Y_BC), source="test")
    bigger = DPLogisticRegression(epsilon=50.0, classes=[0, 1])._planned_ledger(
        *X_BC.shape, Y_BC)
    before = acc.spent()
    with pytest.raises(BudgetError, match="private bounds"):
        acc.amend(entry, bigger)
    assert acc.spent() == before


def test_default_estimators_in_process_workers_record_their_real_events(tmp_path):
    """Private bounds (the default) reserve, then amend, inside loky workers too: after
    cross_val_score with n_jobs=2 the file holds one entry per fold with the solver's
    events, and the total is within the price."""
    acc = BudgetAccountant(100.0, 1e-3, path=tmp_path / "auto.sqlite")
    est = DPLogisticRegression(accountant=acc, classes=[0, 1])
    price = privacy_cost(est, X_BC, Y_BC, cv=3)
    cross_val_score(est, X_BC, Y_BC, cv=3, n_jobs=2)
    assert len(acc) == 3
    for entry in acc.entries:
        assert [name for name, _ in entry.ledger.parts] == ["bounds", "fit", "threshold"]
        assert isinstance(entry.ledger.part("fit").event, dpe.SelfComposedDpEvent)
    assert acc.spent().epsilon <= price.epsilon and acc.spent().delta <= price.delta


# -- stopping at the ceiling (issue 37) ------------------------------------------------------
def test_a_search_that_reaches_the_ceiling_stops_with_the_budget_error():
    # 3 candidates x 3 folds at 1.0 under a ceiling of 4.5: the search used to go on with
    # NaN scores and refit a survivor. Now every charge after the first refusal is refused
    # (nothing read, nothing recorded) and the refit raises BudgetError.
    acc = BudgetAccountant(4.5)
    est = DPLogisticRegression(epsilon=1.0, delta=0.0, data_norm=3000.0, classes=[0, 1],
                               solver="output_perturbation", accountant=acc)
    search = GridSearchCV(est, {"alpha": [0.01, 0.1, 1.0]}, cv=KFold(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(BudgetError, match="stopped at its ceiling"):
            search.fit(X_BC, Y_BC)
    assert acc.stopped and len(acc) == 4 and acc.spent().epsilon <= 4.5
    assert not hasattr(search, "refit_time_")  # the refit raised
    assert "stopped" in repr(acc)
    # A smaller fit is refused too until resume().
    small = DPLogisticRegression(epsilon=0.1, delta=0.0, data_norm=3000.0, classes=[0, 1],
                                 solver="output_perturbation", accountant=acc)
    with pytest.raises(BudgetError, match="resume"):
        small.fit(X_BC, Y_BC)
    acc.resume()
    small.fit(X_BC, Y_BC)
    assert len(acc) == 5 and not acc.stopped


def test_stop_at_ceiling_false_judges_each_charge_alone():
    acc = BudgetAccountant(1.0, stop_at_ceiling=False)
    est = DPLinearRegression(epsilon=0.8, delta=0.0, alpha=0.5, accountant=acc)
    est.fit(X_BC, Y_BC.astype(float))
    with pytest.raises(BudgetError):
        est.fit(X_BC, Y_BC.astype(float))
    est.set_params(epsilon=0.1).fit(X_BC, Y_BC.astype(float))
    assert len(acc) == 2 and not acc.stopped


def test_the_stop_is_shared_through_the_file(tmp_path):
    acc = BudgetAccountant(0.5, path=tmp_path / "stop.sqlite")
    ledger = PrivacyLedger(PureDpEvent(0.4), "pure", "replace_one", Budget(0.4, 0.0))
    acc.charge(ledger, source="test")
    with pytest.raises(BudgetError):
        acc.charge(ledger, source="test")
    other = pickle.loads(pickle.dumps(acc))
    assert other.stopped
    small = PrivacyLedger(PureDpEvent(0.05), "pure", "replace_one", Budget(0.05, 0.0))
    with pytest.raises(BudgetError, match="stopped"):
        other.charge(small, source="test")
    other.resume()
    acc.charge(small, source="test")
    assert len(acc) == 2


def test_a_binding_delta_ceiling_is_named_with_the_delta_to_set():
    acc = BudgetAccountant(epsilon=5.0)  # delta 0: the default Gaussian fits need delta
    with pytest.raises(BudgetError, match=r"delta ceiling binds.*delta=\.\.\.\) to at least "
                                          r"1e-05"):
        clf(acc).fit(X_BC, Y_BC)
    # Objective perturbation's (epsilon, delta) has no Renyi curve: its deltas add up.
    acc = BudgetAccountant(epsilon=50.0, delta=2e-5, stop_at_ceiling=False)
    for _ in range(2):
        clf(acc, solver="objective_perturbation", delta=1e-5).fit(X_BC, Y_BC)
    with pytest.raises(BudgetError, match="admits 2 fits of delta 1e-05"):
        clf(acc, solver="objective_perturbation", delta=1e-5).fit(X_BC, Y_BC)
    assert "delta ceiling is reached" in repr(acc)
    assert "delta ceiling is reached" in acc._repr_html_()


def test_gaussian_fits_compose_at_the_delta_ceiling_whatever_their_deltas_sum_to():
    # README's accountant (delta 1e-4) admitted 10 default fits of delta 1e-5 (the deltas
    # added up); their Renyi curves compose at the ceiling's delta instead.
    acc = BudgetAccountant(epsilon=20.0, delta=1e-4)
    for _ in range(12):
        clf(acc, epsilon=0.5).fit(X_BC, Y_BC)
    spent = acc.spent()
    assert len(acc) == 12 and spent.delta == 1e-4 and spent.epsilon <= 20.0
    assert acc.composition in ("rdp", "gaussian")
    # The same total, re-accounted from the entries by a fresh RDP engine.
    rdp = make_engine("rdp")
    for e in acc.entries:
        rdp.compose(e.ledger.event)
    assert spent.epsilon <= rdp.get_epsilon(1e-4) * (1 + 1e-9)
    assert "delta ceiling is reached" not in repr(acc)
