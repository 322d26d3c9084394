"""The pins are one source of truth: environment.yml installs requirements.txt, which pins
every package of requirements.in exactly, and the running environment is the pinned one."""

import re
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _pins():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"requirements.txt: {line!r} is not an exact pin (name==version)"
            pins[name.lower().replace("_", "-")] = version
    return pins


def test_environment_yml_installs_requirements_txt_and_nothing_else():
    text = (ROOT / "environment.yml").read_text()
    assert re.search(r"^\s+- python=3\.11\s*$", text, re.M)
    pip_lines = re.findall(r"^\s{6}- (.+)$", text, re.M)
    assert pip_lines == ["-r requirements.txt"], pip_lines


def test_every_direct_dependency_is_pinned_with_the_same_version():
    pins = _pins()
    for line in (ROOT / "requirements.in").read_text().splitlines():
        spec = line.split("#")[0].strip()
        if not spec:
            continue
        name, _, version = spec.partition("==")
        key = name.lower().replace("_", "-")
        assert key in pins, f"{name} is in requirements.in but not pinned in requirements.txt"
        if version:
            assert pins[key] == version, f"{name}: requirements.in says {version}, the pin {pins[key]}"


def test_the_running_environment_is_the_pinned_one():
    assert sys.version_info >= (3, 11)
    wrong = {}
    for name, version in _pins().items():
        installed = metadata.version(name).split("+")[0]  # torch 2.13.0+cpu is torch 2.13.0
        if installed != version:
            wrong[name] = (version, installed)
    assert not wrong, f"installed versions differ from requirements.txt (pinned, installed): {wrong}"
