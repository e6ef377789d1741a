"""Baton: run a team of terminal coding agents through a fixed loop until the scenario passes."""

import sys

__version__ = "0.1.0"
__all__ = ["__version__"]

# httpx imports its own command-line client (rich and pygments, 50-110 ms a start) when
# they are installed, as rich is for Baton's cockpit; Baton never runs that client. With
# the module marked absent, httpx defines its small stand-in instead.
if "httpx" not in sys.modules and "httpx._main" not in sys.modules:
    sys.modules["httpx._main"] = None  # type: ignore[assignment]
