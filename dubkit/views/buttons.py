"""Download links drawn as buttons: the one look every view of dubkit gives a download.

A plain ``<a download>`` reads as body text and is easy to miss beside players; these carry
their style inline (no stylesheet to load), so they look the same in JupyterLab, in a Voila
app, in a saved notebook on nbviewer, and in a widget's HTML.

>>> download_button_html("https://cdn/x/take.m4a", "Download", filename="Ava.m4a")
>>> download_button_html(None, "CSV", data=b"a,b\\n", mime="text/csv", filename="shortlist.csv")

A file on the local sandbox gets its address from the live channel, like a player
(:mod:`dubkit.frontends.media`); a saved notebook keeps the button without a link.
"""

from __future__ import annotations

import html

from ..frontends.media import element_source
from ..media.mime import file_name as format_name

BUTTON_STYLE = (
    "display:inline-block;padding:2px 10px;margin:2px 6px 2px 0;"
    "border:1px solid #1f6feb;border-radius:6px;background:#f6f8fa;color:#0969da;"
    "font-size:13px;line-height:20px;text-decoration:none;white-space:nowrap;"
    "cursor:pointer"
)


def download_button_html(
    url: str | None,
    label: str,
    *,
    data: bytes | None = None,
    filename: str | None = None,
    mime: str | None = None,
    css_class: str = "dubkit-download",
    title: str | None = None,
) -> str:
    """An ``<a download>`` styled as a button; ``filename`` names the saved file.

    >>> download_button_html(url, "subtitles .srt")      # saved under the URL's own name
    """
    source = element_source(url, mime or "application/octet-stream", data=data, kind="file")
    filename = filename or (format_name(url) if url and not url.startswith("data:") else None)
    attributes = [
        f"class='{html.escape(css_class)}'",
        source.attributes("href"),
        f"download='{html.escape(filename)}'" if filename else "download",
        f"style='{BUTTON_STYLE}'",
    ]
    if mime:
        attributes.append(f"type='{html.escape(mime)}'")
    if title:
        attributes.append(f"title='{html.escape(title)}'")
    return f"<a {' '.join(attributes)}>&#x2B07;&#xFE0E; {html.escape(label)}</a>"


def download_row_html(buttons: list[str], title: str = "Downloads") -> str:
    """Buttons in one wrapping row after a short title (nothing when there are none)."""
    if not buttons:
        return ""
    return (
        f"<div class='dubkit-downloads' style='margin:4px 0'><span style='margin-right:6px'>"
        f"{html.escape(title)}:</span>{''.join(buttons)}</div>"
    )
