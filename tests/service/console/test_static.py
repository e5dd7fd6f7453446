"""The console's stylesheet and script (service/console/static/): nothing fetched from elsewhere, and the
colour pairs the pages use meet WCAG 2.1 AA contrast (4.5:1 for text)."""

from __future__ import annotations

import re

import pytest

from service.console.charts import PALETTE, PART_COLOURS
from service.console.rendering import STATIC_DIR

CSS = (STATIC_DIR / "console.css").read_text(encoding="utf-8")
JS = (STATIC_DIR / "console.js").read_text(encoding="utf-8")


def _luminance(hex_colour: str) -> float:
    channels = [int(hex_colour.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


VARS = dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})", CSS))
WHITE = "#ffffff"
HEADER = re.search(r"\.site-header \{[^}]*background: (#[0-9a-f]{6})", CSS, re.S).group(1)  # type: ignore[union-attr]

# (text, background) of every text the pages set in a colour of their own.
PAIRS = {
    "body text": (VARS["fg"], VARS["bg"]),
    "muted text": (VARS["muted"], VARS["bg"]),
    "muted text on a card": (VARS["muted"], VARS["panel"]),
    "links": (VARS["accent"], VARS["bg"]),
    "button text": (VARS["accent-fg"], VARS["accent"]),
    "danger button": (WHITE, VARS["bad"]),
    "active badge": (VARS["ok"], VARS["bg"]),
    "weakened badge": (VARS["warn"], VARS["bg"]),
    "rejected badge": (VARS["bad"], VARS["bg"]),
    "header": (WHITE, HEADER),
    "flash": ("#0f5323", "#e6f4ea"),
    "error box": ("#7a1a12", "#fdecea"),
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_text_colours_meet_aa_contrast(name: str) -> None:
    fg, bg = PAIRS[name]
    assert contrast(fg, bg) >= 4.5, (name, fg, bg, round(contrast(fg, bg), 2))


def test_chart_colours_stand_out_from_their_background() -> None:
    """Markers and bar parts are graphics: 3:1 against white (WCAG 1.4.11)."""
    for colour in (*PALETTE, *PART_COLOURS.values()):
        assert contrast(colour, WHITE) >= 3, colour
    assert len(set(PALETTE)) == len(PALETTE)


def test_the_stylesheet_and_script_fetch_nothing_and_run_nothing_dynamic() -> None:
    for text in (CSS, JS):
        assert "http://" not in text and "https://" not in text and "//cdn" not in text
    assert "@import" not in CSS and "url(" not in CSS
    assert "eval(" not in JS and "innerHTML" not in JS and "new Function" not in JS


def test_the_legend_swatches_are_the_bar_colours() -> None:
    """console.css repeats the 4C parts' colours for the legend (a stylesheet cannot read charts.py)."""
    for part, colour in PART_COLOURS.items():
        assert re.search(rf"\.sw-{part} \{{ background: {colour}; \}}", CSS), part
