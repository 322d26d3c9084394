"""What a grade depends on: a fingerprint per section of everything that grades its notebooks. A
notebook graded under another fingerprint is graded again (grader.autograde), and a Dask worker
whose checkout would grade differently is refused (grader.cluster)."""

import hashlib
import re
from pathlib import Path

from grader.course import ROOT, SECTIONS


def grading_versions(options=(), root=ROOT):
    """section -> a fingerprint of everything that grades it: its solution notebook (check cells,
    hidden tests), the modules of grader/checks/ it imports, the rest of the grader, ticketnet.py,
    the grading `options`, the data the notebooks read (data/, bench/results/) and the versions
    of Python and the libraries. A notebook whose section's fingerprint changed is graded again;
    key None covers notebooks of no known section."""
    import platform
    from importlib import metadata
    root = Path(root)
    checks = root / "grader" / "checks"
    shared = hashlib.sha256(repr(sorted(options)).encode())
    data = [p for folder in ("data", "bench/results") for p in sorted((root / folder).rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts]
    for path in [root / "ticketnet.py", *sorted((root / "grader").rglob("*.py")), *data]:
        if path.parent != checks or path.name == "__init__.py":  # a section's own checks count for it alone
            shared.update(path.relative_to(root).as_posix().encode() + path.read_bytes())
    for name in ("torch", "numpy", "nbgrader", "nbconvert", "nbclient", "ipykernel", "jupyter_client",
                 "pandas", "matplotlib", "scikit-learn"):
        shared.update(f"{name}=={metadata.version(name)}".encode())
    shared.update(f"python=={platform.python_version()}".encode())
    versions = {}
    for section in SECTIONS:
        solution = root / "solutions" / section / f"{section}.ipynb"
        digest = shared.copy()
        for path in [solution, *(checks / f"{m}.py" for m in check_modules(solution, checks))]:
            digest.update(path.read_bytes())
        versions[section] = digest.hexdigest()[:16]
    versions[None] = hashlib.sha256("".join(versions.values()).encode()).hexdigest()[:16]
    return versions


def check_modules(solution, checks):
    """The modules of grader/checks/ that a section's solution imports, and those they import."""
    found, todo = set(), re.findall(r"from grader\.checks import (\w+)", solution.read_text())
    while todo:
        module = todo.pop()
        if module not in found and (checks / f"{module}.py").is_file():
            found.add(module)
            todo += re.findall(r"from grader\.checks\.(\w+) import", (checks / f"{module}.py").read_text())
    return sorted(found)
