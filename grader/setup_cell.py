"""The set-up cell that opens every notebook, written once here.

It finds the course folder (the one holding ticketnet.py) in $COURSE_ROOT (the autograder sets it)
or above the notebook; on Colab or Kaggle, where the notebook arrives alone, it clones the course
and installs only what the platform lacks (never torch). A failed clone names the address and
which of three things failed (nothing at the address, a login asked for, no network), since each
asks the student for something else; on Kaggle, no network means its Internet switch is off. It
then checks the libraries' versions against grader.course.SUPPORTED. Within them it prints no
path or version, so its output replays the same on every machine.

A student's kernel keeps PyTorch's threads (every core), so the trained sections run faster
(bench/notebooks.py measures by how much). Their numbers move only in the last digits, within the
tolerances the replay holds them to (tests/test_replay.py replays them on two threads). nbgrader
sets NBGRADER_EXECUTION when it runs a notebook; each such kernel keeps to one thread, so parallel
grading puts one kernel on each core without oversubscribing them.
"""

from grader.course import COURSE_REPO

TAG = "course-setup"

SOURCE = f'''# Set-up: find the course (ticketnet.py, data/, grader/) or fetch it; one thread when graded.
import importlib.util, os, subprocess, sys
from pathlib import Path

REPO = os.environ.get("COURSE_REPO", "{COURSE_REPO}")
PLATFORM = ("Colab" if "google.colab" in sys.modules else
            "Kaggle" if "kaggle_secrets" in sys.modules else "this computer")
here = Path.cwd().resolve()
places = [Path(os.environ.get("COURSE_ROOT", here)), here, *here.parents]
COURSE = next((p for p in places if (p / "ticketnet.py").is_file()), None)
if COURSE is None:  # the notebook was opened alone: fetch the course beside it
    COURSE = here / "transformer-block-course"
    if not (COURSE / "ticketnet.py").is_file():
        print(f"Fetching the course from {{REPO}} ...")
        fetched = subprocess.run(["git", "clone", "--quiet", "--depth", "1", REPO, str(COURSE)], text=True,
                                 capture_output=True, env={{**os.environ, "GIT_TERMINAL_PROMPT": "0"}})
        if fetched.returncode != 0:  # say which of the three it was: the address, a login, the network
            said = fetched.stderr.lower()
            if any(s in said for s in ("not found", "does not exist", "not appear to be a git repository")):
                why = "nothing is there: the address is wrong, or the course has moved"
            elif any(s in said for s in ("authentication", "could not read username", " 401", " 403")):
                why = "the server asked for a login: the repository is private, or none is at that address"
            elif PLATFORM == "Kaggle":
                why = ("no network: switch on Internet in the editor's right-hand panel (Session options > "
                       "Internet on; it needs a phone-verified account), then run this cell again")
            else:
                why = "no network? Connect, or download the course and open the notebook inside it"
            raise RuntimeError(f"Could not fetch the course from {{REPO}}: {{why}}. (git said: "
                               f"{{(fetched.stderr.strip().splitlines() or ['nothing'])[0]}})")
    if importlib.util.find_spec("torch") is None:
        raise RuntimeError("PyTorch is missing: install it first (the CPU build is enough).")
    missing = [package for module, package in [("pandas", "pandas"), ("matplotlib", "matplotlib"),
               ("sklearn", "scikit-learn"), ("tqdm", "tqdm")] if importlib.util.find_spec(module) is None]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing], check=True)
sys.path.insert(0, str(COURSE))
from grader.course import check_versions
check_versions()  # one line if a library is older, or newer, than the versions the course is tested with

import torch
if os.environ.get("NBGRADER_EXECUTION"):  # graded: one thread per kernel, as many kernels as cores
    torch.set_num_threads(1)
print(f"Course ready on {{PLATFORM}}.")'''
