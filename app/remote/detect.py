"""Which server answers at a URL, its version, its models and what it says of itself.

llama.cpp's ``llama-server`` answers ``/props`` (``build_info``, ``speculative``, ``n_ctx``);
vLLM answers ``/version`` and names itself in ``system_fingerprint`` (checked by the dialect
on the first answer). Anything else OpenAI-compatible is "openai": it streams, but tells no
speculation figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from app.remote.client import ServerClient
from app.remote.errors import ServerError

ServerKind = Literal["llama.cpp", "vllm", "openai"]
KIND_NAMES = {"llama.cpp": "llama.cpp", "vllm": "vLLM", "openai": "an OpenAI-compatible server"}


@dataclass(frozen=True)
class ServerInfo:
    kind: ServerKind
    url: str
    version: str | None  # llama.cpp: its build ("b6550-…"); vLLM: "0.32.0"; None: not told
    models: tuple[str, ...]  # the ids /v1/models lists
    context_length: int | None = None  # tokens a request may hold (llama.cpp n_ctx, vLLM max_model_len)
    speculates: bool | None = None  # what the server says of itself (llama.cpp /props); None: not told
    extra: dict[str, Any] = field(default_factory=dict)  # what else it said (e.g. the draft model)

    def describe(self) -> str:
        """ "llama.cpp b6550 at http://127.0.0.1:8080" """
        name = KIND_NAMES[self.kind]
        return f"{name}{' ' + self.version if self.version else ''} at {self.url}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "url": self.url,
            "version": self.version,
            "models": list(self.models),
            "context_length": self.context_length,
            "speculates": self.speculates,
            "description": self.describe(),
        }


def detect(client: ServerClient) -> ServerInfo:
    """Ask the server what it is (a refused connection or a server error: ``ServerError``)."""
    models, lengths = _models(client)
    props = client.get_json("/props", missing_ok=True)
    if isinstance(props, dict) and ("build_info" in props or "default_generation_settings" in props):
        settings = props.get("default_generation_settings")
        n_ctx = _int(settings.get("n_ctx")) if isinstance(settings, dict) else None
        speculates = props.get("speculative")
        return ServerInfo(
            "llama.cpp",
            client.base_url,
            _text(props.get("build_info")),
            models,
            n_ctx or _int(props.get("n_ctx")),
            speculates if isinstance(speculates, bool) else None,
            {"form": form} if (form := _text(props.get("model_ftype"))) else {},
        )
    version = client.get_json("/version", missing_ok=True)
    if isinstance(version, dict) and isinstance(version.get("version"), str):
        length = next(iter(lengths.values()), None)
        return ServerInfo("vllm", client.base_url, _text(version["version"]), models, length)
    return ServerInfo("openai", client.base_url, None, models, next(iter(lengths.values()), None))


def _models(client: ServerClient) -> tuple[tuple[str, ...], dict[str, int]]:
    data = client.get_json("/v1/models")
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ServerError(f"The server at {client.base_url} does not list its models at /v1/models.")
    ids, lengths = [], {}
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            ids.append(entry["id"])
            length = _int(entry.get("max_model_len"))
            if length:
                lengths[entry["id"]] = length
    return tuple(ids), lengths


def choose_model(info: ServerInfo, asked: str | None) -> str:
    """The model to ask for: ``asked`` if the server serves it, its only model when none was
    asked; otherwise a ``ServerError`` naming what it serves."""
    served = ", ".join(info.models) or "none"
    if asked is not None:
        if info.models and asked not in info.models:
            raise ServerError(f"The server at {info.url} serves no model {asked!r} (it serves: {served}).")
        return asked
    if len(info.models) == 1:
        return info.models[0]
    raise ServerError(f"The server at {info.url} serves several models ({served}): name one with --model.")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _text(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return " ".join(value.split())[:80]
