"""Landmark-mesh face swap: the source face's texture, warped onto the target's 468-point FaceMesh.

No neural generator. `MeshSwapper` (swapper.py) runs these stages for each target face, each in a file of its own:

- mesh.py: both meshes share one fixed triangulation (`MeshTopology`, 852 triangles) plus fans that close the eye
  and mouth holes around their ring centroids (904 triangles in all).
- Source preparation (source.py): the source face cut out once (scaled down when large), its pyramid; for each target
  face, the pyramid level near the target's scale (so the texture is not aliased) or a sharpened magnified copy,
  and the source's mesh there, both kept on the `SourceFace`.
- The source's usable pixels (source_skin.py): its hair, fringe or hat above the eyes and its dark glasses frames
  (off the colour of its cheeks' skin) are found once; the texture is not trusted there, so the target's own
  pixels stay.
- Eyes (eyes.py, with MediaPipe's iris model): both faces' lid rings are moved to the eye contour the iris model
  sees (FaceMesh hardly sees a closed eye); a target eye less open than the source's keeps its opening (the shape
  transfer moves its lids with its corners only), and a shut one its own lid line and lashes (composition); when one
  reads shut, both do.
- Visibility (visibility.py): the target's face region is rasterised once into a triangle-id image (back-facing
  triangles first, then front-facing ones from far to near, so nearer triangles win where the face folds over
  itself). Triangles facing away from the camera are not part of the mask (target pixels stay); triangles that the
  source sees much more obliquely than the target does (stretched texture) fade out of it too.
- Geometry (geometry.py, shape_transfer.py): each pixel's source position follows from its triangle's affine map,
  and one `cv2.remap` renders the source texture. Shape transfer (default 0.9): the target's inner features move
  part of the way toward the source's proportions, after a 3-D similarity alignment of the two meshes; the target's
  pixels under the feathered edge move along, so nothing ghosts. Texture moved by a fraction of a pixel (the warp of
  a same-scale source, the target under the shape transfer) keeps its pixel-scale grain.
- Colour (color_match.py): a wide, skin-only low-frequency gain gives the source the target's lighting (the chroma
  over a narrower blur, so light that changes colour across the face is followed); it is damped on the lips and
  eyes so they keep their colour.
- Focus (focus.py): a source sharper than the target around the features (a face out of focus in a group photo,
  a small or compressed one) is blurred to the target's sharpness there, by at most a hundredth or so of the face.
- Lips (color_match.py): then the lips take the target's lip colour (its lipstick, or its own lips' tone) and half
  of its lips' lightness, by one shift of their median CIELAB colour: the source's lip shape and texture stay.
- Detail (detail.py): the skin's finest luma band is brought near the target's (a wrinkled source on a smooth face
  damped to about twice the target's energy; a smaller, magnified source topped up with the target's texture, fully
  near the mask border so the grain runs on across it).
- Seam (seam.py): over the mask's feathered edge and a little further in, the face's light is the target's and its
  grain no stronger than the target's, so the source's own shading and wrinkles at its outline draw no line; around
  kept shut eyes the light is the target's too, so the kept lids show no patch of another light.
- Composition (composition.py): the mask is the covered face region, eroded and feathered by fractions of the face
  size (more at the forehead and the jaw, where the mesh edge is least reliable), with the target's mouth interior
  cut out by default; feathered alpha by default, or Poisson (`cv2.seamlessClone`) inside a tight mask.
- Glasses (glasses.py): `keep_occluders` (optional) keeps rim-like lines of the target's eye region (thin, clearly
  darker than their surroundings, long, and not in the warped source) in front of the swapped face; the source's
  frames are left out with its hair (source_skin.py) unless `remove_source_glasses` is off.

Everything runs on the face's bounding region of the crop; pixels where the returned alpha is 0 are the input
crop's, bit for bit. What only the code tunes is `MeshTuning` (tuning.py).
"""
from __future__ import annotations

from slimfuse.processors.mesh_swap.eyes import EyeLandmarker
from slimfuse.processors.mesh_swap.source import SourceFace
from slimfuse.processors.mesh_swap.swapper import MeshSwapper, SwapLayers
from slimfuse.processors.mesh_swap.tuning import MeshTuning

__all__ = ["EyeLandmarker", "MeshSwapper", "MeshTuning", "SourceFace", "SwapLayers"]
