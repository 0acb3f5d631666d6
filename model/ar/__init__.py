"""The AR baseline recognizer, whole: its config and class (recognizer.py) and the parts only it uses."""
from .recognizer import ARConfig, ARRecognizer

__all__ = ["ARConfig", "ARRecognizer"]
