"""Static views: plain data in, HTML out, the way pandas renders a frame.

Results (:mod:`dubkit.results`) call these from ``_repr_html_``; the interactive widgets
(:mod:`dubkit.widgets`) reuse them. A view never talks to the service or the sandbox: media a
result wants embedded were fetched when the result was made (:mod:`dubkit.views.sources`).

``players``     audio players, waveforms, the speech table
``voices``      voice tables and audition cards
``tasks``       task tables
``dubbing``     a dub: original beside dubs, downloads, the script
``materials``   a material card
``clone``       a clone's facts, reference against clone
``translation`` a translation table
``sources``     where a browser gets the media; ``buttons`` download buttons
"""
