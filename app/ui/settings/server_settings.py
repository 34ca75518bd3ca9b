"""Settings: where the answers are made — this computer, or an OpenAI-compatible server.

A panel of the settings dialog. It checks what the person typed as they type it (only
``http://`` and ``https://`` URLs, the NAME of an environment variable for the key, never the
key), and lists the server's models when asked: the request runs on a worker thread
(``ServerProbe``), the answer comes back as a signal, so the dialog never waits on the network.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QRadioButton,
    QWidget,
)

from app.ui.common.engine_words import server_words
from app.ui.settings.store import ServerSettings

if TYPE_CHECKING:
    from app.worker.server_probe import ServerProbe

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ERROR_STYLE = "color: #c0392b;"


def url_problem(url: str, what: str = "") -> str | None:
    """Why ``url`` is not a server address SpecChat will talk to (None: it is). Only ``http://``
    and ``https://``, with a host, and no user name or password in it (a secret typed there
    would be saved in the settings file)."""
    url = url.strip()
    label = what or QCoreApplication.translate("ServerSettings", "The server's URL")
    if not url:
        return QCoreApplication.translate(
            "ServerSettings", "{0} is empty: type it, e.g. http://127.0.0.1:8080."
        ).format(label)
    if any(c.isspace() for c in url):
        return QCoreApplication.translate("ServerSettings", "{0} holds a space.").format(label)
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is not a number, or out of range
    except ValueError:
        return QCoreApplication.translate("ServerSettings", "{0} is not a valid URL (look at the port number).").format(
            label
        )
    if parts.scheme not in ("http", "https"):
        return QCoreApplication.translate(
            "ServerSettings", "{0} must start with http:// or https:// (SpecChat talks to nothing else)."
        ).format(label)
    if not parts.hostname:
        return QCoreApplication.translate("ServerSettings", "{0} names no host: e.g. http://127.0.0.1:8080.").format(
            label
        )
    if parts.username is not None or parts.password is not None:
        return QCoreApplication.translate(
            "ServerSettings",
            "{0} holds a user name or password: leave it out and name an environment variable "
            "holding the API key instead (the settings file would keep it).",
        ).format(label)
    if parts.query or parts.fragment:
        return QCoreApplication.translate(
            "ServerSettings", "{0} must not carry a query (?…) or a fragment (#…): the server's address only."
        ).format(label)
    del port
    return None


def env_name_problem(name: str) -> str | None:
    """Why ``name`` is not the name of an environment variable (None: it is, or it is empty)."""
    name = name.strip()
    if not name or ENV_NAME.fullmatch(name):
        return None
    return QCoreApplication.translate(
        "ServerSettings",
        "The API key setting takes the NAME of an environment variable (letters, digits and _, "
        "e.g. OPENAI_API_KEY), not the key itself: the key is never written to the settings.",
    )


class ServerSettingsPanel(QWidget):
    """ "Run models on: this computer / a server", the server's URL, model and API key variable,
    and the plain endpoint Compare measures against."""

    def __init__(self, probe: ServerProbe | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._probe = probe
        self._probe_id = -1  # the listing whose answer is awaited
        form = QFormLayout(self)
        self.on_computer = QRadioButton(self.tr("This computer (the models in the Models tab)"), self)
        self.on_server = QRadioButton(self.tr("A server (OpenAI-compatible: llama.cpp's llama-server, vLLM)"), self)
        self.on_computer.setToolTip(
            self.tr("SpecChat runs the models itself, on this computer: nothing leaves it.")
        )
        self.on_server.setToolTip(
            self.tr(
                "SpecChat sends the conversation to the server at this address and shows what it "
                "answers and what it says about its drafts. Nothing is sent anywhere else."
            )
        )
        group = QButtonGroup(self)
        group.addButton(self.on_computer)
        group.addButton(self.on_server)
        self.url = QLineEdit(self)
        self.url.setPlaceholderText("http://127.0.0.1:8080")
        self.url.setToolTip(self.tr("The server's address: http:// or https://, a host and a port."))
        self.url_error = _error_label(self)
        self.model = QComboBox(self)
        self.model.setEditable(True)
        self.model.setMinimumContentsLength(24)
        self.model.lineEdit().setPlaceholderText(self.tr("(the server's only model)"))
        self.model.setToolTip(self.tr("The model name the server knows; leave it empty when the server has one model."))
        self.list_models = QPushButton(self.tr("List models"), self)
        self.list_models.setToolTip(self.tr("Ask the server which models it serves and what it is."))
        self.server_note = QLabel(self)  # what the server said it is, or why it did not answer
        self.server_note.setWordWrap(True)
        self.api_key_env = QLineEdit(self)
        self.api_key_env.setPlaceholderText(self.tr("e.g. OPENAI_API_KEY (empty: no key)"))
        self.api_key_env.setToolTip(
            self.tr(
                "The name of an environment variable that holds the key, for a server that wants "
                "one. SpecChat reads the key from it when connecting and never saves or logs it."
            )
        )
        self.key_note = QLabel(self)
        self.key_note.setWordWrap(True)
        self.plain_url = QLineEdit(self)
        self.plain_url.setPlaceholderText(self.tr("(empty: the same server, with the model below)"))
        self.plain_url.setToolTip(
            self.tr(
                "Compare needs a second endpoint that does not speculate: neither llama.cpp nor vLLM "
                "turns speculation off for one request. Another server's URL, or empty for a "
                "llama.cpp router serving both variants."
            )
        )
        self.plain_url_error = _error_label(self)
        self.plain_model = QLineEdit(self)
        self.plain_model.setPlaceholderText(self.tr("(that server's only model)"))
        self.plain_model.setToolTip(self.tr("The plain endpoint's model name (a router's plain variant)."))

        model_row = QHBoxLayout()
        model_row.addWidget(self.model, 1)
        model_row.addWidget(self.list_models)
        form.addRow(self.tr("Run models on:"), self.on_computer)
        form.addRow("", self.on_server)
        form.addRow(self.tr("Server URL:"), self.url)
        form.addRow("", self.url_error)
        form.addRow(self.tr("Model:"), model_row)
        form.addRow("", self.server_note)
        form.addRow(self.tr("API key variable:"), self.api_key_env)
        form.addRow("", self.key_note)
        heading = QLabel(self.tr("For Compare: the endpoint without speculation"), self)
        heading.setStyleSheet("font-weight: bold;")
        form.addRow(heading)
        form.addRow(self.tr("Plain server URL:"), self.plain_url)
        form.addRow("", self.plain_url_error)
        form.addRow(self.tr("Plain model:"), self.plain_model)

        self.on_server.toggled.connect(self._on_mode_changed)
        self.url.textChanged.connect(self._check)
        self.plain_url.textChanged.connect(self._check)
        self.api_key_env.textChanged.connect(self._check)
        self.list_models.clicked.connect(self.request_models)
        if probe is not None:
            probe.probed.connect(self._on_probed)
        self.set_value(ServerSettings())

    # ---- values ----------------------------------------------------------------------
    def set_value(self, server: ServerSettings) -> None:
        (self.on_server if server.on_server else self.on_computer).setChecked(True)
        self.url.setText(server.url)
        self.model.setCurrentText(server.model)
        self.api_key_env.setText(server.api_key_env)
        self.plain_url.setText(server.plain_url)
        self.plain_model.setText(server.plain_model)
        self.server_note.clear()
        self._on_mode_changed()

    def value(self) -> ServerSettings:
        return ServerSettings(
            run_on="server" if self.on_server.isChecked() else "computer",
            url=self.url.text().strip(),
            model=self.model.currentText().strip(),
            api_key_env=self.api_key_env.text().strip(),
            plain_url=self.plain_url.text().strip(),
            plain_model=self.plain_model.text().strip(),
        )

    def problem(self) -> str | None:
        """Why these settings cannot be used (None: they can). A server that is not chosen is
        not checked, except that its fields are not half-wrong secrets."""
        server = self.value()
        if (key := env_name_problem(server.api_key_env)) is not None:
            return key
        if not server.on_server:
            return None
        if (url := url_problem(server.url)) is not None:
            return url
        if server.plain_url:
            return url_problem(server.plain_url, self.tr("The plain server's URL"))
        return None

    def show_failure(self, message: str) -> None:
        """Why the server in these settings could not be used (until the person edits them)."""
        self.server_note.setStyleSheet(ERROR_STYLE)
        self.server_note.setText(self.tr("This server could not be used: {0}").format(message))

    # ---- listing the server's models (on the probe's thread) ---------------------------
    def request_models(self) -> bool:
        """Ask the server what it is and which models it serves; False when the URL is not one."""
        server = self.value()
        problem = url_problem(server.url)
        if problem is not None or self._probe is None:
            self.server_note.setStyleSheet(ERROR_STYLE)
            self.server_note.setText(problem or self.tr("Listing models is not available here."))
            return False
        self.server_note.setStyleSheet("")
        self.server_note.setText(self.tr("Asking {0}…").format(server.url))
        self.list_models.setEnabled(False)
        self._probe_id = self._probe.request(server.url, server.api_key_env)
        return True

    def _on_probed(self, probe_id: int, info: Any, error: str) -> None:
        if probe_id != self._probe_id:
            return  # an earlier question, or another dialog's
        self.list_models.setEnabled(True)
        if error:
            self.server_note.setStyleSheet(ERROR_STYLE)
            self.server_note.setText(error)
            return
        typed = self.model.currentText()
        self.model.clear()
        models = [str(m) for m in getattr(info, "models", ())]
        self.model.addItems(models)
        self.model.setCurrentText(typed if typed or len(models) != 1 else models[0])
        self.server_note.setStyleSheet("")
        described = server_words(str(getattr(info, "description", "") or ""))
        listed = ", ".join(models) if models else self.tr("none listed")
        self.server_note.setText(self.tr("{0} · models: {1}").format(described, listed))

    # ---- as typed ----------------------------------------------------------------------
    def _on_mode_changed(self) -> None:
        on = self.on_server.isChecked()
        for widget in (self.url, self.model, self.list_models, self.api_key_env, self.plain_url, self.plain_model):
            widget.setEnabled(on)
        self._check()

    def _check(self) -> None:
        on = self.on_server.isChecked()
        url = self.url.text()  # an empty one is said on OK: not while the person has yet to type
        _show(self.url_error, url_problem(url) if on and url.strip() else None)
        plain = self.plain_url.text()
        _show(self.plain_url_error, url_problem(plain, self.tr("The plain server's URL")) if on and plain else None)
        name = self.api_key_env.text().strip()
        problem = env_name_problem(name)
        if problem is not None:
            self.key_note.setStyleSheet(ERROR_STYLE)
            self.key_note.setText(problem)
        elif name:
            self.key_note.setStyleSheet("color: gray;")
            self.key_note.setText(
                self.tr("{0} is set in this environment.").format(name)
                if os.environ.get(name)
                else self.tr("{0} is not set in this environment: set it before connecting.").format(name)
            )
        else:
            self.key_note.clear()


def _error_label(parent: QWidget) -> QLabel:
    label = QLabel(parent)
    label.setStyleSheet(ERROR_STYLE)
    label.setWordWrap(True)
    label.hide()
    return label


def _show(label: QLabel, problem: str | None) -> None:
    label.setText(problem or "")
    label.setVisible(problem is not None)
