"""The daemon's local HTTP endpoint: /status (JSON), /peers, /metrics (Prometheus)."""
from __future__ import annotations

from typing import Any, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from swarmnode.status.prometheus import make_registry


class StatusServer:
    def __init__(self, snapshot: Callable[[], dict[str, Any]], host: str, port: int, prometheus: bool):
        self._snapshot = snapshot
        self._host, self._port = host, port
        self._registry = make_registry(snapshot) if prometheus else None
        self._runner: web.AppRunner | None = None
        self.url: str | None = None

    async def start(self) -> str:
        app = web.Application()
        app.router.add_get("/status", self._status)
        app.router.add_get("/peers", self._peers)
        if self._registry is not None:
            app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # the real port when 0 was asked for
        self.url = f"http://{self._host}:{port}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _status(self, request: web.Request) -> web.Response:
        return web.json_response(self._snapshot())

    async def _peers(self, request: web.Request) -> web.Response:
        return web.json_response({"peers": self._snapshot()["peers"]})

    async def _metrics(self, request: web.Request) -> web.Response:
        body = generate_latest(self._registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})
