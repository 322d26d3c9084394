"""The committed mutation report (MUTATION.md, made by `make mutation`) is current and meets its
target, and every mutant listed as equivalent still exists in the code it describes."""

import ast
import re

import pytest

import mutation


@pytest.fixture(scope="module")
def rows():
    return mutation.committed_rows()


def test_every_module_was_measured_on_its_current_source(rows):
    assert set(rows) == set(mutation.MODULES), "MUTATION.md lacks a module: run `make mutation`"
    stale = [module for module, row in rows.items() if row["source sha256"] != mutation.source_sha256(module)]
    assert not stale, (f"MUTATION.md was measured on an older {', '.join(mutation.MODULES[m] for m in stale)}: run "
                       + " and ".join(f"`make mutation MUTANTS='{m}.*'`" for m in stale) + " and commit MUTATION.md")


def test_the_score_meets_the_target_and_every_survivor_is_explained(rows):
    for row in rows.values():
        counts = [int(row[c]) for c in ("killed", "equivalent", "survived", "no tests")]
        assert sum(counts) == int(row["mutants"]), row
        # a row kept from an earlier run has no survivor list below it any more: its counts say it
        assert counts[2:] == [0, 0], f"{row['module']}: survivors neither killed nor listed as equivalent"
    assert mutation.score(rows.values()) >= mutation.MINIMUM
    text = mutation.REPORT.read_text()
    assert f"Score: {mutation.score(rows.values()):.1f}%" in text
    survivors = text.split("## Survivors no test kills yet")[1].split("##")[0].strip()
    assert survivors == "None.", f"survivors neither killed nor listed as equivalent:\n{survivors}"


def _functions(module):
    """mutmut's key of each function and method of a module -> its source lines."""
    source = (mutation.ROOT / mutation.MODULES[module]).read_text()
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            found[f"{module}.x_{node.name}"] = ast.get_source_segment(source, node)
        elif isinstance(node, ast.ClassDef):
            for method in node.body:
                if isinstance(method, ast.FunctionDef):
                    found[f"{module}.xǁ{node.name}ǁ{method.name}"] = ast.get_source_segment(source, method)
    return found


def test_every_equivalent_mutant_names_a_line_of_a_function_that_exists():
    functions = {key: body for module in mutation.MODULES for key, body in _functions(module).items()}
    entries = mutation.equivalents()
    for entry in entries:
        assert entry.function in functions, f"{entry.function}: no such function any more"
        lines = {line.strip() for line in functions[entry.function].splitlines()}
        originals = entry.original.split(" ⏎ ")  # a mutant may change several lines
        assert all(line in lines for line in originals), f"{entry.function} no longer holds `{entry.original}`"
        assert entry.original != entry.mutant and len(entry.reason) > 20, entry
    assert len(set(entries)) == len(entries), "an equivalent mutant is listed twice"


def test_an_equivalent_entry_must_have_its_four_lines(tmp_path):
    (tmp_path / "list.txt").write_text("function: ticketnet.x_tokenize\n- a\n+ b\n")
    with pytest.raises(ValueError, match=r"entry 1: want the four lines"):
        mutation.equivalents(tmp_path / "list.txt")
    (tmp_path / "list.txt").write_text("# a comment\nfunction: f\n- a\n+ b\nreason: why\n\nfunction: g\n- c\n+ d\nreason: because\n")
    assert [e.function for e in mutation.equivalents(tmp_path / "list.txt")] == ["f", "g"]
    assert re.fullmatch(r"[0-9a-f]{16}", mutation.source_sha256("ticketnet"))
