"""Request guards of a shared server: which requests reach the app, and the headers every answer carries.

Registered on the Flask server by ``create_app`` with one call (``register_security``). In order, for
every request:

1. **Host** (DNS rebinding): the ``Host`` header must name this machine's loopback (``localhost``,
   ``127.0.0.1``, ``::1``, ``*.localhost``), the ``--host`` address, a name given with
   ``--allowed-host``, or, when bound to every interface (``0.0.0.0``/``::``), this machine's host
   name or one of its interface addresses. Anything else: 421 "unknown host". A page on another site
   whose name was re-pointed at 127.0.0.1 therefore reads nothing.
2. **Origin** (CSRF): a state-changing request (anything but GET/HEAD/OPTIONS: callbacks, upload)
   whose ``Sec-Fetch-Site`` is not ``same-origin``/``none``, or whose ``Origin`` is not this server's
   own (``null`` only with ``Sec-Fetch-Site: same-origin``), is refused with 403. Requests without
   either header (curl, scripts) pass.
3. **Token** (``--auth-token FILE`` or ``$TRACEDASH_AUTH_TOKEN``): without a valid session cookie, the
   page answers 401 with a small sign-in form (POSTed to the same address) and API paths a JSON 401;
   the form's token or ``Authorization: Bearer ...`` (scripts) is accepted and sets an HttpOnly,
   SameSite=Strict session cookie (a browser session). ``/healthz`` stays open (it names no trace).
4. **Callback bodies** (``/_dash-update-component``): at most ``MAX_CALLBACK_BYTES``; JSON with a
   non-finite number (``NaN``, ``Infinity``, ``1e400``) or an input of another kind than its
   component has in the page (``prop_kinds``) is refused with a 400 message before any callback runs; an exception in a
   callback answers JSON 500 with one line,
   never Flask's HTML page.

Every answer then gets ``Content-Security-Policy`` (scripts and styles from this server only; Dash's
own inline scripts allowed by their SHA-256 hashes, from ``Dash.csp_hashes``), ``X-Frame-Options:
DENY``, ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: same-origin`` and
``Cross-Origin-Opener-Policy``/``-Resource-Policy: same-origin``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import os
import socket
import threading
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from urllib.parse import urlsplit

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import HTTPException

log = logging.getLogger(__name__)

CALLBACK_PATH_SUFFIX = "_dash-update-component"
MAX_CALLBACK_BYTES = 10 * 1024**2
CALLBACK_BODY_TIMEOUT_S = 30
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "localhost.localdomain", "ip6-localhost"})
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
AUTH_ENV = "TRACEDASH_AUTH_TOKEN"
AUTH_COOKIE = "tracedash_session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass
class SecurityConfig:
    """What ``register_security`` enforces.

    Attributes:
        host: the address the server is bound to (``--host``); loopback names are always allowed.
        allowed_hosts: further names (or addresses) clients may use in ``Host`` (``--allowed-host``).
        auth_token: the shared team token (None: no sign-in).
        max_callback_bytes: the largest callback request body.
    """

    host: str = "127.0.0.1"
    allowed_hosts: tuple[str, ...] = ()
    auth_token: str | None = None
    max_callback_bytes: int = MAX_CALLBACK_BYTES
    _names: frozenset[str] = field(default=frozenset(), init=False, repr=False)

    def __post_init__(self):
        names = set(LOOPBACK_NAMES) | {_norm_host(h) for h in self.allowed_hosts if h}
        bind = _norm_host(self.host or "")
        if bind in WILDCARD_BINDS:
            names |= _this_machine_names()
        else:
            names.add(bind)
        self._names = frozenset(names)

    def host_allowed(self, host_header: str) -> bool:
        """Whether a ``Host`` header (with or without port) names this server."""
        name = _norm_host(_strip_port(host_header or ""))
        return bool(name) and (name in self._names or name.endswith(".localhost"))


def _norm_host(name: str) -> str:
    return name.strip().strip("[]").rstrip(".").lower()


def _strip_port(host: str) -> str:
    host = host.strip()
    if host.startswith("["):  # [::1]:8050
        return host[1 : host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host  # a bare IPv6 address or no port


def _this_machine_names() -> set[str]:
    """This machine's host names and interface addresses (for a server bound to every interface)."""
    names = {socket.gethostname().lower(), socket.getfqdn().lower()}
    try:
        import psutil

        for addrs in psutil.net_if_addrs().values():
            for a in addrs:
                if a.family in (socket.AF_INET, socket.AF_INET6):
                    names.add(a.address.split("%", 1)[0].lower())
    except Exception:  # noqa: BLE001 - no interface list: host names and loopback only
        pass
    return {_norm_host(n) for n in names if n}


