"""Every error as `{"detail": …}`: one line, or the structured detail a CAO client reads."""

from __future__ import annotations

import logging
import sqlite3

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from baton.errors import ServerError
from baton.server.storage import as_storage_error

__all__ = ["install_error_handlers"]

logger = logging.getLogger("baton.server")


def install_error_handlers(app: FastAPI) -> None:
    """Map Baton's errors, validation failures and surprises to JSON responses."""
    app.add_exception_handler(ServerError, _server_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]
    # OSError and sqlite's errors (a full disk: 507) are answered by the handler inside the
    # middleware stack; one for `Exception` alone would re-raise after answering, and
    # uvicorn then closes the kept-alive connection under the client's next request.
    app.add_exception_handler(OSError, _unexpected)
    app.add_exception_handler(sqlite3.Error, _unexpected)
    app.add_exception_handler(Exception, _unexpected)


async def _server_error(_: Request, error: ServerError) -> JSONResponse:
    return JSONResponse(status_code=error.status_code, content={"detail": error.detail()})


async def _unexpected(request: Request, error: Exception) -> JSONResponse:
    if isinstance(error, ServerError):  # raised in a middleware, outside the routes' handler
        return await _server_error(request, error)
    full = as_storage_error(error)
    if full is not None:  # a full disk met outside the registry (a runtime dir, a log)
        logger.warning("%s", full)
        return await _server_error(request, full)
    # Still one JSON line for the client; the traceback goes to the server's log.
    logger.exception("unexpected error")
    detail = f"internal error: {type(error).__name__}: {error}"
    return JSONResponse(status_code=500, content={"detail": detail})


async def _invalid(_: Request, error: RequestValidationError) -> JSONResponse:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item.get("loc", ()) if p not in ("path", "query"))
        parts.append(f"{where}: {item.get('msg', 'invalid')}")
    return JSONResponse(status_code=422, content={"detail": "; ".join(parts)})
