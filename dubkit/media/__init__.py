"""Media work both stacks use, the client and the sandbox: one copy of each step.

``av``        ffmpeg jobs on sound: probe, decode and encode audio, stretch, thumbnails
``mp4``       ffmpeg jobs that write a picture: mux, compress, stretch video, test patterns
``audio``     audio bytes in numpy: decoding, waveform pictures
``mime``      the one MIME table
``mixing``    audio on a timeline in numpy: trim, duck, place, mix
``subtitles`` SubRip and WebVTT cues
``loudness``  EBU R128 loudness: measure and match
``speech``    offline text to speech (espeak-ng; ``_espeak`` is its ctypes plumbing)

Nothing here talks to the service or the sandbox; it imports nothing else of dubkit's.
"""
