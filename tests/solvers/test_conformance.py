"""One conformance suite for every registered solver (future solvers join automatically)."""

import math

import numpy as np
import pytest
from scipy.stats import chi2

from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import L1Ball, L2Ball
from skdp.privacy import Budget, add_remove_budget, epsilon_spent
from skdp.solvers import DPSVRG, SOLVERS
from tests.conftest import make_problem
from tests.solvers._cases import cases

#: Relative slack of eight units in the last place: z * (c / z) is constant only in exact
#: arithmetic, and its rounding follows the root finder behind the calibration.
ULPS_8 = 1.0 + 8.0 * np.finfo(float).eps


def _fast(name):
    """The solver ``name`` with its declared small settings (its defaults without)."""
    fast = cases(name).fast
    return (fast or SOLVERS[name])()


def _converged(name):
    """The solver ``name`` with settings that reach the ERM optimum at epsilon = inf."""
    return cases(name).converged()


# What each solver's problems need, read from its declared capabilities (a new solver's
# declaration is enough to join the suite).
_BALLS = {"l2": L2Ball, "l1": L1Ball}


def _caps(name):
    return SOLVERS[name].capabilities


# Solvers whose declaration needs a bounded set without offering l2: the suite's problems
# get the first ball they accept.
CONSTRAINT = {name: _BALLS[next(k for k in _caps(name).constraints if k in _BALLS)]
              for name in SOLVERS
              if _caps(name).bounded_constraint and "l2" not in _caps(name).constraints}
# Solvers that accept no constraint set (objective perturbation's change of variables needs
# an unconstrained argmin): test_constraint_is_respected checks that they refuse one.
UNCONSTRAINED_ONLY = {name for name in SOLVERS if _caps(name).constraints == ("none",)}
# Solvers that do not accept the logistic loss: their problems use their first loss
# (one output).
LOSS = {name: _caps(name).losses[0] for name in SOLVERS
        if "logistic" not in _caps(name).losses}


def _problem(name, constraint=None, **kw):
    """``make_problem`` with the feasible set, size and loss the solver needs."""
    if constraint is None and name in CONSTRAINT:
        constraint = CONSTRAINT[name](1.0)
    kw["n"] = max(kw.get("n", 200), cases(name).min_samples, _caps(name).min_samples)
    if name in LOSS:
        kw.update(loss=LOSS[name], n_classes=2)
    if cases(name).intercept:
        kw.update(intercept=True, declare_intercept=True)
    return make_problem(constraint=constraint, **kw)


def _n_outputs(name, n_classes):
    return 1 if name in LOSS else n_classes


# Mini-batch solvers (a ``sampling`` parameter): accounted by PLD only with Poisson
# batches (sampling="poisson").
SAMPLED = {name for name in SOLVERS if "sampling" in SOLVERS[name]().get_params()}
BUDGET = Budget(1.0, 1e-5)
NAMES = sorted(SOLVERS)
#: Solvers that reach the ERM optimum at epsilon = inf with their declared settings.
ERM = sorted(name for name in NAMES if cases(name).converged is not None)


@pytest.mark.parametrize("name", NAMES)
def test_every_registered_solver_declares_its_test_data(name):
    """Found by convention (tests/solvers/_cases.py): settings, sensitivity, audits."""
    declared = cases(name)
    assert declared.fast is None or declared.fast().name == name
    assert declared.converged is None or declared.converged().name == name
    assert all(case.solver().name == name for case in declared.audits)


def test_registry_names_match_classes():
    for name, cls in SOLVERS.items():
        assert cls.name == name
        assert "Privacy guarantee" in cls.__doc__, f"{name} must document its guarantee"
        assert cls.capabilities.default_accounting in cls.capabilities.accounting_methods


def _accounting_cases():
    for name in NAMES:
        for acc in SOLVERS[name].capabilities.accounting_methods:
            # PLD calibrations of subsampled ledgers take 5-15 s each: slow (run in CI).
            slow = acc == "pld" and name in SAMPLED
            yield pytest.param(name, acc, marks=pytest.mark.slow) if slow else (name, acc)


