"""The audition studio, for people who choose voices for a living: hear several voices say a
line side by side at one loudness, shortlist the takes you like, blind A/B, one voice across
emotions and speeds, clone a voice and hear it beside them.

Start it as an app with one command (Voila serves it; ``pip install 'dubkit[studio]'``)::

    dubkit studio                  # prints the address; the sandbox unless DUBKIT_API_KEY is set

or show it in any notebook:

>>> from dubkit.studio import AuditionStudio
>>> studio = AuditionStudio(dubkit.connect(), locale="fr-FR", gender="female", voices=3)
>>> studio.hear("Bonjour tout le monde !")              # what the "Hear them" button does
>>> client.dubbing.create("talk.mp4", target="fr-FR", voices=studio.shortlist.to_voices())

It composes what the client already does: ``client.voices.presets`` picks the voices,
``client.tts.audition`` and ``client.tts.batch`` say the line, :mod:`dubkit.media.loudness`
matches the takes, the clone panel (:class:`~dubkit.widgets.clone.ClonePanel`) makes clones.

Modules: ``app`` (the screen), ``takes`` (a take and its card HTML), ``cards`` (live cards and
the shortlist panel), ``shortlist``, ``blind``, ``readings`` (one voice, several emotions and
speeds, and its panel), ``voices`` (labels), ``command`` (the CLI).
"""

from .._util.deprecation import module_renames
from ..frontends import in_voila as running_in_voila
from .app import DEFAULT_TEXT, MAX_VOICES, AuditionStudio
from .blind import BlindRound, Pick
from .command import APP_INTRO, APP_SOURCE, app_notebook, main
from .readings import EMOTIONS, SPEEDS, speak_readings
from .shortlist import Entry, Shortlist
from .takes import Take
from .voices import VoiceInfo

__all__ = [
    "APP_INTRO",
    "APP_SOURCE",
    "AuditionStudio",
    "BlindRound",
    "DEFAULT_TEXT",
    "EMOTIONS",
    "Entry",
    "MAX_VOICES",
    "Pick",
    "SPEEDS",
    "Shortlist",
    "Take",
    "VoiceInfo",
    "app_notebook",
    "main",
    "running_in_voila",
    "speak_readings",
]

__getattr__ = module_renames(__name__, {"speak_deliveries": ("speak_readings", speak_readings)})
