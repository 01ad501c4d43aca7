"""The server's settings, from `slimfuse serve`'s options."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServeSettings:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 7860
    memory_budget_mb: float | None = None
    """The whole server's budget: jobs run at once while their planned peaks fit in it."""
    workers: int = 2
    max_upload_mb: float = 200
    retention_hours: float = 24
    max_storage_mb: float = 2000
    """Each user's uploads and outputs."""
    max_jobs_per_user: int = 8
    """Each user's jobs queued or running at once."""
    lease_seconds: float = 10.0
    models_dir: Path | None = None
    ray: str | None = None
    """Run jobs on Ray actors (`auto` or a cluster's address) instead of local worker processes."""

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * (1 << 20))

    @property
    def max_storage_bytes(self) -> int:
        return int(self.max_storage_mb * (1 << 20))

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
