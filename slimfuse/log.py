"""slimfuse's messages go through the standard logging module, under the "slimfuse" logger: notices (a model
fetched, audio re-encoded, a stale file removed) at INFO, warnings at WARNING. Messages carry no level words or
program name: whoever shows them (the command line's handler, an application's own logging) adds those."""
from __future__ import annotations

import logging

LOG = logging.getLogger("slimfuse")


def notice(message: str) -> None:
    """The default way a component tells the user something (the `notify` callback they take)."""
    LOG.info(message)
