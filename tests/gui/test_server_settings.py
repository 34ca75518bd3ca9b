"""Settings → Server: where answers are made, the server's address checked as typed, the API
key named (never stored), the choice kept across starts, the models listed off the GUI thread."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from PySide6.QtCore import QSettings

from app.ui.settings.server_settings import ServerSettingsPanel, env_name_problem, url_problem
from app.ui.settings.settings_dialog import SettingsDialog
from app.ui.settings.store import AppSettings, ServerSettings, SettingsStore
from app.worker.server_probe import ServerProbe

SECRET = "sk-test-7d1f0c55e2b94a"  # a key's value: must never reach the settings file or a log


@pytest.mark.parametrize(
    "url",
    ["ftp://127.0.0.1:8080", "file:///etc/passwd", "127.0.0.1:8080", "http://", "http://a b:80",
     "http://127.0.0.1:99999", "http://user:pw@127.0.0.1:8080", "http://127.0.0.1:8080/?key=x", ""],
)
def test_only_http_and_https_urls_with_a_host_are_accepted(qapp, url: str) -> None:  # type: ignore[no-untyped-def]
    assert url_problem(url) is not None


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "https://models.example.org/v1", "http://[::1]:8000"])
def test_plain_server_urls_pass(qapp, url: str) -> None:  # type: ignore[no-untyped-def]
    assert url_problem(url) is None


def test_the_api_key_field_takes_a_variable_name_not_a_key(qapp) -> None:  # type: ignore[no-untyped-def]
    assert env_name_problem("OPENAI_API_KEY") is None
    assert env_name_problem("") is None
    assert env_name_problem(SECRET) is not None  # "-" cannot be in a name: it is a key


def test_a_wrong_url_is_refused_with_a_visible_reason(app_dirs: Path, qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = SettingsDialog(AppSettings())
    qtbot.addWidget(dialog)
    dialog.server.on_server.setChecked(True)
    dialog.server.url.setText("ftp://127.0.0.1:8080")
    assert not dialog.server.url_error.isHidden()
    assert "http://" in dialog.server.url_error.text()
    dialog._on_accept()
    assert dialog.result() == 0  # not accepted
    assert not dialog.error.isHidden() and "http://" in dialog.error.text()
    dialog.server.url.setText("http://127.0.0.1:8080")
    assert dialog.server.url_error.isHidden()


def test_the_server_choice_persists_and_the_key_never_reaches_the_file(
    app_dirs: Path, qtbot, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("SPECCHAT_TEST_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    dialog = SettingsDialog(AppSettings())
    qtbot.addWidget(dialog)
    panel = dialog.server
    panel.on_server.setChecked(True)
    panel.url.setText("http://127.0.0.1:8080")
    panel.model.setCurrentText("smol-spec")
    panel.api_key_env.setText("SPECCHAT_TEST_KEY")
    panel.plain_model.setText("smol-plain")
    assert "is set" in panel.key_note.text()
    settings = dialog.settings()
    SettingsStore().save(settings)

    again = SettingsStore().load().server
    url, env = "http://127.0.0.1:8080", "SPECCHAT_TEST_KEY"
    assert again == ServerSettings("server", url, "smol-spec", env, "", "smol-plain")
    files = list((app_dirs / "settings").rglob("*.ini"))
    text = "".join(f.read_text() for f in files)
    assert "SPECCHAT_TEST_KEY" in text and SECRET not in text
    assert SECRET not in caplog.text


def test_listing_models_runs_off_the_gui_thread_and_fills_the_choice(
    app_dirs: Path, qtbot, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    monkeypatch.setenv("SPECCHAT_TEST_KEY", SECRET)
    asked: list[tuple[str, str | None, bool]] = []
    gui_thread = threading.current_thread()

    def detect(url: str, key: str | None) -> SimpleNamespace:
        asked.append((url, key, threading.current_thread() is gui_thread))
        return SimpleNamespace(models=("smol-spec", "smol-plain"), description="llama.cpp server b1")

    probe = ServerProbe(detect)
    panel = ServerSettingsPanel(probe)
    qtbot.addWidget(panel)
    chosen = replace(ServerSettings(), run_on="server", url="http://127.0.0.1:9", api_key_env="SPECCHAT_TEST_KEY")
    panel.set_value(chosen)
    with qtbot.waitSignal(probe.probed, timeout=5000):
        assert panel.request_models()
    assert asked == [("http://127.0.0.1:9", SECRET, False)]
    assert [panel.model.itemText(i) for i in range(panel.model.count())] == ["smol-spec", "smol-plain"]
    assert "llama.cpp server b1" in panel.server_note.text()


def test_a_server_that_does_not_answer_is_said_beside_the_list(app_dirs: Path, qtbot) -> None:  # type: ignore[no-untyped-def]
    def detect(url: str, key: str | None) -> None:
        raise ConnectionRefusedError("refused")

    probe = ServerProbe(detect)
    panel = ServerSettingsPanel(probe)
    qtbot.addWidget(panel)
    panel.set_value(replace(ServerSettings(), run_on="server", url="http://127.0.0.1:9"))
    with qtbot.waitSignal(probe.probed, timeout=5000):
        panel.request_models()
    assert "refused" in panel.server_note.text()
    assert panel.list_models.isEnabled()


def test_settings_written_before_the_server_choice_run_on_this_computer(app_dirs: Path, qapp) -> None:  # type: ignore[no-untyped-def]
    QSettings().setValue("server/run_on", "somewhere")
    assert SettingsStore().load().server.run_on == "computer"
