"""A work directory in, a persistent database out: TVM's two append-only JSON-lines files.

``database_workload.json`` holds one ``Workload.as_json()`` per line; a workload's index is
its line number (from 0). ``database_tuning_record.json`` holds one
``[workload index, TuningRecord.as_json()]`` per line. Several processes may tune into one
directory at once: each append happens under an exclusive ``flock`` of ``.database.lock``,
after reading what the others appended, and is flushed to disk (``fsync``) before the lock
is released. A process killed mid-write leaves at most one torn line, which loading skips
with a warning; the next append starts on a fresh line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tilewright.ir import IRModule, structural_hash
from tilewright.meta_schedule.database.database import TuningRecord, Workload
from tilewright.meta_schedule.database.memory_database import MemoryDatabase

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"
LOCK_FILE = ".database.lock"


class _JsonLines:
    """One append-only file of JSON lines, read incrementally from the last byte read.

    Invariants: ``offset`` is the start of a line (every byte before it was parsed) and
    ``line_no`` counts the lines before it. A last line without its newline (a torn write,
    since every reader and writer holds the lock) stays unread until an append ends it.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.line_no = 0
        self._size_seen = 0
        self._warned: set[int] = set()  # offsets of torn lines already reported

    def changed(self) -> bool:
        return os.stat(self.path).st_size != self._size_seen

    def warn(self, line_index: int, why: str) -> None:
        warnings.warn(
            f"{self.path}: skipped line {line_index + 1}: {why}", RuntimeWarning, stacklevel=4
        )

    def read_new(self) -> Iterator[tuple[int, Any]]:
        """``(line index, decoded value)`` for each complete line appended since the last
        call; an unparsable line is reported and skipped. Call with the lock held."""
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read()
        self._size_seen = self.offset + len(data)
        end = data.rfind(b"\n") + 1
        start = self.offset
        for line in data[:end].split(b"\n")[:-1]:
            index, line_start = self.line_no, start
            self.line_no += 1
            start += len(line) + 1
            self.offset = start
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except ValueError as err:  # UnicodeDecodeError is a ValueError too
                if line_start not in self._warned:
                    self.warn(index, f"not valid JSON, a torn or corrupted write ({err})")
                continue
            yield index, value
        tail = data[end:]
        if tail.strip() and self.offset not in self._warned:
            self._warned.add(self.offset)
            self.warn(self.line_no, "the file ends in the middle of it (a writer was killed?)")

    def append(self, value: Any) -> int:
        """Write ``value`` as a new line, flushed to disk; its line index. Call with the
        lock held, right after ``read_new`` consumed everything."""
        payload = json.dumps(value).encode() + b"\n"
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size != self._size_seen:
                raise RuntimeError(f"{self.path} grew while this process held its lock")
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
            if torn:
                payload = b"\n" + payload  # ends the torn line; ours starts fresh
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        if torn:
            self.line_no += 1
        index = self.line_no
        self.line_no += 1
        self.offset = self._size_seen = size + len(payload)
        return index


def _resolve(path: str | os.PathLike[str] | None, work_dir: Path | None, name: str) -> Path:
    if path is not None:
        return Path(path)
    assert work_dir is not None  # the constructor checked that one of the two is given
    return work_dir / name


