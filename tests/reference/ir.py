"""Shorthands for building IR queries in tests."""

from __future__ import annotations

import math

from veritas_dsl.ir import DomainKind, Feature, OutputAtom, OutputTerm


def out(instance="x", model="m", coef=1.0, output=0) -> OutputAtom:
    """``coef * model(instance)[output]``."""
    return OutputAtom(coef, model, instance, output)


def term(*atoms, constant=0.0) -> OutputTerm:
    return OutputTerm(tuple(atoms), constant)


def features(names, kinds=None, bounds=None) -> tuple[Feature, ...]:
    """Features by name (or the names of a model), real and unbounded unless told otherwise."""
    names = list(getattr(names, "feature_names", names))
    kinds = kinds or [DomainKind.REAL] * len(names)
    bounds = bounds or [(-math.inf, math.inf)] * len(names)
    return tuple(
        Feature(name, kind, lo, hi)
        for name, kind, (lo, hi) in zip(names, kinds, bounds, strict=True)
    )
