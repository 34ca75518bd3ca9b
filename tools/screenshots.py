"""Retake the README screenshots: docs/screenshots/chat.png and compare.png.

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
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness import PROMPT, model_settings, open_window, send_and_wait, start_app, wait_for

from app.ui.settings import AppSettings
from app.ui.storage import ConversationStore


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
    print(f"answer: {result.stats.new_tokens} tokens, acceptance {result.stats.acceptance_rate:.0%}")
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
    print(f"wrote {args.out / 'chat.png'} and {args.out / 'compare.png'}")
    window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
