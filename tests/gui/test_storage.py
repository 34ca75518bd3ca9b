"""The conversation store against hostile and damaged files: it never writes or deletes
outside its folder, a file with wrong types is skipped and kept (the app still starts), and
temp files left by an interrupted save are cleaned up."""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from app.ui.common.conversation import Conversation, InvalidConversation, Message
from app.ui.common.storage import ORPHANED_TMP_AGE_S, ConversationStore
from app.ui.main_window import MainWindow
from app.ui.settings.store import SettingsStore
from app.worker import EngineWorker

PRECIOUS = "not the app's file"


def conversation_json(**changes: Any) -> dict[str, Any]:
    data = Conversation(title="ok", messages=[Message("user", "hi"), Message("assistant", "hello")]).to_json()
    data.update(changes)
    return data


def write(folder: Path, data: Any, name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name or uuid.uuid4().hex}.json"
    path.write_text(json.dumps(data), "utf-8")
    return path


def test_a_hostile_id_never_makes_the_store_write_or_delete_outside_its_folder(tmp_path):
    store = ConversationStore(tmp_path / "data")
    victim = tmp_path / "victim.json"  # what "../../victim" points at from the folder
    victim.write_text(PRECIOUS)
    elsewhere = tmp_path / "elsewhere"
    hostile = [
        write(store.folder, conversation_json(id="../../victim")),
        write(store.folder, conversation_json(id=str(elsewhere / "x"))),
        write(store.folder, conversation_json(), name="not-an-id"),
    ]
    renamed = write(store.folder, conversation_json(id=uuid.uuid4().hex))  # id inside != name

    loaded = store.load_all()
    for conversation in loaded:  # what the app does with each: edit, save, delete
        conversation.messages.append(Message("user", "more"))
        store.save(conversation).result()
        store.delete(conversation.id)

    assert [c.id for c in loaded] == [renamed.stem]  # named by its file, not by its content
    assert {s.path for s in store.skipped} == set(hostile) and all(p.exists() for p in hostile)
    assert victim.read_text() == PRECIOUS and not elsewhere.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "victim.json"]


@pytest.mark.parametrize("bad_id", ["../../victim", "{tmp}/absolute", "..", "", "a/b", "A" * 32])
def test_the_store_refuses_ids_it_did_not_make(tmp_path, bad_id):
    store = ConversationStore(tmp_path / "data")
    victim = tmp_path / "victim.json"
    victim.write_text(PRECIOUS)
    bad_id = bad_id.format(tmp=tmp_path)
    with pytest.raises(InvalidConversation):
        store.save(Conversation(id=bad_id, messages=[Message("user", "hi")])).result()
    with pytest.raises(InvalidConversation):
        store.delete(bad_id)
    assert victim.read_text() == PRECIOUS and sorted(p.name for p in tmp_path.iterdir()) == ["victim.json"]


WRONG_TYPES = {
    "content is a number": conversation_json(messages=[{"role": "user", "content": 123}]),
    "system prompt is a number": conversation_json(system_prompt=5),
    "unknown token kind": conversation_json(
        messages=[{"role": "assistant", "content": "x", "records": [["x", "bogus", 0, 1, None, None, None]]}]
    ),
    "short token record": conversation_json(
        messages=[{"role": "assistant", "content": "x", "records": [["x"]]}]
    ),
    "statistic is text": conversation_json(
        messages=[{"role": "assistant", "content": "x", "stats": {"new_tokens": "many"}}]
    ),
    "unknown role": conversation_json(messages=[{"role": "robot", "content": "x"}]),
    "messages is a dict": conversation_json(messages={"role": "user"}),
    "title is a list": conversation_json(title=["x"]),
    "updated is text": conversation_json(updated="yesterday"),
    "not an object": [1, 2, 3],
    "null": None,
}


@pytest.mark.parametrize("data", WRONG_TYPES.values(), ids=WRONG_TYPES.keys())
def test_a_conversation_with_wrong_types_is_refused_in_one_readable_line(data):
    with pytest.raises(InvalidConversation) as refused:
        Conversation.from_json(data)
    assert "\n" not in str(refused.value) and str(refused.value)


def test_the_app_starts_when_its_latest_conversation_file_is_damaged(app_dirs, qtbot):
    store = ConversationStore()
    good = write(store.folder, conversation_json(title="good one", updated=1_000.0))
    damaged = [write(store.folder, data) for data in WRONG_TYPES.values()]  # all updated later
    damaged.append(store.folder / f"{uuid.uuid4().hex}.json")
    damaged[-1].write_text("{not json")
    window = MainWindow(EngineWorker(loader=lambda **_kw: None), SettingsStore(), ConversationStore())
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.conversations_read and window.controller.conversation.id == good.stem)

    assert window.controller.conversation.id == good.stem and window.conversation_list.count() == 1
    notice = window.banner_text.text()
    assert window.banner.isVisible() and f"{len(damaged)} saved conversation(s)" in notice
    assert sum(str(p) in notice for p in damaged) == 3 and "and 9 more" in notice
    assert all(p.exists() for p in damaged)  # kept, so nothing the person wrote is lost
    window.close()


def test_temp_files_left_by_an_interrupted_save_are_removed_once_old(tmp_path):
    store = ConversationStore(tmp_path / "data")
    store.folder.mkdir(parents=True)
    old = store.folder / f".{uuid.uuid4().hex}.abc123.tmp"
    recent = store.folder / f".{uuid.uuid4().hex}.def456.tmp"  # perhaps a save in progress
    outside = tmp_path / "data" / ".someone-else.tmp"
    unrelated = store.folder / "notes.tmp"
    for path in (old, recent, outside, unrelated):
        path.write_text("partial")
    long_ago = time.time() - ORPHANED_TMP_AGE_S - 60
    for path in (old, outside, unrelated):
        os.utime(path, (long_ago, long_ago))

    store.load_all()
    assert not old.exists() and recent.exists() and outside.exists() and unrelated.exists()


