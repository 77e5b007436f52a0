"""``dpscale serve``: the calculator pages, embed views and JSON API over HTTP (uvicorn).

The defaults are safe to face the internet behind nothing but TLS: a request head must arrive
within 10 s and fit in 16 KiB, its body within 20 s more, a worker holds at most 1,000
connections (uvicorn answers 503 past that), idle keep-alive connections close after 5 s, and
proxy headers
(``X-Forwarded-For``, ``X-Forwarded-Proto``) are believed only from ``--forwarded-allow-ips``.
"""

from __future__ import annotations

import ipaddress

import click
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
    body_timeout: float = Field(default=20.0, gt=0, le=3600, allow_inf_nan=False)
    max_header_bytes: int = Field(default=16 * 1024, ge=1024, le=1024 * 1024)
    max_connections: int = Field(default=1000, ge=1, le=1_000_000)
    keep_alive: int = Field(default=5, ge=1, le=3600)
    forwarded_allow_ips: str = Field(default="", max_length=4000, pattern=r"^[0-9A-Za-z.:/,* ]*$")


def _not_an_address(value: str) -> str | None:
    """The first entry of ``--forwarded-allow-ips`` that is no address, network or '*' (a
    mistyped proxy, 999.9.9.9, had been taken and trusted nothing, without a word).

    >>> _not_an_address("10.0.0.5, 10.1.0.0/16,*,::1"), _not_an_address("999.9.9.9")
    (None, '999.9.9.9')
    """
    for entry in (item.strip() for item in value.split(",")):
        if entry in ("", "*"):
            continue
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return entry
    return None


def _option(name: str, metavar: str, help: str, default: str | None = None) -> click.Option:
    flag = "--" + name.replace("_", "-")
    return click.Option(
        [name, flag], default=default, metavar=metavar, help=help, show_default=bool(default)
    )


def serve(
    host: str,
    port: str,
    workers: str | None,
    header_timeout: str,
    body_timeout: str,
    max_header_bytes: str,
    max_connections: str,
    keep_alive: str,
    forwarded_allow_ips: str,
) -> None:
    """Serve the web calculators on http://HOST:PORT (database: DPSCALE_DATABASE_URL)."""
    options = read_input(
        ServeInput,
        {
            "host": host,
            "port": port,
            "workers": workers,
            "header_timeout": header_timeout,
            "body_timeout": body_timeout,
            "max_header_bytes": max_header_bytes,
            "max_connections": max_connections,
            "keep_alive": keep_alive,
            "forwarded_allow_ips": forwarded_allow_ips.strip(),
        },
    )
    wrong = _not_an_address(options.forwarded_allow_ips)
    if wrong is not None:
        fail(f"--forwarded-allow-ips: {wrong!r} is not an address, a network or '*'")
    try:
        from dpscale.web.server import (
            ServerLimits,
            check_app,
            default_workers,
            run,
            why_not_listening,
        )
    except ImportError as exc:
        fail(f"the web app needs the 'web' extra: pip install 'dpscale[web]' ({exc.name})")
    from dpscale.store.db import StoreUnavailableError, database_url, in_memory, shown_url

    if in_memory(database_url()):
        fail(
            f"DPSCALE_DATABASE_URL names a database in memory ({shown_url(database_url())}): "
            "each worker would keep its own and lose it on restart, with the feedback it "
            "acknowledged; name a file (sqlite:////srv/dpscale.sqlite3) or a server"
        )
    try:
        check_app()
    except ImportError as exc:
        fail(f"the web app needs the 'web' extra: pip install 'dpscale[web]' ({exc.name})")
    except (StoreUnavailableError, ValueError) as err:
        fail(str(err))
    refused = why_not_listening(options.host, options.port)
    if refused is not None:
        fail(refused)
    count = options.workers or default_workers()
    plural = "s" if count != 1 else ""
    click.echo(
        f"dpscale: serving http://{options.host}:{options.port}/ with {count} worker{plural} "
        f"({shown_url(database_url())})"
    )
    run(
        host=options.host,
        port=options.port,
        workers=count,
        limits=ServerLimits(
            header_timeout_s=options.header_timeout,
            body_timeout_s=options.body_timeout,
            max_header_bytes=options.max_header_bytes,
            max_connections=options.max_connections,
            keep_alive_s=options.keep_alive,
        ),
        forwarded_allow_ips=options.forwarded_allow_ips,
    )


SERVE = click.Command(
    "serve",
    callback=serve,
    params=[
        _option("host", "TEXT", "Address to listen on.", "127.0.0.1"),
        _option("port", "INT", "Port to listen on.", "8000"),
        _option(
            "workers",
            "INT",
            "Worker processes [default: the cores this process may use]. The response cache, "
            "the feedback rate limit and the costly-request turns are per worker.",
        ),
        _option(
            "header_timeout",
            "SECONDS",
            "Close a connection whose request line and headers take longer than this.",
            "10",
        ),
        _option(
            "body_timeout",
            "SECONDS",
            "Close a connection whose request body is not complete this long after its headers.",
            "20",
        ),
        _option(
            "max_header_bytes",
            "INT",
            "Refuse (431) a request line and headers larger than this.",
            "16384",
        ),
        _option(
            "max_connections",
            "INT",
            "Connections and requests per worker; past them, requests get 503.",
            "1000",
        ),
        _option("keep_alive", "SECONDS", "Close idle keep-alive connections after this.", "5"),
        _option(
            "forwarded_allow_ips",
            "ADDRESSES",
            "Proxies (comma-separated addresses or networks, '*' for any) whose "
            "X-Forwarded-For and X-Forwarded-Proto are believed; none by default.",
            "",
        ),
    ],
    help=serve.__doc__,
    epilog=EXAMPLE,
)


def register(group: click.Group) -> None:
    group.add_command(SERVE)
