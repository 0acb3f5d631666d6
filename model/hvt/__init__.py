"""The HVT recognizer, whole: its config and class (recognizer.py) and the parts only it uses."""
from .recognizer import HVT, HVTConfig

__all__ = ["HVT", "HVTConfig"]
