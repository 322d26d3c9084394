"""The tamper catalogue: submissions that try to earn points without the work, from inside their
own kernel. Each is a 01-heads notebook with two tasks answered wrong (merge_heads, MultiHead) and
the others right, plus one attack. Graded by `grader check` and by `grader autograde`, each must
earn exactly its honest points (all but those of the two wrong tasks), and the checks its attack
fooled in the notebook are flagged.

A right answer that warns and prints as it works is here too: it must keep full marks. And two ways
to break the grader's probe in the kernel, which can only cost the submission its own points.
"""

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from grader import catalogue, sample_class
from grader.autograde import autograde
from grader.course import ROOT
from grader.judge import check_cells
from grader.options import SAMPLE_CLASS, GradingOptions

SECTION = "01-heads"
# The wrong answers: the right shapes, wrong numbers, so that only comparing values can tell.
WRONG = {"merge_heads": "reshape without transposing back",
         "MultiHead": "scaled by sqrt(d_model) instead of sqrt(dh)"}
FULL = sum(points for _, points in check_cells(SECTION).values())  # every task of the section
HONEST = float(FULL - sum(check_cells(SECTION)[f"test_{name}"][1] for name in WRONG))

# Attack name -> (what it does, a cell before the first answer, a line after each answer (with
# {name}), a last cell, whether the notebook's own checks all pass).
ATTACKS = {
    "rebinds-check": (
        "rebinds the notebook's `check` to an object whose every check passes",
        "class _Always:\n    def __getattr__(self, name):\n        return lambda *args, **kwargs: print('Check passed')\n\n"
        "check = _Always()\n", "", "", True),
    "patches-the-checks": (
        "replaces the functions of grader.checks.heads",
        "import grader.checks.heads as _heads\n"
        "for _name in ('split_heads', 'merge_heads', 'key_padding_mask', 'multi_head'):\n"
        "    setattr(_heads, _name, lambda *args, **kwargs: print('Check passed'))\n", "", "", True),
    "patches-torch": (
        "makes torch.allclose and torch.equal always true",
        "torch.allclose = torch.equal = lambda *args, **kwargs: True\n", "", "", True),
    "tensor-subclass": (
        "answers return a tensor subclass for which allclose and equal are always true",
        "class _Agree(torch.Tensor):\n"
        "    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
        "        if func in (torch.allclose, torch.equal):\n"
        "            return True\n"
        "        return super().__torch_function__(func, types, args, kwargs or {})\n\n"
        "def _sly(answer):\n"
        "    if isinstance(answer, type):\n"
        "        class Sly(answer):\n"
        "            def forward(self, *args, **kwargs):\n"
        "                return super().forward(*args, **kwargs).as_subclass(_Agree)\n"
        "        Sly.__name__ = Sly.__qualname__ = answer.__name__\n"
        "        return Sly\n"
        "    return lambda *args, **kwargs: answer(*args, **kwargs).as_subclass(_Agree)\n",
        "{name} = _sly({name})", "", True),
    "input-transformer": (
        "an IPython input transformer turns every later check cell into `pass`",
        "def _skip_checks(lines):\n"
        "    return ['pass\\n'] if any(line.startswith('check.') for line in lines) else lines\n\n"
        "get_ipython().input_transformers_cleanup.append(_skip_checks)\n", "", "", True),
    "writes-the-gradebook": (
        "gives itself 25 points of extra credit in the gradebook of its grading run",
        "", "", "import pathlib, sqlite3\n"
        "for _folder in pathlib.Path.cwd().parents:\n"
        "    if (_folder / 'gradebook.db').is_file():\n"
        "        _db = sqlite3.connect(_folder / 'gradebook.db')\n"
        "        _db.execute('UPDATE grade SET extra_credit = 25')\n"
        "        _db.commit()\n", False),
}
# Attacks that can only cost the submission its own points: the kernel's end of the probe is the
# student's to break. They never earn more than their honest points, and the tasks they break are flagged.
SABOTAGE = {
    "fakes-the-probe": (
        "replaces the grader's probe in the kernel with one that answers every call with None",
        "import grader.probe as _probe\n"
        "_probe._encode = lambda value: None\n"),
    "hides-from-the-probe": (
        "an input transformer turns the grader's probe into `pass`",
        "def _no_probe(lines):\n"
        "    return ['pass\\n'] if any('grader.probe' in line for line in lines) else lines\n\n"
        "get_ipython().input_transformers_cleanup.append(_no_probe)\n"),
}

