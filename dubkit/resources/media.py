"""Media translation (translate and dub a video or audio): ``client.media``.

>>> task = client.media.translate("talk.mp4", target="fr-FR")        # uploads, then dubs
>>> task.monitor()                                   # a cell that refreshes until it ends
>>> dub = task.wait().result
>>> dub.video.url, dub.subtitles.srt                 # the dubbed mp4 and its subtitles
>>> dub.script.to_frame()                            # start, end, speaker, source, translation
>>> dub                                              # original and dub side by side, per-line players

Options are keyword arguments named after the wire fields (``clone_mode`` is
``options.voiceClone.mode``, ``speaker_num`` is ``options.voiceSpeakers.speakerNum``...);
``options={...}`` is sent as is on top of them, for anything dubkit does not name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Sequence

import pandas as pd

from ..errors import ValidationError
from ..schema import MediaTranslationRequest
from .._wire import parse
from ._base import Resource
from .tasks import RESULT_TYPES, Task

if TYPE_CHECKING:
    from ..client import Client

MaterialLike = Any     # a Material, a materialId, or a local file path


class MediaResource(Resource):
    """``client.media``: translate and dub registered materials (async; results by poll or webhook)."""

    def translate(self, material: MaterialLike, *, target: str, source: str = "auto",
                  task_type: Literal["vt", "at"] | None = None,
                  clone_mode: Literal["role", "mix", "sentence"] | None = None,
                  clone_style: Literal["emotional", "consistent"] | None = None,
                  clone_provider: str | None = None,
                  speaker_num: int | Literal["auto"] | None = None,
                  timbre_method: Literal["clone", "smart"] | None = None,
                  selected_voices: Sequence[str | Mapping[str, Any]] | None = None,
                  separation_mode: str | None = None,
                  dynamic_video_length: bool | None = None,
                  lipsync: bool | None = None,
                  text: Mapping[str, Any] | None = None,
                  translate_mode: Literal["default", "machine"] | None = None,
                  translate_prompt: str | None = None,
                  transcribe_mode: Literal["fast", "normal"] | None = None,
                  options: Mapping[str, Any] | None = None,
                  extra_data: Mapping[str, Any] | None = None,
                  idempotency_key: str | None = None) -> Task:
        """Start dubbing ``material`` into ``target``; returns the running :class:`Task`.

        ``material`` is a registered :class:`~dubkit.resources.materials.Material`, its id,
        or a local file, which is uploaded first. ``task_type`` defaults to the material's category (``vt`` for video,
        ``at`` for audio). ``selected_voices`` are voice ids (or ``{"voiceId", "provider"}``)
        for speakers 1, 2, ...; ``text`` is ``options.text``, whose content the interface
        leaves to the product (the sandbox reads ``burn``, ``soft`` and ``style``, e.g.
        ``{"burn": True, "style": {"size": 28, "position": "top"}}``).
        Everything is checked before the request is sent, and before a local file is
        uploaded: a voice the key's preset or clone library does not have is a
        ValidationError naming ``selected_voices[i]``; an unregistered or deleted material is
        refused here, before any credit is spent.

        >>> task = client.media.translate(material, target="de-DE", speaker_num=2,
        ...                               timbre_method="smart", text={"burn": True})
        """
        from .._transport import new_idempotency_key
        if not isinstance(target, str) or not target.strip():
            raise ValidationError("language.target", "is required: the locale to dub into, "
                                                     "e.g. 'fr-FR'")
        wire_options = _merge(_options(
            clone_mode=clone_mode, clone_style=clone_style, clone_provider=clone_provider,
            speaker_num=speaker_num, timbre_method=timbre_method,
            selected_voices=selected_voices, separation_mode=separation_mode,
            dynamic_video_length=dynamic_video_length, lipsync=lipsync, text=text,
            translate_mode=translate_mode, translate_prompt=translate_prompt,
            transcribe_mode=transcribe_mode), dict(options or {}))
        key = idempotency_key or new_idempotency_key()

        def request(kind: str, material_id: str) -> MediaTranslationRequest:
            # The key rides in extraData so a webhook can be matched to this call even if
            # the acceptance answer is lost.
            return parse(MediaTranslationRequest, {
                "taskType": kind, "source": {"materialId": material_id},
                "language": {"source": source, "target": target}, "options": wire_options,
                "extraData": {"dubkitIdempotencyKey": key, **(extra_data or {})}})

        # Bad options and unknown voices never cost an upload.
        draft = request(task_type or "vt", "not-uploaded-yet")
        self._check_voices(draft, raw=_chooses_voices(options))
        record = self._material(material)
        kind = task_type or ("vt" if record.get("category") == "video" else "at")
        body = request(kind, record["materialId"])
        data = self._client.call("media.create_async", body, idempotency_key=key)
        return Task(self._client, data["taskId"], task_type=data.get("taskType") or kind,
                    status=data.get("status") or "running", created_at=data.get("createdAt"),
                    idempotency_key=key,
                    context={"material": record, "source": source, "target": target})

    def _check_voices(self, body: MediaTranslationRequest, *, raw: bool) -> None:
        """Every chosen voice exists for this key (looked up in the service's own lists), with
        the provider the lists give it. ``raw``: the list came in ``options=``, so the fields
        are named as on the wire."""
        speakers = body.options.voice_speakers if body.options else None
        slots = [(i, v) for i, v in enumerate(speakers.selected_voices_list or [])
                 if v.voice_id is not None] if speakers else []
        if not slots:
            return      # no voice chosen: the service picks them
        field = ("options.voiceSpeakers.selectedVoicesList[{}]" if raw
                 else "selected_voices[{}]")
        providers = self._client.voices.require(
            [v.voice_id for _, v in slots],
            [field.format(i) + (".voiceId" if raw else "") for i, _ in slots])
        for (i, voice), provider in zip(slots, providers):
            if voice.provider and voice.provider != provider:
                raise ValidationError(f"{field.format(i)}.provider",
                                      f"{voice.provider!r} is not the provider of "
                                      f"{voice.voice_id!r}, which is {provider!r}; give the "
                                      f"voice id alone, or with the provider "
                                      f"client.voices.presets()/clones() list for it")

    def _material(self, material: MaterialLike) -> dict[str, Any]:
        """The registered material's record; a local file (a path, or a string naming a file
        with an extension) is uploaded first."""
        from .materials import Material, require_registered
        if isinstance(material, os.PathLike) or (
                isinstance(material, str) and (os.path.isfile(material)
                                               or os.path.splitext(material)[1])):
            material = self._client.materials.upload(material)
        material_id = require_registered(self._client, material)
        if not isinstance(material, Material):
            material = self._client.materials.get(material_id)
        return material.to_wire()


def _options(*, clone_mode: str | None, clone_style: str | None, clone_provider: str | None,
             speaker_num: int | str | None, timbre_method: str | None,
             selected_voices: Sequence[str | Mapping[str, Any]] | None,
             separation_mode: str | None, dynamic_video_length: bool | None,
             lipsync: bool | None, text: Mapping[str, Any] | None,
             translate_mode: str | None, translate_prompt: str | None,
             transcribe_mode: str | None) -> dict[str, Any]:
    """Typed keyword options -> the wire ``options`` (``voiceClone`` always present)."""
    wire: dict[str, Any] = {"voiceClone": _present(mode=clone_mode, style=clone_style,
                                                   provider=clone_provider)}
    voices = None
    if selected_voices is not None:
        voices = [{"voiceId": v} if isinstance(v, str) else dict(v) for v in selected_voices]
    speakers = _present(selectedVoicesList=voices, timbreMethod=timbre_method,
                        speakerNum=None if speaker_num is None else str(speaker_num))
    parts = {"voiceSpeakers": speakers,
             "separation": _present(mode=separation_mode),
             "dynamicVideoLength": _present(enable=dynamic_video_length),
             "lipsync": _present(enable=lipsync),
             "translate": _present(mode=translate_mode, prompt=translate_prompt),
             "transcribe": _present(mode=transcribe_mode),
             "text": dict(text) if text is not None else {}}
    wire.update({name: value for name, value in parts.items() if value})
    return wire


def _chooses_voices(options: Mapping[str, Any] | None) -> bool:
    """Whether raw ``options`` carry the voice list (it then replaces ``selected_voices``)."""
    speakers = next((options[k] for k in ("voiceSpeakers", "voice_speakers")
                     if isinstance(options, Mapping) and k in options), None)
    return isinstance(speakers, Mapping) and any(
        k in speakers for k in ("selectedVoicesList", "selected_voices_list"))


def _present(**fields: Any) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` over ``base``, nested objects merged key by key."""
    out = dict(base)
    for name, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(name), dict):
            out[name] = _merge(out[name], value)
        else:
            out[name] = value
    return out


