"""Solver layer: problem description, plans, results and the solver base class.

A solver turns a :class:`Problem` and a validated :class:`~skdp.privacy.Budget` into
coefficients and the :class:`~skdp.privacy.PrivacyLedger` of what ran. ``plan`` sees only
the public :class:`ProblemSpec` (sizes, declared bounds, loss, constraint, ``alpha``): it
fixes the iteration counts and calibrates the noise before any private data is touched.
"""

from __future__ import annotations

import inspect
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from typing import Any, ClassVar, NamedTuple

import numpy as np
from dp_accounting import dp_event as dpe

from skdp._docstrings import fill_docstrings
from skdp._repr import short_repr
from skdp._sklearn_compat import Interval, validate_parameter_constraints
from skdp.exceptions import IncompatibleSolverError, PrivacyAccountingError
from skdp.privacy.accounting import ACCOUNTING_METHODS, PrivacyLedger, PrivacySpent
from skdp.privacy.budget import Budget
from skdp.privacy.ledger import renamed_accounting
from skdp.privacy.noise import NoiseSource, as_noise_source
from skdp.solvers._capabilities import Capabilities, check_capabilities
from skdp.solvers._problem import (
    Problem,
    ProblemSpec,
    RowBlock,
)

__all__ = [
    "BaseDPSolver",
    "Inference",
    "Plan",
    "Problem",
    "ProblemSpec",
    "Released",
    "RowBlock",
    "SolverResult",
    "james_stein_factor",
    "snap_release",
]

#: The secure release grid is 2^-SNAP_BITS times the release's noise scale (rounded down to
#: a power of two): fine enough to cost nothing in accuracy, coarse enough that every grid
#: cell holds ~2^40 floats of the noisy value's magnitude.
SNAP_BITS = 10


#: The parameters of the solver hooks, described once: a line ``<<name>>`` in the docstring
#: of a hook (:class:`BaseDPSolver`'s or a solver's override) is replaced by the text of
#: ``name`` (:mod:`skdp._docstrings`); ``<<plan_parameters>>``, ``<<check_parameters>>``,
#: ... are the whole Parameters sections of the usual signatures (``plan``,
#: ``check_compatible``, ...).
HOOK_DOCS: dict[str, str] = {
    "spec": """\
spec : ProblemSpec
    The public description of the problem: sizes, declared bounds, loss, constraint and
    ``alpha`` (no value of the data).
""",
    "budget": """\
budget : Budget
    The validated ``(epsilon, delta)`` of the fit (see :func:`~skdp.privacy.check_budget`).
""",
    "accounting": """\
accounting : str
    The accounting method that reads the ledger, already resolved from ``"auto"`` by
    :meth:`~BaseDPSolver.resolve_accounting` (one of
    :data:`~skdp.privacy.ACCOUNTING_METHODS`).
""",
    "relation": """\
relation : str
    The neighbouring relation of the guarantee (``"replace_one"``).
""",
    "plan": """\
plan : Plan
    The solver's plan, as :meth:`~BaseDPSolver.plan` returned it.
""",
}
HOOK_DOCS["accounting_auto"] = """\
accounting : str, default="auto"
    ``"auto"`` (see :meth:`~BaseDPSolver.resolve_accounting`) or an accounting method.
relation : str, default="replace_one"
    The neighbouring relation of the guarantee.
"""
HOOK_DOCS["sensitivity"] = """\
sensitivity : float
    Replace-one l2 sensitivity of one mean gradient.
"""
HOOK_DOCS["problem"] = """\
problem : Problem
    The data and its public specification.
"""
HOOK_DOCS["problem_at"] = """\
problem : Problem
    The data and its public specification.
W : ndarray of shape (n_params, n_outputs)
    The point.
"""
HOOK_DOCS["release_inputs"] = """\
problem : Problem
    The data and its public specification.
plan : Plan
    The plan (noise mechanism and scales).
noise : NoiseSource
    Source of the noise, drawn before the data is read.
"""
HOOK_DOCS["point"] = """\
plan : Plan
    The plan.
W : ndarray of shape (n_params, n_outputs)
    The point (a function of earlier releases only).
noise : NoiseSource
    Source of the noise.
"""
# Whole Parameters sections, <<name_parameters>>, for the hooks' usual signatures.
for _name, _entries in {
    "plan": ("spec", "budget", "accounting", "relation"),
    "check": ("spec", "accounting", "relation"),
    "prepare": ("spec", "budget", "accounting_auto"),
    "spec": ("spec",),
    "release": ("plan",),
    "n_iter": ("spec", "budget", "sensitivity"),
    "epochs": ("spec", "budget"),
    "release_at": ("problem", "point"),
}.items():
    HOOK_DOCS[f"{_name}_parameters"] = "Parameters\n----------\n" + "".join(
        HOOK_DOCS[entry] for entry in _entries)
