"""`slimfuse models` through the real command line, on the real store."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from slimfuse.cli.main import main
from slimfuse.models.store import Store


def test_list_shows_every_model_verified(capsys: pytest.CaptureFixture[str], store: Store) -> None:
    store.fetch()
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:7] == ["name", "kind", "licence", "size", "sha256", "pinning", "state"]
    rows = {line.split()[0]: line for line in out[1:]}
    assert set(rows) == set(store.catalog.names())
    for name, line in rows.items():
        spec = store.catalog.get(name)
        assert str(store.location(name)) in line
        if spec.sha256 is not None:  # pinned: every install has them
            assert "verified" in line and spec.sha256[:16] in line and " pinned " in line
        else:  # the neural models users bring: trust on first use (with a published sha256 for downloads)
            assert ("published" if spec.published else "trust-on-first-use") in line


def test_path_and_unknown_names(capsys: pytest.CaptureFixture[str], store: Store) -> None:
    assert main(["models", "path", "face_landmark"]) == 0
    assert capsys.readouterr().out.strip() == str(store.location("face_landmark"))
    assert main(["models", "path", "no_such_model"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("slimfuse: unknown model no_such_model") and len(err.strip().splitlines()) == 1


def test_verify_reports_a_corrupt_file_and_fetch_repairs_it(capsys: pytest.CaptureFixture[str], store: Store,
                                                            tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    shutil.copytree(store.model_dir, home / "models")
    shutil.copytree(store.source_dir, home / "sources")
    damaged = home / "models" / store.catalog.get("face_landmark").filename
    data = bytearray(damaged.read_bytes())
    data[1000] ^= 0xFF
    damaged.write_bytes(bytes(data))
    monkeypatch.setenv("SLIMFUSE_HOME", str(home))
    assert main(["models", "verify"]) == 15
    captured = capsys.readouterr()
    assert "face_landmark: FAILED sha256" in captured.out
    assert main(["models", "fetch", "face_landmark"]) == 0
    assert "failed sha256 verification; removed, fetching it again" in capsys.readouterr().err
    assert main(["models", "verify"]) == 0
