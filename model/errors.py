"""The model package's errors, in a module of their own so every other module can raise them."""


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, truncated, not ours, or incompatible; the message names the file."""


class RecognizerConfigError(ValueError):
    """A recognizer config with an unknown kind, an unknown key for its kind, or an impossible value."""
