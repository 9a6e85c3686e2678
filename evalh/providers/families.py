"""The OpenAI-compatible provider families promptfoo knows by name, and the ids evalh cannot serve.

One table (:data:`FAMILIES`): each family's id prefix, promptfoo's default base URL, the variables its key
and its base URL come from, and whether it has an embeddings endpoint. evalh serves every family through
its OpenAI-compatible chat and embedding providers (``evalh.providers.openai``); the key rule lives in
``evalh.providers.keys`` (one home). Spellings and defaults are promptfoo 0.123's
(``src/providers/registry.ts`` and each family's file).

:data:`REFUSED` names the ids promptfoo documents that evalh does not serve (another API than chat
completions, a service evalh has no client for, code that runs in Node), each with what to use instead:
a config naming one gets that, never "unknown provider, did you mean ...".

Pure data and lookups, no I/O: the registry, ``validate`` and the key checks read it without httpx.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "FAMILIES",
    "REFUSED",
    "Family",
    "Refusal",
    "family_model",
    "family_of",
    "refusal_of",
]

# The sub-forms a family's id may name before its model: ``mistral:chat:<model>``,
# ``togetherai:embedding:<model>`` (promptfoo spells both ``embedding`` and ``embeddings``).
CHAT_FORM = "chat:"
EMBEDDING_FORMS = ("embedding:", "embeddings:")


@dataclass(frozen=True)
class Family:
    """An OpenAI-compatible API known by an id prefix (``groq`` for ``groq:<model>``)."""

    prefix: str
    name: str
    base_url: str  # promptfoo's default
    key_envars: tuple[str, ...]  # the variables holding its key, first wins; () when it needs none
    base_url_envars: tuple[str, ...] = ()  # variables that move it elsewhere, where promptfoo has them
    embeddings: bool = False  # an OpenAI-style /embeddings endpoint (``<prefix>:embedding:<model>``)
    default_embedding_model: str = ""
    aliases: tuple[str, ...] = ()  # other prefixes promptfoo accepts for the same family

    @property
    def needs_key(self) -> bool:
        return bool(self.key_envars)

    @property
    def prefixes(self) -> tuple[str, ...]:
        return (self.prefix, *self.aliases)


FAMILIES: tuple[Family, ...] = (
    Family("groq", "Groq", "https://api.groq.com/openai/v1", ("GROQ_API_KEY",)),
    Family(
        "mistral",
        "Mistral",
        "https://api.mistral.ai/v1",
        ("MISTRAL_API_KEY",),
        ("MISTRAL_API_BASE_URL",),
        embeddings=True,
        default_embedding_model="mistral-embed",
    ),
    Family("openrouter", "OpenRouter", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",)),
    Family(
        "togetherai", "Together AI", "https://api.together.xyz/v1", ("TOGETHER_API_KEY",), embeddings=True
    ),
    Family("deepseek", "DeepSeek", "https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",)),
    Family(
        "fireworks",
        "Fireworks AI",
        "https://api.fireworks.ai/inference/v1",
        ("FIREWORKS_API_KEY",),
        ("FIREWORKS_API_BASE_URL",),
    ),
    Family("perplexity", "Perplexity", "https://api.perplexity.ai", ("PERPLEXITY_API_KEY",)),
    Family("xai", "xAI (Grok)", "https://api.x.ai/v1", ("XAI_API_KEY",), ("XAI_API_BASE_URL",)),
    Family("cerebras", "Cerebras", "https://api.cerebras.ai/v1", ("CEREBRAS_API_KEY",)),
    Family(
        "hyperbolic",
        "Hyperbolic",
        "https://api.hyperbolic.xyz/v1",
        ("HYPERBOLIC_API_KEY",),
        ("HYPERBOLIC_API_BASE_URL",),
    ),
    Family(
        "novita",
        "Novita AI",
        "https://api.novita.ai/openai/v1",
        ("NOVITA_API_KEY",),
        ("NOVITA_API_BASE_URL",),
    ),
    Family("moonshot", "Moonshot AI (Kimi)", "https://api.moonshot.ai/v1", ("MOONSHOT_API_KEY",)),
    Family("minimax", "MiniMax", "https://api.minimax.io/v1", ("MINIMAX_API_KEY",)),
    Family(
        "nvidia",
        "NVIDIA NIM",
        "https://integrate.api.nvidia.com/v1",
        ("NVIDIA_API_KEY",),
        ("NVIDIA_API_BASE_URL",),
    ),
    Family(
        "nscale", "Nscale", "https://inference.api.nscale.com/v1", ("NSCALE_SERVICE_TOKEN", "NSCALE_API_KEY")
    ),
    Family("atlascloud", "Atlas Cloud", "https://api.atlascloud.ai/v1", ("ATLASCLOUD_API_KEY",)),
    Family("aimlapi", "AI/ML API", "https://api.aimlapi.com/v1", ("AIML_API_KEY",)),
    Family("cometapi", "CometAPI", "https://api.cometapi.com/v1", ("COMETAPI_KEY",)),
    Family("llamaapi", "Meta Llama API", "https://api.llama.com/compat/v1", ("LLAMA_API_KEY",)),
    Family("orcarouter", "OrcaRouter", "https://api.orcarouter.ai/v1", ("ORCAROUTER_API_KEY",)),
    Family(
        "alibaba",
        "Alibaba Cloud Model Studio (DashScope)",
        "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
        ("DASHSCOPE_API_KEY",),
        embeddings=True,
        aliases=("alicloud", "aliyun", "dashscope"),
    ),
    # servers you run yourself: no key unless you give one
    Family("localai", "LocalAI", "http://localhost:8080/v1", (), ("LOCALAI_BASE_URL",), embeddings=True),
    Family("litellm", "LiteLLM proxy", "http://0.0.0.0:4000", (), ("LITELLM_API_BASE",), embeddings=True),
)

# A LiteLLM proxy takes a key when it has one set (promptfoo sends LITELLM_API_KEY when it is set).
OPTIONAL_KEY_ENVARS = {"litellm": ("LITELLM_API_KEY",)}

_BY_PREFIX = {f"{prefix}:": family for family in FAMILIES for prefix in family.prefixes}


@dataclass(frozen=True)
class Refusal:
    """An id promptfoo documents that evalh does not serve: why, and what to use instead."""

    prefix: str  # an id prefix ending in ":", or an exact id
    why: str
    instead: str


_OPENAI_COMPATIBLE = (
    "an OpenAI-compatible endpoint: openai:chat:<model> with config.apiBaseUrl and config.apiKeyEnvar"
)
_YOUR_CODE = "your own provider: file://provider.py, exec:<command> or the http provider"

REFUSED: tuple[Refusal, ...] = (
    Refusal("openai:completion:", "OpenAI's legacy completions API is not served", "openai:chat:<model>"),
    Refusal("openai:assistant:", "OpenAI assistants are not served", "openai:chat:<model> with tools"),
    Refusal("openai:realtime:", "OpenAI's realtime API is not served", "openai:chat:<model>"),
    Refusal("openai:image:", "image generation is not served", _YOUR_CODE),
    *(
        Refusal(f"openai:{form}:", f"OpenAI's {form} API is not served", _YOUR_CODE)
        for form in ("chatkit", "live", "moderation", "speech", "transcription", "tts", "video")
    ),
    *(
        Refusal(f"openai:{form}", "OpenAI's agents and Codex run in Node", _YOUR_CODE)
        for form in ("agents", "agents-api", "codex", "codex-app-server", "codex-desktop", "codex-sdk")
    ),
    Refusal("openai:codex-security", "OpenAI's Codex runs in Node", _YOUR_CODE),
    Refusal(
        "anthropic:completion:",
        "Anthropic's legacy completions API is not served",
        "anthropic:messages:<model>",
    ),
    Refusal("anthropic:claude-agent-sdk", "the Claude Agent SDK runs in Node", _YOUR_CODE),
    Refusal("anthropic:claude-code", "the Claude Agent SDK runs in Node", _YOUR_CODE),
    Refusal("ollama:completion:", "Ollama's /api/generate is not served", "ollama:chat:<model>"),
    Refusal("ollama:", "Ollama's /api/generate (ollama:<model>) is not served", "ollama:chat:<model>"),
    Refusal("groq:responses:", "Groq's Responses API is not served", "groq:<model>"),
    Refusal("xai:responses:", "xAI's Responses API is not served", "xai:<model>"),
    Refusal("xai:image:", "image generation is not served", _YOUR_CODE),
    Refusal("xai:video:", "video generation is not served", _YOUR_CODE),
    Refusal("xai:voice:", "xAI's voice API is not served", _YOUR_CODE),
    Refusal("xai:embedding:", "xAI has no public embeddings API", "an embedding provider such as local"),
    Refusal("xai:embeddings:", "xAI has no public embeddings API", "an embedding provider such as local"),
    Refusal("hyperbolic:image:", "image generation is not served", _YOUR_CODE),
    Refusal("hyperbolic:audio:", "audio generation is not served", _YOUR_CODE),
    Refusal("togetherai:completion:", "the legacy completions API is not served", "togetherai:chat:<model>"),
    Refusal("localai:completion:", "the legacy completions API is not served", "localai:chat:<model>"),
    Refusal("litellm:completion:", "the legacy completions API is not served", "litellm:chat:<model>"),
    Refusal("replicate:image:", "image generation is not served", "replicate:<owner>/<model> for text"),
    Refusal("replicate:moderation:", "moderation is not served", "replicate:<owner>/<model> for text"),
    Refusal("azure:assistant:", "Azure OpenAI assistants are not served", "azure:chat:<deployment>"),
    Refusal("azure:completion:", "Azure's legacy completions API is not served", "azure:chat:<deployment>"),
    Refusal("azure:responses:", "Azure's Responses API is not served", "azure:chat:<deployment>"),
    Refusal(
        "azure:",
        "this Azure service is not served",
        "azure:chat:<deployment> or azure:embedding:<deployment>",
    ),
    Refusal("azureopenai:", "this Azure service is not served", "azureopenai:chat:<deployment>"),
    Refusal(
        "azureopenai:completion:",
        "Azure's legacy completions API is not served",
        "azureopenai:chat:<deployment>",
    ),
    Refusal("huggingface:text-generation:", "Hugging Face text generation is not served", _OPENAI_COMPATIBLE),
    Refusal("huggingface:text-classification:", "classification providers are not served", _YOUR_CODE),
    Refusal("huggingface:token-classification:", "classification providers are not served", _YOUR_CODE),
    Refusal("huggingface:", "this Hugging Face task is not served", "huggingface:feature-extraction:<model>"),
    Refusal("hf:", "this Hugging Face task is not served", "hf:feature-extraction:<model>"),
    Refusal("hf:text-generation:", "Hugging Face text generation is not served", _OPENAI_COMPATIBLE),
    Refusal("hf:text-classification:", "classification providers are not served", _YOUR_CODE),
    # Gemini, Vertex and Bedrock may have entries of their own (the registry's wins over these)
    Refusal("google:", "Google's Gemini API is not served", _OPENAI_COMPATIBLE),
    Refusal("vertex:", "Vertex AI is not served", _OPENAI_COMPATIBLE),
    Refusal("palm:", "the PaLM API is retired", _OPENAI_COMPATIBLE),
    Refusal("bedrock:", "Amazon Bedrock is not served", _OPENAI_COMPATIBLE),
    Refusal("bedrock-agent:", "Bedrock agents are not served", _YOUR_CODE),
    Refusal("sagemaker:", "SageMaker endpoints are not served", _YOUR_CODE),
    # services with their own protocol, account-specific endpoints or code that runs in Node
    Refusal("ai21:", "AI21's API is not served", _OPENAI_COMPATIBLE),
    Refusal("bam:", "IBM BAM is retired", _YOUR_CODE),
    Refusal("watsonx:", "IBM watsonx.ai is not served", _YOUR_CODE),
    Refusal(
        "cloudflare-ai:", "Cloudflare Workers AI is not served", _OPENAI_COMPATIBLE + " (its /ai/v1 URL)"
    ),
    Refusal("cloudflare-gateway:", "Cloudflare AI Gateway is not served", _OPENAI_COMPATIBLE),
    Refusal("cloudera:", "Cloudera AI is not served", _OPENAI_COMPATIBLE),
    Refusal(
        "databricks:",
        "Databricks serving endpoints are not served",
        _OPENAI_COMPATIBLE + " (<workspace>/serving-endpoints)",
    ),
    Refusal("mlflow-gateway:", "the MLflow AI Gateway is not served", _OPENAI_COMPATIBLE),
    Refusal("github:", "GitHub Models was retired (promptfoo refuses it too)", _OPENAI_COMPATIBLE),
    Refusal("helicone:", "the Helicone AI Gateway is not served", _OPENAI_COMPATIBLE),
    Refusal("portkey:", "Portkey is not served", _OPENAI_COMPATIBLE),
    Refusal("truefoundry:", "the TrueFoundry gateway is not served", _OPENAI_COMPATIBLE),
    Refusal("vercel:", "the Vercel AI Gateway is not served", _OPENAI_COMPATIBLE),
    Refusal("docker:", "Docker Model Runner is not served", _OPENAI_COMPATIBLE + " (its engines/v1 URL)"),
    Refusal("snowflake:", "Snowflake Cortex is not served", _OPENAI_COMPATIBLE),
    Refusal("envoy:", "the Envoy AI Gateway is not served", _OPENAI_COMPATIBLE),
    Refusal("f5:", "F5 is not served", _OPENAI_COMPATIBLE),
    Refusal("jfrog:", "JFrog ML is not served", _YOUR_CODE),
    Refusal("qwak:", "JFrog ML is not served", _YOUR_CODE),
    Refusal("meta:", "Meta AI is not served", "llamaapi:<model>"),
    Refusal("abliteration:", "abliteration.ai is not served", _OPENAI_COMPATIBLE),
    Refusal("voyage:", "Voyage AI embeddings are not served", "an embedding provider such as local"),
    Refusal("elevenlabs:", "ElevenLabs audio is not served", _YOUR_CODE),
    Refusal("fal:", "fal.ai image generation is not served", _YOUR_CODE),
    Refusal("modelslab:", "image generation is not served", _YOUR_CODE),
    Refusal("quiverai:", "QuiverAI is not served", _YOUR_CODE),
    Refusal("transformers:", "Transformers.js runs in Node", "local (the bundled ONNX model) for embeddings"),
    Refusal(
        "transformers.js:", "Transformers.js runs in Node", "local (the bundled ONNX model) for embeddings"
    ),
    Refusal(
        "llama:",
        "the llama.cpp server's /completion API is not served",
        _OPENAI_COMPATIBLE + " (its /v1 URL)",
    ),
    Refusal(
        "llama", "the llama.cpp server's /completion API is not served", _OPENAI_COMPATIBLE + " (its /v1 URL)"
    ),
    Refusal("package:", "a provider from an npm package runs in Node", _YOUR_CODE),
    Refusal("golang:", "Go providers are not run", _YOUR_CODE),
    Refusal("ruby:", "Ruby providers are not run", _YOUR_CODE),
    Refusal("ws:", "WebSocket providers are not served", _YOUR_CODE),
    Refusal("wss:", "WebSocket providers are not served", _YOUR_CODE),
    Refusal("websocket", "WebSocket providers are not served", _YOUR_CODE),
    Refusal("browser", "the browser provider drives a browser in Node", _YOUR_CODE),
    Refusal("sequence", "the sequence provider is not served", _YOUR_CODE),
    Refusal("mcp", "MCP providers are not served", _YOUR_CODE),
    Refusal("mcp:", "MCP providers are not served", _YOUR_CODE),
    Refusal("a2a", "A2A agents are not served", _YOUR_CODE),
    Refusal("a2a:", "A2A agents are not served", _YOUR_CODE),
    Refusal("webhook:", "webhook providers are not served", "the http provider"),
    Refusal("n8n", "n8n workflows are not served", "the http provider"),
    Refusal("n8n:", "n8n workflows are not served", "the http provider"),
    Refusal("slack", "the Slack provider (a human answers) is not served", _YOUR_CODE),
    Refusal("slack:", "the Slack provider (a human answers) is not served", _YOUR_CODE),
    Refusal("promptfoo:manual-input", "manual input is not served", "recorded outputs (providerOutput)"),
    Refusal("promptfoo:model:", "promptfoo's hosted models are not served", _OPENAI_COMPATIBLE),
    Refusal("promptfoo:redteam:", "red-team providers are not served", _YOUR_CODE),
    Refusal("agentic:memory-poisoning", "red-team providers are not served", _YOUR_CODE),
    Refusal("opencode", "the OpenCode agent SDK runs in Node", _YOUR_CODE),
    Refusal("opencode:", "the OpenCode agent SDK runs in Node", _YOUR_CODE),
    Refusal("openinterpreter", "Open Interpreter is not served", _YOUR_CODE),
    Refusal("openinterpreter:", "Open Interpreter is not served", _YOUR_CODE),
    Refusal("openclaw", "OpenClaw is not served", _YOUR_CODE),
    Refusal("openclaw:", "OpenClaw is not served", _YOUR_CODE),
    # spellings of OpenAI-compatible servers promptfoo itself does not know: say how promptfoo runs them
    Refusal(
        "vllm:",
        "promptfoo has no vllm: provider either",
        "openai:chat:<model> with config.apiBaseUrl http://localhost:8000/v1",
    ),
    Refusal(
        "lmstudio:",
        "promptfoo has no lmstudio: provider either",
        "openai:chat:<model> with config.apiBaseUrl http://localhost:1234/v1",
    ),
    Refusal("together:", "promptfoo spells Together AI togetherai:", "togetherai:<model>"),
)


def _matches(refusal: Refusal, provider_id: str) -> bool:
    if refusal.prefix.endswith(":"):
        return provider_id.startswith(refusal.prefix)
    return provider_id == refusal.prefix or provider_id.startswith(refusal.prefix + ":")


@lru_cache(maxsize=1024)
def refusal_of(provider_id: str) -> Refusal | None:
    """The most specific refusal matching ``provider_id`` (longest prefix), or None."""
    found = [refusal for refusal in REFUSED if _matches(refusal, provider_id)]
    return max(found, key=lambda refusal: len(refusal.prefix)) if found else None


def family_of(provider_id: str) -> Family | None:
    """The family whose prefix ``provider_id`` starts with (``groq:llama-3.1-8b`` -> Groq)."""
    prefix, colon, _ = provider_id.partition(":")
    return _BY_PREFIX.get(prefix + colon) if colon else None


def family_model(provider_id: str, *, embedding: bool = False) -> str:
    """The model an id names, without its family and sub-form: ``mistral:chat:mistral-large`` ->
    ``mistral-large``, ``togetherai:embedding:m`` -> ``m``; ``""`` when it names none."""
    rest = provider_id.partition(":")[2]
    forms = EMBEDDING_FORMS if embedding else (CHAT_FORM,)
    for form in forms:
        if rest.startswith(form) or rest == form[:-1]:  # mistral:embedding names no model
            return rest[len(form) :]
    return rest
