"""The media-translation result in the interface's shape (§3.6), plus labelled extras.

Extras beyond §3.6 (sent beside the body, in the extras header: :mod:`dubkit.sandbox.extras`):
``source`` (the material dubbed),
``subtitles`` on ``build`` (SRT/VTT URLs), ``timings`` (seconds per stage), ``notices`` (every
option the sandbox could not honour as asked, and what it did instead), ``options`` (the
settings as understood), ``engine`` labels, ``lipsync`` (requested / applied).

*choice* ``tts.result[].duration`` is in milliseconds (an integer, like material durations).
*choice* ``alignment`` tracks: ``tracksTimes`` is ``[start, end]`` on the output timeline,
``timeRange`` the ``[start, end]`` used from the file. The audio tracks are what was mixed:
the background stem at full level, the original speech stem at the separation's level
(``volumeScale`` 0 removed, ~0.126 ducked by 18 dB, 1 kept), then one track per dubbed line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...media import speech
from ...schema import (
    Alignment,
    AsrLine,
    AsrScripts,
    AudioFile,
    AudioSeparation,
    Build,
    DubbedSource,
    ImageFile,
    LanguagePair,
    LipsyncEcho,
    MediaFile,
    MediaTranslationResult,
    MediaTTSLine,
    MediaTTSLines,
    SubtitleCue,
    SubtitleFiles,
    Track,
    TranslatedLine,
    TranslatedScripts,
    VoiceCloneEcho,
    VoiceMatch,
)
from ..engines import translate as translation_engine
from .render import DUCK_DB
from .settings import Settings
from .transcript import Line

SPEECH_ENGINE = "sandbox-espeak-ng"
_VOWELS = re.compile(r"[aeiouyàâäéèêëîïôöùûüáíóúãõåæøœ]+", re.IGNORECASE)


@dataclass
class DubFiles:
    """The files a dub wrote, by what the result calls them (URLs, or their §3.6 records)."""

    speech: str = ""  # the speech stem
    background: str = ""  # the stem with no speech (music and sound)
    mono: str = ""  # the original, mono, as transcription heard it
    audio: AudioFile | None = None  # the dub's sound
    video: MediaFile | None = None  # the dubbed video (video tasks)
    subtitles: SubtitleFiles | None = None
    lines: dict[str, str] = field(default_factory=dict)  # each line's dubbed audio, by id
    images: list[ImageFile] = field(default_factory=list)  # the poster frame (video tasks)
    compress: dict[str, MediaFile] = field(default_factory=dict)  # variants by name


def syllables(text: str) -> int:
    """A rough syllable count (vowel groups; one per other-script character)."""
    latin = len(_VOWELS.findall(text))
    other = sum(1 for ch in text if ch.isalpha() and ord(ch) > 0x2FF)
    return latin + other


def assemble(
    *,
    task_id: str,
    settings: Settings,
    category: str,
    lines: list[Line],
    speakers: int,
    matches: list[VoiceMatch],
    files: DubFiles,
    scale: float,
    total: float,
    source: DubbedSource,
    timings: dict[str, float],
    notices: list[str],
) -> MediaTranslationResult:
    """Everything the task's ``result`` holds once finished, part by part."""
    first_clone = next((m for m in matches if (m.voice_id or "").startswith("cv_")), None)
    return MediaTranslationResult(
        task_id=task_id,
        compress=files.compress,
        asr_scripts=_asr_scripts(settings, category, lines, speakers, files),
        audio_separation=AudioSeparation(
            sfx_url="",
            music_url="",
            vocal_url=files.speech,
            speech_url=files.speech,
            other_url="",
            mns_url=files.background,
        ),
        translated_scripts=_translated_scripts(settings, lines),
        voice_clone=VoiceCloneEcho(
            provider=settings.clone_provider,
            mode=settings.mode,
            ref_audio=first_clone.audio if first_clone else "",
            style=settings.style,
            timbre_method=settings.timbre,
        ),
        voice_match=matches,
        tts=_tts_lines(settings, lines, files),
        alignment=_alignment(settings, category, lines, files, source, scale, total),
        build=Build(
            video=files.video, images=files.images, audio=files.audio, subtitles=files.subtitles
        ),
        source=source,
        lipsync=LipsyncEcho(
            requested=settings.lipsync,
            applied=False,
            reason="lip sync is not available in the sandbox" if settings.lipsync else None,
        ),
        options=settings.echo(),
        notices=notices,
        timings=timings,
    )