# A right answer that warns and prints as it works: not an attack, and it keeps every point.
NOISY = ("import warnings\n\n"
         "def _noisy(answer):\n"
         "    def run(*args, **kwargs):\n"
         "        print('working on it')\n"
         "        warnings.warn('this answer warns as it works')\n"
         "        return answer(*args, **kwargs)\n"
         "    return run\n")


def _answer_cells(notebook):
    return [c for c in notebook.cells if c.cell_type == "code"
            and c.metadata.get("nbgrader", {}).get("solution") and not c.metadata["nbgrader"].get("grade")]


def submission(first, after_each, last, wrong=WRONG):
    """The release with the solutions, but the catalogue's `wrong` answers (task -> mistake), and
    the attack's cells and lines."""
    notebook, _ = sample_class.catalogue_variant(SECTION, "wrong", 0, tasks=set())
    answers = _answer_cells(notebook)
    entries = {e.name: e for e in catalogue.load(SECTION)[0] if wrong.get(e.name) == e.mistake}
    assert entries.keys() == wrong.keys(), "a wrong answer of the tamper catalogue left the catalogue"
    for cell in answers:
        if cell.metadata["nbgrader"]["grade_id"] in entries:
            cell.source = entries[cell.metadata["nbgrader"]["grade_id"]].code
    for cell in answers:
        if after_each:
            cell.source += "\n" + after_each.format(name=cell.metadata["nbgrader"]["grade_id"]) + "\n"
    if first:
        attack = nbformat.v4.new_code_cell(first)
        attack.id = "attack-first"
        notebook.cells.insert(notebook.cells.index(answers[0]), attack)
    if last:
        attack = nbformat.v4.new_code_cell(last)
        attack.id = "attack-last"
        notebook.cells.append(attack)
    return notebook


@pytest.fixture(scope="module")
def attacks(tmp_path_factory):
    """One folder per student: each attack, and the noisy right answers."""
    folder = tmp_path_factory.mktemp("attacks")
    for name, (_, first, after_each, last, _) in ATTACKS.items():
        (folder / name).mkdir()
        nbformat.write(submission(first, after_each, last), folder / name / f"{SECTION}.ipynb")
    for name, (_, first) in SABOTAGE.items():
        (folder / name).mkdir()
        nbformat.write(submission(first, "", ""), folder / name / f"{SECTION}.ipynb")
    (folder / "noisy").mkdir()
    nbformat.write(submission(NOISY, "{name} = _noisy({name})", "", wrong={}),
                   folder / "noisy" / f"{SECTION}.ipynb")
    return folder


