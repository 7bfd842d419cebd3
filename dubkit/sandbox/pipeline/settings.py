"""What a media-translation request asks the pipeline to do, read once and checked up front.

Every option the interface lists (§2.4) is read here; bad values end as a 400 that names the
field, before the task exists or any credit is spent. Where the interface is silent the choice
is written down (*choice*):

* *choice* ``voiceClone.mode`` defaults to ``role``; ``style`` to ``emotional`` (the interface's
  default); ``voiceSpeakers.timbreMethod`` to ``clone``; ``speakerNum`` to ``auto``.
* *choice* ``voiceClone.provider`` (clone engine) defaults to ``V3`` for English targets and
  ``V5`` otherwise, as §6.3 advises.
* *choice* ``separation.mode``: ``auto`` and ``duck`` lower the original speech by 18 dB under
  the dub, ``remove`` silences it, ``keep`` leaves it at full level; the background is always
  kept. Another value runs as ``auto`` and the result's ``notices`` say so.
* *choice* ``transcribe.mode``: ``fast`` bridges pauses under 0.35 s, ``normal`` under 0.25 s
  (finer lines). ``transcribe.type`` is recorded only.
* *choice* ``translate.mode``: ``default`` translates with two neighbour lines of context
  (localisation); ``machine`` translates each line alone. ``translate.prompt`` is recorded in
  the result (the pseudo-translation engine cannot follow instructions).
* ``options.text`` — the keys the sandbox reads (anything else is listed in ``notices``):

  ``burn`` (bool, default false)  draw the subtitles into the picture (video only)
  ``soft`` (bool, default true)   add a selectable subtitle track to the mp4
  ``style`` (object)              burned-subtitle style: ASS fields (``FontName``,
                                  ``FontSize``, ``PrimaryColour``...) or the shorthands
                                  ``font``, ``size``, ``color``, ``outline_color``,
                                  ``position`` (``top``/``bottom``)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...media import speech
from ...media.subtitles import ass_style
from ...schema import MediaTranslationRequest, OptionsEcho
from ..service_error import ServiceError

SEPARATION_MODES = ("auto", "duck", "remove", "keep")
TEXT_KEYS = ("burn", "soft", "style")


@dataclass(frozen=True)
class TextOptions:
    """How subtitles are delivered (from ``options.text``)."""

    burn: bool = False
    soft: bool = True
    style: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Settings:
    """The request's pipeline settings with every default filled in."""

    task_type: str  # effective: "vt" or "at"
    source: str  # locale or "auto"
    target: str
    mode: str = "role"
    style: str = "emotional"
    provider: str | None = None  # clone engine asked for (None: per-target default)
    timbre: str = "clone"
    speaker_num: int | None = None  # None = auto
    # (voiceId, provider) per speaker slot; a slot without voiceId is cast automatically
    selected: tuple[tuple[str | None, str | None], ...] = ()
    separation: str = "auto"
    dynamic_length: bool = False
    lipsync: bool = False
    transcribe_mode: str = "fast"
    transcribe_type: str = "default"
    translate_mode: str = "default"
    prompt: str | None = None
    text: TextOptions = field(default_factory=TextOptions)
    notices: tuple[str, ...] = ()

    @property
    def clone_provider(self) -> str:
        return self.provider or ("V3" if self.target.lower().startswith("en") else "V5")

    def echo(self) -> OptionsEcho:
        """The options as the pipeline understood them (recorded in the result)."""
        return OptionsEcho(
            mode=self.mode,
            style=self.style,
            provider=self.clone_provider,
            timbre_method=self.timbre,
            speaker_num="auto" if self.speaker_num is None else str(self.speaker_num),
            separation=self.separation,
            dynamic_video_length=self.dynamic_length,
            lipsync=self.lipsync,
            transcribe={"mode": self.transcribe_mode, "type": self.transcribe_type},
            translate={"mode": self.translate_mode, "prompt": self.prompt},
            text={"burn": self.text.burn, "soft": self.text.soft, "style": self.text.style},
        )


