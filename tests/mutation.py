"""MUTATION.md, the committed mutation report: what `make mutation` measured, module by module.

    python tests/mutation.py write      # after `mutmut run`, in the repository (needs mutmut)

Each module's row records the SHA-256 of the source it was measured on. A module whose mutants
were all tested in this run (mutants/) gets a fresh row; a module left out of the run
(`make mutation MUTANTS='grader.report.*'` tests one) keeps its committed row, as long as its
source has not changed since. tests/test_mutation.py fails when a row is older than its source.

A survivor is either killed by a test or listed in tests/equivalent_mutants.txt with the reason
no test can tell it from the real code. An entry names the function and the line the mutant
changes, not mutmut's number for it, so it stays valid when other mutants are added.
"""

import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "MUTATION.md"
EQUIVALENT = ROOT / "tests" / "equivalent_mutants.txt"
MODULES = {"ticketnet": "ticketnet.py", "grader.autograde": "grader/autograde.py",
           "grader.gradebook": "grader/gradebook.py", "grader.grading": "grader/grading.py",
           "grader.repair": "grader/repair.py", "grader.report": "grader/report.py"}
MINIMUM = 85  # percent of mutants killed, over all modules
DETECTED = {"killed", "timeout", "segfault"}  # a test failed, hung or crashed on the mutant
COLUMNS = ["module", "source sha256", "mutants", "killed", "equivalent", "survived", "no tests", "score"]


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


def source_sha256(module):
    return hashlib.sha256((ROOT / MODULES[module]).read_bytes()).hexdigest()[:16]


def module_of(key):
    return re.match(r"(.*?)\.x[_ǁ]", key).group(1)


def function_of(key):
    return re.sub(r"__mutmut_\d+$", "", key)


def committed_rows(path=REPORT):
    """module -> its row of the committed report's table (a dict by column)."""
    rows = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
            if len(cells) == len(COLUMNS) and cells[0] in MODULES:
                rows[cells[0]] = dict(zip(COLUMNS, cells))
    return rows


def score(rows):
    """The share of all mutants killed, in percent."""
    total = sum(int(r["mutants"]) for r in rows)
    return 100 * sum(int(r["killed"]) for r in rows) / total if total else 0.0


def _measured():
    """module -> [(mutant key, status, removed line, added line)] from mutmut's results."""
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
            found.setdefault(module_of(key), []).append((key, status, removed, added))
    return found


def write():
    """Write MUTATION.md from mutants/; returns the score."""
    known = {(e.function, e.original, e.mutant): e for e in equivalents()}
    committed, measured = committed_rows(), _measured()
    rows, unexplained, used = [], [], set()
    for module in MODULES:
        mutants = measured.get(module, [])
        if mutants and all(status != "not checked" for _, status, _, _ in mutants):
            counts = {"killed": 0, "equivalent": 0, "survived": 0, "no tests": 0}
            for key, status, removed, added in mutants:
                entry = known.get((function_of(key), removed, added))
                if status in DETECTED:
                    counts["killed"] += 1
                elif entry:
                    counts["equivalent"] += 1
                    used.add(entry)
                else:
                    counts["no tests" if status == "no tests" else "survived"] += 1  # suspicious, skipped: not killed
                    unexplained.append((key, status, removed, added))
            rows.append({"module": module, "source sha256": source_sha256(module), "mutants": str(len(mutants)),
                         **{k: str(v) for k, v in counts.items()}})
        elif module in committed and committed[module]["source sha256"] == source_sha256(module):
            rows.append(committed[module])
        else:
            sys.exit(f"{module}: not tested in this run and changed since MUTATION.md; run `make mutation "
                     f"MUTANTS='{module}.*'`")
    for row in rows:
        row["score"] = f"{score([row]):.1f}%"
    total = score(rows)
    lines = ["# Mutation testing", "",
             "What `make mutation` measured: mutmut changed the code below one small step at a time "
             "(setup.cfg [mutmut]) and ran the fast tests on each change. A mutant is killed when a "
             "test fails, hangs or crashes on it. Written by `python tests/mutation.py write`; "
             "`tests/test_mutation.py` checks that each row was measured on the module's current source.",
             "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(f"`{r[c]}`" if c == "source sha256" else r[c] for c in COLUMNS) + " |" for r in rows]
    lines += ["", f"Score: {total:.1f}% of {sum(int(r['mutants']) for r in rows)} mutants killed "
                  f"(at least {MINIMUM}% wanted).", ""]
    lines += ["## Survivors no test kills yet", ""]
    lines += [f"- `{key}` ({status}): `{removed}` → `{added}`" for key, status, removed, added in unexplained] or ["None."]
    lines += ["", "## Equivalent mutants", "",
              f"Listed in `tests/equivalent_mutants.txt` ({len(known)} entries, {len(used)} matched in this run): "
              "changes no test can tell from the real code, each with the reason.", ""]
    lines += [f"- `{e.function}`: `{e.original}` → `{e.mutant}`. {e.reason}" for e in known.values()]
    REPORT.write_text("\n".join(lines) + "\n")
    print(f"mutation score: {total:.1f}% ({len(unexplained)} survivors not listed as equivalent); "
          f"wrote {REPORT.name}")
    return total


if __name__ == "__main__":
    if sys.argv[1:] != ["write"]:
        sys.exit(__doc__)
    sys.exit(write() < MINIMUM)
