"""Fixtures shared by the tests that run the dub pipeline in-process (imported by them).

``backend``: a sandbox backend of the module's own, with no server, whose files the pipeline
writes; the voices it offers are the catalogue's and its default key's clones.
"""

from __future__ import annotations

import pytest

from dubkit.sandbox.backend import Backend


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    made = Backend(tmp_path_factory.mktemp("sandbox"))
    made.base_url = "http://sandbox.test"
    yield made
    made.stop()
