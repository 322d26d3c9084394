"""The student edition: what students fetch, built from this repository (the instructor's edition).

This repository holds the model answers, hidden tests, mark schemes, catalogues and the sample
class; none of that may reach a student. `python -m grader publish DIR` writes the student edition
into DIR, a git repository ready to push to the address in grader.course.COURSE_REPO, which the
set-up cell of every notebook and the badges point at. It holds the release notebooks, the library
and its data, the checks the notebooks call, the environment files, a student README and a
`python -m grader check` that runs the visible checks. EDITION.json lists every file with its
SHA-256 and the commit it was built from; `publish --check DIR` rebuilds and compares, so a stale
or hand-edited edition is caught. Publishing refuses to write an edition that holds any line of a
model answer, a hidden test or a mark scheme.
"""

import hashlib
import importlib.metadata
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat

from grader.course import EDITION_SOURCE, ROOT, SECTIONS, nbgrader_info, solution_notebook
from grader.recordings import EXPECTED_NAME, merged_results, recorded


# (path in this repository, glob) copied as they are, to the same path in the edition
COPIED = ["ticketnet.py", "environment.yml", "LICENSE", "data/*",
          "grader/__init__.py", "grader/course.py",
          "grader/checks/*.py", "notebooks/*/*.ipynb",
          # section 6 reads the tables these scripts wrote; a student may re-run them
          "bench/tuning.py", "bench/positions.py", "bench/results/*.csv"]
# What a student installs: the libraries the notebooks and `grader check` import, and JupyterLab.
# The edition's requirements.txt pins them and everything they need as requirements.txt does here;
# nothing of grading (nbgrader, Dask, nbval, pytest, playwright) comes along.
STUDENT_NEEDS = ["torch", "numpy", "pandas", "matplotlib", "scikit-learn", "tqdm", "jupyterlab",
                 "ipykernel", "ipython", "nbformat"]
# the edition's own files: (source under grader/edition/, path in the edition)
WRITTEN = [("README.md", "README.md"), ("main.py", "grader/__main__.py"), ("gitignore", ".gitignore"),
           ("references.py", "grader/references/__init__.py")]
EXPECTED = f"grader/references/{EXPECTED_NAME}"
MANIFEST = "EDITION.json"
AUTHOR = ["-c", "user.name=Course publisher", "-c", "user.email=publisher@localhost"]


class Stale(Exception):
    """The release notebooks are not those the solutions make."""


class Leak(Exception):
    """The edition would hold a line of a model answer, a hidden test or a mark scheme."""


class DataMissing(Exception):
    """A section's checks could not be recorded: its data (Banking77) is not on this machine."""


def _bare(text):
    """Code or prose without comments or whitespace, so that a reflowed copy still matches."""
    return re.sub(r"\s+", "", "\n".join(line.split("#")[0] for line in text.splitlines()))


