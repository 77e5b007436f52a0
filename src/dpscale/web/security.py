"""Security headers on every response, and the same-origin check for posts.

Every page allows only the app's own scripts, styles and images (no inline script), and refuses
to be framed, except the embed views (``/embed/...``), which any site may frame.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["EMBED_PREFIX", "SecurityHeaders", "content_security_policy", "same_origin"]

EMBED_PREFIX = "/embed/"

_POLICY = (
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "frame-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
)


def content_security_policy(*, framable: bool) -> str:
    """The CSP header value; ``framable`` lets any site frame the response."""
    ancestors = "frame-ancestors *" if framable else "frame-ancestors 'none'"
    return "; ".join((*_POLICY, ancestors))


_FRAMABLE = content_security_policy(framable=True)
_NOT_FRAMABLE = content_security_policy(framable=False)


class SecurityHeaders:
    """ASGI middleware adding CSP, nosniff, referrer policy and framing rules to responses."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        framable = str(scope.get("path", "")).startswith(EMBED_PREFIX)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Content-Security-Policy"] = _FRAMABLE if framable else _NOT_FRAMABLE
                headers["X-Content-Type-Options"] = "nosniff"
                headers["Referrer-Policy"] = "strict-origin-when-cross-origin"
                headers["Cross-Origin-Opener-Policy"] = "same-origin"
                headers["Permissions-Policy"] = "camera=(), microphone=(), geolocation=()"
                if not framable:
                    headers["X-Frame-Options"] = "DENY"
            await send(message)

        await self.app(scope, receive, send_with_headers)


def same_origin(request: Request, *, require: bool) -> bool:
    """Whether a post comes from this site's own pages.

    The ``Origin`` header (or, without it, the ``Referer``) must name the host the request was
    sent to. With neither header, the answer is ``not require``: browsers send ``Origin`` on
    every form post, so only non-browser clients (scripts using the JSON API) lack both.
    """
    host = request.headers.get("host", "").lower()
    origin = request.headers.get("origin")
    if origin is not None:
        return origin != "null" and urlsplit(origin).netloc.lower() == host
    referer = request.headers.get("referer")
    if referer:
        return urlsplit(referer).netloc.lower() == host
    return not require
