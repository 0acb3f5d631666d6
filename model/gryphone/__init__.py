"""The GryphOne recognizer, whole: its config and class (recognizer.py) and the parts only it uses."""
from .recognizer import GryphOne, GryphOneConfig

__all__ = ["GryphOne", "GryphOneConfig"]
