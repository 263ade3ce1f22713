"""Who may talk to ``mnemo web``, and what every response says to the browser.

The web app serves a person's whole memory, so it trusts nothing by default:

* **A secret per store** (32 random bytes in a 0600 file under the mnemo home, named after the
  store): every API call carries it, as the session cookie a browser got at login
  (HttpOnly, SameSite=Strict, named after the store so two stores' apps on one host keep
  apart) or as ``Authorization: Bearer`` from a script.
* **One-time login links**: ``/login?t=…`` carries a nonce, an expiry and their HMAC under the
  secret. Any process holding the secret can mint one (``mnemo web`` again, while a server
  runs, prints a fresh link instead of a second server); the server accepts each nonce once.
* **Host check** against DNS rebinding: the Host header must be ``localhost`` or an IP
  literal (a rebinding attack needs a name it controls), with the server's port.
* **Origin check** against CSRF on every request that changes something: a browser's request
  must come from the app's own origin; a request without an Origin header must carry the
  bearer token (a browser never adds that by itself).
* **Headers**: a strict Content-Security-Policy (no inline script, nothing from elsewhere),
  nosniff, no framing, no referrer; API answers are never cached.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path

from .._settings.listen import host_header_ok

#: the policy of every page: the app's own files only, no inline script or style, no framing
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "worker-src 'self'; manifest-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
}
#: how long a login link stays usable, and a session cookie valid
LOGIN_SECONDS = 15 * 60
SESSION_SECONDS = 30 * 24 * 3600


def secret_path(home: Path, store_id: str) -> Path:
    """Where the web secret of the store ``store_id`` (its identity: a path or URL) lives."""
    return home / "web" / f"{hashlib.sha256(store_id.encode()).hexdigest()[:16]}.secret"


def load_secret(home: Path, store_id: str, *, create: bool = True) -> str | None:
    """The store's web secret, made (0600) on first use when ``create``; None when there is none."""
    path = secret_path(home, store_id)
    try:
        value = path.read_text("ascii").strip()
        if len(value) >= 32:
            return value
    except (OSError, UnicodeDecodeError):
        pass
    if not create:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_hex(32)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(value + "\n")
    os.replace(tmp, path)
    return value


def _sign(secret: str, message: str) -> str:
    return hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()


def cookie_name(store_id: str) -> str:
    """The session cookie's name: one per store (cookies are per host, not per port)."""
    return "mnemo_" + hashlib.sha256(store_id.encode()).hexdigest()[:10]


def session_value(secret: str) -> str:
    """The session cookie's value: derived from the secret, so the secret itself never sits in a cookie jar."""
    return _sign(secret, "session")


def login_token(secret: str, *, now: float | None = None) -> str:
    """A one-time login token: ``nonce.expiry.hmac``."""
    nonce = secrets.token_urlsafe(12)
    expires = int((now or time.time()) + LOGIN_SECONDS)
    return f"{nonce}.{expires}.{_sign(secret, f'login:{nonce}.{expires}')}"


class Gate:
    """The checks one server makes: credentials, Host and Origin, and the nonces already used."""

    def __init__(self, secret: str, store_id: str, port: int, *, tls: bool = False) -> None:
        self.secret = secret
        self.cookie = cookie_name(store_id)
        self.port = port
        self.tls = tls
        self._session = session_value(secret)
        self._used: dict[str, float] = {}

    def authorised(self, headers: dict[str, str], cookies: dict[str, str]) -> str | None:
        """How the request proves it may read the store: ``"cookie"``, ``"bearer"`` or None."""
        auth = headers.get("authorization", "")
        if auth[:7].lower() == "bearer " and hmac.compare_digest(auth[7:].strip().encode(), self.secret.encode()):
            return "bearer"
        got = cookies.get(self.cookie, "")
        if got and hmac.compare_digest(got.encode(), self._session.encode()):
            return "cookie"
        return None

    def host_ok(self, host: str | None) -> bool:
        """Whether the Host header names this server by a name no one else can point here."""
        return host_header_ok(host, self.port)

    def origin_ok(self, origin: str | None, host: str, how: str | None, fetch_site: str | None) -> bool:
        """Whether a request that changes something comes from the app itself: its Origin is
        this server (as the Host header names it), or it has no Origin and carries the bearer
        token (a script, not a browser page)."""
        if fetch_site and fetch_site not in ("same-origin", "none"):
            return False
        if not origin:
            return how == "bearer"
        scheme = "https" if self.tls else "http"
        return origin.lower() == f"{scheme}://{host.lower()}"

    def redeem(self, token: str, *, now: float | None = None) -> bool:
        """Accept a login token once: signed with this store's secret, not expired, not used."""
        now = now or time.time()
        self._used = {n: t for n, t in self._used.items() if t > now}
        try:
            nonce, expires_s, sig = token.split(".")
            expires = int(expires_s)
        except ValueError:
            return False
        if not hmac.compare_digest(sig.encode(), _sign(self.secret, f"login:{nonce}.{expires}").encode()):
            return False
        if expires < now or nonce in self._used:
            return False
        self._used[nonce] = float(expires)
        return True

    def session_cookie(self) -> str:
        """The Set-Cookie header value of a fresh session."""
        secure = "; Secure" if self.tls else ""
        return f"{self.cookie}={self._session}; Path=/; Max-Age={SESSION_SECONDS}; HttpOnly; SameSite=Strict{secure}"
