# The two commands of the README, with their set-up:
#   make demo   build the release and autograde the sample class
#   make test   run the whole test suite (what .ci/run calls)
# Both link .venv to the course's environment first, built from requirements.txt when no environment
# of that file lies on this machine.
#   make mutation   mutation testing of ticketnet.py and the grader (setup.cfg [mutmut]) of the
#                   functions changed since MUTATION.md; not part of `make test` (CI checks that
#                   MUTATION.md has a row for every function's current code)

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
BIN := $(VENV)/bin
# The course's environment lives outside the checkout, one per requirements.txt (its digest in the
# folder's name), and .venv links to it: a fresh clone on the same machine links the one it finds
# instead of installing the pins again (two minutes on one core, in every CI run). Building one
# removes the environments of older pins, as the platforms' below.
KEPT_ENVIRONMENTS := $(HOME)/.cache/transformer-block-course
COURSE_VENV := $(KEPT_ENVIRONMENTS)/venv-course-$(shell sha256sum requirements.txt | cut -c1-12)
# pytest-xdist spreads the suite over the cores by module and class: a notebook stays whole on
# one worker, where nbval replays it and compares every output with the stored one. The scopes go
# out in the order tests/conftest.py gives them, the longest first (LONGEST_FIRST): xdist's own
# order, the scopes with the most tests first, started the platforms' one-test classes of minutes
# each last, and one core ran them alone at the end.
PYTEST_ARGS ?= -n auto --dist loadscope --no-loadscope-reorder --nbval-current-env
NOTEBOOKS := $(wildcard solutions/*/*.ipynb)
# Section 7 and the tests read Banking77 from this folder when it exists (CI has a copy beside
# the project); without it, ticketnet.load_banking77() downloads the pinned files.
BANKING77_DIR ?= $(wildcard $(abspath ../shared/data/banking77))
ifneq ($(BANKING77_DIR),)  # an empty value would name no folder instead of asking for the download
export BANKING77_DIR
endif

# PyTorch's CPU build. On Linux, PyPI's torch carries CUDA (several GB), so pip also reads PyTorch's
# CPU wheel index, unless a wheel on this machine already satisfies the pin (pip finds it without
# the network). `make test TORCH_CPU_INDEX=` turns the index off.
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_PIN := $(shell grep '^torch==' requirements.txt)
TORCH_INDEX = $(if $(TORCH_CPU_INDEX),$(shell [ "$$(uname -s)" = Linux ] && ! $(PYTHON) -m pip install --dry-run --quiet --no-index --no-deps --ignore-installed '$(TORCH_PIN)' > /dev/null 2>&1 && echo --extra-index-url $(TORCH_CPU_INDEX)))

# The course under each platform's own versions: one environment per platforms/NAME.in, locked in
# platforms/NAME.txt, on the Python its line `# python: X.Y` names (platforms/README.md says where
# each platform's versions come from). `make test PLATFORMS=` leaves them out, `PLATFORMS=kaggle`
# keeps one.
PLATFORMS ?= $(basename $(notdir $(wildcard platforms/*.in)))
platform_python_version = $(shell sed -n 's/^\# python: *//p' platforms/$(1).in)
# Python X.Y from pyenv or the system; PYTHON_<NAME>=/path/to/python overrides it.
platform_python = $(or $(PYTHON_$(1)),$(firstword $(wildcard $(HOME)/.pyenv/versions/$(2).*/bin/python$(2) /usr/local/bin/python$(2) /usr/bin/python$(2))))
# Kept outside the checkout, one per lock, so that a fresh clone on the same machine reuses it; building
# one removes the platform's environments of older locks (several GB each).
platform_venv = $(KEPT_ENVIRONMENTS)/venv-$(1)-$(shell sha256sum platforms/$(1).txt | cut -c1-12)
PLATFORM_VENVS := $(foreach p,$(PLATFORMS),$(call platform_venv,$(p)))
# What the tests read: NAME=/path/to/python for each platform (tests/test_platforms.py)
PLATFORM_PYTHONS := $(foreach p,$(PLATFORMS),$(p)=$(call platform_venv,$(p))/bin/python)

.PHONY: demo test mutation remeasure lock lock-platform clean bubblewrap chromium FORCE

# System packages, installed with apt where make runs as root; elsewhere one line names the
# package. $(call system_package,PACKAGE,PROGRAM,WHY): nothing to do when PROGRAM is on the PATH.
define system_package
@command -v $(2) > /dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get > /dev/null && \
	{ apt-get install -y -qq $(1) > /dev/null 2>&1 || { apt-get update -qq > /dev/null && apt-get install -y -qq $(1) > /dev/null; }; }; } || \
	{ echo "make: $(3): install the package $(1) (sudo apt install $(1))" >&2; exit 1; }
