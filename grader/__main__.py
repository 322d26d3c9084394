"""`python -m grader <verb>`: the one command of the course's grading tools."""

import argparse
import sys


def demo(args):
    """What `make demo` runs: build the release and autograde the sample class."""
    print("The sample class and its autograder are not built yet (issue: the grader).\n"
          "What exists today: the course library (ticketnet.py), the Larkfield tickets (data/)\n"
          "and the test suite (make test). Nothing was graded.", file=sys.stderr)
    return 1


def execute(args):
    """Execute notebooks in place (solution notebooks are stored with their outputs)."""
    from grader.execute import execute as run
    for path in args.notebooks:
        print(f"{path}: executed in {run(path):.1f} s")
    return 0


def release(args):
    """Regenerate the student release notebooks/ from solutions/ with nbgrader.

    With --check, change nothing: exit 1 and list the files when notebooks/ is out of sync.
    Example: python -m grader release --check
    """
    from grader import release as releasing
    if args.check:
        stale = releasing.out_of_sync()
        for path in stale:
            print(f"out of sync: {path}")
        if stale:
            print("Run `python -m grader release` and commit notebooks/.", file=sys.stderr)
            return 1
        print("notebooks/ is in sync with solutions/.")
        return 0
    for path in releasing.release():
        print(f"released {path.relative_to(releasing.ROOT)}")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m grader", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser("demo", help=demo.__doc__).set_defaults(run=demo)
    runner = verbs.add_parser("execute", help=execute.__doc__)
    runner.add_argument("notebooks", nargs="+", help="paths of .ipynb files")
    runner.set_defaults(run=execute)
    releaser = verbs.add_parser("release", help=release.__doc__.splitlines()[0], description=release.__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    releaser.add_argument("--check", action="store_true", help="only report files out of sync")
    releaser.set_defaults(run=release)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
