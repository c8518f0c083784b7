"""One conformance suite for every registered solver (future solvers join automatically)."""

import math

import numpy as np
import pytest
from scipy.stats import chi2

from skdp.exceptions import IncompatibleSolverError
from skdp.geometry import L1Ball, L2Ball
from skdp.privacy import Budget, add_remove_budget, epsilon_spent
from skdp.solvers import (
    DPSVRG,
    SOLVERS,
    DPAccMD,
    DPSVRGPlusPlus,
    LocalizedMirrorDescent,
    NoisyGD,
    NoisyMirrorDescent,
    OutputPerturbation,
)
from skdp.solvers.approx_objective_perturbation import ApproxObjectivePerturbation
from skdp.solvers.frank_wolfe import PrivateFrankWolfe
from skdp.solvers.objective_perturbation import ObjectivePerturbation
from skdp.solvers.phased_sgd import PhasedDPSGD
from skdp.solvers.regularized_mirror_descent import RegularizedMirrorDescent
from skdp.solvers.sufficient_statistics import SufficientStatistics
from skdp.solvers.truncated_mirror_descent import (
    ShuffledTruncatedMirrorDescent,
    TruncatedMirrorDescent,
)
from tests.conftest import make_problem

#: Relative slack of eight units in the last place: z * (c / z) is constant only in exact
#: arithmetic, and its rounding follows the root finder behind the calibration.
ULPS_8 = 1.0 + 8.0 * np.finfo(float).eps

class _OrDefaults(dict):
    """Fast configurations by name; a solver without one runs with its defaults."""

    def __missing__(self, name):
        return SOLVERS[name]


# Small, fast configurations.
FAST = _OrDefaults({
    "gd": lambda: NoisyGD(n_iter=30),
    "svrg": lambda: DPSVRG(n_epochs=3, batch_size=10),
    "svrg++": lambda: DPSVRGPlusPlus(n_epochs=3, inner_steps=3, batch_size=10),
    "output_perturbation": OutputPerturbation,
    "accelerated_mirror_descent": lambda: DPAccMD(n_iter=30),
    "mirror_descent": lambda: NoisyMirrorDescent(n_iter=30, batch_size=10),
    "localized_mirror_descent": lambda: LocalizedMirrorDescent(
        n_phases=3, batch_size=10, max_iter=10, step_size=1.0),
    "frank_wolfe": lambda: PrivateFrankWolfe(n_phases=2),
    "objective_perturbation": ObjectivePerturbation,
    "approx_objective_perturbation": ApproxObjectivePerturbation,
    "regularized_mirror_descent": lambda: RegularizedMirrorDescent(n_iter=10),
    "truncated_mirror_descent": lambda: TruncatedMirrorDescent(n_iter=10, truncation=1.0),
    "shuffled_truncated_mirror_descent": lambda: ShuffledTruncatedMirrorDescent(
        n_iter=10, truncation=1.0),
    "phased_sgd": PhasedDPSGD,
    "sufficient_statistics": SufficientStatistics,
})
# Configurations that reach the exact optimum when epsilon = inf.
CONVERGED = {
    "gd": lambda: NoisyGD(n_iter=3000),
    "svrg": lambda: DPSVRG(n_epochs=20, inner_steps=50, batch_size=10, step_size=0.5),
    "svrg++": lambda: DPSVRGPlusPlus(n_epochs=11, inner_steps=2, batch_size=10, step_size=0.5),
    "output_perturbation": OutputPerturbation,
    "accelerated_mirror_descent": DPAccMD,
    "mirror_descent": lambda: NoisyMirrorDescent(n_iter=3000, batch_size=10**6, step_size=1.0,
                                                 iterate="last"),
    "objective_perturbation": ObjectivePerturbation,
    "approx_objective_perturbation": ApproxObjectivePerturbation,
    "sufficient_statistics": SufficientStatistics,
}
# Solvers that do not minimise the full empirical risk by design: localized mirror descent
# private Frank-Wolfe, phased DP-SGD and the truncated methods use each record once (one-pass,
# population-risk methods), and regularized mirror descent converges to the optimum of
# its OWN regularised objective (Su-Zhao-Wang Alg. 3): none reaches the ERM optimum.
NOT_ERM = {"localized_mirror_descent", "frank_wolfe", "truncated_mirror_descent",
           "shuffled_truncated_mirror_descent", "regularized_mirror_descent", "phased_sgd"}
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
# Amplification by shuffling needs n > 16 ln(4 / delta) records (about 207 at 1e-5): the
# shuffled solver's problems are large enough to exercise it.
MIN_SAMPLES = {"shuffled_truncated_mirror_descent": 400}
# Solvers that do not accept the logistic loss: their problems use their first loss
# (one output).
LOSS = {name: _caps(name).losses[0] for name in SOLVERS
        if "logistic" not in _caps(name).losses}


