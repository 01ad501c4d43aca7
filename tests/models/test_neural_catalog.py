"""The neural catalog against the public facts: names, files, tensors, templates, normalisations, sources."""
from __future__ import annotations

import numpy as np
import pytest

from slimfuse.cli.main import build_parser
from slimfuse.config import RunConfig
from slimfuse.errors import UsageError
from slimfuse.faces.align import TEMPLATES
from slimfuse.models.catalog import Catalog
from slimfuse.models.neural.enhancers import ENHANCER_NAMES
from slimfuse.models.neural.swappers import RECIPES, SWAPPER_NAMES
from slimfuse.models.tensors import to_images, to_tensor

SWAPPERS = ["inswapper_128", "inswapper_128_fp16", "hyperswap_1a_256", "hyperswap_1b_256", "hyperswap_1c_256",
            "simswap_256", "simswap_unofficial_512", "ghost_1_256", "ghost_2_256", "ghost_3_256",
            "hififace_unofficial_256", "blendswap_256", "uniface_256"]
ENHANCERS = ["gfpgan_1.2", "gfpgan_1.3", "gfpgan_1.4", "codeformer", "gpen_bfr_256", "gpen_bfr_512", "gpen_bfr_1024",
             "restoreformer_plus_plus"]
HALF, ZERO, ONE = (0.5, 0.5, 0.5), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
# name: (template, size, mean, std, release), from FaceFusion 3.x's public model tables.
FACTS = {
    "inswapper_128": ("arcface_128", 128, ZERO, ONE, "models-3.0.0"),
    "inswapper_128_fp16": ("arcface_128", 128, ZERO, ONE, "models-3.0.0"),
    "hyperswap_1a_256": ("arcface_128", 256, HALF, HALF, "models-3.3.0"),
    "hyperswap_1b_256": ("arcface_128", 256, HALF, HALF, "models-3.3.0"),
    "hyperswap_1c_256": ("arcface_128", 256, HALF, HALF, "models-3.3.0"),
    "simswap_256": ("arcface_112_v1", 256, *IMAGENET, "models-3.0.0"),
    "simswap_unofficial_512": ("arcface_112_v1", 512, ZERO, ONE, "models-3.0.0"),
    "ghost_1_256": ("arcface_112_v1", 256, HALF, HALF, "models-3.0.0"),
    "ghost_2_256": ("arcface_112_v1", 256, HALF, HALF, "models-3.0.0"),
    "ghost_3_256": ("arcface_112_v1", 256, HALF, HALF, "models-3.0.0"),
    "hififace_unofficial_256": ("mtcnn_512", 256, HALF, HALF, "models-3.1.0"),
    "blendswap_256": ("ffhq_512", 256, ZERO, ONE, "models-3.0.0"),
    "uniface_256": ("ffhq_512", 256, HALF, HALF, "models-3.0.0"),
    "gfpgan_1.2": ("ffhq_512", 512, HALF, HALF, "models-3.0.0"),
    "gfpgan_1.3": ("ffhq_512", 512, HALF, HALF, "models-3.0.0"),
    "gfpgan_1.4": ("ffhq_512", 512, HALF, HALF, "models-3.0.0"),
    "codeformer": ("ffhq_512", 512, HALF, HALF, "models-3.0.0"),
    "gpen_bfr_256": ("arcface_128", 256, HALF, HALF, "models-3.0.0"),
    "gpen_bfr_512": ("ffhq_512", 512, HALF, HALF, "models-3.0.0"),
    "gpen_bfr_1024": ("ffhq_512", 1024, HALF, HALF, "models-3.0.0"),
    "restoreformer_plus_plus": ("ffhq_512", 512, HALF, HALF, "models-3.0.0"),
    "arcface_w600k_r50": ("arcface_112_v2", 112, HALF, HALF, "models-3.0.0"),
}
CATALOG = Catalog()


def test_every_model_of_the_issue_is_there() -> None:
    assert list(SWAPPER_NAMES) == SWAPPERS and list(ENHANCER_NAMES) == ENHANCERS
    for name in SWAPPERS + ENHANCERS + ["arcface_w600k_r50", "crossface_simswap", "crossface_ghost", "crossface_hififace"]:
        CATALOG.get(name)


