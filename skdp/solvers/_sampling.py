"""The solvers whose mini-batches are sampled: their sampling option and its accountant.

One place for the rule three solvers wrote out: batches sampled uniformly without
replacement are accounted by RDP (dp_accounting's PLD accountant has no such event);
Poisson batches default to the PLD accountant, tight where RDP is not (docs/privacy.md,
the calibration note, section 6.3).
"""

from __future__ import annotations

from skdp.exceptions import IncompatibleSolverError

__all__ = ["SAMPLINGS", "BatchSampling"]

#: The values of a solver's ``sampling`` option.
SAMPLINGS = ("without_replacement", "poisson")


class BatchSampling:
    """Mixin of the solvers with a ``sampling`` option (placed before the solver base)."""

    sampling: str

    def resolve_accountant(self, accountant: str, budget=None) -> str:
        """``"auto"``: ``"pld"`` for Poisson batches, ``"rdp"`` otherwise."""
        if accountant == "auto":
            return "pld" if self.sampling == "poisson" else "rdp"
        return accountant

    def check_compatible(self, spec, accountant: str, relation: str) -> None:
        """Refuse the PLD accountant for batches sampled without replacement; then the
        solver's own checks."""
        # Depends on the solver's own sampling option, which no declaration expresses.
        if self.sampling == "without_replacement" and accountant == "pld":
            raise IncompatibleSolverError(
                "the PLD accountant cannot account batches sampled without replacement; "
                "use accounting='rdp' (estimators; accountant='rdp' in solver calls), or the "
                "solver option sampling='poisson'."
            )
        super().check_compatible(spec, accountant, relation)
