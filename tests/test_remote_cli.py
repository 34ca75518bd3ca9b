"""The server options of the CLI: what goes with what, each misuse one line and exit code 2."""

from __future__ import annotations

import pytest

from app.cli.main import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["generate", "--model", "m", "--prompt", "hi"], "go with --server"),
        (["compare", "--plain-server", "http://a", "--prompt", "hi"], "go with --server"),
        (["compare", "--server", "http://127.0.0.1:9", "--prompt", "hi"], "needs the plain endpoint"),
        (["generate", "--server", "http://127.0.0.1:9", "--no-spec", "--prompt", "hi"], "decides itself"),
        (["generate", "--server", "http://127.0.0.1:9", "--timeout", "0", "--prompt", "hi"], "--timeout"),
        (["generate", "--server", "gopher://host", "--prompt", "hi"], "http:// or https://"),
        (["generate", "--server", "http://127.0.0.1:9", "--api-key-env", "NO_SUCH_VAR_X", "--prompt", "hi"],
         "NO_SUCH_VAR_X"),
    ],
)
def test_server_options_misused_are_one_line_and_exit_2(argv, message, capsys):
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1
