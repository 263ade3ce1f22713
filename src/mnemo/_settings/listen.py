"""Where a local server of mnemo listens (the web app, the proxy): the address rules they share."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable
from typing import Any


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ::1, localhost)."""
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (``port`` 0: any free one), made here so that a port in use is one
    clear error, not the server's exit."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle's algorithm off only on sockets that say
    # they are TCP, and with it on, every answer on a kept-alive connection waited ~40 ms for the
    # client's delayed ACK between its headers and its body
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    # listening from here on: a client told the address before the server's loop runs is queued, not refused
    sock.listen(256)
    sock.set_inheritable(True)
    return sock


def base_url(host: str, port: int, tls: bool = False) -> str:
    """The server's address as a client should type it (127.0.0.1 for a wildcard bind)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "", "localhost") else ("[::1]" if host == "::" else host)
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"{'https' if tls else 'http'}://{shown}:{port}"


def host_header_ok(host: str | None, port: int) -> bool:
    """Whether a request's Host header names this server by a name no one else can point here:
    ``localhost`` or an IP address, with the server's port. A DNS rebinding attack needs a
    host name the attacker controls, so it is refused."""
    if not host:
        return False
    name, _, got = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if not name:
        name, got = host, ""
    if got and got != str(port):
        return False
    if not got and port not in (80, 443):
        return False
    name = name.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


async def read_body(receive: Callable[[], Awaitable[dict[str, Any]]], headers: dict[str, str], limit: int) -> bytes | None:
    """An ASGI request's body, or None when it is over ``limit`` bytes: refused from its declared
    length before reading, or as soon as what arrived passes the limit."""
    try:
        if int(headers.get("content-length") or 0) > limit:
            return None
    except ValueError:
        return None
    chunks, size = [], 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)
