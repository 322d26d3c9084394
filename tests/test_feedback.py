"""The feedback page's exporter (grader/feedback.py): the page nbconvert's HTMLExporter writes under
nbgrader's feedback template, from templates compiled once a process."""

import base64

import jinja2
import nbformat
import pytest
from bs4 import BeautifulSoup
from nbconvert.exporters import HTMLExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbgrader.converters import GenerateFeedback
from nbgrader.coursedir import CourseDirectory
from traitlets.config import Config

from grader import feedback

# a 1x1 PNG
PIXEL = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082")).decode()


def _notebook():
    figure = nbformat.v4.new_code_cell("plot()", outputs=[
        nbformat.v4.new_output("display_data", data={"image/png": PIXEL, "text/plain": "<Figure>"})])
    described = nbformat.v4.new_code_cell("plot()", outputs=[
        nbformat.v4.new_output("display_data", data={"image/png": PIXEL},
                               metadata={"image/png": {"alt": "Loss per epoch"}})])
    failing = nbformat.v4.new_code_cell("check.split_heads(split_heads)", outputs=[
        nbformat.v4.new_output("error", ename="AssertionError", evalue="heads <mixed>",
                               traceback=["AssertionError: heads <mixed>"])],
        metadata={"nbgrader": {"grade": True, "solution": False, "grade_id": "test_split_heads", "points": 2,
                               "score": 0}})
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Heads\n\n*one* <b>two</b>"),
                                               figure, described, failing])
    for number, cell in enumerate(notebook.cells):
        cell.id = f"cell-{number}"  # the same page each time
    notebook.metadata.language_info = {"name": "python", "pygments_lexer": "ipython3"}
    return notebook


def _page(exporter_class):
    """The page of _notebook(), by an exporter made as nbgrader's GenerateFeedback makes its own."""
    converter = GenerateFeedback(coursedir=CourseDirectory(), config=Config())
    html, _ = exporter_class(parent=converter, config=converter.config).from_notebook_node(
        _notebook(), {"nbgrader": {"notebook": "01-heads", "score": 0, "max_score": 2, "late_penalty": 0}})
    return html


def test_the_page_is_the_one_nbconvert_writes():
    ours = _page(feedback.FeedbackPage)
    assert _normal(ours) == _normal(_page(HTMLExporter))
    assert [img["alt"] for img in BeautifulSoup(ours, "html.parser").find_all("img")] == \
        [feedback.NO_ALT_TEXT, "Loss per epoch"]
    assert "heads &lt;mixed&gt;" in ours and "<b>two</b>" in ours


def _normal(html):
    return str(BeautifulSoup(html, "html.parser"))


def test_a_second_page_compiles_no_template_and_code_that_does_not_match_is_compiled_again(monkeypatch):
    _page(feedback.FeedbackPage)
    compiled = []
    original = jinja2.Environment.compile

    def counted(self, source, name=None, *args, **kwargs):
        compiled.append(name)
        return original(self, source, name, *args, **kwargs)
    monkeypatch.setattr(jinja2.Environment, "compile", counted)
    assert _normal(_page(feedback.FeedbackPage)) == _normal(_page(HTMLExporter))
    compiled.clear()
    _page(feedback.FeedbackPage)
    assert compiled == []
    # code that is not what the templates' sources compile to (another Jinja, a changed file) is
    # never run: Jinja compiles the template again
    for key in feedback.COMPILED.compiled:
        monkeypatch.setitem(feedback.COMPILED.compiled, key, b"not this template's code")
    assert _normal(_page(feedback.FeedbackPage)) == _normal(_page(HTMLExporter))
    assert "index.html.j2" in compiled


