"""Declared capabilities drive the compatibility check, the docs table and the estimator
docstrings; a new solver is its file plus one registry line (tried with a toy solver)."""

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import skdp
from skdp.exceptions import IncompatibleSolverError
from skdp.linear_model._docs import solver_list
from skdp.privacy.accounting import analytic_gaussian_multiplier, gaussian_event
from skdp.solvers import SOLVERS, BaseDPSolver, Plan
from skdp.solvers._capabilities import (
    TABLE_END,
    TABLE_START,
    Capabilities,
    accepts_any,
    solver_table,
)

ROOT = Path(__file__).resolve().parents[2]
ESTIMATORS = [skdp.DPLogisticRegression, skdp.DPLinearSVC, skdp.DPLinearRegression,
              skdp.DPLasso, skdp.DPHuberRegressor]


@pytest.mark.parametrize("name", list(SOLVERS))
def test_every_solver_declares_valid_capabilities(name):
    cls = SOLVERS[name]
    caps = cls.capabilities
    assert isinstance(caps, Capabilities)
    # "secure" is declared exactly when the solver gives its release's noise scale.
    overrides = cls.release_noise_scale is not BaseDPSolver.release_noise_scale
    assert caps.secure == overrides


def test_docs_table_is_the_generated_one():
    text = (ROOT / "docs" / "solvers.md").read_text()
    start = text.index(TABLE_START) + len(TABLE_START)
    committed = text[start:text.index(TABLE_END)].strip()
    assert committed == solver_table(SOLVERS).strip(), (
        "docs/solvers.md is stale: run `python -m skdp.solvers docs/solvers.md`")


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda c: c.__name__)
def test_estimator_docstrings_list_the_accepting_solvers(estimator):
    listed = set(re.findall(r'^        - ``"([^"]+)"``:', estimator.__doc__, flags=re.M))
    expected = {k for k, cls in SOLVERS.items() if accepts_any(
        cls.capabilities, estimator._solver_losses, estimator._solver_constraints)}
    assert listed == expected
    # The default, or what "auto" resolves to for every shape (and for an unknown one).
    est = estimator()
    assert {est._solver_name(shape) for shape in ((100_000, 2), (10, 50), None)} <= listed


def test_incompatibility_names_the_setting_and_the_solvers_that_fit():
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.arange(40) % 2
    with pytest.raises(IncompatibleSolverError, match="alpha > 0") as info:
        skdp.DPLogisticRegression(solver="svrg", alpha=0.0, data_norm=1.0).fit(X, y)
    assert "'gd'" in str(info.value) and "'svrg'" not in str(info.value).split("(")[-1]
    with pytest.raises(IncompatibleSolverError, match="constraint"):
        skdp.DPLogisticRegression(solver="output_perturbation", constraint="l1", radius=1.0,
                                  data_norm=1.0).fit(X, y)


# -- a toy solver: one file's worth of code plus one registry line ---------------------------
@dataclass(frozen=True, kw_only=True)
class OneStepPlan(Plan):
    """One Gaussian release of the mean clipped gradient at 0."""

    sigma: float
    sensitivity: float
    step_size: float


class OneNoisyStep(BaseDPSolver):
    """One noisy gradient step from 0 (a toy for the registry test).

    Privacy guarantee: one Gaussian release of the mean of n gradients clipped to C
    (replace-one sensitivity 2C/n), calibrated by the analytic Gaussian mechanism.
    """

    name = "toy_one_step"
    capabilities = Capabilities(
        algorithm="one noisy gradient step (test toy)",
        accounting_methods=("gaussian",), default_accounting="gaussian",
        losses=("logistic", "multinomial"), constraints=("none", "l2"),
    )

    def __init__(self, step_size=1.0):
        self.step_size = step_size

    _parameter_constraints = {"step_size": [float, int]}

    def plan(self, spec, budget, accounting, relation):
        clip = self.gradient_clip(spec)
        sensitivity = 2.0 * clip / spec.n_samples
        z = analytic_gaussian_multiplier(budget, 1) if budget.is_private else 0.0
        return OneStepPlan(
            n_iter=1, accounting=accounting, relation=relation,
            event=gaussian_event(z * sensitivity, sensitivity, accounting=accounting,
                                 relation=relation),
            sigma=z * sensitivity, sensitivity=sensitivity, step_size=float(self.step_size))

    def _run(self, problem, plan, noise):
        W = np.zeros((problem.spec.n_params, problem.spec.n_outputs))
        grad = problem.clipped_gradient(W, plan.sensitivity * problem.spec.n_samples / 2)
        return -plan.step_size * (grad + noise.gaussian(W.shape, plan.sigma))


