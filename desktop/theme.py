"""Colours that hold in light and dark mode, whatever palette the system gives.

    contrast(a, b) -> float              # WCAG contrast ratio, 1 (same) to 21
    mix(a, b, t) -> QColor               # a moved t (0..1) towards b
    disabled_roles(palette)              # the text roles whose Disabled colour looks enabled
    with_disabled_colours(palette)       # a palette whose Disabled texts look disabled
    border_colour(palette, *fills)       # a box border visible against every fill
    flat_palette(*DARK)                  # a palette as some systems give it
    install(app)                         # the app's palette fixed now and on each change
    muted_text(palette) -> QColor        # secondary text: help, counts, column titles
    panel_sheet(palette) -> str          # quiet rounded fields, buttons and tabs (a style sheet)
    keep_panel_sheet(widget)             # widget gets panel_sheet now and on each palette change

Some system palettes (a dark theme from the desktop, qt6ct, kdeglobals without disabled
colours) give the Disabled group the same colours as the Active one: a disabled button
then looks like an enabled one. The palette is mended where that is so: a disabled text
is its enabled colour halfway to its background.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QWidget

DISABLED_MIX = 0.55
"""How far a disabled text moves from its enabled colour towards its background."""
SAME = 1.25
"""Colours closer than this contrast ratio count as the same (disabled looks enabled)."""
BORDER_CONTRAST = 3.0
"""WCAG's minimum for the parts of a control one has to see (1.4.11)."""

_G = QPalette.ColorGroup
_R = QPalette.ColorRole
TEXT_ON = {
    _R.WindowText: _R.Window,
    _R.Text: _R.Base,
    _R.ButtonText: _R.Button,
    _R.PlaceholderText: _R.Base,
    _R.BrightText: _R.Button,
}
"""Each text role and the background it is drawn on."""


def _luminance(colour: QColor) -> float:
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    return (0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF())
            + 0.0722 * channel(colour.blueF()))


def contrast(a: QColor, b: QColor) -> float:
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def mix(a: QColor, b: QColor, t: float) -> QColor:
    return QColor.fromRgbF(a.redF() + (b.redF() - a.redF()) * t,
                           a.greenF() + (b.greenF() - a.greenF()) * t,
                           a.blueF() + (b.blueF() - a.blueF()) * t)


def disabled_roles(palette: QPalette) -> frozenset[QPalette.ColorRole]:
    """The text roles whose Disabled colour looks like the enabled one (within SAME)."""
    return frozenset(text for text in TEXT_ON if contrast(
        palette.color(_G.Active, text), palette.color(_G.Disabled, text)) < SAME)


def with_disabled_colours(palette: QPalette,
                          roles: frozenset[QPalette.ColorRole] | None = None) -> QPalette:
    """`palette` with the Disabled colour of each of `roles` (default: `disabled_roles`)
    made the enabled colour moved DISABLED_MIX towards its disabled background."""
    mended = QPalette(palette)
    for text in disabled_roles(palette) if roles is None else roles:
        ground = palette.color(_G.Disabled, TEXT_ON[text])
        mended.setColor(_G.Disabled, text, mix(palette.color(_G.Active, text), ground,
                                               DISABLED_MIX))
    return mended


_BORDERS: dict[tuple[int, tuple[int, ...]], QColor] = {}


def border_colour(palette: QPalette, *fills: QColor) -> QColor:
    """The Base colour moved towards Text until it stands out by BORDER_CONTRAST from every
    fill (a translucent one seen over Base), or as far as it goes; computed once per
    palette and fills (it is asked at every paint)."""
    key = (palette.cacheKey(), tuple(fill.rgba() for fill in fills))
    known = _BORDERS.get(key)
    if known is not None:
        return known
    base = palette.color(_R.Base)
    text = palette.color(_R.Text)
    seen = [mix(base, fill, fill.alphaF()) for fill in fills] or [base]
    colour = text
    for step in range(6, 21):
        candidate = mix(base, text, step / 20)
        if all(contrast(candidate, fill) >= BORDER_CONTRAST for fill in seen):
            colour = candidate
            break
    _BORDERS[key] = colour
    return colour


