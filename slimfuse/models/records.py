"""The trust-on-first-use record: the sha256 of the first file of each unpinned model, in
$SLIMFUSE_HOME/recorded_sha256.json, read and written whole (atomically) under a lock."""
from __future__ import annotations

import logging
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from slimfuse.atomic import write_bytes_atomic

LOG = logging.getLogger(__name__)

RECORD_FILE = "recorded_sha256.json"


@dataclass
class RecordFile:
    path: Path
    notify: Callable[[str], None]
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def sha256(self, name: str) -> str | None:
        """The sha256 recorded for model `name`, or None."""
        with self._lock:
            entry = self._read().get(name)
        return entry.get("sha256") if isinstance(entry, dict) else None

    def record(self, name: str, path: Path, digest: str) -> None:
        with self._lock:
            records = self._read()
            records[name] = {
                "sha256": digest,
                "size": path.stat().st_size,
                "file": str(path),
                "recorded": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
            self._write(records)

    def forget(self, name: str, digest: str) -> None:
        """Drop model `name`'s record if it holds `digest` (the file being rejected was the one trusted)."""
        with self._lock:
            records = self._read()
            entry = records.get(name)
            if isinstance(entry, dict) and entry.get("sha256") == digest:
                del records[name]
                self._write(records)

    def _read(self) -> dict[str, object]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            LOG.warning(f"{self.path} is unreadable; recorded model hashes are lost")
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, records: dict[str, object]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(self.path, (json.dumps(records, indent=1, sort_keys=True) + "\n").encode("utf-8"))
