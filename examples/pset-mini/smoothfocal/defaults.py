"""Default hyper-parameters of SmoothFocal."""

DEFAULT_SMOOTHING = 0.1
DEFAULT_GAMMA = 2.0
IGNORE_INDEX = -100
