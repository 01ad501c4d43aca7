"""The deep swapper on DFM stand-ins (tests/parity/standins.py: DeepFaceLab's tensor names and FaceFusion's sizes):
the catalog's published names, a user's own file by path and as custom/NAME (trust on first use), and the one-line
errors of a file that does not fit the contract."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from neural_models import isolated_store
from parity import standins
from parity.faces import mesh_face
from slimfuse.config import DeepSwapOptions, MaskOptions, RunConfig
from slimfuse.errors import ModelCorruptError, ModelInvalidError, ModelUnavailableError, UsageError
from slimfuse.memory.batching import AdaptiveBatcher
from slimfuse.models.catalog import Catalog
from slimfuse.models.neural.deep_swappers import DEEP_SWAPPER_NAMES, DEFAULT_MODEL
from slimfuse.models.pool import ModelPool
from slimfuse.models.publisher_hash import hash_url
from slimfuse.models.store import Store
from slimfuse.processors.deep_swap import DeepSwapProcessor
from slimfuse.processors.paste_masks import FaceMasker

PUBLISHED = standins.DEEP_SWAPPERS[0].name
OWN = standins.USER_DFM.name


def make_pool(home: Path, store: Store, placed: Path | None = None) -> ModelPool:
    return ModelPool(isolated_store(home, store, placed))


def swapper(pool: ModelPool, options: DeepSwapOptions, types: tuple[str, ...] = ("box",)) -> DeepSwapProcessor:
    masker = FaceMasker(pool, MaskOptions(face_mask_types=types), None)  # type: ignore[arg-type]
    return DeepSwapProcessor(pool, options, masker, AdaptiveBatcher(pool))


def swap(processor: DeepSwapProcessor, frame: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The crop, the processed crop and its alpha of the parity geometry's face."""
    processor.prepare(())
    crop = processor.crop(frame, mesh_face("target"))
    (result,) = processor.process([crop], None)
    return crop.image, result.image, result.alpha


def own_file(folder: Path, name: str = "my face.dfm") -> Path:
    built = standins.write(OWN, folder / "built")
    path = folder / name
    shutil.copyfile(built, path)
    return path


def test_the_catalog_holds_facefusions_list() -> None:
    catalog = Catalog()
    assert len(DEEP_SWAPPER_NAMES) == 157 and DEFAULT_MODEL in DEEP_SWAPPER_NAMES
    for name in DEEP_SWAPPER_NAMES:
        spec = catalog.get(name)
        scope, person = name.split("/")
        assert spec.urls == (f"https://huggingface.co/facefusion/deepfacelive-models-{scope}/resolve/main/"
                             f"{person}.dfm",)
        assert spec.filename == f"{name}.dfm" and spec.sha256 is None and spec.publisher_crc32
        assert hash_url(spec.urls[0]).endswith(f"/deepfacelive-models-{scope}/resolve/main/{person}.hash")
        assert spec.io is not None and spec.io.template == "dfl_whole_face" and "GPL-3.0" in spec.licence


