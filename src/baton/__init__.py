"""Baton: run a team of terminal coding agents through a fixed loop until the scenario passes."""

__version__ = "0.1.0"
__all__ = ["__version__"]
