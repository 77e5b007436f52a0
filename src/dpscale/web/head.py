"""``HEAD`` answered for every ``GET`` route: the same status and headers, no body.

FastAPI routes declared with ``get`` answer only ``GET``, so ``curl -I`` and link checkers got
405. RFC 9110 (9.3.2) asks a server to answer ``HEAD`` as it would ``GET``, without the content,
so the app is asked for ``GET`` and its body is dropped: pages, static files, the API and
``/healthz`` all answer ``HEAD``, with the ``Content-Length`` the ``GET`` would have, and a route
that takes no ``GET`` still says 405.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["HeadAsGet"]


class HeadAsGet:
    """ASGI middleware: a ``HEAD`` request gets the ``GET`` response's status and headers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
