"""The grader package's layout: its modules import one another without a cycle, counting the
imports inside functions, which hide a cycle from Python but not from a reader, and no module
uses another's private names (the tests may still reach into the module they test). Nor does a
module pass values to another through module globals: none sets another's names, and none keeps
an empty public container for others to fill; what one module hands another is an argument or a
return value."""

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def module_name(path, root):
    """grader/checks/heads.py -> grader.checks.heads; grader/checks/__init__.py -> grader.checks."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def grader_modules(root=ROOT):
    """module name -> file, for every module of grader/ under `root`."""
    return {module_name(path, root): path for path in sorted((root / "grader").rglob("*.py"))}


def imports(path, known):
    """The modules of `known` that the file at `path` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from grader import worker` imports the module grader.worker; `from grader.course
            # import ROOT` imports grader.course
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found |= {name for name in names if name in known}
    return found


def import_graph(root=ROOT):
    paths = grader_modules(root)
    return {name: imports(path, paths) - {name} for name, path in paths.items()}


def a_cycle(graph):
    """One import cycle of `graph` as [a, b, ..., a], or None when there is none."""
    state, trail = {}, []

    def visit(name):  # depth first: a module still open when reached again closes a cycle
        state[name] = "open"
        trail.append(name)
        for other in sorted(graph[name]):
            if state.get(other) == "open":
                return trail[trail.index(other):] + [other]
            if other not in state and (found := visit(other)):
                return found
        state[name] = "done"
        trail.pop()
        return None

    for name in sorted(graph):
        if name not in state and (found := visit(name)):
            return found
    return None


def grader_modules_named(tree, paths):
    """{local name: grader module} of the modules the parsed file `tree` imports as names."""
    modules = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.update({alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names
                            if f"{node.module}.{alias.name}" in paths})
        elif isinstance(node, ast.Import):
            modules.update({alias.asname or alias.name: alias.name for alias in node.names if alias.name in paths})
    return modules


def private_names_across(root=ROOT):
    """Each use, in one module of grader/, of a private name (`_x`) of another: `from grader.m import
    _x`, or `m._x` where m names a grader module; as "user: grader.m._x"."""
    paths = grader_modules(root)
    found = []
    for user, path in paths.items():
        tree = ast.parse(path.read_text(), str(path))
        modules = grader_modules_named(tree, paths)
        found += [f"{user}: {node.module}.{alias.name}" for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom) and node.module in paths and node.level == 0
                  for alias in node.names if alias.name.startswith("_")]
        found += [f"{user}: {modules[node.value.id]}.{node.attr}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and modules.get(node.value.id, user) != user
                  and node.attr.startswith("_") and not node.attr.startswith("__")]
    return found


def test_no_module_of_the_grader_uses_another_ones_private_names():
    assert private_names_across() == []


def test_a_private_name_taken_from_another_module_is_named(tmp_path):
    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "a.py").write_text("_x = 1\n__all__ = []\n")
    (tmp_path / "grader" / "b.py").write_text("from grader.a import _x\nfrom grader import a\nprint(a._x, a.__all__, a.y)\n")
    (tmp_path / "grader" / "c.py").write_text("import grader.a as alias\nprint(alias._x)\n_own = 2\n")
    assert private_names_across(tmp_path) == ["grader.b: grader.a._x", "grader.b: grader.a._x", "grader.c: grader.a._x"]


def module_globals_as_channels(root=ROOT):
    """Each place where a module of grader/ sets a name of another (`m.x = ...`, `m.x += ...`), and
    each public module-level name bound to an empty dict, list or set: "user: what"."""
    paths = grader_modules(root)
    found = []
    for user, path in paths.items():
        tree = ast.parse(path.read_text(), str(path))
        modules = grader_modules_named(tree, paths)
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            found += [f"{user}: sets {modules[t.value.id]}.{t.attr}" for t in targets
                      if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                      and modules.get(t.value.id, user) != user]
        for node in tree.body:
            empty = isinstance(node, ast.Assign) and (
                isinstance(node.value, (ast.Dict, ast.List, ast.Set)) and not ast.unparse(node.value)[1:-1].strip()
                or isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                and node.value.func.id in ("dict", "list", "set") and not node.value.args and not node.value.keywords)
            if empty:
                found += [f"{user}: {t.id} starts empty" for t in node.targets
                          if isinstance(t, ast.Name) and not t.id.startswith("_")]
    return found


