"""Where the real captured RocketMQ frames live: ../shared/fixtures/rocketmq-4.9 beside the repository."""

from pathlib import Path

FIXTURES_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "fixtures" / "rocketmq-4.9"
