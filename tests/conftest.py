"""Shared fixtures: small problems whose rows respect the public norm bound."""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

from skdp._warnings import reset_shown
from skdp.geometry import Unconstrained
from skdp.losses import LogisticLoss, MultinomialLogisticLoss, SquaredLoss
from skdp.privacy.noise import NoiseSource
from skdp.solvers import SOLVERS, Problem, ProblemSpec


def _register_test_solvers(setting: str) -> None:
    """Add ``name=package.module:Class`` entries (comma-separated) to ``SOLVERS`` for this
    test run: how tests/solvers/test_toy.py runs the registry-wide suites on a solver that
    is not in skdp's registry (the one line a new solver adds there)."""
    for entry in filter(None, (part.strip() for part in setting.split(","))):
        name, _, target = entry.partition("=")
        module, _, attribute = target.partition(":")
        SOLVERS[name] = getattr(importlib.import_module(module), attribute)


_register_test_solvers(os.environ.get("SKDP_TEST_SOLVERS", ""))


@pytest.fixture(autouse=True)
def _every_test_sees_its_warnings():
    """skdp shows each privacy notice once per process: each test starts afresh."""
    reset_shown()
    yield


def box_constraint(mirror_map=None):
    """An l-infinity box [-1, 1]^d: a constraint kind no solver or geometry knows, with the
    given mirror map (``None``: none at all)."""
    from skdp.geometry import Constraint

    class Box(Constraint):
        bounded, kind = True, "box"

        def project(self, w):
            return np.clip(w, -1, 1)

        def lmo(self, g):
            return -np.sign(g)

        def diameter(self, norm=2, dim=None):
            return 2.0

        def norm(self, w):
            return float(np.abs(w).max())

        def dual_norm(self, g):
            return float(np.abs(g).sum())

        @property
        def mirror_map(self):
            if mirror_map is None:
                raise NotImplementedError
            return mirror_map

    return Box()


def make_problem(
    n=200, d=5, n_classes=2, alpha=0.1, seed=0, constraint=None, zero=False, intercept=False,
    loss="logistic", declare_intercept=False,
) -> Problem:
    """A logistic problem with rows of norm <= 1 (optionally all-zero rows).

    ``loss="squared"``: a least-squares problem (one output, labels in ``[-1, 1]``).
    ``declare_intercept``: the spec declares the intercept's constant feature (1), as the
    estimators' specs do (``intercept`` must be set).
    """
    rng = np.random.default_rng(seed)
    X = np.zeros((n, d)) if zero else rng.normal(size=(n, d)) / np.sqrt(d)
    bound = np.sqrt(2.0) if intercept else 1.0
    labels = rng.integers(0, n_classes, size=n)
    if loss == "squared":
        noise = rng.normal(size=n)
        Y, loss = np.clip(X @ rng.normal(size=d) + 0.1 * noise, -1, 1)[:, None], SquaredLoss(1.0)
    elif n_classes == 2:
        Y, loss = np.where(labels == 1, 1.0, -1.0)[:, None], LogisticLoss()
    else:
        Y, loss = np.eye(n_classes)[labels], MultinomialLogisticLoss(n_classes)
    spec = ProblemSpec(
        n_samples=n,
        n_params=d + (1 if intercept else 0),
        n_outputs=Y.shape[1],
        n_penalized=d,
        row_norm_bound=bound,
        loss=loss,
        constraint=constraint or Unconstrained(),
        alpha=alpha,
        intercept_feature=1.0 if intercept and declare_intercept else 0.0,
    )
    return Problem.build(X, Y, spec, data_norm=1.0, intercept=1.0 if intercept else 0.0)


def require_array_api_dispatch(monkeypatch) -> None:
    """Set ``SCIPY_ARRAY_API=1`` for the test, or skip it where scikit-learn's array API
    dispatch is unavailable (scipy < 1.14: the floors job). Turn dispatch on with
    ``sklearn.config_context(array_api_dispatch=True)`` afterwards."""
    import sklearn

    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    try:
        with sklearn.config_context(array_api_dispatch=True):
            pass
    except (ImportError, RuntimeError) as error:
        pytest.skip(f"array API dispatch unavailable: {error}")


class RecordingNoiseSource(NoiseSource):
    """Records every draw, in order, as ``(kind, value)`` pairs, and the scale asked of
    each Gaussian draw (``scales``)."""

    def __init__(self, rng):
        super().__init__(rng)
        self.draws = []
        self.scales = []

    def gaussian(self, shape, sigma):
        value = super().gaussian(shape, sigma)
        self.draws.append(("gaussian", value.copy()))
        self.scales.append(float(sigma))
        return value

    def batch_without_replacement(self, n, size):
        value = super().batch_without_replacement(n, size)
        self.draws.append(("batch", value.copy()))
        return value

    def batch_poisson(self, n, rate):
        value = super().batch_poisson(n, rate)
        self.draws.append(("batch", value.copy()))
        return value

    def integer(self, high):
        value = super().integer(high)
        self.draws.append(("integer", value))
        return value


class Untouchable:
    """A data argument of the given ``shape`` whose every value access raises: a fit that
    refuses it cleanly proves that nothing was read."""

    def __init__(self, shape):
        self.shape = shape

    def __array__(self, *a, **k):
        raise AssertionError("a data value was read")

    def __getitem__(self, item):
        raise AssertionError("a data value was read")

    def __len__(self):
        return self.shape[0]


class ReplayNoiseSource:
    """Hands back recorded draws in order (for reference implementations)."""

    def __init__(self, draws):
        self._draws = list(draws)
        self._pos = 0

    def next(self, kind):
        got, value = self._draws[self._pos]
        assert got == kind, f"draw {self._pos}: expected {kind}, recorded {got}"
        self._pos += 1
        return value

    def exhausted(self):
        return self._pos == len(self._draws)


def dp_clf(**params):
    """A DPLogisticRegression with test defaults (epsilon 1, delta 1e-5, seed 0)."""
    from skdp import DPLogisticRegression

    params.setdefault("epsilon", 1.0)
    params.setdefault("delta", 1e-5)
    params.setdefault("random_state", 0)
    return DPLogisticRegression(**params)


@pytest.fixture
def problem():
    return make_problem()
