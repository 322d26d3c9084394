"""How well grader autograde's similar pairs (grader/similar.py) tell copies from honest work, and
how long they take.

- **The test class.** The sample class (grader/examples/class/), two more honest students whose
  every answer is another of the catalogue's right answers (`hon` and `ora`: the second and third
  right answer of each task, the solution where a task has fewer), and five planted copies:
  - `pia`: cyd's notebooks, byte for byte;
  - `ren`: hon's, every name its answers choose renamed;
  - `sty`: ora's, comments and blank lines changed;
  - `ord`: cyd's code, neighbouring statements swapped where their order does not matter (the
    written answers left as released, so that the code alone must show it);
  - `uma`: eli's half-done notebooks with one task more, copied from hon (the longest of the
    tasks eli left).
  Every pair of the class is compared; a planted pair should be listed, no other. Apart, the
  measure's limit: one task copied into answers otherwise one's own.
- **Scale.** Students of section 1 made up from the catalogue (each task answered by the solution
  or one of its right or wrong entries, drawn at random, and a share of them renamed), compared
  every pair, for 50, 200 and 1,000 students; against the class's grading at 200 students, from
  the committed grading table.

    python bench/similar.py [--write]
"""

import argparse
import ast
import io
import random
import re
import shutil
import sys
import tempfile
import time
import tokenize
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.tables import BENCHMARKS, sections, table, write_section  # noqa: E402
from grader import similar  # noqa: E402
from grader.course import SECTIONS, nbgrader_info  # noqa: E402
from grader.result import Result  # noqa: E402
from grader.sample_class import CLASS, _answer_cells, catalogue_variant  # noqa: E402

MEASURED = ["bench/similar.py", "grader/similar.py", "grader/sample_class.py", "grader/catalogue/*.py",
            "grader/examples/class/*/*.ipynb", "solutions/*/*.ipynb", "notebooks/*/*.ipynb", "requirements.txt"]
# Who copied whom, and how
PLANTED = {("cyd", "pia"): "verbatim", ("hon", "ren"): "names renamed", ("ora", "sty"): "comments and blank lines changed",
           ("cyd", "ord"): "statements reordered", ("hon", "uma"): "one task copied"}
HONEST = {"hon": 1, "ora": 2}  # the k-th right answer of the catalogue
SCALE = (50, 200, 1000)
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)
SCALE_TARGET = 0.10  # of the class's grading time at 200 students (issue 45)


# --- the planted copies ---------------------------------------------------------------------

def renamed(code):
    """`code` with every name it binds (parameters, assignments, loops, its functions and classes
    but those the task names) given another name, its layout kept."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    bound = {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg) and node.arg != "self"}
    bound |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    new = {name: f"{name}_{index}x" for index, name in enumerate(sorted(bound))}
    out, after_dot = [], False
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        text = token.string
        if token.type == tokenize.NAME and not after_dot and text in new:
            token = token._replace(string=new[text])
        out.append(token)
        after_dot = text == "."
    return tokenize.untokenize(out)


def restyled(code):
    """`code` with its comments gone, a comment of its own above each statement and blank lines
    between them."""
    lines = []
    for line in code.splitlines():
        stripped = line.split("#")[0].rstrip() if "#" in line and "'" not in line and '"' not in line else line.rstrip()
        if stripped.strip():
            indent = stripped[:len(stripped) - len(stripped.lstrip())]
            lines += ["", f"{indent}# my step", stripped]
    return "\n".join(lines) + "\n"


def _touched(statement, store):
    """The names and attributes (as written) that `statement` writes (`store`) or reads."""
    wanted = ast.Store if store else ast.Load
    return {ast.unparse(n) for n in ast.walk(statement)
            if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, wanted)}


def _independent(first, second):
    """Whether two neighbouring statements can be swapped: plain assignments or expressions, no
    super() among them, neither writing what the other reads or writes."""
    plain = all(isinstance(s, (ast.Assign, ast.AnnAssign, ast.Expr)) and "super" not in ast.unparse(s)
                for s in (first, second))
    written1, written2 = _touched(first, True), _touched(second, True)
    return plain and not (written1 & (_touched(second, False) | written2)) and not (written2 & _touched(first, False))


def reordered(code):
    """`code` with each pair of neighbouring statements swapped, lines and all, where their order
    does not matter."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    lines, swaps = (code if code.endswith("\n") else code + "\n").splitlines(keepends=True), []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        i = 0
        while isinstance(body, list) and i + 1 < len(body):
            first, second = body[i], body[i + 1]
            if _independent(first, second) and first.end_lineno < second.lineno:
                swaps.append((first.lineno - 1, first.end_lineno, second.lineno - 1, second.end_lineno))
                i += 2
            else:
                i += 1
    for a, b, c, d in sorted(swaps, reverse=True):  # from the end: earlier line numbers stay right
        lines[a:d] = lines[c:d] + lines[b:c] + lines[a:b]
    return "".join(lines)


def _changed(notebook, change, tasks=None):
    for cell in _answer_cells(notebook):
        if tasks is None or nbgrader_info(cell)["grade_id"] in tasks:
            cell.source = change(cell.source)
    return notebook