def test_no_module_of_the_grader_passes_values_through_module_globals():
    assert module_globals_as_channels() == []


def test_a_module_global_used_as_a_channel_is_named(tmp_path):
    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "a.py").write_text("FILLED = {}\nSEEN = list()\n_own = []\nKNOWN = {1: 2}\n")
    (tmp_path / "grader" / "b.py").write_text("from grader import a\nimport grader.a as alias\n"
                                              "def f():\n    a.FILLED = {}\n    alias.count += 1\n    a.FILLED[1] = 2\n")
    assert module_globals_as_channels(tmp_path) == [
        "grader.a: FILLED starts empty", "grader.a: SEEN starts empty",
        "grader.b: sets grader.a.FILLED", "grader.b: sets grader.a.count"]


def test_the_grader_package_has_no_import_cycle():
    graph = import_graph()
    assert {"grader.autograde", "grader.cluster", "grader.worker", "grader.checks.heads"} <= set(graph)
    cycle = a_cycle(graph)
    assert cycle is None, "an import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("source, cycle", [
    ({"a": "from grader import b\n", "b": "def f():\n    from grader.a import x\n"},
     ["grader.a", "grader.b", "grader.a"]),
    ({"a": "import grader.b\n", "b": "from grader import c\n", "c": "from grader import a\n"},
     ["grader.a", "grader.b", "grader.c", "grader.a"]),
    ({"a": "from grader import b\n", "b": "from grader.c import y\n", "c": "x = 1\n"}, None),
])
def test_a_cycle_is_found_through_imports_inside_functions_and_named(tmp_path, source, cycle):
    (tmp_path / "grader").mkdir()
    for name, text in source.items():
        (tmp_path / "grader" / f"{name}.py").write_text(text)
    assert a_cycle(import_graph(tmp_path)) == cycle


def not_read_modules(root=ROOT):
    """The modules of grader/ that fingerprint.NOT_READ leaves out of a grade's fingerprint."""
    from grader.fingerprint import NOT_READ
    return {name for name, path in grader_modules(root).items()
            if path.relative_to(root).as_posix().startswith(NOT_READ)}


def test_what_grading_reads_imports_nothing_that_the_fingerprint_leaves_out():
    """A change to a module the fingerprint leaves out grades no notebook again, so no module that
    grades may import one, even inside a function. autograde alone may: it hands the notebooks out
    (schedule, cluster), keeps the results (results) and writes the class's tables (export) after
    grading."""
    graph, left_out = import_graph(), not_read_modules()
    assert {"grader.__main__", "grader.report", "grader.schedule", "grader.cluster"} <= left_out
    assert "grader.worker" in graph and "grader.worker" not in left_out
    reads = [f"{name} imports {other}" for name in sorted(set(graph) - left_out - {"grader.autograde"})
             for other in sorted(graph[name] & left_out)]
    assert reads == []


# --- the picture of the layers in the README ----------------------------------------------------

NOT_THE_PACKAGE = ("examples", "edition", "templates")  # the sample class, the edition's sources, nbgrader's config


def package_graph(root=ROOT):
    """The import graph of grader/'s modules and subpackages by their names in the package
    (grader.checks.heads counts as checks), without NOT_THE_PACKAGE."""
    graph = {}
    for name, imported in import_graph(root).items():
        part = name.split(".")[1] if name != "grader" else None
        if part is None or part in NOT_THE_PACKAGE:
            continue
        graph.setdefault(part, set()).update(other.split(".")[1] for other in imported if other != "grader")
    return {name: imported - {name} for name, imported in graph.items()}


