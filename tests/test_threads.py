"""CPU threads: the setting / flag reaches torch, "auto" means the physical cores, and a bad
value is one clear error (InvalidSettingError, exit code 2 in the CLI)."""

from __future__ import annotations

import pytest
import torch

from app.cli import main
from app.engine import Engine
from app.engine.config import LoadOptions, available_cpus
from app.engine.errors import InvalidSettingError
from app.engine.runners.threads import auto_threads, choose_threads, parse_threads, physical_cores
from app.ui.settings.settings_dialog import SettingsDialog
from app.ui.settings.store import AppSettings, ModelSettings
from app.worker import EngineWorker


@pytest.fixture(autouse=True)
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_engine_load_threads_reach_torch(tiny_models):
    Engine.load(str(tiny_models["llama"]), None, LoadOptions(device="cpu", threads=1))
    assert torch.get_num_threads() == 1
    Engine.load(str(tiny_models["llama"]), None, LoadOptions(device="cpu", threads="auto"))
    assert torch.get_num_threads() == auto_threads()


def test_cli_threads_flag_reaches_torch(tiny_models, capsys):
    torch.set_num_threads(physical_cores() + 1)
    code = main(["generate", "--target", str(tiny_models["llama"]), "--threads", "1", "--max-new-tokens", "2",
                 "--prompt", "hi", "--json"])
    assert code == 0
    assert torch.get_num_threads() == 1


def test_auto_threads_leave_one_physical_core_free():
    assert choose_threads("auto") == choose_threads(None) == max(1, physical_cores() - 1)
    fits = available_cpus()  # a number above the CPUs is capped to them (test_cli_guards)
    assert choose_threads(fits) == choose_threads(str(fits)) == fits


@pytest.mark.parametrize("bad", ["0", "-1", "two", "1.5", ""])
def test_bad_thread_counts_raise_invalid_setting(bad):
    with pytest.raises(InvalidSettingError, match="CPU threads"):
        parse_threads(bad)


@pytest.mark.parametrize("bad", ["0", "-2", "many"])
def test_cli_bad_threads_exit_2_with_one_line(bad, capsys):
    assert main(["generate", "--threads", bad, "--prompt", "hi"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "--threads" in err


def test_settings_dialog_round_trips_threads_and_kernels(qtbot):
    settings = AppSettings(models=ModelSettings(cpu_threads=1, cpu_kernels=False))
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    assert dialog.settings().models == settings.models
    assert settings.models.threads_option == 1 and ModelSettings().threads_option == "auto"


def test_worker_passes_threads_and_kernels_to_the_loader(qtbot):
    seen = {}

    def loader(**kwargs):
        seen.update(kwargs)
        raise InvalidSettingError("stop here")

    worker = EngineWorker(loader=loader)
    with qtbot.waitSignal(worker.load_failed, timeout=5000):
        worker.request_load("t", "lookup", threads=1, cpu_kernels=False)
    worker.shutdown()
    assert (seen["options"].threads, seen["options"].cpu_kernels) == (1, False)
