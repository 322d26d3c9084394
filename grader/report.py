"""The class report: how each task went, the most frequent failure messages, the tasks left
unwritten, a score histogram, the submissions that could not be graded, were held (a student's
two notebooks of one section) or had a cell interrupted at the time limit, the checks that the
notebook and the grader judged differently, and how far the grading of the written answers by
hand has come, and the pairs of students whose answers are similar."""

from collections import Counter
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from grader.course import SECTIONS, message_shape

# How the checks say that a stub still raises NotImplementedError (grader.checks.call): not a
# mistake to re-teach, so the report counts these apart.
NOT_WRITTEN = "is not written yet"


@dataclass
class Counts:
    """What the report tells of a class, counted from its results (`count`)."""
    submissions: int
    graded: list   # the results graded, by student and notebook
    broken: list   # the submissions that could not be graded: a zero
    held: list     # a student's two notebooks of one section: neither graded
    failed: list   # the grader failed: no score, graded again next run
    tasks: dict = field(default_factory=dict)       # (section, grade_id) -> (full marks, submissions)
    failures: Counter = field(default_factory=Counter)  # (grade_id, message shape) -> times
    messages: dict = field(default_factory=dict)    # that key -> Counter of the message's first lines
    named: dict = field(default_factory=dict)       # that key -> the catalogue's wrong answers it names
    unwritten: Counter = field(default_factory=Counter)  # (section, grade_id) -> submissions as released


def write_report(out, results, similar=None):
    """Write report.html and scores.png under `out`; returns the report's path. `similar`: the
    (threshold, listed pairs) of grader.similar.write_similar, or None for no such part."""
    from grader.class_folder import written_progress
    from grader.similar import report_section
    out = Path(out)
    counts = count(results, _catalogued())
    plot_scores(counts.graded, out / "scores.png")
    path = out / "report.html"
    path.write_text(html_report(out, counts, written_progress(out), report_section(*similar) if similar else ""))
    return path


def _catalogued():
    from grader import recordings
    try:
        return recordings.catalogued_mistakes()
    except RuntimeError:  # the solutions cannot run here (no Banking77?): no names, the rest stands
        return {}


def count(results, catalogued):
    """The class's Counts: its results sorted into graded and not, each task's pass rate, its failure
    messages grouped by shape (numbers aside) and named from `catalogued`
    (grader.recordings.catalogued_mistakes()), and the tasks handed in as released."""
    in_order = sorted(results.values(), key=lambda r: (r.student, Path(r.notebook).name))
    counts = Counts(len(results), graded=[r for r in in_order if not r.error],
                    broken=[r for r in in_order if r.error and not r.grader_failure],
                    held=[r for r in in_order if r.held],
                    failed=[r for r in in_order if r.grader_failure and not r.held])
    for result in counts.graded:
        for task in result.tasks:
            key = (result.section, task.grade_id)
            passed, total = counts.tasks.get(key, (0, 0))
            counts.tasks[key] = (passed + (task.score == task.max_score), total + 1)
            first_line = task.message.splitlines()[0][:300] if task.message else ""
            if NOT_WRITTEN in first_line:
                counts.unwritten[key] += 1
            elif first_line:  # the same message on other numbers is the same mistake
                group = (task.grade_id, message_shape(task.message))
                counts.failures[group] += 1
                counts.messages.setdefault(group, Counter())[first_line] += 1
                counts.named[group] = mistake_named(catalogued, result.section, task.grade_id, task.message)
    return counts


