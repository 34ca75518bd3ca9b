"""SpecChat's translations: extract, compile, list what is missing.

    python tools/i18n.py update      # rewrite _tr helpers, extract (translations kept), build .qm
    python tools/i18n.py missing     # strings of the code with no finished French translation
    python tools/i18n.py rewrite     # only the _tr-helper rewrite (see below)
    python tools/i18n.py apply F.json  # {"Context": {"source": "traduction"}} into the .ts, then .qm

Translating new strings: ``update``, then fill the ``type="unfinished"`` entries of
``resources/i18n/specchat_fr.ts`` (by hand, in ``pyside6-linguist``, or through ``apply``),
then ``update`` again to compile ``specchat_fr.qm``.

Why a rewrite: ``pyside6-lupdate`` only sees literal strings in ``self.tr("…")``,
``QCoreApplication.translate("Ctx", "…")`` and ``QT_TRANSLATE_NOOP("Ctx", "…")``. A module
helper ``def _tr(text): return QCoreApplication.translate("Stats", text)`` hides every
``_tr("…")`` from it, so ``rewrite`` turns each such call into
``QCoreApplication.translate("Stats", "…")`` and deletes the helper. tests/gui/test_i18n.py
fails when such a helper (or any non-literal translatable text) comes back.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "app"
TS_FILE = ROOT / "resources" / "i18n" / "specchat_fr.ts"
QM_FILE = TS_FILE.with_suffix(".qm")
# {0}, {1:.2f}, %1, %n and HTML tags: what a translation must keep, exactly.
PLACEHOLDER = re.compile(r"\{[^{}]*\}|%\d+|%n|</?[a-zA-Z][^<>]*>")


@dataclass(frozen=True)
class Message:
    context: str
    source: str
    translation: str
    finished: bool


# ---- tools ---------------------------------------------------------------------------------
def qt_tool(name: str) -> str:
    """pyside6-lupdate / pyside6-lrelease: beside this Python first (a venv), then on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise SystemExit(f"i18n: error: {name} not found (pip install PySide6)")
    return found


def source_files(root: Path = SOURCES) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts)


def extract(ts_file: Path, sources: list[Path] | None = None) -> None:
    """Extract every translatable string into ``ts_file``, keeping the translations it holds.
    No source locations: line numbers would change the .ts on every edit (merge conflicts)."""
    files = [str(p) for p in (sources or source_files())]
    with tempfile.NamedTemporaryFile("w", suffix=".lst", delete=False) as lst:
        lst.write("\n".join(files))
    try:
        subprocess.run(
            [
                qt_tool("pyside6-lupdate"),
                "-silent",
                "-no-obsolete",
                "-locations",
                "none",
                "-source-language",
                "en",
                "-target-language",
                "fr_FR",
                f"@{lst.name}",
                "-ts",
                str(ts_file),
            ],
            check=True,
        )
    finally:
        os.unlink(lst.name)


def compile_qm(ts_file: Path = TS_FILE, qm_file: Path = QM_FILE) -> None:
    subprocess.run([qt_tool("pyside6-lrelease"), "-silent", str(ts_file), "-qm", str(qm_file)], check=True)


# ---- reading the .ts -----------------------------------------------------------------------
def read_ts(ts_file: Path = TS_FILE) -> list[Message]:
    messages = []
    for context in ET.parse(ts_file).getroot().iter("context"):
        name = context.findtext("name") or ""
        for message in context.iter("message"):
            translation = message.find("translation")
            assert translation is not None
            forms = [f.text or "" for f in translation.iter("numerusform")]
            text = "\n".join(forms) if forms else (translation.text or "")
            kind = translation.get("type")
            messages.append(
                Message(name, message.findtext("source") or "", text, kind is None and bool(text.strip()))
            )
    return messages


def current_messages(ts_file: Path = TS_FILE) -> list[Message]:
    """The code's strings as they stand now, merged with the translations of ``ts_file``."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "specchat_fr.ts"
        if ts_file.exists():
            shutil.copy(ts_file, fresh)
        extract(fresh)
        return read_ts(fresh)


def placeholders(text: str) -> list[str]:
    return sorted(PLACEHOLDER.findall(text))


def apply_translations(table: dict[str, dict[str, str]], ts_file: Path = TS_FILE) -> int:
    """Write ``{context: {source: translation}}`` into the .ts as finished translations."""
    tree = ET.parse(ts_file)
    done = 0
    for context in tree.getroot().iter("context"):
        wanted = table.get(context.findtext("name") or "", {})
        for message in context.iter("message"):
            text = wanted.get(message.findtext("source") or "")
            translation = message.find("translation")
            if text and translation is not None:
                forms = translation.findall("numerusform")
                if forms:  # a plural message (%n): one line of the translation per form
                    lines = text.split("\n")
                    for i, form in enumerate(forms):
                        form.text = lines[min(i, len(lines) - 1)]
                else:
                    translation.text = text
                translation.attrib.pop("type", None)
                done += 1
    with open(ts_file, "wb") as out:
        out.write(b'<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE TS>\n')
        tree.write(out, encoding="utf-8", xml_declaration=False)
        out.write(b"\n")
    return done


# ---- the _tr-helper rewrite ----------------------------------------------------------------
def _string(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def is_translate_call(node: ast.AST) -> bool:
    """``QCoreApplication.translate(...)`` (any prefix) or a bare ``translate(...)``."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == "translate") or (
        isinstance(f, ast.Name) and f.id == "translate"
    )