def read_token(path: str | os.PathLike | None) -> str | None:
    """The team token: the first line of ``path`` (``--auth-token FILE``), else ``$TRACEDASH_AUTH_TOKEN``.

    Raises:
        ValueError: the file cannot be read, or the token is shorter than 16 characters.
    """
    token = None
    if path:
        try:
            token = Path(path).read_text(encoding="utf-8").strip().splitlines()[0].strip()
        except (OSError, UnicodeDecodeError, IndexError):
            raise ValueError(f"{path}: cannot read a token from this file (one line, UTF-8)") from None
    elif os.environ.get(AUTH_ENV):
        token = os.environ[AUTH_ENV].strip()
    if token is not None and len(token) < 16:
        raise ValueError("the auth token must have at least 16 characters (e.g. `openssl rand -hex 16`)")
    return token


def _session_value(token: str) -> str:
    return hmac.new(token.encode("utf-8"), b"tracedash session v1", hashlib.sha256).hexdigest()


def _reject_constant(name: str):
    raise ValueError(f"non-finite number {name}")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range ({text[:20]})")
    return value


URL_PROPS = frozenset({"search", "pathname", "hash", "href"})
_SCALAR = (str, int, float, bool, type(None))
MAX_TEXT_CHARS = 100_000


def id_key(cid) -> str | None:
    """A component id as a dictionary key: the string itself, or a pattern id's sorted JSON."""
    if isinstance(cid, str):
        return cid
    if isinstance(cid, dict):
        return json.dumps(cid, sort_keys=True, separators=(",", ":"))
    return None


def prop_kinds(layout) -> dict[tuple[str, str], str | dict]:
    """``(id_key, property) -> kind`` for every property set in a Dash layout tree, from its initial
    value: ``text``, ``number``, ``bool``, ``scalars`` (a list of text/numbers), ``list``, ``object``,
    or, for an object of scalars (a store's record), ``{key: kind}``: at least these keys, each of its kind.
    Unset (None) properties are absent: any JSON is accepted for them (the callbacks check)."""
    kinds: dict[tuple[str, str], str | dict] = {}
    comps = [layout, *layout._traverse()] if hasattr(layout, "_traverse") else []  # noqa: SLF001 - Dash's walker
    for comp in comps:
        cid = id_key(getattr(comp, "id", None))
        if cid is None:
            continue
        for prop in getattr(comp, "_prop_names", ()):
            value = getattr(comp, prop, None)
            kind = _kind_of(value)
            if kind == "object" and value and all(isinstance(v, _SCALAR) for v in value.values()):
                kind = {k: _kind_of(v) for k, v in value.items()}
            if prop in URL_PROPS and type(comp).__name__ == "Location":
                kind = "path" if prop == "pathname" else "text"
            if kind is None and prop == "value" and type(comp).__name__ == "Dropdown":
                options = getattr(comp, "options", None) or []
                if all(isinstance(o, dict) and isinstance(o.get("value"), str) for o in options):
                    kind = "scalars" if getattr(comp, "multi", False) else "text"  # trace ids and other names
            if kind is not None:
                kinds[(cid, prop)] = kind
    return kinds


def _kind_of(value) -> str | None:
    if value is None or hasattr(value, "_traverse"):
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, (list, tuple)):
        return "scalars" if all(isinstance(v, _SCALAR) for v in value) else "list"
    if isinstance(value, dict):
        return "object"
    return None


_KIND_WORDS = {
    "text": "text",
    "path": "a path starting with /",
    "number": "a number",
    "bool": "true or false",
    "scalars": "a list of values",
    "list": "a list",
    "object": "an object",
}