def read_settings(request: MediaTranslationRequest, task_type: str) -> Settings:
    """Settings for ``request`` run as ``task_type``; ``ServiceError(400)`` naming a bad field."""
    options = request.options
    notices: list[str] = []
    clone = options.voice_clone
    speakers = options.voice_speakers
    separation = (options.separation.mode if options.separation else None) or "auto"
    if separation not in SEPARATION_MODES:
        notices.append(
            f"options.separation.mode {separation!r} is not one the sandbox knows "
            f"({', '.join(SEPARATION_MODES)}); it ran as 'auto'"
        )
        separation = "auto"
    dynamic = bool(options.dynamic_video_length and options.dynamic_video_length.enable)
    if dynamic and task_type != "vt":
        notices.append(
            "options.dynamicVideoLength applies to video only; this audio task "
            "kept the source's length"
        )
        dynamic = False
    lipsync = bool(options.lipsync and options.lipsync.enable)
    if lipsync and task_type != "vt":
        notices.append(
            "options.lipsync applies to video only: this audio task was not lip-synced nor charged for it"
        )
        lipsync = False
    elif lipsync:
        notices.append(
            "options.lipsync: lip sync is not available in the sandbox; the picture was left "
            "unchanged, and charged at the service's price so the bill matches the service's"
        )
    if (spoken_by := speech.stand_in(request.language.target)) is not None:
        notices.append(f"language.target: {spoken_by}")
    text = _text_options(options.text, task_type, notices)
    selected = tuple(
        (v.voice_id, v.provider) for v in (speakers.selected_voices_list or [] if speakers else [])
    )
    number = speakers.speaker_num if speakers else None
    if number is not None and number != "auto" and int(number) < 1:
        raise ServiceError(
            400,
            "invalid request: options.voiceSpeakers.speakerNum: expected "
            f"'auto' or a count of at least 1, got {number!r}",
        )
    return Settings(
        task_type=task_type,
        source=request.language.source or "auto",
        target=request.language.target,
        mode=clone.mode or "role",
        style=clone.style or "emotional",
        provider=clone.provider,
        timbre=(speakers.timbre_method if speakers else None) or "clone",
        speaker_num=int(number) if number and number != "auto" else None,
        selected=selected,
        separation=separation,
        dynamic_length=dynamic,
        lipsync=lipsync,
        transcribe_mode=(options.transcribe.mode if options.transcribe else None) or "fast",
        transcribe_type=(options.transcribe.type if options.transcribe else None) or "default",
        translate_mode=(options.translate.mode if options.translate else None) or "default",
        prompt=options.translate.prompt if options.translate else None,
        text=text,
        notices=tuple(notices),
    )


def _text_options(raw: dict[str, Any] | None, task_type: str, notices: list[str]) -> TextOptions:
    raw = dict(raw or {})
    for key in sorted(set(raw) - set(TEXT_KEYS)):
        notices.append(
            f"options.text.{key} is not read by the sandbox (it reads {', '.join(TEXT_KEYS)})"
        )
    for key in ("burn", "soft"):
        if key in raw and not isinstance(raw[key], bool):
            raise ServiceError(
                400,
                f"invalid request: options.text.{key}: expected true or false, got {raw[key]!r}",
            )
    style = raw.get("style") or {}
    if not isinstance(style, dict):
        raise ServiceError(
            400,
            "invalid request: options.text.style: expected an object of "
            'subtitle style fields, e.g. {"size": 28}',
        )
    try:
        ass_style(style)
    except ValueError as exc:
        raise ServiceError(400, f"invalid request: options.text.style: {exc}") from None
    burn = bool(raw.get("burn", False))
    if burn and task_type != "vt":
        notices.append("options.text.burn needs a picture; this audio task has subtitle files only")
        burn = False
    return TextOptions(burn=burn, soft=bool(raw.get("soft", True)), style=style)
