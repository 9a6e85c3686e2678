"""What a secret is and how it is redacted, for every layer (a leaf module: imports nothing of evalh).

Two complementary rules, one marker (:data:`MARKER`, ``[REDACTED]``):

* **By name** (structural): a value whose key looks secret (:func:`is_secret_key`) is replaced in
  config copies (:func:`redact_config`): API keys, auth-like headers, body fields, test options, the
  whole ``env:`` map, and inside every string the URL userinfo and secret-looking query values
  (:func:`scrub_urls`).
* **By value**: every secret value actually used in the run is registered (:func:`register`,
  :func:`register_url`, :func:`register_headers`, :func:`register_config`) with its derived forms
  (``base64(user:password)`` as sent in ``Authorization: Basic``, base64 of the value, URL- JSON- and
  HTML-escaped forms), and :func:`redact_text` / :func:`redact_bytes` replace each occurrence in any
  string that leaves the process: reports, console, log and error messages, cache contents.

Values shorter than :data:`MIN_VALUE_LENGTH` characters are not registered (replacing every ``abc`` in a
report would destroy it); they are still redacted by name. Each run registers in a registry of its own
(:func:`run_registry`, entered by every run entry point), over the process's: a run's text is redacted of
its own secrets and the enclosing ones, never of a concurrent run's. When a run ends, its values join the
enclosing registry (its results are still shown after it), which only grows: redacting a value an earlier
run used is the worst it does.
"""

from __future__ import annotations

import base64
import functools
import html
import itertools
import json
import re
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Generic, NamedTuple, TextIO, TypeVar
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

__all__ = [
    "ENVIRONMENT_MIN_VALUE_LENGTH",
    "MARKER",
    "MIN_VALUE_LENGTH",
    "RedactedConfig",
    "clear_registry",
    "environment_secrets",
    "holds_nothing_to_redact",
    "is_secret_key",
    "redact_bytes",
    "redact_config",
    "redact_json_text",
    "redact_text",
    "redact_value",
    "redacted_stdio",
    "redaction_state",
    "register",
    "register_config",
    "register_environment",
    "register_headers",
    "register_url",
    "registered",
    "run_registry",
    "scrub_url",
    "scrub_urls",
    "secret_header_values",
    "url_secrets",
    "walked_config",
]

MARKER = "[REDACTED]"
_MARKER_BYTES = MARKER.encode()
MIN_VALUE_LENGTH = 6

_Text = TypeVar("_Text", str, bytes)

