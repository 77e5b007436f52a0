"""Security headers on every response, and the same-origin check for posts.

Every page allows only the app's own scripts, styles and images (no inline script), and refuses
to be framed, except the embed views (``/embed/...``), which any site may frame, and any page
opened from a file (:data:`EMBED_ANCESTORS`).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "EMBED_ANCESTORS",
    "EMBED_PREFIX",
    "SecurityHeaders",
    "content_security_policy",
    "same_origin",
]

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


EMBED_ANCESTORS = "* file:"
"""Who may frame an embed: any site, and a page opened from a file. A lone ``*`` matches only
http(s) URLs and the embed's own scheme (CSP Level 3, "Does url match expression in origin with
redirect count?"), so a site owner who tried the snippet in a page saved on their disk saw an
empty box (Chromium: "'*' matches only URLs with network schemes"). ``file:`` is a
scheme-source, which the ``frame-ancestors`` grammar takes (``ancestor-source = scheme-source /
host-source / "'self'"``); it adds only pages the reader opened on their own machine, where
``*`` already lets every site frame an embed."""


def content_security_policy(*, framable: bool) -> str:
    """The CSP header value; ``framable`` lets any site, or a page opened from a file, frame
    the response (:data:`EMBED_ANCESTORS`)."""
    ancestors = f"frame-ancestors {EMBED_ANCESTORS}" if framable else "frame-ancestors 'none'"
    return "; ".join((*_POLICY, ancestors))


def _raw(framable: bool) -> tuple[tuple[bytes, bytes], ...]:
    headers = [
        ("content-security-policy", content_security_policy(framable=framable)),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "strict-origin-when-cross-origin"),
        ("cross-origin-opener-policy", "same-origin"),
        ("permissions-policy", "camera=(), microphone=(), geolocation=()"),
    ]
    if not framable:
        headers.append(("x-frame-options", "DENY"))
    return tuple((name.encode("latin-1"), value.encode("latin-1")) for name, value in headers)


_RAW = {framable: _raw(framable) for framable in (True, False)}
_NAMES = frozenset(name for name, _ in _RAW[False])


class SecurityHeaders:
    """ASGI middleware adding CSP, nosniff, referrer policy and framing rules to responses."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = _RAW[str(scope.get("path", "")).startswith(EMBED_PREFIX)]

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", ()))
                if any(name.lower() in _NAMES for name, _ in raw):
                    headers = MutableHeaders(raw=raw)  # a response's own value is replaced
                    for name, value in extra:
                        headers[name.decode("latin-1")] = value.decode("latin-1")
                    raw = headers.raw
                else:  # what setting each would do, without a search of the list per header
                    raw.extend(extra)
                message["headers"] = raw
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
