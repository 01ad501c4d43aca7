"""Model-side optimisation: reduced-precision and quantised variants of ONNX models, checked by a quality gate.

fp16 (float16 conversion), quantize (int8 and ONNX Runtime's offline graph), calibration (the real faces),
subjects and metrics (what a model sees and how variants are compared), gate (the verdict), build (make, gate
and store a variant: `slimfuse optimize`).
"""
