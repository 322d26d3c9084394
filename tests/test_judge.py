"""The judge (grader/judge.py, grader/probe.py): checks that run in the grader on the student's code
in a kernel, with only plain data coming back.

- Every catalogue entry of every section gets from the judge the verdict and the very message
  that its check cell gives in the notebook.
- The boundary: random state, arguments changed in place, modules, exceptions and names cross it
  as they would within one process; what is not plain data never does.
"""

import os
import pickle
import re

import nbformat
import pytest
import torch
from jupyter_client.manager import start_new_kernel
from torch import nn

from grader import catalogue, judge, probe
from grader.course import ROOT, SECTIONS, is_check_cell, nbgrader_info, solution_notebook


class Kernel:
    """A kernel of the course's Python, in `folder`, run as under nbgrader's autograder."""

    def __init__(self, folder):
        env = {**os.environ, "COURSE_ROOT": str(ROOT), "NBGRADER_EXECUTION": "autograde",
               "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
        self.manager, self.client = start_new_kernel(kernel_name="python3", cwd=str(folder), env=env)
        self.exchange = probe.Exchange()
        self.link = probe.Link(lambda code: self.execute(code, store_history=False), self.exchange)

    def execute(self, code, store_history=True):
        """(error name, message) of running `code`, or None."""
        msg_id = self.client.execute(code, store_history=store_history)
        error = None
        while True:
            message = self.client.get_iopub_msg(timeout=300)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "error":
                error = (content["ename"], content["evalue"])
            elif kind == "status" and content["execution_state"] == "idle":
                return error

    def close(self):
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)
        self.exchange.close()


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k = Kernel(tmp_path_factory.mktemp("kernel"))
    assert k.execute("import torch\nfrom torch import nn") is None  # what every test's code uses, whichever runs first
    yield k
    k.close()


# --- the catalogue, judged --------------------------------------------------------------------

# Wrong answers that draw from torch's global generator without a seed. The judge does not take the
# kernel's random state back (issue 41, finding 6), so the numbers in their messages are the judge's
# draws, not the notebook's; the words are the same.
UNSEEDED = {"first_layer_gradient: no seed", "ReZeroStack: the alphas start random"}


def _numbers_blanked(error):
    return error and (error[0], re.sub(r"-?\d[\d.e+-]*", "#", error[1]))


@pytest.mark.parametrize("section", SECTIONS)
def test_the_judge_gives_every_catalogue_entry_the_notebooks_verdict_and_message(section):
    notebook = nbformat.read(solution_notebook(section), as_version=4)
    answers = {nbgrader_info(c)["grade_id"]: c.source for c in notebook.cells
               if c.cell_type == "code" and nbgrader_info(c).get("solution") and not nbgrader_info(c).get("grade")}
    kernel = Kernel(solution_notebook(section).parent)
    try:
        for cell in notebook.cells:
            if cell.cell_type == "code" and not is_check_cell(cell):
                assert kernel.execute(cell.source) is None, cell.source[:200]
        wrong, right = catalogue.load(section)
        checks = {name.lower(): name for name in judge.check_cells(section)}
        differ = []
        for entry in [*wrong, *right]:
            grade_id = checks[f"test_{entry.name}".lower()]
            kernel.execute(entry.code)
            in_notebook = kernel.execute(judge.check_cells(section)[grade_id][0])
            verdict = judge.judge(section, grade_id, kernel.link)
            kernel.execute(answers[entry.name])
            what = f"{entry.name}: {getattr(entry, 'mistake', None) or entry.variant}"
            if isinstance(entry, catalogue.Wrong):
                assert verdict["error"] is not None, f"the judge accepts a wrong answer, {what}"
                missing = [w for w in entry.expect if w.lower() not in verdict["error"][1].lower()]
                assert not missing, f"{what}: the judge's message lacks {missing}: {verdict['error']}"
            else:
                assert verdict["passed"], f"the judge refuses a right answer, {what}: {verdict['error']}"
            if what in UNSEEDED and verdict["error"] != in_notebook:
                assert _numbers_blanked(verdict["error"]) == _numbers_blanked(in_notebook), what
            elif verdict["error"] != in_notebook:
                differ.append(f"{what}\n  notebook: {in_notebook}\n  judge:    {verdict['error']}")
        assert not differ, "\n".join(differ)
    finally:
        kernel.close()


# --- the boundary -----------------------------------------------------------------------------

