"""dubkit's few colours, readable in JupyterLab's light and dark themes and elsewhere.

Quiet text takes the theme's own text colour (the ``--jp-*`` variable JupyterLab, Notebook 7,
Voilà and an HTML export define for both themes; a page without it falls back to a grey that
keeps 4.5:1 on white and on a table's grey stripe) and is quiet by its size, not its colour:
the theme's secondary colour (``--jp-content-font-color2``) is 4.2:1 on a striped row. Nothing is said by colour alone: a status carries a mark and a word
(✓ finished, ✗ failed, … running), an error the word "Error" and a red rule beside it, in the
text's own colour, which keeps its contrast whatever the background.
"""

from __future__ import annotations

import html

MUTED = "var(--jp-content-font-color1, #57606a)"  # quiet text: facts, notes, hints
RULE = "#cf222e"  # the rule beside an error (a mark, not the text's colour)
MARKS = {"finished": "✓", "failed": "✗", "running": "…"}


def muted(inner_html: str, *, tag: str = "span", size: str = "") -> str:
    """``inner_html`` in quiet text (``size``: a font-size such as ``90%``)."""
    extra = f";font-size:{size}" if size else ""
    return f"<{tag} style='color:{MUTED}{extra}'>{inner_html}</{tag}>"


def error_html(message: str, *, tag: str = "span") -> str:
    """An error the eye and a screen reader both take for one: "Error:" and the message."""
    return (
        f"<{tag} class='dubkit-error' style='border-left:3px solid {RULE};padding-left:4px'>"
        f"<b>Error:</b> {html.escape(message)}</{tag}>"
    )


def status_html(status: str) -> str:
    """A task's status as a mark and a word."""
    mark = MARKS.get(status, "")
    return f"<b>{mark + ' ' if mark else ''}{html.escape(status)}</b>"
