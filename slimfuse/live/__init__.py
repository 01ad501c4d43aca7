"""Live mode: camera and stream inputs and outputs, the latest-frame loop, the latency ladder."""
