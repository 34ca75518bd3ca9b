"""The CLI's entry point: one command run, every known failure one line on stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from app.cli.commands import RUNNERS
from app.cli.inputs import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from app.cli.output import _clear_progress, _quiet_libraries, fail
from app.cli.parser import parse_args
from app.engine.errors import SpecChatError


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code. Never lets a known failure out as a traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse_args(argv)
        with _quiet_libraries():
            return RUNNERS[args.command](args, sys.stdout)
    except SystemExit as exit_:  # --help
        return exit_.code if isinstance(exit_.code, int) else 0
    except (UsageError, SpecChatError) as error:
        return fail(str(error), EXIT_USAGE)
    except KeyboardInterrupt:
        _clear_progress(sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. piped into head
        _silence_stdout()
        return EXIT_FAILURE
    except Exception as error:
        if type(error).__name__ == "OutOfMemoryError":  # torch.OutOfMemoryError, without importing torch
            return fail(
                "out of memory: try a smaller model, --dtype bfloat16, --device cpu or fewer "
                "--max-new-tokens",
                EXIT_FAILURE,
            )
        raise



def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