def _define(kernel, code):
    assert kernel.execute(code) is None


def test_the_students_code_draws_from_the_judges_random_state_and_cannot_set_it(kernel):
    """Issue 41, finding 6: the judge took torch's random state back from the kernel after each
    call, so code that ends with torch.manual_seed(k) chose every number the check drew next. The
    kernel still draws from the judge's state; the judge's own stream goes on from its own,
    whatever the student's code did to the kernel's."""
    _define(kernel, "import torch\ndef noise(n):\n    return torch.rand(n)\n"
                    "def sly(n):\n    out = torch.rand(n)\n    torch.manual_seed(0)\n    return out")
    def run(name):
        torch.manual_seed(5)
        remote = kernel.link.name(name)
        return remote(3), remote(3), torch.rand(2)
    torch.manual_seed(5)
    here = torch.rand(3)
    first, second, after = run("noise")
    assert torch.equal(first, here)  # the student's code drew from the judge's seed
    assert not torch.equal(first, second)  # and a second call drew other numbers
    assert all(torch.equal(a, b) for a, b in zip((first, second, after), run("noise")))  # deterministic
    sly_first, sly_second, sly_after = run("sly")
    assert torch.equal(sly_first, first) and torch.equal(sly_after, after)
    torch.manual_seed(0)
    assert not torch.equal(sly_after, torch.rand(2))


def test_what_the_students_code_does_to_its_arguments_comes_back(kernel):
    _define(kernel, "import torch\n\ndef meddle(x, g, d, l):\n    x.add_(1); g.manual_seed(7); d['new'] = 1; "
                    "l.append(2)\n    return None")
    x, g, d, lst = torch.zeros(3), torch.Generator().manual_seed(1), {"old": 0}, [1]
    kept = g.get_state()
    kernel.link.name("meddle")(x, g, d, lst)
    assert torch.equal(x, torch.ones(3)) and d == {"old": 0, "new": 1} and lst == [1, 2]
    assert torch.equal(g.get_state(), kept)  # a generator's state is not the student's to set


def test_weights_a_result_shares_with_an_argument_are_named_by_the_kernel_where_the_memory_is(kernel):
    """Issue 44, 'a copy never told apart from an alias': the judge rebuilds a returned layer from
    its numbers, so a Parameter the student's code handed over instead of copying arrives as a copy.
    The kernel, where both tensors are, names the result's weights that share the source's memory
    (views included); a copy shares none. What else it sends back in that place is refused."""
    _define(kernel, """import torch
from torch import nn

def copied(source):
    layer = nn.Linear(3, 2)
    layer.load_state_dict(source.state_dict())
    return layer

def handed_over(source):
    layer = nn.Linear(3, 2)
    layer.weight = source.weight
    layer.bias.data = source.bias.data[:2]
    return layer""")
    source = nn.Linear(3, 2)
    layer, shared = kernel.link.name("copied").with_aliases(0, source)
    assert shared == [] and torch.equal(layer.weight, source.weight)
    layer, shared = kernel.link.name("handed_over").with_aliases(0, source)
    assert shared == ["weight", "bias"] and isinstance(layer, nn.Linear)
    _define(kernel, "import grader.checks\nhonest = grader.checks.with_aliases\n"
                    "grader.checks.with_aliases = lambda function, source, *args: "
                    "(function(*args), ['weight\\nGRADE: 100'])")
    try:
        with pytest.raises(probe.NotPlainData, match="not a Python name"):
            kernel.link.name("copied").with_aliases(0, source)
        _define(kernel, "grader.checks.with_aliases = lambda function, source, *args: function(*args)")
        with pytest.raises(probe.NotPlainData, match="not an output and a list of weights"):
            kernel.link.name("copied").with_aliases(0, source)
    finally:
        _define(kernel, "grader.checks.with_aliases = honest")