# Word parts (of camelCase, snake_case, kebab-case, dotted names) that make a key secret ...
_SECRET_WORDS = frozenset(
    {
        "auth",
        "authn",
        "authz",
        "authorization",
        "authentication",
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "signature",
        "sig",
        "cookie",
        "cookies",
        "session",
        "sessionid",
        "credential",
        "credentials",
        "private",
        "bearer",
        "jwt",
    }
)
# ... a part glued from words without a separator ("accesstoken", "x-apikey", "dbpassword") ...
_SECRET_ENDINGS = ("token", "secret", "password", "passwd", "apikey", "accesskey", "secretkey", "privatekey")
# ... unless the last part says the value is about the secret, not the secret (apiKeyEnvar, tokenLimit).
_HARMLESS_LAST_PARTS = frozenset(
    {"envar", "env", "name", "count", "limit", "limits", "type", "length", "usage", "file", "path", "url"}
)
_WORD_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>`]+")
_SCHEMES = ("bearer ", "basic ", "token ", "bot ", "apikey ")


def _parts(name: str) -> list[str]:
    return [part.lower() for part in _WORD_PART.findall(name)]


def is_secret_key(name: object) -> bool:
    """Whether a key (config key, header name, query parameter, env name) names a secret.

    ``apiKey``, ``X-Env-Auth``, ``OPENAI_API_KEY``, ``sessionToken``, ``accesstoken``, ``sig`` are;
    ``max_tokens``, ``tokens``, ``keywords``, ``monkey``, ``author``, ``apiKeyEnvar`` are not."""
    return _is_secret_name(name if isinstance(name, str) else str(name))


@functools.lru_cache(maxsize=4096)  # a 10,000-test config asks about the same few keys again and again
def _is_secret_name(name: str) -> bool:
    parts = _parts(name)
    if not parts or parts[-1] in _HARMLESS_LAST_PARTS:
        return False
    return any(part in _SECRET_WORDS or part.endswith(_SECRET_ENDINGS) for part in parts)


# -- URLs --------------------------------------------------------------------------------------------


def url_secrets(url: str) -> list[str]:
    """The secrets a URL carries: its userinfo password (or a lone user, often a token), the
    ``user:password`` pair as sent in Basic auth, and the values of secret-looking query parameters."""
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return []
    found: list[str] = []
    if password:
        found += [unquote(password), f"{unquote(username or '')}:{unquote(password)}"]
    elif username:
        found.append(unquote(username))
    found += [value for name, value in parse_qsl(parts.query) if is_secret_key(name) and value]
    return found


def scrub_url(url: str) -> str:
    """``url`` with its password (or lone user name) and secret-looking query values as the marker."""
    try:
        parts = urlsplit(url)
        username, password = parts.username, parts.password
    except ValueError:
        return url
    netloc = parts.netloc
    query = "&".join(_scrub_pair(pair) for pair in parts.query.split("&")) if parts.query else ""
    if "@" not in netloc and query == parts.query:
        return url  # nothing to hide: the text stays exactly as written
    if "@" in netloc:
        host = netloc.rsplit("@", 1)[1]
        netloc = f"{username}:{MARKER}@{host}" if password is not None else f"{MARKER}@{host}"
    scrubbed = f"{parts.scheme}://{netloc}{parts.path}"
    if query:
        scrubbed += f"?{query}"
    return scrubbed + (f"#{parts.fragment}" if parts.fragment else "")


def _scrub_pair(pair: str) -> str:
    name, sep, value = pair.partition("=")
    return f"{name}={MARKER}" if sep and value and is_secret_key(unquote(name)) else pair


def scrub_urls(text: str) -> str:
    """Every URL inside ``text`` scrubbed (:func:`scrub_url`)."""
    if "://" not in text:
        return text
    return _URL.sub(lambda match: scrub_url(match.group(0)), text)


# -- headers -----------------------------------------------------------------------------------------


def secret_header_values(headers: Mapping[str, Any]) -> list[str]:
    """The values of secret-looking headers, and of ``Bearer x`` / ``Basic x`` their token (and the
    decoded ``user:password`` of Basic)."""
    found: list[str] = []
    for name, value in headers.items():
        if not is_secret_key(name) or value is None:
            continue
        text = str(value)
        found.append(text)
        scheme, _, token = text.partition(" ")
        if token and f"{scheme.lower()} " in _SCHEMES:
            found.append(token.strip())
            if scheme.lower() == "basic":
                found += _basic_parts(token.strip())
    return found


def _basic_parts(token: str) -> list[str]:
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except ValueError:
        return []
    return [decoded, decoded.partition(":")[2]]


# -- structural redaction of config copies -----------------------------------------------------------


_PLAIN = (int, float, bool, type(None))


class RedactedConfig(dict[str, Any]):
    """A config mapping :func:`redact_config` made (``Suite.raw_config`` as the load makes it), so a
    report may echo it without walking it again. A plain mapping (a suite built by hand, a merged
    shard's config) is walked: only this type says the walk was done."""

    @classmethod
    def of(cls, config: Any) -> RedactedConfig:
        """``config`` redacted: the walk of the config being loaded (:func:`walked_config`) when it is
        that config and still current, else a walk of its own."""
        walk = _LOADED.get()
        redacted = walk.redacted() if walk is not None and walk.config is config else redact_config(config)
        return cls(redacted if isinstance(redacted, Mapping) else {})


def holds_nothing_to_redact(value: Any) -> bool:
    """Whether :func:`redact_config` gives ``value`` back unchanged: nothing in it is what the secrets
    module redacts (a secret-looking key's value, an ``env`` map, a URL, a registered secret's form).
    What may be kept outside the process (a parsed config, a test's digest) is asked this. Answered from
    the one walk of the config being loaded (:func:`walked_config`) when ``value`` is that config or
    one of its tests and the walk was done at the registry's present state; else by a walk of its own."""
    walk = _LOADED.get()
    if walk is not None:
        known = walk.answer(value)
        if known is not None:
            return known
    redacted = redact_config(value)
    return redacted is value or (type(value) is str and redacted == value)


class _ConfigWalk:
    """The redaction walk of one loaded config (after its secrets are registered), shared by whatever
    asks about it during the load: the parsed-config cache, the test digests and the report's echo,
    which each walked the config (or each test) again. Done on the first need of the whole config;
    valid while no secret is registered after it (the registry's change token and the run's registry
    are the same), else redone."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self._state: tuple[_Registry, int] | None = None
        self._redacted: Any = None
        # id -> (a test of the config, its redacted counterpart): the items of its top-level lists,
        # each redacted by redact_config itself in the walk
        self._parts: dict[int, tuple[Any, Any]] = {}

    def redacted(self) -> Any:
        """:func:`redact_config` of the config at the registry's present state (walked once)."""
        state = (_RUN.get(), _CHANGES[0])
        if self._state != state:
            self._redacted = redact_config(self.config)
            self._parts = self._parts_of(self.config, self._redacted)
            self._state = state
        return self._redacted

    def found_unchanged(self) -> None:
        """Record that redact_config gives the config back unchanged at the registry's present state
        (:func:`_nothing_to_register_or_redact` found so), without its walk."""
        self._redacted = self.config
        self._parts = self._parts_of(self.config, self.config)
        self._state = (_RUN.get(), _CHANGES[0])

    def answer(self, value: Any) -> bool | None:
        """Whether ``value`` holds nothing to redact, when the walk knows (None: it does not)."""
        if value is self.config:
            return self.redacted() is value
        if self._state != (_RUN.get(), _CHANGES[0]):
            return None  # not walked yet (a test asked alone is walked alone), or secrets registered since
        part = self._parts.get(id(value))
        return None if part is None or part[0] is not value else part[1] is value

    @staticmethod
    def _parts_of(config: Any, redacted: Any) -> dict[int, tuple[Any, Any]]:
        """The dict items of the config's top-level lists, by id, with their counterparts in ``redacted``
        (_redact_mapping gives such a list's item redact_config(item), or the list itself back)."""
        parts: dict[int, tuple[Any, Any]] = {}
        if type(config) is not dict or not isinstance(redacted, dict):
            return parts
        for key, items in config.items():
            if type(key) is not str or type(items) is not list or _is_secret_name(key):
                continue
            counterpart = redacted.get(key)
            if type(counterpart) is not list or len(counterpart) != len(items):
                continue
            pairs = zip(items, counterpart, strict=True)
            parts.update((id(item), (item, new)) for item, new in pairs if type(item) is dict)
        return parts


_LOADED: ContextVar[_ConfigWalk | None] = ContextVar("evalh_loaded_config", default=None)


@contextmanager
def walked_config(config: Any, *, register: bool = False) -> Iterator[None]:
    """Within the block, :func:`holds_nothing_to_redact` and :meth:`RedactedConfig.of` answer about
    ``config`` (a config being loaded, its secrets registered) and its tests from one walk.
    ``register``: first register the config's secrets (:func:`register_config`); a config holding nothing
    to register nor to redact (most configs) is found so by one walk that does neither, instead of
    register_config's walk and redact_config's."""
    walk = _ConfigWalk(config)
    if register:
        if _nothing_to_register_or_redact(config):
            walk.found_unchanged()
        else:
            register_config(config)
    token = _LOADED.set(walk)
    try:
        yield
    finally:
        _LOADED.reset(token)


def redact_config(value: Any) -> Any:
    """``value`` (JSON-like) for a report: values of secret-looking keys and of every ``env`` map
    replaced by the marker; URLs scrubbed and registered secret values replaced in every string.

    A mapping or list with nothing to redact is returned as it is, not copied (a copy of a
    50,000-test config beside the config itself doubled its memory): treat the result as read-only."""
    kind = type(value)
    if kind is str:
        return _redact_string(value)
    if kind in _PLAIN:
        return value
    if kind is dict:  # a dict without the ABC check: 100,000s of values
        return value if _holds_nothing(value) else _redact_mapping(value, True)
    if isinstance(value, Mapping):
        return _redact_mapping(value, False)
    if isinstance(value, list | tuple):
        return _redact_items(value, kind is list)
    return value


# The walk below handles strings and plain values in its loops rather than by a call per value: a
# 5,000-test config is 450,000 values, and a call each cost a fifth of the time to redact it.


# Keys found harmless (a string, not secret-looking): the few names of a config's small mappings, so a
# set lookup answers for them; bounded, as a config's vars may use any number of names.
_HARMLESS_KEYS: set[str] = set()
_HARMLESS_KEYS_MAX = 4096


def _holds_nothing(value: dict[Any, Any]) -> bool:
    """Whether :func:`_redact_mapping` would return the dict ``value`` itself, decided without its walk
    (a report redacts 30,000 assertions of a few keys each): every key a string that is not
    secret-looking, every value plain or a string without a URL and too short for every registered
    form. Anything else (a nested value, ``env``'s mapping, a URL, a string a form fits in) is for the
    walk to decide."""
    forms, _, shortest = _RUN.get().text
    harmless = _HARMLESS_KEYS
    for key, item in value.items():
        if (key not in harmless or type(key) is not str) and not _learnt_harmless(key):
            return False
        kind = type(item)
        if kind is str:
            if "://" in item or (forms and len(item) >= shortest):
                return False
        elif kind not in _PLAIN:
            return False
    return True


def _learnt_harmless(key: Any) -> bool:
    """Whether a key not known harmless is a string that is not secret-looking (then it is known so)."""
    if type(key) is not str or _is_secret_name(key):
        return False
    if len(_HARMLESS_KEYS) < _HARMLESS_KEYS_MAX:
        _HARMLESS_KEYS.add(key)
    return True


def _nothing_to_register_or_redact(config: Any) -> bool:
    """True when :func:`register_config` would register nothing from ``config`` and :func:`redact_config`
    would give it back itself: no secret-looking key, no ``env`` mapping, no URL, no text a registered
    form is in, nothing but dicts, lists, text keys and plain values. False means "not sure" (the
    caller walks as before)."""
    forms, _, shortest = _RUN.get().text
    harmless = _HARMLESS_KEYS
    open_nodes: list[Any] = [config]
    while open_nodes:
        node = open_nodes.pop()
        if type(node) is dict:
            for key, item in node.items():
                if (key not in harmless or type(key) is not str) and not _learnt_harmless(key):
                    return False
                kind = type(item)
                if kind is str:
                    if "://" in item or (forms and len(item) >= shortest and redact_text(item) is not item):
                        return False
                elif kind is dict or kind is list:
                    if kind is dict and key == "env":
                        return False
                    open_nodes.append(item)
                elif kind not in _PLAIN:
                    return False
        elif type(node) is list:  # the same for each item (a call each would cost a third more)
            for item in node:
                kind = type(item)
                if kind is str:
                    if "://" in item or (forms and len(item) >= shortest and redact_text(item) is not item):
                        return False
                elif kind is dict or kind is list:
                    open_nodes.append(item)
                elif kind not in _PLAIN:
                    return False
        else:
            return False  # a config that is not a mapping nor a list
    return True


def _redact_mapping(value: Mapping[Any, Any], is_dict: bool) -> Any:
    forms, _, shortest = _RUN.get().text  # a text shorter than every form holds none
    out: dict[str, Any] = {}
    same = is_dict
    for key, item in value.items():
        name = key if type(key) is str else str(key)
        kind = type(item)
        new: Any
        if kind is str:
            if item and _is_secret_name(name):
                new = MARKER
            else:
                new = _redact_string(item) if (forms and len(item) >= shortest) or "://" in item else item
        elif _is_secret_name(name) and _filled(item):
            new = MARKER
        elif name == "env" and isinstance(item, Mapping):
            new = {str(k): MARKER if _filled(v) else v for k, v in item.items()}
        elif kind in _PLAIN:
            new = item
        else:
            new = redact_config(item)
        out[name] = new
        same = same and new is item and name is key
    return value if same else out


def _redact_items(value: list[Any] | tuple[Any, ...], is_list: bool) -> Any:
    forms, _, shortest = _RUN.get().text
    items: list[Any] = []
    same = is_list
    for item in value:
        kind = type(item)
        new: Any
        if kind is str:
            new = _redact_string(item) if (forms and len(item) >= shortest) or "://" in item else item
        elif kind in _PLAIN:
            new = item
        else:
            new = redact_config(item)
        items.append(new)
        same = same and new is item
    return value if same else items


def redact_json_text(text: str) -> str:
    """``text`` redacted as :func:`redact_config` redacts a string and, when it is a JSON object or array
    (an OpenTelemetry span's ``tool.arguments``), as it redacts that value: its secret-looking keys too.
    Rewritten as compact JSON only when something was redacted inside it."""
    head = text.lstrip()[:1]
    if head in ("{", "["):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict | list):
            redacted = redact_config(parsed)
            if redacted is not parsed:
                return json.dumps(redacted, ensure_ascii=False, separators=(",", ":"))
    return _redact_string(text)


def _redact_string(text: str) -> str:
    """:func:`redact_text` of :func:`scrub_urls`, with a text without URL not scanned for one."""
    if "://" in text:
        text = scrub_urls(text)
    return redact_text(text)


def redaction_state() -> object:
    """A token of what :func:`redact_config` replaces by value (the registered forms): the same object
    while no value is registered, so a redaction kept from before is still the one it would make."""
    return _RUN.get().text


def _filled(value: Any) -> bool:
    return value is not None and value != "" and not isinstance(value, bool)


# -- value-based redaction ---------------------------------------------------------------------------


class _Forms(NamedTuple, Generic[_Text]):
    """Registered forms, longest first, and their guards: the forms that contain no other form. Every
    form contains a guard (or is one), so a text holding no guard, or shorter than the shortest form,
    holds no form and is returned as it is, without a scan per form (a registered key has half a
    dozen forms, and a 5,000-test report has a million strings)."""

    forms: tuple[_Text, ...]
    guards: tuple[_Text, ...]
    shortest: int


def _forms_of(values: Iterable[_Text]) -> _Forms[_Text]:
    forms = tuple(sorted(values, key=len, reverse=True))
    guards = tuple(form for form in forms if not any(other != form and other in form for other in forms))
    return _Forms(forms, guards, min(map(len, forms), default=sys.maxsize))


class _Registry:
    """The secret values of a run (every derived form, with those of the enclosing registry), longest first.

    Replacing is done with C-speed substring searches: a form absent from the text (the usual case)
    costs one scan, so a 50 MB report with a few dozen forms is redacted in a fraction of a second."""

    def __init__(self, parent: _Registry | None = None) -> None:
        self._lock = threading.Lock()
        self.parent = parent
        self._values: set[str] = set()  # registered here (a run's), not in the parent
        self._seen: set[str] = set()  # values already expanded: registering one again costs a lookup
        self._at = -1  # the change count the forms were built at
        # each replaced whole, never in place: a reader takes forms and guards of one registry state
        self._text: _Forms[str] = _forms_of(())
        self._bytes: _Forms[bytes] = _forms_of(())

    @property
    def text(self) -> _Forms[str]:
        if self._at != _CHANGES[0]:  # a value was registered here, or outside the run meanwhile
            self._rebuild()
        return self._text

    @property
    def bytes(self) -> _Forms[bytes]:
        if self._at != _CHANGES[0]:
            self._rebuild()
        return self._bytes

    def _rebuild(self) -> None:
        with self._lock:
            at = _CHANGES[0]
            text = _forms_of(self.values())
            self._text, self._bytes = text, _forms_of(v.encode("utf-8", "surrogatepass") for v in text.forms)
            self._at = at

    def add(self, values: Iterable[str]) -> None:
        new = {value for value in values if value not in self._seen}
        if not new:
            return
        fresh = {form for value in new for form in _forms(value)} - self._values
        with self._lock:
            self._seen |= new
            if fresh:
                self._values |= fresh
                _CHANGES[0] = next(_TOKENS)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
            self._seen.clear()
            _CHANGES[0] = next(_TOKENS)

    def values(self) -> frozenset[str]:
        inherited = self.parent.values() if self.parent is not None else frozenset()
        return inherited | self._values

    def fold_into_parent(self) -> None:
        """The run is over: what it registered stays redacted for the enclosing one (its results are
        still reported after the run: ``RunResult.to_dict()``, a failed check's text, an error)."""
        if self.parent is not None:
            with self.parent._lock:
                self.parent._values |= self._values
                self.parent._seen |= self._seen
                _CHANGES[0] = next(_TOKENS)


# Every change of any registry writes a token never used before (after the change): a registry whose
# forms were built at another token rebuilds them (its parent's values may have changed too).
_TOKENS = itertools.count(1)
_CHANGES = [0]


def _forms(value: str) -> set[str]:
    """``value`` and the forms it takes on the way out: base64 (standard, URL-safe, unpadded), URL-,
    JSON- and HTML-escaped. Forms shorter than MIN_VALUE_LENGTH are left out. JSON-escaped twice: with
    non-ASCII as ``\\u`` escapes (``json.dumps``' default) and kept as it is (the reports' and the run
    store's JSON text, which is redacted as text: a value with a quote and an accent is found there)."""
    value = value.strip()
    if len(value) < MIN_VALUE_LENGTH:
        return set()
    raw = value.encode("utf-8", "surrogatepass")
    encoded = [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]
    forms = {value, *encoded, *(e.rstrip("=") for e in encoded)}
    escaped = (json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1])
    forms |= {quote(value, safe=""), quote_plus(value), *escaped, html.escape(value)}
    return {form for form in forms if len(form) >= MIN_VALUE_LENGTH}


_PROCESS = _Registry()
# The registry of the current run (asyncio tasks and asyncio.to_thread carry it; a plain thread pool needs
# contextvars.copy_context().run): two runs in one process register apart, and redact what is theirs.
_RUN: ContextVar[_Registry] = ContextVar("evalh_secret_registry", default=_PROCESS)


@contextmanager
def run_registry() -> Iterator[None]:
    """Within the block (this context only), secrets register in a registry of their own, over the
    enclosing one; when it ends they join the enclosing one (see :meth:`_Registry.fold_into_parent`)."""
    registry = _Registry(parent=_RUN.get())
    token = _RUN.set(registry)
    try:
        yield
    finally:
        _RUN.reset(token)
        registry.fold_into_parent()


def register(*values: str | None) -> None:
    """Register secret values (and their derived forms) for value-based redaction."""
    _RUN.get().add(str(value) for value in values if value)


def register_url(url: str) -> None:
    """Register the secrets a URL carries (:func:`url_secrets`)."""
    register(*url_secrets(url))


def register_headers(headers: Mapping[str, Any]) -> None:
    """Register the values of secret-looking headers (:func:`secret_header_values`)."""
    register(*secret_header_values(headers))


def register_config(value: Any, *, under_secret: bool = False) -> None:
    """Register every secret a config holds: values of secret-looking keys (at any depth, lists and
    mappings below them too), secret-looking ``env`` map values, URL passwords and query secrets."""
    if isinstance(value, str):
        if under_secret:
            register(value)
        if "://" in value:
            for match in _URL.finditer(value):
                register_url(match.group(0))
    elif type(value) is dict or isinstance(value, Mapping):  # a dict without the ABC check
        for key, item in value.items():
            secret = under_secret or _is_secret_name(key if type(key) is str else str(key))
            kind = type(item)  # a number, or text without a URL (most of a config): nothing to register
            if secret or ("://" in item if kind is str else kind not in _PLAIN):
                register_config(item, under_secret=secret)
    elif isinstance(value, list | tuple):
        for item in value:
            kind = type(item)
            if under_secret or ("://" in item if kind is str else kind not in _PLAIN):
                register_config(item, under_secret=under_secret)
    elif under_secret and isinstance(value, int | float) and not isinstance(value, bool):
        register(str(value))


def registered() -> frozenset[str]:
    """Every registered form (for tests and diagnostics; never print it)."""
    return _RUN.get().values()


# The environment holds more than credentials (DESKTOP_SESSION=ubuntu, SSH_AUTH_SOCK, CI's
# POSTGRES_PASSWORD=postgres), and a registered value is replaced even in outputs, before assertions read
# them. So a variable counts only when its name ends in a credential word (OPENAI_API_KEY, GITHUB_TOKEN,
# DBPASSWORD), a URL counts only for its password, and a value must be as long as a generated key, not a word.
_CREDENTIAL_ENDINGS = ("key", "token", "secret", "password", "passwd", "passphrase", "jwt")
ENVIRONMENT_MIN_VALUE_LENGTH = 16


def environment_secrets(variables: Mapping[str, str]) -> list[str]:
    """The values :func:`register_environment` registers (see _CREDENTIAL_ENDINGS)."""
    found: list[str] = []
    for name, value in variables.items():
        parts = _parts(name)
        if parts and parts[-1].endswith(_CREDENTIAL_ENDINGS):
            found.append(value)
        elif "://" in value:
            found += [secret for match in _URL.finditer(value) for secret in _url_password(match.group(0))]
    return [value for value in found if len(value.strip()) >= ENVIRONMENT_MIN_VALUE_LENGTH]


def _url_password(url: str) -> list[str]:
    try:
        password = urlsplit(url).password
    except ValueError:
        return []
    return [unquote(password)] if password else []


def register_environment(variables: Mapping[str, str]) -> None:
    """Register the credentials an environment holds (:func:`environment_secrets`): a key copied into a
    config, a data file or an output is redacted even when no provider reads its variable."""
    register(*environment_secrets(variables))


def clear_registry() -> None:
    """Forget every registered value (tests; a long-lived process between unrelated runs)."""
    _RUN.get().clear()


def redact_text(text: str) -> str:
    """``text`` with every registered secret form replaced by the marker (longest forms first)."""
    return _redacted(text, _RUN.get().text, MARKER)


def redact_bytes(data: bytes) -> bytes:
    """:func:`redact_text` for UTF-8 bytes (a report file, a cache value)."""
    return _redacted(data, _RUN.get().bytes, _MARKER_BYTES)


def _redacted(text: _Text, registered_forms: _Forms[_Text], marker: _Text) -> _Text:
    forms, guards, shortest = registered_forms
    if len(text) < shortest:
        return text
    for guard in guards:
        if guard in text:
            break
    else:
        return text  # no guard, so no form (see _Forms)
    for form in forms:
        if form in text:
            text = text.replace(form, marker)
    return text


def redact_value(value: Any) -> Any:
    """A copy of a JSON-like value (a model's output) with registered secrets replaced in every string."""
    if not _RUN.get().text.forms:
        return value
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, Mapping):
        return {redact_text(str(k)): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(item) for item in value]
    return value


class _RedactingStream:
    """A text stream that redacts what is written to it (everything else is the wrapped stream's)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(redact_text(text) if isinstance(text, str) else text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def redacted_stdio() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` redacted while the block runs (the console of a CLI command:
    tables, progress, messages, ``--verbose`` tracebacks)."""
    saved = sys.stdout, sys.stderr
    sys.stdout = _RedactingStream(saved[0])
    sys.stderr = _RedactingStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
