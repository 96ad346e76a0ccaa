"""The one error type of the model layer."""

from veritas_dsl.errors import UserError


class ModelError(UserError, ValueError):
    """A model cannot be imported or evaluated faithfully; the message says what and where."""