# ---- text UTF-8 cannot hold, symbolic links, failed saves ---------------------------------
def test_a_lone_surrogate_never_makes_a_save_fail_and_reads_back_as_a_replacement(tmp_path):
    store = ConversationStore(tmp_path / "data")
    path = write(store.folder, conversation_json(title="a \ud800 b"))  # json.dumps escapes it: \ud800
    assert "\\ud800" in path.read_text("utf-8")

    opened = store.load(path.stem)
    assert opened.title == "a \ufffd b"  # as a UTF-8 decoder shows a broken character
    opened.messages.append(Message("user", "typed \udc00 here"))  # e.g. pasted half of an emoji
    store.save(opened).result()  # raised UnicodeEncodeError before: every later save failed too

    again = store.load(path.stem)
    assert [m.content for m in again.messages][-1] == "typed \ufffd here"
    assert again.title == "a \ufffd b"
    assert store.list_headers()[0].title == "a \ufffd b"


def test_a_failed_save_is_reported_and_the_message_is_written_by_the_next_one(app_dirs, qtbot, monkeypatch):
    store = ConversationStore()
    window = MainWindow(EngineWorker(loader=lambda **_kw: None), SettingsStore(), store)
    qtbot.addWidget(window)
    window.show()
    conversation = window.controller.conversation
    conversation.messages.append(Message("user", "keep me"))
    real_replace = os.replace

    def full_disk(*_args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with qtbot.waitSignal(window.controller.error) as failed:
        window.controller.save()
    assert "No space left on device" in failed.args[0]
    assert conversation.messages[-1].content == "keep me"  # still in the conversation shown

    monkeypatch.setattr(os, "replace", real_replace)
    conversation.messages.append(Message("user", "and me"))
    window.controller.save()
    window.controller.flush()
    assert [m.content for m in store.load(conversation.id).messages] == ["keep me", "and me"]
    assert not list(store.folder.glob("*.tmp"))
    window.close()


def test_a_symlinked_conversation_file_stays_a_link_and_its_target_is_saved(tmp_path):
    store = ConversationStore(tmp_path / "data")
    elsewhere = tmp_path / "synced"
    target = write(elsewhere, conversation_json(title="linked"))
    store.folder.mkdir(parents=True)
    link = store.folder / target.name
    link.symlink_to(target)

    conversation = store.load(link.stem)
    conversation.messages.append(Message("user", "more"))
    store.save(conversation).result()

    assert link.is_symlink() and link.resolve() == target.resolve()
    assert json.loads(target.read_text("utf-8"))["messages"][-1]["content"] == "more"
    assert not list(elsewhere.glob("*.tmp")) and not list(store.folder.glob(".*.tmp"))


# ---- a huge conversation does not hold up the start ----------------------------------------
def test_the_list_comes_from_file_headers_without_reading_the_messages(tmp_path):
    store = ConversationStore(tmp_path / "data")
    data = conversation_json(title="huge", updated=2_000.0)
    path = write(store.folder, data)
    text = path.read_text("utf-8")
    # the messages are cut off: only a reader of the whole file would notice
    path.write_text(text[: text.index('"messages"')] + '"messages": [' + "x" * 300_000, "utf-8")
    small = write(store.folder, conversation_json(title="small", updated=1_000.0))

    headers = store.list_headers()
    assert [(h.title, h.updated) for h in headers] == [("huge", 2_000.0), ("small", 1_000.0)]
    assert store.skipped == [] and headers[1].id == small.stem
    with pytest.raises(ValueError):
        store.load(path.stem)  # its content is read only when it is opened


def test_the_window_reads_conversations_off_its_thread_and_opens_the_latest(app_dirs, qtbot, monkeypatch):
    import threading

    store = ConversationStore()
    latest = write(store.folder, conversation_json(title="latest", updated=2_000.0))
    write(store.folder, conversation_json(title="older", updated=1_000.0))
    threads = []
    real_load = ConversationStore.load

    def spying_load(self: ConversationStore, conversation_id: str) -> Conversation:
        threads.append(threading.current_thread())
        return real_load(self, conversation_id)

    monkeypatch.setattr(ConversationStore, "load", spying_load)
    monkeypatch.setattr(ConversationStore, "load_all", lambda self: pytest.fail("read everything at start"))
    window = MainWindow(EngineWorker(loader=lambda **_kw: None), SettingsStore(), store)
    qtbot.addWidget(window)
    assert window.conversation_list.count() == 2  # listed at once, from the headers
    window.show()
    qtbot.waitUntil(lambda: window.conversations_read and window.controller.conversation.id == latest.stem)

    assert len(threads) == 2 and threading.main_thread() not in threads
    assert [m.content for m in window.controller.conversation.messages] == ["hi", "hello"]
    assert len(window.conversation_panel.conversations) == 2  # read: search covers messages
    window.close()


def test_a_file_with_its_messages_first_is_listed_without_being_read_whole(tmp_path, monkeypatch):
    store = ConversationStore(tmp_path / "data")
    data = conversation_json(title="hand made", updated=1_234.0)
    reordered = {"messages": data.pop("messages"), **data}  # not the order the app writes
    path = write(store.folder, reordered)
    monkeypatch.setattr(ConversationStore, "_read", lambda *_a: pytest.fail("read the whole file to list it"))

    (header,) = store.list_headers()
    assert header.id == path.stem and header.updated == path.stat().st_mtime  # its date until read
    monkeypatch.undo()
    assert store.load(path.stem).title == "hand made"