def check_kind(name: str, kind: str | dict, value) -> None:
    """Raise ValueError naming ``name`` when ``value`` is not of ``kind`` (see ``prop_kinds``); None
    passes except for a record."""
    if isinstance(kind, dict):
        if not isinstance(value, dict) or not set(kind) <= set(value):
            raise ValueError(
                f"{name}: expected an object with keys {', '.join(sorted(kind))}, got {json.dumps(value)[:60]}"
            )
        for key, sub in kind.items():
            if sub is not None:
                check_kind(f"{name}.{key}", sub, value[key])
        return
    if value is None:
        return
    ok = {
        "text": lambda v: isinstance(v, str) and len(v) <= MAX_TEXT_CHARS,
        "path": lambda v: isinstance(v, str) and v.startswith("/") and len(v) <= MAX_TEXT_CHARS,
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        "bool": lambda v: isinstance(v, bool),
        "scalars": lambda v: (
            isinstance(v, list)
            and len(v) <= 10_000
            and all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in v)
        ),
        "list": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }[kind](value)
    if not ok:
        if kind in ("text", "path") and isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
            raise ValueError(f"{name}: text of {len(value):,} characters (at most {MAX_TEXT_CHARS:,})")
        raise ValueError(f"{name}: expected {_KIND_WORDS[kind]}, got {json.dumps(value)[:60]}")


def parse_callback_body(raw: bytes, kinds: dict[tuple[str, str], str] | None = None) -> dict:
    """The JSON body of a Dash callback request, refusing what no page sends.

    ``kinds``: the page's property kinds (``prop_kinds``); each input and state value must match.

    Raises:
        ValueError: not UTF-8 JSON object, a non-finite number (``NaN``, ``Infinity``, ``1e400``),
            or a value of the wrong kind.
    """
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float)
    except UnicodeDecodeError:
        raise ValueError("the request body is not UTF-8") from None
    except RecursionError:
        raise ValueError("the request body is nested too deeply") from None
    if not isinstance(body, dict):
        raise ValueError("a callback request is a JSON object")
    for group in ("inputs", "state"):
        items = body.get(group) or []
        if not isinstance(items, list):
            raise ValueError(f"'{group}' must be a list")
        for item in items:
            for ref in item if isinstance(item, list) else [item]:  # pattern-matching inputs come as lists
                if not isinstance(ref, dict) or id_key(ref.get("id")) is None:
                    continue
                kind = (kinds or {}).get((id_key(ref["id"]), ref.get("property")))
                if kind is not None:
                    name = ref["id"] if isinstance(ref["id"], str) else ":".join(map(str, ref["id"].values()))
                    check_kind(f"{name}.{ref.get('property')}", kind, ref.get("value"))
    return body


def callback_mismatch(body: dict, callback_map: dict) -> str | None:
    """Why a parsed callback request names no callback of the app, or gives it the wrong number of
    inputs or states; None when it fits. The same lookups Dash makes (``callback_map[output]``, then
    one value per declared input and state), answered as a 400 instead of Dash's ``KeyError`` or
    ``CallbackException`` (a 500 with a traceback in the log).

    ``callback_map``: the Dash app's ``callback_map`` (output key -> {"inputs": [...], "state": [...]}).
    """
    output = body.get("output")
    callback = callback_map.get(output) if isinstance(output, str) else None
    if callback is None:
        return f"no callback has the output {str(output)[:80]!r}"
    for group in ("inputs", "state"):
        given, declared = len(body.get(group) or []), len(callback.get(group) or [])
        if given != declared:
            return f"'{group}' holds {given} value(s), the callback takes {declared}"
    return None