def test_a_counted_stand_in_is_answered_and_counted_by_the_judge_alone(kernel):
    """Issue 41, finding 6: section 6's scorer on the test set went to the kernel as a copy, whose
    list of calls came back and replaced the judge's, so the student's code could erase its
    looking at every test score. Now the kernel gets a line to the judge's own object."""
    from grader.checks.tiny import _Test
    _define(kernel, "def peek(score_on_test, names):\n    scores = [score_on_test(n) for n in names]\n"
                    "    for erase in ('calls', 'models'):\n        try:\n            getattr(score_on_test, erase).clear()\n"
                    "        except AttributeError as error:\n            scores.append(str(error))\n"
                    "    try:\n        score_on_test('nope')\n    except KeyError as error:\n        scores.append(error.args[0])\n"
                    "    return scores")
    scorer = _Test({"a": (0.9, 0.81), "b": (0.8, 0.77)})
    scores = kernel.link.name("peek")(scorer, ["a", "b", "a"])
    assert scores == [0.81, 0.77, 0.81, "'CallLine' object has no attribute 'calls'",
                      "'CallLine' object has no attribute 'models'", "no model named 'nope'; the models are ['a', 'b']"]
    assert scorer.calls == ["a", "b", "a", "nope"] and scorer.models == {"a": (0.9, 0.81), "b": (0.8, 0.77)}
    assert os.listdir(kernel.exchange.fd) == []  # the line's socket went with the call


def test_a_call_on_the_line_that_cannot_be_read_is_refused_and_not_counted():
    import json
    import socket
    from grader.checks.tiny import _Test
    scorer = _Test({"a": (0.9, 0.81)})
    with probe.Exchange() as exchange:
        line = probe._Answering(exchange, "1.calls", scorer)
        try:
            answers = []
            for sent in (b"not json\n", b'[{"a": 1}]\n', b'["a"]', b'["a"]\n'):
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                    client.connect(str(exchange.path / "1.calls"))
                    client.sendall(sent)
                    client.shutdown(socket.SHUT_WR)
                    answers.append(json.loads(client.makefile("rb").readline()))
        finally:
            line.close()
        assert [a.get("error") for a in answers] == ["ValueError", "ValueError", "ValueError", None]
        assert answers[-1] == {"value": 0.81} and scorer.calls == ["a"]
        assert os.listdir(exchange.fd) == []
        (exchange.path / "2.calls").write_text("the kernel's, where the next line goes")
        with pytest.raises(probe.NotPlainData, match="where the judge's line 2.calls goes"):
            probe._Answering(exchange, "2.calls", scorer)


def test_a_students_module_is_stood_in_for_with_pytorchs_layers_rebuilt_in_the_judge(kernel):
    _define(kernel, "from torch import nn\nclass Twice(nn.Module):\n    def __init__(self, d):\n"
                    "        super().__init__(); self.inner = nn.Linear(d, d); self.d = d\n"
                    "    def forward(self, x):\n        return 2 * self.inner(x)")
    module = kernel.link.name("Twice")(4)
    assert type(module).__name__ == "Twice" and isinstance(module, nn.Module) and module.d == 4
    assert type(module.inner) is nn.Linear and module.inner.in_features == 4
    x = torch.randn(2, 4)
    assert torch.allclose(module(x), 2 * module.inner(x))
    with torch.no_grad():  # the judge's weights are the ones the kernel's forward uses
        module.inner.weight.zero_()
        module.inner.bias.fill_(1.5)
    assert torch.equal(module(x), torch.full((2, 4), 3.0))
    assert sum(p.numel() for p in module.parameters()) == 20


def test_what_a_forward_does_to_the_modules_state_comes_back_in_place(kernel):
    _define(kernel, "class Normed(nn.Module):\n    def __init__(self, d):\n"
                    "        super().__init__(); self.norm = nn.BatchNorm1d(d)\n"
                    "    def forward(self, x):\n        return self.norm(x)")
    module = kernel.link.name("Normed")(3)
    running = module.norm.running_mean  # a check holding a buffer sees it change, as in one process
    x = torch.randn(8, 3) + 5
    module(x)
    assert running is module.norm.running_mean and torch.allclose(running, 0.1 * x.mean(0))
    module.eval()
    assert torch.allclose(module(x), torch.nn.functional.batch_norm(
        x, running, module.norm.running_var, module.norm.weight, module.norm.bias))


def test_the_kernel_gets_the_judges_weights_only_when_they_changed(kernel):
    _define(kernel, "class One(nn.Module):\n    def __init__(self):\n"
                    "        super().__init__(); self.w = nn.Parameter(torch.ones(2))\n"
                    "    def forward(self, x):\n        return x * self.w")
    module = kernel.link.name("One")()
    assert module._state()["weights"] is None  # the kernel built them: nothing to send
    with torch.no_grad():
        module.w.mul_(3)
    assert torch.equal(module(torch.ones(2)), torch.full((2,), 3.0))  # sent along with the call
    assert module._state()["weights"] is None  # and not again
    assert list(kernel.exchange.path.iterdir()) == []  # every request and answer removed


