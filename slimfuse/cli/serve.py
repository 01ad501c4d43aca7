"""`slimfuse serve`: the web app and HTTP API (the `serve` extra); `slimfuse serve token create NAME`."""
from __future__ import annotations

import argparse
from pathlib import Path

from slimfuse.cli.commands import HELP
from slimfuse.cli.common import add_common_options

DEFAULT_DATA_DIR = Path("slimfuse-data")


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("serve", help=HELP["serve"])
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (beyond loopback only with tokens)")
    parser.add_argument("--port", type=int, default=7860)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR,
                        help="the job store, uploads and outputs (default ./slimfuse-data)")
    parser.add_argument("--memory-budget", type=float, default=None, metavar="MB",
                        help="jobs run at once while their planned peaks fit in this many MB")
    parser.add_argument("--workers", type=int, default=2, metavar="N",
                        help="worker processes (each keeps its models loaded; default 2)")
    parser.add_argument("--max-upload-mb", type=float, default=200, metavar="MB",
                        help="the largest upload (default 200)")
    parser.add_argument("--retention-hours", type=float, default=24, metavar="H",
                        help="uploads and outputs older than this are removed (default 24)")
    parser.add_argument("--max-storage-mb", type=float, default=2000, metavar="MB",
                        help="each user's uploads and outputs together (default 2000)")
    parser.add_argument("--max-jobs-per-user", type=int, default=8, metavar="N",
                        help="each user's jobs queued or running (default 8)")
    parser.add_argument("--ray", default=None, metavar="auto|ADDRESS",
                        help="run the jobs on Ray actors across a cluster (the ray extra; auto: this machine's "
                        "cluster, or a new local one); --workers actors, at most one per CPU of the cluster")
    parser.add_argument("--lease-seconds", type=float, default=10.0, help=argparse.SUPPRESS)
    add_common_options(parser)
    actions = parser.add_subparsers(dest="serve_action", metavar="[token create NAME]",
                                    title="optional action (without one, the server runs)")
    token = actions.add_parser("token", help="manage bearer tokens")
    token_actions = token.add_subparsers(dest="token_action", required=True, metavar="create")
    create = token_actions.add_parser("create", help="make a token for a user and print it (stored hashed)")
    create.add_argument("name")
    create.add_argument("--data-dir", type=Path, default=None, dest="token_data_dir",
                        help="the server's data dir (default: serve's --data-dir)")
    parser.set_defaults(command=run)


def run(args: argparse.Namespace) -> int:
    from slimfuse.errors import UsageError

    if args.serve_action == "token":
        from slimfuse.serve.store import JobStore
        from slimfuse.serve.tokens import create_token

        print(create_token(JobStore(args.token_data_dir or args.data_dir), args.name))
        return 0
    try:
        from slimfuse.serve.server import serve
        from slimfuse.serve.settings import ServeSettings
    except ImportError as exc:
        raise UsageError(detail=f"the serve extra is not installed ({exc.name}): pip install 'slimfuse[serve]'") from None
    if args.workers < 1 or args.max_upload_mb <= 0 or args.max_jobs_per_user < 1:
        raise UsageError(detail="--workers, --max-upload-mb and --max-jobs-per-user must be positive")
    settings = ServeSettings(data_dir=args.data_dir.resolve(), host=args.host, port=args.port,
                             memory_budget_mb=args.memory_budget, workers=args.workers,
                             max_upload_mb=args.max_upload_mb, retention_hours=args.retention_hours,
                             max_storage_mb=args.max_storage_mb, max_jobs_per_user=args.max_jobs_per_user,
                             lease_seconds=args.lease_seconds, models_dir=args.models_dir, ray=args.ray)
    return serve(settings)
