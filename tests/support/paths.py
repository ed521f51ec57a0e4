"""Places on disk the tests share."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The repository's var/ (ignored by git): logs and homes of the real clients the tests run.
VAR = REPO / "var"
