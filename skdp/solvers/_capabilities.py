"""What a solver needs and offers, declared once as data.

Each solver class sets ``capabilities = Capabilities(...)``. The declaration drives the
generic compatibility check run before any data is read (:func:`check_capabilities`),
the estimators' ``solver`` docstrings, the solver table of ``docs/solvers.md`` and the
conformance tests' parametrization. A solver keeps a hand-written ``check_compatible``
only for data-free numeric conditions that no declaration expresses.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass, fields

from skdp.exceptions import IncompatibleSolverError
from skdp.losses import BUILTIN_LOSSES

__all__ = [
    "CONSTRAINT_KINDS",
    "INTERCEPT_RULES",
    "LOSS_NAMES",
    "Capabilities",
    "accepts_any",
    "SEE_SOLVERS",
    "accepting",
    "check_capabilities",
    "incompatibility",
    "solver_table",
    "summary",
]

#: ``Constraint.kind`` of every constraint set in :mod:`skdp.geometry`.
CONSTRAINT_KINDS = ("none", "l2", "l1", "lp", "simplex")
#: How the intercept enters: ``"free"`` (unpenalised, outside the constraint),
#: ``"penalized"`` (the solver penalises it like every coefficient: the estimator builds
#: the problem so), ``"constrained"`` (every coefficient must lie in the constraint: a
#: free intercept is refused).
INTERCEPT_RULES = ("free", "penalized", "constrained")
#: ``GLMLoss.name`` of every loss in :mod:`skdp.losses`.
LOSS_NAMES = tuple(BUILTIN_LOSSES)
_OBJECTIVES = ("erm", "tilted", "adversarial", "tilted_adversarial")


@dataclass(frozen=True)
class Capabilities:
    """A solver's requirements and offers (public, data-free).

    Attributes
    ----------
    algorithm : str
        Short name of the algorithm and its source (docs tables).
    needs_delta : bool
        Whether the guarantee is approximate DP only (``delta > 0`` required).
    accounting_methods : tuple of str
        Accounting methods that can read the solver's ledger (``"pure"`` among them: a
        pure epsilon-DP mechanism exists).
    default_accounting : str
        Accounting method used for ``"auto"`` (``"pure"`` when ``delta = 0`` and pure DP
        exists).
    losses : tuple of str
        ``GLMLoss.name`` of the losses the solver accepts.
    constraints : tuple of str
        ``Constraint.kind`` of the constraint sets the solver accepts.
    max_lp : float
        Largest exponent of an ``"lp"`` constraint (``inf``: any).
    bounded_constraint : bool
        A bounded constraint set is required.
    intercept : {"free", "penalized", "constrained"}
        How an intercept enters (see :data:`INTERCEPT_RULES`).
    strongly_convex : bool
        ``alpha > 0`` is required.
    bounded_gradients : bool
        Per-example gradients must be bounded without clipping (for the squared loss:
        a bounded constraint and no free intercept).
    objectives : tuple of str
        Objectives offered: ``"erm"``, ``"tilted"``, ``"adversarial"``,
        ``"tilted_adversarial"``.
    max_outputs : int or None
        Largest number of outputs (``None``: any).
    max_params : int or None
        Largest number of parameters (``None``: any).
    min_samples : int
        Smallest dataset size.
    sparse : bool
        CSR input stays sparse (never densified).
    secure : bool
        Declares the release's noise scale, so ``secure=True`` can snap the release.
    inexact_at_inf : str
        Why the solver's defaults do not reach its objective's optimum (within 1e-4 excess
        risk) at ``epsilon=inf``; empty when they do. A non-empty reason makes the
        estimators warn (``ConvergenceWarning``) on non-private fits.
    row_norm : {"dual", "l2"}
        The norm of the rows its guarantee reads, which ``data_norm_ord="auto"`` takes:
        ``"dual"``, the dual norm of the constraint (the l1 ball's l-infinity for the
        l1-geometry solvers), or ``"l2"`` whatever the constraint (a solver whose
        sensitivity is an l2 quantity, such as the Gram matrix's ``||x||_2^2``).
    out_of_core : bool
        Runs on a ``dask.array`` ``X`` and on an array API ``X`` kept on its device
        (PyTorch, CuPy, ``array_api_strict``): every pass over the data is a
        :meth:`~skdp.solvers.Problem` full-batch pass (or a subset gathered by public
        indices), summed chunk by chunk where the chunks are, or on the device
        (docs/scaling_out.md). A ``numpy.memmap`` is an array: every solver takes it.
    """

    algorithm: str
    needs_delta: bool = True
    accounting_methods: tuple[str, ...] = ("rdp", "pld")
    default_accounting: str = "rdp"
    losses: tuple[str, ...] = ("logistic", "multinomial", "smoothed_hinge", "squared", "huber")
    constraints: tuple[str, ...] = ("none", "l2")
    max_lp: float = math.inf
    bounded_constraint: bool = False
    intercept: str = "free"
    strongly_convex: bool = False
    bounded_gradients: bool = False
    objectives: tuple[str, ...] = ("erm",)
    max_outputs: int | None = None
    max_params: int | None = None
    min_samples: int = 1
    sparse: bool = True
    secure: bool = False
    inexact_at_inf: str = ""
    row_norm: str = "dual"
    out_of_core: bool = False

    def __post_init__(self) -> None:
        for name, allowed in (("losses", LOSS_NAMES), ("constraints", CONSTRAINT_KINDS),
                              ("objectives", _OBJECTIVES)):
            unknown = set(getattr(self, name)) - set(allowed)
            if unknown:
                raise ValueError(f"Capabilities.{name}: unknown {sorted(unknown)}; "
                                 f"known: {allowed}.")
        if self.row_norm not in ("dual", "l2"):
            raise ValueError('Capabilities.row_norm must be "dual" or "l2".')
        if self.intercept not in INTERCEPT_RULES:
            raise ValueError(f"Capabilities.intercept must be one of {INTERCEPT_RULES}.")
        if self.default_accounting not in self.accounting_methods:
            raise ValueError("Capabilities.default_accounting must be one of "
                             "accounting_methods.")

    @property
    def pure_dp(self) -> bool:
        """A pure epsilon-DP mechanism exists (``delta = 0`` accepted)."""
        return "pure" in self.accounting_methods

    @property
    def smooth_loss(self) -> bool:
        """Only smooth losses are accepted (no ``"hinge"``)."""
        return "hinge" not in self.losses

    def as_row(self) -> dict[str, str]:
        """The declaration as the text of one docs-table row."""
        def listed(values: Iterable[str]) -> str:
            return ", ".join(f"`{v}`" for v in values)

        lp = "" if not math.isfinite(self.max_lp) else f" (p <= {self.max_lp:g})"
        needs = [w for w, on in (("alpha > 0", self.strongly_convex),
                                 ("bounded constraint", self.bounded_constraint),
                                 ("bounded gradients", self.bounded_gradients)) if on]
        if self.max_outputs is not None:
            needs.append(f"at most {self.max_outputs} output(s)")
        if self.max_params is not None:
            needs.append(f"at most {self.max_params} parameters")
        if self.min_samples > 1:
            needs.append(f"n >= {self.min_samples}")
        return {
            "algorithm": self.algorithm,
            "delta > 0": "required" if self.needs_delta else "optional (pure DP at 0)",
            "losses": listed(self.losses),
            "constraints": listed(self.constraints) + lp,
            "intercept": self.intercept,
            "also needs": ", ".join(needs) or "-",
            "objectives": listed(self.objectives),
            "accounting": (listed(self.accounting_methods)
                           + f" (auto: `{self.default_accounting}`)"),
            "sparse": "yes" if self.sparse else "densified",
            "secure": "yes" if self.secure else "no",
            "rows (auto)": ("l2" if self.row_norm == "l2" else "dual of the constraint"),
            "dask, array API": "yes" if self.out_of_core else "no",
            "epsilon=inf": ("approximate: " + self.inexact_at_inf if self.inexact_at_inf
                            else "optimum"),
        }


TABLE_COLUMNS = ("algorithm", "delta > 0", "losses", "constraints", "intercept",
                 "also needs", "objectives", "accounting", "sparse", "secure",
                 "rows (auto)", "dask, array API", "epsilon=inf")


def _constraint_fix(caps: Capabilities) -> str:
    kinds = [k for k in caps.constraints if k != "none" or not caps.bounded_constraint]
    shown = ", ".join("None" if k == "none" else repr(k) for k in kinds)
    return f"constraint={shown.split(', ')[0]}" if len(kinds) == 1 else \
        f"constraint one of {shown}"


def incompatibility(caps: Capabilities, name: str, spec, accounting: str,
                    relation: str) -> str | None:
    """Why ``spec`` does not meet the declaration ``caps`` (``None`` if it does).

    The reason names the one setting to change; every condition reads public
    quantities only (sizes, declared bounds, the loss and constraint objects).
    """
    constraint, loss = spec.constraint, spec.loss
    kind = getattr(constraint, "kind", None)
    loss_name = getattr(loss, "name", None)
    if not isinstance(loss, BUILTIN_LOSSES.get(loss_name, ())):
        # A loss is built-in by its class, not its name: solvers rely on the built-in
        # classes' methods (objective perturbation's Hessians).
        loss_name = None
    if accounting not in caps.accounting_methods:
        return (f"solver {name!r} cannot be accounted by {accounting!r}; set accounting to "
                f"one of {caps.accounting_methods} (or 'auto').")
    objective = spec.objective_kind
    if objective not in caps.objectives:
        return (f"solver {name!r} does not support the {objective!r} objective "
                f"(tilt={spec.tilt}, adversarial_radius={spec.adversarial_radius}); set "
                "solver to one that does (see below), or tilt=None and "
                "adversarial_radius=None.")
    if loss_name not in LOSS_NAMES:
        # A user-defined GLMLoss, judged by its smoothness: accepted by the solvers that
        # accept every built-in loss of that kind (their arguments use only the declared
        # derivative and curvature bounds).
        needed = set(LOSS_NAMES) - ({"hinge"} if loss.smooth else set())
        if not needed <= set(caps.losses):
            return (f"solver {name!r} accepts only the losses {caps.losses}, and "
                    f"{type(loss).__name__} declares no name among them; set solver to one "
                    "that accepts any loss (see below).")
    elif loss_name not in caps.losses:
        smooth = "; a smooth loss such as loss='smoothed_hinge' works with more solvers" \
            if loss_name == "hinge" else ""
        return (f"solver {name!r} does not accept the {loss_name!r} loss "
                f"({type(loss).__name__}); it accepts {caps.losses}: set solver to one "
                f"that does (see below){smooth}.")
    if kind not in caps.constraints:
        return (f"solver {name!r} does not accept the constraint {type(constraint).__name__}; "
                f"set {_constraint_fix(caps)}, or solver to one that does (see below).")
    if kind == "lp" and float(constraint.p) > caps.max_lp:
        return (f"solver {name!r} works with l_p constraints for p <= {caps.max_lp:g} only, "
                f"got p={float(constraint.p):g}; set p <= {caps.max_lp:g}, or solver to one "
                "that does (see below).")
    if caps.bounded_constraint and not constraint.bounded:
        return (f"solver {name!r} needs a bounded constraint; set "
                f"{_constraint_fix(caps)} with a finite radius.")
    if caps.intercept != "free" and spec.n_penalized != spec.n_params:
        why = ("penalises every coefficient (its sensitivity uses strong convexity in all "
               "of them)" if caps.intercept == "penalized" else
               "needs every coefficient inside the constraint")
        return (f"solver {name!r} {why}, and a free intercept is not; set "
                "fit_intercept=False (centre the data with public constants).")
    if caps.strongly_convex and not spec.alpha > 0:
        return (f"solver {name!r} needs a strongly convex objective; set alpha > 0, or "
                "solver to one that does not (see below).")
    if caps.bounded_gradients and not math.isfinite(spec.gradient_bound):
        return (f"solver {name!r} needs per-example gradients bounded without clipping, but "
                f"{type(loss).__name__} has an unbounded derivative on this problem; set "
                "constraint='l2' with a radius and fit_intercept=False, or solver to one "
                "that clips (see below).")
    if caps.max_outputs is not None and spec.n_outputs > caps.max_outputs:
        return (f"solver {name!r} fits at most {caps.max_outputs} output(s), the problem has "
                f"{spec.n_outputs}; set solver to one that fits more (see below).")
    if caps.max_params is not None and spec.n_params > caps.max_params:
        return (f"solver {name!r} supports at most {caps.max_params} parameters, the problem "
                f"has {spec.n_params}; set solver to one without that limit (see below).")
    if spec.n_samples < caps.min_samples:
        return (f"solver {name!r} needs at least {caps.min_samples} samples, got "
                f"{spec.n_samples} sample{'' if spec.n_samples == 1 else 's'}.")
    return None


#: Where a compatibility message names the solvers that accept the problem. The solver
#: layer does not import the registry: the estimators fill in the names
#: (:func:`skdp.solvers.accepting_solvers`); a solver called directly points at the docs.
SEE_SOLVERS = "(see the table in docs/solvers.md)"


def check_capabilities(solver, spec, accounting: str, relation: str) -> None:
    """Raise :class:`IncompatibleSolverError` when ``spec`` does not meet the declaration.

    The message names the setting to change; where changing the solver is the way out it
    ends with :data:`SEE_SOLVERS`, and the error carries ``suggest = (solver name, spec,
    accounting, relation)`` for the estimators, which replace it by the registered solvers
    whose declarations accept this problem.
    """
    caps: Capabilities = solver.capabilities
    reason = incompatibility(caps, solver.name, spec, accounting, relation)
    if reason is None:
        return
    if "(see below)" not in reason:
        raise IncompatibleSolverError(reason)
    error = IncompatibleSolverError(reason.replace("(see below)", SEE_SOLVERS))
    error.suggest = (solver.name, spec, accounting, relation)
    raise error


def accepting(caps: Capabilities, name: str, spec, accounting: str, relation: str) -> bool:
    """Whether a solver declared by ``caps`` accepts ``spec`` as the estimators would build
    it (intercept penalised for the solvers that need it so; the solver's default
    accounting method when ``accounting`` is not one of its own)."""
    if caps.intercept == "penalized":
        spec = dataclasses.replace(spec, n_penalized=spec.n_params)
    if accounting not in caps.accounting_methods:
        accounting = caps.default_accounting
    return incompatibility(caps, name, spec, accounting, relation) is None


def accepts_any(caps: Capabilities, losses: Iterable[str], constraints: Iterable[str]) -> bool:
    """Whether some combination of the given loss names and constraint kinds (an
    estimator's options) meets the declaration's loss and constraint requirements."""
    kinds = set(caps.constraints) & set(constraints)
    if caps.bounded_constraint:
        kinds.discard("none")
    return bool(set(caps.losses) & set(losses)) and bool(kinds)


def summary(caps: Capabilities, losses: Iterable[str] = LOSS_NAMES,
            constraints: Iterable[str] = CONSTRAINT_KINDS) -> str:
    """One line on the declaration, restricted to an estimator's losses and constraints."""
    losses, constraints = tuple(losses), tuple(constraints)
    notes = ["pure DP at delta = 0" if caps.pure_dp else "needs delta > 0"]
    if caps.strongly_convex:
        notes.append("needs alpha > 0")
    own_losses = [name for name in caps.losses if name in losses]
    if len(own_losses) < len(losses):
        notes.append("loss " + " or ".join(f'``"{name}"``' for name in own_losses))
    kinds = [k for k in caps.constraints if k in constraints
             and not (k == "none" and caps.bounded_constraint)]
    if len(kinds) < len(constraints):
        shown = ["None" if k == "none" else f'``"{k}"``' for k in kinds]
        notes.append("constraint " + " or ".join(shown))
    if math.isfinite(caps.max_lp) and "lp" in kinds:
        notes.append(f"p <= {caps.max_lp:g}")
    if caps.intercept == "constrained":
        notes.append("no free intercept")
    if caps.bounded_gradients:
        notes.append("bounded gradients")
    if caps.max_outputs is not None:
        notes.append(f"at most {caps.max_outputs} output")
    if caps.max_params is not None:
        notes.append(f"at most {caps.max_params} parameters")
    if "tilted" in caps.objectives:
        notes.append("tilted ERM and adversarial training")
    if caps.inexact_at_inf:
        notes.append("defaults approximate at epsilon=inf")
    return f"{caps.algorithm}; {', '.join(notes)}"


def solver_table(registry: dict) -> str:
    """The markdown table of ``docs/solvers.md``, one row per registered solver."""
    head = ["name", "class", *TABLE_COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, cls in registry.items():
        row = cls.capabilities.as_row()
        cells = [f"`{key}`", f"`{cls.__name__}`", *(row[c] for c in TABLE_COLUMNS)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def declared_fields() -> tuple[str, ...]:
    """Names of the declaration's fields (tests parametrize over them)."""
    return tuple(f.name for f in fields(Capabilities))


#: Markers around the generated table in docs/solvers.md.
TABLE_START = ("<!-- solver-table: generated by `python -m skdp.solvers docs/solvers.md`; "
               "do not edit -->")
TABLE_END = "<!-- end of solver-table -->"


def with_table(text: str, registry: dict) -> str:
    """``text`` with the table between its two marker comments generated anew.

    Parameters
    ----------
    text : str
        A page holding :data:`TABLE_START` and :data:`TABLE_END`.
    registry : dict
        The registered solvers, by name.

    Returns
    -------
    str
        The page with :func:`solver_table` between the markers.
    """
    start, end = text.index(TABLE_START) + len(TABLE_START), text.index(TABLE_END)
    return text[:start] + "\n" + solver_table(registry) + text[end:]


def write_table(path: str, registry: dict) -> None:
    """Rewrite the generated table of ``path`` (between its two marker comments)."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(with_table(text, registry))
