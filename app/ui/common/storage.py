"""Conversations on disk: one JSON file each, written atomically (temp file + fsync +
rename) so a crash or kill never leaves a half-written file; at worst the answer in progress
is lost. The JSON is built on the caller's thread; the write happens on one background
writer thread, in order, so the GUI thread never waits on the disk.

The store names its files: ``<id>.json`` with ``id`` a uuid hex, and a loaded conversation
takes its id from its file name, never from the JSON inside, so no file can make the store
write or delete outside its folder. A file it cannot read is skipped, kept on disk and listed
in ``skipped``; temp files an interrupted save left behind are removed once they are old."""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QStandardPaths

from app.ui.common.conversation import Conversation, InvalidConversation, is_conversation_id

DATA_DIR_ENV = "SPECCHAT_DATA_DIR"
ORPHANED_TMP_AGE_S = 300.0  # a save takes milliseconds; an older temp file is left by a kill
log = logging.getLogger(__name__)


def data_dir() -> Path:
    """``$SPECCHAT_DATA_DIR`` if set (tests, portable installs), else the platform's
    per-user application data folder."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override)
    return Path(QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation))


@dataclass(frozen=True)
class SkippedFile:
    """A conversation file that could not be read; it stays on disk untouched."""

    path: Path
    reason: str


class ConversationStore:
    def __init__(self, root: Path | None = None) -> None:
        self.folder = (root or data_dir()) / "conversations"
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="specchat-save")
        self._pending: set[Future[None]] = set()
        self.skipped: list[SkippedFile] = []  # by the last ``load_all``

    def save(self, conversation: Conversation) -> Future[None]:
        """Snapshot ``conversation`` now and write it in the background (a conversation with
        an id the store did not make fails the returned future, nothing is written)."""
        try:
            path = self._path(conversation.id)
        except InvalidConversation as e:
            refused: Future[None] = Future()
            refused.set_exception(e)
            return refused
        text = json.dumps(conversation.to_json(), ensure_ascii=False)
        future = self._writer.submit(self._write, path, text)
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return future

    def flush(self, timeout: float | None = 5.0) -> None:
        """Wait for the writes queued so far."""
        wait(list(self._pending), timeout=timeout)

    def load_all(self) -> list[Conversation]:
        """Every readable conversation, most recently updated first; unreadable files are
        logged, listed in ``skipped`` and left alone (never fatal)."""
        self.flush()
        self.skipped = []
        if not self.folder.is_dir():
            return []
        self._remove_orphaned_tmp_files()
        conversations = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                conversations.append(self._read(path))
            except (OSError, ValueError, RecursionError) as e:  # InvalidConversation, bad JSON
                log.warning("skipping unreadable conversation %s: %s", path, e)
                self.skipped.append(SkippedFile(path, str(e) or type(e).__name__))
        return sorted(conversations, key=lambda c: c.updated, reverse=True)

    def delete(self, conversation_id: str) -> None:
        """Raises ``InvalidConversation`` for an id the store did not make."""
        self.flush()
        self._path(conversation_id).unlink(missing_ok=True)

    def _path(self, conversation_id: str) -> Path:
        if not is_conversation_id(conversation_id):
            raise InvalidConversation(f"{str(conversation_id)[:40]!r} is not a conversation id")
        return self.folder / f"{conversation_id}.json"

    def _read(self, path: Path) -> Conversation:
        if not is_conversation_id(path.stem):
            raise InvalidConversation("the file name is not a conversation id")
        conversation = Conversation.from_json(json.loads(path.read_text("utf-8")))
        conversation.id = path.stem  # the name the store gave it, not what the file claims
        return conversation

    def _remove_orphaned_tmp_files(self) -> None:
        """``.<id>.<random>.tmp`` files (from ``_write``) older than a save could take."""
        now = time.time()
        for tmp in self.folder.glob(".*.tmp"):
            try:
                if tmp.is_file() and not tmp.is_symlink() and now - tmp.stat().st_mtime > ORPHANED_TMP_AGE_S:
                    tmp.unlink()
            except OSError as e:
                log.warning("could not remove the orphaned temp file %s: %s", tmp, e)

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
