"""``dealer serve``: the read-only status page (Starlette, uvicorn; dealer-moderator[web]),
read through :mod:`dealer.views` one read-only transaction a request, from the autoescaped
templates under ``templates/web/`` (docs/WEB.md)."""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable

from jinja2 import Environment, FileSystemLoader, select_autoescape
from sqlalchemy.orm import Session, sessionmaker

from dealer import views
from dealer.render import templates_dir

log = logging.getLogger("dealer.web")

POLL_SECONDS = 5
"""How often an open page asks whether anything changed."""


def _environment(poll_seconds: float) -> Environment:
    """The HTML templates, autoescaped."""
    env = Environment(
        loader=FileSystemLoader(str(templates_dir() / "web")),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True, lstrip_blocks=True,
    )
    env.globals["poll_seconds"] = poll_seconds
    return env


def create_app(sessions: sessionmaker[Session], poll_seconds: float = POLL_SECONDS) -> Any:
    """The ASGI app over the store; an open page polls for changes every ``poll_seconds``."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    env = _environment(poll_seconds)

    def read(fn: Callable[[Session], Any]) -> Any:
        with sessions.begin() as session:
            return fn(session)

    def read_page(fn: Callable[[Session], Any]) -> tuple[Any, str]:
        """A page's data and the change mark it was read at, in one transaction: no change is missed."""
        with sessions.begin() as session:
            return fn(session), views.change_mark(session)

    def guarded(endpoint: Callable[[Request], Response], api: bool = False) -> Callable[[Request], Response]:
        """No such game or player is a 404; a store that does not answer is a 503 saying so
        (the page tries again later)."""
        from sqlalchemy.exc import DBAPIError

        def run(request: Request) -> Response:
            try:
                return endpoint(request)
            except views.NotFound as exc:
                return _json({"error": str(exc)}, 404) if api else page("missing.html", status=404, why=str(exc))
            except DBAPIError:
                log.warning("the store did not answer for %s", request.url.path, exc_info=True)
                why = "the game store does not answer right now; try again in a moment"
                if api:
                    return _json({"error": why}, 503)
                return page("missing.html", status=503, why=why, heading="Unavailable")

        return run

    def page(template: str, status: int = 200, **context: Any) -> Response:
        html = env.get_template(template).render(**context)
        return HTMLResponse(html, status_code=status, headers=_HEADERS)

    def front(request: Request) -> Response:
        data, mark = read_page(views.front_page)
        return page("front.html", front=data, mark=mark)

    def game(request: Request) -> Response:
        game_id = request.path_params["game_id"]
        epoch = _epoch(request.query_params.get("epoch"))
        data, mark = read_page(lambda s: views.game_page(s, game_id, epoch))
        return page("game.html", page=data, g=data["game"], mark=mark)

    def player(request: Request) -> Response:
        data, mark = read_page(lambda s: views.player_page(s, request.path_params["name"]))
        return page("player.html", page=data, p=data["player"], mark=mark)

    def api_game(request: Request) -> Response:
        return _json(read(lambda s: views.public_game_view(s, request.path_params["game_id"])))

    def api_player(request: Request) -> Response:
        return _json(read(lambda s: views.public_player_view(s, request.path_params["name"])))

    def changes(request: Request) -> Response:
        return _json({"mark": read(views.change_mark)})

    def _json(data: Any, status: int = 200) -> Response:
        return JSONResponse(data, status_code=status, headers=_HEADERS)

    routes = [
        Route("/", guarded(front)),
        Route("/games/{game_id:path}", guarded(game)),
        Route("/players/{name:path}", guarded(player)),
        Route("/api/games/{game_id:path}", guarded(api_game, api=True)),
        Route("/api/players/{name:path}", guarded(api_player, api=True)),
        Route("/api/changes", guarded(changes, api=True)),
        Mount("/static", StaticFiles(directory=str(templates_dir() / "web" / "static")), name="static"),
    ]
    return Starlette(routes=routes)


# The page loads only its own script and style sheet, and no frame may embed it.
_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _epoch(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def server(sessions: sessionmaker[Session], host: str, port: int,
           poll_seconds: float = POLL_SECONDS) -> Any:
    """A uvicorn server of the app (``.run()`` blocks; ``.should_exit = True`` stops it)."""
    import uvicorn

    config = uvicorn.Config(create_app(sessions, poll_seconds), host=host, port=port, log_level="warning",
                            access_log=False, lifespan="off")
    return uvicorn.Server(config)


def serve_in_thread(sessions: sessionmaker[Session], host: str, port: int,
                    poll_seconds: float = POLL_SECONDS) -> Any:
    """Start the status page in a daemon thread beside ``dealer run``; return its server."""
    running = server(sessions, host, port, poll_seconds)
    thread = threading.Thread(target=running.run, name="dealer-web", daemon=True)
    thread.start()
    log.info("status page on http://%s:%s/", host, port)
    return running
