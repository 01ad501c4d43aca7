"""The age modifiers' and frame colourisers' catalog entries against FaceFusion 3.8.1's model tables and processors:
releases, addresses, licences, tensors, templates, crop sizes and normalisations; the options that choose them."""
from __future__ import annotations

import numpy as np
import pytest

from slimfuse.config import RunConfig
from slimfuse.errors import UsageError
from slimfuse.faces.align import TEMPLATES
from slimfuse.models.catalog import Catalog
from slimfuse.models.neural.age_modifiers import AGE_MODIFIER_NAMES, BACKGROUND_TEMPLATE
from slimfuse.models.neural.frame_colorizers import FRAME_COLORIZER_NAMES, TYPES

CATALOG = Catalog()
# name: (release, licence word, [(input, shape)], output shape, template, crop size, mean, output range)
AGE_FACTS = {
    "fran": ("models-3.6.0", "MIT", [("target", (1, 3, 1024, 1024)), ("direction", (2,))], (1, 3, 1024, 1024),
             "ffhq_512", 1024, 0.0, (0.0, 1.0)),
    "styleganex_age": ("models-3.1.0", "S-Lab", [("target", (1, 3, 256, 256)),
                                                  ("target_with_background", (1, 3, 384, 384)), ("direction", ())],
                       (1, 3, 1536, 1536), "ffhq_512", 256, 0.5, (-1.0, 1.0)),
}
COLORIZER_FACTS = {"ddcolor": ("Apache-2.0", 2), "ddcolor_artistic": ("Apache-2.0", 2), "deoldify": ("MIT", 3),
                   "deoldify_artistic": ("MIT", 3), "deoldify_stable": ("MIT", 3)}


def _urls(release: str, name: str) -> tuple[str, str]:
    return (f"https://github.com/facefusion/facefusion-assets/releases/download/{release}/{name}.onnx",
            f"https://huggingface.co/facefusion/{release}/resolve/main/{name}.onnx")


@pytest.mark.parametrize("name", sorted(AGE_FACTS))
def test_age_modifiers_follow_facefusion(name: str) -> None:
    release, licence, inputs, output, template, size, mean, output_range = AGE_FACTS[name]
    spec = CATALOG.get(name)
    io = spec.io
    assert spec.kind == "age_modifier" and spec.sha256 is None and spec.publisher_crc32 and licence in spec.licence
    assert spec.urls == _urls(release, name)
    assert io is not None and [(t.name, t.shape) for t in io.inputs] == inputs
    assert all(t.dtype == "float32" for t in io.inputs) and io.outputs[0].shape == output
    assert io.template == template and io.crop_size == size and io.output_range == output_range
    np.testing.assert_allclose(io.mean, (mean,) * 3)
    np.testing.assert_allclose(io.std, (1.0 - mean,) * 3)


def test_styleganex_surroundings_template_is_facefusions() -> None:
    np.testing.assert_allclose(TEMPLATES[BACKGROUND_TEMPLATE], [
        (0.42353745, 0.52289879), (0.57725008, 0.52319972), (0.50123859, 0.61331904), (0.43364461, 0.68337652),
        (0.57015325, 0.68306005)])


@pytest.mark.parametrize("name", sorted(COLORIZER_FACTS))
def test_frame_colourisers_follow_facefusion(name: str) -> None:
    licence, channels = COLORIZER_FACTS[name]
    spec = CATALOG.get(name)
    io = spec.io
    assert spec.kind == "frame_colorizer" and spec.sha256 is None and licence in spec.licence
    assert spec.urls == _urls("models-3.0.0", name)
    assert io is not None and [(t.name, t.shape) for t in io.inputs] == [("input", (1, 3, "height", "width"))]
    assert io.outputs[0].shape == (1, channels, "height", "width")
    assert TYPES[name] == ("ddcolor" if channels == 2 else "deoldify")


def test_the_options_offer_them_with_facefusions_defaults_and_ranges() -> None:
    assert AGE_MODIFIER_NAMES == ("fran", "styleganex_age")
    assert FRAME_COLORIZER_NAMES == ("ddcolor", "ddcolor_artistic", "deoldify", "deoldify_artistic", "deoldify_stable")
    options = RunConfig().options()
    assert (options["age_modifier_model"], options["age_modifier_direction"]) == ("fran", 0)
    assert (options["frame_colorizer_model"], options["frame_colorizer_blend"],
            options["frame_colorizer_size"]) == ("ddcolor", 100, "256x256")
    for option, value in (("age_modifier_direction", -100), ("age_modifier_direction", 100),
                          ("frame_colorizer_size", "512x512"), ("frame_colorizer_blend", 0),
                          ("age_modifier_model", "styleganex_age"), ("frame_colorizer_model", "deoldify_stable")):
        assert RunConfig.from_options(**{option: value}).options()[option] == value
    for option, wrong in (("age_modifier_direction", 101), ("frame_colorizer_blend", 101),
                          ("frame_colorizer_size", "128x128"), ("age_modifier_model", "sam")):
        with pytest.raises(UsageError, match=f"--{option.replace('_', '-')}"):
            RunConfig.from_options(**{option: wrong})
