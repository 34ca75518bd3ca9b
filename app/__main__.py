"""``python -m app``: the desktop app, or with a command (generate, compare, bench) the CLI.

python -m app                          # opens the desktop app (its own options go to it)
python -m app generate --prompt "Hi"   # headless, see ``python -m app --help``

The desktop app takes options only (``-style fusion``, ``--some-qt-flag``), never a bare word,
so a first argument that is a word but no command is a mistyped command: a usage error (exit 2),
not a window opening.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence

GUI_MODULES = ("PySide6", "qasync")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    from app.cli import COMMANDS

    if args and (args[0] in COMMANDS or args[0] in ("-h", "--help", "--version")):
        from app.cli import main as cli_main

        return cli_main(args)
    if args and args[0] == "gui":
        args = args[1:]
        if any(a in ("-h", "--help", "--version") for a in args):
            return _gui_help(version_only="--version" in args and not {"-h", "--help"} & set(args))
    elif args and not args[0].startswith("-"):
        return _unknown_command(args[0], COMMANDS)
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


def _gui_help(version_only: bool) -> int:
    """``gui --help`` / ``gui --version``: answered here, without opening a window."""
    from app import __version__
    from app.cli import COMMANDS

    if version_only:
        sys.stdout.write(f"SpecChat {__version__}\n")
        return 0
    sys.stdout.write(
        "usage: python -m app [gui] [Qt options]\n\n"
        "Opens the SpecChat desktop app. Qt's own options (e.g. -style fusion, -platform xcb) are "
        "passed to it.\n"
        f"Headless commands: {', '.join(COMMANDS)} (python -m app COMMAND --help).\n"
    )
    return 0


def _unknown_command(word: str, commands: Sequence[str]) -> int:
    from app.cli import EXIT_USAGE

    choices = (*commands, "gui")
    close = difflib.get_close_matches(word, choices, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    sys.stderr.write(
        f"specchat: error: unknown command '{word}' ({hint}choose from {', '.join(choices)}; "
        "see python -m app --help)\n"
    )
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
