"""The student's feedback page: nbgrader's HTML exporter, made cheaper where it pays twice.

nbgrader makes a new exporter, and with it a new Jinja environment, for every page it writes, and
Jinja compiled the page's templates each time again. The compiled code is kept here, in memory,
for the process (a grading worker writes a page per notebook); Jinja checks each template's source
against the code's checksum before it uses it. And nbconvert reads every page it has rendered
back with BeautifulSoup, to give images without alt text a placeholder and JupyterLab's cells a
tab stop: 43% of a page's processor time, for a template (the classic one, under nbgrader's
feedback) that has no JupyterLab cells. Here the images get their alt text before rendering.
Highlighting the code was then about half of what was left, and most of a section's code cells
are the release's, the same in every student's notebook: each is highlighted once a process.
"""

from collections import OrderedDict

from jinja2 import BytecodeCache
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

IMAGES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
NO_ALT_TEXT = "No description has been provided for this image"  # nbconvert's own placeholder
KEPT_HIGHLIGHTS = 4096  # code cells kept highlighted, the least recently used dropped first
KEPT_LONGEST = 20_000  # characters: a longer cell (a submission's own) is highlighted, not kept


class CompiledTemplates(BytecodeCache):
    """Jinja's bytecode cache, in memory: {template's key: its compiled code}."""

    def __init__(self):
        self.compiled = {}

    def load_bytecode(self, bucket):
        if bucket.key in self.compiled:
            bucket.bytecode_from_string(self.compiled[bucket.key])

    def dump_bytecode(self, bucket):
        self.compiled[bucket.key] = bucket.bytecode_to_string()


COMPILED = CompiledTemplates()


def with_alt_text(notebook):
    """Every image output of `notebook` with alt text, the placeholder where it had none (the
    templates read `alt` from the output's metadata)."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            for mime in set(IMAGES) & set(output.get("data", {})):
                metadata = output.setdefault("metadata", {})
                if not (metadata.get(mime, {}).get("alt") or metadata.get("alt") or cell.metadata.get("alt")):
                    metadata.setdefault(mime, {})["alt"] = NO_ALT_TEXT
    return notebook


class KeptHighlights(Highlight2HTML):
    """nbconvert's highlight_code filter, keeping what it highlighted for the process (HIGHLIGHTED):
    the same source, language and formatter options make the same HTML."""

    def __call__(self, source, language=None, metadata=None):
        if len(source) > KEPT_LONGEST:
            return super().__call__(source, language, metadata)
        key = (source, language or self.pygments_lexer, (metadata or {}).get("magics_language"),
               repr(sorted(self.extra_formatter_options.items())))
        if key in HIGHLIGHTED:
            HIGHLIGHTED.move_to_end(key)
        else:
            HIGHLIGHTED[key] = super().__call__(source, language, metadata)
            if len(HIGHLIGHTED) > KEPT_HIGHLIGHTS:
                HIGHLIGHTED.popitem(last=False)
        return HIGHLIGHTED[key]


HIGHLIGHTED = OrderedDict()


class FeedbackPage(HTMLExporter):
    """HTMLExporter, set up as nbgrader sets it (its settings are read under HTMLExporter's name),
    rendering from the process's compiled templates, its page not read back."""

    def _create_environment(self):
        environment = super()._create_environment()
        environment.bytecode_cache = COMPILED
        return environment

    def from_notebook_node(self, nb, resources=None, **kw):
        # HTMLExporter's own, up to the rendered page: its two filters, then the template's render
        language = nb.metadata.get("language_info", {})
        self.register_filter("highlight_code", self.filters.get("highlight_code", KeptHighlights(
            pygments_lexer=language.get("pygments_lexer", language.get("name")), parent=self)))
        resources = self._init_resources(resources)
        self.register_filter("filter_data_type", WidgetsDataTypeFilter(
            notebook_metadata=self._nb_metadata, parent=self, resources=resources))
        return TemplateExporter.from_notebook_node(self, with_alt_text(nb), resources, **kw)
