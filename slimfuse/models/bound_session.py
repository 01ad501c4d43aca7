"""A session whose inputs are fed under the catalog's names when the file calls them otherwise (a single-input
model bound by position, see slimfuse.models.validate.bind_inputs), so every caller keeps one set of names."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import onnxruntime as ort


class BoundSession:
    """Delegates everything to `session`; `run` renames the feeds from catalog names to the file's."""

    def __init__(self, session: ort.InferenceSession, names: Mapping[str, str]) -> None:
        self.session = session
        self.names = dict(names)

    def run(self, output_names: list[str] | None, feeds: Mapping[str, np.ndarray],
            run_options: ort.RunOptions | None = None) -> list[Any]:
        renamed = {self.names.get(name, name): value for name, value in feeds.items()}
        return self.session.run(output_names, renamed, run_options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


Session = ort.InferenceSession | BoundSession
"""What the pool hands out: a plain session, or one whose input names are bound."""