def plot_scores(graded, path):
    """A histogram of the graded submissions' shares of the autograded points, saved at `path`."""
    from matplotlib.figure import Figure  # not pyplot: the caller's backend and figures stay as they are
    shares = [100 * r.score / r.max_score for r in graded if r.max_score]
    fig = Figure(figsize=(6, 3.5))
    ax = fig.subplots()
    ax.hist(shares, bins=[0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100.01], color="tab:blue", edgecolor="white")
    ax.set_xlabel("score (% of the autograded points)")
    ax.set_ylabel("submissions")
    ax.set_title(f"{len(shares)} graded submissions")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def html_report(out, counts, written, similar):
    """The report's page for the class graded into `out`, from its Counts, the progress of the
    written answers graded by hand (grader.class_folder.written_progress) and the similar pairs'
    part (HTML, grader.similar.report_section)."""
    c = counts
    rows = "".join(f"<tr><td>{escape(s)}</td><td>{escape(t)}</td><td>{p}/{n}</td><td>{100 * p / n:.0f}%</td></tr>"
                   for (s, t), (p, n) in sorted(c.tasks.items(), key=lambda item: SECTIONS.index(item[0][0])))
    common = "".join(f"<tr><td>{n}</td><td>{escape(group[0])}</td><td>{escape(c.named[group])}</td>"
                     f"<td><code>{escape(c.messages[group].most_common(1)[0][0])}</code></td></tr>"
                     for group, n in c.failures.most_common(15))
    left = "".join(f"<tr><td>{escape(s)}</td><td>{escape(t)}</td><td>{n}</td></tr>" for (s, t), n in
                   sorted(c.unwritten.items(), key=lambda item: (SECTIONS.index(item[0][0]), -item[1], item[0][1])))
    by_hand = "".join(f"<tr><td>{escape(s)}</td><td>{escape(t)}</td><td>{done}</td><td>{waiting}</td>"
                      f"<td>{given / done if done else 0:.1f} / {most:g}</td></tr>"
                      for s, t, done, waiting, given, most in written)
    stopped = _listed((r, note) for r in c.graded for note in r.interrupted)
    flagged = _listed((r, flag) for r in c.graded for flag in r.flags)
    bad = _listed((r, r.error) for r in c.broken)
    ours = (f"<h2>Not graded: the grader failed</h2><p>Not the students' doing, and no score: the next "
            f"run grades these again.</p><ul>{_listed((r, r.error) for r in c.failed)}</ul>" if c.failed else "")
    waiting = (f"<h2>Held: a student handed in two notebooks of one section</h2><p>Neither is graded: "
               f"which one counts is yours to say. Remove the others; the next run grades the one left."
               f"</p><ul>{_listed((r, r.error) for r in c.held)}</ul>" if c.held else "")
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>Class report</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td,th{{padding:.2em .6em;text-align:left}}
tr:nth-child(even){{background:#f3f3f3}}</style></head><body>
<h1>Class report</h1>
<p>{c.submissions} submissions: {len(c.graded)} graded, {len(c.broken)} could not be graded (scored 0){
f", {len(c.failed)} not graded because the grader failed" if c.failed else ""}{
f", {len(c.held)} held (two notebooks of one section)" if c.held else ""}.</p>
<img src="scores.png" alt="Histogram of the share of autograded points per graded submission">
<p>The histogram counts graded submissions by their share of the autograded points.</p>
<h2>Pass rate per task</h2><table><tr><th>section</th><th>task</th><th>full marks</th><th>rate</th></tr>{rows}</table>
<h2>Most frequent mistakes</h2><p>What to re-teach first. Failures are counted by their message,
numbers aside, shown as most often given. Where a wrong answer of the catalogue fails with the same
message, its mistake is named. Tasks still as they were released are not mistakes: the next table
counts them.</p>
<table><tr><th>times</th><th>task</th><th>mistake</th><th>message</th></tr>{common}</table>
<h2>Tasks not written yet</h2><table><tr><th>section</th><th>task</th><th>submissions</th></tr>{left}</table>
<h2>Submissions that could not be graded</h2><ul>{bad or "<li>none</li>"}</ul>{ours}{waiting}
<h2>Cells interrupted at the time limit</h2><p>The checks after such a cell fail for want of what it
should have defined; the failure messages above then name the consequence, this list the cause.</p>
<ul>{stopped or "<li>none</li>"}</ul>
<h2>Checks the notebook and the grader judged differently</h2><p>The score is the grader's, which
ran the check outside the student's process. A notebook whose own check passed where the grader's
failed may interfere with its checks: read it.</p>
<ul>{flagged or "<li>none</li>"}</ul>
<h2>Written answers, graded by hand</h2><p>Not in the autograded scores above. Grade them in
Formgrader (<code>python -m grader formgrader {escape(str(out))}</code>), then write the grade table with
<code>python -m grader export {escape(str(out))}</code>. A written answer a student changed after it was
graded waits again.</p>
<table><tr><th>section</th><th>question</th><th>graded</th><th>waiting</th><th>mean points</th></tr>{by_hand}</table>
{similar}</body></html>"""


def mistake_named(catalogued, section, grade_id, message):
    """The names of the catalogue's wrong answers whose check fails with this message (numbers
    aside), joined; '' when none does. `catalogued`: grader.recordings.catalogued_mistakes()."""
    named = catalogued.get(", ".join([str(section), grade_id, message_shape(message)]), [])
    return "; ".join(dict.fromkeys(named))


def _listed(pairs):
    """A list item per (result, note): who, which notebook, what."""
    return "".join(f"<li>{escape(r.student)}, {escape(Path(r.notebook).name)}: {escape(note)}</li>"
                   for r, note in pairs)
