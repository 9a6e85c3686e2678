"""API keys: where each provider family reads its key, and when it lacks one. The one home of the rule.

A family's factory sends the key it finds here and answers every call with :class:`MissingKey`'s message
when there is none; ``evalh run`` asks the same functions (through the registry's ``key_check``) before
the first call, and ``evalh validate`` warns with them. Only light imports: validate reads this without
httpx or numpy.

Families: OpenAI (``config.apiKey``, the variable ``config.apiKeyEnvar`` names, else ``OPENAI_API_KEY``;
required by api.openai.com, and by any server when ``apiKeyEnvar`` names the variable), Azure (a key or an
Entra ID token), Anthropic (always), Hugging Face (its own Inference API; your endpoint may take none),
the OpenAI-compatible families (``evalh.providers.families``: their own variable, ``GROQ_API_KEY`` for
``groq:``; none for servers you run, LocalAI and LiteLLM), Cohere and Replicate (always).
Providers that take no key (local, echo, exec:, python, ollama, http) have no rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalh.common.environment import getenv
from evalh.model import ProviderSpec
from evalh.providers.families import OPTIONAL_KEY_ENVARS, Family, family_of

__all__ = [
    "DEFAULT_HF_BASE_URL",
    "DEFAULT_OPENAI_BASE_URL",
    "MissingKey",
    "anthropic_api_key",
    "azure_ad_token",
    "azure_api_key",
    "cohere_api_key",
    "config_or_env",
    "family_api_key",
    "family_base_url",
    "hf_base_url",
    "hf_token",
    "missing_anthropic_key",
    "missing_azure_key",
    "missing_cohere_key",
    "missing_family_key",
    "missing_hf_token",
    "missing_openai_key",
    "missing_replicate_key",
    "openai_api_key",
    "openai_base_url",
    "replicate_api_key",
]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_HF_BASE_URL = "https://router.huggingface.co/hf-inference"
_HF_TOKEN_ENVARS = ("HF_TOKEN", "HF_API_TOKEN")


@dataclass(frozen=True)
class MissingKey:
    """A provider needs an API key that is set nowhere: not in its config (``apiKey``) nor in any of
    ``envars`` (one is enough). ``instead`` names another way to need none (another server, a token)."""

    envars: tuple[str, ...]
    instead: str = ""

    @property
    def message(self) -> str:
        text = f"no API key: set {' or '.join(self.envars)} (or config.apiKey)"
        return f"{text}, {self.instead}" if self.instead else text


def config_or_env(config: Mapping[str, Any], key: str, *env_names: str) -> str | None:
    """``config[key]`` if set, else the first environment variable of ``env_names`` that is set."""
    value = config.get(key)
    if value not in (None, ""):
        return str(value)
    for name in env_names:
        value = getenv(name)
        if value:
            return value
    return None


def _named_envar(config: Mapping[str, Any], *default: str) -> tuple[str, ...]:
    """The variable ``config.apiKeyEnvar`` names, else the family's ``default`` ones."""
    envar = config.get("apiKeyEnvar")
    return (str(envar),) if envar else default


# -- OpenAI and OpenAI-compatible servers ---------------------------------------------------------


def openai_base_url(config: Mapping[str, Any]) -> str:
    """The API base URL, ending in ``/v1`` for OpenAI itself (``apiHost`` is a bare host name)."""
    base = config_or_env(config, "apiBaseUrl", "OPENAI_BASE_URL", "OPENAI_API_BASE_URL")
    if base:
        return base.rstrip("/")
    host = config_or_env(config, "apiHost", "OPENAI_API_HOST")
    if host:
        return (host if "://" in host else f"https://{host}").rstrip("/") + "/v1"
    return DEFAULT_OPENAI_BASE_URL


def openai_api_key(config: Mapping[str, Any]) -> str | None:
    return config_or_env(config, "apiKey", *_named_envar(config, "OPENAI_API_KEY"))


def missing_openai_key(spec: ProviderSpec) -> MissingKey | None:
    """OpenAI itself needs a key; another server only when the config names its variable
    (``apiKeyEnvar``): a local server (Ollama, vLLM) usually takes none."""
    config = spec.config
    if openai_api_key(config):
        return None
    if config.get("apiKeyEnvar"):
        return MissingKey(_named_envar(config))
    if not openai_base_url(config).startswith(DEFAULT_OPENAI_BASE_URL):
        return None
    return MissingKey(
        ("OPENAI_API_KEY",),
        instead="or point config.apiBaseUrl at an OpenAI-compatible server such as Ollama or vLLM",
    )


# -- the OpenAI-compatible families (groq:, mistral:, openrouter:, ...) ------------------------------


def family_base_url(family: Family, config: Mapping[str, Any]) -> str:
    """``config.apiBaseUrl``, else the family's base-URL variable, else promptfoo's default; never
    ``OPENAI_BASE_URL`` (that moves OpenAI, not Groq)."""
    return (config_or_env(config, "apiBaseUrl", *family.base_url_envars) or family.base_url).rstrip("/")


