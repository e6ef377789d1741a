"""The web cockpit: `baton serve`'s pages for people (docs/web.md).

It sits above the server and the cockpit: `install_web` adds its routes to a server app
(the command line passes it to `serve_forever`), so the server never imports it.
"""

from __future__ import annotations

from fastapi import FastAPI

from baton.server.app import ServerOptions
from baton.server.terminals import TerminalService
from baton.web.api import api_router
from baton.web.batches import BatchDirectory
from baton.web.pages import pages_router
from baton.web.runs import RunDirectory
from baton.web.views import CockpitViews

__all__ = ["install_web"]


def install_web(app: FastAPI, service: TerminalService, options: ServerOptions) -> None:
    """Add the cockpit's pages, its JSON and the run announcements to `app`."""
    runs = RunDirectory(options.state_dir / "runs")
    batches = BatchDirectory(options.state_dir / "batches", runs)
    views = CockpitViews(runs=runs, batches=batches, service=service)
    app.include_router(api_router(views))
    app.include_router(pages_router(views, options.token))
