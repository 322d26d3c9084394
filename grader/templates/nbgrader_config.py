# nbgrader's settings for this class's course folder, written by `python -m grader autograde`.
# Formgrader (`python -m grader formgrader` with this folder, or `jupyter lab` in it) and plain
# `nbgrader` commands run here read them. They come from the course checkout named below, the one
# `grader autograde` graded with, so that nbgrader here grades as it does.
import sys

COURSE = "{course}"
if COURSE not in sys.path:
    sys.path.insert(0, COURSE)

try:
    from grader.class_folder import configure  # found in COURSE, unless the checkout moved
    configure(get_config(), __file__)  # noqa: F821  (nbgrader defines get_config)
except Exception as error:
    # traitlets logs any other error and goes on with nbgrader's defaults: plain nbgrader would then
    # grade unsandboxed, unrepaired and unjudged. An exit stops it, saying why.
    raise SystemExit(f"nbgrader cannot grade as the course does in {__file__}: {error}") from error
