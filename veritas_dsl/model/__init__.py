"""The model layer: :class:`Ensemble` and one importer per library."""

from veritas_dsl.model.ensemble import Ensemble, ModelError
from veritas_dsl.model.library import LibraryModel
from veritas_dsl.model.load import FORMATS, load_model

__all__ = ["FORMATS", "Ensemble", "LibraryModel", "ModelError", "load_model"]