def test_a_new_solver_needs_its_file_and_one_registry_line(monkeypatch):
    monkeypatch.setitem(SOLVERS, OneNoisyStep.name, OneNoisyStep)  # the registry line
    X = np.random.default_rng(1).normal(size=(200, 4))
    y = (X[:, 0] > 0).astype(int)
    model = skdp.DPLogisticRegression(solver="toy_one_step", data_norm=3.0, epsilon=1.0,
                                      random_state=0).fit(X, y)
    assert isinstance(model.privacy_plan_, OneStepPlan)
    assert "sigma=" in repr(model.privacy_plan_)
    epsilon, delta = model.privacy_spent_
    assert epsilon <= 1.0 + 1e-9 and delta <= model.delta
    # The generic check refuses what the declaration does not offer, naming the setting.
    with pytest.raises(IncompatibleSolverError, match="constraint"):
        skdp.DPLogisticRegression(solver="toy_one_step", constraint="l1", radius=1.0,
                                  data_norm=3.0).fit(X, y)
    with pytest.raises(IncompatibleSolverError, match="squared"):
        skdp.DPLinearRegression(solver="toy_one_step", data_norm=3.0, y_bound=1.0).fit(
            X, X[:, 0])
    # Docs and docstrings pick it up from the declaration alone.
    assert "| `toy_one_step` | `OneNoisyStep` |" in solver_table(SOLVERS)
    assert '``"toy_one_step"``' in solver_list(("logistic",), ("none",))
    assert '``"toy_one_step"``' not in solver_list(("squared",), ("none",))
    # Other solvers' refusals now suggest it where it fits.
    with pytest.raises(IncompatibleSolverError, match="toy_one_step"):
        skdp.DPLogisticRegression(solver="svrg", alpha=0.0, data_norm=3.0).fit(X, y)


def test_plans_are_typed_and_readable():
    X = np.random.default_rng(2).normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(int)
    plan = skdp.DPLogisticRegression(data_norm=2.0, random_state=0).fit(X, y).privacy_plan_
    assert type(plan) is not Plan and isinstance(plan, Plan)
    text = repr(plan)
    assert text.startswith(type(plan).__name__ + "(n_iter=")
    assert "event" not in text and math.isfinite(plan.n_iter)


def _custom_spec(loss, constraint):
    from skdp.solvers import ProblemSpec

    return ProblemSpec(n_samples=50, n_params=3, n_outputs=1, n_penalized=3,
                       row_norm_bound=1.0, loss=loss, constraint=constraint, alpha=0.1)


