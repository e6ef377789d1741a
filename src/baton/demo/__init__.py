"""`baton demo`: the whole loop on a sample project, with the built-in scripted agent."""

from __future__ import annotations

from baton.demo.runner import run_demo
from baton.demo.sample import SampleProject, write_sample_project

__all__ = ["SampleProject", "run_demo", "write_sample_project"]
