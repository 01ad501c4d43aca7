#!/usr/bin/env bash
# Builds FaceFusion 3.8.1 in a venv of its own and records its reference outputs into tests/parity/reference/.
#   FF_MIRROR=GITDIR tools/facefusion_reference/record.sh [AREA ...]
# FF_MIRROR: a git dir of facefusion/facefusion holding commit 33cc6b40 (3.8.1). WORK: where the checkout and its
# venv go (default: $TMPDIR/slimfuse-ffref, kept between runs). Run from the repository root, after `make models`
# (slimfuse's venv prints the packaged photos' paths). No model hub is needed: the models are parity stand-ins.
set -euo pipefail
COMMIT=33cc6b40
WORK=${WORK:-${TMPDIR:-/tmp}/slimfuse-ffref}
: "${FF_MIRROR:?set FF_MIRROR to a git dir of facefusion/facefusion}"
mkdir -p "$WORK"
if [ ! -f "$WORK/facefusion/facefusion/face_helper.py" ]; then
  mkdir -p "$WORK/facefusion"
  git -C "$FF_MIRROR" archive "$COMMIT" | tar -x -C "$WORK/facefusion"
fi
if [ ! -x "$WORK/venv/bin/python" ]; then
  python3.11 -m venv "$WORK/venv"
  # FaceFusion 3.8.1's requirements.txt, less its UI (gradio) and with the scipy that Python 3.11 has.
  "$WORK/venv/bin/pip" install --quiet numpy==2.4.6 onnx==1.22.0 onnxruntime==1.28.0 \
    opencv-python-headless==5.0.0.93 tqdm==4.70.0 scipy==1.17.1
fi
"$WORK/venv/bin/python" tools/facefusion_reference/record.py --facefusion "$WORK/facefusion" \
  --target "$(.venv/bin/python -m slimfuse.samples astronaut)" \
  --source "$(.venv/bin/python -m slimfuse.samples grace_hopper)" "$@"
