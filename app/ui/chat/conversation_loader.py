"""Reads conversations' content off the GUI thread, newest first, one at a time; the one the
person opens jumps the queue. The list itself comes from the files' headers
(``ConversationStore.list_headers``), so a huge conversation never holds up the start."""

from __future__ import annotations

import threading
from collections import deque

from PySide6.QtCore import QObject, Signal

from app.ui.common.storage import ConversationStore


class ConversationLoader(QObject):
    loaded = Signal(object)  # Conversation (emitted from the reading thread, queued to the GUI)
    failed = Signal(str, str)  # conversation id, why it could not be read

    def __init__(self, store: ConversationStore, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._store = store
        self._queue: deque[str] = deque()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._outstanding: set[str] = set()  # asked for, not yet answered (GUI thread only)
        # connected first, so the window's own slots already see the answer counted
        # (methods, not lambdas: a lambda would run on the reading thread, a method of this
        # object runs on the GUI thread, queued in the order the signals were sent)
        self.loaded.connect(self._answered)
        self.failed.connect(self._answered)

    def _answered(self, conversation: object, _reason: str = "") -> None:
        self._outstanding.discard(conversation if isinstance(conversation, str) else conversation.id)  # type: ignore[attr-defined]

    @property
    def pending(self) -> bool:
        """Some conversation asked for has not been answered yet (read, or found unreadable)."""
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

    def stop(self) -> None:
        """Read nothing more (the window is closing); a read under way finishes."""
        with self._lock:
            self._stopped = True
            self._queue.clear()

    def _run(self) -> None:
        with self._lock:
            if self._thread is not None or self._stopped or not self._queue:
                return
            self._thread = threading.Thread(target=self._loop, name="specchat-read", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._lock:
                if not self._queue or self._stopped:
                    self._thread = None
                    return
                conversation_id = self._queue.popleft()
            try:
                try:
                    conversation = self._store.load(conversation_id)
                except (OSError, ValueError, RecursionError) as e:  # InvalidConversation, bad JSON
                    self.failed.emit(conversation_id, str(e) or type(e).__name__)
                else:
                    self.loaded.emit(conversation)
            except RuntimeError:  # the window closed while a file was read: nobody is listening
                return
