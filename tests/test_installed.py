"""An installed copy runs the same kernels as the checkout, and says so when it cannot (issue 31).

The wheel is built from this tree (``pip wheel --no-deps --no-build-isolation``, offline) and
installed with ``--target`` into a folder of its own; this venv's Python runs it from outside
the repository with ``-P -s`` and ``PYTHONPATH`` = that folder, so neither the checkout nor the
venv's editable install (a finder appended after the path's) supplies ``app``: each run checks
``app.__file__`` to be sure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from tiny_models import build_model, build_tokenizer, save

from app.engine.config import LoadOptions
from app.engine.runners import native

ROOT = Path(__file__).resolve().parent.parent
NATIVE = Path("app") / "engine" / "runners" / "native"
checkout_kernels = pytest.mark.skipif(
    native.kernels() is None, reason=f"the checkout runs torch's kernels too: {native.why_not()}"
)


def _build_inputs(into: Path) -> None:
    """What the wheel is built from: the project file, the readme it names, the package (no
    build output), the data files it lists."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    for name in ("pyproject.toml", project["project"]["readme"]):
        shutil.copy2(ROOT / name, into / name)
    shutil.copytree(ROOT / "app", into / "app", ignore=shutil.ignore_patterns("__pycache__", "build"))
    for files in project["tool"]["setuptools"]["data-files"].values():
        for name in files:
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, into / name)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    source, dist = root / "source", root / "dist"
    source.mkdir()
    _build_inputs(source)
    pip = [sys.executable, "-m", "pip", "--no-cache-dir", "--disable-pip-version-check"]
    command = [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(dist), str(source)]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    (built,) = dist.glob("specchat-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path) -> Path:
    """The wheel installed into a folder of its own (its kernels not yet built)."""
    target = wheel.parent.parent / "site"
    pip = [sys.executable, "-m", "pip", "--no-cache-dir", "--disable-pip-version-check"]
    subprocess.run([*pip, "install", "--no-deps", "--no-index", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    return target


def run_installed(site: Path, *args: str, kernels: str = "") -> subprocess.CompletedProcess[str]:
    """This venv's Python on ``site`` alone: not the checkout (``-P``, a cwd outside it), not
    the user's site-packages (``-s``); ``kernels``: SPECCHAT_KERNELS ("": SpecChat's, wherever it runs)."""
    env = {**os.environ, "PYTHONPATH": str(site), "XDG_CACHE_HOME": str(site.parent / "cache")}
    env[native.KERNELS_ENV] = kernels
    command = [sys.executable, "-P", "-s", *args]
    return subprocess.run(command, cwd=site.parent, env=env, capture_output=True, text=True, timeout=300, check=False)


REPORT = (
    "import app; from app.engine.runners import native; m = native.kernels();"
    "print(app.__file__); print(m.__file__ if m is not None else None); print(native.describe())"
)


def test_the_wheel_carries_the_kernels_source_and_no_build_of_this_machine(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert (NATIVE / "q8mm.c").as_posix() in names
    assert not [name for name in names if name.endswith((".so", ".pyd")) or "/build/" in name]


@checkout_kernels
def test_an_installed_copy_builds_and_runs_specchats_kernels(installed: Path) -> None:
    done = run_installed(installed, "-c", REPORT)
    assert done.returncode == 0, done.stderr
    package, module, described = done.stdout.strip().splitlines()
    assert Path(package).is_relative_to(installed), package  # the installed copy, not the checkout
    assert Path(module).is_relative_to(installed / NATIVE / "build"), module  # built beside its source
    assert described == native.describe()  # "int8 activations (SpecChat's AVX2 kernels)", as in the checkout
    assert described.startswith("int8 activations (SpecChat's ")

    done = run_installed(installed, "-m", "app.engine.runners.native")
    assert (done.returncode, done.stdout, done.stderr) == (0, module + "\n", "")  # built: its path, nothing else
    done = run_installed(installed, "-m", "app.engine.runners.native", kernels="torch")
    said = "specchat: bf16 activations (torch's kernels: SPECCHAT_KERNELS=torch)\n"  # built, and said not to run
    assert (done.stdout, done.stderr) == (module + "\n", said)


def test_an_installed_copy_without_the_source_says_so_in_one_line(installed: Path, tmp_path: Path) -> None:
    """Issue 31: ``python -m app.engine.runners.native`` ended in a FileNotFoundError traceback."""
    stripped = tmp_path / "site"
    shutil.copytree(installed, stripped, ignore=shutil.ignore_patterns("q8mm.c", "build"))
    missing = f"their source q8mm.c is not in {stripped / NATIVE}"

    done = run_installed(stripped, "-m", "app.engine.runners.native")
    assert done.returncode == 0 and done.stdout == ""  # the app runs without them: not an error
    said = f"specchat: SpecChat's kernels were not built: {missing}; torch's kernels run (bf16 activations)"
    assert done.stderr.splitlines() == [said]  # one line, no traceback

    done = run_installed(stripped, "-c", REPORT)
    assert done.returncode == 0, done.stderr
    package, module, described = done.stdout.strip().splitlines()
    assert Path(package).is_relative_to(stripped) and module == "None"
    assert described == f"bf16 activations (torch's kernels: they could not be built: {missing})"


@pytest.fixture
def without_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """This process as an install without ``q8mm.c``: the kernels' answer is the one a missing
    source really gives (asked once, as the cached ``_loaded`` is)."""
    monkeypatch.setattr(native, "SOURCE", tmp_path / "q8mm.c")
    monkeypatch.setenv(native.KERNELS_ENV, "")
    answer = native._loaded.__wrapped__()
    monkeypatch.setattr(native, "_loaded", lambda: answer)
    assert answer[0] is None
    return answer[1]


@pytest.mark.parametrize("form", ["int4", "int8"])
def test_the_cli_and_the_window_say_when_quantized_layers_run_torchs_kernels(
    form: str, without_source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without SpecChat's kernels a quantized model is 3-4x slower: the load says so in one line
    (the CLI's "note:" on stderr; the window's model tooltip is the same note)."""
    from app.cli import main
    from app.engine.session import Engine
    from app.worker.engine_worker import _compute_path

    tokenizer = build_tokenizer()
    folder = save(build_model("llama", tokenizer, seed=1), tokenizer, tmp_path / "target")
    engine = Engine.load(str(folder), None, LoadOptions(weights=form))
    kernels = engine.target.kernels
    assert kernels is not None and form in kernels.form.split("+")  # an int4 model keeps its head int8
    said = f"Its {kernels.form} layers run torch's kernels (bf16 activations), not SpecChat's: {without_source}."
    assert "their source q8mm.c is not in" in without_source
    path = _compute_path(engine)
    assert path is not None and said in path.note

    capsys.readouterr()
    code = main(["generate", "--target", str(folder), "--weights", form, "--no-spec", "--max-new-tokens", "2",
                 "--prompt", "Hi"])
    err = capsys.readouterr().err
    assert code == 0, err
    notes = [line for line in err.splitlines() if line.startswith("specchat: note: ")]
    assert len(notes) == 1 and said in notes[0], err  # one line, whatever else it notes
    assert "Traceback" not in err


@checkout_kernels
def test_an_install_whose_folder_is_read_only_builds_in_the_users_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A system-wide install cannot write beside its source: the module is built (once) under
    ``$XDG_CACHE_HOME/specchat/native`` and loaded from there; the package's folder stays as it was."""
    package = tmp_path / "site" / NATIVE
    package.mkdir(parents=True)
    shutil.copy2(native.SOURCE, package / "q8mm.c")
    monkeypatch.setattr(native, "SOURCE", package / "q8mm.c")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    writable = os.access
    monkeypatch.setattr(native.os, "access", lambda path, mode: Path(path) != package and writable(path, mode))

    module, why = native._loaded.__wrapped__()
    assert module is not None, why
    assert Path(module.__file__).is_relative_to(tmp_path / "cache" / "specchat" / "native")
    assert native.build() == Path(module.__file__)  # found there again, not rebuilt elsewhere
    assert sorted(p.name for p in package.iterdir()) == ["q8mm.c"]
