"""Text to speech: ``client.tts``.

>>> line = client.tts.speak("Hello there!", "sv_s1_en_us_clear_f")      # one line, a player
>>> line.audio, line.sample_rate, line.duration                         # numpy, Hz, seconds
>>> speech = client.tts.create(["Hi", {"text": "Bye", "emo_prompt": "sad"}],
...                            voice="sv_s1_en_us_clear_f", output_format="wav")
>>> speech.save("out/")                                                 # one file a line
>>> client.tts.batch(thousand_lines, voice="sv_s1_en_us_clear_f")       # any number of lines
>>> task = client.tts.create_async(["Later"], voice="sv_s1_en_us_clear_f")   # a Task

A line is a string or a dict with ``text`` and any of ``voice_id``, ``timbre_ref_audio``,
``emo_weight``, ``emo_prompt``, ``emo_ref_audio``, ``duration`` (wire camelCase works too).
Keyword options of the same names apply to every line that does not set its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union, Iterator, Sequence

import numpy as np
import pandas as pd

from ..media import audio as audio_io
from ..errors import DubkitError, ValidationError
from .._wire import parse
from ..schema import MAX_LINES, TTSAsyncRequest, TTSRequest, TTSResult, TTSResultItem
from ._base import Resource, as_list, chunk_failure, chunked, run_chunks
from .tasks import RESULT_TYPES, Task

if TYPE_CHECKING:
    from ..client import Client

Lines = Union[str, Sequence[Union[str, Mapping[str, Any]]]]   # a plain string is one line
_WIRE_NAMES = {"voice_id": "voiceId", "timbre_ref_audio": "timbreRefAudio",
               "emo_weight": "emoWeight", "emo_prompt": "emoPrompt",
               "emo_ref_audio": "emoRefAudio", "duration": "duration"}


class SpeechLine:
    """One spoken line: its text, voice, ``uri``, ``duration`` or ``error_message``.

    ``.audio`` downloads and decodes on first use (float32, mono); ``.save(dir)`` writes it.
    """

    def __init__(self, index: int, text: str | None, voice_id: str | None,
                 item: TTSResultItem) -> None:
        self.index, self.text, self.voice_id = index, text, voice_id
        self.uri = item.uri
        self.duration = item.duration
        self.error_message = item.error_message
        self.extra = dict(item.model_extra or {})     # e.g. the sandbox's "emotion"
        self._data: bytes | None = None
        self._decoded: tuple[np.ndarray, int] | None = None

    def __repr__(self) -> str:
        state = f"{self.duration:.1f} s" if self.ok else f"failed: {self.error_message}"
        text = self.text or ""
        return f"SpeechLine({self.index}, {text[:37] + '…' if len(text) > 40 else text!r}, {state})"

    @property
    def ok(self) -> bool:
        return not self.error_message and bool(self.uri)

    @property
    def format(self) -> str:
        return audio_io.format_of(self.uri or "")

    @property
    def data(self) -> bytes:
        """The encoded file's bytes, downloaded once."""
        if not self.ok:
            raise DubkitError(f"line {self.index} has no audio: {self.error_message}")
        if self._data is None:
            self._data = audio_io.download(self.uri)  # type: ignore[arg-type]
        return self._data

    def data_if_loaded(self) -> bytes | None:
        return self._data

    @property
    def audio(self) -> np.ndarray:
        """Samples as float32 numpy (soundfile; m4a through ffmpeg)."""
        if self._decoded is None:
            self._decoded = audio_io.decode(self.data, self.format)
        return self._decoded[0]

    @property
    def sample_rate(self) -> int:
        self.audio  # noqa: B018  (decodes once)
        return self._decoded[1]  # type: ignore[index]

    def save(self, directory: str | Path, name: str | None = None) -> Path:
        """Write the file as the service encoded it: ``<dir>/<name or NNN>.<format>``."""
        target = Path(directory) / f"{name or f'{self.index:03d}'}.{self.format or 'audio'}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(self.data)
        return target

    def _repr_html_(self) -> str:
        from ..widgets.audio import speech_table_html
        return speech_table_html([self])


