"""`slimfuse doctor`: the hardware found, the execution providers that work, and the profile to use."""
from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import onnxruntime as ort

from slimfuse.cli.commands import HELP
from slimfuse.errors import ProviderUnavailableError
from slimfuse.memory import probe
from slimfuse.models.providers import LABELS, PROVIDERS, short_name
from slimfuse.models.runtime import available_providers
from slimfuse.profiles import recommend

GB = 1 << 30


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("doctor", help=HELP["doctor"],
                                 description="Print the CPU, RAM and GPUs found, the onnxruntime execution "
                                 "providers that work here, and the --profile to use.")
    parser.add_argument("--execution-provider", "--execution-providers", dest="execution_providers", nargs="+",
                        choices=list(PROVIDERS), default=[], metavar="PROVIDER",
                        help="exit 17 with the fix when one of these providers is unusable")
    parser.add_argument("--execution-device-id", type=int, default=0, help="which GPU the providers use")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON, for scripts")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    parser.set_defaults(command=run)


def diagnose(requested: tuple[str, ...] = (), device_id: int = 0, nvml: Any | None = None,
             root: Path = Path("/")) -> dict[str, Any]:
    """Everything doctor finds, as plain data. `nvml` and `root` are for tests (a fake NVML, a fake /)."""
    nvml = nvml if nvml is not None else probe.load_nvml()
    gpus = probe.gpus(nvml) if nvml is not None else None
    offered = available_providers()
    known = [short_name(p) for p in offered if p in PROVIDERS.values()]
    from slimfuse.models.provider_check import check_providers  # builds a test model with onnx: only here

    checks = check_providers(tuple(dict.fromkeys([*known, *requested])), device_id)
    jetson = probe.is_jetson(root)
    cuda_works = any(check.provider == "cuda" and check.works for check in checks)
    largest = max((gpu.total_bytes for gpu in gpus or ()), default=None)
    return {
        "system": asdict(probe.system_memory()),
        "nvml": "absent (pip install nvidia-ml-py)" if nvml is None else ("no driver" if gpus is None else "ok"),
        "gpus": [asdict(gpu) for gpu in gpus or ()],
        "jetson": jetson,
        "onnxruntime": ort.__version__,
        "offered": offered,
        "providers": [asdict(check) for check in checks],
        "recommended_profile": recommend(largest, jetson, cuda_works),
    }


def run(args: argparse.Namespace) -> int:
    requested = tuple(args.execution_providers)
    found = diagnose(requested, args.execution_device_id)
    print(json.dumps(found, indent=2) if args.json else render(found), flush=True)
    for check in found["providers"]:
        if check["provider"] in requested and not check["works"]:
            raise ProviderUnavailableError(detail=(
                f"{LABELS[check['provider']]} execution provider unusable ({check['error']}); fix: {check['fix']}"))
    return 0


def render(found: dict[str, Any]) -> str:
    system = found["system"]
    lines = [f"CPU: {system['logical_cores']} logical cores ({system['physical_cores']} physical)",
             f"RAM: {system['total_bytes'] / GB:.1f} GB total, {system['available_bytes'] / GB:.1f} GB available"]
    for gpu in found["gpus"]:
        lines.append(f"GPU {gpu['index']}: {gpu['name']}, {gpu['total_bytes'] / GB:.1f} GB total, "
                     f"{gpu['free_bytes'] / GB:.1f} GB free")
    if not found["gpus"]:
        lines.append(f"GPU: none found through NVML (NVML: {found['nvml']})")
    if found["jetson"]:
        lines.append("Platform: NVIDIA Jetson")
    lines.append(f"onnxruntime {found['onnxruntime']} offers: {', '.join(found['offered'])}")
    for check in found["providers"]:
        if check["works"]:
            lines.append(f"  {check['provider']}: works")
        else:
            lines.append(f"  {check['provider']}: unusable ({check['error']})")
            if check["fix"]:
                lines.append(f"    fix: {check['fix']}")
    lines.append(f"Recommended profile: {found['recommended_profile']} "
                 f"(slimfuse swap ... --profile {found['recommended_profile']})")
    return "\n".join(lines)
