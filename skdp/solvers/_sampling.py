"""The solvers whose mini-batches are sampled: their sampling option and its accounting.

One place for the rule three solvers wrote out: batches sampled uniformly without
replacement are accounted by RDP (dp_accounting's ``PLDAccountant`` has no such event);
Poisson batches default to PLD accounting, tight where RDP is not (docs/privacy.md,
the calibration note, section 6.3).
"""

from __future__ import annotations

from typing import ClassVar

from skdp._docstrings import fill_docstrings
from skdp._sklearn_compat import StrOptions
from skdp.exceptions import IncompatibleSolverError
from skdp.solvers._base import HOOK_DOCS

__all__ = ["SAMPLINGS", "BatchSampling"]

#: The values of a solver's ``sampling`` option.
SAMPLINGS = ("without_replacement", "poisson")


class BatchSampling:
    """Mixin of the solvers with a ``sampling`` option (placed before the solver base)."""

    sampling: str
    #: Merged into each sampling solver's own constraints (a tuple, as the shared ones of
    #: skdp._params: one object serves three solvers).
    _parameter_constraints: ClassVar[dict] = {"sampling": (StrOptions(set(SAMPLINGS)),)}

    def resolve_accounting(self, accounting: str, budget=None) -> str:
        """Resolve ``"auto"``: ``"pld"`` for Poisson batches, ``"rdp"`` otherwise.

        Parameters
        ----------
        accounting : str
            ``"auto"`` or an accounting method (returned unchanged).
        budget : Budget or None, default=None
            The budget of the fit (not read: the sampling option decides).

        Returns
        -------
        str
            The accounting method used.
        """
        if accounting == "auto":
            return "pld" if self.sampling == "poisson" else "rdp"
        return accounting

    def check_compatible(self, spec, accounting: str, relation: str) -> None:
        """Refuse PLD accounting for batches sampled without replacement.

        Then the solver's own checks run.

        <<check_sections>>
            If ``accounting="pld"`` with ``sampling="without_replacement"``, or if the
            solver's own checks fail.
        """
        # Depends on the solver's own sampling option, which no declaration expresses.
        if self.sampling == "without_replacement" and accounting == "pld":
            raise IncompatibleSolverError(
                "PLD accounting cannot account batches sampled without replacement; "
                "use accounting='rdp', or the solver option sampling='poisson'."
            )
        super().check_compatible(spec, accounting, relation)


# A mixin, not a solver: its hooks' docstrings are filled here (HOOK_DOCS).
fill_docstrings(BatchSampling, HOOK_DOCS)
