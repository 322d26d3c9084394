"""The order notebooks are graded in, and where: on a pool of local worker processes, always
starting the notebook expected to take longest (grader.cluster does the same on a Dask cluster)."""

from concurrent.futures import FIRST_COMPLETED, wait

from grader import worker
from grader.course import SECTIONS
from grader.result import Result


class ClusterError(Exception):
    """The Dask cluster cannot grade (grader.cluster): its scheduler is out of reach or was lost,
    or a worker refused. What was graded before is saved; the message says what to do."""


def longest_first(new_pool, todo, workers, attempts=2):
    """Grade `todo` on a pool of `workers` processes from `new_pool()`, one notebook per worker at
    a time, always starting the one expected to take longest; yields (item, worker.Graded) as
    each finishes.

    Long notebooks first keep a worker from starting one alone at the end while the others wait.
    A section's expected length is the mean time of its notebooks graded so far in this run.
    Sections with none graded yet come first, later ones first (sections 6 and 7 train a model):
    one notebook of each shows how long the section takes, and the shortest section ends the run.

    A worker that dies (the pool breaks) takes the notebooks then running with it: the pool starts
    again and grades them again, up to `attempts` times each, then records a grader failure.
    """
    from concurrent.futures.process import BrokenProcessPool
    waiting, seconds, tries = list(todo), {}, {}
    while waiting:
        running = {}
        with new_pool() as pool:
            try:
                while waiting or running:
                    while waiting and len(running) < workers:
                        item = next_longest(waiting, seconds)
                        waiting.remove(item)
                        tries[item[0]] = tries.get(item[0], 0) + 1
                        running[pool.submit(worker.grade, item[1].student, str(item[1].path))] = item
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for job in finished:
                        item, graded = running[job], job.result()  # a broken pool raises here
                        del running[job]
                        seconds.setdefault(section_order(item[1].section), []).append(graded.result.seconds)
                        yield item, graded
            except BrokenProcessPool:
                for item in running.values():
                    if tries[item[0]] < attempts:
                        waiting.append(item)
                    else:
                        yield item, worker.Graded(Result.grader_failed(item[1].path, item[1].student, (
                            f"a grading process died {attempts} times while this notebook was being graded")))


def next_longest(waiting, seconds):
    """The waiting item expected to take longest (the first such one, so students keep their
    order): by the mean seconds of its section so far, after every section not yet timed."""
    means = {section: sum(times) / len(times) for section, times in seconds.items()}

    def expected(item):
        section = section_order(item[1].section)
        return (0, means[section]) if section in means else (1, section)
    return max(waiting, key=expected)


def section_order(section):
    """A section's place in the course (06-tiny-transformer -> 5); -1 for None, no section found."""
    return SECTIONS.index(section) if section else -1
