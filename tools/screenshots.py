"""Retake the README screenshots: docs/screenshots/chat.png, compare.png, explain.png (the Why
panel of the compared answer), drafters.png (the drafter experiment) and chat_fr.png (the
window in French).

    python tools/screenshots.py                      # bundled model + prompt lookup
    python tools/screenshots.py --target DIR --draft DIR
    xvfb-run -a python tools/screenshots.py          # on a real X server (same result)

Launches the real app (isolated settings and data), sends a prompt that prompt lookup
drafts well (repeat a paragraph with corrections), waits for the answer, grabs the window,
then runs Compare and grabs the compare view. Works offscreen (QWidget.grab()).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import PROMPT, model_settings, open_window, send_and_wait, start_app, wait_for
from PySide6.QtWidgets import QApplication

from app.ui.common.i18n import install_translators, remove_translators
from app.ui.common.storage import ConversationStore
from app.ui.settings.store import AppSettings

PROMPT_FR = (
    "Corrige les fautes et recopie la phrase : « Le décodage spéculatif laisse un petit modèle "
    "deviner plusieur jetons, et le grand modèle les vérifie tous en une seule passe. »"
)


def warm_up(settings: AppSettings, prompt: str) -> None:
    """Run the prompt both ways once in a throw-away window: a cold first forward pass
    (allocator, kernels) would otherwise make the pictured timings meaningless."""
    window = open_window(settings)
    send_and_wait(window, prompt)
    window.chat_view.answers[-1].compare_button.click()
    wait_for(window.controller.comparison_ready, timeout_s=600)
    window.close()
    shutil.rmtree(ConversationStore().folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", help="model folder, .gguf or hub id (default: bundled)")
    parser.add_argument("--draft", default="lookup", help="'lookup', 'none' or a model source")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--prompt", default=PROMPT)
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--show-rejected", action="store_true", help="show rejected drafts inline")
    parser.add_argument("--no-warmup", action="store_true", help="picture a cold first run")
    parser.add_argument("--sweep-ks", default="1,2,4,auto", help="k values for the drafter experiment")
    parser.add_argument("--prompt-fr", default=PROMPT_FR, help="the prompt of the French screenshot")
    args = parser.parse_args(argv)

    app = start_app()
    settings = replace(
        AppSettings(),
        models=model_settings(args.target, args.draft),
        max_new_tokens=args.max_new_tokens,
        show_rejected=args.show_rejected,
    )
    if not args.no_warmup:
        warm_up(settings, args.prompt)
    window = open_window(settings)
    window.resize(1200, 820)
    result = send_and_wait(window, args.prompt)
    print(f"answer: {result.stats.new_tokens} tokens, drafts accepted {result.stats.drafts_accepted_share:.0%}")
    args.out.mkdir(parents=True, exist_ok=True)
    app.processEvents()
    window.grab().save(str(args.out / "chat.png"))

    answer = window.chat_view.answers[-1]
    answer.compare_button.click()
    wait_for(window.controller.comparison_ready, timeout_s=600)
    dialog = window.compare_dialog
    assert dialog is not None
    dialog.resize(1100, 760)
    app.processEvents()
    dialog.grab().save(str(args.out / "compare.png"))
    print(f"verdict: {dialog.verdict.text()}")

    why = dialog.open_why()
    why.resize(1100, 900)
    settle(app)
    why.grab().save(str(args.out / "explain.png"))
    print(f"why: {why.summary.text()}")
    why.close()
    dialog.close()

    sweep = window.open_sweep(answer.message)
    sweep.ks_edit.setText(args.sweep_ks)
    sweep.resize(1000, 900)
    sweep.run_button.click()
    wait_for(window.worker.sweep_done, timeout_s=1800)
    settle(app)
    sweep.grab().save(str(args.out / "drafters.png"))
    print(f"drafters: {sweep.status.text()}")
    sweep.close()
    window.close()

    french = install_translators(app, "fr")
    window = open_window(settings)
    window.resize(1200, 820)
    window.new_chat_action.trigger()  # a chat of its own, not the English one above
    send_and_wait(window, args.prompt_fr)
    settle(app)
    window.grab().save(str(args.out / "chat_fr.png"))
    window.close()
    remove_translators(app, french)
    print(f"wrote chat, compare, explain, drafters and chat_fr in {args.out}")
    return 0


def settle(app: QApplication, seconds: float = 0.5) -> None:
    """Let layouts and charts paint before a grab."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()


if __name__ == "__main__":
    sys.exit(main())
