"""The check of a plan against its budget is an independent re-accounting of its ledger.

``reaccount`` (and ``PrivacyLedger.spent``, ``BaseDPSolver.prepare``) must compose the
ledger's events with a fresh composition engine, never read the calibration's caches, report the
calibration engine's numbers exactly, and catch a ledger whose noise is too small.
"""

import ast
import dataclasses
import inspect
import math
import pickle

import numpy as np
import pytest
from dp_accounting import dp_event as dpe

import skdp.privacy
import skdp.privacy.accounting as accounting
from skdp.exceptions import PrivacyAccountingError
from skdp.privacy import (
    Budget,
    PrivacyLedger,
    PrivacySpent,
    add_remove_budget,
    calibrate_noise_multiplier,
    calibration,
    epsilon_spent,
    gaussian_event,
    ledger,
    reaccount,
    subsampled_gaussian_event,
)
from skdp.privacy.events import ApproxDpEvent, PureDpEvent, randomized_response_event
from skdp.solvers import NoisyGD, NoisyMirrorDescent
from tests.conftest import make_problem

BUDGET = Budget(1.0, 1e-5)


def _gaussians(z, steps, accounting):
    return dpe.SelfComposedDpEvent(
        gaussian_event(z, 1.0, accounting=accounting, relation="replace_one"), steps)


def _wor(z, steps):
    return dpe.SelfComposedDpEvent(subsampled_gaussian_event(
        z, 1.0, n_samples=1000, batch_size=50, sampling="without_replacement",
        accounting="rdp", relation="replace_one"), steps)


def _poisson(z, steps, accounting):
    return dpe.SelfComposedDpEvent(subsampled_gaussian_event(
        z, 1.0, n_samples=1000, batch_size=50, sampling="poisson", accounting=accounting,
        relation="add_remove"), steps)


# (factory of the event from its noise multiplier, accounting method, via_add_remove)
CASES = {
    "gaussian": (lambda z: _gaussians(z, 4, "gaussian"), "gaussian", False),
    "rdp": (lambda z: _gaussians(z, 4, "rdp"), "rdp", False),
    "pld": (lambda z: _gaussians(z, 4, "pld"), "pld", False),
    "rdp-wor": (lambda z: _wor(z, 10), "rdp", False),
    "pld-poisson": (lambda z: _poisson(z, 10, "pld"), "pld", True),
    "rdp-poisson": (lambda z: _poisson(z, 10, "rdp"), "rdp", True),
}
# PLD calibrations are slow: their ledgers are checked at the multiplier calibrated for
# the exact Gaussian (plain releases: PLD needs it up to its discretisation) or for RDP
# (Poisson batches: RDP is looser than PLD, so needs more noise).
REFERENCE = {"pld": "gaussian", "pld-poisson": "rdp-poisson"}


def _case_ledger(name, z, budget=BUDGET):
    factory, accounting, via = CASES[name]
    return PrivacyLedger(factory(z), accounting, "replace_one", budget, via_add_remove=via)


def _calibrated(name, budget=BUDGET):
    """The smallest multiplier that the calibration says meets ``budget``."""
    factory, accounting, via = CASES[name]
    target, relation = (add_remove_budget(budget), "add_remove") if via else (
        budget, "replace_one")
    return calibrate_noise_multiplier(_case_event, (name,), target, accounting=accounting,
                                      relation=relation)


def _case_event(z, name):
    return CASES[name][0](z)


def _calibration_path(led):
    """The spend as the calibration's memoised ``epsilon_spent`` reports it."""
    if led.via_add_remove:
        inner = add_remove_budget(led.budget)
        eps = epsilon_spent(led.event, inner.delta, accounting=led.accounting,
                            relation="add_remove")
        return PrivacySpent(2.0 * eps, (1.0 + math.exp(eps)) * inner.delta)
    return PrivacySpent(epsilon_spent(led.event, led.budget.delta, accounting=led.accounting,
                                      relation=led.relation), led.budget.delta)


def _other_ledgers():
    return [
        PrivacyLedger(dpe.ComposedDpEvent([PureDpEvent(0.3), dpe.LaplaceDpEvent(4.0)]), "pure",
                      "replace_one", Budget(1.0, 0.0)),
        PrivacyLedger(dpe.ComposedDpEvent([ApproxDpEvent(0.4, 1e-6), PureDpEvent(0.5)]), "basic",
                      "replace_one", Budget(1.0, 1e-6)),
        PrivacyLedger(dpe.SelfComposedDpEvent(randomized_response_event(0.05), 64), "pld",
                      "replace_one", Budget(2.0, 1e-6)),
        PrivacyLedger(dpe.NonPrivateDpEvent(), "rdp", "replace_one", Budget(math.inf, 1e-5)),
    ]