def content_security_policy(script_hashes: list[str]) -> str:
    """The CSP of every answer: scripts, styles, fonts, images and connections from this server only.

    ``script_hashes``: ``'sha256-...'`` sources of the Dash pages' inline scripts. Styles allow
    ``'unsafe-inline'`` (Plotly and AG Grid set element styles and insert style rules at run time;
    styles cannot run code). Images allow ``data:``/``blob:`` (Plotly's "download plot" and the SVG
    export build them in the page).
    """
    scripts = " ".join(["'self'", *sorted(set(script_hashes))])
    return (
        "default-src 'self'; "
        f"script-src {scripts}; "
        "style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data: blob:; "
        "font-src 'self' data:; "
        "connect-src 'self'; "
        "worker-src 'self' blob:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # links carry upload tokens: never sent to another site
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def _plain(status: int, message: str) -> Response:
    return Response(message + "\n", status=status, mimetype="text/plain")


def _json_error(status: int, message: str) -> Response:
    resp = jsonify({"error": message})
    resp.status_code = status
    return resp


_SIGN_IN = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>tracedash · sign in</title></head>
<body style="font-family: sans-serif; margin: 4em auto; max-width: 32em">
<h1>tracedash</h1><p>This server asks for the team's access token once per browser session.</p>
<form method="post" action="{action}"><label>Token <input name="token" type="password" autofocus
 autocomplete="current-password" size="40"></label> <button type="submit">Open</button></form>
{note}</body></html>"""


def _sign_in_page(bad: bool) -> Response:
    note = "<p role=\"alert\">That token is not right.</p>" if bad else ""
    html = _SIGN_IN.format(action=escape(request.full_path.rstrip("?")), note=note)
    return Response(html, status=401, mimetype="text/html")


def error_answer(status: int, message: str) -> Response:
    """An error in one line: JSON on API paths (any request but a GET; a GET of /healthz or of Dash's layout and
    dependencies), plain text elsewhere."""
    api = request.method != "GET" or request.path.endswith(("healthz", "_dash-layout", "_dash-dependencies"))
    return _json_error(status, message) if api else _plain(status, message)


def register_security(server: Flask, dash_apps: list, config: SecurityConfig | None = None) -> None:
    """Install the request guards and answer headers described in the module docstring on ``server``.

    ``dash_apps``: the Dash apps served by ``server`` (their inline scripts' hashes go into the CSP;
    the list may grow after this call, e.g. the compare page).
    """
    config = config or SecurityConfig()
    server.config["TRACEDASH_SECURITY"] = config
    session = _session_value(config.auth_token) if config.auth_token else None

    def check_host():
        if not config.host_allowed(request.host):
            return _plain(
                421,
                "this server does not answer to that host name (use its own address, or start "
                "it with --allowed-host NAME)",
            )
        return None

    def check_token():
        if session is None or request.path.endswith("/healthz"):
            return None
        if hmac.compare_digest(request.cookies.get(AUTH_COOKIE, ""), session):
            return None
        given, form = None, False
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            given = auth[7:].strip()
        elif request.method == "POST" and request.mimetype == "application/x-www-form-urlencoded":
            given, form = request.form.get("token"), True
        if given is not None and hmac.compare_digest(given.encode(), config.auth_token.encode()):
            if form:  # the sign-in form: back to the page asked for, with the session cookie
                resp = Response(status=303, headers={"Location": request.full_path.rstrip("?")})
                resp.set_cookie(
                    AUTH_COOKIE, session, httponly=True, samesite="Strict", path="/", secure=request.is_secure
                )
                return resp
            request.environ["tracedash.new_session"] = True
            return None
        if form or (request.method in SAFE_METHODS and request.accept_mimetypes.accept_html):
            return _sign_in_page(bad=given is not None)
        return _json_error(401, "this server needs the team's access token (open the page to sign in)")

    def check_origin():
        if request.method in SAFE_METHODS:
            return None
        origin = request.headers.get("Origin")
        site = request.headers.get("Sec-Fetch-Site")
        refused = _json_error(403, "refused: the request comes from another site")
        if site is not None and site not in ("same-origin", "none"):
            return refused
        if origin is None or (origin == "null" and site == "same-origin"):
            return None  # no browser's cross-site request (browsers send Origin on every cross-site POST)
        parts = urlsplit(origin)
        if origin == "null" or not parts.netloc or parts.netloc.lower() != request.host.lower():
            return refused
        return None

    def check_callback():
        if request.method != "POST" or not request.path.endswith(CALLBACK_PATH_SUFFIX):
            return None
        length = request.content_length
        if length is not None and length > config.max_callback_bytes:
            return _json_error(413, f"a callback request over {config.max_callback_bytes // 1024**2} MiB is refused")
        from dashboard.app.server import read_deadline

        timer, fired = read_deadline(request.environ, CALLBACK_BODY_TIMEOUT_S)  # a trickled body holds no thread long
        try:
            raw = request.stream.read(config.max_callback_bytes + 1)
        except Exception:  # noqa: BLE001 - cut off (or stopped by the deadline)
            raw = None
        finally:
            timer.cancel()
        if raw is None or fired.is_set():
            return _json_error(408 if fired.is_set() else 400, "the callback request did not arrive in full")
        if len(raw) > config.max_callback_bytes:
            return _json_error(413, f"a callback request over {config.max_callback_bytes // 1024**2} MiB is refused")
        try:
            body = parse_callback_body(raw, kinds_for(request.path))
            callbacks = callbacks_for(request.path)
            problem = callback_mismatch(body, callbacks) if callbacks else None
        except ValueError as exc:
            return _json_error(400, f"refused a malformed callback request: {exc}")
        except Exception:  # noqa: BLE001 - a shape no page sends (e.g. a list where an object goes)
            log.info("malformed callback request refused", exc_info=True)
            return _json_error(400, "refused a malformed callback request")
        if problem is not None:
            return _json_error(400, f"refused a malformed callback request: {problem}")
        request.environ["tracedash.callback_body"] = raw
        # Dash reads the body through Flask's cached JSON: give it the parsed value, never re-read the stream.
        request._cached_json = (body, body)  # noqa: SLF001 - Flask's documented cache slot for get_json
        return None

    kinds_cache: dict[str, dict] = {}
    kinds_lock = threading.Lock()

    def callbacks_for(path: str) -> dict:
        """The ``callback_map`` of the Dash app whose callback route ``path`` is ({} when none)."""
        for app in dash_apps:
            if path == app.config.routes_pathname_prefix + CALLBACK_PATH_SUFFIX:
                return app.callback_map
        return {}

    def kinds_for(path: str) -> dict:
        """The property kinds of the Dash app whose callback route ``path`` is (its layout, built once)."""
        with kinds_lock:
            if path not in kinds_cache:
                kinds = {}
                for app in dash_apps:
                    if path == app.config.routes_pathname_prefix + CALLBACK_PATH_SUFFIX:
                        try:  # every page's components: the validation layout when there is one
                            layout = app.validation_layout or app._layout_value()  # noqa: SLF001
                            kinds = prop_kinds(layout)
                        except Exception:  # noqa: BLE001 - no kinds: only the generic checks
                            log.exception("cannot read the layout's property kinds")
                kinds_cache[path] = kinds
            return kinds_cache[path]

    @server.before_request
    def guard():
        for check in (check_host, check_origin, check_token, check_callback):
            answer = check()
            if answer is not None:
                return answer
        return None

    csp_cache: dict[tuple, str] = {}

    def csp() -> str:
        hashes: list[str] = []
        for app in dash_apps:
            try:
                hashes.extend(app.csp_hashes())
            except Exception:  # noqa: BLE001 - an app not set up yet has no inline scripts
                pass
        key = tuple(sorted(set(hashes)))
        if key not in csp_cache:
            csp_cache[key] = content_security_policy(list(key))
        return csp_cache[key]

    @server.after_request
    def headers(resp: Response) -> Response:
        resp.headers["Content-Security-Policy"] = csp()
        for k, v in SECURITY_HEADERS.items():
            resp.headers.setdefault(k, v)
        if request.environ.get("tracedash.new_session") and session is not None:
            resp.set_cookie(AUTH_COOKIE, session, httponly=True, samesite="Strict", path="/", secure=request.is_secure)
        return resp

    @server.errorhandler(Exception)
    def any_error(exc):
        """Every error answers one line: JSON on API paths, plain text elsewhere; never a traceback."""
        if isinstance(exc, HTTPException):
            status, message = exc.code or 500, exc.description or exc.name
            if status == 404:
                message = "not found"
        else:
            log.exception("request %s %s failed", request.method, request.path)
            status, message = 500, "internal error on the server (see the server log)"
        return error_answer(status, message)