def _check(path):
    run = subprocess.run([sys.executable, "-m", "grader", "check", "--json", str(path)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.nbgrader
@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_earns_its_honest_points_from_grader_check(attacks, attack):
    result = _check(attacks / attack / f"{SECTION}.ipynb")
    assert result["score"] == HONEST, (ATTACKS[attack][0], result["tasks"])
    scores = {t["grade_id"]: t["score"] for t in result["tasks"]}
    assert scores["test_split_heads"] == 2 and scores["test_key_padding_mask"] == 2
    if ATTACKS[attack][4]:  # the notebook's own checks passed: the two wrong tasks are flagged
        assert len(result["flags"]) == 2 and all("passed in the notebook" in f for f in result["flags"])


@pytest.mark.nbgrader
@pytest.mark.parametrize("attack", SABOTAGE)
def test_breaking_the_probe_costs_only_the_submissions_own_points_and_is_flagged(attacks, attack):
    result = _check(attacks / attack / f"{SECTION}.ipynb")
    assert result["score"] <= HONEST, (SABOTAGE[attack][0], result["tasks"])
    flagged = {f.split()[0] for f in result["flags"]}
    lost = {t["grade_id"] for t in result["tasks"] if t["score"] == 0} - {"test_merge_heads", "test_MultiHead"}
    assert lost and lost <= flagged, (result["tasks"], result["flags"])


BORROWED = ("from grader.references.heads import _attention as _reference\n\n"
            "def _borrowed(self, h, mask=None):\n"
            "    return _reference({'q': self.q, 'k': self.k, 'v': self.v, 'out': self.out}, h, mask, self.heads)\n")


# Found in stop 23: grader/references computes what the checks compare with, and a MultiHead whose
# forward borrowed its attention earned the points. The sandbox now shows kernels recorded results
# in its place (grader.recordings.kernel_references): the import fails, and the check cells still run.
@pytest.mark.nbgrader
def test_an_answer_borrowed_from_the_graders_references_earns_nothing(tmp_path):
    notebook = submission(BORROWED, 'if "{name}" == "MultiHead": MultiHead.forward = _borrowed', "")
    nbformat.write(notebook, tmp_path / f"{SECTION}.ipynb")
    result = _check(tmp_path / f"{SECTION}.ipynb")
    scores = {t["grade_id"]: t["score"] for t in result["tasks"]}
    assert scores["test_MultiHead"] == 0, scores
    assert result["score"] == HONEST, scores  # the checks themselves still ran: no other task lost a point


@pytest.mark.nbgrader
def test_a_right_answer_that_warns_and_prints_keeps_full_marks(attacks):
    result = _check(attacks / "noisy" / f"{SECTION}.ipynb")
    assert result["score"] == result["max_score"] == FULL, result["tasks"]
    assert not result["flags"]


@pytest.mark.nbgrader
def test_the_whole_tamper_catalogue_through_autograde(attacks, tmp_path):
    results = autograde([attacks], tmp_path / "out", SAMPLE_CLASS, workers=2, echo=lambda line: None)
    by_student = {r.student: r for r in results.values()}
    assert set(by_student) == {*ATTACKS, *SABOTAGE, "noisy"}
    for attack, (what, *_, fooled) in ATTACKS.items():
        assert by_student[attack].score == HONEST, (what, by_student[attack].tasks)
    assert by_student["noisy"].score == FULL
    grades = pd.read_csv(tmp_path / "out" / "grades.csv").set_index("student")
    assert (grades.loc[list(ATTACKS), "01-heads:total"] == HONEST).all()
    assert grades.loc["noisy", "01-heads:total"] == FULL
    flagged = [a for a, (*_, fooled) in ATTACKS.items() if fooled]
    assert all("passed in the notebook" in grades.loc[a, "problems"] for a in flagged)
    report = (tmp_path / "out" / "report.html").read_text()
    assert all(f"<li>{a}, 01-heads.ipynb: test_" in report for a in flagged)
    assert all(by_student[a].score <= HONEST for a in SABOTAGE)
    feedback = (tmp_path / "out" / "feedback" / "writes-the-gradebook" / "01-heads" / "01-heads.html").read_text()
    total = FULL + by_student["writes-the-gradebook"].written_max_score
    assert re.findall(r"Score: [\d.]+ / [\d.]+", feedback)[0] == f"Score: {HONEST} / {total}"  # not 104
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{tmp_path / 'out' / 'gradebook.db'}") as book:  # the class's, which Formgrader opens
        graded = book.find_submission_notebook(SECTION, SECTION, "writes-the-gradebook").grades
        assert sum(g.score or 0 for g in graded) == HONEST and not any(g.extra_credit for g in graded)


# --- containment: what a submission does to the machine and to its classmates ----------------
#
# Each of these is the same honest-4-points notebook, plus an attack on what lies outside its own
# kernel (grader.sandbox). Graded in one class beside honest classmates, each must earn exactly its
# 4 points, cost no classmate a point, and leave nothing behind: the course's files unchanged, no
# IPython start-up file, no process alive, no connection made.

LISTENER_PORTS = (47391, 47392)  # loopback listeners of the tests: a sandboxed kernel has no network to reach them
LEFTOVER = "tamper-leftover"  # in the command line of a process an attack leaves running

# A helper put before the first answer: `_steal(name)` is the code of answer cell `name` in any
# notebook the kernel can read (the model answers, a classmate's); the line after each answer
# runs it if found. Reading must fail in the sandbox, so the wrong answers stand. The search walks
# every folder the kernel sees, once per notebook; it follows no symbolic link, as glob's `**`
# does: /usr's links loop, and such a search never ended within a cell's time limit.
_STEAL = (
    "import fnmatch, functools, glob, json, os\n\n"
    "def _found(top, pattern):\n"
    "    return [os.path.join(folder, name) for folder, _, names in os.walk(top) for name in names\n"
    "            if fnmatch.fnmatch(os.path.join(folder, name), pattern)]\n\n"
    "def _answers(path):\n"
    "    try:\n"
    "        cells = json.load(open(path))['cells']\n"
    "    except Exception:\n"
    "        return {}\n"
    "    return {c['metadata'].get('nbgrader', {}).get('grade_id'): ''.join(c['source']) for c in cells\n"
    "            if c['metadata'].get('nbgrader', {}).get('solution')}\n\n"
    "def _steal(name):\n"
    "    for path in _PLACES():\n"
    "        code = _answers(path).get(name, '')\n"
    "        if code and 'NotImplementedError' not in code and 'YOUR CODE' not in code:\n"
    "            return code\n"
    "    return 'pass'\n")
CONTAINMENT = {
    "reads-the-solutions": (
        "runs the model answers from the course's solutions/ folder",
        _STEAL + "_PLACES = functools.cache(lambda: [\n"
        "    os.environ.get('COURSE_ROOT', '') + '/solutions/01-heads/01-heads.ipynb',\n"
        "    *_found('/', '*/solutions/01-heads/01-heads.ipynb')[:3]])\n",
        "exec(_steal('{name}'))", ""),
    "copies-classmates": (
        "finds the autograde command line in /proc and runs a classmate's answers",
        _STEAL + "@functools.cache\n"
        "def _PLACES():\n"
        "    found = []\n"
        "    for cmdline in glob.glob('/proc/*/cmdline'):\n"
        "        try:\n"
        "            words = open(cmdline, 'rb').read().decode(errors='replace').split('\\0')\n"
        "        except OSError:\n"
        "            continue\n"
        "        for word in words:\n"
        "            if os.path.isdir(word):\n"
        "                found += _found(word, '*01-heads*.ipynb')\n"
        "    return found + _found('/tmp', '*01-heads*.ipynb')\n",
        "exec(_steal('{name}'))", ""),
    "rigs-the-next-notebook": (
        "appends always-passing checks to grader/checks/heads.py and writes an IPython start-up file",
        "", "",
        "import os, pathlib\n"
        "_rig = '\\n\\ndef merge_heads(*args, **kwargs):\\n    print(\"Check passed\")\\n'\n"
        "for _path in [pathlib.Path(os.environ.get('COURSE_ROOT', '.')) / 'grader' / 'checks' / 'heads.py',\n"
        "              pathlib.Path.home() / '.ipython' / 'profile_default' / 'startup' / '00-rig.py',\n"
        "              pathlib.Path('/root/.ipython/profile_default/startup/00-rig.py')]:\n"
        "    try:\n"
        "        _path.parent.mkdir(parents=True, exist_ok=True)\n"
        "        with open(_path, 'a') as _file:\n"
        "            _file.write(_rig)\n"
        "    except OSError:\n"
        "        pass\n"),
    "leaves-a-process": (
        "starts a detached process that outlives grading and calls a loopback listener",
        "", "",
        "import subprocess, sys\n"
        "_code = ('import socket, time\\n'\n"
        f"         'while True:\\n    for port in {LISTENER_PORTS}:\\n        try:\\n'\n"
        "         '            socket.create_connection((\"127.0.0.1\", port), timeout=1).send(b\"x\")\\n'\n"
        "         '        except OSError:\\n            pass\\n    time.sleep(0.2)\\n')\n"
        f"subprocess.Popen([sys.executable, '-c', _code, '{LEFTOVER}'], start_new_session=True,\n"
        "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"),
    "rewrites-the-gradebooks": (
        "rewrites the check cells of every gradebook it can find",
        "", "",
        "import glob, os, pathlib, sqlite3\n"
        "_books = glob.glob('/tmp/**/gradebook.db', recursive=True)\n"
        "_books += [str(p / 'gradebook.db') for p in pathlib.Path.cwd().parents if (p / 'gradebook.db').is_file()]\n"
        "for _book in _books:\n"
        "    try:\n"
        "        _db = sqlite3.connect(_book)\n"
        "        _db.execute(\"UPDATE source_cell SET source = 'raise AssertionError(\\\"rigged\\\")'\")\n"
        "        _db.execute('UPDATE grade SET auto_score = 0, extra_credit = 25')\n"
        "        _db.commit()\n"
        "    except Exception:\n"
        "        pass\n"),
    "scripts-the-feedback": (
        "puts a script into its outputs, for the instructor's browser",
        "", "",
        "from IPython.display import HTML, Javascript, display\n"
        "display(HTML('<b>look</b><script>document.title = \"tampered\"</script><img src=x onerror=\"alert(1)\">'))\n"
        "display(Javascript('document.title = \"tampered\"'))\n"),
    "kills-the-server": (
        "signals every process it can see, its parent first, and sends a fake exit on every inherited socket",
        "", "",
        "import os, signal, socket\n"
        "for _fd in range(3, 256):\n"
        "    try:\n"
        "        socket.socket(fileno=os.dup(_fd)).send(b'{\"exit\": 0}')\n"
        "    except OSError:\n"
        "        pass\n"
        "_mine = {os.getpid()}\n"
        "for _pid in [os.getppid(), *(int(p) for p in os.listdir('/proc') if p.isdigit())]:\n"
        "    if _pid not in _mine:\n"
        "        for _number in (signal.SIGKILL, signal.SIGSTOP):\n"
        "            try:\n"
        "                os.kill(_pid, _number)\n"
        "            except OSError:\n"
        "                pass\n"),
}


def _course_files():
    """The SHA-256 of every file of the course a kernel could read. Not the models the solution
    notebooks save as they run (`*.pt`, ignored by git): the replay of section 6 may rewrite one
    meanwhile, with other bits on another CPU."""
    import hashlib
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for part in ("grader", "ticketnet.py", "data", "solutions") for p in sorted((ROOT / part).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and not (part == "solutions" and p.suffix == ".pt")} | \
        {"ticketnet.py": hashlib.sha256((ROOT / "ticketnet.py").read_bytes()).hexdigest()}


def _leftovers():
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if LEFTOVER.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


@pytest.fixture(scope="module")
def containment_class(tmp_path_factory):
    """The containment attacks, and honest classmates: two with every answer right, one with the
    same two wrong answers as the attacks (so the rigged checks would pass them)."""
    folder = tmp_path_factory.mktemp("containment")
    for name, (_, first, after_each, last) in CONTAINMENT.items():
        (folder / name).mkdir()
        nbformat.write(submission(first, after_each, last), folder / name / f"{SECTION}.ipynb")
    for name in ("right-one", "right-two"):
        (folder / name).mkdir()
        nbformat.write(submission("", "", "", wrong={}), folder / name / f"{SECTION}.ipynb")
    (folder / "wrong-too").mkdir()
    nbformat.write(submission("", "", ""), folder / "wrong-too" / f"{SECTION}.ipynb")
    return folder


@pytest.mark.nbgrader
@pytest.mark.parametrize("fresh", [False, True], ids=["warm kernels", "fresh kernels"])
def test_no_submission_reaches_outside_its_sandbox(containment_class, tmp_path, fresh):
    import socket
    startup = Path.home() / ".ipython" / "profile_default" / "startup"
    before, started_before = _course_files(), set(startup.glob("*")) if startup.is_dir() else set()
    listener = socket.create_server(("127.0.0.1", LISTENER_PORTS[fresh]))
    listener.settimeout(0)
    try:
        results = autograde([containment_class], tmp_path / "out", GradingOptions(timeout=30, warm=not fresh),
                            workers=2, echo=lambda line: None)
        by_student = {r.student: r for r in results.values()}
        assert set(by_student) == {*CONTAINMENT, "right-one", "right-two", "wrong-too"}
        for attack, (what, *_) in CONTAINMENT.items():
            got = by_student[attack].score
            # writing on every descriptor may break the kernel's own connection: its own loss only
            assert got == HONEST or (attack == "kills-the-server" and got < HONEST), \
                (what, by_student[attack].error, by_student[attack].tasks)
        assert by_student["right-one"].score == by_student["right-two"].score == FULL, "a classmate lost points"
        assert by_student["wrong-too"].score == HONEST, "a rigged check graded a classmate"
        assert not any(r.flags for s, r in by_student.items() if s in ("right-one", "right-two", "wrong-too"))
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody called
    finally:
        listener.close()
    assert not _leftovers(), "a process of a submission outlived its grading"
    assert _course_files() == before, "a submission changed the course's files"
    assert (set(startup.glob("*")) if startup.is_dir() else set()) == started_before
    page = (tmp_path / "out" / "feedback" / "scripts-the-feedback" / "01-heads" / "01-heads.html").read_text()
    assert "<b>look</b>" in page  # the harmless part of the output stays
    assert not re.search(r"<script[^>]*>[^<]*tampered", page) and not re.search(r"<img[^>]*onerror", page)


def test_the_search_of_the_stealing_attacks_finds_the_answers_where_no_sandbox_stops_it(tmp_path):
    """Outside a sandbox the stealing attacks' search works, so that their failing in it proves
    the sandbox, not a broken search: it finds the model answers' notebook and takes from it the
    code of the tasks the attacks answer wrongly, and it ends in a folder holding a link to itself
    (glob's `**` followed such links until the cell's time limit)."""
    attack = {}
    exec(_STEAL, attack)
    found = attack["_found"](str(ROOT / "solutions"), "*/solutions/01-heads/01-heads.ipynb")
    assert found == [str(ROOT / "solutions" / SECTION / f"{SECTION}.ipynb")]
    attack["_PLACES"] = lambda: found
    for name in WRONG:
        stolen = attack["_steal"](name)
        assert stolen != "pass" and "NotImplementedError" not in stolen, name
    (tmp_path / "inner").mkdir()
    (tmp_path / "inner" / "me").symlink_to(tmp_path)
    (tmp_path / "inner" / "a-01-heads-b.ipynb").write_text("{}")
    assert attack["_found"](str(tmp_path), "*01-heads*.ipynb") == [str(tmp_path / "inner" / "a-01-heads-b.ipynb")]


# --- the judge's channel: what a kernel can aim at ---------------------------------------------
#
# The judge's requests and the kernel's answers are files of a folder in the kernel's socket
# folder (grader.probe.Exchange). A kernel that knows the folder (the request's path is in its
# own call stack) can put links there; none of them may make the judge write or read anything but
# its own files, and the cost is the submission's own check.

from test_judge import Kernel  # noqa: E402 - a kernel of the course's Python and a link to it

# The student's function finds the request it is answering in its call stack and puts `{kind}`
# where the judge's next file goes, pointing at `{target}`.
_AIM = (
    "import os, sys\n"
    "def aimed(x):\n"
    "    frame = sys._getframe()\n"
    "    while 'path' not in frame.f_locals:\n"
    "        frame = frame.f_back\n"
    "    folder, name = os.path.split(frame.f_locals['path'])\n"
    "    following = f'{{int(name.split(\".\")[0]) + 1}}.request'\n"
    "    place = os.path.join(folder, following + ('.answer' if '{kind}' == 'answer' else ''))\n"
    "    os.symlink('{target}', place)\n"
    "    return x\n")


@pytest.fixture(scope="module")
def aimed_kernel(tmp_path_factory):
    kernel = Kernel(tmp_path_factory.mktemp("aimed"))
    yield kernel
    kernel.close()


@pytest.mark.parametrize("kind", ["request", "answer"])
def test_a_link_where_the_judges_next_file_goes_costs_only_that_check(aimed_kernel, tmp_path, kind):
    """On 769cc8c the judge wrote its next request through the link, into any file the grading
    user can write (a worker's gradebook.db: the next two students got 0), and read an answer
    through one. Now it refuses the link, and the file it points at is untouched."""
    import torch
    from grader import probe
    # a file of the grader's to write through the request's link; a folder behind the answer's
    # link, which the kernel's own write cannot go through (as in the sandbox, where it may not
    # write the grader's files), so that only the judge's reading is tried
    target = tmp_path / ("gradebook.db" if kind == "request" else "graded")
    if kind == "request":
        target.write_bytes(b"the grader's own file")
    else:
        target.mkdir()
    assert aimed_kernel.execute(_AIM.format(kind=kind, target=target)) is None
    exchange = probe.Exchange()  # one check's, as the judge makes it
    link = probe.Link(lambda code: aimed_kernel.execute(code, store_history=False), exchange)
    aimed = link.name("aimed")
    assert torch.equal(aimed(torch.ones(2)), torch.ones(2))  # request 2 lays the link for request 3
    with pytest.raises(probe.NotPlainData, match="a file where the judge's request|cannot be opened as a file"):
        aimed(torch.ones(2))
    assert not target.is_symlink()
    assert target.read_bytes() == b"the grader's own file" if kind == "request" else list(target.iterdir()) == []
    assert all(p.is_symlink() for p in exchange.path.iterdir()), "the judge left a file of its own behind"
    exchange.close()  # and removes what the kernel left
    assert not exchange.path.exists()


def test_a_name_that_comes_back_must_be_a_python_name():
    """On 769cc8c a child module named with a new line and free text was taken as it came, and
    that text ended up in whatever file the judge wrote next."""
    from torch import nn
    from grader import probe
    for kind, key in [("children", "x\nmerge_heads = 11 points"), ("params", "weight; drop table"),
                      ("buffers", "a b"), ("attrs", "-1")]:
        description = {"__module__": 1, "class": "torch.nn.modules.module:Module", "training": True,
                       "attrs": {}, "params": {}, "buffers": {}, "children": {}}
        description[kind] = {key: None}
        with pytest.raises(probe.NotPlainData, match="which is not a Python name"):
            probe._load_description(nn.Module(), description, link=None)
    for name in ("Evil\nclass", "a b", "", "a..b"):
        with pytest.raises(probe.NotPlainData, match="not a Python name"):
            probe._stand_in(name)
    for name in ("MultiHead", "_sly.<locals>.<lambda>", "_noisy.<locals>.run"):  # as Python names functions
        assert probe._stand_in(name).__name__ == name
    assert probe._python_name("0", "a child") == "0"  # a ModuleList's first child


# --- recorded results: none of a hidden test where a graded kernel can read them --------------

HIDDEN_KEY = "heads.multi_head(48, 3, (4, 12, 7), 1)"  # the result of a hidden test of MultiHead


def test_the_grading_sandbox_holds_no_hidden_tests_result():
    """Issue 41, finding 2: on 769cc8c the grading sandbox's expected.pt held the recorded result
    of every check, hidden tests included; a notebook that rebuilt each hidden input and returned
    its recorded result scored 7 of 11 with no mask or attention written. Now it holds the visible
    checks' results only, as the student edition does, and the judge runs the hidden tests outside
    the kernel."""
    import torch
    from grader import recordings
    shown = torch.load(recordings.kernel_references() / recordings.EXPECTED_NAME, weights_only=True)
    visible = recordings.record(sections=(SECTION,), hidden=False)
    assert {key for key in shown if key.startswith("heads.")} == set(visible)
    assert HIDDEN_KEY in recordings.record(sections=(SECTION,), hidden=True) and HIDDEN_KEY not in shown


@pytest.mark.nbgrader
def test_an_answer_that_fails_only_hidden_tests_loses_its_task_and_is_not_flagged(tmp_path):
    """The kernel runs the check cells without their hidden tests: a split that works for four
    heads only passes there, fails the judge's hidden tests (MultiHead's too, which splits with
    it), and is no sign of tampering."""
    notebook = submission("", "", "", wrong={})
    for cell in _answer_cells(notebook):
        if cell.metadata["nbgrader"]["grade_id"] == "split_heads":
            cell.source = ("def split_heads(h, heads):\n    b, s, d = h.shape\n"
                           "    return h.view(b, s, 4, d // 4).transpose(1, 2)\n")
    nbformat.write(notebook, tmp_path / f"{SECTION}.ipynb")
    result = _check(tmp_path / f"{SECTION}.ipynb")
    scores = {t["grade_id"]: t["score"] for t in result["tasks"]}
    lost = ("test_split_heads", "test_MultiHead")
    assert result["score"] == FULL - sum(check_cells(SECTION)[name][1] for name in lost), scores
    assert all(scores[name] == 0 for name in lost), scores
    assert result["flags"] == [], result["flags"]


@pytest.mark.nbgrader
def test_a_second_file_for_one_student_and_a_formula_for_a_name_change_no_grade(tmp_path):
    """Issue 41, findings 3 and 4. bob hands in his wrong answers and, beside them, a copy with
    every answer right under a name that maps to him too: neither is graded until the instructor
    keeps one (before, the copy's full marks replaced his grade without a word). A student id that
    is a spreadsheet formula reaches grades.csv as plain text."""
    flat = tmp_path / "class"
    flat.mkdir()
    nbformat.write(submission("", "", ""), flat / f"bob_{SECTION}.ipynb")
    nbformat.write(submission("", "", "", wrong={}), flat / f"bob_{SECTION}~.ipynb")
    formula = "=2+5+cmd|' -C calc'!A0"
    nbformat.write(submission("", "", ""), flat / f"{formula}_{SECTION}.ipynb")
    results = autograde([flat], tmp_path / "out", SAMPLE_CLASS, workers=1, echo=lambda line: None)
    bob = [r for r in results.values() if r.student == "bob"]
    assert len(bob) == 2 and all(r.score == 0 and r.grader_failure for r in bob)
    assert all(f"bob_{SECTION}.ipynb" in r.error and f"bob_{SECTION}~.ipynb" in r.error for r in bob)
    assert not (tmp_path / "out" / "feedback" / "bob").exists()
    with open(tmp_path / "out" / "grades.csv", newline="") as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    assert rows["bob"][f"{SECTION}:total"] == "" and rows["bob"]["problems"].count("remove all but one") == 2
    assert rows["'" + formula][f"{SECTION}:total"] == str(HONEST)  # read back: the apostrophe, then the id
    raw = (tmp_path / "out" / "grades.csv").read_text().splitlines()
    assert any(line.startswith(f"\"'{formula}\",") for line in raw), raw
    assert not any(line.startswith(("=", "\"=")) for line in raw)


@pytest.mark.nbgrader
def test_erasing_the_record_of_calls_to_the_test_set_earns_nothing(tmp_path):
    """Issue 41, finding 6: section 6's choose_and_test that scores every model on the test set,
    then clears the scorer's record of calls to the one it returns. The judge took that record
    back from the kernel and gave the task its 2 points; its own object now answers each call."""
    from grader.catalogue import tiny
    section = "06-tiny-transformer"
    notebook, _ = sample_class.catalogue_variant(section, "wrong", 0, tasks=set())
    cell = next(c for c in _answer_cells(notebook) if c.metadata["nbgrader"]["grade_id"] == "choose_and_test")
    cell.source = tiny.CHOOSE_HEAD + (
        "    scores = {name: score_on_test(name) for name in valid_accuracy}\n"
        "    chosen = max(valid_accuracy, key=valid_accuracy.get)\n"
        "    score_on_test.calls[:] = [chosen]  # the evidence of looking at every test score, erased\n"
        "    return chosen, scores[chosen]\n")
    nbformat.write(notebook, tmp_path / f"{section}.ipynb")
    result = _check(tmp_path / f"{section}.ipynb")
    scores = {t["grade_id"]: t["score"] for t in result["tasks"]}
    assert scores.pop("test_choose_and_test") == 0 and set(scores.values()) == {2.0}, result["tasks"]
    assert result["flags"] == ["test_choose_and_test passed in the notebook but fails the grader's check "
                               "(the submission may interfere with its checks)"]


# A MultiHead whose values are detached (v.weight and v.bias cannot train), and a backward that
# hands every parameter left without a gradient a gradient of zeros, wherever it runs.
ZERO_GRADIENTS = ("import gc\n\n_backward = torch.Tensor.backward\n\n"
                  "def _no_gaps(self, *args, **kwargs):\n    _backward(self, *args, **kwargs)\n"
                  "    for _p in gc.get_objects():\n"
                  "        if isinstance(_p, nn.Parameter) and _p.grad is None:\n"
                  "            _p.grad = torch.zeros_like(_p)\n\n"
                  "torch.Tensor.backward = _no_gaps\n")


@pytest.mark.nbgrader
def test_gradients_made_up_in_the_kernel_earn_nothing(tmp_path):
    """Found in the last stop: expect_learns took from the kernel the list of parameters without a
    gradient. A submission that filled every missing gradient with zeros kept MultiHead's points
    with its values detached. The judge now nudges each parameter and sees the output move where
    the reported gradient says it does not."""
    notebook = submission(ZERO_GRADIENTS, "", "", wrong={})
    for cell in _answer_cells(notebook):
        if cell.metadata["nbgrader"]["grade_id"] == "MultiHead":
            assert "self.v(h)" in cell.source
            cell.source = cell.source.replace("self.v(h)", "self.v(h).detach()")
    nbformat.write(notebook, tmp_path / f"{SECTION}.ipynb")
    result = _check(tmp_path / f"{SECTION}.ipynb")
    scores = {t["grade_id"]: t["score"] for t in result["tasks"]}
    assert scores.pop("test_MultiHead") == 0 and result["score"] == FULL - check_cells(SECTION)["test_MultiHead"][1], \
        result["tasks"]
    assert result["flags"] == []  # the notebook's check nudges the parameters too, and failed alike


# --- the student edition: a recorded result alone passes no check of section 1 ------------------

def test_a_recorded_result_alone_passes_no_check_of_section_1_in_the_student_edition(monkeypatch):
    """Issue 41: the student edition holds the results the visible checks compare with. Masks that
    answer with a recorded one (or its recorded inversion) printed "Check passed". Each check now
    ends on tickets drawn as it runs."""
    from grader import recordings, references
    from grader.checks import heads
    from grader.course import reference_key
    from ticketnet import PAD
    recorded = recordings.record(sections=(SECTION,), hidden=False)
    monkeypatch.setattr(references, "expected", lambda module, name, *settings: recorded[
        reference_key(module, name, settings)])
    padding = recorded["heads.padding_masks((5, 2, 7), None, 0)"]
    causal = recorded["heads.causal_masks((5, 2, 7), None, 0)"]
    with pytest.raises(AssertionError, match="right on the check's first tickets but not on others"):
        heads.key_padding_mask(lambda ids: padding["right"].clone())
    with pytest.raises(AssertionError, match="right on the check's first tickets but not on others"):
        heads.causal_mask(lambda ids: ~causal["inverted"])
    heads.key_padding_mask(lambda ids: (ids == PAD)[:, None, None, :])  # computed: passes on any tickets