endef

# bubblewrap (`bwrap`): every grading kernel runs in its sandbox (grader/sandbox.py).
bubblewrap:
	$(call system_package,bubblewrap,bwrap,grading runs every notebook in a sandbox)

# chromium: tests/test_browser.py opens the course in JupyterLab in a real browser.
chromium:
	$(call system_package,chromium,chromium,the browser tests open JupyterLab in chromium)

# Its folder's name holds the digest of requirements.txt, so the file is an order-only prerequisite:
# a fresh clone's newer file times must not rebuild an environment of the same pins.
$(COURSE_VENV)/.installed: | requirements.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "the course needs Python 3.11 or newer, found " + sys.version.split()[0]'
	rm -rf $(KEPT_ENVIRONMENTS)/venv-course-* && mkdir -p $(KEPT_ENVIRONMENTS) && $(PYTHON) -m venv $(COURSE_VENV)
	$(COURSE_VENV)/bin/python -m pip install --quiet --disable-pip-version-check $(TORCH_INDEX) -r requirements.txt
	$(COURSE_VENV)/bin/python -m ipykernel install --sys-prefix --name python3 > /dev/null
	touch $@

# The link is checked on every run (FORCE): pins changed back to those of an environment built
# earlier must link that one again, whatever the file times say.
$(VENV)/.installed: $(COURSE_VENV)/.installed FORCE
	@[ "$$(readlink $(VENV))" = "$(COURSE_VENV)" ] || { rm -rf $(VENV) && ln -s $(COURSE_VENV) $(VENV); }

FORCE:

# A platform's environment. Its folder's name holds the lock's digest, so the lock is an order-only
# prerequisite: a fresh clone's newer file times must not rebuild an environment of the same lock.
# PyPI's torch for Linux carries CUDA, as the platforms' GPU images do; it runs on the CPU. pip's
# site configuration is left out (PIP_CONFIG_FILE=/dev/null): a machine's cap on torch must not
# stop the newest platform, whose whole point is the newest release.
define platform_rules
$(call platform_venv,$(1))/.installed: | platforms/$(1).txt
	@[ -n "$(call platform_python,$(1),$(call platform_python_version,$(1)))" ] || { echo "make: the $(1) platform environment needs Python $(call platform_python_version,$(1)): install it (pyenv install $(call platform_python_version,$(1))) or set PYTHON_$(1)=/path/to/python; make test PLATFORMS= leaves the platforms out" >&2; exit 1; }
	rm -rf $(dir $(call platform_venv,$(1)))venv-$(1)-* && mkdir -p $(dir $(call platform_venv,$(1))) && $(call platform_python,$(1),$(call platform_python_version,$(1))) -m venv $(call platform_venv,$(1))
	PIP_CONFIG_FILE=/dev/null $(call platform_venv,$(1))/bin/python -m pip install --quiet --disable-pip-version-check -r platforms/$(1).txt
	PYDEVD_DISABLE_FILE_VALIDATION=1 $(call platform_venv,$(1))/bin/python -m ipykernel install --sys-prefix --name python3 > /dev/null
	touch $$@
endef
$(foreach p,$(PLATFORMS),$(eval $(call platform_rules,$(p))))

demo: $(VENV)/.installed bubblewrap
	$(BIN)/python -m grader demo

# pytest's exit code 5 means it collected nothing: the suite has gone missing, and that is a failure.
define pytest_stage
$(1) || { status=$$?; [ $$status -ne 5 ] || echo "make test: pytest collected no $(2): the suite has gone missing" >&2; exit $$status; }
endef

# Two stages. First the suite spread over the cores, one thread per process: every notebook is
# replayed as its outputs were stored, and two workers never fight over the cores. Then the tests
# marked `alone`, one at a time on every core: the trained sections replayed as a student's kernel
# runs them, on all threads.
test: $(VENV)/.installed bubblewrap chromium $(addsuffix /.installed,$(PLATFORM_VENVS))
	$(call pytest_stage,PLATFORM_PYTHONS="$(PLATFORM_PYTHONS)" OMP_NUM_THREADS=1 \
		$(BIN)/python -m pytest $(PYTEST_ARGS) -m "not alone" --nbval tests $(NOTEBOOKS),tests)
	$(call pytest_stage,$(BIN)/python -m pytest -p no:cacheprovider -m alone tests,tests marked alone)