# ``check_compatible``'s sections: its Parameters, then the Raises entry whose description
# (when the check refuses) each solver writes on the lines indented under the marker.
HOOK_DOCS["check_sections"] = (HOOK_DOCS["check_parameters"]
                               + "\nRaises\n------\nIncompatibleSolverError\n")


#: Cap of the automatic iteration count of the full-batch gradient solvers (DP-GD,
#: DP-AccMD: each iteration is one pass over the data), a public constant.
MAX_AUTO_ITER = 2000


def snap_release(W: np.ndarray, noise_scale: float) -> np.ndarray:
    """Round a released point to the grid ``Lambda Z^d``, ``Lambda = 2^floor(log2(s)) / 2^10``.

    A mitigation of the floating-point attacks on textbook samplers (Mironov 2012): the
    low-order bits of ``x + noise`` can reveal ``x`` because the floating-point sampler
    cannot produce every double; after rounding to a grid far coarser than the spacing of
    doubles, the attacker sees only which cell the noisy value fell in, whose probability
    is the noise measure of an interval of width ``Lambda`` (rounding is
    post-processing). ``Lambda`` depends on the public noise scale only. It is NOT a proof
    that the float implementation is DP (see docs/privacy.md, "Secure mode").
    """
    if not (noise_scale > 0 and math.isfinite(noise_scale)):
        return W
    grid = 2.0 ** (math.floor(math.log2(noise_scale)) - SNAP_BITS)
    return grid * np.rint(W / grid)


def james_stein_factor(noisy: np.ndarray, noise_power: float) -> float:
    """Positive-part James-Stein factor ``max(0, 1 - P / ||noisy||^2)`` of a release.

    ``P`` is a public upper bound on ``E||noise||^2``. For ``noisy = w + z`` with
    ``E<w, z> = 0``, ``||noisy||^2 - P`` under-estimates ``||w||^2``, and ``c (w + z)``
    has the smallest ``E||c (w + z) - w||^2`` at ``c = ||w||^2 / (||w||^2 + E||z||^2)``.
    The factor reads only the release and public constants: post-processing. It is 0
    exactly when ``||noisy||^2 <= P`` (the release is within the noise's reach of 0);
    ``P <= 0`` gives 1.
    """
    if noise_power <= 0:
        return 1.0
    norm2 = float(np.sum(noisy * noisy))
    return max(0.0, 1.0 - noise_power / norm2) if norm2 > 0 else 0.0


def tail_start(n_steps: int) -> int:
    """First (0-based) step of the suffix average: the last ``ceil(n_steps / 2)`` iterates.

    Suffix averaging (Rakhlin, Shamir & Sridharan 2012; Shamir & Zhang 2013) keeps the
    noise-averaging of the uniform average without its bias towards the early iterates.
    The count is fixed by ``n_steps`` alone (public), and the average reads only the
    iterates: post-processing.
    """
    return int(n_steps) // 2


def averaged_from(iterate: str, n_steps: int) -> int | None:
    """First (0-based) step the output averages, or None when it averages nothing.

    ``"average"``: every iterate (0); ``"tail"``: the suffix of :func:`tail_start`; any
    other output rule (``"last"``, ``"random"``) reads single iterates (None). Public: a
    function of the rule and the step count only.
    """
    return {"average": 0, "tail": tail_start(n_steps)}.get(iterate)


