"""Running ``mnemo proxy``: the store through the front door, the upstream from the settings, uvicorn."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._settings.listen import base_url, bind, is_loopback
from ..errors import InvalidInputError

if TYPE_CHECKING:
    from .._settings.config import Config

DEFAULT_PORT = 8766


def serve(config: "Config", *, host: str, port: int, upstream: str | None, recall_seconds: float, capture: bool,
          say: Callable[[str], None]) -> dict[str, Any]:
    """Serve until interrupted; returns how many memories its captures saved."""
    import uvicorn

    from .._settings import door
    from .._settings.config import home as mnemo_home
    from .app import ProxyApp, Settings

    target = (upstream or config["llm_base_url"] or "").rstrip("/")
    if not target.startswith(("http://", "https://")):
        raise InvalidInputError("mnemo proxy needs an upstream: --upstream URL or the setting llm_base_url "
                                "(e.g. https://api.deepseek.com/v1 or http://localhost:11434/v1)")
    try:
        listener = bind(host, port)
    except OSError as exc:
        raise InvalidInputError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); choose another with --port") from None
    port = listener.getsockname()[1]
    settings = Settings(
        upstream=target, upstream_key=os.environ.get(config["llm_api_key_env"], ""), scope=config["scope"],
        budget_tokens=config["context_budget_tokens"], top_k=config["context_top_k"], recall_seconds=recall_seconds,
        capture=capture, capture_llm=bool(config["capture_llm"]), require_key=not is_loopback(host), port=port, home=mnemo_home())
    with contextlib.ExitStack() as stack:
        stack.callback(listener.close)
        m = stack.enter_context(door.opened(config, create=True, notice=say))
        serving = door.Serving(lambda: m, scope=config["scope"], idle_after=2.0)
        app = ProxyApp(serving, settings)
        app.start()
        stack.callback(app.stop)
        url = base_url(host, port)
        say(f"mnemo proxy at {url}/v1 → {target} (memory scope {config['scope']}; Ctrl-C stops it)")
        say(f"point a chat client at base URL {url}/v1" + (" with a proxy key (mnemo proxy key add)" if settings.require_key else
                                                          " with its usual API key, or a proxy key for another scope"))
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off",
                                               access_log=False, server_header=False, timeout_keep_alive=30))
        server.run(sockets=[listener])
    return {"url": base_url(host, port), "upstream": target, "captured": app.captured}
