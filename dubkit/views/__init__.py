"""Static views: plain data in, HTML out, the way pandas renders a frame.

Results (:mod:`dubkit.results`) call these when they are shown; the interactive widgets
(:mod:`dubkit.widgets`) reuse them. A view never talks to the service or the sandbox: media a
result wants embedded were fetched when the result was made, and each player's source follows
one rule (:func:`dubkit.frontends.media.element_source`).

``players``     audio players, waveforms, the speech table
``voices``      voice tables and audition cards
``tasks``       task tables
``dubbing``     a dub: original beside dubs, downloads, the script
``materials``   a material card
``clone``       a clone's facts, reference against clone
``translation`` a translation table
``buttons``     download buttons
"""