@pytest.mark.parametrize("name", sorted(FACTS))
def test_entries_follow_the_public_facts(name: str) -> None:
    spec = CATALOG.get(name)
    template, size, mean, std, release = FACTS[name]
    io = spec.io
    assert io is not None and io.template == template and io.crop_size == size
    assert io.template in TEMPLATES
    np.testing.assert_allclose(io.mean, mean)
    np.testing.assert_allclose(io.std, std)
    assert spec.filename == f"{name}.onnx" and spec.sha256 is None and spec.source_sha256 is None
    assert spec.urls[0] == f"https://github.com/facefusion/facefusion-assets/releases/download/{release}/{name}.onnx"
    assert spec.urls[1] == f"https://huggingface.co/facefusion/{release}/resolve/main/{name}.onnx"
    assert spec.licence and spec.description
    image = [t for t in io.inputs if t.name in ("target", "input")][0]
    assert image.shape == (1, 3, size, size) and image.dtype == "float32"
    assert io.outputs[0].shape in ((1, 3, size, size), (1, 512))
    for companion in io.companions:
        CATALOG.get(companion)


def test_swapper_inputs_and_recipes() -> None:
    for name in SWAPPERS:
        io = CATALOG.get(name).io
        assert io is not None
        inputs = {t.name: t.shape for t in io.inputs}
        recipe = RECIPES[name]
        if recipe.source == "image":
            assert inputs["source"] == (1, 3, recipe.source_size, recipe.source_size)
            assert recipe.source_template in TEMPLATES
        else:
            assert inputs["source"] == (1, 512) and "arcface_w600k_r50" in io.companions
        if recipe.converter:
            assert recipe.converter in io.companions
            converter = CATALOG.get(recipe.converter).io
            assert converter is not None and converter.inputs[0].name == "input"
            assert converter.inputs[0].shape == converter.outputs[0].shape == (1, 512)
    hyperswap = CATALOG.get("hyperswap_1a_256").io
    assert hyperswap is not None and [t.name for t in hyperswap.outputs] == ["output", "mask"]
    assert RECIPES["inswapper_128"].source == "emap" and RECIPES["hyperswap_1a_256"].source == "embedding"
    assert RECIPES["simswap_256"].source == "converted_normed" and RECIPES["ghost_1_256"].source == "converted"
    codeformer = CATALOG.get("codeformer").io
    assert codeformer is not None and codeformer.inputs[1].name == "weight" and codeformer.inputs[1].dtype == "float64"


def test_output_ranges() -> None:
    minus_one = {"hyperswap_1a_256", "hyperswap_1b_256", "hyperswap_1c_256", "ghost_1_256", "ghost_2_256",
                 "ghost_3_256", "hififace_unofficial_256", "uniface_256", *ENHANCERS}
    for name in SWAPPERS + ENHANCERS:
        io = CATALOG.get(name).io
        assert io is not None and io.output_range == ((-1.0, 1.0) if name in minus_one else (0.0, 1.0))


def test_normalisations_numerically() -> None:
    pixels = np.array([[[0, 127, 255], [64, 128, 200]]], dtype=np.uint8)  # 1 x 2 RGB
    arcface = CATALOG.get("arcface_w600k_r50").io
    assert arcface is not None
    np.testing.assert_allclose(to_tensor(pixels, arcface.mean, arcface.std)[0],
                               ((pixels.astype(np.float64) - 127.5) / 127.5).transpose(2, 0, 1), atol=1e-6)
    simswap = CATALOG.get("simswap_256").io
    assert simswap is not None
    expected = (pixels / 255.0 - np.array(IMAGENET[0])) / np.array(IMAGENET[1])
    np.testing.assert_allclose(to_tensor(pixels, simswap.mean, simswap.std)[0], expected.transpose(2, 0, 1),
                               atol=1e-5)
    inswapper = CATALOG.get("inswapper_128").io
    assert inswapper is not None
    np.testing.assert_allclose(to_tensor(pixels, inswapper.mean, inswapper.std)[0], (pixels / 255.0).transpose(2, 0, 1),
                               atol=1e-7)
    output = np.tile(np.array([-1.0, 0.0, 1.0, 2.0]).reshape(1, 1, 1, 4), (1, 3, 1, 1))  # NCHW in [-1, 1]
    assert np.array_equal(to_images(output, (-1, 1))[0, 0], np.repeat([[0], [128], [255], [255]], 3, axis=1))