def _all_ledgers():
    return [_case_ledger(name, z) for name in CASES for z in (2.0, 6.0)] + _other_ledgers()


class _PoisonedCache(dict):
    """A stand-in for the calibration's memo that fails on any use."""

    def _refuse(self, *args, **kwargs):
        raise AssertionError("the re-accounting read or wrote the calibration's cache")

    get = __getitem__ = __setitem__ = __contains__ = setdefault = _refuse


def _refuse(*args, **kwargs):
    raise AssertionError("the re-accounting went through the calibration")


@pytest.fixture
def no_calibration(monkeypatch):
    """Every cache and accounting entry point of the calibration raises when used."""
    for module in (calibration, accounting):
        monkeypatch.setattr(module, "_SPENT_CACHE", _PoisonedCache())
        for name in ("epsilon_spent", "_composed", "_calibrate_cached",
                     "calibrate_noise_multiplier"):
            monkeypatch.setattr(module, name, _refuse)


def test_reaccount_reports_the_calibration_engines_numbers_exactly():
    for led in _all_ledgers():
        assert reaccount(led) == _calibration_path(led) or not led.budget.is_private
    assert reaccount(_other_ledgers()[-1]) == PrivacySpent(math.inf, 1e-5)


def test_reaccount_uses_no_calibration_code_or_cache(no_calibration):
    for led in _all_ledgers():
        spent = reaccount(led)
        assert spent.epsilon >= 0 and spent == led.spent()


def test_ledger_module_does_not_import_the_calibration():
    tree = ast.parse(inspect.getsource(ledger))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
    assert "skdp.privacy.calibration" not in imported
    assert "skdp.privacy.accounting" not in imported
    assert not {"epsilon_spent", "_SPENT_CACHE", "_calibrate_cached"} & set(vars(ledger))


@pytest.mark.parametrize("name", sorted(CASES))
def test_reaccount_catches_an_under_noised_ledger(name):
    if name in REFERENCE:
        z = 1.01 * _calibrated(REFERENCE[name])
        under = 0.9 * z if name == "pld" else 0.5 * z
    else:
        z = _calibrated(name)
        under = 0.9 * z
    assert reaccount(_case_ledger(name, z)).within(BUDGET)
    assert not reaccount(_case_ledger(name, under)).within(BUDGET)


def test_reaccount_is_not_fooled_by_a_poisoned_calibration_cache():
    # The calibration's memo says that an under-noised ledger meets the budget (as a stale
    # or corrupted entry would): the memoised path believes it, the re-accounting does not.
    z = _calibrated("rdp")
    led = _case_ledger("rdp", 0.5 * z)
    key = (repr(led.event), float(BUDGET.delta), "rdp", "replace_one")
    calibration._SPENT_CACHE[key] = 0.5
    try:
        assert _calibration_path(led).within(BUDGET)
        assert not reaccount(led).within(BUDGET)
        assert not led.spent().within(BUDGET)
    finally:
        calibration._SPENT_CACHE.pop(key, None)


