"""``python -m app``: the desktop app, or with a command (generate, compare, bench) the CLI.

python -m app                          # opens the desktop app (its own options go to it)
python -m app generate --prompt "Hi"   # headless, see ``python -m app --help``
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

GUI_MODULES = ("PySide6", "qasync")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    from app.cli import COMMANDS

    if args and (args[0] in COMMANDS or args[0] in ("-h", "--help")):
        from app.cli import main as cli_main

        return cli_main(args)
    if args and args[0] == "gui":
        args = args[1:]
    try:
        from app.gui import main as gui_main
    except ModuleNotFoundError as error:
        if error.name not in GUI_MODULES + ("app.gui",):
            raise
        missing = "the desktop app" if error.name == "app.gui" else error.name
        sys.stderr.write(
            f"specchat: error: {missing} is not installed; generate, compare and bench work without it "
            "(python -m app --help)\n"
        )
        return 1
    return gui_main(args)


if __name__ == "__main__":
    sys.exit(main())
