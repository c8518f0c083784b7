"""``python -m benchmarks run --profile quick|full`` | ``check`` | ``report``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchmarks import config, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a profile, write results/suite_<profile>.*")
    run.add_argument("--profile", choices=sorted(config.PROFILES), default="quick")
    run.add_argument("--scenario", action="append", choices=sorted(config.SCENARIOS),
                     help="only these scenarios (repeatable; the rest of the run is kept)")
    run.add_argument("--part", action="append", choices=config.PARTS,
                     help="only these parts (repeatable); the others are kept from the "
                          "profile's last results, which the page then says")
    chk = sub.add_parser("check", help="compare the latest results with the targets")
    chk.add_argument("path", nargs="?", type=Path, help="a results JSON (default: latest)")
    rep = sub.add_parser("report", help="rewrite markdown and plots from a results JSON")
    rep.add_argument("path", type=Path)
    args = parser.parse_args(argv)
    if args.command == "check":
        return report.check(args.path)
    if args.command == "report":
        report.write(json.loads(args.path.read_text()))
        return 0
    from benchmarks import runner

    results = runner.run(config.PROFILES[args.profile], args.scenario,
                         log=lambda msg: print(msg, flush=True),
                         parts=tuple(args.part) if args.part else None)
    path = runner.save(results)
    print(f"wrote {path} and {report.write(results)} in {results['meta']['seconds']:.0f} s")
    return report.check(path)


if __name__ == "__main__":
    sys.exit(main())