def _problem(name, constraint=None, **kw):
    """``make_problem`` with the feasible set, size and loss the solver needs."""
    if constraint is None and name in CONSTRAINT:
        constraint = CONSTRAINT[name](1.0)
    kw["n"] = max(kw.get("n", 200), MIN_SAMPLES.get(name, 0))
    if name in LOSS:
        kw.update(loss=LOSS[name], n_classes=2)
    return make_problem(constraint=constraint, **kw)


def _n_outputs(name, n_classes):
    return 1 if name in LOSS else n_classes


# Mini-batch solvers: accounted by PLD only with Poisson batches (sampling="poisson").
SAMPLED = {"svrg", "svrg++", "mirror_descent", "localized_mirror_descent"}
BUDGET = Budget(1.0, 1e-5)
NAMES = sorted(SOLVERS)


def test_every_registered_solver_is_covered():
    # Fast settings are optional (a solver's defaults are used without them); whether it
    # reaches the ERM optimum at epsilon = inf must be stated.
    assert set(FAST) <= set(SOLVERS) == set(CONVERGED) | NOT_ERM
    assert not set(CONVERGED) & NOT_ERM


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
    solver = FAST[name]()
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
    pa = FAST[name]().plan(a.spec, BUDGET, FAST[name]().resolve_accounting("auto"), "replace_one")
    pb = FAST[name]().plan(b.spec, BUDGET, FAST[name]().resolve_accounting("auto"), "replace_one")
    assert pa.constants() == pb.constants() and pa.n_iter == pb.n_iter


def _noise_scales(plan):
    return {k: v for k, v in plan.constants().items() if k.startswith("sigma")}


@pytest.mark.parametrize("name", NAMES)
def test_noise_non_increasing_in_epsilon(name):
    problem = _problem(name)
    solver = FAST[name]()
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
    w1 = FAST[name]().solve(problem, BUDGET, 7).coef
    w2 = FAST[name]().solve(problem, BUDGET, 7).coef
    w3 = FAST[name]().solve(problem, BUDGET, 8).coef
    np.testing.assert_array_equal(w1, w2)
    assert not np.allclose(w1, w3)


@pytest.mark.parametrize("name", NAMES)
def test_result_shapes_and_fixed_iterations(name):
    problem = _problem(name, n_classes=3)
    res = FAST[name]().solve(problem, BUDGET, 0)
    assert res.coef.shape == (problem.spec.n_params, _n_outputs(name, 3))
    assert np.all(np.isfinite(res.coef))
    assert res.n_iter == res.plan.n_iter
    assert res.spent.epsilon <= BUDGET.epsilon


@pytest.mark.parametrize("name", NAMES)
def test_constraint_is_respected(name):
    problem = _problem(name, constraint=CONSTRAINT.get(name, L2Ball)(0.05), alpha=0.01)
    if name in UNCONSTRAINED_ONLY:
        with pytest.raises(IncompatibleSolverError, match="constrain"):
            FAST[name]().solve(problem, Budget(0.5, 1e-5), 0)
        return
    res = FAST[name]().solve(problem, Budget(0.5, 1e-5), 0)
    assert np.linalg.norm(res.coef[: problem.spec.n_penalized]) <= 0.05 + 1e-12


