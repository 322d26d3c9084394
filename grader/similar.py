"""Similar submissions: the pairs of students of a class whose answers share code or text that
neither the release nor the model answer holds, for the instructor to read side by side.

Each student's answers to a section become two documents: the code of their answer cells, in the
release's order, and the text of their written answers. copydetect tokenises the code with
Pygments, every name made alike (renaming a variable changes nothing, comments and blank lines
are dropped), and keeps fingerprints of its k-grams by winnowing, MOSS's method. The release's own
cells and the model answers are boilerplate: their fingerprints are dropped before comparing, so a
student who writes the model answer is paired with no one for it. A pair's share is the part of
one student's remaining answer code (or text) that the other's holds; a pair is listed when
either student's share reaches the threshold.

A class folder keeps, in similar.json, the threshold it was last written with (the instructor's
--similar-threshold) and the comparison of each pair, keyed by the two students' answers: after
late submissions only the pairs with a new or changed notebook are compared again.
"""

import functools
import hashlib
import io
import json
import shutil
from dataclasses import dataclass
from html import escape
from pathlib import Path

import nbformat

from grader.course import nbgrader_info, release_notebook, solution_notebook

# The default share, measured (bench/similar.py, BENCHMARKS.md): in the test class it lists every
# planted copy of a task or more and none of the honest pairs, with room on both sides.
THRESHOLD = 0.8
# Fingerprints: k-grams of NOISE characters of the filtered code (a name is one character, so
# about half a line), winnowed so that any shared run of GUARANTEE characters is found. Chosen on
# the test class (bench/similar.py): longer k-grams lose a copy whose short statements were
# swapped, each k-gram then spanning two of them.
NOISE, GUARANTEE = 10, 14
WINDOW = GUARANTEE - NOISE + 1
# Less than this many characters shared (filtered code, or normalised text) is a coincidence of
# short answers: two students making the same common one-line mistake, not a copy.
LEAST_SHARED = 40
# A student's answers beyond this many characters are not read: a flood pasted into a cell
# must not make the class's comparison take hours.
MOST_READ = 60_000
SETTINGS = {"noise": NOISE, "guarantee": GUARANTEE, "least_shared": LEAST_SHARED, "most_read": MOST_READ}


def _stable_hash(text):
    """A k-gram's fingerprint that is the same in every process. copydetect hashes with Python's
    hash(), which each process seeds anew: winnowing keeps the smallest hash of each window, so
    the same two students would share other fingerprints, and other shares, in every run."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little", signed=True)


def _copydetect():
    import copydetect.utils
    copydetect.utils.hash = _stable_hash  # read by copydetect.utils.hashed_kgrams before the builtin
    import copydetect
    return copydetect


# Between two answers: longer than a k-gram, so that no fingerprint spans two cells, and the same
# around the model answers in the boilerplate, so that an answer written as the model's leaves no
# fingerprint of its own, whatever its neighbours. A number for the code (Pygments keeps numbers
# as they are); the page shows it as a rule.
CODE_BETWEEN, TEXT_BETWEEN = "\n" + "0" * NOISE + "\n", "\n" + "=" * NOISE + "\n"
MARK_SCHEME = "**Mark scheme"  # what follows it in a written answer's solution is for the grader alone
RULE = "\n" + "\u2500" * NOISE + "\n"


@dataclass(frozen=True)
class Answers:
    """One student's answers to one section: their answer cells' code, a `# task` comment line
    before each, and their written answers' text, a `[question]` line before each."""
    code: str
    text: str

    def digest(self):
        return hashlib.sha256(f"{self.code}\0{self.text}".encode()).hexdigest()


def _answers(cells, released):
    """The Answers of `cells` (grade_id -> source), in the order of `released` (grade_id -> the
    release's cell)."""
    code = "".join(f"{CODE_BETWEEN}# {name}\n{cells[name]}" for name, cell in released.items()
                   if cell.cell_type == "code" and name in cells)
    text = "".join(f"{TEXT_BETWEEN}[{name}]\n{_text(cells[name])}" for name, cell in released.items()
                   if cell.cell_type == "markdown" and name in cells)
    return Answers(code[:MOST_READ] + CODE_BETWEEN, text[:MOST_READ] + TEXT_BETWEEN)


