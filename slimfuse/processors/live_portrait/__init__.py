"""The processors that run the live_portrait model set (slimfuse.models.neural.live_portrait): the expression
restorer and the face editor. Both cut the face at 512 px, read its motion (head pose, expression, keypoints) at
256 px, move the keypoints and let the generator redraw the face from its own appearance features."""