@pytest.mark.parametrize("name", sorted(set(NAMES) - NOT_ERM))
def test_epsilon_inf_reaches_the_exact_optimum(name):
    problem = _problem(name, n=100, d=4, alpha=0.1)
    res = CONVERGED[name]().solve(problem, Budget(math.inf, 0.0), 0)
    # Optimality certificate: F is alpha-strongly convex, so ||w - w*|| <= ||grad F||/alpha.
    assert np.linalg.norm(problem.gradient(res.coef)) < 1e-8
    # Another seed gives the same point: no noise at epsilon = inf.
    res2 = CONVERGED[name]().solve(problem, Budget(math.inf, 0.0), 1)
    assert np.linalg.norm(res.coef - res2.coef) <= 2e-8 / 0.1


@pytest.mark.parametrize("name", sorted(set(NAMES) - NOT_ERM))
def test_finite_epsilon_does_not_reach_the_optimum(name):
    problem = _problem(name, n=100, d=4, alpha=0.1)
    res = CONVERGED[name]().solve(problem, BUDGET, 0)
    assert np.linalg.norm(problem.gradient(res.coef)) > 1e-4


@pytest.mark.parametrize("name", NAMES)
def test_incompatible_accounting_is_rejected(name):
    solver = FAST[name]()
    bad = [a for a in ("gaussian", "rdp", "pld", "pure", "basic")
           if a not in solver.capabilities.accounting_methods]
    for acc in bad:
        with pytest.raises(IncompatibleSolverError):
            solver.solve(_problem(name), BUDGET, 0, accounting=acc)


# Frank-Wolfe selects vertices (no Gaussian output); the shuffled method's zero-signal
# output (K-norm local noise) and the noise of the sufficient statistics (released before
# a nonlinear solve) are checked in their own test files.
@pytest.mark.parametrize("name", sorted(set(NAMES) - {"frank_wolfe",
                                                      "shuffled_truncated_mirror_descent",
                                                      "sufficient_statistics"}))
