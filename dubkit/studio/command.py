"""``dubkit studio``: serve the studio as an app with Voila, on this machine.

>>> main(["--port", "8870", "--no-browser"])       # what `dubkit studio --port 8870` does
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from .._util import voila_app

# The code cell of the app notebook (notebooks/apps/audition_studio.ipynb holds the same cell);
# used as is when dubkit is installed without the repository's notebooks. The name `studio`
# lets a notebook reach the shortlist in code (studio.shortlist.to_voices()).
APP_SOURCE = (
    "import dubkit\n"
    "from dubkit.studio import AuditionStudio\n"
    "\n"
    "studio = AuditionStudio(dubkit.connect(quiet=True))\n"
    "studio"
)
APP_INTRO = """# Audition studio

Pick a locale and a gender, type a line and press **Hear them**: several voices say it side by
side, each labelled with its name, locale, gender and tier. Every take plays at the same
loudness (-23 LUFS, EBU R128), so that no voice wins by being louder; the level it came at is
shown beside it. Star the takes you like (**☆ Shortlist**), add a note, and export the shortlist
as CSV or JSON. Tick **blind A/B** to hear the voices under letters and pick one before you know
who is who. Further down, hear one voice across emotions and speeds, and clone a voice from a
short recording.

Without an API key the studio uses the local sandbox; with `DUBKIT_API_KEY` and
`DUBKIT_BASE_URL` set, the service."""


def app_notebook() -> Path:
    """The notebook Voila serves: the repository's, else a copy of its cells."""
    return voila_app.app_notebook("audition_studio", APP_INTRO, APP_SOURCE)


def main(argv: Sequence[str] | None = None) -> int:
    """``dubkit studio [--port N] [--host H] [--no-browser]``: serve the studio with Voila."""
    parser = argparse.ArgumentParser(
        prog="dubkit studio",
        description="Serve the audition studio, a Voila app, on this "
        "machine: the sandbox by default, the service when DUBKIT_API_KEY is set.",
    )
    parser.add_argument("--port", type=int, default=8866)
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to listen on (loopback by default)"
    )
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser tab")
    args = parser.parse_args(argv)
    return voila_app.serve(
        app_notebook(), port=args.port, host=args.host, no_browser=args.no_browser, needs="studio"
    )