def test_the_students_exceptions_keep_their_type_and_message(kernel):
    _define(kernel, "class Mine(ValueError):\n    pass\ndef fails(kind):\n"
                    "    raise {'value': ValueError('bad d'), 'mine': Mine('own'), 'key': KeyError('k')}[kind]")
    fails = kernel.link.name("fails")
    with pytest.raises(ValueError, match="bad d"):
        fails("value")
    with pytest.raises(ValueError, match="own") as raised:
        fails("mine")
    assert type(raised.value).__name__ == "Mine"
    with pytest.raises(KeyError) as raised:
        fails("key")
    assert str(raised.value) == "'k'"
    with pytest.raises(NameError, match="'nowhere' is not defined"):
        kernel.link.name("nowhere")


def test_a_tensor_subclass_comes_back_as_its_numbers_only(kernel):
    _define(kernel, "class Liar(torch.Tensor):\n    @classmethod\n"
                    "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
                    "        return True if func in (torch.equal, torch.allclose) else "
                    "super().__torch_function__(func, types, args, kwargs or {})\n"
                    "def sly():\n    return torch.arange(3.0).as_subclass(Liar)")
    value = kernel.link.name("sly")()
    assert type(value) is torch.Tensor and torch.equal(value, torch.arange(3.0))
    assert not torch.equal(value, torch.zeros(3))


def test_what_the_students_code_prints_or_warns_reaches_the_judges_output(kernel, capsys):
    _define(kernel, "import warnings\ndef chatty():\n    print('hello'); warnings.warn('careful'); return 1")
    assert kernel.link.name("chatty")() == 1
    out = capsys.readouterr().out
    assert "hello" in out and "careful" in out


def _forged(value, path):
    """An answer file written by a tampered kernel with Python's own pickle."""
    path.write_bytes(pickle.dumps(value))
    return path


class Sub(torch.Tensor):
    pass


class Evil:
    def __reduce__(self):
        return (print, ("the judge ran code from the kernel",))


@pytest.mark.parametrize("value", [
    torch.zeros(2).as_subclass(Sub),
    nn.Parameter(torch.zeros(2)),
    {1: "a dict keyed by a number"},
    {"x": torch.Size([2, 3])},
])
def test_an_answer_that_is_not_plain_data_is_refused(value, tmp_path):
    with pytest.raises(probe.NotPlainData):
        probe.read_answer(_forged(value, tmp_path / "answer"))


def test_an_answer_that_would_run_code_in_the_judge_is_refused(capsys, tmp_path):
    (tmp_path / "answer").write_bytes(pickle.dumps({"value": Evil()}, protocol=2))
    with pytest.raises(probe.NotPlainData, match="not plain data"):
        probe.read_answer(tmp_path / "answer")
    assert "the judge ran code" not in capsys.readouterr().out


def test_an_answer_that_names_one_list_over_and_over_is_refused(tmp_path):
    bomb = []
    for _ in range(40):  # 2**40 items to walk, in a file of a few hundred bytes
        bomb = [bomb, bomb]
    with pytest.raises(probe.NotPlainData, match="more than"):
        probe.read_answer(_forged({"value": bomb}, tmp_path / "answer"))


@pytest.mark.parametrize("pid", [
    (0, "Tensor", (2,), bytes(8), False, False),  # not a dtype
    (0, "float32", (3,), bytes(8), False, False),  # bytes and shape disagree
    (0, "float32", (-2,), b"", False, False),
    (0, "float32", [2], bytes(8), False, False),
    (5,),  # a tensor never written
])
def test_a_tensor_in_a_form_the_probe_never_writes_is_refused(pid, tmp_path):
    class Forger(pickle.Pickler):
        def persistent_id(self, obj):
            return pid if obj == "tensor" else None

    with open(tmp_path / "answer", "wb") as file:
        Forger(file).dump({"value": "tensor"})
    with pytest.raises(probe.NotPlainData, match="never writes"):
        probe.read_answer(tmp_path / "answer")