def family_api_key(family: Family, config: Mapping[str, Any]) -> str | None:
    """``config.apiKey``, the variable ``config.apiKeyEnvar`` names, else the family's own variables.
    Never ``OPENAI_API_KEY``: promptfoo falls back to it for some families, which would send an OpenAI
    key to another company's server."""
    envars = _named_envar(config, *family.key_envars, *OPTIONAL_KEY_ENVARS.get(family.prefix, ()))
    return config_or_env(config, "apiKey", *envars)


def missing_family_key(spec: ProviderSpec) -> MissingKey | None:
    """A hosted family needs its key whatever the base URL (promptfoo's rule); a server you run
    (LocalAI, LiteLLM) only when ``apiKeyEnvar`` names the variable."""
    family = family_of(spec.id)
    if family is None or family_api_key(family, spec.config):
        return None
    if family.needs_key or spec.config.get("apiKeyEnvar"):
        return MissingKey(_named_envar(spec.config, *family.key_envars))
    return None


# -- Azure OpenAI ---------------------------------------------------------------------------------


def azure_api_key(config: Mapping[str, Any]) -> str | None:
    return config_or_env(config, "apiKey", *_named_envar(config, "AZURE_API_KEY", "AZURE_OPENAI_API_KEY"))


def azure_ad_token(config: Mapping[str, Any]) -> str | None:
    """An Entra ID (Azure AD) token, sent as a bearer token when there is no key."""
    return config_or_env(config, "azureAdToken", "AZURE_OPENAI_AD_TOKEN")


def missing_azure_key(spec: ProviderSpec) -> MissingKey | None:
    """A key, or an Entra ID token instead."""
    if azure_api_key(spec.config) or azure_ad_token(spec.config):
        return None
    return MissingKey(
        _named_envar(spec.config, "AZURE_API_KEY", "AZURE_OPENAI_API_KEY"),
        instead="or an Entra ID token in config.azureAdToken / AZURE_OPENAI_AD_TOKEN",
    )


# -- Anthropic ------------------------------------------------------------------------------------


def anthropic_api_key(config: Mapping[str, Any]) -> str | None:
    return config_or_env(config, "apiKey", *_named_envar(config, "ANTHROPIC_API_KEY"))


def missing_anthropic_key(spec: ProviderSpec) -> MissingKey | None:
    """Anthropic's API and its proxies need a key, whatever the base URL."""
    if anthropic_api_key(spec.config):
        return None
    return MissingKey(_named_envar(spec.config, "ANTHROPIC_API_KEY"))


# -- Cohere and Replicate ------------------------------------------------------------------------

_REPLICATE_ENVARS = ("REPLICATE_API_TOKEN", "REPLICATE_API_KEY")


def cohere_api_key(config: Mapping[str, Any]) -> str | None:
    return config_or_env(config, "apiKey", *_named_envar(config, "COHERE_API_KEY"))


def missing_cohere_key(spec: ProviderSpec) -> MissingKey | None:
    """Cohere's API needs a key, whatever the base URL (promptfoo's rule)."""
    return _required(spec.config, cohere_api_key(spec.config), "COHERE_API_KEY")


def replicate_api_key(config: Mapping[str, Any]) -> str | None:
    return config_or_env(config, "apiKey", *_named_envar(config, *_REPLICATE_ENVARS))


def missing_replicate_key(spec: ProviderSpec) -> MissingKey | None:
    """Replicate's API needs a token, whatever the base URL (promptfoo's rule)."""
    return _required(spec.config, replicate_api_key(spec.config), *_REPLICATE_ENVARS)


def _required(config: Mapping[str, Any], key: str | None, *envars: str) -> MissingKey | None:
    """None when ``key`` was found; else the variables (``apiKeyEnvar``'s, or ``envars``) to set."""
    return None if key else MissingKey(_named_envar(config, *envars))


# -- Hugging Face ---------------------------------------------------------------------------------


def hf_token(config: Mapping[str, Any]) -> str | None:
    return config_or_env(config, "apiKey", *_HF_TOKEN_ENVARS)


def hf_base_url(config: Mapping[str, Any]) -> str:
    return (config_or_env(config, "apiBaseUrl", "HF_API_BASE_URL") or DEFAULT_HF_BASE_URL).rstrip("/")


def missing_hf_token(spec: ProviderSpec) -> MissingKey | None:
    """Hugging Face's own Inference API needs a token; your endpoint (a TEI server) may take none."""
    config = spec.config
    own_endpoint = hf_base_url(config) != DEFAULT_HF_BASE_URL or "://" in str(config.get("apiEndpoint") or "")
    if hf_token(config) or own_endpoint:
        return None
    return MissingKey(_HF_TOKEN_ENVARS, instead="or point config.apiBaseUrl at your own endpoint")
