"""The course as people open it: JupyterLab in a real browser (Debian's chromium, driven by
Playwright through `executable_path`, so nothing is downloaded). The tests start JupyterLab
themselves, on loopback with a token, with settings and workspaces of their own.

A student opens a release notebook of the published edition, runs it, reads the first check's
diagnostic, writes the answer, sees `Check passed`, and asks nbgrader's Validate button for its
verdict on the saved notebook. An instructor autogrades two students, opens Formgrader on the
class (`python -m grader formgrader`), grades a written answer beside its mark scheme, and finds
the grade in what `python -m grader export` writes. Each step leaves a screenshot under
out/screenshots/; a missing element fails the test with the page's own text."""

import csv
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import sync_playwright

from grader import publish
from grader.sample_class import CLASS

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "out" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Without the networking switches, chromium keeps reaching for Google's hosts, which this
# machine's closed network refuses; the sandbox switch is needed where the tests run as root.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# JupyterLab's settings for these tests: every cell stays in the page (not only those in view),
# and no news is fetched from the internet.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false"},
}
# The right answer as a student might type it, on one line so that the editor's auto-indent
# has nothing to add.
SPLIT_HEADS = "def split_heads(h, heads): return h.view(h.shape[0], h.shape[1], heads, -1).transpose(1, 2)"


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).is_file():
        pytest.fail("the browser tests need Debian's chromium: install the package chromium "
                    "(sudo apt install chromium); `make test` does it where it runs as root")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@contextmanager
