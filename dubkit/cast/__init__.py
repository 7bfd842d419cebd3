"""A cast that lasts a series: roles, the voice that plays each in each locale, kept as a file.

>>> cast = dubkit.Cast("The harbour", default_locale="en-US")
>>> cast.assign("Narrator", "sv_s3_en_us_story_f", emotion="calm")
>>> cast.assign("Narrator", "sv_s2_fr_fr_chat_f", locale="fr-FR")
>>> cast.save("cast.json"); cast = dubkit.Cast.load("cast.json")
>>> client.tts.create(["NARRATOR: The harbour wakes."], cast=cast, locale="fr-FR")
>>> client.dubbing.create("ep2.mp4", target="fr-FR", cast=cast, speakers={1: "Narrator"})
>>> cast.check(client)                          # same / changed / missing, per role and locale
"""

from .audition import CastAudition
from .cast import Cast
from .checks import CastCheck, Gaps, Verdict
from .roles import SAMPLE_LINE, Role, Roles, RoleVoice

__all__ = [
    "Cast",
    "Roles",
    "Role",
    "RoleVoice",
    "CastCheck",
    "Verdict",
    "Gaps",
    "CastAudition",
    "SAMPLE_LINE",
]
