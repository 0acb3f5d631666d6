"""The PosFormer recognizer, whole: its config and class (recognizer.py) and the parts only it uses."""
from .recognizer import PosFormer, PosFormerConfig

__all__ = ["PosFormer", "PosFormerConfig"]
