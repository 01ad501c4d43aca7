"""Catalog entries: the face enhancers users bring (none ships in a registry package; see the README).

Facts (FaceFusion 3.x's public model table and face enhancer): each takes the face aligned to its template as
`input` [1, 3, S, S], RGB scaled to [-1, 1] ((x/255 - 0.5) / 0.5), and gives the restored face in [-1, 1] as its
first output. CodeFormer also takes `weight` [1] (float64), its fidelity: 0 favours quality, 1 the input.
Output names are not confirmed from a public source: slimfuse reads the first output by position.
"""
from __future__ import annotations

from slimfuse.models.neural.sources import neural_spec
from slimfuse.models.spec import ModelIO, ModelSpec, TensorSpec

HALF = (0.5, 0.5, 0.5)
ENHANCER_INPUT = "input"
WEIGHT_INPUT = "weight"


def _io(size: int, template: str, extra_inputs: tuple[TensorSpec, ...] = ()) -> ModelIO:
    return ModelIO(
        inputs=(TensorSpec(ENHANCER_INPUT, (1, 3, size, size)), *extra_inputs),
        outputs=(TensorSpec("output", (1, 3, size, size)),),
        template=template,
        crop_size=size,
        mean=HALF,
        std=HALF,
        output_range=(-1.0, 1.0),
    )


def _gfpgan(version: str) -> ModelSpec:
    return neural_spec(f"gfpgan_{version}", "enhancer", "Apache-2.0 (GFPGAN, TencentARC)",
                       f"GFPGAN v{version} face restoration, 512 px", "models-3.0.0", _io(512, "ffhq_512"))


def _gpen(size: int, template: str) -> ModelSpec:
    return neural_spec(f"gpen_bfr_{size}", "enhancer", "non-commercial (GPEN, yangxy)",
                       f"GPEN blind face restoration, {size} px", "models-3.0.0", _io(size, template))


MODELS: tuple[ModelSpec, ...] = (
    _gfpgan("1.2"),
    _gfpgan("1.3"),
    _gfpgan("1.4"),
    neural_spec("codeformer", "enhancer", "S-Lab License 1.0, non-commercial (CodeFormer, sczhou)",
                "CodeFormer face restoration, 512 px, with a fidelity weight (--face-enhancer-weight)",
                "models-3.0.0", _io(512, "ffhq_512", (TensorSpec(WEIGHT_INPUT, (1,), "float64"),))),
    _gpen(256, "arcface_128"),
    _gpen(512, "ffhq_512"),
    _gpen(1024, "ffhq_512"),
    neural_spec("restoreformer_plus_plus", "enhancer", "Apache-2.0 (RestoreFormer++, wzhouxiff)",
                "RestoreFormer++ face restoration, 512 px", "models-3.0.0", _io(512, "ffhq_512")),
)

ENHANCER_NAMES: tuple[str, ...] = tuple(spec.name for spec in MODELS)