def _answer_cells(notebook):
    """grade_id -> cell of the answer cells of a notebook, code and written, in its order."""
    return {nbgrader_info(c)["grade_id"]: c for c in notebook.cells
            if nbgrader_info(c).get("solution") and nbgrader_info(c).get("grade_id")
            and (c.cell_type == "markdown" or not nbgrader_info(c).get("grade"))}


@functools.cache
def _released(section):
    """The answer cells of the section's release (_answer_cells), read once a process."""
    return _answer_cells(nbformat.read(release_notebook(section), as_version=4))


def read_answers(path, section):
    """The Answers in the notebook at `path` of `section`, found by nbgrader's metadata or, where an
    editor dropped it, by the release's cell ids; None when the file is not a notebook."""
    try:
        notebook = nbformat.read(path, as_version=4)
    except Exception:  # not JSON, not a notebook: grading has said why; nothing to compare
        return None
    released = _released(section)
    by_id = {cell.get("id"): name for name, cell in released.items()}
    mine = {}
    for cell in notebook.cells:
        name = _task_of(cell, by_id)
        if name in released and name not in mine and isinstance(cell.get("source"), str):
            mine[name] = cell.source
    return _answers(mine, released)


def _task_of(cell, by_id):
    """The grade_id a submitted cell answers, or None: a student's file may hold any JSON where
    nbgrader's metadata or a cell id should be, and must cost only its own comparison."""
    metadata = cell.get("metadata")
    info = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    name = info.get("grade_id") if isinstance(info, dict) else None
    cell_id = cell.get("id")
    return name if isinstance(name, str) else by_id.get(cell_id) if isinstance(cell_id, str) else None


def boilerplate(section):
    """The section's Answers that no pair is made of: every cell of the release, and each answer
    cell as released and as the solution answers it (mark schemes included), alone."""
    release = nbformat.read(release_notebook(section), as_version=4)
    released = _answer_cells(release)
    model = _answer_cells(nbformat.read(solution_notebook(section), as_version=4))
    sources = [(name, cell.source) for cells in (released, model) for name, cell in cells.items()]
    sources += [(name, cell.source.split(MARK_SCHEME)[0]) for name, cell in model.items() if MARK_SCHEME in cell.source]
    alone = [_answers({name: source}, released) for name, source in sources]
    return Answers("\n".join([*(c.source for c in release.cells if c.cell_type == "code"), *(a.code for a in alone)]),
                   "\n".join([*(_text(c.source) for c in release.cells if c.cell_type == "markdown"),
                              *(a.text for a in alone)]))


def _text(text):
    """Written answers compared as words: case and line breaks made alike."""
    return " ".join(text.lower().split())


class Fingerprints:
    """Each student's code and text fingerprints in one section, its boilerplate (`common`,
    Answers) removed."""

    def __init__(self, common, answers):
        cd = _copydetect()
        code_common = cd.CodeFingerprint("boilerplate.py", NOISE, 1, fp=io.StringIO(common.code), language="python")
        text_common = cd.CodeFingerprint("boilerplate.txt", NOISE, 1, filter=False, fp=io.StringIO(common.text))
        self.code = {student: cd.CodeFingerprint(
            f"{student}.py", NOISE, WINDOW, boilerplate=list(code_common.hashes), fp=io.StringIO(a.code),
            language="python") for student, a in answers.items()}
        self.text = {student: cd.CodeFingerprint(
            f"{student}.txt", NOISE, WINDOW, boilerplate=list(text_common.hashes), filter=False,
            fp=io.StringIO(a.text)) for student, a in answers.items()}

    def candidates(self):
        """The pairs of students who share a fingerprint of code or text, each (a, b) with a < b."""
        pairs = set()
        for prints in (self.code, self.text):
            holders = {}
            for student, fingerprint in prints.items():
                for value in fingerprint.hashes:
                    holders.setdefault(value, []).append(student)
            for students in holders.values():
                students = sorted(students)
                pairs.update((a, b) for i, a in enumerate(students) for b in students[i + 1:])
        return sorted(pairs)


@dataclass
class Pair:
    """Two students of a section and what their answers share: for each, the share of their own
    answer code (and written text) that the other's holds; the characters shared; and where the
    shared runs lie in each one's code and text ([start, end] offsets)."""
    section: str
    a: str
    b: str
    code_shares: tuple
    text_shares: tuple
    code_shared: int
    text_shared: int
    code_runs: tuple = ((), ())
    text_runs: tuple = ((), ())

    @property
    def share(self):
        """The largest share either student has of their answers held by the other."""
        return max(*self.code_shares, *self.text_shares)

    def listed(self, threshold):
        code = max(self.code_shares) >= threshold and self.code_shared >= LEAST_SHARED
        text = max(self.text_shares) >= threshold and self.text_shared >= LEAST_SHARED
        return code or text