def secret_lines(sections=SECTIONS):
    """{bare line: where it comes from} for every line of the solutions a student must not see:
    model answers, hidden tests, written answers and their mark schemes. Lines of 20 characters or
    fewer (a bracket, `return h`) are left out: they say nothing of the answer. So are lines of the
    library the notebooks import, which students read anyway: section 6's Encoder rebuilds
    ticketnet.TinyTransformer from the student's blocks, with the same children, so that
    from_tiny can load one into the other."""
    library = _bare((ROOT / "ticketnet.py").read_text(encoding="utf-8"))
    secrets = {}
    for section in sections:
        for cell in nbformat.read(solution_notebook(section), as_version=4).cells:
            grading = nbgrader_info(cell)
            blocks = re.findall(r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END \1", cell.source, re.S)
            if cell.cell_type == "markdown" and grading.get("solution"):
                blocks.append(("WRITTEN ANSWER", cell.source))
            for kind, block in blocks:
                for line in block.splitlines():
                    if len(_bare(line)) > 20 and _bare(line) not in library:
                        secrets[_bare(line)] = f"{section} {grading.get('grade_id')} ({kind.lower()}): {line.strip()}"
    return secrets


def _text(path):
    if path.suffix == ".ipynb":
        return "\n".join(cell.source for cell in nbformat.read(path, as_version=4).cells)
    return path.read_text(encoding="utf-8", errors="replace")


def leaks(folder, secrets=None):
    """['file: the secret line it holds', ...] over every text file of the edition in `folder`."""
    secrets = secret_lines() if secrets is None else secrets
    found = []
    for path in sorted(_files(folder)):
        if path.suffix in (".csv", ".pt") or path.name == MANIFEST:
            continue
        text = re.sub(r"\s+", "", _text(folder / path))  # comments kept: a line hidden in one is found
        found += [f"{path}: {where}" for secret, where in secrets.items() if secret in text]
    return found


def _files(folder):
    """The edition's files, relative to `folder`, git's own folder left out."""
    return [p.relative_to(folder) for p in Path(folder).rglob("*")
            if p.is_file() and ".git" not in p.relative_to(folder).parts and "__pycache__" not in p.parts]


def _digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_commit():
    """The commit of this repository the edition is built from, '+changes' if the tree differs."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    commit = git("rev-parse", "HEAD") or "unknown"
    return commit + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def student_requirements():
    """The edition's requirements.txt: STUDENT_NEEDS and what they need in turn (as this
    environment's packages declare it), each pinned as in requirements.txt."""
    from packaging.requirements import Requirement
    def key(name):
        return re.sub(r"[-_.]+", "-", name).lower()
    pinned = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if "==" in line.split("#")[0]:
            name, _, version = line.split("#")[0].strip().partition("==")
            pinned[key(name)] = version
    needed, todo = set(), [key(name) for name in STUDENT_NEEDS]
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        for spec in importlib.metadata.requires(name) or []:
            requirement = Requirement(spec)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(key(requirement.name))
    needed -= {"pip", "setuptools", "wheel"}  # pip freeze pins none of them; pip brings what torch asks
    missing = sorted(needed - pinned.keys())
    if missing:
        raise RuntimeError(f"requirements.txt pins no version of {', '.join(missing)}, which the student's "
                           "install needs: run `make lock`")
    return ((EDITION_SOURCE / "requirements-header.txt").read_text()
            + "".join(f"{name}=={pinned[name]}\n" for name in sorted(needed)))


def build(folder):
    """Write the student edition into the empty or new `folder`; returns its manifest. A release
    out of step with solutions/ is refused: the edition would ship notebooks the recorded results
    were not made for."""
    import torch
    from grader import release
    stale = release.out_of_sync()
    if stale:
        raise Stale("notebooks/ is out of step with solutions/ (run `python -m grader release`): "
                    + ", ".join(map(str, stale)))
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for pattern in COPIED:
        matched = sorted(p for p in ROOT.glob(pattern) if p.is_file())
        if not matched:
            raise FileNotFoundError(f"nothing in {ROOT} matches {pattern!r}, which the edition needs")
        for source in matched:
            target = folder / source.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
    for source, target in WRITTEN:
        (folder / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(EDITION_SOURCE / source, folder / target)
    (folder / "requirements.txt").write_text(student_requirements())
    # the grading kernels' recording (grader.recordings) holds what the edition ships: made once
    # per state of the course, it is shared by every publish and every grading of that state
    state = recorded()
    for section in SECTIONS:
        if not (state / section / EXPECTED_NAME).is_file():
            raise DataMissing(
                "publishing records every check's result, and section 7's checks read Banking77, which is "
                "not on this machine: put its train.csv and test.csv in a folder and set BANKING77_DIR to "
                "that folder (or publish online, and they are downloaded into ~/.cache/ticketnet/banking77). "
                + (state / section / "unavailable.txt").read_text())
    torch.save(merged_results(state), folder / EXPECTED)
    files = {str(path): _digest(folder / path) for path in sorted(_files(folder)) if path.name != MANIFEST}
    manifest = {"built from": source_commit(), "files": files}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def _same_results(path, other):
    """The recorded results of two editions agree: the same keys, and values equal up to the last
    bits of float32 in which two CPUs may differ."""
    import torch
    a, b = (torch.load(p, weights_only=True) for p in (path, other))

    def same(x, y):
        if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor):
            return x.shape == y.shape and x.dtype == y.dtype and torch.allclose(x, y, rtol=1e-5, atol=1e-7, equal_nan=True)
        if isinstance(x, dict) and isinstance(y, dict):
            return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
        if isinstance(x, (list, tuple)) and isinstance(y, (list, tuple)):
            return len(x) == len(y) and all(same(u, v) for u, v in zip(x, y))
        if isinstance(x, float) and isinstance(y, float):
            return abs(x - y) <= 1e-5 * max(abs(x), abs(y)) + 1e-30
        return x == y
    return same(a, b)


def differences(folder):
    """What differs between the edition in `folder` and the one this repository builds now: lines
    'stale: PATH', 'missing: PATH', 'not ours: PATH' (empty when it is up to date)."""
    folder = Path(folder)
    with tempfile.TemporaryDirectory() as fresh:
        files = build(fresh)["files"]
        # what the edition's .gitignore leaves out (a model a notebook saved) is not part of it
        ignored = subprocess.run(["git", "-C", str(folder), "ls-files", "--others", "--ignored", "--exclude-standard",
                                  "-z"], capture_output=True, text=True).stdout.split("\0")
        theirs = {str(p): _digest(folder / p) for p in _files(folder) if p.name != MANIFEST and str(p) not in ignored}
        stale = [p for p in sorted(files) if p in theirs and theirs[p] != files[p]
                 and not (p == EXPECTED and _same_results(Path(fresh) / p, folder / p))]
    return ([f"stale: {p}" for p in stale]
            + [f"missing: {p}" for p in sorted(files) if p not in theirs]
            + [f"not ours: {p}" for p in sorted(theirs) if p not in files])


def publish(folder):
    """Build the edition, refuse it if it leaks, and commit it in `folder` (a git repository, made
    if need be; files of an earlier edition that are no longer part of it are removed). Returns
    (manifest, commit or None when nothing changed)."""
    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()) and not (folder / ".git").is_dir():
        raise FileExistsError(f"{folder} holds files and is not a git repository: publish into a new "
                              "folder, or into an edition published before")
    with tempfile.TemporaryDirectory() as fresh:
        manifest = build(fresh)
        found = leaks(Path(fresh))
        if found:
            raise Leak("the student edition would give answers away:\n  " + "\n  ".join(found))
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / ".git").is_dir():
            subprocess.run(["git", "init", "--quiet", "--initial-branch=main", str(folder)], check=True)
        for old in _files(folder):
            (folder / old).unlink()
        for new in _files(Path(fresh)):
            (folder / new).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(Path(fresh) / new, folder / new)
    for empty in sorted((p for p in folder.rglob("*") if p.is_dir() and ".git" not in p.parts), reverse=True):
        if not any(empty.iterdir()):
            empty.rmdir()
    git = ["git", "-C", str(folder), *AUTHOR]
    subprocess.run([*git, "add", "--all"], check=True)
    if not subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True).stdout.strip():
        return manifest, None
    subprocess.run([*git, "commit", "--quiet", "-m", f"Student edition built from {manifest['built from']}"],
                   check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    return manifest, commit
