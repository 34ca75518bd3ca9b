"""Reads conversations' content off the GUI thread, newest first, one at a time; the one the
person opens jumps the queue. The list itself comes from the files' headers
(``ConversationStore.list_headers``), so a huge conversation never holds up the start.

The reading thread touches no Qt object: it puts what it read in a queue, and a timer on the
GUI thread hands it on as signals (no signal is sent from the reading thread, so a window
closing while a file is read has nothing to race with).

Deletion wins: ``forget`` drops a conversation's queued reads, and a read of it already under
way (a huge file takes seconds) is discarded when it arrives, so a deleted conversation is
never listed, opened or handed to the drafter again."""

from __future__ import annotations

import queue
import threading
from collections import deque

from PySide6.QtCore import QObject, QTimer, Signal

from app.ui.common.conversation import Conversation
from app.ui.common.storage import ConversationStore

POLL_MS = 30  # how often the GUI thread collects what was read, while reading


class ConversationLoader(QObject):
    loaded = Signal(object)  # Conversation
    failed = Signal(str, str)  # conversation id, why it could not be read

    def __init__(self, store: ConversationStore, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._store = store
        self._queue: deque[str] = deque()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = False
        # (id, its epoch when the read began, what was read or None, why not)
        self._results: queue.SimpleQueue[tuple[str, int, Conversation | None, str]] = queue.SimpleQueue()
        self._epochs: dict[str, int] = {}  # id -> times forgotten (under the lock)
        self._outstanding: set[str] = set()  # asked for, not yet handed on (GUI thread only)
        self._timer = QTimer(self)
        self._timer.setInterval(POLL_MS)
        self._timer.timeout.connect(self._hand_on)

    @property
    def pending(self) -> bool:
        """Some conversation asked for has not been handed on yet (read, or found unreadable)."""
        return bool(self._outstanding)

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._thread is not None

    def read(self, ids: list[str]) -> None:
        """Queue ``ids`` (in this order) behind what is already queued."""
        self._outstanding.update(ids)
        with self._lock:
            self._queue.extend(i for i in ids if i not in self._queue)
        self._run()

    def first(self, conversation_id: str) -> None:
        """Read ``conversation_id`` next (the person is opening it)."""
        self._outstanding.add(conversation_id)
        with self._lock:
            if conversation_id in self._queue:
                self._queue.remove(conversation_id)
            self._queue.appendleft(conversation_id)
        self._run()

    def forget(self, conversation_id: str) -> None:
        """The conversation was deleted: read it no more, and drop a read of it under way."""
        self._outstanding.discard(conversation_id)
        with self._lock:
            self._epochs[conversation_id] = self._epochs.get(conversation_id, 0) + 1
            while conversation_id in self._queue:
                self._queue.remove(conversation_id)

    def stop(self) -> None:
        """Read nothing more (the window is closing); a read under way finishes unseen."""
        with self._lock:
            self._stopped = True
            self._queue.clear()
        self._timer.stop()

    def _run(self) -> None:
        with self._lock:
            if self._stopped or not self._queue:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="specchat-read", daemon=True)
                self._thread.start()
        self._timer.start()

    def _loop(self) -> None:  # the reading thread: no Qt here
        while True:
            with self._lock:
                if not self._queue or self._stopped:
                    self._thread = None
                    return
                conversation_id = self._queue.popleft()
                epoch = self._epochs.get(conversation_id, 0)
            try:
                self._results.put((conversation_id, epoch, self._store.load(conversation_id), ""))
            except (OSError, ValueError, RecursionError) as e:  # InvalidConversation, bad JSON
                self._results.put((conversation_id, epoch, None, str(e) or type(e).__name__))

    def _hand_on(self) -> None:  # the GUI thread
        while True:
            try:
                conversation_id, epoch, conversation, reason = self._results.get_nowait()
            except queue.Empty:
                break
            with self._lock:
                deleted_since = self._epochs.get(conversation_id, 0) != epoch
            if deleted_since:
                continue  # read before it was deleted: deletion wins
            self._outstanding.discard(conversation_id)
            if conversation is not None:
                self.loaded.emit(conversation)
            else:
                self.failed.emit(conversation_id, reason)
        if not self.busy and self._results.empty():
            self._timer.stop()
