"""Max-margin baselines (Crammer–Singer, H-M^3)."""

__all__: list[str] = []
