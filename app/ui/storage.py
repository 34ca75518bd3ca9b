"""Conversations on disk: one JSON file each, written atomically (temp file + fsync +
rename) so a crash or kill never leaves a half-written file; at worst the answer in progress
is lost. The JSON is built on the caller's thread; the write happens on one background
writer thread, in order, so the GUI thread never waits on the disk."""

from __future__ import annotations

import json
import logging
import os
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path

from PySide6.QtCore import QStandardPaths

from .conversation import Conversation

DATA_DIR_ENV = "SPECCHAT_DATA_DIR"
log = logging.getLogger(__name__)


def data_dir() -> Path:
    """``$SPECCHAT_DATA_DIR`` if set (tests, portable installs), else the platform's
    per-user application data folder."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override)
    return Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation))


class ConversationStore:
    def __init__(self, root: Path | None = None) -> None:
        self.folder = (root or data_dir()) / "conversations"
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="specchat-save")
        self._pending: set[Future[None]] = set()

    def save(self, conversation: Conversation) -> Future[None]:
        """Snapshot ``conversation`` now and write it in the background."""
        text = json.dumps(conversation.to_json(), ensure_ascii=False)
        future = self._writer.submit(self._write, self._path(conversation.id), text)
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return future

    def flush(self, timeout: float | None = 5.0) -> None:
        """Wait for the writes queued so far."""
        wait(list(self._pending), timeout=timeout)

    def load_all(self) -> list[Conversation]:
        """Every readable conversation, most recently updated first; unreadable files are
        logged and skipped (never fatal)."""
        self.flush()
        if not self.folder.is_dir():
            return []
        conversations = []
        for path in self.folder.glob("*.json"):
            try:
                conversations.append(Conversation.from_json(json.loads(path.read_text("utf-8"))))
            except (OSError, ValueError, KeyError, TypeError) as e:
                log.warning("skipping unreadable conversation %s: %s", path, e)
        return sorted(conversations, key=lambda c: c.updated, reverse=True)

    def delete(self, conversation_id: str) -> None:
        self.flush()
        self._path(conversation_id).unlink(missing_ok=True)

    def _path(self, conversation_id: str) -> Path:
        return self.folder / f"{conversation_id}.json"

    def _write(self, target: Path, text: str) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
