"""A client of the OpenAI-compatible chat-completions API (vLLM, SGLang and hosted APIs speak it): one request per
turn, the tools' JSON schemas in it, the assistant's message (text and `tool_calls`) back. The API key comes from
the environment variable the caller names; it is sent in the Authorization header and never logged or stored."""
import json
import os
import time
import urllib.error
import urllib.request


class ChatError(RuntimeError):
    """The server did not answer with a message (unreachable, timed out, an HTTP error, a malformed reply)."""


class ChatClient:
    def __init__(self, base_url: str, model: str, api_key_env: str | None = None, timeout_s: float = 120.0,
                 retries: int = 2, temperature: float | None = None):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.timeout_s, self.retries, self.temperature = model, timeout_s, retries, temperature
        self._key = os.environ.get(api_key_env, "") if api_key_env else ""
        if api_key_env and not self._key:
            raise ChatError(f"the environment variable {api_key_env} (the API key) is not set")

    def complete(self, messages: list[dict], tools: list[dict]) -> dict:
        """The assistant's next message. Retries a timeout, a refused connection or a 5xx `retries` times, with
        a growing pause; a 4xx or a reply without a message is a ChatError at once."""
        body = {"model": self.model, "messages": messages, "tools": tools, "tool_choice": "auto"}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        last = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(2.0 ** attempt, 10.0))
            try:
                with urllib.request.urlopen(urllib.request.Request(self.url, data, headers), timeout=self.timeout_s) as r:
                    reply = json.loads(r.read())
                return reply["choices"][0]["message"]
            except urllib.error.HTTPError as e:
                last = f"HTTP {e.code} from {self.url}: {e.read()[:300].decode(errors='replace')}"
                if e.code < 500:
                    break
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                last = f"{self.url} did not answer: {getattr(e, 'reason', e)}"
            except (ValueError, KeyError, IndexError, TypeError) as e:
                last = f"{self.url} answered without a message: {type(e).__name__}: {e}"
                break
        raise ChatError(last)
