"""MUTATION.md, the committed mutation report: what `make mutation` measured, function by function.

    python tests/mutation.py stale              # mutmut's patterns for the functions to measure again
    python tests/mutation.py write [PATTERN...] # after `mutmut run [PATTERN...]` (needs mutmut)

Each function's row records a digest of its code (its syntax tree, so a comment or a re-wrapped
line does not count as a change) and the day it was measured. `make mutation` asks `stale` which
functions have no row for their current code, has mutmut mutate only those, and `write` gives them
fresh rows; every other row stays as it was. tests/test_mutation.py fails when a function's row
is missing or older than its code, or when a survivor is not explained.

A survivor is either killed by a test or listed in tests/equivalent_mutants.txt with the reason
no test can tell it from the real code. An entry names the function and the line the mutant
changes, not mutmut's number for it, so it stays valid when other mutants are added.
"""

import ast
import configparser
import datetime
import fnmatch
import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "MUTATION.md"
EQUIVALENT = ROOT / "tests" / "equivalent_mutants.txt"


def _mutated_files():
    """The files setup.cfg has mutmut mutate ([mutmut] only_mutate), the one list of them."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return config["mutmut"]["only_mutate"].split()


MODULES = {path.removesuffix(".py").replace("/", "."): path for path in _mutated_files()}
MINIMUM = 85  # percent of mutants killed, over all modules
DETECTED = {"killed", "timeout", "segfault"}  # a test failed, hung or crashed on the mutant
COUNTS = ["mutants", "killed", "equivalent", "survived", "no tests"]
COLUMNS = ["function", "code sha256", "measured", *COUNTS]


@dataclass(frozen=True)
class Equivalent:
    function: str  # mutmut's key without the mutant number, e.g. grader.report.x_write_report
    original: str  # the line the mutant changes, stripped
    mutant: str    # the line in the mutant, stripped
    reason: str


def equivalents(path=EQUIVALENT):
    """The entries of equivalent_mutants.txt: blocks of `function:`, `- line`, `+ line`, `reason:`."""
    entries = []
    for number, block in enumerate(re.split(r"\n\s*\n", path.read_text().strip()), 1):
        lines = [line for line in block.splitlines() if not line.startswith("#")]
        if not lines:
            continue
        fields = dict(re.match(r"(function|-|\+|reason):? ?(.*)$", line).groups() for line in lines)
        if set(fields) != {"function", "-", "+", "reason"} or len(lines) != 4:
            raise ValueError(f"{path.name}, entry {number}: want the four lines `function: ...`, "
                             f"`- original`, `+ mutant`, `reason: ...`, got:\n{block}")
        entries.append(Equivalent(fields["function"], fields["-"].strip(), fields["+"].strip(), fields["reason"]))
    return entries


def functions(module):
    """mutmut's key of each function and method of a module -> its syntax tree. mutmut mutates
    these and nothing else (decorated ones are left alone, and get no mutant)."""
    tree = ast.parse((ROOT / MODULES[module]).read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[f"{module}.x_{node.name}"] = node
        elif isinstance(node, ast.ClassDef):
            for method in node.body:
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found[f"{module}.xǁ{node.name}ǁ{method.name}"] = method
    return found


def code_sha256(node):
    return hashlib.sha256(ast.dump(node).encode()).hexdigest()[:16]


def current():
    """Every mutated function -> the digest of its code today."""
    return {key: code_sha256(node) for module in MODULES for key, node in functions(module).items()}


def module_of(key):
    return re.match(r"(.*?)\.x[_ǁ]", key).group(1)


def function_of(key):
    return re.sub(r"__mutmut_\d+$", "", key)


def committed_rows(path=REPORT):
    """function -> its row of the committed report's table of functions (a dict by column)."""
    rows = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            if len(cells) == len(COLUMNS) and re.match(r"[\w.]+\.x[_ǁ]", cells[0]):
                rows[cells[0]] = dict(zip(COLUMNS, cells))
    return rows


def stale(rows=None):
    """The functions to measure again, in course order: those whose code has no row of its own in
    MUTATION.md, and those whose row has survivors (once a new test or an entry of
    equivalent_mutants.txt explains them)."""
    rows = committed_rows() if rows is None else rows
    return [key for key, digest in current().items() if rows.get(key, {}).get("code sha256") != digest
            or rows[key]["survived"] != "0" or rows[key]["no tests"] != "0"]


def unmutated_copies():
    """The copies in mutants/ of files setup.cfg has mutmut mutate that hold no mutant: copied
    unchanged while the file was not listed yet. mutmut makes a file's copy again only when the
    file is newer than it, so a newly listed module would never be mutated; `make mutation`
    removes these copies first."""
    copies = [ROOT / "mutants" / path for path in _mutated_files()]
    return [str(copy) for copy in copies if copy.is_file() and "__mutmut_" not in copy.read_text()]


def score(rows):
    """The share of all mutants killed, in percent (100 when there are none)."""
    total = sum(int(r["mutants"]) for r in rows)
    return 100 * sum(int(r["killed"]) for r in rows) / total if total else 100.0


