"""Casting: which voice speaks each line (``voiceClone.mode``, ``voiceSpeakers``).

Every dubbed line is spoken in the target language by espeak-ng (the target locale's voice);
a voice contributes its *timbre*: espeak variant, pitch, range and pace (a
:class:`~dubkit.sandbox.catalogue.SpeakingVoice`).

* ``selectedVoicesList[i]`` is the voice of speaker ``i + 1`` (preset ``sv_…`` or one of the
  key's clones ``cv_…``); speakers beyond the list are cast by ``timbreMethod``.
* ``timbreMethod: clone`` clones the speaker from their own audio: pitch and pace are measured
  (``catalogue.speaking_voice_from_audio``: a variant of the speaker's gender, prosody derived
  from the voiceprint), the same way the clone product does. *choice* These clones belong to the task: their ``cv_…`` ids
  appear in ``voiceMatch`` and on the lines but are not added to the key's clone library.
* ``timbreMethod: smart`` picks the preset of the target language (else of any language) whose
  gender matches and whose heard pitch is closest to the speaker's.
* ``voiceClone.mode``: ``role`` one voice per speaker; ``mix`` the speaker's voice with each
  line's own pace and intonation range; ``sentence`` a voice per line, cloned (or matched) from
  that line alone.
* ``voiceClone.style``: ``emotional`` keeps the measured intonation range, ``consistent`` holds
  every line at one moderate range.
* A speaker with too little voiced audio to measure is matched to a preset instead, and the
  result's ``notices`` say so.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from ...media import speech
from ...media.track import Track
from ...schema import VoiceMatch
from ..catalogue import SpeakingVoice, speaking_voice_from_audio
from ..engines import voiceprint
from ..engines.voiceprint import Voiceprint
from .settings import Settings
from .transcript import Line, measure_speech, speaker_audio

CONSISTENT_RANGE = 40
_PITCH_PROBE = "One two three, this is how I sound."


@dataclass(frozen=True)
class Voice:
    """A voice a line can be spoken with: an identity (id, provider) and a timbre."""

    voice_id: str
    provider: str  # preset tier S* or clone engine V*
    name: str
    gender: str
    kind: str  # "preset", "clone" (the key's library) or "task-clone"
    speaking: SpeakingVoice
    locale: str | None = None  # the voice's own language (catalogue / sample)
    sample_url: str = ""  # preview or reference audio
    sample_text: str = ""


class VoiceLibrary(Protocol):
    """The voices the calling key may use (built by the product from catalogue and clones)."""

    def find(self, voice_id: str) -> Voice | None: ...

    def keep(self, task_id: str, voice: Voice) -> None:
        """Remember a voice this task cloned (its lines may be spoken again later)."""

    def presets(self) -> list[Voice]:
        """Every preset; may leave out preview URLs (``find`` fills them in)."""


Saver = Callable[[str, np.ndarray], str]  # (file name, mono audio) -> URL


class Casting:
    """Assigns a :class:`Voice` to every line; ``matches`` is the result's ``voiceMatch``."""

    def __init__(
        self, settings: Settings, library: VoiceLibrary, task_id: str, sample_rate: int, save: Saver
    ) -> None:
        self.settings, self.library, self.task_id = settings, library, task_id
        self.rate, self.save = sample_rate, save
        self.speaking = speech.voice_for_locale(settings.target)
        self.matches: list[VoiceMatch] = []
        self.notices: list[str] = []

    def cast(self, lines: list[Line], speakers: int, original: Track) -> None:
        """Voice every line; ``original`` is the source's audio (at ``sample_rate``)."""
        selected = [
            self._selected(i, voice_id or "")  # every slot was checked to name a voice
            for i, (voice_id, _) in enumerate(self.settings.selected)
        ]
        for speaker in range(speakers):
            own = [line for line in lines if line.speaker == speaker]
            if speaker < len(selected):
                self._assign(own, selected[speaker], speaker)
            elif self.settings.mode == "sentence":
                for line in own:
                    audio = original.seconds(line.start, line.end)
                    self._assign(
                        [line],
                        self._voice_from(
                            audio, line.measured, speaker, f"line-{line.id}", line.text
                        ),
                        speaker,
                    )
            else:
                audio = speaker_audio(lines, speaker, original)
                heard = measure_speech(audio, self.rate)
                content = " ".join(line.text for line in own if not line.placeholder)
                self._assign(
                    own,
                    self._voice_from(audio, heard, speaker, f"speaker-{speaker + 1}", content),
                    speaker,
                )
        if self.settings.mode == "mix":
            for line in lines:
                line.voice = self._line_pace(line)

    # -- voices -------------------------------------------------------------------------

    def _selected(self, slot: int, voice_id: str) -> Voice:
        voice = self.library.find(voice_id)
        if voice is None:  # checked before the task started; a clone deleted since then
            raise LookupError(
                f"options.voiceSpeakers.selectedVoicesList[{slot}].voiceId: "
                f"voice {voice_id!r} no longer exists"
            )
        return voice

    def _voice_from(
        self, audio: np.ndarray, heard: Voiceprint | None, speaker: int, label: str, content: str
    ) -> Voice:
        who = f"Speaker {speaker + 1}"
        if heard is None:
            self.notices.append(
                f"{who} ({label}): too little voiced audio to measure; a preset "
                f"voice was matched instead"
            )
            return self._smart(None)
        if self.settings.timbre == "smart":
            return self._smart(heard)
        timbre = speaking_voice_from_audio(audio, self.rate, self.speaking)
        if self.settings.style == "consistent":
            timbre = timbre.with_prosody(pitch_range=CONSISTENT_RANGE)
        digest = hashlib.sha1(f"{self.task_id}:{label}".encode()).hexdigest()[:24]
        reference = self.save(f"voices/{label}.wav", audio)
        made = Voice(
            voice_id=f"cv_{digest}",
            provider=self.settings.clone_provider,
            name=f"{who} (cloned)",
            gender=heard.gender,
            kind="task-clone",
            speaking=timbre,
            locale=self._source_locale(),
            sample_url=reference,
            sample_text=content,
        )
        self.library.keep(self.task_id, made)
        return made

    def _smart(self, heard: Voiceprint | None) -> Voice:
        presets = self.library.presets()
        if not presets:
            raise LookupError("no preset voice is available to match a speaker to")
        language = self.settings.target.split("-")[0].lower()
        pool = (
            [v for v in presets if v.locale == self.settings.target]
            or [v for v in presets if (v.locale or "").split("-")[0].lower() == language]
            or presets
        )
        if heard is None:
            best = pool[0]
        else:
            pool = [v for v in pool if v.gender == heard.gender] or pool
            measured = [(v, heard_pitch(v.speaking, self.speaking)) for v in pool]
            pitched = [(v, hz) for v, hz in measured if hz is not None] or [(pool[0], 1.0)]
            best = pitched[0][0]  # no pitch heard: the first voice of that gender
            if heard.median_pitch_hz:
                target: float = heard.median_pitch_hz
                best = min(pitched, key=lambda item: abs(math.log2(item[1] / target)))[0]
        return self.library.find(best.voice_id) or best  # the full record, preview URL too

    def _line_pace(self, line: Line) -> Voice:
        """``mix``: the speaker's voice with this line's own pace and intonation."""
        voice: Voice = line.voice
        if line.measured is None:
            return voice
        own = voiceprint.derive_prosody(line.measured, self.speaking, voice.speaking.variant)
        pitch_range = (
            voice.speaking.prosody.pitch_range
            if self.settings.style == "consistent"
            else own.pitch_range
        )
        return replace(
            voice,
            speaking=voice.speaking.with_prosody(rate_wpm=own.rate_wpm, pitch_range=pitch_range),
        )

    def _assign(self, lines: list[Line], voice: Voice, speaker: int) -> None:
        for line in lines:
            line.voice = voice
        self.matches.append(
            VoiceMatch(
                speaker=f"Speaker {speaker + 1}",
                voice_id=voice.voice_id,
                provider=voice.provider,
                example_language=voice.locale or "",
                content=voice.sample_text,
                audio=voice.sample_url,
                name=voice.name,
                kind=voice.kind,
                gender=voice.gender,
                lines=[line.id for line in lines],
            )
        )

    def _source_locale(self) -> str:
        return self.settings.source if self.settings.source != "auto" else ""


_heard: dict[tuple[SpeakingVoice, str], float | None] = {}
_heard_lock = threading.Lock()


def heard_pitch(voice: SpeakingVoice, language: str) -> float | None:
    """Median pitch (Hz) of ``voice`` speaking ``language`` as ``measure`` hears it (None for
    a voice without pitch, e.g. a whisper); cached per process."""
    key = (voice, language)
    with _heard_lock:
        if key not in _heard:
            audio = voice.speak(_PITCH_PROBE, espeak=language)
            heard = measure_speech(audio, speech.SAMPLE_RATE)
            _heard[key] = heard.median_pitch_hz if heard else None
        return _heard[key]
