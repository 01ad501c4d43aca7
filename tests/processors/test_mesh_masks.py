"""Soft polygon masks: their ramp follows a slanted outline to a fraction of a pixel when measured on a finer grid,
where on whole pixels it steps with them."""
from __future__ import annotations

import numpy as np

from slimfuse.processors import mesh_masks as mask_ops


def _crossing_errors(supersample: int, feather: float = 2.0) -> np.ndarray:
    """Where a soft half-plane's ramp (`feather` px, not grown) crosses 0.5 in each column, against its true edge (a
    line of slope 0.3 through sub-pixel points), in pixels."""
    edge = (20.3, 0.3)  # the edge's row at column -10, and its slope
    polygon = np.array([[-10.0, edge[0]], [90.0, edge[0] + edge[1] * 100.0], [90.0, 90.0], [-10.0, 90.0]])
    mask = mask_ops.soft_polygons((80, 80), [polygon], 0.0, feather, supersample)
    errors = []
    for column in range(5, 75):
        values = mask[:, column]
        first = int(np.nonzero(values >= 0.5)[0][0])
        row = first - 1 + (0.5 - values[first - 1]) / (values[first] - values[first - 1])
        errors.append(row - (edge[0] + edge[1] * (column + 10.0)))
    return np.asarray(errors)


def test_a_supersampled_ramp_follows_a_slanted_outline() -> None:
    """On whole pixels the ramp's middle strays from the edge by up to 1.2 px and steps with the pixels (a
    staircase along a brow's edge once magnified); measured 4x finer, it stays within 0.2 px."""
    whole, fine = _crossing_errors(1), _crossing_errors(4)
    assert float(np.ptp(whole)) > 0.8 and float(np.abs(whole).max()) > 0.8
    assert float(np.abs(fine).max()) < 0.25 and float(np.ptp(fine)) < 0.4


def test_a_ramp_is_measured_as_finely_as_its_width_needs() -> None:
    """`fine_edge` keeps a ramp's middle within about a sixth of its width of a slanted outline: 4x finer under
    2.8 px, 3x finer under 6.5 px, whole pixels from there on (a larger face costs no more). Measured so, ramps of 2,
    4 and 8 px wander by 0.34, 0.45 and 1.1 px (1.1 px each on whole pixels)."""
    assert [mask_ops.fine_edge(width) for width in (0.5, 2.0, 3.0, 4.0, 6.0, 7.0, 20.0)] == [4, 4, 3, 3, 3, 1, 1]
    for width in (2.0, 4.0, 8.0):
        assert float(np.ptp(_crossing_errors(mask_ops.fine_edge(width), width))) < 0.2 * width
    assert float(np.ptp(_crossing_errors(1, 4.0))) > 0.25 * 4.0


def test_supersampling_keeps_the_mask_where_it_was() -> None:
    """The same polygon, grown and feathered, covers the same area either way (within a quarter pixel along its
    outline), and is 1 deep inside and 0 far outside."""
    t = np.linspace(0.0, 2.0 * np.pi, 24, endpoint=False)
    polygon = np.stack([40.0 + 25.0 * np.cos(t), 40.0 + 15.0 * np.sin(t)], axis=1)
    whole, fine = (mask_ops.soft_polygons((80, 80), [polygon], 1.5, 3.0, s) for s in (1, 4))
    outline = 2.0 * np.pi * np.sqrt((25.0 ** 2 + 15.0 ** 2) / 2.0)
    assert abs(float(fine.sum()) - float(whole.sum())) < 0.25 * outline
    assert fine[40, 40] == 1.0 and fine[2, 2] == 0.0
