"""Progress messages of long fits (``verbose=1|2``), data-independent by construction."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress", "StepProgress"]

#: Step progress is printed at each of this many equal fractions of the planned steps.
TICKS = 10
#: At ``verbose=1`` the solver's progress is printed only for fits of at least this many
#: cells (rows times features, public): smaller fits take well under a second and print
#: their start, their private bounds and their end (at most 3 lines).
LONG_FIT_CELLS = 5_000_000


class Progress:
    """Prints the phases of one fit.

    ``verbose=1``: each phase with PUBLIC quantities only (shapes, budgets, solver names),
    so that the text is the same on neighbouring data sets (tested). ``verbose=2`` adds
    quantities derived from private outputs (the planned iteration count, which follows
    the private bounds) and the elapsed time: post-processing and a timing channel, outside
    that exact-text guarantee (see docs/privacy.md, "What is not protected").
    """

    def __init__(self, owner: object, verbose: int) -> None:
        self.prefix = f"[{type(owner).__name__}]"
        self.verbose = int(verbose)
        self.start = time.perf_counter()

    def __call__(self, message: str, detail: str | None = None) -> None:
        if self.verbose < 1:
            return
        text = f"{self.prefix} {message}"
        if self.verbose >= 2:
            if detail:
                text += f"; {detail}"
            text += f" ({time.perf_counter() - self.start:.2f} s)"
        print(text, file=sys.stdout, flush=True)

    def shows_steps(self, cells: int) -> bool:
        """Whether the solver's progress is printed for a fit of ``cells`` (public) cells:
        at ``verbose=2``, or at ``verbose=1`` from :data:`LONG_FIT_CELLS` on."""
        return self.verbose >= 2 or (self.verbose >= 1 and cells >= LONG_FIT_CELLS)

    def steps(self, planned: int, cells: int | None = None) -> StepProgress | None:
        """A counter of the solver's ``planned`` steps for :class:`StepProgress` (``None``
        when nothing is printed; see :meth:`shows_steps`)."""
        shown = self.verbose >= 1 if cells is None else self.shows_steps(cells)
        return StepProgress(self, planned) if shown else None


class StepProgress:
    """Counts a solver's steps and prints at each tenth of the plan.

    The solver reports every step (``problem.advance``); the line ``solving: k0%`` is
    printed once for each ``k`` = 1..10, when the count reaches ``ceil(k T / 10)`` of the
    ``T`` planned steps (several at once when ``T < 10``; :meth:`finish` prints the rest
    for solvers that make one release). The text is the same ten lines for every fit, so
    at ``verbose=1`` it does not depend on ``T`` (which follows the private bounds);
    ``verbose=2`` adds ``step k of T`` and the time.
    """

    def __init__(self, progress: Progress, planned: int) -> None:
        self.progress = progress
        self.planned = max(int(planned), 1)
        self.done = 0
        self.printed = 0

    def __call__(self, steps: int = 1) -> None:
        self.done += int(steps)
        while (self.printed < TICKS
               and self.done * TICKS >= (self.printed + 1) * self.planned):
            self.printed += 1
            self.progress(f"solving: {10 * self.printed}%",
                          f"step {min(self.done, self.planned)} of {self.planned}")

    def finish(self) -> None:
        """Print the tenths not reached (a solver that reports no steps)."""
        while self.printed < TICKS:
            self.printed += 1
            self.progress(f"solving: {10 * self.printed}%",
                          f"step {self.planned} of {self.planned}")
