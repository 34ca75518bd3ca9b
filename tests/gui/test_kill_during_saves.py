"""kill -9 while conversations are being saved loses nothing that was saved (issue 20's "kill
-9 during 90 saves lost nothing", kept as a check): a child process saves a growing
conversation again and again and says after each flush how many messages are on disk; it is
killed at random moments; every file left reads back, with at least what was confirmed."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from app.ui.common.storage import DATA_DIR_ENV, ConversationStore

SAVER = r"""
import sys
from app.ui.common.conversation import Conversation, Message
from app.ui.common.storage import ConversationStore
store = ConversationStore()
conversation = Conversation(id=sys.argv[1], title="kill -9")
for turn in range(100000):
    conversation.messages.append(Message("user" if turn % 2 == 0 else "assistant", "word " * 2000 + str(turn)))
    store.save(conversation)
    store.flush()
    print(len(conversation.messages), flush=True)
"""
KILLS = 6


def test_kill_9_during_saves_leaves_every_saved_message_readable(tmp_path: Path):
    env = {**os.environ, DATA_DIR_ENV: str(tmp_path), "QT_QPA_PLATFORM": "offscreen"}
    store = ConversationStore(tmp_path)
    rng = random.Random(20)
    conversation_id = "0123456789abcdef0123456789abcdef"
    for _ in range(KILLS):
        child = subprocess.Popen(
            [sys.executable, "-c", SAVER, conversation_id], stdout=subprocess.PIPE, text=True, env=env
        )
        assert child.stdout is not None
        confirmed = int(child.stdout.readline())  # one save on disk before the kill can land
        time.sleep(rng.uniform(0.0, 0.3))
        child.send_signal(signal.SIGKILL)
        rest = child.communicate(timeout=30)[0].split()
        confirmed = int(rest[-1]) if rest else confirmed
        loaded = store.load(conversation_id)  # never half a file
        assert len(loaded.messages) >= confirmed
        assert all(m.content.endswith(str(i)) for i, m in enumerate(loaded.messages[:confirmed]))
    assert store.list_headers() and not store.skipped
