"""How a Bedrock request proves who sends it: AWS Signature Version 4, or a Bedrock API key.

SigV4 is computed by botocore's ``SigV4Auth`` (the signer the AWS SDK for Python uses), never by a copy of
it here: botocore is the optional extra ``evalh[bedrock]`` (32 MB installed, ~0.25 s of CPU to import), so
it is imported when a provider with an access key pair is built, and a missing botocore is a config error
that names the command to install it. A Bedrock API key (``config.apiKey`` / ``AWS_BEARER_TOKEN_BEDROCK``)
is sent as ``Authorization: Bearer``, with no signer. Which credentials apply is the rule of
:mod:`evalh.providers.keys` (promptfoo's order: the config's key pair, then the API key, then the
environment's key pair).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from evalh.common.environment import getenv
from evalh.errors import ConfigError
from evalh.model import ProviderSpec
from evalh.providers.identity import Secret
from evalh.providers.keys import AwsCredentials, aws_credentials, bedrock_bearer_token

__all__ = [
    "BEDROCK_EXTRA_HINT",
    "BearerSigner",
    "RequestSigner",
    "SigV4Signer",
    "bedrock_region",
    "signer_for",
]

BEDROCK_EXTRA_HINT = "pip install 'evalh[bedrock]'"
SERVICE = "bedrock"


class RequestSigner(Protocol):
    def headers_for(self, method: str, url: str, body: bytes, headers: Mapping[str, str]) -> dict[str, str]:
        """``headers`` with what authenticates this exact request added."""
        ...

    def secrets(self) -> tuple[str, ...]:
        """The values to redact everywhere."""
        ...

    def identity(self) -> Mapping[str, Any]:
        """Who signs, for the cache identity (secrets as :class:`Secret`)."""
        ...


@dataclass(frozen=True)
class BearerSigner:
    token: str | None  # None: no credentials (every call answers the missing-key error first)

    def headers_for(self, method: str, url: str, body: bytes, headers: Mapping[str, str]) -> dict[str, str]:
        return {**headers, "Authorization": f"Bearer {self.token}"} if self.token else dict(headers)

    def secrets(self) -> tuple[str, ...]:
        return (self.token,) if self.token else ()

    def identity(self) -> Mapping[str, Any]:
        return {"bearer": Secret(self.token)} if self.token else {}


class SigV4Signer:
    """Signs with botocore's ``SigV4Auth`` for the ``bedrock`` service in one region."""

    def __init__(self, credentials: AwsCredentials, region: str, where: str) -> None:
        try:
            from botocore.auth import SigV4Auth
            from botocore.awsrequest import AWSRequest
            from botocore.credentials import Credentials
        except ImportError:
            raise ConfigError(
                "signing AWS Bedrock requests with an access key needs botocore, which is not installed",
                where=where,
                hint=f"Install it with `{BEDROCK_EXTRA_HINT}`, or use a Bedrock API key "
                "(AWS_BEARER_TOKEN_BEDROCK or config.apiKey), which needs no signer",
            ) from None
        self.credentials = credentials
        self.region = region
        self._request = AWSRequest
        self._auth = SigV4Auth(
            Credentials(credentials.access_key_id, credentials.secret_access_key, credentials.session_token),
            SERVICE,
            region,
        )

    def headers_for(self, method: str, url: str, body: bytes, headers: Mapping[str, str]) -> dict[str, str]:
        request = self._request(method=method, url=url, data=body, headers=dict(headers))
        self._auth.add_auth(request)
        return {str(key): str(value) for key, value in request.headers.items()}

    def secrets(self) -> tuple[str, ...]:
        """The secret key and session token; the key id too, as evalh redacts ``accessKeyId`` in a config."""
        credentials = self.credentials
        token = credentials.session_token
        return (credentials.secret_access_key, credentials.access_key_id, *((token,) if token else ()))

    def identity(self) -> Mapping[str, Any]:
        return {"region": self.region, "accessKeyId": Secret(self.credentials.access_key_id)}


def bedrock_region(config: Mapping[str, Any]) -> str:
    """``config.region``, else ``AWS_BEDROCK_REGION``, else ``us-east-1`` (promptfoo's ``getRegion``)."""
    return str(config.get("region") or getenv("AWS_BEDROCK_REGION") or "us-east-1")


def signer_for(spec: ProviderSpec) -> RequestSigner:
    """promptfoo's order: the config's key pair (SigV4), the API key (bearer), the environment's key pair."""
    config = spec.config
    credentials = aws_credentials(config)  # the config's pair first, else the environment's
    token = bedrock_bearer_token(config)
    in_config = bool(config.get("accessKeyId") and config.get("secretAccessKey"))
    if credentials is not None and (in_config or not token):
        return SigV4Signer(credentials, bedrock_region(config), spec.path or spec.id)
    return BearerSigner(token)
