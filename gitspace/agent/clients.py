"""The Anthropic SDK as a ``ModelClient``; the SDK is imported when the first call is made (it
takes seconds to import, so a run that stops before its first model call, an empty task or a
finished session, never pays for it).

Invariant: API failures surface as ``ModelError`` with a sentence a person can act on (status,
error type, the server's message) and never the API key; the SDK's own retries handle transient
failures before that.
"""

from __future__ import annotations

from typing import Any

from .. import extras
from ..errors import GitspaceError
from .model import Block, Message, Reply

DEFAULT_MODEL = "claude-sonnet-4-5"


class ModelError(GitspaceError):
    """The model API failed; the session is saved and can be resumed."""


class AnthropicClient:
    """``client.messages.create`` with the full history on every call."""

    scripted = False

    def __init__(self, *, model: str = DEFAULT_MODEL, api_key: str | None = None,
                 base_url: str | None = None, max_retries: int = 2, sdk_client: Any = None) -> None:
        if sdk_client is None:
            extras.require("agent")
        self._sdk = sdk_client
        self._key, self._base_url, self._retries = api_key, base_url, max_retries
        self.model = model
        self.name = model

    @property
    def sdk(self) -> Any:
        """The SDK's client, made on first use."""
        if self._sdk is None:
            import anthropic

            self._sdk = anthropic.Anthropic(api_key=self._key, base_url=self._base_url,
                                            max_retries=self._retries)
        return self._sdk

    def create(self, *, system: list[Block], messages: list[Message], tools: list[dict[str, Any]],
               max_tokens: int) -> Reply:
        import anthropic

        try:
            response = self.sdk.messages.create(model=self.model, max_tokens=max_tokens,
                                                system=system, messages=messages, tools=tools)
        except anthropic.APIStatusError as e:
            raise ModelError(_status_message(e), hint=_status_hint(e.status_code)) from None
        except anthropic.APIConnectionError as e:
            raise ModelError(f"Could not reach the Messages API: {e}.",
                             hint="Check the network or ANTHROPIC_BASE_URL, then resume.") from None
        content = [block.model_dump(mode="json", exclude_none=True) for block in response.content]
        usage = {k: v for k, v in response.usage.model_dump().items() if isinstance(v, int)}
        return Reply(content, response.stop_reason, usage, response.model)

    def state(self) -> dict[str, Any]:
        return {}

    def load_state(self, state: dict[str, Any]) -> None:
        pass


def _status_message(e: Any) -> str:
    body = e.body if isinstance(e.body, dict) else {}
    error = body.get("error")
    if not isinstance(error, dict):
        error = {}
    kind = error.get("type", "error")
    message = error.get("message") or str(e)
    return f"The Messages API answered {e.status_code} ({kind}): {message}"


def _status_hint(status: int) -> str:
    if status in (401, 403):
        return "Check ANTHROPIC_API_KEY (the key is never printed), then resume the session."
    if status == 429 or status >= 500:
        return "The API is busy or failing; wait a moment, then resume with 'gitspace run --resume'."
    return "The request was refused; fix what the message says, then resume the session."