@dataclass(frozen=True, kw_only=True)
class Plan:
    """What a solver will run, fixed from public quantities before any data is read.

    Each solver subclasses it with its own named, typed constants (noise scale,
    sensitivity, step size, batch size, ...); the accounting reads the common fields.
    Every parameter is kept as the attribute of the same name; a subclass adds its own
    fields (keyword-only), which :meth:`constants` returns.

    Parameters
    ----------
    n_iter : int
        Number of noisy steps (data-independent).
    event : dp_accounting.DpEvent
        The ledger of every noisy release.
    accounting, relation : str
        How ``event`` is read: the accounting method and the neighbouring relation.
    via_add_remove : bool
        ``event`` is accounted under add/remove and converted to ``relation``
        (replace-one) by group privacy (see :class:`~skdp.privacy.PrivacyLedger`).
    """

    n_iter: int
    event: dpe.DpEvent
    accounting: str
    relation: str
    via_add_remove: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every plan prints like the base (public constants, no event tree): set before
        # the subclass's @dataclass runs, which then keeps it.
        super().__init_subclass__(**kwargs)
        cls.__repr__ = Plan.__repr__  # type: ignore[method-assign]

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(renamed_accounting(state))

    def constants(self) -> dict[str, Any]:
        """The solver-specific constants (every field but the common ones), by name.

        Returns
        -------
        dict
            The value of each field a subclass adds, by field name, in declaration
            order (what ``repr`` prints after the common fields).
        """
        common = {f.name for f in fields(Plan)}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in common}

    def __repr__(self) -> str:
        # Floats (in tuples too) at 6 significant digits, arrays by their shape.
        parts = [f"n_iter={self.n_iter}", f"accounting={self.accounting!r}",
                 f"relation={self.relation!r}"]
        if self.via_add_remove:
            parts.append("via_add_remove=True")
        parts += [f"{k}={short_repr(v)}" for k, v in self.constants().items()]
        return f"{type(self).__name__}({', '.join(parts)})"


@dataclass(frozen=True)
class SolverResult:
    """Output of :meth:`BaseDPSolver.solve`.

    Parameters
    ----------
    coef : ndarray of shape (n_params, n_outputs)
        The released coefficients (the intercept, if any, in the last row).
    n_iter : int
        The plan's number of noisy steps.
    ledger : PrivacyLedger
        The ledger of what ran, as :meth:`BaseDPSolver.prepare` verified it.
    spent : PrivacySpent
        The ``(epsilon, delta)`` the ledger spends.
    plan : Plan
        The plan that ran.
    inference : Inference or None, default=None
        Released quantities from which the estimators compute standard errors (solvers
        that release a Hessian); ``None`` for the others.
    """

    coef: np.ndarray
    n_iter: int
    ledger: PrivacyLedger
    spent: PrivacySpent
    plan: Plan
    inference: Inference | None = None


@dataclass(frozen=True)
class Inference:
    """What a solver released that approximates the law of its output (post-processing).

    The output ``w`` of the solver is taken as ``w_hat + e``: ``w_hat`` the (regularised)
    empirical minimiser, whose sampling covariance is the sandwich
    ``dispersion A^-1 H A^-1 / n`` of the M-estimator, and ``e = -A^-1 xi`` the privacy
    noise ``xi`` that the output carries in its mean gradient, ``xi ~ N(0, noise_covariance)``.

    Parameters
    ----------
    hessian : ndarray of shape (D, D)
        ``A``: the released (noisy) Hessian of the regularised mean objective at the
        output, symmetric, eigenvalues floored (``D = n_params * n_outputs``, row-major
        coefficients).
    penalty : ndarray of shape (D,)
        The L2 terms' diagonal in ``hessian``, so that the loss's own Hessian is
        ``H = hessian - diag(penalty)``.
    noise_covariance : ndarray of shape (D, D)
        Covariance of the privacy noise carried by the mean gradient at the output (a
        function of the plan's public noise scales and of released values).
    n_samples : int
        The (public) number of rows.
    dispersion : float, default=1.0
        The factor of ``H`` in the per-example gradients' covariance: 1 for the logistic
        loss (the information identity of a well-specified model), the residual variance
        ``sigma^2`` for the squared loss (homoscedastic errors), estimated from releases.
    penalty_centre : ndarray of shape (D,) or None, default=None
        Where the L2 terms pull the coefficients (``None``: 0).
    """

    hessian: np.ndarray
    penalty: np.ndarray
    noise_covariance: np.ndarray
    n_samples: int
    dispersion: float = 1.0
    penalty_centre: np.ndarray | None = None


class Released(NamedTuple):
    """A solver run's output: the coefficients and, if it releases one, its
    :class:`Inference`."""

    coef: np.ndarray
    inference: Inference | None = None


