"""Unlearning: forests that forget training rows, and what a deletion changed."""

from veritas_dsl.model.dare import DareForest

__all__ = ["DareForest"]