def _compare(cd, first, second):
    """(shares, characters shared, runs) of two CodeFingerprints."""
    shared, shares, runs = cd.compare_files(first, second)
    runs = tuple([[int(s), int(e)] for s, e in zip(*r)] if len(r) and len(r[0]) else [] for r in runs)
    return tuple(round(float(s), 4) for s in shares), int(shared), runs


def pairs(section, answers, cache=None, used=None):
    """Every Pair of students of `section` whose answers share a fingerprint, from `answers`
    (student -> Answers). `cache` (a dict, updated) holds earlier comparisons, keyed by the two
    answers and the section's boilerplate; `used` (a dict, updated) gets the entries of these
    pairs. Returns (pairs, how many were compared rather than read from the cache)."""
    cd = _copydetect()
    cache = {} if cache is None else cache
    common = boilerplate(section)
    prints, found, compared = Fingerprints(common, answers), [], 0
    for a, b in prints.candidates():
        key = hashlib.sha256(json.dumps([SETTINGS, common.digest(), answers[a].digest(),
                                         answers[b].digest()]).encode()).hexdigest()
        if key not in cache:
            code = _compare(cd, prints.code[a], prints.code[b])
            text = _compare(cd, prints.text[a], prints.text[b])
            cache[key] = [code, text]
            compared += 1
        if used is not None:
            used[key] = cache[key]
        (code_shares, code_shared, code_runs), (text_shares, text_shared, text_runs) = cache[key]
        found.append(Pair(section, a, b, tuple(code_shares), tuple(text_shares), code_shared, text_shared,
                          tuple(code_runs), tuple(text_runs)))
    return found, compared


# --- the class's pairs: similar.csv and a page per pair ---------------------------------------

def keep_threshold(out, threshold):
    """Keep `threshold` (a share, or None for no change) as the class folder `out`'s."""
    if threshold is None:
        return
    if not 0 < threshold <= 1:
        raise ValueError(f"a similar pair's threshold is a share between 0 and 1, not {threshold}")
    store = Path(out) / "similar.json"
    store.parent.mkdir(parents=True, exist_ok=True)
    store.write_text(json.dumps({**_kept(store), "threshold": threshold}))


def _kept(store):
    """What the class folder's similar.json holds: its threshold and its pairs' comparisons."""
    return json.loads(store.read_text()) if store.is_file() else {}


def write_similar(out, results):
    """Compare the answers of every section's submissions in `results` (grader.autograde's) and
    write a side-by-side page per pair listed at the folder's threshold (keep_threshold; THRESHOLD
    if none) under `out`/similar/. Returns (the threshold, the listed pairs, most similar first,
    each with its page's path relative to `out`)."""
    out = Path(out)
    store = out / "similar.json"
    kept = _kept(store)
    cache, threshold = kept.get("pairs", {}), kept.get("threshold", THRESHOLD)
    shutil.rmtree(out / "similar", ignore_errors=True)  # pages of pairs no longer listed go
    today, listed = {}, []
    for section, answers in sorted(_by_section(results, out).items()):
        found, _ = pairs(section, answers, cache, today)
        chosen = sorted((p for p in found if p.listed(threshold)), key=lambda p: (-p.share, p.a, p.b))
        for number, pair in enumerate(chosen, 1):
            page = Path("similar") / section / f"pair-{number}.html"
            (out / page).parent.mkdir(parents=True, exist_ok=True)
            (out / page).write_text(side_by_side(pair, answers[pair.a], answers[pair.b]))
            listed.append((pair, page.as_posix()))
    store.write_text(json.dumps({**kept, "pairs": today}))  # today's pairs only: it stays small
    return threshold, listed


def table(listed):
    """similar.csv's rows, its header first: a row per listed pair (write_similar's)."""
    return [["section", "student_a", "student_b", "code_share_a", "code_share_b", "code_shared",
             "text_share_a", "text_share_b", "text_shared", "view"],
            *([pair.section, pair.a, pair.b, *pair.code_shares, pair.code_shared, *pair.text_shares,
               pair.text_shared, page] for pair, page in listed)]


