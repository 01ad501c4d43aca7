"""Batch work: many targets with one set of models, a resume journal, long videos in keyframe segments on several
processes, and Ray for more than one machine (`slimfuse swap -t DIR`, `slimfuse batch MANIFEST`)."""
