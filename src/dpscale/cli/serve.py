"""``dpscale serve``: the calculator pages, embed views and JSON API over HTTP (uvicorn)."""

from __future__ import annotations

import typer
from pydantic import BaseModel, ConfigDict, Field

from dpscale.cli._common import fail, read_input

EXAMPLE = "Example: dpscale serve --host 0.0.0.0 --port 8080 --workers 4"


class ServeInput(BaseModel):
    model_config = ConfigDict(frozen=True)

    host: str = Field(default="127.0.0.1", min_length=1, max_length=255)
    port: int = Field(default=8000, ge=1, le=65535)
    workers: int = Field(default=1, ge=1, le=256)


def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: str = typer.Option("8000", "--port", metavar="INT", help="Port to listen on."),
    workers: str = typer.Option(
        "1",
        "--workers",
        metavar="INT",
        help="Worker processes (share a database with DPSCALE_DATABASE_URL).",
    ),
) -> None:
    """Serve the web calculators on http://HOST:PORT (database: DPSCALE_DATABASE_URL)."""
    options = read_input(ServeInput, {"host": host, "port": port, "workers": workers})
    try:
        import uvicorn

        from dpscale.web.app import create_app  # noqa: F401 - fails early without the extra
    except ImportError as exc:
        fail(f"the web app needs the 'web' extra: pip install 'dpscale[web]' ({exc.name})")
    from dpscale.store.db import database_url, engine

    engine()  # create the tables now, so that a bad database URL is reported before serving
    typer.echo(f"dpscale: serving http://{options.host}:{options.port}/ ({_shown(database_url())})")
    uvicorn.run(
        "dpscale.web.app:create_app",
        factory=True,
        host=options.host,
        port=options.port,
        workers=options.workers,
        proxy_headers=True,
        log_level="info",
    )


def _shown(url: str) -> str:
    """The database URL without its password."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def register(app: typer.Typer) -> None:
    app.command("serve", epilog=EXAMPLE)(serve)