def flat_palette(window: str, base: str, alternate: str, button: str,
                 text: str) -> QPalette:
    """A palette as some systems give it: one colour per role in every group (Disabled
    included). `make screenshots` shows dark mode with one; the tests check the mending."""
    palette = QPalette()
    colours = {_R.Window: window, _R.Base: base, _R.AlternateBase: alternate,
               _R.Button: button, _R.WindowText: text, _R.Text: text, _R.ButtonText: text,
               _R.BrightText: text, _R.PlaceholderText: mix(QColor(text), QColor(base), 0.35),
               _R.Highlight: QColor("#3d6fb4"), _R.HighlightedText: QColor("#ffffff"),
               _R.Link: QColor("#6ea8fe"), _R.ToolTipBase: button, _R.ToolTipText: text}
    shades = {_R.Light: 0.25, _R.Midlight: 0.15, _R.Mid: -0.2, _R.Dark: -0.35,
              _R.Shadow: -0.6}
    for group in (_G.Active, _G.Inactive, _G.Disabled):
        for role, colour in colours.items():
            palette.setColor(group, role, QColor(colour))
        for role, amount in shades.items():
            towards = QColor("#ffffff") if amount > 0 else QColor("#000000")
            palette.setColor(group, role, mix(QColor(button), towards, abs(amount)))
    return palette


def muted_text(palette: QPalette) -> QColor:
    """Secondary text (help under a field, a count, a column title): the text colour a good
    way towards its page, still readable on it."""
    return mix(palette.color(_R.Text), palette.color(_R.Base), 0.38)


_ICON_FILES: dict[tuple[str, int], str] = {}
_ICON_DIR: list[str] = []


def icon_file(name: str, colour: QColor) -> str:
    """A UI icon (resources/icons/ui) in `colour` as a PNG file a style sheet can name (a
    combo box's arrow, a check box's tick): written once per icon and colour, in a folder
    only this process made (mkdtemp)."""
    key = (name, colour.rgba())
    path = _ICON_FILES.get(key)
    if path is None:
        from desktop.icons import icon_pixmap

        if not _ICON_DIR:
            _ICON_DIR.append(tempfile.mkdtemp(prefix="reins-icons-"))
        path = str(Path(_ICON_DIR[0]) / f"{name}-{colour.rgba():08x}.png")
        icon_pixmap(name, colour, 12, 2.0).save(path)
        _ICON_FILES[key] = path
    return path


def panel_sheet(palette: QPalette) -> str:
    """A style sheet in the palette's colours for the timeline's and the settings' controls,
    as the composer draws its own: fields, lists, combo boxes and buttons with a thin soft
    border and round corners, flat tabs and flat column titles; `.muted` labels (the
    `muted` property) in `muted_text`. Set it again on a palette change."""
    base = palette.color(_R.Base)
    text = palette.color(_R.Text)
    window = palette.color(_R.Window)
    border = mix(base, text, 0.22).name()
    hover = mix(base, text, 0.06).name()
    pressed = mix(base, text, 0.12).name()
    arrow = icon_file("chevron-down", muted_text(palette))
    tick = icon_file("check", palette.color(_R.HighlightedText))
    accent = palette.color(_R.Highlight).name()
    quiet = muted_text(palette).name()
    return (
        f"QLineEdit, QComboBox, QPlainTextEdit, QTextEdit, QListWidget, QTableView {{"
        f" border: 1px solid {border}; border-radius: 8px; background: {base.name()}; }}"
        " QLineEdit, QComboBox { padding: 4px 6px; min-height: 18px; }"
        f" QLineEdit:focus, QComboBox:focus, QPlainTextEdit:focus {{ border-color: {accent}; }}"
        f" QComboBox:hover {{ background: {hover}; }}"
        " QComboBox::drop-down { border: none; width: 18px; }"
        f" QComboBox::down-arrow {{ image: url({arrow});"
        " width: 12px; height: 12px; }"
        f" QPushButton {{ border: 1px solid {border}; border-radius: 8px;"
        f" padding: 5px 10px; background: {base.name()}; color: {text.name()}; }}"
        f" QPushButton:hover {{ background: {hover}; }}"
        f" QPushButton:pressed, QPushButton:checked {{ background: {pressed}; }}"
        f" QPushButton:disabled {{ color: {quiet}; }}"
        f" QPushButton:default {{ background: {accent}; border-color: {accent};"
        f" color: {palette.color(_R.HighlightedText).name()}; }}"
        f" QHeaderView::section {{ background: {base.name()}; color: {quiet}; border: none;"
        f" border-bottom: 1px solid {border}; padding: 6px 8px; font-weight: 600; }}"
        f" QTabWidget::pane {{ border: 1px solid {border}; border-radius: 10px;"
        f" background: {window.name()}; top: -1px; }}"
        f" QTabBar::tab {{ background: transparent; color: {quiet}; border: none;"
        " border-bottom: 2px solid transparent; padding: 6px 12px; margin-right: 2px; }"
        f" QTabBar::tab:selected {{ color: {text.name()}; border-bottom-color: {accent}; }}"
        f" QTabBar::tab:hover {{ color: {text.name()}; }}"
        f" QLabel[muted=\"true\"] {{ color: {quiet}; }}"
        " QSplitter::handle { background: transparent; }"
        f" QCheckBox::indicator {{ width: 14px; height: 14px; border: 1px solid {border};"
        f" border-radius: 4px; background: {base.name()}; }}"
        f" QCheckBox::indicator:checked {{ background: {accent}; border-color: {accent};"
        f" image: url({tick}); }}"
        f" QGroupBox {{ border: 1px solid {border}; border-radius: 10px; margin-top: 22px;"
        " padding-top: 4px; }"
        " QGroupBox::title { subcontrol-origin: margin; subcontrol-position: top left;"
        " left: 2px; top: 2px; padding: 0 2px;"
        f" color: {quiet}; font-weight: 600; }}"
        " QScrollBar { background: transparent; border: none; }"
        " QScrollBar:vertical { width: 10px; } QScrollBar:horizontal { height: 10px; }"
        f" QScrollBar::handle {{ background: {border}; border-radius: 4px; margin: 2px; }}"
        " QScrollBar::handle:vertical { min-height: 24px; }"
        " QScrollBar::handle:horizontal { min-width: 24px; }"
        " QScrollBar::add-line, QScrollBar::sub-line { width: 0; height: 0; border: none; }"
        " QScrollBar::add-page, QScrollBar::sub-page { background: none; }")