def test_zero_signal_noise_level(name):
    """With all-zero rows every gradient vanishes, so the output is pure noise.

    One step from w = 0: the output is ``-eta * (sum of the Gaussian draws)``, whose
    per-coordinate variance the plan states. Chi-square test on d coordinates; two-sided
    failure probability 1e-6 (fixed seed).
    """
    d = 3000
    # Output perturbation: a large alpha keeps the noise (norm ~ 10/alpha) well inside the
    # domain ball (radius sqrt(2 ln 2 / alpha)), so the final projection never binds.
    alpha = {"svrg": 1e-9, "output_perturbation": 1e4, "localized_mirror_descent": 1e-9
             }.get(name, 0.0)
    problem = make_problem(n=50, d=d, zero=True, alpha=alpha)
    solver = {
        "output_perturbation": OutputPerturbation(shrinkage=None),
        "gd": NoisyGD(n_iter=1),
        "svrg": DPSVRG(n_epochs=1, inner_steps=1, batch_size=5),
        "svrg++": DPSVRGPlusPlus(n_epochs=1, inner_steps=1, batch_size=5),
        "accelerated_mirror_descent": DPAccMD(n_iter=1),
        "mirror_descent": NoisyMirrorDescent(n_iter=1, batch_size=5, step_size=0.7),
        "localized_mirror_descent": LocalizedMirrorDescent(n_phases=1, batch_size=5,
                                                           max_iter=1, step_size=1.0),
        "objective_perturbation": ObjectivePerturbation(),
        "approx_objective_perturbation": ApproxObjectivePerturbation(),
        "regularized_mirror_descent": RegularizedMirrorDescent(n_iter=1, regularization=0.0,
                                                               p=2.0),
        "truncated_mirror_descent": TruncatedMirrorDescent(n_iter=1, truncation=1.0, p=2.0),
        "phased_sgd": PhasedDPSGD(),
    }[name]
    res = solver.solve(problem, BUDGET, 123)
    s = res.plan
    if name in ("gd", "mirror_descent", "truncated_mirror_descent"):
        # One (mirror) step from 0 with the Euclidean map: -eta * noise.
        var = (s.step_size * s.sigma) ** 2
        out = res.coef
    elif name == "phased_sgd":
        # Zero gradients: the output is the last phase's average (0) plus every phase's
        # noise carried forward (each phase starts from the previous noisy release).
        var = float(np.sum(np.square(s.sigma)))
        out = res.coef
    elif name == "regularized_mirror_descent":
        var = (s.sigma / s.smoothness) ** 2
        out = res.coef
    elif name == "accelerated_mirror_descent":
        # x_1 = z_0 = 0, so the output is y_1 = -g / L.
        var = (s.sigma / s.smoothness) ** 2
        out = res.coef
    elif name.endswith("objective_perturbation"):
        # Constant loss: the argmin of <b, w> + (Lambda/2)||w||^2 is -b / Lambda, plus the
        # output Gaussian.
        var = (s.sigma / s.regularization) ** 2 + s.sigma_output ** 2
        out = res.coef
    elif name == "localized_mirror_descent":
        # One phase, one step of the regularised problem from 0.
        var = (s.sigma[0] / s.lambdas[0]) ** 2
        out = res.coef
    elif name == "output_perturbation":
        # The minimiser is 0 (constant loss) and the domain radius is huge: without the
        # (post-processing) shrinkage the output is the Gaussian noise itself.
        var = s.sigma ** 2
        out = res.coef
    else:
        # SVRG(++) epoch: x_1 = -eta (v_snap + u) / (1 + eta alpha); average of m = 2 steps
        # for svrg++ (epoch length 2 m): x_2 = x_1 - eta (v_snap + u_2) (scaled).
        eta, shrink = s.step_size, 1.0 / (1.0 + s.step_size * problem.spec.alpha)
        var_snap, var_in = s.sigma_snapshots[0] ** 2, s.sigma_inner ** 2
        m = s.epoch_lengths[0]
        if m == 1:
            var = (eta * shrink) ** 2 * (var_snap + var_in)
        else:  # m = 2: average of x1 and x2 = x1*shrink - eta*shrink*(v + u2)
            # x1 = -a(v+u1), x2 = -a*shrink(v+u1) - a(v+u2), a = eta*shrink
            a = eta * shrink
            cv = a * (1 + shrink) + a  # coefficient of v in x1 + x2
            c1 = a * (1 + shrink)
            c2 = a
            var = (cv**2 * var_snap + c1**2 * var_in + c2**2 * var_in) / 4.0
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


#: Solvers whose plan is one release (``n_iter == 1``): no steps to report; the estimator's
#: progress prints the remaining tenths after the release.
ONE_RELEASE = {"output_perturbation", "objective_perturbation", "approx_objective_perturbation",
               "sufficient_statistics"}


@pytest.mark.parametrize("name", NAMES)
def test_reported_steps_are_the_planned_steps(name):
    """``problem.advance`` is the progress output's only source: an iterative solver
    reports exactly ``plan.n_iter`` steps, in the same calls on two data sets (the counts
    come from the plan, never from the data)."""
    import dataclasses

    solver = FAST[name]()
    calls = []
    for seed in (1, 2):
        problem = _problem(name, seed=seed)
        log = []
        problem = dataclasses.replace(problem, on_steps=log.append)
        result = solver.solve(problem, BUDGET, random_state=0)
        calls.append(log)
    assert calls[0] == calls[1]
    if name in ONE_RELEASE:
        assert result.n_iter == 1 and sum(calls[0]) in (0, 1)
    else:
        assert sum(calls[0]) == result.n_iter > 0


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_a_diverging_run_warns_nothing(name, recwarn):
    # Whether scores, derivatives or iterates overflow depends on the data: a solver's run
    # must not say so (BaseDPSolver.solve runs it with floating-point warnings off). An
    # absurd step makes the iterates overflow in every solver that takes a step size.
    solver = FAST[name]()
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
