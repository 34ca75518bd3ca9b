"""Conversations on disk: one JSON file each, written atomically (temp file + fsync +
rename) so a crash or kill never leaves a half-written file; at worst the answer in progress
is lost. The JSON is built on the caller's thread; the write happens on one background
writer thread, in order, so the GUI thread never waits on the disk.

The store names its files: ``<id>.json`` with ``id`` a uuid hex, and a loaded conversation
takes its id from its file name, never from the JSON inside, so no file can make the store
write or delete outside its folder. A file it cannot read is skipped, kept on disk and listed
in ``skipped``; temp files an interrupted save left behind are removed once they are old.

Text that UTF-8 cannot hold (a lone surrogate, from a hand-edited file or a pasted fragment)
never makes a save fail: the JSON is then written with ASCII escapes, which keep it exactly, and
on reading such code points become U+FFFD so nothing downstream chokes on them. A file that is
a symbolic link stays one: a save replaces the link's target, atomically, in the target's folder.

A file is written only when what the app would write differs from what it holds: the store
keeps a digest of each conversation as it was read or last saved, so opening a conversation and
closing the window rewrites nothing (fields this version does not understand are kept anyway,
see ``Conversation``). Deletion wins: once deleted, a conversation is not written again, by a
save queued before or after, until ``undelete`` (Undo).

Listing is cheap: ``list_headers`` reads only the start of each file (id, title, dates come
before the messages), so a huge conversation does not slow the start; ``load`` reads one
conversation's content when it is opened."""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QStandardPaths

from app.ui.common.conversation import Conversation, InvalidConversation, is_conversation_id

DATA_DIR_ENV = "SPECCHAT_DATA_DIR"
ORPHANED_TMP_AGE_S = 300.0  # a save takes milliseconds; an older temp file is left by a kill
HEADER_READ_BYTES = 64 * 1024  # the first read of a file's header; doubled while a field is cut
HEADER_MAX_BYTES = 4 * 1024 * 1024  # past this, the header is read with the whole file
LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")  # only an escape can make one in JSON
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


@dataclass(frozen=True)
class ConversationHeader:
    """What the list shows of a conversation before its content is read."""

    id: str
    title: str
    system_prompt: str
    created: float
    updated: float
    size: int  # bytes on disk

    def matches(self, query: str) -> bool:
        """Like ``Conversation.matches``, on what a header holds (title, system prompt)."""
        haystack = f"{self.title}\n{self.system_prompt}".casefold()
        return all(word in haystack for word in query.casefold().split())


