"""The pins are one source of truth: environment.yml installs requirements.txt, which pins
every package of requirements.in exactly, and the running environment is the pinned one."""

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]


def pins(path=ROOT / "requirements.txt"):
    """name -> version of a lock file of exact pins (name==version lines; comments ignored)."""
    found = {}
    for line in path.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line!r} is not an exact pin (name==version)"
            found[name.lower().replace("_", "-")] = version
    return found


def test_environment_yml_installs_requirements_txt_and_nothing_else():
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"^\s+- python=3\.11\s*$", text, re.M)
    pip_lines = re.findall(r"^\s{6}- (.+)$", text, re.M)
    assert pip_lines == ["-r requirements.txt"], pip_lines


def test_every_direct_dependency_is_pinned_with_the_same_version():
    pinned = pins()
    for line in (ROOT / "requirements.in").read_text().splitlines():
        spec = line.split("#")[0].strip()
        if not spec:
            continue
        requirement = Requirement(spec)
        key = requirement.name.lower().replace("_", "-")
        assert key in pinned, f"{requirement.name} is in requirements.in but not pinned in requirements.txt"
        assert requirement.specifier.contains(pinned[key]), \
            f"{requirement.name}: requirements.in asks for {requirement.specifier}, the pin is {pinned[key]}"


def test_the_running_environment_is_the_pinned_one():
    assert sys.version_info >= (3, 11)
    wrong = {}
    for name, version in pins().items():
        installed = metadata.version(name).split("+")[0]  # torch 2.13.0+cpu is torch 2.13.0
        if installed != version:
            wrong[name] = (version, installed)
    assert not wrong, f"installed versions differ from requirements.txt (pinned, installed): {wrong}"


def test_importing_nbformat_does_not_build_the_iri_grammar():
    """requirements.in keeps jsonschema below 4.25, whose rfc3987-syntax costs 2.6 s an import."""
    code = "import sys, nbformat; print('rfc3987_syntax' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_the_parallel_suite_hands_out_the_longest_scopes_first():
    """`make test` keeps the collected order of scopes (xdist would put those with the most tests
    first), and every scope tests/conftest.py names as one of the longest still exists."""
    import importlib

    from conftest import LONGEST_FIRST
    printed = subprocess.run(["make", "-n", "test"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "--dist loadscope --no-loadscope-reorder" in printed
    for scope in LONGEST_FIRST:
        path, _, name = scope.partition("::")
        assert (ROOT / path).exists(), f"LONGEST_FIRST names {path}, which is gone"
        if name:
            assert hasattr(importlib.import_module(Path(path).stem), name), f"LONGEST_FIRST names {scope}, which is gone"