# --------------------------------------------------------------------------- the result

@dataclass(frozen=True)
class MediaFile:
    """A file the service made: ``url``, ``duration`` (s), ``size`` (bytes), picture facts."""

    url: str
    duration: float | None = None
    size: int | None = None
    width: int | None = None
    height: int | None = None
    fps: int | None = None

    @classmethod
    def of(cls, raw: Mapping[str, Any] | None) -> "MediaFile | None":
        if not raw or not raw.get("url"):
            return None
        size = raw.get("resolution") or {}
        return cls(raw["url"], raw.get("duration"), raw.get("size"), size.get("width"),
                   size.get("height"), raw.get("fps"))


@dataclass(frozen=True)
class Subtitles:
    """The dub's subtitle files (URLs); :meth:`text` fetches one."""

    srt: str | None
    vtt: str | None
    language: str | None

    def text(self, fmt: Literal["srt", "vtt"] = "srt") -> str:
        from ..media.audio import download
        url = self.srt if fmt == "srt" else self.vtt
        if not url:
            raise ValueError(f"this result has no {fmt} subtitles")
        return download(url).decode("utf-8")


@dataclass(frozen=True)
class ScriptLine:
    """One dubbed line: where it sits, who said what, what the dub says, and its audio."""

    id: str
    start: float
    end: float
    speaker: str
    source_text: str
    translation: str
    voice_id: str
    provider: str
    voice_name: str
    audio_url: str | None
    duration_ms: int | None

    def audio(self) -> tuple[Any, int]:
        """This line's dubbed speech, fetched and decoded: float32 samples and their rate.

        >>> samples, rate = dub.script[0].audio()
        """
        from ..media.audio import decode, download, format_of
        if not self.audio_url:
            raise ValueError(f"line {self.id} has no dubbed audio")
        return decode(download(self.audio_url), format_of(self.audio_url))