def readme_layers(text):
    """The layers the README draws after "down the package's layers", top first: a set of names per
    line (a line that starts with a space goes on with the description above it)."""
    block = text.split("down the package's layers", 1)[1].split("```")[1]
    return [{name.strip() for name in re.split(r"\s{2,}", line, maxsplit=1)[0].split("·")}
            for line in block.splitlines() if line.strip() and not line.startswith(" ")]


def drawn_wrong(layers, graph):
    """What the picture gets wrong: a module missing or drawn twice, or one that imports a module
    drawn above it."""
    place = {name: i for i, names in enumerate(layers) for name in names}
    wrong = [f"{name} is drawn twice" for name in place if sum(name in names for names in layers) > 1]
    wrong += [f"{name} is not drawn" for name in sorted(set(graph) - set(place))]
    wrong += [f"{name} is drawn but is no module" for name in sorted(set(place) - set(graph))]
    return wrong + [f"{name} imports {other}, drawn above it" for name in sorted(graph) if name in place
                    for other in sorted(graph[name]) if place.get(other, len(layers)) < place[name]]


# Drawn in the layers but off a submission's way through `grader autograde`: the check server, the
# course's facts (read by all), running notebooks, the edition and the release, the sample class,
# the notebooks' set-up cell.
OFF_THE_WAY = {"check_server", "course", "execute", "publish", "release", "sample_class", "setup_cell"}


def named_in_the_walk(text):
    """name -> how often the README's "How a notebook is graded" paragraph names it in backticks."""
    walk = text.split("**How a notebook is graded**", 1)[1].split("```", 1)[0]
    return Counter(re.findall(r"`(\w+)`", walk))


def test_the_readme_walks_a_notebook_through_every_module_on_its_way_naming_each_once():
    named = named_in_the_walk((ROOT / "README.md").read_text())
    modules = set(package_graph())
    assert {name: n for name, n in named.items() if name in modules and n != 1} == {}
    assert sorted(modules - OFF_THE_WAY - set(named)) == []


def test_a_walk_that_skips_a_module_or_names_one_twice_is_told():
    text = "**How a notebook is graded**: `worker` grades, then `worker` again, `autograde DIR`.\n```"
    assert named_in_the_walk(text) == Counter({"worker": 2})


def test_the_readme_draws_the_package_s_layers_as_its_imports_run():
    assert drawn_wrong(readme_layers((ROOT / "README.md").read_text()), package_graph()) == []


def test_a_picture_that_does_not_hold_the_imports_is_told():
    graph = {"top": {"low"}, "low": set(), "mid": {"low"}}
    text = "down the package's layers:\n```\nlow · mid    what\n  more of what\ntop  first\nghost  none\n```\n"
    assert readme_layers(text) == [{"low", "mid"}, {"top"}, {"ghost"}]
    assert drawn_wrong(readme_layers(text), graph) == ["ghost is drawn but is no module", "top imports low, drawn above it"]
    assert drawn_wrong([{"top"}, {"mid", "low"}, {"low"}], graph) == ["low is drawn twice"]
    assert drawn_wrong([{"top"}, {"low"}], graph) == ["mid is not drawn"]


# --- short functions -------------------------------------------------------------------------------

LONGEST_FUNCTION = 60  # lines, decorators left out, docstring included


def long_functions(paths, limit=LONGEST_FUNCTION):
    """"file:function (N lines)" for each function or method of `paths` longer than `limit` lines."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > limit:
                found.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{node.name} "
                             f"({node.end_lineno - node.lineno + 1} lines)")
    return found


def test_no_function_of_the_grader_or_of_ticketnet_is_longer_than_60_lines():
    assert long_functions([*sorted((ROOT / "grader").rglob("*.py")), ROOT / "ticketnet.py"]) == []


def test_a_function_over_the_limit_is_named_with_its_length(tmp_path):
    def body(indent):
        return "".join(f"{indent}x{i} = {i}\n" for i in range(59))
    (tmp_path / "m.py").write_text(f"@decorated\ndef fits():\n{body('    ')}\n\nclass C:\n    def over(self):\n"
                                   f"{body('        ')}        pass\n        return 1\n")
    assert long_functions([tmp_path / "m.py"]) == ["m.py:over (62 lines)"]
