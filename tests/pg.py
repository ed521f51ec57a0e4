"""Run pytest against a real, throwaway PostgreSQL: ``python -m tests.pg -- <pytest args>``.

Creates a database cluster in a temporary folder (initdb), starts it on a free port of 127.0.0.1 with its socket in
that folder, creates a database, runs pytest with ``DATABASE_URL`` pointing at it (pytest-django then creates and
drops its ``test_`` database there), stops the server, removes the folder, and exits with pytest's code.

initdb and the server refuse to run as root, so as root they run as the ``postgres`` user (created by Debian's
postgresql package, which ``make test`` installs) on a folder that user owns. Binaries are looked up on PATH, then
in Debian's /usr/lib/postgresql/<version>/bin.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.network import free_port

DATABASE = "mqcloud"
SERVER_USER = "postgres"
# Durability is pointless for a database that is deleted after the run; without it the suite runs faster.
SERVER_OPTIONS = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"


def pg_bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), key=lambda path: int(path.parts[-3]))
    if not versions:
        sys.exit(f"tests.pg: {name} not found (install Debian's postgresql package)")
    return str(versions[-1])


class ThrowawayPostgres:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="mqcloud-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.as_user = {}
        if os.geteuid() == 0:
            account = pwd.getpwnam(SERVER_USER)
            os.chown(self.root, account.pw_uid, account.pw_gid)
            self.as_user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}

    @property
    def url(self) -> str:
        return f"postgres://{SERVER_USER}@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *argv: str) -> None:
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, cwd=self.root, **self.as_user)

    def start(self) -> ThrowawayPostgres:
        self._run(
            pg_bin("initdb"), "-D", str(self.data), "-U", SERVER_USER, "--auth=trust", "-E", "UTF8",
            "--locale=C.UTF-8", "--no-sync",
        )  # fmt: skip
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} {SERVER_OPTIONS}"
        self._run(
            pg_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"), "-w", "start"
        )
        self._run(pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", SERVER_USER, DATABASE)
        return self

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run(pg_bin("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    server = ThrowawayPostgres()
    try:
        server.start()
        print(f"tests.pg: PostgreSQL on 127.0.0.1:{server.port}, DATABASE_URL={server.url}", flush=True)
        env = {**os.environ, "DATABASE_URL": server.url}
        return subprocess.run([sys.executable, "-m", "pytest", *argv], env=env).returncode
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