class BaseDPSolver(ABC):
    """Base class of private solvers.

    Subclasses set the class attributes, implement :meth:`plan` (public quantities only)
    and :meth:`_run` (the fixed-length private algorithm), and document their guarantee in
    a ``Privacy guarantee`` paragraph of the class docstring. Constructor arguments are
    stored unchanged, so solver objects nest in scikit-learn parameter grids
    (``solver__n_epochs``).

    Attributes
    ----------
    name : str
        Registry key.
    capabilities : Capabilities
        What the solver needs and offers, declared once (see
        :mod:`skdp.solvers._capabilities`): it drives the compatibility check, the docs
        table and the conformance tests.
    releases_inference : bool
        Whether an unconstrained fit that computes standard errors
        (``ProblemSpec.standard_errors``) gets their inputs from the run (an
        :class:`Inference`, by :meth:`_run_released`); the estimators' ``conf_int``
        messages read it.
    _parameter_constraints : dict
        scikit-learn style declarations of the constructor parameters, validated once
        before planning.
    """

    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]
    releases_inference: ClassVar[bool] = False
    _parameter_constraints: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every solver's docstrings get the hooks' shared descriptions (HOOK_DOCS).
        super().__init_subclass__(**kwargs)
        if "resolve_accountant" in vars(cls):
            # The hook was renamed: an override under the old name would be ignored.
            raise TypeError(f"{cls.__name__} defines resolve_accountant, which skdp no "
                            "longer calls; rename it to resolve_accounting.")
        fill_docstrings(cls, HOOK_DOCS)

    # -- scikit-learn style parameter handling (no sklearn import in this layer) --------
    @classmethod
    def _get_param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values() if p.name != "self")

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor parameters, as scikit-learn's ``get_params``.

        Parameters
        ----------
        deep : bool, default=True
            Accepted for scikit-learn's API; a solver has no nested estimators.

        Returns
        -------
        dict
            The value of each constructor parameter, by name.
        """
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params: Any) -> BaseDPSolver:
        """Set constructor parameters, as scikit-learn's ``set_params``.

        Parameters
        ----------
        **params
            New values of constructor parameters, by name (validated when the solver
            plans, not here).

        Returns
        -------
        BaseDPSolver
            The solver itself.

        Raises
        ------
        ValueError
            If a name is not a constructor parameter.
        """
        valid = self._get_param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(
                    f"invalid parameter {key!r} for solver {type(self).__name__}; "
                    f"valid parameters are {valid}."
                )
            setattr(self, key, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # -- checks --------------------------------------------------------------------------
    def resolve_accounting(self, accounting: str, budget: Budget | None = None) -> str:
        """Resolve ``"auto"`` to the accounting method actually used.

        Parameters
        ----------
        accounting : str
            ``"auto"`` or an accounting method (returned unchanged).
        budget : Budget or None, default=None
            The budget of the fit; ``None`` reads none of it.

        Returns
        -------
        str
            For ``"auto"``: ``"pure"`` when the budget asks for pure DP (``delta = 0``)
            and the solver has a pure-DP mechanism, the declared default otherwise.
        """
        if accounting != "auto":
            return accounting
        caps = self.capabilities
        if budget is not None and budget.is_private and budget.delta == 0 and caps.pure_dp:
            return "pure"
        return caps.default_accounting

    def supported_relations(self) -> tuple[str, ...]:
        """Neighbouring relations this configuration of the solver is accounted under.

        Replace-one only: under add/remove the dataset size is not public, yet every
        solver's denominators, sampling rates and schedules are functions of it.

        Returns
        -------
        tuple of str
            ``("replace_one",)``.
        """
        return ("replace_one",)

    def check_compatible(self, spec: ProblemSpec, accounting: str, relation: str) -> None:
        """Raise :class:`IncompatibleSolverError` naming the setting to change.

        The generic check of the declared :attr:`capabilities`; subclasses add only
        data-free numeric conditions that no declaration expresses.

        <<check_sections>>
            If the accounting method, the relation, the loss's output count or a
            declared capability does not fit the problem.
        """
        if accounting not in ACCOUNTING_METHODS:
            raise IncompatibleSolverError(
                f"accounting must be 'auto' or one of {ACCOUNTING_METHODS}, got {accounting!r}."
            )
        if relation not in self.supported_relations():
            raise IncompatibleSolverError(
                f"solver {self.name!r} with these settings is accounted under "
                f"{self.supported_relations()} only, not {relation!r}."
            )
        # A loss without n_outputs_hint acts on one output: its derivative bound is that
        # of one score (with K outputs ||phi'||_2 could reach sqrt(K) times it).
        hint = getattr(spec.loss, "n_outputs_hint", None)
        if (1 if hint is None else hint) != spec.n_outputs:
            fix = ("Pass n_outputs to the loss." if hint is not None else
                   "Use a loss of several outputs (MultinomialLogisticLoss, HingeLoss).")
            raise IncompatibleSolverError(
                f"{type(spec.loss).__name__} was built for {hint or 1} output(s) but the "
                f"problem has {spec.n_outputs}; its derivative and range bounds would be "
                f"wrong. {fix}"
            )
        check_capabilities(self, spec, accounting, relation)

    def _validate_params(self) -> None:
        """Check the constructor parameters against :attr:`_parameter_constraints`, then
        the cross-parameter rules of :meth:`_check_params` (raise naming the bad one)."""
        params = self.get_params()
        validate_parameter_constraints(self._parameter_constraints, params,
                                       caller_name=type(self).__name__)
        for key, value in params.items():
            # scikit-learn's Interval admits bools (they are Integral): refuse them.
            if isinstance(value, bool | np.bool_) and any(
                    isinstance(c, Interval) for c in self._parameter_constraints.get(key, ())):
                raise ValueError(f"{type(self).__name__}.{key} must be a number, got "
                                 f"{value!r}.")
        self._check_params()

    def _check_params(self) -> None:  # noqa: B027 (optional hook)
        """Rules that relate several parameters (none by default)."""

    def gradient_clip(self, spec: ProblemSpec) -> float:
        """Per-example gradient clip: ``clip_norm`` if tighter than the loss bound.

        With rows clipped to ``X`` the gradient norm is at most ``sup ||phi'|| X``, so the
        default clip is lossless.

        <<spec_parameters>>

        Returns
        -------
        float
            The public bound to which every per-example gradient is clipped.

        Raises
        ------
        IncompatibleSolverError
            If the loss's gradients are unbounded on this problem and no ``clip_norm``
            is set.
        """
        clip_norm = getattr(self, "clip_norm", None)
        bound = spec.gradient_bound
        if clip_norm is None and not math.isfinite(bound):
            raise IncompatibleSolverError(
                f"the gradients of {type(spec.loss).__name__} are unbounded on this "
                f"problem, so solver {self.name!r} needs a public clipping norm: set the "
                "solver's clip_norm, or constraint='l2' with a radius (and "
                "fit_intercept=False), or use solver='output_perturbation'."
            )
        return bound if clip_norm is None else min(float(clip_norm), bound)

    def release_noise_scale(self, plan: Plan) -> float | None:
        """Public lower bound on the per-coordinate noise scale of the released point.

        Used by the estimators' ``secure=True`` mode to choose the grid the release is
        snapped to (see :func:`snap_release`).

        <<release_parameters>>

        Returns
        -------
        float or None
            The bound; ``None``: not available for this solver.
        """
        return None

    # -- the algorithm -------------------------------------------------------------------
    @abstractmethod
    def plan(self, spec: ProblemSpec, budget: Budget, accounting: str, relation: str) -> Plan:
        """Fix iteration counts and calibrate noise from public quantities only.

        <<plan_parameters>>

        Returns
        -------
        Plan
            The solver's plan (a subclass of :class:`Plan` with its constants), whose
            ``event`` spends at most ``budget`` under ``accounting``.
        """

    @abstractmethod
    def _run(self, problem: Problem, plan: Plan, noise: NoiseSource) -> np.ndarray:
        """Run the planned algorithm; every random draw comes from ``noise``."""

    def _run_released(self, problem: Problem, plan: Plan, noise: NoiseSource) -> Released:
        """:meth:`_run` and what else it released for inference (none by default)."""
        return Released(self._run(problem, plan, noise))

    def check(self, spec: ProblemSpec, budget: Budget, *, accounting: str = "auto",
              relation: str = "replace_one") -> str:
        """Validate the solver's parameters and its compatibility with ``spec``.

        No calibration: nothing is planned.

        <<prepare_parameters>>

        Returns
        -------
        str
            The accounting method that ``accounting`` resolves to.

        Raises
        ------
        ValueError
            If a constructor parameter is invalid.
        IncompatibleSolverError
            If the solver cannot solve this problem with these settings.
        """
        self._validate_params()
        accounting = self.resolve_accounting(accounting, budget)
        self.check_compatible(spec, accounting, relation)
        return accounting

    def prepare(
        self, spec: ProblemSpec, budget: Budget, *, accounting: str = "auto",
        relation: str = "replace_one",
    ) -> tuple[Plan, PrivacyLedger, PrivacySpent]:
        """Plan from public quantities only and verify the plan's ledger against the budget.

        Reads no data: a budget accountant is charged with this ledger before ``fit``
        reads any value of ``X``, and :meth:`solve` runs exactly this plan.

        ``budget`` is trusted (validated once, by :func:`~skdp.privacy.check_budget`).
        The plan's ledger is re-accounted by :meth:`PrivacyLedger.reaccount
        <skdp.privacy.PrivacyLedger.reaccount>`: a fresh composition engine composes the events
        the plan records, on a code path that shares no cache with the calibration that
        chose the noise (see :func:`skdp.privacy.reaccount`). Its result is the ledger's
        ``spent()`` from then on.

        <<prepare_parameters>>

        Returns
        -------
        plan : Plan
            The solver's plan.
        ledger : PrivacyLedger
            The ledger of the plan's events.
        spent : PrivacySpent
            The re-accounted ``(epsilon, delta)`` of the ledger.

        Raises
        ------
        PrivacyAccountingError
            If the re-accounted ``(epsilon, delta)`` exceeds ``budget``.
        """
        accounting = self.check(spec, budget, accounting=accounting, relation=relation)
        plan = self.plan(spec, budget, accounting, relation)
        ledger = PrivacyLedger(plan.event, accounting, relation, budget, plan.via_add_remove)
        # The calibrated noise is re-accounted independently BEFORE any noise is drawn.
        spent = ledger.reaccount()
        if budget.is_private and not spent.within(budget):
            raise PrivacyAccountingError(
                f"solver {self.name!r} planned a ledger spending {tuple(spent)} beyond "
                f"the budget ({budget.epsilon}, {budget.delta}); refusing to run."
            )
        return plan, ledger, spent

    def solve(
        self,
        problem: Problem,
        budget: Budget,
        random_state: Any = None,
        *,
        accounting: str = "auto",
        relation: str = "replace_one",
        prepared: tuple[Plan, PrivacyLedger, PrivacySpent] | None = None,
    ) -> SolverResult:
        """Plan, verify the plan's ledger against the budget, then run.

        Parameters
        ----------
        problem : Problem
            Data and public specification.
        budget : Budget
            Validated budget (see :func:`~skdp.privacy.check_budget`).
        random_state : None, int, Generator or NoiseSource
            Source of every random draw.
        accounting : {"auto", "gaussian", "rdp", "pld", "pure", "basic"}
            The accounting method that reads the ledger (``"auto"``: the solver's
            default, see :meth:`resolve_accounting`).
        relation : {"replace_one"}
            Neighbouring relation of the guarantee.
        prepared : tuple, optional
            The output of :meth:`prepare` for ``problem.spec`` (planned once, before the
            data was read, and its ledger re-accounted then); planned here otherwise.

        Returns
        -------
        SolverResult
            The released coefficients with the plan, the ledger and what it spent.

        Raises
        ------
        PrivacyAccountingError
            If the planned ledger exceeds ``budget`` (see :meth:`prepare`), or if
            ``prepared`` was planned for another budget.
        """
        if prepared is None:
            prepared = self.prepare(problem.spec, budget, accounting=accounting,
                                    relation=relation)
        plan, ledger, spent = prepared
        if ledger.budget != budget:
            raise PrivacyAccountingError(
                f"solver {self.name!r} was given a plan for the budget "
                f"({ledger.budget.epsilon}, {ledger.budget.delta}), not for "
                f"({budget.epsilon}, {budget.delta}); refusing to run."
            )
        # Floating-point warnings are off while the solver runs: whether a score, a
        # derivative or an iterate overflows depends on the data, and a warning would
        # say so (the dask chunk functions, which run elsewhere, are silenced likewise).
        with np.errstate(all="ignore"):
            out = self._run_released(problem, plan, as_noise_source(random_state))
        return SolverResult(coef=out.coef, n_iter=plan.n_iter, ledger=ledger, spent=spent,
                            plan=plan, inference=out.inference)


fill_docstrings(BaseDPSolver, HOOK_DOCS)
