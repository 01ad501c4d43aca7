"""The sha256 and size public sources state for FaceFusion's own release files, by catalog name.

A download of one of these models (from the GitHub release or its Hugging Face mirror, the same files) must match:
a file that does not is not kept (exit 15). A file the user places may differ (another export of the same weights),
and is then trusted on first use with a notice. Models not listed here have no sha256 that two public sources
agree on for FaceFusion's file; their downloads are checked against FaceFusion's own NAME.hash (a CRC32) instead.

Only a value stated for FaceFusion's file itself is taken (FaceFusion repackages several models, so a hash of
insightface's or another project's file of the same name is not FaceFusion's), and only where at least two sources
agree. The sources, read in a public code index:
- [D] DaWasteh/DaWastehs-ComfyUI-Bundle at 1d8da1c: tools/upgrade_v099.py and tools/upgrade_v100.py (MODEL_FILES:
  the Hugging Face repository facefusion/models-3.x.0, the size and the sha256 of each file), and
  custom_nodes/ComfyUI-DaWasteh-LiveAvatar/face_swap.py (the same values).
- [T] idootop/TinyFace at 4536a01: tinyface/core/detector.py, embedder.py, swapper.py, enhancer.py (`known_hash` of
  its own copies of FaceFusion's files, built on FaceFusion; the same sha256 the others state for FaceFusion's
  addresses).
- [Z] a model zoo module `face_engine/models/zoo.py`, whose sha256 and size are the Hugging Face X-Linked-ETag and
  X-Linked-Size of facefusion/models-3.x.0 (its first version said 98fae144... for inswapper_128_fp16, corrected
  to the value below).
- [A] an `avatarcam` model catalogue, [G] a `GifFaceSwap` model manifest (GitHub release, then Hugging Face),
  [C] a "CMK" model-resource audit script, [E] a `face_swap.enhancement` module and [S] a face-detail study
  (apps/web/tools/face_detail_study.py) that also records FaceFusion's CRC32 of each file: each pins the sha256
  of the GitHub release address of the files it uses.
- [N] a model manifest with the GitHub addresses, sizes and sha256 of bisenet_resnet_18 and xseg_2; [X] an XSeg
  occluder module ("SHA-256 sourced from huggingface.co/facefusion/models-3.1.0"); [R] a module mapping xseg_1,
  xseg_2 and xseg_3 to their releases with their sha256; a BiSeNet note ("verified published SHA-256" of
  FaceFusion's bisenet_resnet_18); [M] a `mimiq` model registry (sizes of the models-3.x.0 files).
"""
from __future__ import annotations

from types import MappingProxyType

from slimfuse.models.spec import Published

PUBLISHED = MappingProxyType({
    # models-3.0.0; [D] upgrade_v099.py, a TypeScript model list with the GitHub address, [M] (size); insightface's
    # own inswapper_128.onnx (e4a3f08c..., 554 253 681 bytes) is a different file.
    "inswapper_128": Published("a290273ed497312095dac48cdef20feec9d5208298223dd01288ab202b54bea7", 555_303_150),
    # models-3.0.0; [T] swapper.py, [A], [G], [Z] (corrected).
    "inswapper_128_fp16": Published("c4eccca86ad177586c85c28bf1a64a9d9ed237e283a15818d831f7facfd3f420", 277_680_829),
    # models-3.3.0; [D] upgrade_v099.py, [Z].
    "hyperswap_1a_256": Published("c0e98a8a03a238f461ed3d2570e426b49f46745ee400854a60dceeb70c246add", 402_742_682),
    # models-3.3.0; [Z], [C] (the GitHub address).
    "hyperswap_1b_256": Published("5124031789c42f71b9558fb71954ef7aedb6da7ed9fac79293e23c61a792a73e", 402_742_682),
    # models-3.3.0; [D] upgrade_v100.py, [Z], [C].
    "hyperswap_1c_256": Published("5528c2d76fe9986c99d829278987ef9f3a630cb606db7628d02b57b330f406a5", 402_742_682),
    # models-3.0.0; [D] upgrade_v099.py, [T] enhancer.py, [A], [E], [S] (with FaceFusion's CRC32 5a6c6364).
    "gfpgan_1.4": Published("accc4757b26bdb89b32b4d3500d4f79c9dff97c1dd7c7104bf9dcb95e3311385", 340_299_087),
    # models-3.0.0; [S] (with FaceFusion's CRC32 1456f3ab), [E], [M] (size).
    "codeformer": Published("21710e7ab61c82683576c428e9c1b6fe1ed419586b7b39e394c3449c294b550f", 376_951_650),
    # models-3.0.0; [D] upgrade_v099.py, [A], [G].
    "gpen_bfr_256": Published("bad8bf0426873828df2dbf4e3b3d9ababba9da7965b8b72426569486f7ae5c25", 75_792_988),
    # models-3.0.0; [D] upgrade_v100.py, [Z], [G], [E].
    "gpen_bfr_512": Published("d5f066b9068a8b74217f9712e28e875a6144629b108a6f7355acbdb3a2832c54", 284_340_240),
    # models-3.0.0; [T] embedder.py, [A], [G], [Z] (FaceFusion's export, not buffalo_l's w600k_r50.onnx).
    "arcface_w600k_r50": Published("f1f79dc3b0b79a69f94799af1fffebff09fbd78fd96a275fd8f0cbbea23270d1", 174_388_474),
    # models-3.0.0; [T] detector.py, [A], a TypeScript model list with the GitHub address.
    "scrfd_2.5g": Published("2c07342347cef21a619c49dd5664fb8c09570ae9eda5bff3e385c11eafc45ada", 3_295_067),
    # yoloface_8n.onnx, models-3.0.0; [Z], [G].
    "yolo_face": Published("821cdbb1e65fbbabdde7dd0933f754797a343e56fd962729c61ffcefcd135929", 12_659_761),
    # models-3.1.0; [D] upgrade_v100.py, [A], [R].
    "xseg_1": Published("c4d1498b8a03b5fe2a3a5d2ef2a0402ab03bd51edaf5b2d8d5fb764702a97dd3", 70_324_286),
    # models-3.1.0; [D] upgrade_v100.py, [N], [X], [R].
    "xseg_2": Published("cd9a0879eaf43841d765472cf1f8c330dbf9dcb03da0eace93e95f3bcc399042", 70_324_286),
    # models-3.2.0; [D] upgrade_v100.py, [Z], [R].
    "xseg_3": Published("48ccd7e8541e159a5a754ec9e62df2f12065f7df8f9af842c1750342c6533559", 70_327_709),
    # models-3.1.0; [N], the BiSeNet note, [M] (size).
    "bisenet_resnet_18": Published("2218b6183c26ca5c83303232d682a536c670c13ea9695f716c777d1f244eefe9", 53_205_356),
    # models-3.0.0; [D] upgrade_v100.py, [Z], [A].
    "bisenet_resnet_34": Published("4a0b8c958a3c938913bd06a8365dbb3c8761afba6ecbf0d14b3b1f77eb230c96", 93_632_546),
})
"""Not listed, with one source only: uniface_256 ([D]), gpen_bfr_1024 ([Z]), retinaface_10g ([G]),
hififace_unofficial_256 and crossface_hififace ([Z]), simswap_unofficial_512 and crossface_simswap (one Android
project). With none found: simswap_256, ghost_1/2/3_256, blendswap_256, crossface_ghost, gfpgan_1.2, gfpgan_1.3,
restoreformer_plus_plus (FaceFusion's, 294 264 232 bytes, differs from other copies), yunet, real_esrgan_x2/x4."""