class Speech:
    """Spoken lines in request order; per-line failures are in ``errors``."""

    def __init__(self, lines: list[SpeechLine], task_ids: list[str]) -> None:
        self.lines = lines
        self.task_ids = task_ids

    @classmethod
    def from_results(cls, results: Sequence[TTSResult], texts: Sequence[str | None],
                     voices: Sequence[str | None]) -> "Speech":
        items = [item for result in results for item in result.results]
        lines = [SpeechLine(i, texts[i] if i < len(texts) else None,
                            voices[i] if i < len(voices) else None, item)
                 for i, item in enumerate(items)]
        return cls(lines, [r.task_id for r in results if r.task_id])

    @property
    def task_id(self) -> str | None:
        return self.task_ids[0] if len(self.task_ids) == 1 else None

    def __len__(self) -> int:
        return len(self.lines)

    def __iter__(self) -> Iterator[SpeechLine]:
        return iter(self.lines)

    def __getitem__(self, index: int) -> SpeechLine:
        return self.lines[index]

    @property
    def errors(self) -> dict[int, str]:
        """Index -> error message of every line that failed."""
        return {l.index: l.error_message or "no audio" for l in self.lines if not l.ok}

    @property
    def duration(self) -> float:
        """Seconds of speech over all lines that succeeded."""
        return round(sum(l.duration or 0 for l in self.lines if l.ok), 3)

    @property
    def audio(self) -> np.ndarray:
        """All successful lines one after another (same sample rate required)."""
        rates = {l.sample_rate for l in self.lines if l.ok}
        if len(rates) > 1:
            raise DubkitError(f"lines have different sample rates {sorted(rates)}; use "
                              f"each line's .audio")
        return np.concatenate([l.audio for l in self.lines if l.ok] or [np.zeros(0, "float32")])

    @property
    def sample_rate(self) -> int | None:
        return next((l.sample_rate for l in self.lines if l.ok), None)

    def save(self, directory: str | Path) -> list[Path]:
        """Write every successful line as ``<dir>/NNN.<format>``; returns the paths."""
        return [l.save(directory) for l in self.lines if l.ok]

    def to_frame(self) -> pd.DataFrame:
        """text | voice_id | duration | uri | error; ``error`` is None for a line spoken."""
        # object dtype: pandas would infer a string column and show "no error" as NaN
        # wherever another line failed, and as None where none did.
        return pd.DataFrame({"text": [l.text for l in self.lines],
                             "voice_id": [l.voice_id for l in self.lines],
                             "duration": [l.duration for l in self.lines],
                             "uri": [l.uri for l in self.lines],
                             "error": pd.Series([l.error_message for l in self.lines],
                                                dtype=object)})

    def __repr__(self) -> str:
        count = len(self)
        return (f"Speech({count} line{'' if count == 1 else 's'}, {self.duration:.1f} s of "
                f"audio, {len(self.errors)} failed)")

    def _repr_html_(self) -> str:
        from ..widgets.audio import speech_table_html
        note = f"{len(self.errors)} of {len(self)} lines failed" if self.errors else ""
        return speech_table_html(self.lines, total=len(self), note=note)


