"""Hardware profiles (--profile): each sets a coherent group of `slimfuse swap` options for one kind of machine.

Settings are keyed by the swap command's option destinations. Precedence: an option given on the command line,
then the profile, then RunConfig's default (see cli/profile_options.py)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

GIB = 1 << 30


@dataclass(frozen=True)
class Profile:
    name: str
    summary: str
    settings: Mapping[str, object]


def _profile(name: str, summary: str, **settings: object) -> Profile:
    return Profile(name, summary, MappingProxyType(settings))


# The CUDA arena limits leave room for the CUDA context and cuDNN's workspaces (about 0.5-1 GB) on the card.
PROFILES: Mapping[str, Profile] = MappingProxyType({profile.name: profile for profile in (
    # Level 3 on a CPU runs the gated int8 variants (made once, on the first run that needs them): about a quarter
    # of FaceFusion's peak at 2.5-3x its speed with the same models, where level 1 holds every model in fp32.
    _profile("cpu", "no GPU: the CPU provider, small faces and enhancer tiles, memory level 3 (int8 variants)",
             execution_providers=("cpu",), target_face_size=512, face_enhancer_model="none",
             frame_enhancer_tile_size=128, video_memory_level=3),
    _profile("low-vram-4g", "a 4 GB GPU: CUDA within 3 GB, 720-px faces, an 8 GB process cap, jpg temp frames",
             execution_providers=("cuda",), execution_gpu_memory_limit=3 * GIB, target_face_size=720,
             system_memory_limit=8.0, temp_frame_format="jpg", face_enhancer_model="none",
             frame_enhancer_tile_size=256, video_memory_level=1),
    _profile("vram-6g", "a 6 GB GPU: CUDA within 5 GB, 1024-px faces, a 12 GB process cap, streaming",
             execution_providers=("cuda",), execution_gpu_memory_limit=5 * GIB, target_face_size=1024,
             system_memory_limit=12.0, frame_enhancer_tile_size=384, video_memory_level=1),
    _profile("vram-8g", "an 8 GB GPU: CUDA within 7 GB, 1024-px faces, a 16 GB process cap, streaming",
             execution_providers=("cuda",), execution_gpu_memory_limit=7 * GIB, target_face_size=1024,
             system_memory_limit=16.0, frame_enhancer_tile_size=512, video_memory_level=1),
    _profile("jetson", "an NVIDIA Jetson (memory shared by CPU and GPU): CUDA within 2 GB, 512-px faces, "
             "jpg temp frames, no enhancer, memory level 2",
             execution_providers=("cuda",), execution_gpu_memory_limit=2 * GIB, target_face_size=512,
             temp_frame_format="jpg", face_enhancer_model="none", frame_enhancer_tile_size=128,
             video_memory_level=2),
    _profile("server", "a GPU of 12 GB or more: CUDA without an arena limit, 1024-px faces, large tiles, memory level 0",
             execution_providers=("cuda",), target_face_size=1024, frame_enhancer_tile_size=512,
             video_memory_level=0),
)})

# Every option some profile sets: the command line must leave these unset (None) unless the user gives them.
PROFILE_OPTIONS: frozenset[str] = frozenset(key for profile in PROFILES.values() for key in profile.settings)


def resolve(given: Mapping[str, object], profile: str | None, default: Mapping[str, object]) -> dict[str, object]:
    """The value of every PROFILE_OPTIONS option: what the user gave (not None), else the profile's, else the
    default's (`default` lacks an option whose default is None)."""
    settings = PROFILES[profile].settings if profile is not None else {}
    resolved: dict[str, object] = {}
    for option in PROFILE_OPTIONS:
        value = given.get(option)
        if value is None:
            value = settings.get(option, default.get(option))
        resolved[option] = value
    return resolved


def recommend(gpu_memory_bytes: int | None, jetson: bool, cuda_works: bool) -> str:
    """The profile for a machine: its largest NVIDIA GPU's memory (None: no GPU seen), whether it is a Jetson,
    and whether ONNX Runtime's CUDA provider starts here (without it a GPU is no use to the run)."""
    if jetson:
        return "jetson" if cuda_works else "cpu"
    if gpu_memory_bytes is None or not cuda_works:
        return "cpu"
    if gpu_memory_bytes < 5 * GIB:
        return "low-vram-4g"
    if gpu_memory_bytes < 7 * GIB:
        return "vram-6g"
    if gpu_memory_bytes < 12 * GIB:
        return "vram-8g"
    return "server"