def serving(command, cwd, tmp_path):
    """Run `command` in `cwd`: a command that starts JupyterLab, here on loopback with a token and
    with settings and workspaces of its own. Yields a function: path -> its address, token
    included."""
    state = tmp_path / "jupyter"
    for name, values in LAB_SETTINGS.items():
        (state / "settings" / name).parent.mkdir(parents=True, exist_ok=True)
        (state / "settings" / name).write_text(json.dumps(values))
    port, token = _free_port(), os.urandom(12).hex()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(state / "config"), JUPYTER_RUNTIME_DIR=str(state / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(state / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"))
    env.pop("COURSE_ROOT", None)
    log = tmp_path / "lab.log"
    options = ["--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               *(["--allow-root"] if os.geteuid() == 0 else [])]
    with log.open("w") as written:
        server = subprocess.Popen([*command, *options], cwd=cwd, env=env, stdout=written, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    why = (f"exited with code {server.returncode}" if server.poll() is not None else
                           f"answered nothing at {base} in 120 s")
                    pytest.fail(f"{' '.join(command[1:])} did not start ({why}):\n" + log.read_text()[-3000:])
                time.sleep(0.5)
        yield lambda path: f"{base}/{path}{'&' if '?' in path else '?'}token={token}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


class Screen:
    """A page and the test's name: `see(locator, what)` waits for an element, and fails with the
    page's text (and a screenshot) when it never comes; `shot(step)` saves a screenshot."""

    def __init__(self, page, test):
        self.page, self.test = page, test
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def shot(self, step):
        self.page.screenshot(path=SCREENSHOTS / f"{self.test}-{step}.png", full_page=False)

    def see(self, locator, what, timeout=60):
        try:
            locator.first.wait_for(state="visible", timeout=timeout * 1000)
        except (PlaywrightTimeout, PlaywrightError):
            self.shot("missing")
            text = self.page.locator("body").inner_text()
            pytest.fail(f"{what}: not on the page after {timeout} s. The page reads:\n{text[-4000:]}")
        return locator.first


def cell(page, text):
    """The notebook cell whose input holds `text`."""
    return page.locator(".jp-Notebook .jp-Cell").filter(
        has=page.locator(".jp-InputArea", has_text=text))


def test_a_student_runs_a_release_notebook_writes_the_first_task_and_validates_it(browser, tmp_path):
    home = tmp_path / "home"
    publish.publish(home / "transformer-block-course")  # what `git clone` of the edition gives
    notebook = "transformer-block-course/notebooks/01-heads/01-heads.ipynb"
    with serving([sys.executable, "-m", "jupyter", "lab"], home, tmp_path) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        screen = Screen(page, "student")
        page.goto(url(f"lab/tree/{notebook}?reset"))
        screen.see(page.locator(".jp-Notebook .jp-Cell"), "the notebook's cells", timeout=120)
        screen.see(page.locator("#jp-main-statusbar", has_text="Idle"), "an idle kernel", timeout=120)
        screen.shot("1-opened")

        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
        check = cell(page, "check.split_heads(split_heads)")
        diagnostic = screen.see(check.locator(".jp-OutputArea-output", has_text="not written yet"),
                                "the first check's diagnostic", timeout=300)
        assert "split_heads is not written yet" in diagnostic.inner_text()
        setup = cell(page, "# Set-up: find the course")
        assert "Course ready on this computer." in setup.locator(".jp-OutputArea").inner_text()
        later = cell(page, "split = split_heads(x, heads)")
        assert later.locator(".jp-OutputArea-output").count() == 0, "a cell after the failed check ran"
        check.scroll_into_view_if_needed()
        screen.shot("2-not-written")

        task = cell(page, "def split_heads(h, heads):")
        task.locator(".cm-content").click()
        page.keyboard.press("Control+A")
        page.keyboard.insert_text(SPLIT_HEADS)
        page.keyboard.press("Shift+Enter")  # runs the answer and moves to the check below it
        page.keyboard.press("Shift+Enter")
        screen.see(check.locator(".jp-OutputArea-output", has_text="Check passed"), "Check passed", timeout=120)
        assert check.locator(".jp-OutputArea-output").inner_text().strip() == "Check passed"
        screen.shot("3-check-passed")

        page.keyboard.press("Control+S")
        saved = home / notebook
        deadline = time.monotonic() + 30
        while SPLIT_HEADS not in saved.read_text() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert SPLIT_HEADS in saved.read_text(), "the notebook was not saved with the answer"
        screen.see(page.locator("jp-button.validate-button"), "nbgrader's Validate button").click()
        verdict = screen.see(page.locator(".nbgrader-ErrorDialog, .nbgrader-SuccessDialog"),
                             "nbgrader's verdict", timeout=300)
        screen.shot("4-validated")
        text = verdict.inner_text()
        # The other tasks are still unwritten: their checks fail, the one just written does not.
        assert "nbgrader-ErrorDialog" in verdict.get_attribute("class"), text
        assert "not written yet" in text and "check.merge_heads" in text, text[:3000]
        assert "check.split_heads" not in text, text[:3000]


def test_an_instructor_grades_a_written_answer_in_formgrader_and_export_shows_it(browser, tmp_path):
    submissions, graded = tmp_path / "submissions", tmp_path / "graded"
    for student in ("ada", "ben"):
        (submissions / student).mkdir(parents=True)
        shutil.copy(CLASS / student / "01-heads.ipynb", submissions / student)
    run = subprocess.run([sys.executable, "-m", "grader", "autograde", str(submissions), "--out", str(graded),
                          "--workers", "1"], capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    with Gradebook(f"sqlite:///{graded / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission_notebook("01-heads", "01-heads", "ada").id
    with serving([sys.executable, "-m", "grader", "formgrader", str(graded)], ROOT, tmp_path) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"), lambda route: route.abort())
        screen = Screen(page, "instructor")
        page.goto(url("lab"))  # signs in: Formgrader's pages then use the session's cookie
        screen.see(page.locator(".jp-LabShell"), "JupyterLab", timeout=120)
        page.goto(url("formgrader/gradebook/01-heads/01-heads"))
        screen.see(page.locator("a", has_text="Submission #2"), "the section's two submissions")
        screen.shot("1-submissions")

        page.goto(url(f"formgrader/submissions/{submission}/"))
        score = screen.see(page.locator("input.score#question_mask_shape"), "the written answer's score box")
        scheme = screen.see(page.locator(".text_cell_render", has_text="For the grader: the model answer"),
                            "the mark scheme beside the answer")
        assert "Mark scheme" in scheme.inner_text() and "(b, 1, 1, s)" in scheme.inner_text()
        # Formgrader binds each score box to its saved grade only once the page's every resource has
        # loaded, MathJax from a CDN included, and then fetches the grades; a score typed before that
        # is never sent. Offline, the CDN's request can hang for longer than the wait below (the
        # clean-clone run of 5200b03 lost the score so): it is refused at once, as no network would.
        page.wait_for_function("() => window.formgrader && formgrader.grades && formgrader.grades.loaded",
                               timeout=120_000)
        score.scroll_into_view_if_needed()
        score.fill("1.5")
        score.press("Tab")  # Formgrader saves a score when the box loses focus
        with Gradebook(f"sqlite:///{graded / 'gradebook.db'}") as gradebook:
            deadline = time.monotonic() + 30
            while gradebook.find_grade("question_mask_shape", "01-heads", "01-heads", "ada").manual_score != 1.5:
                assert time.monotonic() < deadline, "Formgrader did not save the score"
                time.sleep(0.5)
                gradebook.db.expire_all()
        screen.shot("2-scored")

    run = subprocess.run([sys.executable, "-m", "grader", "export", str(graded)], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "written answers waiting for a grade: 2" in run.stdout, run.stdout  # ada's other two; ben's as released
    rows = {row["student"]: row for row in csv.DictReader((graded / "grades.csv").open())}
    assert rows["ada"]["01-heads:question_mask_shape"] == "1.5"
    assert rows["ada"]["01-heads:total"] == rows["ada"]["total"] == "12.5"
    assert "01-heads:question_mask_shape" not in rows["ada"]["waiting"]
    assert rows["ben"]["01-heads:question_mask_shape"] == "0.0" and rows["ben"]["waiting"] == ""


def test_an_instructor_reads_a_similar_pair_side_by_side(browser, tmp_path, kept_grading):
    """bench/similar.py's test class, section 2, autograded: the report lists each planted copy
    and no honest pair, and a pair's link opens the two students' answers side by side, the runs
    they share marked."""
    from bench import similar as bench  # not bench/ on sys.path (tests/test_bench.py says why)
    from grader.options import SAMPLE_CLASS
    section, everyone, submissions = "02-positions", tmp_path / "test-class", tmp_path / "submissions"
    bench.test_class(everyone)
    for notebook in everyone.glob(f"*/{section}.ipynb"):
        (submissions / notebook.parent.name).mkdir(parents=True)
        shutil.copy(notebook, submissions / notebook.parent.name)
    graded = tmp_path / "graded"
    kept_grading("similar-class", [submissions], graded, options=SAMPLE_CLASS, workers=2)
    rows = list(csv.DictReader((graded / "similar.csv").open()))
    listed = {(row["student_a"], row["student_b"]) for row in rows}
    assert {tuple(sorted(pair)) for pair in bench.PLANTED} <= listed
    assert all(bench.planted(a, b) for a, b in listed), listed
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.route(re.compile(r"^https?://"), lambda route: route.abort())  # the report is a file: nothing to fetch
    screen = Screen(page, "similar")
    page.goto((graded / "report.html").as_uri())
    screen.see(page.locator("h2", has_text="Similar pairs"), "the report's similar pairs")
    first = rows[0]
    link = page.locator(f'a[href="{first["view"]}"]')
    screen.see(link, "the first pair's side-by-side link").click()
    screen.see(page.locator("h1", has_text=f"{first['student_a']} and {first['student_b']}"), "the pair's page")
    columns = page.locator("main > div")
    assert columns.count() == 2
    for column, student in zip(columns.all(), (first["student_a"], first["student_b"])):
        assert column.locator("h2").inner_text() == student
        assert column.locator("mark").count() > 0, f"no shared run marked for {student}"
    screen.shot("side-by-side")