def helper_contexts(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """Module functions of the shape ``def h(text): return QCoreApplication.translate("C", text)``."""
    helpers = {}
    for node in tree.body:
        if not (isinstance(node, ast.FunctionDef) and len(node.args.args) == 1):
            continue
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and _string(s.value) is not None)]
        call = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
        if not (isinstance(call, ast.Call) and is_translate_call(call)):
            continue
        param = node.args.args[0].arg
        if (
            len(call.args) == 2
            and _string(call.args[0]) is not None
            and isinstance(call.args[1], ast.Name)
            and call.args[1].id == param
        ):
            helpers[node.name] = node
    return helpers


def rewrite_source(text: str) -> tuple[str, list[str]]:
    """The module with its ``_tr``-style helpers inlined, and the calls it could not inline."""
    tree = ast.parse(text)
    helpers = helper_contexts(tree)
    if not helpers:
        return text, []
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def at(lineno: int, col: int) -> int:  # ast columns are UTF-8 byte offsets
        return offsets[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode())

    edits: list[tuple[int, int, str]] = []
    problems: list[str] = []
    in_fstring = {id(n) for f in ast.walk(tree) if isinstance(f, ast.JoinedStr) for n in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in helpers:
            literal = len(node.args) == 1 and _string(node.args[0]) is not None and not node.keywords
            if not literal or id(node) in in_fstring:
                problems.append(
                    f"line {node.lineno}: {node.func.id}() of a non-literal or inside an f-string (lupdate "
                    "cannot see either): rewrite it by hand"
                )
                continue
            ret = helpers[node.func.id].body[-1]
            assert isinstance(ret, ast.Return) and isinstance(ret.value, ast.Call)
            context = _string(ret.value.args[0])
            start = at(node.func.lineno, node.func.col_offset)
            end = at(node.func.end_lineno or node.lineno, node.func.end_col_offset or 0)
            edits.append((start, end + 1, f'QCoreApplication.translate("{context}", '))
    if problems:
        return text, problems
    for helper in helpers.values():
        first = helper.decorator_list[0].lineno if helper.decorator_list else helper.lineno
        start, end = offsets[first - 1], offsets[helper.end_lineno or helper.lineno]
        while end < len(text) and text[end] == "\n":  # the blank lines after it
            end += 1
        edits.append((start, end, ""))
    out = text
    for start, end, new in sorted(edits, reverse=True):
        out = out[:start] + new + out[end:]
    return out, []


def rewrite(paths: list[Path]) -> int:
    """Rewrite the files in place, then ``ruff format`` them: the longer calls get re-wrapped."""
    failed = 0
    for path in paths:
        text = path.read_text(encoding="utf-8")
        new, problems = rewrite_source(text)
        for problem in problems:
            print(f"{path.relative_to(ROOT)}: {problem}", file=sys.stderr)
            failed += 1
        if new == text:
            continue
        path.write_text(new, encoding="utf-8")
        print(f"rewrote {path.relative_to(ROOT)}")
        ruff = Path(sys.executable).parent / "ruff"
        command = str(ruff) if ruff.exists() else shutil.which("ruff")
        if command is None:
            print(f"{path.relative_to(ROOT)}: ruff not found: wrap the long lines by hand", file=sys.stderr)
        else:
            subprocess.run([command, "format", "--quiet", str(path)], check=False)
    return failed


# ---- the convention check (also used by the tests) ----------------------------------------
def convention_problems(path: Path) -> Iterator[str]:
    """Translatable calls whose text lupdate cannot read: a helper, a variable, an f-string.
    A runtime translation of text marked elsewhere with QT_TRANSLATE_NOOP carries ``# i18n: noop``."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    lines = text.splitlines()
    for name in helper_contexts(tree):
        yield f"{path}: helper {name}() hides its strings from lupdate (run tools/i18n.py rewrite)"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name == "tr" and isinstance(f, ast.Attribute):
            texts = node.args[:1]
        elif name in ("translate", "QT_TRANSLATE_NOOP") and (
            name == "QT_TRANSLATE_NOOP" or is_qt_layer(path) or isinstance(f, ast.Attribute)
        ):
            texts = node.args[:2]
        else:
            continue
        if any(_string(t) is None for t in texts) and "# i18n: noop" not in lines[node.lineno - 1]:
            yield f"{path}:{node.lineno}: {name}() of a non-literal string (lupdate cannot see it)"


def is_qt_layer(path: Path) -> bool:
    """app/engine has no Qt: a ``translate`` there is a callback the GUI passes in."""
    return "engine" not in path.parts


# ---- commands ------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/i18n.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("update", help="rewrite _tr helpers, extract strings into the .ts, compile the .qm")
    sub.add_parser("missing", help="list strings without a finished French translation")
    sub.add_parser("rewrite", help="inline _tr-style helpers as QCoreApplication.translate calls")
    apply = sub.add_parser("apply", help="write translations from a JSON file into the .ts")
    apply.add_argument("json", type=Path)
    args = parser.parse_args(argv)
    if args.command == "rewrite":
        return 1 if rewrite(source_files()) else 0
    if args.command == "update":
        if rewrite(source_files()):
            return 1
        TS_FILE.parent.mkdir(parents=True, exist_ok=True)
        extract(TS_FILE)
        compile_qm()
        messages = read_ts()
        unfinished = sum(not m.finished for m in messages)
        print(f"{len(messages)} strings, {unfinished} without a French translation ({TS_FILE.name})")
        return 0
    if args.command == "apply":
        table = json.loads(args.json.read_text(encoding="utf-8"))
        print(f"{apply_translations(table)} translations written")
        compile_qm()
        return 0
    todo: dict[str, dict[str, str]] = {}
    for m in current_messages():
        if not m.finished:
            todo.setdefault(m.context, {})[m.source] = ""
    print(json.dumps(todo, ensure_ascii=False, indent=1))
    return 1 if todo else 0


if __name__ == "__main__":
    sys.exit(main())
