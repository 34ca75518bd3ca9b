"""Reading what the person gave the CLI: prompts, prompts files, the usage error and exit codes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

DEFAULT_PROMPTS_FILE = Path(__file__).resolve().parents[2] / "resources" / "bench_prompts.txt"
EXIT_USAGE = 2
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130

Conversation = list[dict[str, str]]


class UsageError(Exception):
    """A bad command line: reported as one line, exit code 2."""


MAX_INPUT_BYTES = 8 * 2**20  # a prompt or prompts file larger than this is refused, not read whole


def _utf8_text(data: str | bytes, what: str) -> str:
    """``data`` as text, or a ``UsageError`` naming the first byte that is not UTF-8. Text
    from the command line or stdin carries such bytes as lone surrogates (Python's
    ``surrogateescape``); no tokenizer can take those, so they are refused, not guessed at."""
    if isinstance(data, str):
        try:
            data.encode("utf-8")
            return data
        except UnicodeEncodeError as error:
            code = ord(data[error.start])
            byte = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
            raise UsageError(f"{what} is not valid UTF-8 text ({byte} at character {error.start})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(
            f"{what} is not valid UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None


def _read_capped(stream: Any, what: str) -> bytes:
    """At most ``MAX_INPUT_BYTES`` from a binary stream: an endless one (``/dev/zero``) is
    refused after that many bytes instead of filling the memory."""
    data: bytes = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(f"{what} is larger than {MAX_INPUT_BYTES // 2**20} MiB")
    return data


def conversation(prompt: str, system: str | None) -> Conversation:
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    prompt = _utf8_text(prompt, "the prompt")
    messages = [{"role": "system", "content": _utf8_text(system, "--system")}] if system else []
    return messages + [{"role": "user", "content": prompt}]


def read_prompt(args: argparse.Namespace) -> str:
    if args.prompt is None:
        raise UsageError("--prompt is required")
    if args.prompt != "-":
        return _utf8_text(args.prompt, "--prompt")
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream without bytes underneath (tests, embedding)
        text = sys.stdin.read(MAX_INPUT_BYTES + 1)
        if len(text) > MAX_INPUT_BYTES:
            raise UsageError(f"the prompt on stdin is larger than {MAX_INPUT_BYTES // 2**20} MiB")
        return _utf8_text(text, "the prompt on stdin")
    return _utf8_text(_read_capped(buffer, "the prompt on stdin"), "the prompt on stdin")


def read_prompts_file(path: Path) -> list[str]:
    """One prompt per non-blank line; the two characters ``\\n`` stand for a newline."""
    try:
        with path.open("rb") as file:
            data = _read_capped(file, f"the prompts file {path}")
    except FileNotFoundError:
        raise UsageError(f"no prompts file at {path}") from None
    except OSError as error:
        raise UsageError(f"cannot read the prompts file {path}: {error.strerror or error}") from None
    lines = _utf8_text(data, f"the prompts file {path}").splitlines()
    prompts = [line.replace("\\n", "\n") for line in lines if line.strip()]
    if not prompts:
        raise UsageError(f"the prompts file {path} has no prompts")
    return prompts
