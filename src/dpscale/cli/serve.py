"""``dpscale serve``: the calculator pages, embed views and JSON API over HTTP (uvicorn).

The defaults are safe to face the internet behind nothing but TLS: a request head must arrive
within 10 s and fit in 16 KiB, a worker holds at most 1,000 connections (uvicorn answers 503
past that), idle keep-alive connections close after 5 s, and proxy headers
(``X-Forwarded-For``, ``X-Forwarded-Proto``) are believed only from ``--forwarded-allow-ips``.
"""

from __future__ import annotations

import os

import typer
from pydantic import BaseModel, ConfigDict, Field

from dpscale.cli._common import fail, read_input

EXAMPLE = (
    "Example: dpscale serve --host 0.0.0.0 --port 8080 --workers 4 --forwarded-allow-ips 10.0.0.5"
)


class ServeInput(BaseModel):
    model_config = ConfigDict(frozen=True)

    host: str = Field(default="127.0.0.1", min_length=1, max_length=255)
    port: int = Field(default=8000, ge=1, le=65535)
    workers: int | None = Field(default=None, ge=1, le=256)
    header_timeout: float = Field(default=10.0, gt=0, le=3600, allow_inf_nan=False)
    max_header_bytes: int = Field(default=16 * 1024, ge=1024, le=1024 * 1024)
    max_connections: int = Field(default=1000, ge=1, le=1_000_000)
    keep_alive: int = Field(default=5, ge=1, le=3600)
    forwarded_allow_ips: str = Field(default="", max_length=4000, pattern=r"^[0-9A-Za-z.:/,* ]*$")


def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: str = typer.Option("8000", "--port", metavar="INT", help="Port to listen on."),
    workers: str = typer.Option(
        None,
        "--workers",
        metavar="INT",
        help="Worker processes [default: the cores this process may use]. The response cache, "
        "the feedback rate limit and the costly-request turns are per worker.",
        show_default=False,
    ),
    header_timeout: str = typer.Option(
        "10",
        "--header-timeout",
        metavar="SECONDS",
        help="Close a connection whose request line and headers take longer than this.",
    ),
    max_header_bytes: str = typer.Option(
        "16384",
        "--max-header-bytes",
        metavar="INT",
        help="Refuse (400) a request line and headers larger than this.",
    ),
    max_connections: str = typer.Option(
        "1000",
        "--max-connections",
        metavar="INT",
        help="Connections and requests per worker; past them, requests get 503.",
    ),
    keep_alive: str = typer.Option(
        "5", "--keep-alive", metavar="SECONDS", help="Close idle keep-alive connections after this."
    ),
    forwarded_allow_ips: str = typer.Option(
        "",
        "--forwarded-allow-ips",
        metavar="ADDRESSES",
        help="Proxies (comma-separated addresses or networks, '*' for any) whose "
        "X-Forwarded-For and X-Forwarded-Proto are believed; none by default.",
        show_default=False,
    ),
) -> None:
    """Serve the web calculators on http://HOST:PORT (database: DPSCALE_DATABASE_URL)."""
    options = read_input(
        ServeInput,
        {
            "host": host,
            "port": port,
            "workers": workers,
            "header_timeout": header_timeout,
            "max_header_bytes": max_header_bytes,
            "max_connections": max_connections,
            "keep_alive": keep_alive,
            "forwarded_allow_ips": forwarded_allow_ips.strip(),
        },
    )
    try:
        import uvicorn

        from dpscale.web.app import create_app
        from dpscale.web.server import HEADER_TIMEOUT_ENV, ServerLimits, default_workers
    except ImportError as exc:
        fail(f"the web app needs the 'web' extra: pip install 'dpscale[web]' ({exc.name})")
    from dpscale.store.db import StoreUnavailableError, check_database, database_url

    try:
        create_app()  # a bad DPSCALE_* limit stops here, with its name, not in each worker
        check_database()  # tables created and writable now, not on a reader's first post
    except (StoreUnavailableError, ValueError) as err:
        fail(str(err))
    limits = ServerLimits(
        header_timeout_s=options.header_timeout,
        max_header_bytes=options.max_header_bytes,
        max_connections=options.max_connections,
        keep_alive_s=options.keep_alive,
    )
    # The protocol runs in each worker process: it reads its timeout from the environment.
    os.environ[HEADER_TIMEOUT_ENV] = repr(options.header_timeout)
    count = options.workers or default_workers()
    plural = "s" if count != 1 else ""
    typer.echo(
        f"dpscale: serving http://{options.host}:{options.port}/ with {count} worker{plural} "
        f"({_shown(database_url())})"
    )
    uvicorn.run(
        "dpscale.web.app:create_served_app",
        factory=True,
        host=options.host,
        port=options.port,
        workers=count,
        log_level="info",
        **limits.uvicorn_options(options.forwarded_allow_ips),
    )


def _shown(url: str) -> str:
    """The database URL without its password."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def register(app: typer.Typer) -> None:
    app.command("serve", epilog=EXAMPLE)(serve)
