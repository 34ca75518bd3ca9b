"""A conversation written out for people (Markdown) or programs (the app's own JSON)."""

from __future__ import annotations

import json
import re
import unicodedata
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import QCoreApplication

from app.engine.errors import SpecChatError
from app.ui.common.conversation import Conversation
from app.ui.common.formatting import how_made, stats_line

FORMATS = {".md": "markdown", ".markdown": "markdown", ".json": "json"}


def conversation_markdown(conversation: Conversation) -> str:
    """Title, date, system prompt, then each turn under a heading; answers are kept as the
    Markdown the model wrote, with how they were made and their stats line."""
    date = datetime.fromtimestamp(conversation.updated).strftime("%Y-%m-%d %H:%M")
    lines = [
        "# " + (conversation.title or QCoreApplication.translate("Export", "New chat")),
        "",
        "*" + QCoreApplication.translate("Export", "SpecChat conversation") + f" · {date}*",
        "",
    ]
    if conversation.system_prompt.strip():
        lines += [
            "**"
            + QCoreApplication.translate("Export", "System prompt")
            + f":** {conversation.system_prompt}",
            "",
        ]
    for message in conversation.messages:
        if message.role == "user":
            lines += ["## " + QCoreApplication.translate("Export", "You"), "", message.content, ""]
        elif message.role == "assistant":
            made = how_made(message.speculative, message.drafter)
            lines += [
                "## " + QCoreApplication.translate("Export", "Assistant") + f" · {made}",
                "",
                message.content,
                "",
            ]
            if message.stats:
                lines += [f"*{stats_line(message.run_stats, message.speculative)}*", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def conversation_json(conversation: Conversation) -> str:
    """The same JSON the app saves (tokens with provenance included), indented."""
    return json.dumps(conversation.to_json(), ensure_ascii=False, indent=2) + "\n"


def file_stem(title: str, limit: int = 60) -> str:
    """A file name for a conversation's title: dashes of any kind become "-", apostrophes go,
    other punctuation a space; runs of spaces one; never empty ("conversation")."""
    text = "".join("-" if unicodedata.category(c) == "Pd" else c for c in title)
    text = re.sub(r"['’`]", "", text)
    text = re.sub(r"[^\w\- ]+", " ", text)
    text = re.sub(r"\s+", " ", text).strip(" -")[:limit].strip(" -")
    return text or "conversation"


def export_conversation(conversation: Conversation, path: str | Path) -> Path:
    """Write ``conversation`` to ``path``: Markdown for .md / .markdown, JSON for .json."""
    target = Path(path)
    kind = FORMATS.get(target.suffix.lower())
    if kind is None:
        raise SpecChatError(
            QCoreApplication.translate("Export", "Export to a .md or .json file (got '{0}').").format(
                target.name
            )
        )
    text = conversation_markdown(conversation) if kind == "markdown" else conversation_json(conversation)
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as e:
        raise SpecChatError(
            QCoreApplication.translate("Export", "Could not export to '{0}': {1}").format(
                target, e.strerror or e
            )
        ) from e
    return target
