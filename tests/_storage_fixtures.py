"""Fixtures shared by the materials, uploads and cloning tests (imported by those modules).

``api``: a client on a fresh key, so its materials, duplicates and clones are its own.
``storage_defaults`` (autouse where imported): puts the sandbox's storage settings and upload
limit back after each test.
"""

from __future__ import annotations

import pytest

from dubkit.sandbox.storage import DEFAULT_PART_SIZE, DEFAULT_UPLOAD_LIMIT


@pytest.fixture(autouse=True)
def storage_defaults(sandbox):
    yield
    sandbox.admin(
        "POST", "/storage", presignTtl=3600, recommendedPartSize=DEFAULT_PART_SIZE, putLatencyMs=0
    )
    sandbox.set_limits(upload_limit=DEFAULT_UPLOAD_LIMIT)


@pytest.fixture
def api(client_for, new_key):
    return client_for(new_key)
