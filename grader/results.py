"""The class's results store: results.json, the Result of each notebook (grader.result) keyed by
student and notebook, and beside it its journal results.jsonl. Each result is appended to the
journal the moment it arrives, so that a run killed midway loses nothing already graded;
results.json is written whole once, at the end of the run (for a class of thousands, writing it
after every notebook would take longer than the grading)."""

import json

from grader.result import Result


def journal(store):
    """The journal beside `store`."""
    return store.with_suffix(".jsonl")


def load(store):
    """The results in `store` ({key: Result}), with those its journal holds from a run stopped
    before it wrote them there."""
    results = json.loads(store.read_text()) if store.is_file() else {}
    results = {key: Result.from_json(result) for key, result in results.items()}
    if journal(store).is_file():
        for line in journal(store).read_text().splitlines():
            try:
                key, result = json.loads(line)
            except ValueError:  # the last line, cut off where the run was killed
                continue
            results[key] = Result.from_json(result)
    return results


def settled(store):
    """The results of `store` (load), a killed run's journal folded into it first and removed, so
    that this run's lines never follow its cut-off one."""
    results = load(store)
    if journal(store).is_file():
        save(store, results)
        journal(store).unlink()
    return results


def save(store, results):
    """Write `results` ({key: Result}) whole into `store`, in place of what it held only once
    written."""
    partial = store.with_suffix(".tmp")
    partial.write_text(json.dumps({k: r.to_json() for k, r in results.items()}, indent=1, sort_keys=True))
    partial.replace(store)


class Recording:
    """`with Recording(store, results) as add:` each `add(key, result)` puts `result` into `results`
    and appends it to the journal at once; when the block ends, however it ends, `store` is written
    whole and the journal removed. (A class, not a generator: mutation testing mutates its code.)"""

    def __init__(self, store, results):
        self.store, self.results = store, results

    def __enter__(self):
        self.lines = journal(self.store).open("a")
        return self.add

    def add(self, key, result):
        self.results[key] = result
        self.lines.write(json.dumps([key, result.to_json()]) + "\n")
        self.lines.flush()  # after each one: an interrupted run loses nothing

    def __exit__(self, *exc):
        self.lines.close()
        save(self.store, self.results)
        journal(self.store).unlink()
