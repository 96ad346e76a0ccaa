"""An assertion over :func:`veritas_dsl.model.parity.compare` with a readable failure."""

from __future__ import annotations

from veritas_dsl.model import Ensemble
from veritas_dsl.model.parity import compare


def assert_parity(model: Ensemble, expected_fn, points: dict, tolerance: float = 1e-5) -> float:
    """Assert ``model.eval`` matches ``expected_fn`` on every point; return the worst error."""
    report = compare(model, expected_fn, points, tolerance)
    assert report.ok, (
        f"{report.mismatches} of {report.points} points differ; first at "
        f"{report.first_mismatch.tolist()}; worst relative error {report.worst_error:.3g}"
    )
    return report.worst_error