def _measured():
    """function -> [(mutant key, status, removed line, added line)] from mutmut's results."""
    from mutmut.__main__ import SourceFileMutationData, status_by_exit_code, walk_mutatable_files
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    found = {}
    for path in walk_mutatable_files():
        data = SourceFileMutationData(path=path)
        data.load()
        for key, code in data.exit_code_by_key.items():
            status = status_by_exit_code[code]
            removed = added = ""
            if status not in DETECTED | {"not checked"}:
                diff = get_diff_for_mutant(key, path=path).splitlines()[2:]
                removed = " ⏎ ".join(l[1:].strip() for l in diff if l.startswith("-"))
                added = " ⏎ ".join(l[1:].strip() for l in diff if l.startswith("+"))
            found.setdefault(function_of(key), []).append((key, status, removed, added))
    return found


def _fresh_row(key, digest, mutants, known, unexplained):
    """The row of a function whose every mutant mutmut has just tested."""
    counts = dict.fromkeys(COUNTS, 0)
    counts["mutants"] = len(mutants)
    for mutant, status, removed, added in mutants:
        if status == "not checked":
            sys.exit(f"{key}: mutmut has not tested {mutant}; run `make mutation MUTANTS='{key}__mutmut_*'`")
        if status in DETECTED:
            counts["killed"] += 1
        elif (key, removed, added) in known:
            counts["equivalent"] += 1
        else:
            counts["no tests" if status == "no tests" else "survived"] += 1  # suspicious, skipped: not killed
            unexplained.append((mutant, status, removed, added))
    return {"function": key, "code sha256": digest, "measured": datetime.date.today().isoformat(),
            **{k: str(v) for k, v in counts.items()}}


def write(patterns=("*",)):
    """Write MUTATION.md: fresh rows for the functions that mutmut's PATTERNS name (mutants/ holds
    their results), the committed rows for the others. Returns the score over all functions."""
    known = {(e.function, e.original, e.mutant) for e in equivalents()}
    committed, measured = committed_rows(), _measured()
    rows, unexplained = [], []
    for key, digest in current().items():
        if any(fnmatch.fnmatch(f"{key}__mutmut_1", p) or fnmatch.fnmatch(key, p) for p in patterns):
            rows.append(_fresh_row(key, digest, measured.get(key, []), known, unexplained))
        elif committed.get(key, {}).get("code sha256") == digest:
            rows.append(committed[key])
        else:
            sys.exit(f"{key}: changed since MUTATION.md and not measured in this run; run `make mutation`")
    REPORT.write_text(render(rows, unexplained))
    total = score(rows)
    print(f"mutation score: {total:.1f}% ({len(unexplained)} survivors not listed as equivalent); wrote {REPORT.name}")
    return total


def render(rows, unexplained=()):
    """MUTATION.md's text: a summary by module, every function's row, the survivors, the equivalents."""
    by_module = {}
    for row in rows:
        by_module.setdefault(module_of(row["function"]), []).append(row)
    summary = ["| module | functions | " + " | ".join(COUNTS) + " | score |", "|---" * (len(COUNTS) + 3) + "|"]
    for module, members in by_module.items():
        sums = [sum(int(r[c]) for r in members) for c in COUNTS]
        summary.append(f"| {module} | {len(members)} | " + " | ".join(map(str, sums)) + f" | {score(members):.1f}% |")
    table = ["| " + " | ".join(COLUMNS) + " |", "|---" * len(COLUMNS) + "|"]
    table += ["| " + " | ".join(f"`{r[c]}`" if c in ("function", "code sha256") else r[c] for c in COLUMNS) + " |"
              for r in rows]
    entries = equivalents()
    lines = ["# Mutation testing", "",
             "What `make mutation` measured: mutmut changed each function below one small step at a time "
             "(setup.cfg [mutmut]) and ran the fast tests that cover it on each change. A mutant is killed "
             "when a test fails, hangs or crashes on it. Written by `python tests/mutation.py write`. "
             "Each function's row names the digest of the code it was measured on and the day; "
             "`make mutation` measures again only the functions whose code has changed since, and "
             "`tests/test_mutation.py` fails while one has no current row.", "",
             *summary, "",
             f"Score: {score(rows):.1f}% of {sum(int(r['mutants']) for r in rows)} mutants killed "
             f"(at least {MINIMUM}% wanted).", "",
             "## Survivors no test kills yet", ""]
    lines += [f"- `{key}` ({status}): `{removed}` → `{added}`" for key, status, removed, added in unexplained] or ["None."]
    lines += ["", "## Functions", "",
              "A function with no mutant is one mutmut leaves alone (a decorated one) or finds nothing to change in.",
              "", *table, "",
              "## Equivalent mutants", "",
              f"Listed in `tests/equivalent_mutants.txt` ({len(entries)} entries): changes no test can tell "
              "from the real code, each with the reason.", ""]
    lines += [f"- `{e.function}`: `{e.original}` → `{e.mutant}`. {e.reason}" for e in entries]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    command, *patterns = sys.argv[1:] or [""]
    if command == "stale":
        print(" ".join(f"{key}__mutmut_*" for key in stale()))
    elif command == "unmutated":
        print("\n".join(unmutated_copies()))
    elif command == "write":
        sys.exit(write(patterns or ("*",)) < MINIMUM)
    else:
        sys.exit(__doc__)