def test_user_defined_losses_are_judged_by_smoothness_and_class():
    from skdp.geometry import L2Ball, Unconstrained
    from skdp.losses import LogisticLoss
    from skdp.privacy import Budget

    class MyLoss(LogisticLoss):  # a smooth user loss with its own name
        name = "mine"

    class NamedLikeLogistic(LogisticLoss.__base__):  # not a LogisticLoss, named like one
        name = "logistic"
        derivative_bound = derivative_diameter = curvature_bound = 1.0
        value = LogisticLoss.value
        derivative = LogisticLoss.derivative
        label_error = LogisticLoss.label_error
        value_range = LogisticLoss.value_range
        initial_gap = LogisticLoss.initial_gap

    budget = Budget(1.0, 1e-5)
    for constraint in (Unconstrained(), L2Ball(1.0)):
        # Accepted by the solvers that accept every smooth built-in loss ...
        SOLVERS["gd"]().check(_custom_spec(MyLoss(), constraint), budget)
        # ... and refused, naming the losses, by those that need a built-in one.
        with pytest.raises(IncompatibleSolverError, match="accepts only the losses"):
            SOLVERS["sufficient_statistics"]().check(_custom_spec(MyLoss(), constraint),
                                                     budget)
    # Objective perturbation needs the built-in classes' Hessians: a name is not enough.
    with pytest.raises(IncompatibleSolverError, match="accepts only the losses"):
        SOLVERS["objective_perturbation"]().check(
            _custom_spec(NamedLikeLogistic(), Unconstrained()), budget)


def _unlisted_pairs():
    for est in ESTIMATORS:
        for name, cls in SOLVERS.items():
            if not accepts_any(cls.capabilities, est._solver_losses, est._solver_constraints):
                yield est, name


@pytest.mark.parametrize("estimator, name", list(_unlisted_pairs()))
def test_a_solver_the_estimator_does_not_list_is_refused_naming_the_listed_ones(estimator,
                                                                               name):
    """No setting of the estimator makes such a solver applicable (DPLasso's l1 ball and
    output perturbation): the error names only ``solver`` and the solvers its docstring
    lists, before any value of X is read."""
    listed = [k for k, cls in SOLVERS.items()
              if accepts_any(cls.capabilities, estimator._solver_losses,
                             estimator._solver_constraints)]

    class Untouchable:
        shape = (50, 3)

        def __array__(self, *a, **k):
            raise AssertionError("a value of X was read")

        def __getitem__(self, item):
            raise AssertionError("a value of X was read")

        def __len__(self):
            return 50

    with pytest.raises(IncompatibleSolverError, match="set solver to one of") as info:
        estimator(solver=name).fit(Untouchable(), np.r_[np.zeros(25), np.ones(25)])
    assert str(listed) in str(info.value)
    assert "constraint" not in str(info.value).split("; ")[1]


def test_the_solver_layer_points_at_the_docs_and_the_estimators_name_the_solvers():
    """The solver layer does not import the registry (issue 38): a solver called directly
    points at docs/solvers.md; the estimators replace that by the accepting solvers."""
    import ast
    import inspect

    from skdp.solvers import _capabilities
    from skdp.solvers._capabilities import SEE_SOLVERS

    tree = ast.parse(inspect.getsource(_capabilities))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "skdp.solvers" not in imported
    X = np.random.default_rng(0).normal(size=(40, 3))
    y = np.arange(40) % 2
    est = skdp.DPLogisticRegression(solver="svrg", alpha=0.0, data_norm=1.0)
    solver = SOLVERS["svrg"]()
    spec = _spec_of(skdp.DPLogisticRegression(solver=solver, alpha=0.0, data_norm=1.0), X, y)
    with pytest.raises(IncompatibleSolverError) as direct:
        solver.check(spec, skdp.privacy.Budget(1.0, 1e-5))
    assert SEE_SOLVERS in str(direct.value)
    with pytest.raises(IncompatibleSolverError) as through:
        est.fit(X, y)
    assert SEE_SOLVERS not in str(through.value) and "'gd'" in str(through.value)


def _spec_of(est, X, y):
    """The public spec an estimator builds (its solver's check is not run)."""
    import unittest.mock

    captured = {}
    solver_cls = type(est.solver)

    def spy(self, spec, budget, accounting="auto", relation="replace_one"):
        captured["spec"] = spec

    with unittest.mock.patch.object(solver_cls, "check", spy):
        est._privacy_plan(X.shape[0], X.shape[1], y, calibrate=False)
    return captured["spec"]
