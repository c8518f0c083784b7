"""``python -m skdp.solvers PATH``: regenerate the solver table of a docs page (PATH,
normally docs/solvers.md) from the registered solvers' declared capabilities."""

import sys

from skdp.solvers import SOLVERS
from skdp.solvers._capabilities import write_table

if __name__ == "__main__":
    write_table(sys.argv[1] if len(sys.argv) > 1 else "docs/solvers.md", SOLVERS)
