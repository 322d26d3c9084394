"""The grading options: one frozen record of how a class is graded, with its defaults here alone.

The command line builds it; the class run, its workers, a Dask worker, the course folder's
nbgrader settings (grading.json), the check server and the fingerprint of a grade all take it as
it is. A forked kernel grades as a fresh one does, so `warm` is the one option no grade depends on.
"""

import json
from dataclasses import asdict, dataclass

from grader.sandbox import MEMORY_MB


@dataclass(frozen=True)
class GradingOptions:
    timeout: int = 60            # seconds a cell may run before its kernel is interrupted
    memory_mb: int = MEMORY_MB   # memory a kernel may use, in MB (the sandbox's own limit)
    sandboxed: bool = True       # each kernel in a sandbox (grader.sandbox); False: for code you trust
    warm: bool | None = None     # kernels forked from a process that has imported the libraries
    #                              (grader.warm_kernel); None: where the system can (Linux); False: never

    def graded_by(self):
        """The options a grade depends on, as a dict (what grading.json and the fingerprint hold)."""
        return {"timeout": self.timeout, "memory_mb": self.memory_mb, "sandboxed": self.sandboxed}

    def to_json(self):
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text):
        """The options `to_json` or grading.json wrote; refuses a name it does not know."""
        return cls(**json.loads(text))


# The sample class (grader/examples/class), in the demo, the tests and the benchmarks: its endless
# loop is cut off after 30 s, not a real class's 60.
SAMPLE_CLASS = GradingOptions(timeout=30)
