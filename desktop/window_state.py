"""What the window looked like last time: geometry, docks, the timeline's splitter, the
last open session and the last workspace, kept with QSettings in the config folder
(`window.ini`; with REINS_HOME set, under it like everything else)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QByteArray, QSettings

from kernel.paths import AppPaths

FILE_NAME = "window.ini"


@dataclass(frozen=True)
class WindowState:
    geometry: QByteArray
    docks: QByteArray
    timeline_splitter: QByteArray
    session_id: str
    workspace: str


def _settings(paths: AppPaths) -> QSettings:
    paths.config.mkdir(parents=True, exist_ok=True)
    return QSettings(str(paths.config / FILE_NAME), QSettings.Format.IniFormat)


def _bytes(value: object) -> QByteArray:
    return value if isinstance(value, QByteArray) else QByteArray()


def load_state(paths: AppPaths) -> WindowState:
    """The saved state; empty values where nothing (or nothing usable) was saved."""
    settings = _settings(paths)
    session = settings.value("session/last", "")
    workspace = settings.value("session/workspace", "")
    return WindowState(
        geometry=_bytes(settings.value("window/geometry")),
        docks=_bytes(settings.value("window/docks")),
        timeline_splitter=_bytes(settings.value("timeline/splitter")),
        session_id=session if isinstance(session, str) else "",
        workspace=workspace if isinstance(workspace, str) else "")


def save_state(paths: AppPaths, state: WindowState) -> None:
    settings = _settings(paths)
    settings.setValue("window/geometry", state.geometry)
    settings.setValue("window/docks", state.docks)
    settings.setValue("timeline/splitter", state.timeline_splitter)
    settings.setValue("session/last", state.session_id)
    settings.setValue("session/workspace", state.workspace)
    settings.sync()