def _asr_scripts(
    settings: Settings, category: str, lines: list[Line], speakers: int, files: DubFiles
) -> AsrScripts:
    """What was heard: each line of the source, by speaker, at its time."""
    heard = [
        AsrLine(
            id=line.id,
            speaker=line.speaker_label(),
            text=line.text,
            locale=settings.source,
            emotion="",
            name=line.speaker_label(),
            gender=line.measured.gender if line.measured else "",
            age="",
            text_with_bracket=line.text,
            text_with_break=line.text,
            start=line.start,
            end=line.end,
            placeholder=line.placeholder,
        )
        for line in lines
    ]
    return AsrScripts(
        asr_results=heard,
        mono_audio=files.mono,
        speaker_num=speakers,
        language=LanguagePair(source=settings.source, target=settings.target),
        category=category,
        industry="",
        keywords=[],
        ctc_enabled=False,
    )


def _translated_scripts(settings: Settings, lines: list[Line]) -> TranslatedScripts:
    """What the dub says: each line's translation, voice and place in the dub."""
    translated = [
        TranslatedLine(
            id=line.id,
            start=line.at,
            end=round(line.at + _heard(line), 3),
            source_text=line.text,
            text=line.translation,
            speaker=line.speaker_label(),
            locale=settings.target,
            gender=line.voice.gender,
            voice_id=line.voice.voice_id,
            provider=line.voice.provider,
            speaker_display_name=line.voice.name,
            emotion="",
            age="",
            mode=settings.mode,
            source_syllable=syllables(line.text),
            target_syllable=syllables(line.translation),
            source_start=line.start,
            source_end=line.end,
        )
        for line in lines
    ]
    return TranslatedScripts(
        result=translated,
        prompt=settings.prompt,
        mode=settings.translate_mode,
        engine=translation_engine.ENGINE_LABEL,
    )


def _tts_lines(settings: Settings, lines: list[Line], files: DubFiles) -> MediaTTSLines:
    """Each dubbed line's speech file and how it was fitted to its place."""
    spoken = [
        MediaTTSLine(
            id=line.id,
            text=line.translation,
            tts_file=files.lines[line.id],
            provider=line.voice.provider,
            voice_id=line.voice.voice_id,
            clone_mode=settings.mode,
            duration=round(_heard(line) * 1000),
            raw_duration=line.raw_duration,
            stretch=line.stretch,
            truncated=line.truncated,
        )
        for line in lines
    ]
    return MediaTTSLines(result=spoken, engine=SPEECH_ENGINE, sample_rate=speech.SAMPLE_RATE)


def _alignment(
    settings: Settings,
    category: str,
    lines: list[Line],
    files: DubFiles,
    source: DubbedSource,
    scale: float,
    total: float,
) -> Alignment:
    """Where every track, cue and picture sits on the dub's timeline."""
    output_total = round(total * scale, 3)
    return Alignment(
        audio=[
            _track(files.background, 0, output_total, 0, output_total, 1.0),
            _track(files.speech, 0, output_total, 0, output_total, _speech_level(settings)),
        ]
        + [
            _track(files.lines[line.id], line.at, line.at + _heard(line), 0, _heard(line), 1.0)
            for line in lines
        ],
        subtitle=[
            SubtitleCue(
                id=line.id,
                start=line.at,
                end=round(line.at + _heard(line), 3),
                text=line.translation,
            )
            for line in lines
        ],
        video=(
            [_track(source.url or "", 0, output_total, 0, total, 0.0)]
            if category == "video"
            else []
        ),
        timeline_stretch=scale,
    )


def _speech_level(settings: Settings) -> float:
    if settings.separation == "remove":
        return 0.0
    return 1.0 if settings.separation == "keep" else round(10 ** (DUCK_DB / 20), 3)


def _heard(line: Line) -> float:
    return line.clip.duration if line.clip is not None else 0.0


def _track(
    url: str, start: float, end: float, used_from: float, used_to: float, volume: float
) -> Track:
    return Track(
        file=url,
        template_id=0,
        tracks_times=[round(start, 3), round(end, 3)],
        time_range=[round(used_from, 3), round(used_to, 3)],
        volume_scale=volume,
    )
