"""What the window says about the models: it answers each load request by its id, shows the
models actually answering, keeps a path that failed to load so it can be fixed, and follows
the speculation switch. A stub loader stands in for the engine (no model is run here)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from stand_in_backend import StandInBackend

from app.engine.errors import ModelLoadError
from app.ui.common.conversation import Conversation, Message, TokenRecord
from app.ui.common.storage import ConversationStore
from app.ui.main_window import MainWindow
from app.ui.settings.store import AppSettings, ModelSettings, SettingsStore
from app.worker import EngineWorker

TIMEOUT_MS = 10_000


class StubLoader:
    """Loads ``/models/<name>`` instantly as an engine named ``<name>``; ``/models/broken``
    fails; a target in ``held`` waits until its event is set."""

    def __init__(self) -> None:
        self.held: dict[str, threading.Event] = {}
        self.target: SimpleNamespace | None = None  # the loaded target's dtype and kernels, if set

    def __call__(self, target: str, draft: str | None, **_options: object) -> StandInBackend:
        name = Path(target).name
        if name in self.held:
            self.held[name].wait(TIMEOUT_MS / 1000)
        if name == "broken":
            raise ModelLoadError(f"No model found at {target}")
        drafter = {"lookup": "prompt lookup", "suffix": "suffix index"}.get(draft or "", "none")
        return StandInBackend(name, drafter, target=self.target)


def models(name: str) -> ModelSettings:
    return ModelSettings(target_kind="folder", target_path=f"/models/{name}", draft_kind="lookup")


@pytest.fixture
def stub_window(app_dirs: Path, qtbot) -> Iterator[Callable[..., tuple[MainWindow, StubLoader]]]:  # type: ignore[no-untyped-def]
    windows: list[MainWindow] = []

    def open_(first: str = "a", speculative: bool = True) -> tuple[MainWindow, StubLoader]:
        SettingsStore().save(AppSettings(models=models(first), speculative=speculative))
        loader = StubLoader()
        window = MainWindow(EngineWorker(loader=loader), SettingsStore(), ConversationStore())
        qtbot.addWidget(window)
        window.show()
        windows.append(window)
        with qtbot.waitSignal(window.worker.loaded, timeout=TIMEOUT_MS):
            window.start()
        return window, loader

    yield open_
    for window in windows:
        window.close()


def apply_models(window: MainWindow, name: str) -> None:
    window.apply_settings(replace(window.settings, models=models(name)))


def test_an_earlier_loads_success_does_not_mark_a_later_request_loaded(stub_window, qtbot):
    window, loader = stub_window("a")
    loader.held["c"] = threading.Event()
    with qtbot.waitSignal(window.worker.loaded, timeout=TIMEOUT_MS):
        apply_models(window, "b")
        apply_models(window, "c")  # queued before b's answer arrives
    assert "Loading /models/c" in window.model_label.text()  # b's answer is not c's
    assert window.models_in_use is not None and window.models_in_use.models == models("b")
    with qtbot.waitSignal(window.worker.loaded, timeout=TIMEOUT_MS):
        loader.held["c"].set()
    assert window.models_in_use.models == models("c") and "Target: c" in window.model_label.text()


def test_a_failed_load_keeps_the_typed_path_and_shows_the_models_still_answering(stub_window, qtbot):
    window, _loader = stub_window("a")
    with qtbot.waitSignal(window.worker.load_failed, timeout=TIMEOUT_MS):
        apply_models(window, "b")  # succeeds, but is superseded at once
        apply_models(window, "broken")
    label = window.model_label.text()
    assert "Target: b · Drafter: prompt lookup" in label and "failed" not in label.lower()
    assert "could not be loaded" in label and "/models/broken" in window.banner_text.text()
    assert window.settings.models == models("broken") == SettingsStore().load().models  # kept

    dialog = window.open_settings()
    assert dialog.target.value() == ("folder", "/models/broken")
    assert dialog.model_error.isVisible() and "No model found at /models/broken" in dialog.model_error.text()
    dialog.target.set_value("folder", "/models/d")
    assert dialog.model_error.isHidden()  # the person is fixing it
    with qtbot.waitSignal(window.worker.loaded, timeout=TIMEOUT_MS):
        dialog._on_accept()
    assert "Target: d" in window.model_label.text() and "could not" not in window.model_label.text()
    assert window.open_settings().model_error.isHidden()


def test_speculation_off_shows_no_drafter_and_no_draft_swatch(stub_window, qtbot):
    window, _loader = stub_window("a")
    assert "Drafter: prompt lookup" in window.model_label.text()
    assert window.legend.shown_kinds() == ["draft", "target"]
    window.speculation_switch.click()
    assert not window.settings.speculative
    assert "Drafter" not in window.model_label.text() and "Speculation off" in window.model_label.text()
    assert window.legend.shown_kinds() == ["target"]
    window.show_rejected.click()  # nothing can be rejected without drafts
    assert window.legend.shown_kinds() == ["target"]
    window.speculation_switch.click()
    assert window.legend.shown_kinds() == ["draft", "target", "rejected"]
    assert "Drafter: prompt lookup" in window.model_label.text()


def test_the_legend_keeps_accepted_drafts_while_answers_on_screen_show_them(stub_window, qtbot):
    window, _loader = stub_window("a")
    answer = Message("assistant", "ab", records=[TokenRecord("a", "draft", 1), TokenRecord("b", "target", 1)])
    window._open(Conversation(messages=[Message("user", "q"), answer]))
    window.speculation_switch.click()  # speculation off: the green tokens on screen stay explained
    assert not window.settings.speculative
    assert window.legend.shown_kinds() == ["draft", "target"]
    window._open(Conversation(messages=[Message("user", "q"), Message("assistant", "b", records=[answer.records[1]])]))
    assert window.legend.shown_kinds() == ["target"]  # nothing drafted on screen, none drafted next


def test_a_successful_load_clears_the_load_error_banner_but_not_other_notices(stub_window, qtbot):
    window, _loader = stub_window("a")
    with qtbot.waitSignal(window.worker.load_failed, timeout=TIMEOUT_MS):
        apply_models(window, "broken")
    assert window.banner.isVisible() and "Could not load the models" in window.banner_text.text()
    with qtbot.waitSignal(window.worker.loaded, timeout=TIMEOUT_MS):
        apply_models(window, "b")
    assert window.banner.isHidden()  # the models it complained about are replaced by ones that load
    window.show_error("Some conversation files could not be read.")
    with qtbot.waitSignal(window.worker.loaded, timeout=TIMEOUT_MS):
        apply_models(window, "c")
    assert window.banner.isVisible()  # not about loading: a load does not clear it


def test_the_status_bar_names_the_dtype_and_kernel_path_the_engine_reports(stub_window, qtbot):
    window, loader = stub_window("a")
    native = SimpleNamespace(applied=True, compute="bfloat16")
    fallback = SimpleNamespace(applied=True, compute="float32")
    for target, shown, tip in (
        (SimpleNamespace(dtype="bfloat16", device="cpu", note="bf16 in fp32", kernels=fallback),
         "bf16 weights, fp32 compute", "bf16 in fp32"),
        (SimpleNamespace(dtype="bfloat16", device="cpu", note="", kernels=native), "bf16 · oneDNN kernels", ""),
        (SimpleNamespace(dtype="float32", device="cpu", note="", kernels=None), "fp32 · stock kernels", ""),
        (SimpleNamespace(dtype="float16", device="cuda:0", note="", kernels=None), "fp16", ""),
    ):
        loader.target = target
        with qtbot.waitSignal(window.worker.loaded, timeout=TIMEOUT_MS):
            apply_models(window, f"m-{shown}")
        assert window.model_label.text().endswith(" · " + shown) and window.model_label.toolTip() == tip


def test_the_earlier_conversations_drafter_has_one_name_on_screen(stub_window, qtbot):
    from app.ui.chat.message_widgets import AnswerWidget

    window, _loader = stub_window("a")
    with qtbot.waitSignal(window.worker.loaded, timeout=TIMEOUT_MS):
        window.apply_settings(replace(window.settings, models=replace(models("a"), draft_kind="suffix")))
    assert "Drafter: earlier conversations" in window.model_label.text()
    answer = AnswerWidget(Message("assistant", "x", speculative=True, drafter="suffix index"))
    qtbot.addWidget(answer)
    assert "earlier conversations" in answer.header.text() and "suffix" not in answer.header.text()