def conversation_text(conversation: Conversation) -> str:
    """The file's content: UTF-8 JSON, or ASCII-escaped JSON when the text holds code points
    UTF-8 cannot encode (lone surrogates), so a save never fails on what was typed or read."""
    text = json.dumps(conversation.to_json(), ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(conversation.to_json(), ensure_ascii=True)  # \udxxx escapes keep them exactly
    return text


def _replace_surrogates(value: object) -> object:
    if isinstance(value, str):
        return LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value


def _object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    return dict(pairs)  # a Python frame per object: where the interpreter can switch threads


def parse_conversation_json(text: str) -> object:
    """``json.loads`` with lone surrogates (which only a ``\\udxxx`` escape can produce)
    replaced by U+FFFD, as a UTF-8 decoder would. Each object goes through a hook, so another
    thread (the window's) gets the interpreter between messages of a huge file."""
    data = json.loads(text, object_pairs_hook=_object)
    if SURROGATE_ESCAPE.search(text):
        data = _replace_surrogates(data)
    return data


class ConversationStore:
    def __init__(self, root: Path | None = None) -> None:
        self.folder = (root or data_dir()) / "conversations"
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="specchat-save")
        self._pending: set[Future[None]] = set()
        self.skipped: list[SkippedFile] = []  # by the last ``load_all``
        # id -> hash of the text on disk, as read or as queued; a save of the same text is skipped
        self._on_disk: dict[str, int] = {}
        self._deleted: set[str] = set()  # deleted here: never written again unless undeleted

    def save(self, conversation: Conversation) -> Future[None]:
        """Snapshot ``conversation`` now and write it in the background (a conversation with
        an id the store did not make fails the returned future, nothing is written)."""
        try:
            path = self._path(conversation.id)
        except InvalidConversation as e:
            refused: Future[None] = Future()
            refused.set_exception(e)
            return refused
        done: Future[None] = Future()
        if conversation.id in self._deleted:  # deleted: a late save must not bring the file back
            done.set_result(None)
            return done
        text = conversation_text(conversation)
        digest = hash(text)
        if self._on_disk.get(conversation.id) == digest:
            done.set_result(None)  # unchanged: the file stays as it is (its bytes and its date)
            return done
        self._on_disk[conversation.id] = digest
        future = self._writer.submit(self._write, path, text, conversation.id)
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

    def list_headers(self) -> list[ConversationHeader]:
        """Every conversation's header, most recently updated first, from the start of each
        file only; a file whose header cannot be read is listed in ``skipped``."""
        self.flush()
        self.skipped = []
        if not self.folder.is_dir():
            return []
        self._remove_orphaned_tmp_files()
        headers = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                headers.append(self._read_header(path))
            except (OSError, ValueError, RecursionError) as e:
                log.warning("skipping unreadable conversation %s: %s", path, e)
                self.skipped.append(SkippedFile(path, str(e) or type(e).__name__))
        return sorted(headers, key=lambda h: h.updated, reverse=True)

    def load(self, conversation_id: str) -> Conversation:
        """One conversation's whole content (raises OSError or ValueError when unreadable).
        Safe on another thread than the one that saves."""
        return self._read(self._path(conversation_id))

    def delete(self, conversation_id: str) -> None:
        """Raises ``InvalidConversation`` for an id the store did not make. From now on the
        conversation is not written again (``save`` does nothing) until ``undelete``."""
        path = self._path(conversation_id)
        self._deleted.add(conversation_id)
        self.flush()
        path.unlink(missing_ok=True)
        self._on_disk.pop(conversation_id, None)

    def undelete(self, conversation_id: str) -> None:
        """Undo a ``delete``: the next ``save`` writes the conversation again."""
        self._deleted.discard(conversation_id)

    def _path(self, conversation_id: str) -> Path:
        if not is_conversation_id(conversation_id):
            raise InvalidConversation(f"{str(conversation_id)[:40]!r} is not a conversation id")
        return self.folder / f"{conversation_id}.json"

    def _read(self, path: Path) -> Conversation:
        if not is_conversation_id(path.stem):
            raise InvalidConversation("the file name is not a conversation id")
        conversation = Conversation.from_json(parse_conversation_json(path.read_text("utf-8")))  # type: ignore[arg-type]
        conversation.id = path.stem  # the name the store gave it, not what the file claims
        self._on_disk[conversation.id] = hash(conversation_text(conversation))  # what saving it unchanged writes
        return conversation

    def _read_header(self, path: Path) -> ConversationHeader:
        """The fields before ``messages`` (the order ``Conversation.to_json`` writes), read
        from the start of the file. A file in another order, or whose header is longer than
        ``HEADER_MAX_BYTES``, is listed with what was found (its modification time as its
        date) and corrected once its content is read; the whole file is never read here."""
        if not is_conversation_id(path.stem):
            raise InvalidConversation("the file name is not a conversation id")
        stat = path.stat()
        limit = HEADER_READ_BYTES
        while True:
            with path.open("rb") as f:
                head = f.read(min(limit, HEADER_MAX_BYTES))
            complete = len(head) >= stat.st_size
            fields = _header_fields(_decode_head(head, complete), complete)
            if fields is not None or limit >= HEADER_MAX_BYTES:
                break
            limit *= 2
        fields = dict(_replace_surrogates(fields or {}))  # type: ignore[call-overload]
        fields.setdefault("updated", stat.st_mtime)  # not written first: the file's date until read
        try:
            data = Conversation.from_json({**fields, "id": path.stem, "messages": []})
        except (KeyError, TypeError) as e:
            raise InvalidConversation(str(e)) from e
        return ConversationHeader(path.stem, data.title, data.system_prompt, data.created, data.updated, stat.st_size)

    def _remove_orphaned_tmp_files(self) -> None:
        """``.<id>.<random>.tmp`` files (from ``_write``) older than a save could take."""
        now = time.time()
        for tmp in self.folder.glob(".*.tmp"):
            try:
                if tmp.is_file() and not tmp.is_symlink() and now - tmp.stat().st_mtime > ORPHANED_TMP_AGE_S:
                    tmp.unlink()
            except OSError as e:
                log.warning("could not remove the orphaned temp file %s: %s", tmp, e)

    def _write(self, target: Path, text: str, conversation_id: str) -> None:
        if conversation_id in self._deleted:
            return  # queued before the delete that flushed it: deletion wins
        try:
            self._replace(target, text)
        except BaseException:
            self._on_disk.pop(conversation_id, None)  # the disk does not hold it: the next save writes
            raise

    def _replace(self, target: Path, text: str) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink():  # keep the link: replace what it points at, in that folder
            target = Path(os.path.realpath(target))
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


def _header_fields(head: str, complete: bool) -> dict[str, object] | None:
    """The top-level fields of the JSON object in ``head`` up to ``"messages"``; None when
    ``head`` ends before it (read more). Raises ValueError for what is not such an object."""
    decoder = json.JSONDecoder(object_pairs_hook=dict)
    fields: dict[str, object] = {}
    whitespace = re.compile(r"\s*")
    i = whitespace.match(head, 0).end()  # type: ignore[union-attr]
    if not head[i : i + 1]:
        if complete:
            raise InvalidConversation("the file is empty")
        return None
    if head[i] != "{":
        raise InvalidConversation("the file is not a JSON object")
    i += 1
    try:
        while True:
            i = whitespace.match(head, i).end()  # type: ignore[union-attr]
            if head[i : i + 1] == "}":
                return fields
            key, i = decoder.raw_decode(head, i)
            i = whitespace.match(head, i).end()  # type: ignore[union-attr]
            if head[i : i + 1] != ":":
                raise json.JSONDecodeError("expected ':'", head, i)
            i = whitespace.match(head, i + 1).end()  # type: ignore[union-attr]
            if key == "messages":
                return fields
            value, i = decoder.raw_decode(head, i)
            fields[str(key)] = value
            i = whitespace.match(head, i).end()  # type: ignore[union-attr]
            if head[i : i + 1] == ",":
                i += 1
            elif head[i : i + 1] != "}":
                raise json.JSONDecodeError("expected ',' or '}'", head, i)
    except (json.JSONDecodeError, IndexError):
        if complete:
            raise
        return None  # cut inside a field: read more


def _decode_head(head: bytes, complete: bool) -> str:
    """UTF-8, strictly; the start of a file may end inside a character (up to 3 bytes cut)."""
    for cut in range(0 if complete else 4):
        try:
            return head[: len(head) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    return head.decode("utf-8")  # raises: not UTF-8