def test_class(folder):
    """Write the test class under `folder` (a folder per student); returns its students."""
    folder = Path(folder)
    shutil.copytree(CLASS, folder, dirs_exist_ok=True)
    for section in SECTIONS:
        for student, k in HONEST.items():
            notebook, _ = catalogue_variant(section, "right", k)
            _write(folder / student / f"{section}.ipynb", notebook)
        read = {s: nbformat.read(folder / s / f"{section}.ipynb", as_version=4) for s in ("cyd", "hon", "ora", "eli")}
        shutil.copy(folder / "cyd" / f"{section}.ipynb", (folder / "pia").mkdir(exist_ok=True) or folder / "pia")
        _write(folder / "ren" / f"{section}.ipynb", _changed(read["hon"], renamed))
        _write(folder / "sty" / f"{section}.ipynb", _changed(read["ora"], restyled))
        _write(folder / "ord" / f"{section}.ipynb", _unwritten(_changed(read["cyd"], reordered), section))
        read = {s: nbformat.read(folder / s / f"{section}.ipynb", as_version=4) for s in ("hon", "eli")}
        hon = {nbgrader_info(c)["grade_id"]: c.source for c in _answer_cells(read["hon"])}
        eli = _answer_cells(read["eli"])
        left = eli[(len(eli) + 1) // 2:]  # the tasks eli left as released (grader.sample_class)
        longest = max(left, key=lambda c: len(hon[nbgrader_info(c)["grade_id"]])) if left else None
        if longest is not None:
            longest.source = hon[nbgrader_info(longest)["grade_id"]]
        _write(folder / "uma" / f"{section}.ipynb", read["eli"])
    return sorted(p.name for p in folder.iterdir() if p.is_dir())


def _unwritten(notebook, section):
    """`notebook` with its written answers as released: only the code is copied."""
    released = similar._released(section)
    for cell in notebook.cells:
        name = nbgrader_info(cell).get("grade_id")
        if cell.cell_type == "markdown" and name in released:
            cell.source = released[name].source
    return notebook


def _write(path, notebook):
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)


def class_results(folder):
    """The Results (grader.result) that grader.similar.write_similar reads: student, section, notebook."""
    return {f"{p.parent.name}/{p.name}": Result(str(p), p.stem, p.parent.name)
            for p in sorted(Path(folder).glob("*/*.ipynb")) if p.stem in SECTIONS}


def class_pairs(folder):
    """{(section, a, b): Pair} of every pair of the class under `folder` that shares a fingerprint."""
    found = {}
    for section, answers in similar._by_section(class_results(folder)).items():
        for pair in similar.pairs(section, answers)[0]:
            found[(section, pair.a, pair.b)] = pair
    return found


def groups():
    """The students who hold one original's code: the original and its copies."""
    found = {}
    for original, copy in PLANTED:
        found.setdefault(original, {original}).add(copy)
    return list(found.values())


def planted(a, b):
    """Whether students a and b hold the same original's code (an original and its copy, or two
    copies of one original)."""
    return any(a in group and b in group for group in groups())


def sweep(found, thresholds):
    """[{threshold, planted pairs listed, honest pairs listed}]: a planted pair counted in each
    section where the copy holds code of the original's own (its code shared, not only the model
    answer's); an honest pair in each section where it is listed."""
    copied = [(key, p) for key, p in found.items() if planted(key[1], key[2]) and p.code_shared >= similar.LEAST_SHARED]
    honest = [(key, p) for key, p in found.items() if not planted(key[1], key[2])]
    return [{"threshold": f"{t:.2f}", "planted pairs listed": f"{sum(p.listed(t) for _, p in copied)} of {len(copied)}",
             "honest pairs listed": sum(p.listed(t) for _, p in honest)} for t in thresholds]


def accuracy(found, threshold=similar.THRESHOLD):
    """(per planted copy: the sections it is listed in, of those where it shares code; the honest
    pairs listed; the largest share of an honest pair that shares enough to be listed)."""
    rows = []
    for (original, copy), how in PLANTED.items():
        shared = {s: p for (s, a, b), p in found.items() if {a, b} == {original, copy} and p.code_shared}
        least = min((p.share for p in shared.values()), default=None)
        rows.append({"copy": f"{copy} of {original}", "how": how, "sections copied": len(shared),
                     "sections listed": sum(p.listed(threshold) for p in shared.values()),
                     "least share": f"{least:.2f}" if least is not None else ""})
    honest = [(key, p) for key, p in found.items() if not planted(key[1], key[2])]
    enough = [p.share for _, p in honest if max(p.code_shared, p.text_shared) >= similar.LEAST_SHARED]
    return rows, [(key, p) for key, p in honest if p.listed(threshold)], max(enough, default=0.0)


