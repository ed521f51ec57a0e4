"""The Parquet lake: one file per table and closed hour, ``<lake>/<table>/date=YYYY-MM-DD/hour=HH/part.parquet``.

A partition is written to a hidden temporary file next to its final name (Spark skips names starting with "." or
"_"), then moved over it: readers see the old partition or the new one, never half of one, and an existing
partition means its hour was exported completely. Any file system pyarrow knows works (a local folder, hdfs://,
s3://); Spark reads the same URLs.

Retention (:mod:`sparkjobs.retention`) deletes hour partitions older than a cutoff through the same file system
(whole days as one folder, the cutoff's own day hour by hour), after recording the cutoff in ``_retention.json`` at
the lake's root, so an export can tell a partition deleted by retention from one never written.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

PART = "part.parquet"
# A temporary file older than this was left by a writer that died; a newer one may be a writer still at work.
STALE_TEMP_SECONDS = 3600
# Where retention records the cutoff it deleted partitions before (Spark ignores names starting with "_").
RETENTION_MARK = "_retention.json"
_DAY_FOLDER = re.compile(r"^date=(\d{4}-\d{2}-\d{2})$")
_HOUR_FOLDER = re.compile(r"^hour=(\d{2})$")
HOUR = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)


class Lake:
    def __init__(self, uri: str) -> None:
        self.uri = uri.rstrip("/")
        # Spark's S3 connector is s3a://; pyarrow's is s3://.
        self.fs, self.root = pafs.FileSystem.from_uri(re.sub(r"^s3a://", "s3://", self.uri))

    @staticmethod
    def partition(table: str, hour: dt.datetime) -> str:
        hour = hour.astimezone(dt.UTC)
        return f"{table}/date={hour:%Y-%m-%d}/hour={hour:%H}/{PART}"

    def exists(self, relative: str) -> bool:
        return self.fs.get_file_info(self._path(relative)).type == pafs.FileType.File

    def uri_of(self, relative: str) -> str:
        return f"{self.uri}/{relative}"

    def write(self, relative: str, schema: pa.Schema, batches: Iterable[pa.RecordBatch]) -> int:
        """Write the batches as the file ``relative`` (replacing it whole); returns the rows written."""
        rows = 0
        with (
            self._replacing(relative) as temp,
            self.fs.open_output_stream(temp) as stream,
            pq.ParquetWriter(stream, schema) as writer,
        ):
            for batch in batches:
                writer.write_batch(batch)
                rows += batch.num_rows
        return rows

    def rows(self, relative: str) -> int:
        """The rows of a written file (from its footer, without reading the data)."""
        with self.fs.open_input_file(self._path(relative)) as stream:
            return pq.read_metadata(stream).num_rows

    def delete_before(self, table: str, cutoff: dt.datetime) -> int:
        """Delete the table's partitions of the hours starting before ``cutoff`` (whole hours: pass a cutoff on the
        hour to keep every hour that ends after it). Returns the hour partitions deleted. A day wholly before the
        cutoff goes as one folder; files and folders not named as the layout names them are left alone."""
        cutoff = cutoff.astimezone(dt.UTC)
        deleted = 0
        for day_folder in self._folders(self._path(table), _DAY_FOLDER):
            day = dt.datetime.strptime(_DAY_FOLDER.match(day_folder.base_name)[1], "%Y-%m-%d").replace(tzinfo=dt.UTC)
            if day >= cutoff:
                continue
            hours = {
                info.path: day + int(_HOUR_FOLDER.match(info.base_name)[1]) * HOUR
                for info in self._folders(day_folder.path, _HOUR_FOLDER)
            }
            expired = [path for path, hour in hours.items() if hour < cutoff]
            if day + DAY <= cutoff:
                self.fs.delete_dir(day_folder.path)
            else:
                for path in expired:
                    self.fs.delete_dir(path)
            deleted += len(expired)
        return deleted

    def deleted_before(self) -> dt.datetime | None:
        """The cutoff retention last deleted partitions before (None: it never deleted any)."""
        path = self._path(RETENTION_MARK)
        if self.fs.get_file_info(path).type != pafs.FileType.File:
            return None
        with self.fs.open_input_stream(path) as stream:
            return dt.datetime.fromisoformat(json.loads(stream.read())["deleted_before"])

    def mark_deleted_before(self, cutoff: dt.datetime) -> None:
        """Record that partitions before ``cutoff`` are (about to be) deleted; the mark only moves forward."""
        previous = self.deleted_before()
        if previous is not None and previous >= cutoff:
            return
        mark = json.dumps({"deleted_before": cutoff.astimezone(dt.UTC).isoformat()}).encode()
        with self._replacing(RETENTION_MARK) as temp, self.fs.open_output_stream(temp) as stream:
            stream.write(mark)

    @contextmanager
    def _replacing(self, relative: str) -> Iterator[str]:
        """A temporary path next to the file ``relative``, moved over it when the block succeeds (removed when it
        fails), so readers see the old file or the new one, never half of one."""
        final = self._path(relative)
        folder, name = final.rsplit("/", 1)
        self.fs.create_dir(folder, recursive=True)
        self._remove_stale_temps(folder)
        temp = f"{folder}/.{name}.{uuid.uuid4().hex}.tmp"
        try:
            yield temp
            if not isinstance(self.fs, pafs.LocalFileSystem) and self.exists(relative):
                # Local renames replace atomically; HDFS-like stores refuse to move over an existing file.
                self.fs.delete_file(final)
            self.fs.move(temp, final)
        except BaseException:
            if self.fs.get_file_info(temp).type == pafs.FileType.File:
                self.fs.delete_file(temp)
            raise

    def _folders(self, folder: str, pattern: re.Pattern) -> list[pafs.FileInfo]:
        """The sub-folders of ``folder`` whose names match ``pattern`` (none if it does not exist)."""
        if self.fs.get_file_info(folder).type != pafs.FileType.Directory:
            return []
        return [
            info
            for info in self.fs.get_file_info(pafs.FileSelector(folder))
            if info.type == pafs.FileType.Directory and pattern.match(info.base_name)
        ]

    def _path(self, relative: str) -> str:
        return f"{self.root.rstrip('/')}/{relative}"

    def _remove_stale_temps(self, folder: str) -> None:
        cutoff = time.time() - STALE_TEMP_SECONDS
        for info in self.fs.get_file_info(pafs.FileSelector(folder)):
            if info.base_name.endswith(".tmp") and info.mtime is not None and info.mtime.timestamp() < cutoff:
                self.fs.delete_file(info.path)