class _SheetKeeper(QObject):
    """Gives its widget `panel_sheet` of the application's palette now and again on each
    change of it (the application's `paletteChanged` signal: a widget inside a window does
    not always get a PaletteChange event once a style sheet has set its palette)."""

    def __init__(self, widget: QWidget) -> None:
        super().__init__(widget)
        self._widget = widget
        app = QGuiApplication.instance()
        assert isinstance(app, QGuiApplication)  # (widgets need one)
        app.paletteChanged.connect(self.apply)
        self.apply()

    def apply(self) -> None:
        sheet = panel_sheet(QGuiApplication.palette())
        if sheet != self._widget.styleSheet():
            self._widget.setStyleSheet(sheet)


def keep_panel_sheet(widget: QWidget) -> None:
    """Style `widget` and its children with `panel_sheet`, following the palette."""
    _SheetKeeper(widget)


DARK = ("#2b2b2b", "#1e1e1e", "#262626", "#353535", "#e6e6e6")
"""A dark system palette's main colours (window, base, alternate base, button, text)."""


class _Mender(QObject):
    """Mends the application palette again whenever it changes (a theme switch).

    It listens to the application's `paletteChanged` signal, not to its events: an event
    filter on the application sees every event of every object, and PySide6 then wraps
    each object that receives one in Python (and makes the Python enums of its classes),
    which made the first window 60-100 ms slower to show and every event dearer after."""

    def __init__(self, app: QGuiApplication) -> None:
        super().__init__(app)
        self._busy = False
        self._mended: frozenset[QPalette.ColorRole] = frozenset()
        """Roles set here: Qt keeps them over a new system palette, so they are worked
        out again from its enabled colours at every change."""
        app.paletteChanged.connect(self._changed)

    def _changed(self, _palette: QPalette) -> None:
        if not self._busy:
            self.mend()

    def mend(self) -> None:
        palette = QGuiApplication.palette()
        self._mended |= disabled_roles(palette)
        mended = with_disabled_colours(palette, self._mended)
        if mended != palette:
            self._busy = True
            try:
                QGuiApplication.setPalette(mended)
            finally:
                self._busy = False


_MENDER = "reins-palette-mender"
"""The application's property that holds its mender (set once)."""


def install(app: QGuiApplication) -> None:
    """Mend the application's palette now and after every change of it (once per app)."""
    if app.property(_MENDER) is not None:
        return
    mender = _Mender(app)
    app.setProperty(_MENDER, mender)
    mender.mend()