def test_tensors_cross_with_their_dtype_shape_and_identity(tmp_path):
    shared = torch.randn(2, 3)
    values = [torch.randn(3, 4).t(), torch.tensor(2.5), torch.zeros(0, 3), torch.randn(2, dtype=torch.bfloat16),
              torch.tensor([True, False]), torch.randn(2, dtype=torch.complex64).conj(),
              torch.arange(6).reshape(2, 3)[:, 1], shared, shared]
    with open(tmp_path / "answer", "wb") as file:
        probe._TensorPickler(file).dump({"value": values})
    back = probe.read_answer(tmp_path / "answer")["value"]
    for mine, theirs in zip(values, back):
        assert type(theirs) is torch.Tensor and theirs.dtype == mine.dtype and torch.equal(theirs, mine.resolve_conj())
    assert back[-1] is back[-2]


def test_a_request_keeps_parameters_and_requires_grad(tmp_path):
    weight, x = nn.Parameter(torch.randn(2)), torch.randn(2, requires_grad=True)
    with open(tmp_path / "request", "wb") as file:
        probe._TensorPickler(file).dump({"args": [weight, x, torch.arange(3)]})
    with open(tmp_path / "request", "rb") as file:
        weight_back, x_back, index = probe._KernelUnpickler(file).load()["args"]
    assert isinstance(weight_back, nn.Parameter) and x_back.requires_grad and not index.requires_grad
    assert torch.equal(weight_back, weight) and torch.equal(x_back, x)


def test_an_answer_larger_than_checks_explain_is_refused(monkeypatch, tmp_path):
    monkeypatch.setattr(probe, "MAX_ANSWER", 1000)
    with pytest.raises(probe.NotPlainData, match="bytes"):
        probe.read_answer(_forged(torch.zeros(1000), tmp_path / "answer"))


def test_a_description_cannot_give_pytorchs_layer_another_forward(kernel):
    linear = nn.Linear(3, 3)
    description = {"__module__": 1, "class": "torch.nn.modules.linear:Linear", "training": True,
                   "attrs": {"in_features": 3, "out_features": 3, "forward": {"__remote__": 7, "name": "f"},
                             "_parameters": 0, "train": 1},
                   "params": {"weight": {"data": linear.weight.detach(), "requires_grad": True},
                              "bias": {"data": linear.bias.detach(), "requires_grad": True}},
                   "buffers": {}, "children": {}}
    rebuilt = kernel.link.decode(description)
    x = torch.randn(2, 3)
    assert "forward" not in vars(rebuilt) and "train" not in vars(rebuilt)
    assert torch.equal(rebuilt(x), linear(x))


def test_a_description_names_only_pytorchs_or_the_checks_classes(kernel):
    description = {"__object__": "os:system", "state": {"__dict__": []}}
    with pytest.raises(probe.NotPlainData, match="does not load"):
        kernel.link.decode(description)


# --- reading check cells ------------------------------------------------------------------------

def test_a_check_cell_is_read_as_calls_of_the_sections_checks_with_literal_arguments():
    source = "# a comment\ncheck.split_heads(split_heads)\n### BEGIN HIDDEN TESTS\n" \
             "check.split_heads(split_heads, 3, heads=(1, 2), seed=-1)\n### END HIDDEN TESTS\n"
    assert judge.parse(source) == [("split_heads", "split_heads", [], {}),
                                   ("split_heads", "split_heads", [3], {"heads": (1, 2), "seed": -1})]


@pytest.mark.parametrize("source", ["x = 1", "check.split_heads(split_heads, len('ab'))",
                                    "other.split_heads(split_heads)", "check.split_heads('split_heads')",
                                    "import os"])
def test_anything_else_in_a_check_cell_is_refused(source):
    with pytest.raises(judge.NotACheckCell):
        judge.parse(source)


def test_every_check_cell_of_the_course_is_read():
    for section in SECTIONS:
        for grade_id, (source, points) in judge.check_cells(section).items():
            calls = judge.parse(source)
            assert calls and points > 0, (section, grade_id)
            module = judge.check_module(section)
            assert all(callable(getattr(module, name)) for name, *_ in calls), (section, grade_id)


