"""How much of each graded answer a student could copy from the release notebook around it.

For every answer cell of the solutions, the share of the answer's token 6-grams that also occur in
the release notebook of its section outside the answer cells: in its code cells, and in the code
of its markdown (`inline` spans and fenced blocks). Before comparing, every name that the code
chooses for itself (variables, parameters, functions) becomes `_`, so renaming `h` to `x` hides
nothing; keywords, builtins, attributes after a dot and the names of the libraries stay.

Two counts. *All* 6-grams is issue 44's own measure. *Worded* 6-grams leave out the ones made of
placeholders and punctuation alone, such as `( _ , _ , _`: every tuple of three names has it (25
cells of section 1 do), so finding it in the release says nothing about the answer, and in a
two-line answer it is most of the count. Issue 44's targets, at most 15% over all the answers and
no answer at 40% or more, are held on the worded count (tests/test_notebooks.py); the table
prints both.

    python bench/copyable.py
"""

import builtins
import io
import keyword
import re
import sys
import tokenize
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from grader.course import SECTIONS, release_notebook, solution_notebook  # noqa: E402
from grader.course import nbgrader_info  # noqa: E402

N = 6
TOTAL_TARGET, TASK_LIMIT = 0.15, 0.40
LIBRARIES = {"torch", "nn", "F", "math", "pd", "np", "plt", "ticketnet", "PAD", "UNK", "TEAMS"}
KEPT = set(dir(builtins)) | LIBRARIES
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
           tokenize.ENDMARKER, tokenize.STRING, tokenize.ENCODING}
ANSWER = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
CODE_IN_MARKDOWN = re.compile(r"```[a-z]*\n(.*?)```|`([^`\n]+)`", re.S)


def tokens(code):
    """The code's tokens with its own names as `_`; strings and comments left out."""
    out, after_dot = [], False
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type in SKIPPED:
                continue
            text = token.string
            if token.type == tokenize.NAME and not keyword.iskeyword(text) and not after_dot and text not in KEPT:
                text = "_"
            out.append(text)
            after_dot = text == "."
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # a fragment in a markdown span: keep the tokens read so far
    return out


def grams(sequence):
    return [tuple(sequence[i:i + N]) for i in range(len(sequence) - N + 1)]


def worded(gram):
    """Whether a 6-gram holds a word or a number, not only `_` and punctuation."""
    return any(token != "_" and (token[0].isalnum() or token[0] == "_") for token in gram)


def release_grams(cells):
    """Every 6-gram of a release's code outside the answer cells, and of its markdown's code."""
    found = set()
    for cell in cells:
        if cell.cell_type == "code" and not (nbgrader_info(cell).get("solution") and not nbgrader_info(cell).get("grade")):
            found.update(grams(tokens(cell.source)))
        elif cell.cell_type == "markdown":
            for block, span in CODE_IN_MARKDOWN.findall(cell.source):
                found.update(grams(tokens(block or span)))
    return found


def shares(solution_cells, release_cells, counted=lambda gram: True):
    """{grade_id: (answer 6-grams found in the release, answer 6-grams)} of the solution's answers,
    counting the 6-grams for which `counted` is true."""
    shown = release_grams(release_cells)
    result = {}
    for cell in solution_cells:
        answer = "\n".join(ANSWER.findall(cell.source)) if cell.cell_type == "code" else ""
        if answer:
            answer_grams = [g for g in grams(tokens(_dedented(answer))) if counted(g)]
            result[nbgrader_info(cell)["grade_id"]] = (sum(g in shown for g in answer_grams), len(answer_grams))
    return result


def course_shares(counted=worded):
    """{(section, grade_id): (shown, total)} over the course's solutions and release."""
    return {(section, grade_id): counts for section in SECTIONS for grade_id, counts in shares(
        nbformat.read(solution_notebook(section), as_version=4).cells,
        nbformat.read(release_notebook(section), as_version=4).cells, counted).items()}


def _dedented(code):
    """An answer cut out of a class or function body, made to parse on its own."""
    lines = code.splitlines()
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:] for line in lines) + "\n"


def summary(result, limit=TASK_LIMIT):
    """(the share of all the answers' 6-grams shown, {task: its share} for the tasks at `limit` or
    above) of `course_shares()`."""
    shown, total = sum(c for c, _ in result.values()), sum(n for _, n in result.values())
    return shown / total, {task: c / n for task, (c, n) in result.items() if c / n >= limit}


def main():
    every, words = course_shares(counted=lambda gram: True), course_shares()
    print(f"{'':46}{'all 6-grams':>21}   {'worded 6-grams':>21}")
    print(f"{'section':20} {'task':24} {'count':>6} {'shown':>6} {'share':>6}   {'count':>6} {'shown':>6} {'share':>6}")
    for task in sorted(words, key=lambda task: -words[task][0] / max(words[task][1], 1)):
        (all_shown, all_count), (shown, count) = every[task], words[task]
        flag = "  at or over the limit" if count and shown / count >= TASK_LIMIT else ""
        print(f"{task[0]:20} {task[1]:24} {all_count:6} {all_shown:6} {all_shown / max(all_count, 1):6.0%}   "
              f"{count:6} {shown:6} {shown / max(count, 1):6.0%}{flag}")
    for name, result in (("all", every), ("worded", words)):
        share, high = summary(result)
        shown, total = sum(c for c, _ in result.values()), sum(n for _, n in result.values())
        print(f"{name} 6-grams: {shown} of {total} shown, {share:.1%}; {len(high)} task(s) at {TASK_LIMIT:.0%} or more")
    print(f"targets, on the worded 6-grams: at most {TOTAL_TARGET:.0%} in all, under {TASK_LIMIT:.0%} per task")


if __name__ == "__main__":
    main()