def one_task_among_own_answers(threshold=similar.THRESHOLD):
    """The limit of a share: ora's answers with hon's answer to one task in place of ora's, for
    each task where the two differ. Returns [(section, task, the copier's share)] and how many of
    them are listed."""
    found = []
    for section in SECTIONS:
        released = similar._released(section)
        own, other = ({nbgrader_info(c)["grade_id"]: c.source for c in _answer_cells(catalogue_variant(section, "right", k)[0])}
                      for k in (HONEST["ora"], HONEST["hon"]))
        for task in own:
            if own[task] != other[task]:
                answers = {"hon": similar._answers(other, released), "copier": similar._answers({**own, task: other[task]}, released)}
                pairs = similar.pairs(section, answers)[0]
                found.append((section, task, pairs[0] if pairs else None))
    listed = sum(p is not None and p.listed(threshold) for _, _, p in found)
    return [(s, t, max(p.code_shares) if p else 0.0) for s, t, p in found], listed


# --- scale ----------------------------------------------------------------------------------

def made_up_students(count, section="01-heads", seed=0):
    """student -> Answers of `count` students of `section`, each task's answer drawn from the
    solution and the catalogue's entries, a third of them renamed."""
    from grader import catalogue
    from grader.sample_class import _solutions
    rng = random.Random(seed)
    wrong, right = catalogue.load(section)
    choices = {name: [code, *(e.code for e in wrong + right if e.name == name)]
               for name, code in _solutions(section).items()}
    released = similar._released(section)
    students = {}
    for number in range(count):
        cells = {name: rng.choice(options) for name, options in choices.items()}
        if rng.random() < 1 / 3:
            cells = {name: renamed(code) for name, code in cells.items()}
        students[f"s{number:04d}"] = similar._answers(cells, released)
    return students


def scale(counts=SCALE):
    rows = []
    for count in counts:
        students = made_up_students(count)
        started = time.perf_counter()
        found, compared = similar.pairs("01-heads", students)
        seconds = time.perf_counter() - started
        rows.append({"students": count, "pairs compared": compared, "pairs of all": count * (count - 1) // 2,
                     "seconds": f"{seconds:.2f}"})
    return rows


def grading_seconds_per_notebook():
    """The committed class-grading table's seconds per notebook on 2 workers (bench/grading.py)."""
    section = sections(BENCHMARKS).get("bench/grading.py", "")
    match = re.search(r"^\| grader, 2 workers \|[^|]*\|[^|]*\|[^|]*\|[^|]*\|[^|]*\| ([\d.]+) \|", section, re.M)
    return float(match[1]) if match else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write the tables into BENCHMARKS.md")
    parser.add_argument("--quick", action="store_true", help="time 50 students only")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        students = test_class(folder)
        started = time.perf_counter()
        found = class_pairs(folder)
        class_seconds = time.perf_counter() - started
    rows, false_pairs, most_honest = accuracy(found)
    limit, limit_listed = one_task_among_own_answers()
    growth = scale(SCALE if not args.quick else SCALE[:1])
    per_notebook = grading_seconds_per_notebook()
    body = [f"### Similar pairs: the test class ({len(students)} students, 7 sections, threshold "
            f"{similar.THRESHOLD:.0%})", "",
            table(rows, ["copy", "how", "sections copied", "sections listed", "least share"]), "",
            f"Honest pairs listed: {len(false_pairs)}"
            + "".join(f"; {s} {a}-{b} ({p.share:.2f})" for (s, a, b), p in false_pairs)
            + f". The largest share of an honest pair with at least {similar.LEAST_SHARED} characters in common: "
            f"{most_honest:.2f}. Comparing the whole class: {class_seconds:.1f} s.", "",
            "A section copied is one where the copy holds code of the original's own (not the model answer's); "
            "the least share is the smallest, over those sections, of the larger of the two students' shares.", "",
            "How the threshold was chosen: planted and honest pairs listed at each threshold (a pair counted "
            "once per section).", "",
            table(sweep(found, THRESHOLDS), ["threshold", "planted pairs listed", "honest pairs listed"]), "",
            f"The limit of the measure: a student who copies one task and writes every other answer in words of "
            f"their own. With ora's answers and hon's answer to one task, for each of the {len(limit)} tasks "
            f"where the two differ, the larger share is {min(x for *_, x in limit):.2f} to "
            f"{max(x for *_, x in limit):.2f}, and {limit_listed} of the {len(limit)} are listed. The share "
            "measures how much of a student's own work is another's, so one task among many of one's own "
            "stays below a threshold that spares honest pairs.", "",
            "### Similar pairs: time against class size (section 1, made-up students)", "",
            table(growth, ["students", "pairs compared", "pairs of all", "seconds"])]
    if per_notebook:
        at_200 = next((float(r["seconds"]) for r in growth if r["students"] == 200), 0.0)
        grading = 200 * per_notebook
        body += ["", f"Grading 200 notebooks at the committed {per_notebook} s a notebook (2 workers): {grading:.0f} s; "
                 f"the pairs take {at_200:.2f} s, {at_200 / grading:.1%} of it (target under {SCALE_TARGET:.0%})."]
    text = "\n".join(body)
    print(text)
    if args.write:
        write_section(__file__, text, MEASURED)
    return 0


if __name__ == "__main__":
    sys.exit(main())