def _count_fresh_engines(monkeypatch):
    calls = []
    real = ledger.make_engine

    def counting(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(ledger, "make_engine", counting)
    return calls


def test_spent_remembers_this_ledgers_reaccount_only(monkeypatch):
    calls = _count_fresh_engines(monkeypatch)
    led = _case_ledger("rdp", 2.0)
    first = led.spent()
    assert led.spent() == first and len(calls) == 1
    # reaccount() always accounts afresh; an equal ledger shares nothing with this one.
    assert led.reaccount() == first and len(calls) == 2
    twin = _case_ledger("rdp", 2.0)
    assert twin == led and hash(twin) == hash(led) and repr(twin) == repr(led)
    assert twin.spent() == first and len(calls) == 3
    # The memo travels with the ledger (loky workers, pickles) and is not a field value.
    copy = pickle.loads(pickle.dumps(led))
    assert copy == led and copy.spent() == first and len(calls) == 3
    assert dataclasses.replace(led).spent() == first and len(calls) == 4


def test_group_privacy_conversion_is_recomputed():
    led = _case_ledger("pld-poisson", 6.0)
    spent = reaccount(led)
    inner = add_remove_budget(BUDGET)
    half = epsilon_spent(led.event, inner.delta, accounting="pld", relation="add_remove")
    assert spent == PrivacySpent(2.0 * half, (1.0 + math.exp(half)) * inner.delta)
    # A non-private add/remove release: infinite epsilon and delta, never within budget.
    nonprivate = PrivacyLedger(dpe.NonPrivateDpEvent(), "pld", "replace_one", BUDGET,
                               via_add_remove=True)
    assert not reaccount(nonprivate).within(BUDGET)


# ---------------------------------------------------------------------------------------
# The solvers' prepare/solve
# ---------------------------------------------------------------------------------------
def _halve_gaussians(event):
    """``event`` with every Gaussian noise multiplier halved (an under-noised ledger)."""
    if isinstance(event, dpe.GaussianDpEvent):
        return dpe.GaussianDpEvent(0.5 * event.noise_multiplier)
    if isinstance(event, dpe.SelfComposedDpEvent):
        return dpe.SelfComposedDpEvent(_halve_gaussians(event.event), event.count)
    if isinstance(event, dpe.ComposedDpEvent):
        return dpe.ComposedDpEvent([_halve_gaussians(e) for e in event.events])
    if isinstance(event, dpe.PoissonSampledDpEvent):
        return dpe.PoissonSampledDpEvent(event.sampling_probability,
                                         _halve_gaussians(event.event))
    if isinstance(event, dpe.SampledWithoutReplacementDpEvent):
        return dpe.SampledWithoutReplacementDpEvent(
            event.source_dataset_size, event.sample_size, _halve_gaussians(event.event))
    return event


SOLVER_CASES = [
    (lambda: NoisyGD(n_iter=20), "gaussian"),
    (lambda: NoisyGD(n_iter=20), "rdp"),
    (lambda: NoisyMirrorDescent(n_iter=20, batch_size=10), "rdp"),
    (lambda: NoisyMirrorDescent(n_iter=20, batch_size=10, sampling="poisson"), "rdp"),
]


@pytest.mark.parametrize("make, accounting", SOLVER_CASES)
def test_prepare_reaccounts_afresh_even_when_the_plan_is_cached(monkeypatch, make, accounting):
    spec = make_problem(n=200, d=5).spec
    solver = make()
    solver.prepare(spec, BUDGET, accounting=accounting)  # warms the calibration caches
    calls = _count_fresh_engines(monkeypatch)
    plan, led, spent = solver.prepare(spec, BUDGET, accounting=accounting)
    assert len(calls) == 1 and spent.within(BUDGET)
    assert spent == _calibration_path(led) and led.spent() == spent and len(calls) == 1


@pytest.mark.parametrize("make, accounting", SOLVER_CASES)
def test_prepare_refuses_an_under_noised_plan(monkeypatch, make, accounting):
    spec = make_problem(n=200, d=5).spec
    solver = make()
    honest = solver.plan(spec, BUDGET, accounting, "replace_one")
    under = dataclasses.replace(honest, event=_halve_gaussians(honest.event))
    monkeypatch.setattr(solver, "plan", lambda *args: under)
    with pytest.raises(PrivacyAccountingError, match="refusing to run"):
        solver.prepare(spec, BUDGET, accounting=accounting)


def test_prepare_does_not_consult_the_calibration_cache(monkeypatch):
    spec = make_problem(n=200, d=5).spec
    solver = NoisyGD(n_iter=20)
    plan = solver.plan(spec, BUDGET, "rdp", "replace_one")
    monkeypatch.setattr(solver, "plan", lambda *args: plan)
    monkeypatch.setattr(calibration, "_SPENT_CACHE", _PoisonedCache())
    monkeypatch.setattr(calibration, "epsilon_spent", _refuse)
    _, led, spent = solver.prepare(spec, BUDGET, accounting="rdp")
    assert spent.within(BUDGET) and spent.epsilon >= 0.99 * BUDGET.epsilon


def test_solve_runs_the_prepared_plan_for_its_own_budget_only():
    problem = make_problem(n=200, d=5)
    solver = NoisyGD(n_iter=5)
    prepared = solver.prepare(problem.spec, BUDGET, accounting="gaussian")
    result = solver.solve(problem, BUDGET, np.random.default_rng(0), accounting="gaussian",
                          prepared=prepared)
    assert result.ledger is prepared[1] and result.spent == prepared[2]
    with pytest.raises(PrivacyAccountingError, match="another budget|not for"):
        solver.solve(problem, Budget(2.0, 1e-5), np.random.default_rng(0),
                     accounting="gaussian", prepared=prepared)


# ---------------------------------------------------------------------------------------
# The split of the accounting module
# ---------------------------------------------------------------------------------------
def test_every_accounting_name_is_re_exported():
    from skdp.privacy import engines, events

    modules = (engines, calibration, events, ledger)
    for name in accounting.__all__:
        obj = getattr(accounting, name)
        assert any(getattr(m, name, None) is obj for m in modules), name
        if name in skdp.privacy.__all__:
            assert getattr(skdp.privacy, name) is obj
    # The calibration's memo is ONE dict, whichever module it is read from.
    assert accounting._SPENT_CACHE is calibration._SPENT_CACHE