def test_a_verdict_becomes_the_outputs_nbgrader_scores():
    passed = judge.outputs({"passed": True, "stdout": "Check passed\n", "error": None})
    failed = judge.outputs({"passed": False, "stdout": "", "error": ("AssertionError", "head 0 is wrong")})
    assert [o.output_type for o in passed] == ["stream"] and passed[0].name == "stdout"
    assert [o.output_type for o in failed] == ["error"] and failed[0].evalue == "head 0 is wrong"
    cell = nbformat.v4.new_code_cell("check.x(x)", outputs=failed)
    assert judge.failed_in_notebook(cell)
    cell.outputs = passed
    assert not judge.failed_in_notebook(cell)
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text="warned\n")]
    assert judge.failed_in_notebook(cell)  # nbgrader scores a check cell that wrote to stderr as failed


# --- the course's parts in place of the earlier-parts cell -------------------------------------

def test_the_graded_cell_of_earlier_parts_runs_the_courses_own_definitions():
    from grader.judge import course_parts
    code = course_parts("05-block")
    assert "load_parts" not in code and "### BEGIN SOLUTION" not in code
    space = {}
    exec(code, space)
    layer, ffn = space["MultiHead"](16, 4), space["FeedForward"](16, 32)
    assert [name for name, _ in layer.named_children()] == ["q", "k", "v", "out"]
    assert layer(torch.randn(2, 3, 16)).shape == ffn(torch.randn(2, 3, 16)).shape == (2, 3, 16)
    assert "split_heads" not in space  # the helpers stay inside the parts' own namespace


class _Doubled(torch.autograd.Function):
    """2x, with a backward that forgets the 2: a gradient autograd reports but the output belies."""

    @staticmethod
    def forward(ctx, x):
        return 2 * x

    @staticmethod
    def backward(ctx, grad):
        return grad


class _Stack(nn.Module):
    def __init__(self, mistake=None):
        super().__init__()
        torch.manual_seed(0)
        self.first, self.second, self.drop = nn.Linear(8, 8), nn.Linear(8, 8), nn.Dropout(0.5)
        self.mistake = mistake

    def forward(self, x):
        h = self.drop(torch.tanh(self.first(x)))
        if self.mistake == "doubled":
            h = _Doubled.apply(h)
        return self.second(h)


def test_a_gradient_is_tested_against_how_the_output_moves_when_its_parameter_is_nudged():
    """expect_learns nudges each parameter both ways and compares the change of the output with
    the gradient: right gradients pass (dropout in training mode included, each nudge drawing the
    same mask), a hand-written backward that is off names the parameters it misleads, and so does a
    list of gradients made up to pass."""
    from grader import checks
    x = torch.randn(4, 8)
    checks.expect_learns(_Stack().train(), x, what="stack")
    with pytest.raises(AssertionError, match=r"the gradients of first\.weight, first\.bias do not match"):
        checks.expect_learns(_Stack("doubled"), x, what="stack")
    stack, state = _Stack(), torch.get_rng_state()
    found = checks.gradients(stack, stack, x)
    made_up = {**found, "second.weight": torch.zeros_like(found["second.weight"])}
    outputs = lambda changes: checks.outputs_with(stack, stack, changes, state, x)  # noqa: E731
    torch.set_rng_state(state)
    baseline = stack(x).detach()
    assert checks.untrue_gradients(stack, found, baseline, outputs) == []
    assert checks.untrue_gradients(stack, made_up, baseline, outputs) == ["second.weight"]
    # Outputs made huge drown every difference in float32 and would excuse any gradient: refused.
    drowned = lambda changes: [o + 1e12 for o in outputs(changes)]  # noqa: E731
    assert checks.untrue_gradients(stack, made_up, baseline, drowned) == list(found)


def test_a_zero_gradient_is_not_excused_by_the_noise_of_the_shortest_nudge():
    """Inputs ten times their usual size put the output's rounding, seen through the 1e-5 nudge,
    above the bias's true gradient, while the 1e-3 nudge still sees it: a bias reported as
    untrained (a gradient of zeros, as from `h.detach() + 0 * h`) is named, not excused by the
    shorter nudge agreeing within its noise."""
    from grader import checks
    torch.manual_seed(0)
    layer, x = nn.Linear(4, 3), 10 * torch.randn(5, 4)
    state = torch.get_rng_state()
    found = checks.gradients(layer, layer, x)
    outputs = lambda changes: checks.outputs_with(layer, layer, changes, state, x)  # noqa: E731
    baseline = layer(x).detach()
    assert checks.untrue_gradients(layer, found, baseline, outputs) == []
    zeroed = {**found, "bias": torch.zeros_like(found["bias"])}
    assert checks.untrue_gradients(layer, zeroed, baseline, outputs) == ["bias"]