@pytest.mark.parametrize("contract", standins.DEEP_SWAPPERS, ids=lambda contract: contract.name)
def test_a_published_name_swaps_the_face_without_a_source(tmp_path: Path, store: Store, astronaut: np.ndarray,
                                                           contract: standins.Contract) -> None:
    standins.write(contract.name, tmp_path / "placed")
    pool = make_pool(tmp_path / "home", store, tmp_path / "placed")
    processor = swapper(pool, DeepSwapOptions(deep_swapper_model=contract.name))
    crop, image, alpha = swap(processor, astronaut)
    assert crop.shape == image.shape == (contract.inputs[0].shape[1],) * 2 + (3,)
    assert np.abs(image.astype(np.float64) - crop).mean() > 5.0
    assert alpha.shape == crop.shape[:2] and 0.0 <= alpha.min() and alpha.max() <= 1.0
    assert alpha[alpha.shape[0] // 2].max() > 0.3 and alpha[0].max() == 0.0  # the box's edge and the model's mask
    assert pool.store.recorded(contract.name) is not None  # trusted on first use
    assert processor.preparation_models == ()


def test_a_file_placed_by_path_runs_and_is_trusted_on_first_use(tmp_path: Path, store: Store,
                                                                astronaut: np.ndarray) -> None:
    path = own_file(tmp_path)
    config = RunConfig.from_options(deep_swapper_file=str(path), deep_swapper_morph=40)
    pool = make_pool(tmp_path / "home", store)
    crop, image, _ = swap(swapper(pool, config.deep_swap), astronaut)
    assert config.deep_swap.model == str(path.resolve())
    assert crop.shape == (320, 320, 3) and np.abs(image.astype(np.float64) - crop).mean() > 5.0
    assert pool.store.recorded(str(path)) is not None and path.is_file()  # used where it is
    other = make_pool(tmp_path / "home", store)  # a later run: the file changed since it was trusted
    path.write_bytes(path.read_bytes()[:-8] + b"changed!")
    with pytest.raises(ModelCorruptError, match="recorded on first use"):
        other.session(str(path))


def test_custom_name_is_the_file_in_the_custom_folder(tmp_path: Path, store: Store, astronaut: np.ndarray) -> None:
    standins.write(OWN, tmp_path / "placed")
    pool = make_pool(tmp_path / "home", store, tmp_path / "placed")
    crop, image, _ = swap(swapper(pool, DeepSwapOptions(deep_swapper_model=OWN)), astronaut)
    assert crop.shape == (320, 320, 3) and pool.store.location(OWN) == tmp_path / "placed" / "custom" / \
        "own_face_320.dfm"


def test_the_run_masks_combine_with_the_models(tmp_path: Path, store: Store, astronaut: np.ndarray) -> None:
    """The alpha is the minimum of the run's masks and the model's own: never above either."""
    standins.write(PUBLISHED, tmp_path / "placed")
    pool = make_pool(tmp_path / "home", store, tmp_path / "placed")
    _, _, alone = swap(swapper(pool, DeepSwapOptions(deep_swapper_model=PUBLISHED), ()), astronaut)
    _, _, boxed = swap(swapper(pool, DeepSwapOptions(deep_swapper_model=PUBLISHED)), astronaut)
    assert np.all(boxed <= alone + 1e-6) and alone.min() < 0.5 < alone.max() and boxed.sum() < alone.sum()


def _onnx_with(path: Path, inputs: list[onnx.ValueInfoProto], outputs: int = 3) -> Path:
    """A tiny ONNX file with these inputs whose `outputs` outputs copy the first input."""
    names = [f"out_{index}" for index in range(outputs)]
    nodes = [helper.make_node("Identity", [inputs[0].name], [name]) for name in names]
    shape = [dim.dim_value or dim.dim_param for dim in inputs[0].type.tensor_type.shape.dim]
    graph = helper.make_graph(nodes, "bad", inputs, [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
                                                     for name in names])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def _face(shape: list[int | str], name: str = "in_face:0") -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


BAD_FILES = {
    "empty": (lambda path: path.write_bytes(b""), "cannot load \\(0 bytes"),
    "not onnx": (lambda path: path.write_bytes(b"DeepFaceLab? no: some other file " * 40), "cannot load"),
    "wrong inputs": (lambda path: _onnx_with(path, [_face([1, 3, 224, 224], "input")]),
                     "expected inputs in_face:0\\[batch,height,width,3\\] morph_value:0\\[1\\] \\(optional\\), "
                     "found input\\[1,3,224,224\\]"),
    "free size": (lambda path: _onnx_with(path, [_face(["n", "h", "w", 3])]), "square in_face:0 of a fixed size"),
    "two outputs": (lambda path: _onnx_with(path, [_face(["n", 224, 224, 3])], outputs=2), "expected 3 outputs"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_file_that_does_not_fit_is_one_line_naming_it(tmp_path: Path, store: Store, case: str) -> None:
    make, message = BAD_FILES[case]
    path = tmp_path / "user" / "bad.dfm"
    path.parent.mkdir(parents=True)
    make(path)
    pool = make_pool(tmp_path / "home", store)
    options = RunConfig.from_options(deep_swapper_file=str(path)).deep_swap
    with pytest.raises(ModelInvalidError, match=message) as caught:
        swapper(pool, options).prepare(())
    line = str(caught.value)
    assert "\n" not in line and str(path) in line and "moved aside" in line
    assert not path.exists() and (tmp_path / "user" / "bad.dfm.rejected-1").exists()


def test_a_missing_file_says_so(tmp_path: Path, store: Store) -> None:
    path = tmp_path / "absent.dfm"
    pool = make_pool(tmp_path / "home", store)
    with pytest.raises(ModelUnavailableError, match="no such file"):
        swapper(pool, RunConfig.from_options(deep_swapper_file=str(path)).deep_swap).prepare(())


@pytest.mark.parametrize(("options", "message"), [
    ({"deep_swapper_file": "face.onnx"}, "--deep-swapper-file: must be a .dfm file"),
    ({"deep_swapper_model": "custom/../secret"}, "--deep-swapper-model: invalid choice"),
    ({"deep_swapper_model": "nobody/someone_224"}, "one of the 157 names"),
    ({"deep_swapper_morph": 101}, "--deep-swapper-morph: must lie between 0 and 100"),
])
def test_options_are_checked(options: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        RunConfig.from_options(**options)


def test_facefusions_ini_keys_are_read(tmp_path: Path) -> None:
    ini = tmp_path / "facefusion.ini"
    ini.write_text("[processors]\ndeep_swapper_model = custom/my_face\ndeep_swapper_morph = 60\n")
    options = RunConfig.from_options(config_path=str(ini)).deep_swap
    assert (options.model, options.deep_swapper_morph) == ("custom/my_face", 60)


def test_the_memory_plan_knows_the_files() -> None:
    """A generator the plan batches, estimated at the size its name says (a user's file: the largest published)."""
    from slimfuse.memory.plan import GENERATOR_KINDS, model_need

    catalog = Catalog()
    for name, side in (("druuzil/henry_cavill_448", 448), ("iperov/elon_musk_224", 224), ("custom/mine", 448)):
        need = model_need(catalog.get(name), 200 << 20)
        assert need.batched and need.kind in GENERATOR_KINDS and need.item_bytes == 4 * side * side * 3 * 256
