"""Progress messages of long fits (``verbose=1|2``), data-independent by construction."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


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
