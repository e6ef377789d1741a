"""A constant `GET /terminals/{id}` on the server's own stack (uvicorn, Starlette): the
floor a status read can reach on this machine under the same load, for the batch bench.

    python bench/constant_server.py PORT
"""

from __future__ import annotations

import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

_BODY = b'{"id": "t", "status": "idle"}'


async def terminal(_request: Request) -> Response:
    return Response(_BODY, media_type="application/json")


if __name__ == "__main__":
    app = Starlette(routes=[Route("/terminals/{terminal_id}", terminal)])
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