def test_nothing_pickled_is_ever_a_model_file() -> None:
    for spec in CATALOG.models:
        assert not spec.filename.endswith((".pt", ".pth", ".ckpt", ".pkl", ".pickle", ".bin", ".npy"))
        if spec.sha256 is None:
            assert spec.filename.endswith((".onnx", ".dfm"))  # a DFM file is an ONNX graph


def test_the_command_line_offers_the_catalog() -> None:
    swap = build_parser()._subparsers._group_actions[0].choices["swap"]  # type: ignore[union-attr]
    help_text = swap.format_help()
    assert all(name in help_text for name in (*SWAPPERS, *ENHANCERS, "arcface_w600k_r50", "tensorrt", "directml"))
    for option, names in (("face_swapper_model", ["mesh", *SWAPPERS]), ("face_enhancer_model", ["none", *ENHANCERS]),
                          ("face_recognizer_model", ["dlib", "arcface_w600k_r50"]),
                          ("face_swapper_pixel_boost", [128, 256, 384, 512, 768, 1024]),
                          ("execution_providers", [("cpu", "cuda", "tensorrt", "rocm", "openvino", "coreml",
                                                    "directml")])):
        for name in names:
            assert RunConfig.from_options(**{option: name}).options()[option] == name
    for option, wrong in (("face_swapper_model", "roop"), ("face_swapper_pixel_boost", 200),
                          ("execution_providers", ("vulkan",))):
        with pytest.raises(UsageError, match=f"--{option.replace('_', '-')}: invalid choice"):
            RunConfig.from_options(**{option: wrong})


def test_published_hashes_are_for_facefusion_downloads_only() -> None:
    # Each published sha256 belongs to a trust-on-first-use entry downloaded from FaceFusion's release, is a
    # sha256 (64 lowercase hex digits) with a plausible size, and no two models share one.
    published = {spec.name: spec.published for spec in Catalog().models if spec.published is not None}
    assert {"inswapper_128", "gfpgan_1.4", "arcface_w600k_r50", "xseg_1", "bisenet_resnet_34"} <= set(published)
    for name, entry in published.items():
        spec = Catalog().get(name)
        assert spec.sha256 is None and spec.publisher_crc32 and spec.urls[0].startswith(
            "https://github.com/facefusion/facefusion-assets/releases/download/models-3.")
        assert len(entry.sha256) == 64 and entry.sha256 == entry.sha256.lower() and int(entry.sha256, 16) > 0
        assert entry.size > 1_000_000 and (spec.size is None or spec.size == entry.size)
    assert len({entry.sha256 for entry in published.values()}) == len(published)
    # insightface's own inswapper_128.onnx is a different file from FaceFusion's: it must not be taken for it.
    assert published["inswapper_128"].sha256 != "e4a3f08c753cb72d04e10aa0f7dbe3deebbf39567d4ead6dce08e98aa49e16af"


def test_the_fairface_classifier_follows_facefusions_contract() -> None:
    """FaceFusion's face_classifier.py: fairface.onnx of models-3.0.0, `input` [1,3,224,224] aligned to
    arcface_112_v2, ImageNet mean/std; race, gender and age class indices out, in that order."""
    spec = CATALOG.get("fairface")
    io = spec.io
    assert io is not None and spec.kind == "classifier" and spec.sha256 is None and spec.source_sha256 is None
    assert spec.urls == ("https://github.com/facefusion/facefusion-assets/releases/download/models-3.0.0/fairface.onnx",
                         "https://huggingface.co/facefusion/models-3.0.0/resolve/main/fairface.onnx")
    assert [(t.name, t.shape, t.dtype) for t in io.inputs] == [("input", (1, 3, 224, 224), "float32")]
    assert [t.dtype for t in io.outputs] == ["int64"] * 3 and [t.name for t in io.outputs][0] == "race_id"
    assert io.template == "arcface_112_v2" and io.crop_size == 224
    np.testing.assert_allclose(io.mean, IMAGENET[0])
    np.testing.assert_allclose(io.std, IMAGENET[1])
