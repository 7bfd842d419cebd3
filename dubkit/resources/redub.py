"""Re-dub the edited lines of a dub, and render the result on this machine.

The service has no "re-dub" call, but its media result carries every piece needed: the
no-speech stem (``audioSeparation.mnsUrl``), each dubbed line's audio, the timings and the
original picture. Only the edited lines are synthesized (TTS, one request per provider, in
chunks of 50, each line's slot as its ``duration``); the mix and the video are made locally
with the same code as the sandbox's pipeline (:func:`dubkit.media.mixing.lay_lines`), so an
untouched line is the service's audio, sample for sample, where the service put it.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from tqdm import tqdm

from .._transport import Transport
from ..errors import DubkitError, ValidationError
from ..media.mime import format_of
from ..media.subtitles import Cue, to_srt, to_vtt
from ..results import DubbingResult, ScriptLine
from ..results.redub import Redub
from .tts import TTSResource
from .voices import VoicesResource

MIN_SLOT = 0.2  # seconds: shorter than a syllable, no line can be said in it
_STEPS = ("check", "speak", "mix", "video")


def redub(
    transport: Transport,
    tts: TTSResource,
    voices: VoicesResource,
    result: DubbingResult,
    folder: str | os.PathLike[str] | None,
    *,
    audio_format: str = "m4a",
    progress: bool = True,
    cast: Pronouncing | None = None,
) -> Redub:
    timings: dict[str, float] = {}
    out = Path(folder) if folder else Path(tempfile.mkdtemp(prefix="dubkit-redub-"))
    out.mkdir(parents=True, exist_ok=True)
    with tqdm(total=len(_STEPS), desc="re-dubbing", disable=not progress, leave=False) as bar:

        def step(name: str, started: float) -> None:
            timings[name] = round(time.monotonic() - started, 3)
            bar.set_postfix_str(name)
            bar.update()

        started = time.monotonic()
        edited = _checked(result, voices)
        step("check", started)
        started = time.monotonic()
        spoken = _speak(tts, result, edited, out, cast)
        step("speak", started)
        started = time.monotonic()
        script = [
            replace(line, audio_url=str(spoken[line.id]), _load=_read)
            if line.id in spoken
            else line
            for line in result.script
        ]
        files = _render(transport, result, script, spoken, out, audio_format)
        step("mix", started)
        started = time.monotonic()
        if result.video is not None and result.original is not None:
            files["video"] = _picture(transport, result, files, out)
        step("video", started)
    return Redub(result, script, [line.id for line in edited], files, timings)


def _read(path: str) -> bytes:
    return Path(path).read_bytes()


def _checked(result: DubbingResult, voices: VoicesResource) -> list[ScriptLine]:
    """The edited lines, each checked before anything is synthesized; providers follow
    the voices."""
    if not result.no_speech_url:
        raise DubkitError(
            "this dub has no no-speech stem (audioSeparation.mnsUrl) to re-render over; "
            "re-dubbing needs it"
        )
    edited = result.edited()
    changed = {line.id for line in edited}
    index = {line.id: i for i, line in enumerate(result.script)}
    for i, line in enumerate(result.script):
        field = f"script[{i}]"
        if line.id not in changed:
            if not line.audio_url:
                raise DubkitError(
                    f"line {line.id} ({field}) has no dubbed audio (tts.result[].ttsFile) to keep"
                )
            continue
        if not isinstance(line.translation, str) or not line.translation.strip():
            raise ValidationError(f"{field}.translation", f"line {line.id}: text to speak")
        if line.end <= line.start:
            raise ValidationError(
                f"{field}.end", f"line {line.id}: after its start ({line.start:.2f} s)"
            )
        if line.end - line.start < MIN_SLOT:
            raise ValidationError(
                f"{field}.end",
                f"line {line.id}: a slot of at least {MIN_SLOT} s "
                f"(got {line.end - line.start:.2f} s, shorter than a syllable)",
            )
    made = {line.id: line for line in result.as_made()}
    for line in made.values():  # a dub's own voices, resent with their providers as returned
        voices._remember(line.voice_id, line.provider)
    recast = [line for line in edited if line.voice_id != made[line.id].voice_id]
    if recast:
        providers = voices._require(
            [line.voice_id for line in recast],
            [f"script[{index[line.id]}].voice_id" for line in recast],
        )
        for line, provider in zip(recast, providers):
            line.provider = provider  # the provider follows the voice, and is resent with it
    return edited


class Pronouncing(Protocol):
    """A cast (:class:`dubkit.Cast`) as a re-dub uses it: names said as it spells them."""

    def pronounce(self, text: str, locale: str | None = None) -> str: ...


def _speak(
    tts: TTSResource,
    result: DubbingResult,
    edited: list[ScriptLine],
    out: Path,
    cast: Pronouncing | None = None,
) -> dict[str, Path]:
    """The edited lines' new speech, one batch per provider (the service's rule)."""
    by_provider: dict[str, list[ScriptLine]] = defaultdict(list)
    for line in edited:
        by_provider[line.provider].append(line)
    spoken: dict[str, Path] = {}
    for lines in by_provider.values():
        speech = tts.batch(
            [
                {
                    "text": cast.pronounce(line.translation, result.target_locale)
                    if cast is not None
                    else line.translation,
                    "voice_id": line.voice_id,
                    "duration": round(line.end - line.start, 3),
                }
                for line in lines
            ],
            locale=result.target_locale,
            output_format="wav",
            progress=False,
        )
        for line, said in zip(lines, speech):
            if not said.ok:
                raise DubkitError(f"line {line.id} was not re-spoken: {said.error_message}")
            spoken[line.id] = said.save(out / "lines", f"line-{line.id}")
    return spoken


def _render(
    transport: Transport,
    result: DubbingResult,
    script: list[ScriptLine],
    spoken: dict[str, Path],
    out: Path,
    audio_format: str,
) -> dict[str, Path]:
    """Mix the lines over the no-speech stem; write the audio and the subtitles."""
    from ..media import av, mixing  # numpy, soundfile and ffmpeg load on the first remix
    from ..media.audio import decode

    stem_url = result.no_speech_url or ""
    bed, rate = decode(transport.download(stem_url), format_of(stem_url))
    channels = 1 if bed.ndim == 1 else bed.shape[1]
    clips = []
    for line in script:
        samples, clip_rate = line.audio()
        if samples.ndim > 1:
            samples = samples.mean(axis=1)
        if line.id in spoken:  # the new speech replaces the old inside its slot
            samples = samples[: round((line.end - line.start) * clip_rate)]
        clips.append((line.start, samples, clip_rate))
    track = mixing.lay_lines(clips, rate, len(bed) / rate, channels)
    name = f"redub.{result.target_locale}"
    audio = out / f"{name}.{audio_format}"
    av.encode_audio(mixing.mix(bed, track), rate, audio_format, audio)
    cues = [Cue(line.start, line.end, line.translation) for line in script]
    srt, vtt = out / f"{name}.srt", out / f"{name}.vtt"
    srt.write_text(to_srt(cues), encoding="utf-8")
    vtt.write_text(to_vtt(cues), encoding="utf-8")
    return {"audio": audio, "srt": srt, "vtt": vtt}


def _picture(
    transport: Transport, result: DubbingResult, files: dict[str, Path], out: Path
) -> Path:
    """The original picture with the new audio and the new subtitles as a soft track."""
    from ..media import mp4

    original = result.original
    assert original is not None
    source = out / f"original{Path(original.url.split('?')[0]).suffix or '.mp4'}"
    if not source.exists():
        source.write_bytes(transport.download(original.url))
    video = out / f"redub.{result.target_locale}.mp4"
    mp4.mux(source, files["audio"], video, subtitles_path=files["srt"])
    return video
