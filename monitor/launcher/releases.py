"""The pinned Apache RocketMQ releases and where their jars live.

Each release line is a profile of ``monitor/launcher/pom.xml``; :func:`resolve` copies the published jars and their
dependencies from Maven Central (through the local Maven repository, so a second machine run is a file copy) into
``var/rocketmq/VERSION/lib``. The folder appears complete or not at all: Maven writes into a temporary folder that
is renamed at the end, so an interrupted run never leaves half a classpath behind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent.parent
POM = Path(__file__).resolve().parent / "pom.xml"
# The jars the launcher needs on every line (the 5.x ones add the controller and the proxy).
REQUIRED_JARS = ("rocketmq-namesrv", "rocketmq-broker", "rocketmq-tools")


class ResolveError(RuntimeError):
    """Maven could not provide a release (no mvn, no network to Maven Central, a version that is not published)."""


@dataclass(frozen=True)
class Release:
    line: str  # "4" or "5": what the launcher and the tests ask for
    version: str
    profile: str
    extra_jars: tuple[str, ...] = ()

    @property
    def home(self) -> Path:
        """var/rocketmq/VERSION: the lib folder and nothing else; each started server gets its own ROCKETMQ_HOME."""
        return var_dir() / "rocketmq" / self.version

    @property
    def lib(self) -> Path:
        return self.home / "lib"

    @property
    def classpath(self) -> str:
        return str(self.lib / "*")

    def is_resolved(self) -> bool:
        if not self.lib.is_dir():
            return False
        names = [p.name for p in self.lib.iterdir()]
        return all(
            any(n.startswith(f"{jar}-{self.version}") for n in names) for jar in (*REQUIRED_JARS, *self.extra_jars)
        )


ROCKETMQ4 = Release("4", "4.9.4", "rocketmq4")
ROCKETMQ5 = Release("5", "5.5.0", "rocketmq5", extra_jars=("rocketmq-controller", "rocketmq-proxy"))
RELEASES = {r.line: r for r in (ROCKETMQ4, ROCKETMQ5)}


def var_dir() -> Path:
    """The project's var/ (MQCLOUD_VAR_DIR as the settings read it), without importing Django."""
    return Path(os.environ.get("MQCLOUD_VAR_DIR") or BASE_DIR / "var")


def release(line: str) -> Release:
    try:
        return RELEASES[str(line)]
    except KeyError:
        raise ValueError(f"unknown RocketMQ release line {line!r} (known: {', '.join(RELEASES)})") from None


def resolve(rel: Release, *, quiet: bool = True) -> Release:
    """Make ``rel.lib`` hold the release's jars; a release already there is left alone."""
    if rel.is_resolved():
        return rel
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ResolveError("mvn is not installed (the Makefile's sysdeps install Debian's maven)")
    rel.home.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="lib.", dir=rel.home))
    command = [mvn, "-B", "-f", str(POM), "-P", rel.profile, "dependency:copy-dependencies"]
    command.append(f"-DoutputDirectory={staging}")
    if quiet:
        command.append("-q")
    result = subprocess.run(command, capture_output=quiet, text=True, check=False)
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        detail = (result.stdout or "") + (result.stderr or "") if quiet else ""
        errors = [line for line in detail.splitlines() if "ERROR" in line][:3]
        raise ResolveError(f"mvn could not resolve RocketMQ {rel.version}: {' '.join(errors) or 'see output above'}")
    if rel.lib.exists():
        shutil.rmtree(rel.lib)
    staging.rename(rel.lib)
    if not rel.is_resolved():
        raise ResolveError(f"RocketMQ {rel.version} resolved without the jars {REQUIRED_JARS + rel.extra_jars}")
    return rel


def main(argv: list[str]) -> int:
    lines = argv or list(RELEASES)
    try:
        for line in lines:
            rel = resolve(release(line))
            print(f"rocketmq {rel.version}: {rel.lib} ({len(list(rel.lib.iterdir()))} jars)")
    except (ResolveError, ValueError) as exc:
        print(f"make rocketmq: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
