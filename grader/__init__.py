"""The course's grading tools, built on nbgrader: `python -m grader <verb>`."""
