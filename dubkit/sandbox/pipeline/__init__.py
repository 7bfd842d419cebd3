"""Media translation, end to end: a video or audio file in, a dubbed one with subtitles out.

Stages (each timed; the seconds land in the result's ``timings``)::

    probe -> decode -> transcribe (segment speech, subtitle text) -> speakers -> translate
    -> voices (cast / clone) -> synthesize -> fit (time-stretch into slots) -> separate
    -> mix -> subtitles -> mux (mp4 / m4a) -> compress | publish (mono track, lines, thumbnail)

``compress`` (the x264 variants, the slowest step) runs beside the others: from the start when
its picture does not depend on the dub (nothing burned, no stretch), else beside ``publish``;
so ``timings.total`` (wall time) is less than the sum of the stages.

Memory does not grow with the clip's length: the original is decoded into a scratch file
(:class:`~dubkit.media.track.Track`) that the analyses read one line or block at a time, each
spoken and fitted line is kept in a file of its own, and the stems and the mix are made and
encoded a window at a time. The scratch folder is removed when the run ends.

Each stage module states its own choices: :mod:`.settings` (options), :mod:`.transcript`
(segments, text, speakers), :mod:`.casting` (voices), :mod:`.dubbing` (translation, fitting),
:mod:`.render` (separation, mux, variants), :mod:`.result` (the §3.6 shape).

A failing stage ends the task with a message that names the stage: media and speech problems
are 422 (the input cannot be processed), anything else 500. Nothing is left running.

>>> result = run(Job(task_id, Path("talk.mp4"), settings, library, outputs, source))  # doctest: +SKIP
>>> result["build"]["video"]["url"], result["timings"]["mux"]                          # doctest: +SKIP
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...locales import AUTO
from ...media import av
from ...media.speech import SpeechError
from ...media.track import Track
from ...schema import AudioFile, DubbedSource, ImageFile, MediaFile
from ..engines import language
from ..service_error import ServiceError
from . import dubbing, render
from .casting import Casting, Voice, VoiceLibrary
from .outputs import Outputs
from .result import DubFiles, assemble
from .settings import Settings, TextOptions, read_settings
from .transcript import Line, assign_speakers, find_lines

__all__ = [
    "Job",
    "run",
    "Settings",
    "TextOptions",
    "read_settings",
    "Voice",
    "VoiceLibrary",
    "Outputs",
    "WORK_RATE",
]

log = logging.getLogger("dubkit.sandbox")
WORK_RATE = 44100  # the mix's sample rate; the dub is resampled up to it
ASR_RATE = 16000  # monoAudio: what a recogniser would be given
MIN_SILENCE = {"fast": 0.35, "normal": 0.25}


@dataclass
class Job:
    """What one run needs: the file, the settings, the voices it may use, where to write."""

    task_id: str
    media_path: Path
    settings: Settings
    library: VoiceLibrary
    outputs: Outputs
    source: DubbedSource  # the material that is dubbed
    scratch_dir: Path | None = None  # where the run's scratch folder goes (None: system temp)
    line_gain_db: dict[str, float] = field(default_factory=dict)  # a fault the admin set


class Stages:
    """Times each stage and turns its failure into a ``ServiceError`` naming the stage."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        except ServiceError:
            raise
        except (av.MediaError, SpeechError, LookupError, ValueError, OSError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ServiceError(422, f"{name} failed: {first}") from exc
        except Exception as exc:
            log.exception("media translation stage %s", name)
            raise ServiceError(500, f"{name} failed: internal error: {exc}") from exc
        finally:
            self.seconds[name] = round(
                self.seconds.get(name, 0.0) + time.perf_counter() - started, 3
            )


def run(job: Job) -> dict[str, Any]:
    """Dub ``job.media_path`` as ``job.settings`` say; returns the task's result (§3.6)."""
    # The compressed variants are the slowest step (x264): they run beside the other stages,
    # from the start when their picture does not depend on the dub. The decoded audio lives in
    # a scratch folder: on disk, not in memory, and never among the served outputs.
    if job.scratch_dir is not None:
        job.scratch_dir.mkdir(parents=True, exist_ok=True)
    # The pool is inside: it finishes with the scratch files before they are removed.
    with (
        tempfile.TemporaryDirectory(prefix=f"{job.task_id}-", dir=job.scratch_dir) as scratch,
        ThreadPoolExecutor(1, thread_name_prefix="dub-compress") as pool,
    ):
        return _dub(job, pool, Path(scratch))


def _dub(job: Job, pool: ThreadPoolExecutor, scratch: Path) -> dict[str, Any]:
    """The steps of a dub, in order: probe, decode, transcribe, speakers, translate, voices,
    synthesize, fit, then the files (stems, mix, subtitles, picture, variants) and the result."""
    settings, out = job.settings, job.outputs
    started = time.perf_counter()
    stage = Stages()
    notices = list(settings.notices)
    files = DubFiles()
    info = _probed(job, stage)
    video_task = settings.task_type == "vt" and info.has_video
    variants = render.variant_names(info.height or 0) if video_task else {}
    early: Future[dict[int, str]] | None = None
    if video_task and not settings.text.burn and not settings.dynamic_length:
        early = pool.submit(_pictures, stage, out, str(job.media_path), variants)
    with stage("decode"):
        original = Track.decode(job.media_path, scratch / "original.f32", WORK_RATE)
        rate, total = original.rate, original.duration
    with stage("transcribe"):
        lines, settings = _transcribed(job, original, settings, notices)
    with stage("speakers"):
        speakers = assign_speakers(lines, original, settings.speaker_num)
    with stage("translate"):
        dubbing.translate(lines, settings)
    with stage("voices"):
        casting = Casting(
            settings, job.library, job.task_id, rate, lambda name, a: out.audio(name, a, rate)
        )
        casting.cast(lines, speakers, original)
        notices += casting.notices
    with stage("synthesize"):
        clips = dubbing.synthesize(lines, casting.speaking, scratch / "said")
    with stage("fit"):
        scale, original = _fitted(lines, clips, original, settings, notices, scratch)
        dubbing.apply_gains(lines, job.line_gain_db)
    _render_files(job, stage, files, original, lines, settings, scale, video_task, variants)
    soft = f"subtitles.{settings.target}.srt" if settings.text.soft else None
    compressing = pool.submit(
        _compress, stage, out, info, settings, scale, early, variants, soft, scratch
    )
    with stage("publish"):
        _publish(out, files, job.media_path, lines, video_task, scratch)
    compressing.result()
    files.compress = render.compressed_files(out, info.height if video_task else None)
    timings = dict(stage.seconds)
    timings["total"] = round(time.perf_counter() - started, 3)
    return assemble(
        task_id=job.task_id,
        settings=settings,
        category="video" if video_task else "audio",
        lines=lines,
        speakers=speakers,
        matches=casting.matches,
        files=files,
        scale=scale,
        total=total,
        source=job.source,
        timings=timings,
        notices=notices,
    ).to_wire()


def _probed(job: Job, stage: Stages) -> av.MediaInfo:
    """The material's streams; a material without sound has nothing to dub."""
    with stage("probe"):
        info = av.probe(job.media_path)
        if not info.has_audio:
            raise ServiceError(
                422,
                "probe failed: the material has no audio track, so there is no speech to translate",
            )
    return info


def _transcribed(
    job: Job, original: Track, settings: Settings, notices: list[str]
) -> tuple[list[Line], Settings]:
    """The lines spoken (their words from the material's subtitle track, where it has one),
    and the settings with the source locale found when it was ``auto``."""
    cues = av.extract_subtitles(job.media_path)
    lines = find_lines(original, cues, min_silence=MIN_SILENCE[settings.transcribe_mode])
    if not lines:
        raise ServiceError(
            422,
            "transcribe failed: no speech found in the material's "
            "audio, so there is nothing to dub",
        )
    if not cues:
        notices.append(
            "the material has no subtitle track and the sandbox has no speech "
            "recogniser: every line's text is a labelled placeholder"
        )
    elif any(line.placeholder for line in lines):
        notices.append("some speech had no subtitle cue: those lines carry a labelled placeholder")
    if settings.source == AUTO:
        settings = _detected_source(settings, lines, notices)
    return lines, settings


def _fitted(
    lines: list[Line],
    clips: list[Any],
    original: Track,
    settings: Settings,
    notices: list[str],
    scratch: Path,
) -> tuple[float, Track]:
    """Each dubbed line fitted to its place (or the timeline stretched to the lines, with
    ``dynamic_length``): the timeline's scale and the original on it."""
    total = original.duration
    scale = dubbing.timeline_stretch(lines, clips, total) if settings.dynamic_length else 1.0
    dubbing.fit(
        lines, clips, total, scale, natural_pace=settings.dynamic_length, folder=scratch / "fitted"
    )
    if any(line.truncated for line in lines):
        notices.append(
            "lines "
            + ", ".join(line.id for line in lines if line.truncated)
            + " were too long for their place even at double speed and were cut"
        )
    for said in clips:  # scratch is removed as soon as it is used: a long dub's is large
        said.remove()
    if scale > 1:
        stretched = original.stretched(scale, scratch / "stretched.f32")
        original.remove()
        original = stretched
    return scale, original


def _render_files(
    job: Job,
    stage: Stages,
    files: DubFiles,
    original: Track,
    lines: list[Line],
    settings: Settings,
    scale: float,
    video_task: bool,
    variants: dict[int, str],
) -> None:
    """The dub's files: the stems, the mix, the subtitles and the dubbed picture."""
    out, rate = job.outputs, original.rate
    with stage("separate"):
        stems = render.separate(original, lines, settings, scale)
        for stem, name in (("speech", "stems/speech.m4a"), ("background", "stems/background.m4a")):
            setattr(files, stem, out.audio_windows(name, stems.windows(stem), rate, stems.channels))
    with stage("mix"):
        out.audio_windows("dubbed.m4a", render.dub_mix(stems, lines, rate), rate, stems.channels)
        files.audio = out.media_file("dubbed.m4a", AudioFile)
    with stage("subtitles"):
        files.subtitles = render.write_subtitles(out, lines, settings.target)
    with stage("mux"):
        if video_task:
            built = render.video(
                out,
                str(job.media_path),
                "dubbed.m4a",
                settings,
                scale,
                f"subtitles.{settings.target}.srt",
                # burned subtitles: one decode and one burn for the dub and its variants
                variants=variants if settings.text.burn and scale <= 1 else None,
            )
            files.video = out.media_file(built, MediaFile)


def _pictures(stage: Stages, out: Outputs, source: str, names: dict[int, str]) -> dict[int, str]:
    with stage("compress"):
        return render.pictures(out, source, names)


def _compress(
    stage: Stages,
    out: Outputs,
    info: av.MediaInfo,
    settings: Settings,
    scale: float,
    early: Future[dict[int, str]] | None,
    variants: dict[int, str],
    soft: str | None,
    scratch: Path,
) -> None:
    """Finish the variants: pictures made early get the dub's sound; burned ones were made by
    the mux; the rest (a stretched picture, or the audio's mp3) are made from the dub."""
    with stage("compress"):
        if early is not None:
            render.dress(out, early.result(), variants, "dubbed.m4a", soft)
        elif settings.task_type != "vt" or not info.has_video:
            render.compress(out, "dubbed.m4a", None, scratch)
        elif not (settings.text.burn and scale <= 1):
            render.compress(out, "dubbed.mp4", info.height, scratch)


def _publish(
    out: Outputs, files: DubFiles, source: Path, lines: list[Line], video_task: bool, scratch: Path
) -> None:
    """The ASR input, each dubbed line and a thumbnail, as files with URLs."""
    files.mono = out.transcoded("original-mono.wav", source, scratch, ASR_RATE, mono=True)
    files.lines = {
        line.id: out.audio(f"lines/line-{int(line.id):03d}.wav", clip.read(), clip.rate)
        for line in lines
        if (clip := line.clip) is not None  # every line has its fitted dub by now
    }
    if video_task:
        av.thumbnail(out.path("dubbed.mp4"), out.path("thumbnail.jpg"))
        files.images = [
            ImageFile(
                url=out.url("thumbnail.jpg"),
                size=out.path("thumbnail.jpg").stat().st_size,
                resolution=files.video.resolution if files.video else None,
            )
        ]


def _detected_source(settings: Settings, lines: list[Line], notices: list[str]) -> Settings:
    """``language.source: "auto"`` becomes the language of the transcript's text."""
    spoken = " ".join(line.text for line in lines if not line.placeholder)
    found = language.detect(spoken)
    if found is None:
        notices.append(
            "language.source 'auto': the transcript has no text the sandbox can identify "
            "(no subtitle cues, or too little); the source stays 'auto'"
        )
        return settings
    locale, probability = found
    notices.append(
        f"language.source 'auto': detected {locale} from the transcript (p={probability:.2f})"
    )
    return replace(settings, source=locale)