class TTSResource(Resource):
    """``client.tts``: ≤ 50 lines a call with :meth:`create`, any number with :meth:`batch`."""

    def create(self, lines: Lines | Mapping[str, Any], *, voice: str | None = None,
               language: str | None = None, output_format: str | None = None,
               trim: bool | None = None, idempotency_key: str | None = None,
               **line_options: Any) -> Speech:
        """Speak up to 50 lines of one provider and wait for the audio.

        ``voice`` is the default ``voiceId``; ``language`` the target locale;
        ``output_format`` wav, mp3 or m4a (the service's default); ``trim`` strips silence.
        A raw wire body dict (with ``data``) is accepted as the first argument.
        """
        body = self._request(TTSRequest, lines, voice, language, output_format, trim,
                             line_options)
        data = self._client.call("tts.create", body, idempotency_key=idempotency_key)
        return Speech.from_results([TTSResult.model_validate(data)], *_texts_and_voices(body))

    def speak(self, text: str, voice: str, **options: Any) -> SpeechLine:
        """The one-liner: one text, one voice, one :class:`SpeechLine` (with a player).

        Raises :class:`DubkitError` with the service's reason if the line was not spoken.
        """
        line = self.create([text], voice=voice, **options)[0]
        if not line.ok:
            raise DubkitError(f"the line was not spoken: {line.error_message}")
        return line

    def create_async(self, lines: Lines | Mapping[str, Any], *, voice: str | None = None,
                     language: str | None = None, output_format: str | None = None,
                     trim: bool | None = None, extra_data: Mapping[str, Any] | None = None,
                     idempotency_key: str | None = None, **line_options: Any) -> Task:
        """Like :meth:`create` but returns a :class:`Task` at once (webhook ``openapi-tts``)."""
        from .._transport import new_idempotency_key
        key = idempotency_key or new_idempotency_key()
        body = self._request(TTSAsyncRequest, lines, voice, language, output_format, trim,
                             line_options)
        # The key rides in extraData so a webhook can be matched to this call even if the
        # acceptance answer is lost.
        body.extra_data = {"dubkitIdempotencyKey": key, **(body.extra_data or {}),
                           **(extra_data or {})}
        data = self._client.call("tts.create_async", body, idempotency_key=key)
        texts, voices = _texts_and_voices(body)
        return Task(self._client, data["taskId"], task_type="tts", status="running",
                    created_at=data.get("createdAt"), idempotency_key=key,
                    context={"texts": texts, "voices": voices})

    def batch(self, lines: Lines, *, voice: str | None = None, language: str | None = None,
              output_format: str | None = None, trim: bool | None = None,
              concurrency: int = 4, progress: bool = True, **line_options: Any) -> Speech:
        """Speak any number of lines: split by provider, chunks of 50, sent concurrently.

        Results keep the input order. Every line is checked before the first request; a
        request that still fails (e.g. 402) marks its lines failed in ``errors`` instead of
        losing the chunks that succeeded (see :func:`~dubkit.resources._base.run_chunks`).
        """
        items = [self._line(line, voice, line_options, i)
                 for i, line in enumerate(as_list(lines))]
        if not items:
            raise ValidationError("data", "at least one line is required")
        self._learn_providers([it["voiceId"] for it in items if it.get("voiceId")])
        groups: dict[str, list[int]] = {}
        for i, item in enumerate(items):
            groups.setdefault(self._group_of(item), []).append(i)
        jobs = [(indices, self._request(TTSRequest, [items[i] for i in indices], None,
                                        language, output_format, trim, {}, offsets=indices))
                for group in groups.values() for indices in chunked(group, MAX_LINES)]

        def send(job: tuple[Sequence[int], TTSRequest]) -> TTSResult:
            return TTSResult.model_validate(self._client.call("tts.create", job[1]))

        def failed(job: tuple[Sequence[int], TTSRequest], exc: DubkitError) -> TTSResult:
            return TTSResult(results=[TTSResultItem(error_message=chunk_failure(exc))] *
                             len(job[0]))

        answers = run_chunks(jobs, send, concurrency=concurrency, progress=progress,
                             description="speaking", weight=lambda job: len(job[0]),
                             on_error=failed)
        ordered: list[TTSResultItem | None] = [None] * len(items)
        for (indices, _), answer in zip(jobs, answers):
            for i, item in zip(indices, answer.results):
                ordered[i] = item
        merged = TTSResult(results=[o or TTSResultItem(error_message="no result") for o in ordered])
        merged_speech = Speech.from_results([merged], [it.get("text") for it in items],
                                            [it.get("voiceId") for it in items])
        merged_speech.task_ids = [a.task_id for a in answers if a.task_id]
        return merged_speech

    # ----------------------------------------------------------------- building requests

    def _line(self, line: Any, voice: str | None, options: Mapping[str, Any],
              index: int) -> dict[str, Any]:
        """A line as a wire dict (camelCase), with the call's defaults filled in."""
        unknown = set(options) - set(_WIRE_NAMES)
        if unknown:
            raise ValidationError(sorted(unknown)[0], "not an option of client.tts; line "
                                  f"options are {', '.join(_WIRE_NAMES)}")
        if not isinstance(line, (str, Mapping)):
            raise ValidationError(f"data[{index}]", f"a line is a string or a dict, got "
                                                    f"{type(line).__name__}")
        item = {"text": line} if isinstance(line, str) else {
            _WIRE_NAMES.get(k, k): v for k, v in line.items()}
        for name, value in {"voice_id": voice, **options}.items():
            wire = _WIRE_NAMES[name]
            if value is None or item.get(wire) is not None:
                continue
            if wire == "voiceId" and item.get("timbreRefAudio"):
                continue     # a timbre reference is this line's voice
            item[wire] = value
        return item

    def _request(self, model: type[TTSRequest], lines: Any, voice: str | None,
                 language: str | None, output_format: str | None, trim: bool | None,
                 options: Mapping[str, Any], offsets: Sequence[int] | None = None
                 ) -> TTSRequest:
        if isinstance(lines, Mapping):       # a raw wire body
            body = parse(model, lines)
            self._check_voices(body, offsets)
            return body
        items = [self._line(l, voice, options, i) for i, l in enumerate(as_list(lines))]
        if len(items) > MAX_LINES:
            raise ValidationError("data", f"at most {MAX_LINES} lines per request, got "
                                          f"{len(items)}; client.tts.batch() speaks any "
                                          f"number of lines in concurrent chunks of "
                                          f"{MAX_LINES}")
        # Local recordings become materials, but only once everything else is known good:
        # validate with a stand-in URL first, so bad input never costs an upload.
        local = {(i, field): item[field] for i, item in enumerate(items)
                 for field in ("timbreRefAudio", "emoRefAudio")
                 if item.get(field) and not str(item[field]).startswith(("http://", "https://"))}
        for i, field in local:
            items[i][field] = "https://local.file.invalid/reference"
        wire = {"data": items, "outputFormat": output_format, "trim": trim,
                "language": {"target": language} if language else None}
        try:
            body = parse(model, {k: v for k, v in wire.items() if v is not None})
        except ValidationError as exc:
            raise _renumbered(exc, offsets) from None
        self._check_voices(body, offsets)
        if local:
            from .clone import resolve_audio_url
            for (i, field), path in local.items():
                attribute = "timbre_ref_audio" if field == "timbreRefAudio" else "emo_ref_audio"
                setattr(body.data[i], attribute, resolve_audio_url(self._client, path, field))
        return body

    def _check_voices(self, body: TTSRequest, offsets: Sequence[int] | None) -> None:
        """What the client can tell before sending: voices exist, one provider, timbre rules.

        Voices not seen yet are looked up in the service's own lists (once, then remembered),
        so no id the service would accept is refused and no create is sent for one it would not.
        """
        def name(i: int) -> str:
            return f"data[{offsets[i] if offsets else i}]"

        voices = self._client.voices
        self._learn_providers([line.voice_id for line in body.data if line.voice_id])
        providers: dict[str, int] = {}
        for i, line in enumerate(body.data):
            if line.voice_id is None:
                continue
            provider = voices.provider_of(line.voice_id)
            if provider is None:
                raise ValidationError(f"{name(i)}.voiceId",
                                      f"no voice {line.voice_id!r} in the preset or clone "
                                      f"library of this key; find ids with "
                                      f"client.voices.presets() or client.voices.clones()")
            providers.setdefault(provider, i)
        if len(providers) > 1:
            (first, i), (second, j) = list(providers.items())[:2]
            raise ValidationError(f"{name(j)}.voiceId",
                                  f"all lines of one request must share one provider, but "
                                  f"{name(i)} is {first} and {name(j)} is {second}; "
                                  f"client.tts.batch() splits providers into separate "
                                  f"requests")
        system = next(((p, i) for p, i in providers.items() if p.startswith("S")), None)
        if system:
            for i, line in enumerate(body.data):
                if line.timbre_ref_audio:
                    raise ValidationError(
                        f"{name(i)}.timbreRefAudio",
                        f"needs a cloned voice (provider V1-V5), but {name(system[1])}.voiceId "
                        f"{body.data[system[1]].voice_id!r} is a preset voice ({system[0]})")

    def _group_of(self, item: dict[str, Any]) -> str:
        """The provider a line belongs to, for splitting a batch (looked up beforehand)."""
        voice_id = item.get("voiceId")
        if not voice_id:
            return "timbre"
        return self._client.voices.provider_of(voice_id) or f"unknown:{voice_id}"

    def _learn_providers(self, voice_ids: Sequence[str]) -> None:
        """Look up voices the client has not seen: clones in one list call, presets by id."""
        voices = self._client.voices
        unknown = sorted({v for v in voice_ids if voices.provider_of(v) is None})
        clones = [v for v in unknown if v.startswith("cv_")]
        if clones:
            voices.clones(voice_ids=clones)
        for preset_id in (v for v in unknown if not v.startswith("cv_")):
            voices.presets(voice_id=preset_id, limit=1)


def _renumbered(exc: ValidationError, offsets: Sequence[int] | None) -> ValidationError:
    """Name a chunk's line by its index in the caller's whole list."""
    if not offsets or not exc.field.startswith("data["):
        return exc
    local = int(exc.field[5:exc.field.index("]")])
    return ValidationError(f"data[{offsets[local]}]" + exc.field[exc.field.index("]") + 1:],
                           exc.problem)


def _texts_and_voices(body: TTSRequest) -> tuple[list[str], list[str | None]]:
    return [l.text for l in body.data], [l.voice_id for l in body.data]


RESULT_TYPES["tts"] = lambda client, raw, context: Speech.from_results(
    [TTSResult.model_validate(raw)], context.get("texts") or [], context.get("voices") or [])