def report_section(threshold, listed):
    """The class report's "Similar pairs" part, HTML: per section, the listed pairs, each with its
    shares and a link to its side-by-side page."""
    rows = {}
    for pair, page in listed:
        rows.setdefault(pair.section, []).append(
            f"<tr><td>{escape(pair.a)}</td><td>{escape(pair.b)}</td><td>{pair.code_shares[0]:.0%} / "
            f"{pair.code_shares[1]:.0%}</td><td>{pair.text_shares[0]:.0%} / {pair.text_shares[1]:.0%}</td>"
            f"<td>{max(pair.code_shared, pair.text_shared)}</td><td><a href=\"{escape(page)}\">side by side</a></td></tr>")
    tables = "".join(f"<h3>{escape(section)}</h3><table><tr><th>student A</th><th>student B</th><th>code: A's held by B "
                     f"/ B's by A</th><th>written: the same</th><th>characters shared</th><th></th></tr>{''.join(r)}</table>"
                     for section, r in rows.items())
    chosen = ("the default, which listed every planted copy and no honest pair in the course's test class "
              "(BENCHMARKS.md, bench/similar.py)" if threshold == THRESHOLD else
              f"set with --similar-threshold (the default, {THRESHOLD:.0%}, listed every planted copy and no "
              "honest pair in the course's test class: BENCHMARKS.md, bench/similar.py)")
    return f"""<h2>Similar pairs</h2><p>Pairs of students whose answer cells share code or written text
that is neither the release's nor the model answer's, most similar first. Code is compared with its
names made alike and its comments and blank lines left out. A pair is listed when at least
{threshold:.0%} of one student's own answer code (or written text) is also in the other's, and at least
{LEAST_SHARED} characters of it: {threshold:.0%} is {chosen}. A listed pair is a reason to read the two
side by side, not a verdict. The same list is in similar.csv.</p>{tables or "<p>No pair.</p>"}"""


def _by_section(results, out=None):
    """section -> student -> Answers of every submission placed in a section and not held, read
    from the class folder `out`'s copy (nbgrader's submitted/), which stays when the files handed
    in are moved, else from the file handed in."""
    found = {}
    for result in results.values():
        if result.section and not result.held:
            student, section = result.student, result.section
            kept = Path(out) / "submitted" / student / section / f"{section}.ipynb" if out else None
            answers = read_answers(kept if kept and kept.is_file() else result.notebook, section)
            if answers is not None:
                found.setdefault(section, {})[student] = answers
    return found


def side_by_side(pair, first, second):
    """A page with the two students' answers in two columns, the runs they share marked."""
    columns = []
    for student, answers, code_runs, text_runs, code_share, text_share in (
            (pair.a, first, pair.code_runs[0], pair.text_runs[0], pair.code_shares[0], pair.text_shares[0]),
            (pair.b, second, pair.code_runs[1], pair.text_runs[1], pair.code_shares[1], pair.text_shares[1])):
        columns.append(f"<div><h2>{escape(student)}</h2><p>{code_share:.0%} of this code and {text_share:.0%} of "
                       f"this text are in the other's</p><pre>{_marked(answers.code, code_runs)}</pre>"
                       f"<pre>{_marked(answers.text, text_runs)}</pre></div>")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{escape(pair.a)} and {escape(pair.b)}, {
escape(pair.section)}</title><style>body{{font-family:sans-serif;margin:1em}}main{{display:grid;
grid-template-columns:1fr 1fr;gap:1em}}pre{{white-space:pre-wrap;background:#f6f6f6;padding:.5em}}
mark{{background:#ffd54f}}</style></head><body><h1>{escape(pair.a)} and {escape(pair.b)}: {escape(pair.section)}</h1>
<p>Their answer cells, with the release and the model answer left unmarked. Marked: runs of code
(names made alike) or of written text that both hand in.</p><main>{"".join(columns)}</main></body></html>"""


def _marked(text, runs):
    """`text` escaped for HTML, each [start, end] run of `runs` in <mark>."""
    text = text.replace(CODE_BETWEEN, RULE).replace(TEXT_BETWEEN, RULE)  # as long: the runs stay in place
    parts, at = [], 0
    for start, end in sorted(runs):
        start = max(start, at)
        parts += [escape(text[at:start]), f"<mark>{escape(text[start:end])}</mark>"]
        at = max(at, end)
    return "".join(parts) + escape(text[at:])
