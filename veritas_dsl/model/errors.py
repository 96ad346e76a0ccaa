"""The one error type of the model layer."""


class ModelError(ValueError):
    """A model cannot be imported or evaluated faithfully; the message says what and where."""
