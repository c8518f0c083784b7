"""Per-solver test data, declared with each solver's own tests and found by convention.

A solver registered as ``SOLVERS[name]`` whose class is defined in a module with file
stem ``<stem>`` (``skdp/solvers/gd.py``: ``gd``) declares what the registry-wide suites
need in its own test file ``tests/solvers/test_<stem>.py``, as a function (its imports
stay local, so the file's own tests import nothing more)::

    def solver_cases():
        from skdp.solvers import NoisyGD
        return {"gd": SolverCases(fast=..., converged=..., sensitivity=..., audits=(...))}

The conformance suite (``test_conformance.py``), the sensitivity index
(``test_sensitivity.py``) and the audits (``tests/test_audit.py``) read it through
:func:`cases`. So a new solver is its file, one line in ``SOLVERS`` and its own test
file; nothing else changes (``tests/solvers/test_toy.py`` registers a toy solver that
way and runs the suites on it).

A test run can register extra solvers without editing the registry:
``SKDP_TEST_SOLVERS="name=package.module:Class,..."`` (read by ``tests/conftest.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from skdp.audit import ScaledNoiseSource
from skdp.privacy.noise import NoiseSource

#: Divisor of an audit twin's noise (the twin must be flagged).
TWIN_FACTOR = 5.0


@dataclass(frozen=True)
class AuditCase:
    """A fast audit configuration: solver settings, loss, budget and trials."""

    solver: Callable[[], object]
    loss: Callable[[], object]
    alpha: float
    epsilon: float
    delta: float
    n_trials: int
    #: Divisor of the twin's noise. 5 unless the canary cannot reach the full sensitivity
    #: in every run (random block assignment amplifies privacy beyond the claim).
    twin_factor: float = TWIN_FACTOR
    #: Feasible set of the canary problems (solvers that need a bounded constraint).
    constraint: Callable[[], object] | None = None
    #: All-zero background records (report-noisy-min: the competing vertices must score
    #: 0 so that the canary alone decides the selection).
    zero_background: bool = False
    #: Noise source of the runs: ``noise(generator, factor)``.
    noise: Callable[[np.random.Generator, float], NoiseSource] = ScaledNoiseSource
    #: Fit an intercept (constant feature 1) and audit it (``CanaryPair.intercept_statistic``)
    #: instead of the canary feature's coefficient: a model that reads no feature.
    intercept: bool = False


class CanaryFirst(ScaledNoiseSource):
    """Identity permutation: the canary (row 0) is the first record of phase 1.

    A solver that is DP for EVERY fixed data-independent permutation is audited most
    strongly with the permutation that gives the canary the most influence.
    """

    def permutation(self, n):
        return np.arange(n)


@dataclass(frozen=True)
class SolverCases:
    """What the registry-wide suites need to test one solver.

    Parameters
    ----------
    sensitivity : tuple of (str, str)
        ``(file, test)``: the brute-force neighbour test of the solver's sensitivity, a
        test function in ``tests/solvers/<file>``.
    audits : tuple of AuditCase
        At least one audit on neighbouring canary data sets (``tests/test_audit.py``).
    fast : callable or None
        Small settings for the conformance suite; ``None``: the solver's defaults.
    converged : callable or None
        Settings that reach the exact ERM optimum at ``epsilon=inf``; ``None`` when the
        solver does not minimise the full empirical risk, with the reason in ``not_erm``.
    not_erm : str
        Why the solver does not minimise the full empirical risk (one-pass or
        population-risk methods, or its own regularised objective).
    zero_signal : callable or None
        Settings whose output on all-zero rows is pure noise of the planned level (one
        step from ``w = 0``), for the conformance suite's chi-square test; ``None`` when
        the noise is checked elsewhere, said in ``zero_signal_elsewhere``.
    zero_signal_variance : callable or None
        ``variance(plan, spec)``: the per-coordinate variance of that output, read from
        the plan (the formula is the solver's: one step, one phase or one release).
    zero_signal_alpha : float
        The ridge of that test's problem.
    zero_signal_elsewhere : str
        Where and why the zero-signal noise is checked instead.
    one_release : bool
        The plan is one release (``n_iter == 1``), not iterations.
    intercept : bool
        The suite's problems declare an intercept (a model that reads the targets only
        releases nothing without one).
    min_samples : int
        Fewest rows of the suite's problems (a mechanism that needs more rows than the
        default 200 to exercise its privacy argument).
    """

    sensitivity: tuple[str, str]
    audits: tuple[AuditCase, ...]
    fast: Callable[[], object] | None = None
    converged: Callable[[], object] | None = None
    not_erm: str = ""
    zero_signal: Callable[[], object] | None = None
    zero_signal_variance: Callable[[object, object], float] | None = None
    zero_signal_alpha: float = 0.0
    zero_signal_elsewhere: str = ""
    one_release: bool = False
    min_samples: int = 0
    intercept: bool = False

    def __post_init__(self) -> None:
        if (self.converged is None) == (not self.not_erm):
            raise ValueError("give either converged settings or the reason in not_erm")
        if not self.audits:
            raise ValueError("every solver needs at least one audit")
        if (self.zero_signal is None) == (not self.zero_signal_elsewhere):
            raise ValueError("give zero_signal settings or say in zero_signal_elsewhere "
                             "where the noise level is checked")
        if (self.zero_signal is None) != (self.zero_signal_variance is None):
            raise ValueError("zero_signal needs its zero_signal_variance")


HERE = Path(__file__).resolve().parent


def tests_module_of(solver_class: type) -> str:
    """``tests.solvers.test_<stem>`` for a solver class defined in ``<...>.<stem>``."""
    stem = solver_class.__module__.rsplit(".", 1)[-1]
    return f"tests.solvers.test_{stem}"


def cases(name: str) -> SolverCases:
    """The declared test data of the registered solver ``name``."""
    from skdp.solvers import SOLVERS

    module_name = tests_module_of(SOLVERS[name])
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise AssertionError(
            f"solver {name!r} has no test file: write {module_name.replace('.', '/')}.py "
            f"with solver_cases() -> {{{name!r}: SolverCases(...)}} "
            "(tests/solvers/_cases.py)") from exc
    declared = module.solver_cases() if hasattr(module, "solver_cases") else {}
    if name not in declared:
        raise AssertionError(f"{module_name}.solver_cases() declares nothing for {name!r} "
                             "(tests/solvers/_cases.py says what to declare)")
    return declared[name]