@pytest.mark.parametrize("name, accounting", list(_accounting_cases()))
@pytest.mark.parametrize("eps", [0.3, 2.0])
def test_calibration_round_trip(name, accounting, eps):
    solver = _fast(name)
    problem = _problem(name)
    if name in SAMPLED and accounting == "pld":
        solver.set_params(sampling="poisson")
    budget = Budget(eps, 1e-5)
    plan = solver.plan(problem.spec, budget, accounting, "replace_one")
    # Re-account the ledger independently of the solver.
    if plan.via_add_remove:
        # Group privacy: the add/remove ledger at (eps/2, delta/(1+e^(eps/2))).
        inner = add_remove_budget(budget)
        half = epsilon_spent(plan.event, inner.delta, accounting=accounting,
                             relation="add_remove")
        spent, spent_delta = 2 * half, (1 + np.exp(half)) * inner.delta
        assert spent_delta <= budget.delta
    else:
        spent = epsilon_spent(plan.event, budget.delta, accounting=accounting,
                              relation="replace_one")
    assert spent <= eps
    assert spent >= 0.99 * eps


@pytest.mark.parametrize("name", NAMES)
def test_plan_uses_public_quantities_only(name):
    a, b = _problem(name, seed=1), _problem(name, seed=2)
    pa = _fast(name).plan(a.spec, BUDGET, _fast(name).resolve_accounting("auto"), "replace_one")
    pb = _fast(name).plan(b.spec, BUDGET, _fast(name).resolve_accounting("auto"), "replace_one")
    assert pa.constants() == pb.constants() and pa.n_iter == pb.n_iter


def _noise_scales(plan):
    return {k: v for k, v in plan.constants().items() if k.startswith("sigma")}


@pytest.mark.parametrize("name", NAMES)
def test_noise_non_increasing_in_epsilon(name):
    problem = _problem(name)
    solver = _fast(name)
    acc = solver.resolve_accounting("auto")
    previous = None
    for eps in (0.1, 0.3, 1.0, 3.0, 10.0):
        scales = _noise_scales(solver.plan(problem.spec, Budget(eps, 1e-5), acc, "replace_one"))
        assert scales, "a solver's plan must expose its noise levels as fields sigma*"
        if previous is not None:
            for key, value in scales.items():
                # Non-increasing up to 8 ulps: the noise levels come out of root finders
                # and closed forms whose last bits vary across numpy/scipy releases.
                assert np.all(np.asarray(value) <= np.asarray(previous[key]) * ULPS_8)
        previous = scales


@pytest.mark.parametrize("name", NAMES)
def test_seeds_reproduce_and_differ(name):
    problem = _problem(name)
    w1 = _fast(name).solve(problem, BUDGET, 7).coef
    w2 = _fast(name).solve(problem, BUDGET, 7).coef
    w3 = _fast(name).solve(problem, BUDGET, 8).coef
    np.testing.assert_array_equal(w1, w2)
    assert not np.allclose(w1, w3)


@pytest.mark.parametrize("name", NAMES)
def test_result_shapes_and_fixed_iterations(name):
    problem = _problem(name, n_classes=3)
    res = _fast(name).solve(problem, BUDGET, 0)
    assert res.coef.shape == (problem.spec.n_params, _n_outputs(name, 3))
    assert np.all(np.isfinite(res.coef))
    assert res.n_iter == res.plan.n_iter
    assert res.spent.epsilon <= BUDGET.epsilon


@pytest.mark.parametrize("name", NAMES)
def test_constraint_is_respected(name):
    problem = _problem(name, constraint=CONSTRAINT.get(name, L2Ball)(0.05), alpha=0.01)
    if name in UNCONSTRAINED_ONLY:
        with pytest.raises(IncompatibleSolverError, match="constrain"):
            _fast(name).solve(problem, Budget(0.5, 1e-5), 0)
        return
    res = _fast(name).solve(problem, Budget(0.5, 1e-5), 0)
    assert np.linalg.norm(res.coef[: problem.spec.n_penalized]) <= 0.05 + 1e-12


@pytest.mark.parametrize("name", ERM)
def test_epsilon_inf_reaches_the_exact_optimum(name):
    problem = _problem(name, n=100, d=4, alpha=0.1)
    res = _converged(name).solve(problem, Budget(math.inf, 0.0), 0)
    # Optimality certificate: F is alpha-strongly convex, so ||w - w*|| <= ||grad F||/alpha.
    assert np.linalg.norm(problem.gradient(res.coef)) < 1e-8
    # Another seed gives the same point: no noise at epsilon = inf.
    res2 = _converged(name).solve(problem, Budget(math.inf, 0.0), 1)
    assert np.linalg.norm(res.coef - res2.coef) <= 2e-8 / 0.1


