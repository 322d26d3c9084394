# The two commands of the README, with their set-up:
#   make demo   build the release and autograde the sample class
#   make test   run the whole test suite (what .ci/run calls)
# Both create .venv from requirements.txt first, and again only when that file changes.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
# pytest-xdist spreads the suite over the cores by module and class: a notebook stays whole on
# one worker, where nbval replays it and compares every output with the stored one.
PYTEST_ARGS ?= -n auto --dist loadscope --nbval-current-env
NOTEBOOKS := $(wildcard solutions/*/*.ipynb)
# Section 7 and the tests read Banking77 from this folder when it exists (CI has a copy beside
# the project); without it, ticketnet.load_banking77() downloads the pinned files.
BANKING77_DIR ?= $(wildcard $(abspath ../shared/data/banking77))
ifneq ($(BANKING77_DIR),)  # an empty value would name no folder instead of asking for the download
export BANKING77_DIR
endif

.PHONY: demo test lock clean

$(VENV)/.installed: requirements.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "the course needs Python 3.11 or newer, found " + sys.version.split()[0]'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 > /dev/null
	touch $@

demo: $(VENV)/.installed
	$(BIN)/python -m grader demo

test: $(VENV)/.installed
	$(BIN)/python -m pytest $(PYTEST_ARGS) --nbval tests $(NOTEBOOKS)

# Re-pin every dependency after editing requirements.in.
lock:
	rm -rf /tmp/course-lock && $(PYTHON) -m venv /tmp/course-lock
	/tmp/course-lock/bin/pip install --quiet -r requirements.in
	{ sed -n '1,2p' requirements.txt; /tmp/course-lock/bin/pip freeze | sed 's/+cpu$$//'; } > requirements.txt.new
	mv requirements.txt.new requirements.txt

clean:
	rm -rf $(VENV) .pytest_cache
