"""Screenshots of the browser tests: kept in the test's folder, and also in $SLIMFUSE_SCREENSHOTS when set (where the
README's pictures come from)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path


def shot(page, name: str, folder: Path) -> None:  # noqa: ANN001 - a Playwright page
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    keep = os.environ.get("SLIMFUSE_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)
