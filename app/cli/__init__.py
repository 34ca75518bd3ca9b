"""Headless front over the engine: ``generate``, ``compare`` and ``bench``.

    python -m app generate --prompt "Hi"                 # prompt lookup drafter on the default model
    python -m app compare --draft SRC --prompt "Hi"      # with and without speculation, diffed
    python -m app bench --prompts-file F --json          # ours vs Hugging Face generate(), interleaved
    python -m app sweep --drafters none,lookup,SRC --k-values 1,2,4 --prompt "Hi"   # drafter experiment
    python -m app bench --scenario edits                 # suffix index vs prompt lookup, multi-turn

Every failure the engine can describe (``SpecChatError``) and every bad option ends as one line
on stderr and exit code 2; Ctrl-C ends quietly with 130. torch is imported only once a command
runs, so ``--help`` is fast.
"""

from app.cli.inputs import DEFAULT_PROMPTS_FILE, EXIT_USAGE, read_prompts_file
from app.cli.main import main
from app.cli.parser import COMMANDS, parse_args

__all__ = ["COMMANDS", "DEFAULT_PROMPTS_FILE", "EXIT_USAGE", "main", "parse_args", "read_prompts_file"]
