"""The HTTP routes of `baton serve`, one router per resource.

`create_app` (in `baton.server.app`) includes every router here; handlers reach the
services through `Services`, kept on `app.state.services`.
"""

from __future__ import annotations

from baton.server.routes.actions import router as actions_router
from baton.server.routes.cao_extras import router as cao_extras_router
from baton.server.routes.common import Services
from baton.server.routes.errors import install_error_handlers
from baton.server.routes.inbox import router as inbox_router
from baton.server.routes.sessions import router as sessions_router
from baton.server.routes.steps import router as steps_router
from baton.server.routes.terminals import router as terminals_router

__all__ = ["ROUTERS", "Services", "install_error_handlers"]

# run-step first: `/terminals/run-step` must not be read as a terminal id.
ROUTERS = (
    steps_router,
    sessions_router,
    terminals_router,
    inbox_router,
    actions_router,
    cao_extras_router,
)