def test_an_image_keeps_the_alt_text_it_has_and_one_without_gets_the_placeholder():
    def image(mime="image/png", metadata=None):
        return nbformat.v4.new_output("display_data", data={mime: PIXEL, "text/plain": "<Figure>"},
                                      metadata=metadata or {})
    cells = [nbformat.v4.new_code_cell("a", outputs=[image(metadata={"alt": "Loss per epoch"})]),
             nbformat.v4.new_code_cell("b", outputs=[image()], metadata={"alt": "Attention weights"}),
             nbformat.v4.new_code_cell("c", outputs=[image("image/jpeg"), image("image/svg+xml"),
                                                     nbformat.v4.new_output("stream", text="tokens: 12\n")]),
             nbformat.v4.new_code_cell("d", outputs=[nbformat.v4.new_output("display_data", data={"text/plain": "7"})]),
             nbformat.v4.new_markdown_cell("no outputs")]
    notebook = feedback.with_alt_text(nbformat.v4.new_notebook(cells=cells))
    assert notebook.cells[0].outputs[0].metadata == {"alt": "Loss per epoch"}
    assert notebook.cells[1].outputs[0].metadata == {}  # the template reads the cell's
    jpeg, svg, stream = notebook.cells[2].outputs
    assert jpeg.metadata == {"image/jpeg": {"alt": feedback.NO_ALT_TEXT}}
    assert svg.metadata == {"image/svg+xml": {"alt": feedback.NO_ALT_TEXT}}
    assert "metadata" not in stream and notebook.cells[3].outputs[0].metadata == {}  # a stream has none


def test_a_cache_of_its_own_keeps_each_template_s_code_for_the_next_environment(monkeypatch):
    templates = jinja2.DictLoader({"greeting": "{{ 1 + x }} heads"})
    cache = feedback.CompiledTemplates()
    assert jinja2.Environment(loader=templates, bytecode_cache=cache).get_template("greeting").render(x=3) == "4 heads"
    assert len(cache.compiled) == 1
    monkeypatch.setattr(jinja2.Environment, "compile", lambda *args, **kwargs: pytest.fail("compiled again"))
    assert jinja2.Environment(loader=templates, bytecode_cache=cache).get_template("greeting").render(x=4) == "5 heads"


def test_a_code_cell_is_highlighted_once_a_process_and_its_page_is_the_same(monkeypatch):
    from nbconvert.filters import highlight
    feedback.HIGHLIGHTED.clear()
    first = _page(feedback.FeedbackPage)
    highlighted = []
    original = highlight._pygments_highlight
    monkeypatch.setattr(highlight, "_pygments_highlight", lambda source, *args, **kwargs:
                        highlighted.append(source) or original(source, *args, **kwargs))
    assert _page(feedback.FeedbackPage) == first  # the same notebook: every cell kept
    assert highlighted == []
    assert _normal(first) == _normal(_page(HTMLExporter))
    assert len(highlighted) == 3  # nbconvert's own highlights every code cell anew


def test_the_kept_highlight_is_the_one_for_the_same_source_language_magics_and_options(monkeypatch):
    feedback.HIGHLIGHTED.clear()
    python = feedback.KeptHighlights(pygments_lexer="ipython3")
    plain = Highlight2HTML(pygments_lexer="ipython3")
    cases = [("x = 1", None, None), ("x = 1", "python", None), ("x = 1", "bash", None),
             ("x = 1", None, {"magics_language": "bash"}), ("echo $x", None, {"magics_language": "bash"})]
    for source, language, metadata in cases * 2:  # the second time from what is kept
        assert python(source, language, metadata) == plain(source, language, metadata), (source, language, metadata)
    assert len(feedback.HIGHLIGHTED) == len(cases)
    wide = feedback.KeptHighlights(pygments_lexer="ipython3", extra_formatter_options={"linenos": "inline"})
    assert wide("x = 1") == Highlight2HTML(extra_formatter_options={"linenos": "inline"})("x = 1") != python("x = 1")


def test_the_least_recently_used_highlight_goes_first_when_the_process_keeps_too_many(monkeypatch):
    feedback.HIGHLIGHTED.clear()
    monkeypatch.setattr(feedback, "KEPT_HIGHLIGHTS", 2)
    kept = feedback.KeptHighlights()
    kept("a = 1")
    kept("b = 2")
    kept("a = 1")  # used again: b is now the least recent
    kept("c = 3")
    assert [key[0] for key in feedback.HIGHLIGHTED] == ["a = 1", "c = 3"]


def test_a_cell_longer_than_the_kept_ones_is_highlighted_and_not_kept(monkeypatch):
    """A submission's 12 MB cell in every notebook must not fill a worker's memory."""
    feedback.HIGHLIGHTED.clear()
    monkeypatch.setattr(feedback, "KEPT_LONGEST", 10)
    kept = feedback.KeptHighlights()
    assert kept("x = 'a long cell'") == Highlight2HTML()("x = 'a long cell'")
    assert kept("x = 1") and list(feedback.HIGHLIGHTED)[0][0] == "x = 1" and len(feedback.HIGHLIGHTED) == 1