class JSONDatabase(MemoryDatabase):
    """A database persisted as two JSON-lines files (TVM's ``ms.database.JSONDatabase``).

    Args:
        path_workload: the workload file (default ``work_dir/database_workload.json``).
        path_tuning_record: the record file (default
            ``work_dir/database_tuning_record.json``).
        work_dir: the directory of both files and of the lock file ``.database.lock``
            (without it, the lock file sits beside the workload file).
        allow_missing: create missing files (and directories); when False, a missing file
            raises ``FileNotFoundError``.
        module_equality: how workloads are matched; only ``"structural"``.

    Records that other processes append become visible on the next query.

    Example::

        >>> db = JSONDatabase(work_dir="tune_logs")
        >>> workload = db.commit_workload(mod)
        >>> db.commit_tuning_record(TuningRecord(sch.trace, workload, run_secs=(1e-3,)))
        >>> JSONDatabase(work_dir="tune_logs").query_schedule(mod, "llvm")   # later, anywhere
    """

    def __init__(
        self,
        path_workload: str | os.PathLike[str] | None = None,
        path_tuning_record: str | os.PathLike[str] | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        allow_missing: bool = True,
        module_equality: str = "structural",
    ) -> None:
        super().__init__(module_equality)
        if work_dir is None and (path_workload is None or path_tuning_record is None):
            raise ValueError(
                "JSONDatabase needs work_dir, or both path_workload and path_tuning_record"
            )
        base = Path(work_dir) if work_dir is not None else None
        wl_path = _resolve(path_workload, base, WORKLOAD_FILE)
        rec_path = _resolve(path_tuning_record, base, RECORD_FILE)
        for path in (wl_path, rec_path):
            if not path.exists():
                if not allow_missing:
                    raise FileNotFoundError(
                        f"JSONDatabase: {path} does not exist (allow_missing=False)"
                    )
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
        self.work_dir = base
        self.path_workload = wl_path
        self.path_tuning_record = rec_path
        self.allow_missing = allow_missing
        self.lock_path = (base if base is not None else wl_path.parent) / LOCK_FILE
        self._workload_file = _JsonLines(wl_path)
        self._record_file = _JsonLines(rec_path)
        self._index_of: dict[int, int] = {}  # workload hash -> its first line in the file
        self._by_index: dict[int, Workload] = {}  # every workload line -> its workload
        self._mutex = threading.RLock()
        with self._locked(exclusive=False):
            self._read_appended()

    def __reduce__(self) -> tuple[Any, ...]:
        # Another process reopens the same files (and reads them afresh).
        args = (self.path_workload, self.path_tuning_record, self.work_dir)
        return (JSONDatabase, (*args, self.allow_missing, self.module_equality))

    @contextlib.contextmanager
    def _locked(self, exclusive: bool) -> Iterator[None]:
        with self._mutex, open(self.lock_path, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _read_appended(self) -> None:
        """Take in the lines appended since the last read (lock held): workloads first, so
        that the records of a workload another process just added find it."""
        for index, value in self._workload_file.read_new():
            try:
                workload = self._add_workload(Workload.from_json(value))
            except Exception as err:  # any malformed line is skipped, never fatal
                self._workload_file.warn(index, f"not a workload ({type(err).__name__}: {err})")
                continue
            self._by_index[index] = workload
            self._index_of.setdefault(workload.shash, index)
        for index, value in self._record_file.read_new():
            try:
                workload_index, record_json = value
                owner = self._by_index.get(int(workload_index))
                if owner is None:
                    raise LookupError(
                        f"workload index {workload_index} is not in {self.path_workload}"
                    )
                record = TuningRecord.from_json(record_json, owner)
            except Exception as err:  # any malformed line is skipped, never fatal
                self._record_file.warn(index, f"not a record ({type(err).__name__}: {err})")
                continue
            self._add_record(record)

    def _refresh(self) -> None:
        with self._mutex:
            if self._workload_file.changed() or self._record_file.changed():
                with self._locked(exclusive=False):
                    self._read_appended()

    def _append_workload(self, workload: Workload) -> Workload:
        """Store a workload this database (just refreshed, lock held) does not know."""
        index = self._workload_file.append(workload.as_json())
        workload = self._add_workload(workload)
        self._by_index[index] = workload
        self._index_of[workload.shash] = index
        return workload

    # The Database protocol.

    def has_workload(self, mod: IRModule) -> bool:
        self._refresh()
        return super().has_workload(mod)

    def commit_workload(self, mod: IRModule) -> Workload:
        """The stored workload structurally equal to ``mod``, appended to the file if new
        (to this process and to every other one writing the directory)."""
        shash = structural_hash(mod)
        self._refresh()
        found = self._workloads.get(shash)
        if found is not None:
            return found
        with self._locked(exclusive=True):
            self._read_appended()
            found = self._workloads.get(shash)
            return found if found is not None else self._append_workload(Workload(mod, shash))

    def commit_tuning_record(self, record: TuningRecord) -> None:
        """Append ``record`` (and its workload, if the file lacks it)."""
        with self._locked(exclusive=True):
            self._read_appended()
            shash = record.workload.shash
            workload = self._workloads.get(shash) or self._append_workload(record.workload)
            line = [self._index_of[shash], record.as_json()]
            self._record_file.append(line)
            if workload is not record.workload:
                record = dataclasses.replace(record, workload=workload)
            self._add_record(record)

    def get_all_tuning_records(self) -> list[TuningRecord]:
        """Every record of the files, in file order, including those other processes
        appended since the last call."""
        self._refresh()
        return super().get_all_tuning_records()

    def get_top_k(self, workload: Workload, top_k: int) -> list[TuningRecord]:
        self._refresh()
        return super().get_top_k(workload, top_k)

    def measured_hashes(self, workload: Workload) -> set[int]:
        self._refresh()
        return super().measured_hashes(workload)

    def __len__(self) -> int:
        self._refresh()
        return super().__len__()
