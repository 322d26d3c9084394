"""The committed mutation report (MUTATION.md, made by `make mutation`) has a current row for every
mutated function, meets its target, and every mutant listed as equivalent still exists in the code
it describes."""

import ast
import re
import shutil

import pytest

import mutation


@pytest.fixture(scope="module")
def rows():
    return mutation.committed_rows()


def test_every_function_was_measured_on_its_current_code(rows):
    stale = mutation.stale(rows)
    assert not stale, (f"MUTATION.md has no row for the current code of {', '.join(stale)}: run `make mutation` "
                       "(it measures just these) and commit MUTATION.md")
    gone = set(rows) - set(mutation.current())
    assert not gone, f"MUTATION.md has rows for functions that no longer exist: {sorted(gone)}; run `make mutation`"


def test_the_score_meets_the_target_and_every_survivor_is_explained(rows):
    for row in rows.values():
        counts = [int(row[c]) for c in ("killed", "equivalent", "survived", "no tests")]
        assert sum(counts) == int(row["mutants"]), row
        assert counts[2:] == [0, 0], f"{row['function']}: survivors neither killed nor listed as equivalent"
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", row["measured"]), row
    assert mutation.score(rows.values()) >= mutation.MINIMUM
    text = mutation.REPORT.read_text()
    assert f"Score: {mutation.score(rows.values()):.1f}%" in text
    survivors = text.split("## Survivors no test kills yet")[1].split("##")[0].strip()
    assert survivors == "None.", f"survivors neither killed nor listed as equivalent:\n{survivors}"


def test_only_a_change_to_a_functions_code_makes_it_stale(tmp_path, monkeypatch, rows):
    for path in mutation.MODULES.values():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(mutation.ROOT / path, tmp_path / path)
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    report = tmp_path / "grader" / "report.py"
    source = report.read_text()
    node = mutation.functions("grader.report")["grader.report.x_mistake_named"]
    lines = source.splitlines(keepends=True)
    body = node.body[-1]  # a comment and a blank line inside the function leave its tree as it was
    lines.insert(body.lineno - 1, " " * body.col_offset + "# a note on the last statement\n\n")
    report.write_text("".join(lines))
    assert mutation.stale(rows) == []
    lines.insert(body.lineno - 1, " " * body.col_offset + "pass\n")
    report.write_text("".join(lines))
    assert mutation.stale(rows) == ["grader.report.x_mistake_named"]


def test_every_equivalent_mutant_names_a_line_of_a_function_that_exists():
    functions = {}
    for module in mutation.MODULES:
        source = (mutation.ROOT / mutation.MODULES[module]).read_text()
        functions |= {key: ast.get_source_segment(source, node) for key, node in mutation.functions(module).items()}
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


def test_a_module_newly_given_to_mutmut_has_its_unmutated_copy_removed(tmp_path, monkeypatch):
    """A file listed in only_mutate after mutmut copied it unchanged would keep that copy (mutmut
    copies again only a file newer than its copy) and never be mutated."""
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    monkeypatch.setattr(mutation, "_mutated_files", lambda: ["grader/old.py", "grader/new.py", "grader/gone.py"])
    (tmp_path / "mutants" / "grader").mkdir(parents=True)
    (tmp_path / "mutants" / "grader" / "old.py").write_text("def x_f__mutmut_1(): pass\n")
    (tmp_path / "mutants" / "grader" / "new.py").write_text("def f(): pass\n")
    assert mutation.unmutated_copies() == [str(tmp_path / "mutants" / "grader" / "new.py")]

