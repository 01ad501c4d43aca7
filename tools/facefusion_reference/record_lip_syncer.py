"""Reference outputs of FaceFusion 3.8.1's lip syncer, model by model, stage by stage.

The sound is the parity sound (`standins.parity_voice`: tones, noise and silence, 48 kHz stereo int16). FaceFusion
reads sound through an ffmpeg binary, which is not used here: the decoded samples go straight into FaceFusion's own
functions. Into lip_syncer/voice.npz: `spectrogram` (80 x columns), from `prepare_voice` and `create_spectrogram`
without the voice extractor, and `window_K`, the mel window of frame K from `extract_audio_frames` (25 frames/s);
for each voice extractor NAME (on its stand-in), `spectrogram_NAME`: FaceFusion's `read_voice` less ffmpeg
(`batch_extract_voice`, then the same) on the parity sound three times over (6 s: two overlapping pieces), and
`voice_NAME`, the extracted voice at every VOICE_STRIDE-th sample (both float32).

For each of the 3 lip syncers (on parity stand-ins), with FaceFusion's defaults (--face-mask-types box,
--face-mask-blur 0.3, --lip-syncer-weight 0.5), for each frame K of FRAMES, into lip_syncer/NAME.npz:
- `source_K`: the model's `source` input (the prepared window), `source_K_w100` at --lip-syncer-weight 1 too;
- `output_K`: the model's output after FaceFusion's de-normalisation (RGB; wav2lip: the 96 px face, with
  `crop_output_K` the 512 px crop it is warped back into; edtalk: enlarged to 512 px), 512 px ones at every
  STRIDE-th pixel;
- `frame_K`: the frame after FaceFusion's `sync_lip`, cut to `paste_box`, and `frame_K_w100` at weight 1;
- `mask`: the paste mask (wav2lip: the lower-face area mask; edtalk: the box mask), `matrix`: the crop-from-frame
  affine; wav2lip also `box` (the 68 points' box in the crop) and `lower_face`, the 96 px face fed to the model.
The 512 px ffhq crop goes once into lip_syncer/crops.npz as `ffhq_512`.
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

import common

FRAMES = (0, 12, 22, 32)
"""Frames at 25 frames/s whose windows hold silence, the 300 Hz tone, noise and the 1 kHz tone."""
LOUD = 12
BLUR = 0.3
STRIDE = 4
"""512 px outputs are kept at every 4th pixel of every 4th row (the whole is compared through the pasted frame)."""
VOICE_STRIDE = 97
VOICE_REPEATS = 3


def record(inputs: common.Inputs, models: Path) -> list[Path]:
    from facefusion import audio, state_manager
    from facefusion.face_helper import calculate_paste_area, create_bounding_box, warp_face_by_bounding_box
    from facefusion.face_helper import warp_face_by_face_landmark_5
    from facefusion.face_masker import create_area_mask, create_box_mask
    from facefusion.processors.modules.lip_syncer import core

    spectrogram = audio.create_spectrogram(audio.prepare_voice(common.standins.parity_voice()))
    windows = audio.extract_audio_frames(spectrogram, common.standins.VOICE_FPS)
    written = [common.save("lip_syncer", "voice", {"spectrogram": spectrogram, **extracted_voices(models),
                                                    **{f"window_{k}": windows[k] for k in FRAMES}})]
    target = common.facefusion_face(inputs.geometry["target"], inputs.target_embedding)
    crop, matrix = warp_face_by_face_landmark_5(inputs.target_bgr, target.landmark_set["5/68"], "ffhq_512", (512, 512))
    (x1, y1, x2, y2), _ = calculate_paste_area(inputs.target_bgr, crop, matrix)
    points = cv2.transform(target.landmark_set["68"].reshape(1, -1, 2), matrix).reshape(-1, 2)
    model_set = core.create_static_model_set("full")
    for contract in common.standins.LIP_SYNCERS:
        name = contract.name
        options = common.use_standins(core, model_set[name], models, {"lip_syncer": name})
        for key, value in (("lip_syncer_model", name), ("face_mask_types", ["box"]), ("face_mask_blur", BLUR),
                           ("face_mask_padding", (0, 0, 0, 0)), ("lip_syncer_weight", 0.5)):
            state_manager.init_item(key, value)
        arrays: dict[str, np.ndarray] = {"matrix": np.asarray(matrix, dtype=np.float64),
                                         "paste_box": np.array([x1, y1, x2, y2])}
        if options["type"] == "wav2lip":
            box = create_bounding_box(points)
            lower_face, box_matrix = warp_face_by_bounding_box(crop, box, options["size"])
            arrays.update(mask=common.mask8(create_area_mask(crop, points, ["lower-face"])), box=box,
                          lower_face=common.rgb(lower_face))
        else:
            arrays["mask"] = common.mask8(create_box_mask(crop, BLUR, (0, 0, 0, 0)).clip(0, 1))
        for k in FRAMES:
            source = core.prepare_audio_frame(windows[k])
            arrays[f"source_{k}"] = source
            if options["type"] == "wav2lip":
                output = core.normalize_crop_frame(core.forward_wav2lip(source, core.prepare_crop_frame(lower_face)))
                arrays[f"crop_output_{k}"] = common.rgb(cv2.warpAffine(
                    output, cv2.invertAffineTransform(box_matrix), (512, 512),
                    borderMode=cv2.BORDER_REPLICATE)[::STRIDE, ::STRIDE])
            else:
                weight = np.array([0.5]).astype(np.float32)
                output = core.normalize_crop_frame(core.forward_edtalk(source, core.prepare_crop_frame(crop), weight))
            arrays[f"output_{k}"] = common.rgb(output if output.shape[0] < 512 else output[::STRIDE, ::STRIDE])
            arrays[f"frame_{k}"] = common.rgb(core.sync_lip(target, windows[k], inputs.target_bgr)[y1:y2, x1:x2])
        state_manager.init_item("lip_syncer_weight", 1.0)
        arrays[f"source_{LOUD}_w100"] = core.prepare_audio_frame(windows[LOUD])
        arrays[f"frame_{LOUD}_w100"] = common.rgb(core.sync_lip(target, windows[LOUD], inputs.target_bgr)[y1:y2, x1:x2])
        written.append(common.save("lip_syncer", name, arrays))
    written.append(common.save("lip_syncer", "crops", {"ffhq_512": common.rgb(crop)}))
    return written


def extracted_voices(models: Path) -> dict[str, np.ndarray]:
    """Each voice extractor's voice of the parity sound (6 s) and its spectrogram, from FaceFusion's functions."""
    from facefusion import audio, state_manager, voice_extractor

    sound = common.standins.parity_voice(VOICE_REPEATS)
    arrays = {}
    for contract in common.standins.VOICE_EXTRACTORS:
        name = contract.name
        state_manager.init_item("voice_extractor_model", name)
        pool = {name: common.session(name, models)}
        voice_extractor.get_inference_pool = lambda pool=pool: pool
        voice = voice_extractor.batch_extract_voice(sound, 240 * 1024, 180 * 1024)
        arrays[f"spectrogram_{name}"] = audio.create_spectrogram(audio.prepare_voice(voice)).astype(np.float32)
        arrays[f"voice_{name}"] = voice[::VOICE_STRIDE]
    return arrays
