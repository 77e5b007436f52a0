"""Pages built on the event loop take turns in arrival order, one per pass of the loop; a served
worker builds what every page shares before its first connection."""

from __future__ import annotations

import asyncio
import gc

import pytest
from fastapi.responses import Response
from starlette.exceptions import HTTPException

from dpscale.web import context, views
from dpscale.web.app import create_served_app
from dpscale.web.i18n import LANGUAGES
from dpscale.web.registry import calculators


def test_pages_are_built_in_arrival_order_with_a_loop_pass_between_each() -> None:
    seen: list[str] = []

    async def scenario() -> list[bytes]:
        loop = asyncio.get_running_loop()
        turns = views._Turns(loop)

        def page(n: int) -> Response:
            seen.append(f"build {n}")
            # Anything the loop has to do meanwhile (reading sockets, accepting) runs before
            # the next page is built.
            loop.call_soon(seen.append, f"loop {n}")
            return Response(str(n))

        built = await asyncio.gather(*(turns.build(lambda n=n: page(n)) for n in range(3)))
        return [response.body for response in built]

    assert asyncio.run(scenario()) == [b"0", b"1", b"2"]
    assert seen == ["build 0", "loop 0", "build 1", "loop 1", "build 2", "loop 2"]


def test_an_error_reaches_its_own_request_and_the_next_page_is_still_built() -> None:
    async def scenario() -> tuple[int, bytes]:
        turns = views._Turns(asyncio.get_running_loop())

        def missing() -> Response:
            raise HTTPException(404)

        failed = turns.build(missing)
        fine = turns.build(lambda: Response("next"))
        with pytest.raises(HTTPException) as raised:
            await failed
        return raised.value.status_code, (await fine).body

    assert asyncio.run(scenario()) == (404, b"next")


def test_a_served_worker_has_every_article_built_and_its_start_up_frozen() -> None:
    create_served_app()
    try:
        assert gc.get_freeze_count() > 0
        assert context._article.cache_info().currsize == len(calculators()) * len(LANGUAGES)
    finally:
        gc.unfreeze()