# Mutation testing: mutmut mutates ticketnet.py and the grader modules setup.cfg names (only_mutate) one
# change at a time and runs the fast tests that cover each change (setup.cfg [mutmut] says which).
# tests/mutation.py then writes MUTATION.md: per function, the digest of the code measured, the day,
# the mutants killed (a timeout or a crash counts as killed), the survivors, and the mutants listed
# as equivalent in tests/equivalent_mutants.txt; it fails below 85% over all modules. By default only
# the functions whose code changed since MUTATION.md, or whose row still lists survivors, are
# mutated again (`python tests/mutation.py stale` names them): minutes for a change to one
# function, against about an hour per module for all of them (`make mutation MUTANTS='*'`, or
# `MUTANTS='grader.report.*'` for one module).
# tests/test_mutation.py fails CI while a changed function has no current row. Results are kept in
# mutants/ (`mutmut results` lists the survivors, `mutmut show NAME` shows one). Which tests reach
# which function is traced again on every run (mutmut-stats.json, a few minutes): mutmut would trace
# only new tests, and a function that the existing tests reach since the change would have none.
MUTMUT_VERSION := 3.8.1
MUTATION_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
MUTANTS ?= $(shell $(BIN)/python tests/mutation.py stale)
mutation: $(VENV)/.installed
	@$(BIN)/python -c 'import importlib.metadata as m, sys; sys.exit(m.version("mutmut") != "$(MUTMUT_VERSION)")' 2>/dev/null \
		|| $(BIN)/python -m pip install --quiet --disable-pip-version-check mutmut==$(MUTMUT_VERSION)
	@set -f; mutants='$(MUTANTS)'; if [ -z "$$mutants" ]; then echo "MUTATION.md is current for every function: nothing to measure"; exit 0; fi; \
		echo "measuring $$mutants"; \
		rm -f mutants/mutmut-stats.json; $(BIN)/python tests/mutation.py unmutated | xargs -r rm -f; \
		OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(BIN)/mutmut run --max-children $(MUTATION_JOBS) $$mutants && \
		$(BIN)/python tests/mutation.py write $$mutants  # a core per child; set -f: `ticketnet.*` is a pattern, not ticketnet.py

# Re-pin every dependency after editing requirements.in.
lock:
	rm -rf /tmp/course-lock && $(PYTHON) -m venv /tmp/course-lock
	/tmp/course-lock/bin/pip install --quiet -r requirements.in
	{ sed -n '1,2p' requirements.txt; /tmp/course-lock/bin/pip freeze | sed 's/+cpu$$//'; } > requirements.txt.new
	mv requirements.txt.new requirements.txt

# Re-run the benchmarks whose tables measured files that have changed since (bench/tables.py), on a
# quiet machine, after committing the code they measure; then commit BENCHMARKS.md.
remeasure: $(VENV)/.installed
	$(BIN)/python bench/tables.py --run

# Re-pin a platform's environment after editing platforms/NAME.in: make lock-platform PLATFORM=NAME
lock-platform:
	@[ -f platforms/$(PLATFORM).in ] || { echo "make lock-platform: name a platform of platforms/*.in, as PLATFORM=kaggle" >&2; exit 1; }
	rm -rf /tmp/course-lock-$(PLATFORM) && $(call platform_python,$(PLATFORM),$(call platform_python_version,$(PLATFORM))) -m venv /tmp/course-lock-$(PLATFORM)
	PIP_CONFIG_FILE=/dev/null /tmp/course-lock-$(PLATFORM)/bin/pip install --quiet -r platforms/$(PLATFORM).in
	{ printf '# Exact pins of platforms/$(PLATFORM).in, what `make test` installs to run the course under\n# that platform'"'"'s versions. Edit $(PLATFORM).in, then regenerate this file with: make lock-platform PLATFORM=$(PLATFORM)\n'; \
	  /tmp/course-lock-$(PLATFORM)/bin/pip freeze; } > platforms/$(PLATFORM).txt.new
	mv platforms/$(PLATFORM).txt.new platforms/$(PLATFORM).txt

clean:
	rm -rf $(VENV) $(COURSE_VENV) $(PLATFORM_VENVS) .pytest_cache mutants