@pytest.mark.parametrize("name", ERM)
def test_finite_epsilon_does_not_reach_the_optimum(name):
    problem = _problem(name, n=100, d=4, alpha=0.1)
    res = _converged(name).solve(problem, BUDGET, 0)
    assert np.linalg.norm(problem.gradient(res.coef)) > 1e-4


@pytest.mark.parametrize("name", NAMES)
def test_incompatible_accounting_is_rejected(name):
    solver = _fast(name)
    bad = [a for a in ("gaussian", "rdp", "pld", "pure", "basic")
           if a not in solver.capabilities.accounting_methods]
    for acc in bad:
        with pytest.raises(IncompatibleSolverError):
            solver.solve(_problem(name), BUDGET, 0, accounting=acc)


# Frank-Wolfe selects vertices (no Gaussian output); the shuffled method's zero-signal
# output (K-norm local noise) and the noise of the sufficient statistics (released before
# a nonlinear solve) are checked in their own test files.
@pytest.mark.parametrize("name", [name for name in NAMES if cases(name).zero_signal])
def test_zero_signal_noise_level(name):
    """With all-zero rows every gradient vanishes, so the output is pure noise.

    One step from w = 0: the output is ``-eta * (sum of the Gaussian draws)``, whose
    per-coordinate variance the plan states. Chi-square test on d coordinates; two-sided
    failure probability 1e-6 (fixed seed).
    """
    d = 3000
    declared = cases(name)
    problem = make_problem(n=50, d=d, zero=True, alpha=declared.zero_signal_alpha)
    solver = declared.zero_signal()
    res = solver.solve(problem, BUDGET, 123)
    # The per-coordinate variance of the output, from the plan (declared with the solver).
    var = declared.zero_signal_variance(res.plan, problem.spec)
    out = res.coef
    stat = float(np.sum(out[:d] ** 2) / var)
    lo, hi = chi2.ppf(5e-7, d), chi2.ppf(1 - 5e-7, d)
    assert lo < stat < hi


@pytest.mark.slow
@pytest.mark.parametrize("accounting", ["rdp", "pld"])
def test_poisson_noise_is_non_increasing_up_to_large_epsilon(accounting):
    """Regression: the group-privacy delta / (1 + e^(eps/2)) once made PLD accounting
    demand z = 32768 at epsilon = 50 (larger noise for a larger budget)."""
    problem = make_problem(n=1000, d=5)
    solver = DPSVRG(sampling="poisson", n_epochs=2, inner_steps=8, batch_size=32)
    zs = [solver.plan(problem.spec, Budget(e, 1e-5), accounting, "replace_one")
          .noise_multiplier for e in (1.0, 10.0, 50.0)]
    assert zs[0] >= zs[1] >= zs[2]




@pytest.mark.parametrize("name", NAMES)
def test_reported_steps_are_the_planned_steps(name):
    """``problem.advance`` is the progress output's only source: an iterative solver
    reports exactly ``plan.n_iter`` steps, in the same calls on two data sets (the counts
    come from the plan, never from the data)."""
    import dataclasses

    solver = _fast(name)
    calls = []
    for seed in (1, 2):
        problem = _problem(name, seed=seed)
        log = []
        problem = dataclasses.replace(problem, on_steps=log.append)
        result = solver.solve(problem, BUDGET, random_state=0)
        calls.append(log)
    assert calls[0] == calls[1]
    if cases(name).one_release:  # no steps; the estimator prints the tenths after it
        assert result.n_iter == 1 and sum(calls[0]) in (0, 1)
    else:
        assert sum(calls[0]) == result.n_iter > 0


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_a_diverging_run_warns_nothing(name, recwarn):
    # Whether scores, derivatives or iterates overflow depends on the data: a solver's run
    # must not say so (BaseDPSolver.solve runs it with floating-point warnings off). An
    # absurd step makes the iterates overflow in every solver that takes a step size.
    solver = _fast(name)
    if "step_size" not in solver.get_params():
        pytest.skip("no step size to make the iterates diverge")
    solver.set_params(step_size=1e300)
    problem = _problem(name)
    try:
        solver.prepare(problem.spec, Budget(1.0, 1e-5))
    except (ValueError, IncompatibleSolverError):
        pytest.skip("the solver refuses this step size before reading data")
    solver.solve(problem, Budget(1.0, 1e-5), 0)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
