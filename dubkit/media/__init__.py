"""Media work both stacks use, the client and the sandbox: one copy of each step.

``av``        ffmpeg jobs: probe, decode and encode audio, stretch, thumbnails, mux, compress
``audio``     audio bytes in numpy: MIME types, decoding, waveform pictures
``mixing``    audio on a timeline in numpy: trim, duck, place, mix
``subtitles`` SubRip and WebVTT cues
``loudness``  EBU R128 loudness: measure and match
``speech``    offline text to speech (espeak-ng)

Nothing here talks to the service or the sandbox; it imports nothing else of dubkit's.
"""