class Script(list):
    """The dubbed lines in time order; ``.to_frame()`` for a table."""

    COLUMNS = ["start", "end", "speaker", "source_text", "translation", "voice_id",
               "provider", "audio_url"]

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{name: getattr(line, name) for name in self.COLUMNS}
                             for line in self], columns=self.COLUMNS)


class DubbingResult:
    """A finished media translation: dubbed video/audio, subtitles, script, voices."""

    def __init__(self, raw: Mapping[str, Any], context: Mapping[str, Any] | None = None) -> None:
        self.raw = dict(raw)
        context = context or {}
        self.task_id: str | None = self.raw.get("taskId")
        build = self.raw.get("build") or {}
        self.video = MediaFile.of(build.get("video"))
        self.audio = MediaFile.of(build.get("audio"))
        self.compressed = {name: MediaFile.of(f) for name, f in
                           (self.raw.get("compress") or {}).items()}
        subtitles = build.get("subtitles") or {}
        self.subtitles = Subtitles(subtitles.get("srt"), subtitles.get("vtt"),
                                   subtitles.get("language") or context.get("target"))
        language = (self.raw.get("asrScripts") or {}).get("language") or {}
        self.source_language = language.get("source") or context.get("source")
        self.target_language = language.get("target") or context.get("target")
        self.category = (self.raw.get("asrScripts") or {}).get("category")
        self.original = self._original(context.get("material") or {})
        self.voices: list[dict[str, Any]] = list(self.raw.get("voiceMatch") or [])
        self.notices: list[str] = list(self.raw.get("notices") or [])
        self.timings: dict[str, float] = dict(self.raw.get("timings") or {})
        self.script = self._script()

    def _original(self, material: Mapping[str, Any]) -> MediaFile | None:
        source = self.raw.get("source") or {}
        url = source.get("url") or material.get("addressUrl")
        if not url:
            tracks = (self.raw.get("alignment") or {}).get("video") or []
            url = tracks[0].get("file") if tracks else None
        if not url:
            return None
        # The material's record (known when this client made the task) has its picture facts.
        width, _, height = (material.get("resolution") or "").partition("x")
        return MediaFile(url, source.get("duration"), material.get("filesize"),
                         int(width) if width.isdigit() else None,
                         int(height) if height.isdigit() else None)

    def _script(self) -> Script:
        audio = {t.get("id"): t for t in (self.raw.get("tts") or {}).get("result") or []}
        lines = Script()
        for row in (self.raw.get("translatedScripts") or {}).get("result") or []:
            tts = audio.get(row.get("id"), {})
            lines.append(ScriptLine(
                id=str(row.get("id")), start=row.get("start"), end=row.get("end"),
                speaker=row.get("speaker") or "", source_text=row.get("sourceText") or "",
                translation=row.get("text") or "", voice_id=row.get("voiceId") or "",
                provider=row.get("provider") or "",
                voice_name=row.get("speakerDisplayName") or "",
                audio_url=tts.get("ttsFile"), duration_ms=tts.get("duration")))
        return lines

    def __repr__(self) -> str:
        kind = "video" if self.video else "audio"
        return (f"DubbingResult({kind}, {self.source_language}->{self.target_language}, "
                f"{len(self.script)} line{'' if len(self.script) == 1 else 's'}, "
                f"{len(self.voices)} "
                f"voice{'' if len(self.voices) == 1 else 's'})")

    def _repr_html_(self) -> str:
        from ..widgets.media import dubbing_html
        return dubbing_html(self)

    def show(self) -> Any:
        """The result as a widget (same view as the notebook's HTML)."""
        from ..widgets.media import DubbingView
        return DubbingView([self])


def _result(client: "Client", raw: dict[str, Any], context: dict[str, Any]) -> DubbingResult:
    return DubbingResult(raw, context)


RESULT_TYPES["vt"] = _result
RESULT_TYPES["at"] = _result
