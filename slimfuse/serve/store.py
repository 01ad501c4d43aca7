"""The job store: users' assets, jobs and tokens in one SQLite file (WAL) in the data dir.

Every process (the API, each worker) opens its own connections. A worker claims a job with one UPDATE ...
RETURNING, so two workers never get the same job; its lease is renewed by a heartbeat, and a job whose lease ran
out (its worker died) is claimable again. Admission by memory: a job is claimed only while the planned peaks of
the running jobs plus its own fit the server's budget.
"""
from __future__ import annotations

import json
import secrets
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = "queued", "running", "succeeded", "failed", "cancelled"
FINAL_STATES = (SUCCEEDED, FAILED, CANCELLED)
# Kinds of work: a swap is a user's job; previews and face lists are short requests the page waits for.
SWAP, PREVIEW, FACES = "swap", "preview", "faces"
# A live session: held by the API process while its socket is open (workers never claim it), so that its planned
# peak counts against the budget as a running job's does.
LIVE = "live"
# A job whose worker died this many times is failed instead of run again.
MAX_ATTEMPTS = 3

SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (name TEXT PRIMARY KEY, digest TEXT NOT NULL UNIQUE, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS assets (
    id TEXT PRIMARY KEY, user TEXT NOT NULL, kind TEXT NOT NULL, suffix TEXT NOT NULL, name TEXT NOT NULL,
    bytes INTEGER NOT NULL, width INTEGER, height INTEGER, frames INTEGER, created REAL NOT NULL, duration REAL);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, user TEXT NOT NULL, kind TEXT NOT NULL, state TEXT NOT NULL, priority INTEGER NOT NULL,
    request TEXT NOT NULL, planned_bytes INTEGER NOT NULL DEFAULT 0,
    done INTEGER NOT NULL DEFAULT 0, total INTEGER, cancel_requested INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL, started REAL, finished REAL, worker TEXT, lease_until REAL,
    attempts INTEGER NOT NULL DEFAULT 0, error TEXT, exit_code INTEGER, message TEXT, report TEXT,
    output TEXT, output_bytes INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS workers (name TEXT PRIMARY KEY, pid INTEGER NOT NULL, started REAL NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (state, priority, created);
CREATE INDEX IF NOT EXISTS jobs_user ON jobs (user, created);
"""

JOB_FIELDS = ("id", "kind", "state", "done", "total", "created", "started", "finished", "attempts", "error",
              "exit_code", "message")


ADDED_COLUMNS = {"assets": {"duration": "REAL"}}
"""Columns newer than a data dir made by an earlier version: added to it when it is opened."""


def new_id() -> str:
    """A server-made id: 20 lowercase hex digits (never a client's name)."""
    return secrets.token_hex(10)


def job_asset_ids(request: dict[str, Any]) -> list[str]:
    """The assets a job's request uses: its source photos, its target and its sound."""
    named = [request.get("target_id"), request.get("audio_id")]
    return [*request.get("source_ids", ()), *(asset_id for asset_id in named if asset_id is not None)]


@dataclass(frozen=True)
class Job:
    row: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def state(self) -> str:
        return str(self.row["state"])

    @property
    def request(self) -> dict[str, Any]:
        return json.loads(self.row["request"])

    def public(self) -> dict[str, Any]:
        """What the API shows of the job."""
        shown = {name: self.row[name] for name in JOB_FIELDS}
        request = self.request
        shown["progress"] = _fraction(self.row["done"], self.row["total"], self.state)
        shown.update(_speed(self.row, self.state))
        shown.update(options=request.get("options", {}), sources=request.get("sources", []),
                     target=request.get("target"), output=self.row["output"] is not None,
                     report=None if self.row["report"] is None else json.loads(self.row["report"]))
        return shown


def _speed(row: dict[str, Any], state: str) -> dict[str, float | None]:
    """Frames per second so far and the seconds left at that pace, while a job runs (None where not known)."""
    done, total, started = row["done"], row["total"], row["started"]
    elapsed = None if started is None else time.time() - started
    if state != RUNNING or not done or not elapsed:
        return {"fps": None, "eta_seconds": None}
    fps = done / elapsed
    return {"fps": round(fps, 2), "eta_seconds": None if not total else round(max(0, total - done) / fps, 1)}


def _fraction(done: int, total: int | None, state: str) -> float:
    if state == SUCCEEDED:
        return 1.0
    if not total:
        return 0.0
    return min(1.0, done / total)


class JobStore:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / "slimfuse.db"
        for folder in (self.assets_dir, self.outputs_dir, self.scratch_dir):
            folder.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(SCHEMA)
            _add_missing_columns(db)
        finally:
            db.close()

    @property
    def assets_dir(self) -> Path:
        return self.data_dir / "assets"

    @property
    def outputs_dir(self) -> Path:
        return self.data_dir / "outputs"

    @property
    def scratch_dir(self) -> Path:
        """Previews and face lists: short-lived results of requests."""
        return self.data_dir / "scratch"

    @contextmanager
    def connect(self, write: bool = True) -> Iterator[sqlite3.Connection]:
        """A connection in one transaction (committed on leaving the block), rows as dicts. Readers (write=False)
        take no lock: in WAL mode they never wait for the workers' writes."""
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        db.row_factory = _as_dict
        db.execute("PRAGMA busy_timeout=30000")
        db.execute("PRAGMA synchronous=NORMAL")
        try:
            db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            yield db
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        finally:
            db.close()

    # Tokens ------------------------------------------------------------------------------------------------

    def add_token(self, name: str, digest: str) -> None:
        with self.connect() as db:
            db.execute("INSERT INTO tokens (name, digest, created) VALUES (?, ?, ?)", (name, digest, time.time()))

    def token_user(self, digest: str | None) -> tuple[bool, str | None]:
        """(whether any token exists, the user of this one), in one read."""
        with self.connect(write=False) as db:
            exists = db.execute("SELECT 1 FROM tokens LIMIT 1").fetchone() is not None
            row = None if digest is None else db.execute("SELECT name FROM tokens WHERE digest = ?",
                                                         (digest,)).fetchone()
        return exists, None if row is None else str(row["name"])

    def has_tokens(self) -> bool:
        with self.connect(write=False) as db:
            return db.execute("SELECT 1 FROM tokens LIMIT 1").fetchone() is not None

    # Assets ------------------------------------------------------------------------------------------------

    def add_asset(self, asset: dict[str, Any]) -> None:
        with self.connect() as db:
            db.execute("INSERT INTO assets (id, user, kind, suffix, name, bytes, width, height, frames, duration, "
                       "created) VALUES (:id, :user, :kind, :suffix, :name, :bytes, :width, :height, :frames, "
                       ":duration, :created)", {"duration": None, **asset})

    def asset(self, user: str, asset_id: str) -> dict[str, Any] | None:
        with self.connect(write=False) as db:
            return db.execute("SELECT * FROM assets WHERE id = ? AND user = ?", (asset_id, user)).fetchone()

    def assets(self, user: str) -> list[dict[str, Any]]:
        """The user's assets, newest first."""
        with self.connect(write=False) as db:
            return db.execute("SELECT * FROM assets WHERE user = ? ORDER BY created DESC", (user,)).fetchall()

    def delete_asset(self, user: str, asset_id: str) -> Path | None:
        """Forget the user's asset; the file to delete (None: there is no such asset of theirs). ValueError while a
        queued or running job of theirs uses it."""
        with self.connect() as db:
            asset = db.execute("SELECT * FROM assets WHERE id = ? AND user = ?", (asset_id, user)).fetchone()
            if asset is None:
                return None
            for row in db.execute("SELECT request FROM jobs WHERE user = ? AND state IN (?, ?)",
                                  (user, QUEUED, RUNNING)).fetchall():
                request = json.loads(row["request"])
                if asset_id in job_asset_ids(request):
                    raise ValueError("a job that is queued or running uses it; cancel the job first")
            db.execute("DELETE FROM assets WHERE id = ?", (asset_id,))
        return self.asset_path(asset)

    def asset_path(self, asset: dict[str, Any]) -> Path:
        return self.assets_dir / f"{asset['id']}{asset['suffix']}"

    def bytes_used(self, user: str) -> int:
        """The user's stored assets and outputs."""
        with self.connect(write=False) as db:
            assets = db.execute("SELECT COALESCE(SUM(bytes), 0) AS n FROM assets WHERE user = ?", (user,)).fetchone()
            outputs = db.execute("SELECT COALESCE(SUM(output_bytes), 0) AS n FROM jobs WHERE user = ? AND output "
                                 "IS NOT NULL", (user,)).fetchone()
        return int(assets["n"]) + int(outputs["n"])

    # Jobs --------------------------------------------------------------------------------------------------

    def add_job(self, user: str, kind: str, request: dict[str, Any], planned_bytes: int, priority: int = 1,
                total: int | None = None) -> Job:
        job_id = new_id()
        with self.connect() as db:
            db.execute("INSERT INTO jobs (id, user, kind, state, priority, request, planned_bytes, total, created) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (job_id, user, kind, QUEUED, priority, json.dumps(request), planned_bytes, total, time.time()))
            return Job(db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone())

    def job(self, job_id: str, user: str | None = None) -> Job | None:
        with self.connect(write=False) as db:
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None or (user is not None and row["user"] != user):
            return None
        return Job(row)

    def jobs(self, user: str, kind: str = SWAP, limit: int = 100) -> list[Job]:
        with self.connect(write=False) as db:
            rows = db.execute("SELECT * FROM jobs WHERE user = ? AND kind = ? ORDER BY created DESC LIMIT ?",
                              (user, kind, limit)).fetchall()
        return [Job(row) for row in rows]

    def active_jobs(self, user: str) -> int:
        with self.connect(write=False) as db:
            row = db.execute("SELECT COUNT(*) AS n FROM jobs WHERE user = ? AND kind = ? AND state IN (?, ?)",
                             (user, SWAP, QUEUED, RUNNING)).fetchone()
        return int(row["n"])

    def queue_length(self) -> dict[str, int]:
        with self.connect(write=False) as db:
            rows = db.execute("SELECT state, COUNT(*) AS n FROM jobs WHERE state IN (?, ?) GROUP BY state",
                              (QUEUED, RUNNING)).fetchall()
        return {QUEUED: 0, RUNNING: 0, **{row["state"]: int(row["n"]) for row in rows}}

    def claim(self, worker: str, lease_seconds: float, budget_bytes: int | None) -> Job | None:
        """The next job for `worker` (previews first, then oldest), or None. A running job whose lease expired
        is claimable again (its worker died). With a budget, only a job whose planned peak fits beside those of
        the running jobs (an idle server takes any job: it was checked against the budget at submission)."""
        now = time.time()
        with self.connect() as db:
            expired = db.execute("SELECT id FROM jobs WHERE state = ? AND lease_until < ? AND attempts >= ?",
                                 (RUNNING, now, MAX_ATTEMPTS)).fetchall()
            for row in expired:
                self._finish(db, row["id"], FAILED, error="WorkerLostError", exit_code=1,
                             message=f"the job's worker died {MAX_ATTEMPTS} times while running it")
            room = "1" if budget_bytes is None else (
                "(j.planned_bytes + (SELECT COALESCE(SUM(planned_bytes), 0) FROM jobs WHERE state = :running "
                "AND lease_until >= :now) <= :budget OR NOT EXISTS (SELECT 1 FROM jobs WHERE state = :running "
                "AND lease_until >= :now))")
            row = db.execute(
                "UPDATE jobs SET state = :running, worker = :worker, lease_until = :lease, started = :now, "
                "attempts = attempts + 1, done = 0 WHERE id = (SELECT j.id FROM jobs j WHERE j.kind != 'live' AND "
                "(j.state = :queued OR "
                f"(j.state = :running AND j.lease_until < :now)) AND {room} ORDER BY j.priority, j.created LIMIT 1) "
                "RETURNING *",
                {"running": RUNNING, "queued": QUEUED, "worker": worker, "lease": now + lease_seconds, "now": now,
                 "budget": budget_bytes}).fetchone()
        return None if row is None else Job(row)

    def hold_live(self, user: str, holder: str, planned_bytes: int, budget_bytes: int | None,
                  lease_seconds: float) -> tuple[Job | None, int]:
        """A running live session of `planned_bytes` when it fits beside the running jobs and sessions (None
        when it does not), and the bytes those hold. `holder` renews it with heartbeat and ends it with succeed."""
        now = time.time()
        with self.connect() as db:
            held = int(db.execute("SELECT COALESCE(SUM(planned_bytes), 0) AS n FROM jobs WHERE state = ? AND "
                                  "lease_until >= ?", (RUNNING, now)).fetchone()["n"])
            if budget_bytes is not None and held + planned_bytes > budget_bytes:
                return None, held
            job_id = new_id()
            db.execute("INSERT INTO jobs (id, user, kind, state, priority, request, planned_bytes, created, started, "
                       "worker, lease_until, attempts) VALUES (?, ?, ?, ?, 0, '{}', ?, ?, ?, ?, ?, 1)",
                       (job_id, user, LIVE, RUNNING, planned_bytes, now, now, holder, now + lease_seconds))
            return Job(db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()), held

    def heartbeat(self, job_id: str, worker: str, lease_seconds: float) -> bool:
        """Renew the lease; False when the job is no longer this worker's."""
        with self.connect() as db:
            cursor = db.execute("UPDATE jobs SET lease_until = ? WHERE id = ? AND worker = ? AND state = ?",
                                (time.time() + lease_seconds, job_id, worker, RUNNING))
            return cursor.rowcount == 1

    def progress(self, job_id: str, worker: str, done: int, total: int | None) -> bool:
        """Record progress; True when the user asked to cancel the job (or it is no longer this worker's)."""
        with self.connect() as db:
            row = db.execute("UPDATE jobs SET done = ?, total = COALESCE(?, total) WHERE id = ? AND worker = ? "
                             "AND state = ? RETURNING cancel_requested", (done, total, job_id, worker, RUNNING)).fetchone()
        return row is None or bool(row["cancel_requested"])

    def cancel_requested(self, job_id: str) -> bool:
        with self.connect(write=False) as db:
            row = db.execute("SELECT cancel_requested FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return row is None or bool(row["cancel_requested"])

    def succeed(self, job_id: str, worker: str, output: str | None, output_bytes: int, report: dict[str, Any]) -> bool:
        with self.connect() as db:
            cursor = db.execute(
                "UPDATE jobs SET state = ?, finished = ?, output = ?, output_bytes = ?, report = ?, "
                "done = COALESCE(total, 1), total = COALESCE(total, 1), lease_until = NULL "
                "WHERE id = ? AND worker = ? AND state = ?",
                (SUCCEEDED, time.time(), output, output_bytes, json.dumps(report), job_id, worker, RUNNING))
            return cursor.rowcount == 1

    def fail(self, job_id: str, worker: str | None, state: str, error: str | None = None,
             exit_code: int | None = None, message: str | None = None) -> None:
        """Finish a job as failed or cancelled (by its worker, or by anyone when worker is None)."""
        with self.connect() as db:
            row = db.execute("SELECT worker FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is not None and (worker is None or row["worker"] == worker):
                self._finish(db, job_id, state, error, exit_code, message)

    def delete_job(self, job_id: str) -> list[Path]:
        """Forget a finished job; the files to delete (its output, the picture a reference face came from).
        ValueError while it is queued or running."""
        with self.connect() as db:
            row = db.execute("SELECT state, output FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                return []
            if row["state"] not in FINAL_STATES:
                raise ValueError(f"the job is {row['state']}; cancel it first")
            db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
        files = [self.scratch_dir / f"{job_id}-reference.png"]
        return files + ([self.data_dir / row["output"]] if row["output"] else [])

    def cancel(self, job_id: str) -> Job | None:
        """A queued job is cancelled at once; a running one is asked to stop (its worker cancels it)."""
        with self.connect() as db:
            db.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ? AND state IN (?, ?)",
                       (job_id, QUEUED, RUNNING))
            db.execute("UPDATE jobs SET state = ?, finished = ?, message = ? WHERE id = ? AND state = ?",
                       (CANCELLED, time.time(), "cancelled before it started", job_id, QUEUED))
            row = db.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else Job(row)

    # Workers -----------------------------------------------------------------------------------------------

    def add_worker(self, name: str, pid: int) -> None:
        with self.connect() as db:
            db.execute("INSERT OR REPLACE INTO workers (name, pid, started) VALUES (?, ?, ?)", (name, pid, time.time()))

    def remove_worker(self, name: str) -> None:
        with self.connect() as db:
            db.execute("DELETE FROM workers WHERE name = ?", (name,))

    def workers(self) -> list[dict[str, Any]]:
        """The worker processes that said they serve this store, each with the job it runs (None: idle)."""
        with self.connect(write=False) as db:
            return db.execute("SELECT w.name, w.pid, (SELECT id FROM jobs j WHERE j.worker = w.name AND j.state = ? "
                              "AND j.lease_until >= ?) AS job FROM workers w", (RUNNING, time.time())).fetchall()

    def requeue_worker(self, worker: str | None) -> int:
        """Put the running jobs of a worker that died (None: of every worker, at start-up) back in the queue;
        returns how many."""
        with self.connect() as db:
            cursor = db.execute("UPDATE jobs SET state = ?, worker = NULL, lease_until = NULL, done = 0 "
                                "WHERE (worker = ? OR ? IS NULL) AND state = ?", (QUEUED, worker, worker, RUNNING))
            return cursor.rowcount

    def requeue_orphaned(self) -> int:
        """Put back in the queue the running jobs no registered worker holds (their worker is gone); live sessions
        of a server that stopped end."""
        with self.connect() as db:
            db.execute("UPDATE jobs SET state = ?, finished = ?, lease_until = NULL, message = ? WHERE kind = ? AND "
                       "state = ?", (CANCELLED, time.time(), "the server stopped", LIVE, RUNNING))
            cursor = db.execute("UPDATE jobs SET state = ?, worker = NULL, lease_until = NULL, done = 0 WHERE state = ? "
                                "AND kind != ? AND (worker IS NULL OR worker NOT IN (SELECT name FROM workers))",
                                (QUEUED, RUNNING, LIVE))
            return cursor.rowcount

    def expire(self, before: float) -> list[Path]:
        """Forget assets and outputs made before `before` (and previews of any age before it); returns the files
        to delete. Jobs stay listed, without their output."""
        with self.connect() as db:
            assets = db.execute("DELETE FROM assets WHERE created < ? RETURNING id, suffix", (before,)).fetchall()
            outputs = db.execute("UPDATE jobs SET output = NULL, output_bytes = 0 WHERE output IS NOT NULL AND "
                                 "finished < ? RETURNING output", (before,)).fetchall()
            db.execute("DELETE FROM jobs WHERE kind != ? AND created < ?", (SWAP, before))
        files = [self.assets_dir / f"{row['id']}{row['suffix']}" for row in assets]
        return files + [self.data_dir / row["output"] for row in outputs]

    @staticmethod
    def _finish(db: sqlite3.Connection, job_id: str, state: str, error: str | None, exit_code: int | None,
                message: str | None) -> None:
        db.execute("UPDATE jobs SET state = ?, finished = ?, error = ?, exit_code = ?, message = ?, "
                   "lease_until = NULL WHERE id = ?", (state, time.time(), error, exit_code, message, job_id))


def _add_missing_columns(db: sqlite3.Connection) -> None:
    for table, columns in ADDED_COLUMNS.items():
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        for name, kind in columns.items():
            if name not in present:
                try:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
                except sqlite3.OperationalError as exc:  # another process added it meanwhile
                    if "duplicate column" not in str(exc):
                        raise


def _as_dict(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}
