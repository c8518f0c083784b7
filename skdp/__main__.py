"""Command line: ``python -m skdp demo``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m skdp`` and of the ``skdp`` script."""
    parser = argparse.ArgumentParser(prog="python -m skdp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="a private workflow on raw bundled breast-cancer data")
    demo.add_argument("--seed", type=int, default=0,
                      help="seed of the first split (default 0); the noise is fresh")
    demo.add_argument("--runs", type=int, default=5,
                      help="runs of the workflow; the median and range are printed")
    demo.add_argument("--plot", default="skdp_demo.png",
                      help="PNG path for accuracy vs epsilon (default skdp_demo.png)")
    demo.add_argument("--no-plot", action="store_true", help="do not write the PNG")
    demo.add_argument("--all-solvers", action="store_true",
                      help="the table of every solver for several epsilons (about 2 min)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from skdp._demo import run_demo

        run_demo(seed=args.seed, plot=None if args.no_plot else args.plot,
                 all_solvers=args.all_solvers, runs=args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
