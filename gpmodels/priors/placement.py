"""Where a prior's kernel matrices live: the ``device`` of its
:class:`~gpmodels.kernels.representations.RepresentationConfig`.

``GPClassifier(device=...)`` asks a prior for the same prior on a device through
:meth:`DevicePlacement.on_device`, declared by the priors that own a ``representation`` (independent,
ANOVA, coupled) and by a learned prior (:class:`~gpmodels.priors.learned.LearnedPrior`, through the
prior it wraps).
"""

from __future__ import annotations

import attrs

from gpmodels.errors import InputError
from gpmodels.kernels.representations import DEVICES, RepresentationConfig

__all__ = ["DevicePlacement"]


class DevicePlacement:
    """Mixin of an attrs prior with a ``representation`` field: the prior with its kernel matrices on a device."""

    __slots__ = ()

    @property
    def device(self) -> str:
        """``cpu``, ``cuda`` or ``auto``: where the representation puts the kernel matrices."""
        rep = self.representation
        return rep.device if isinstance(rep, RepresentationConfig) else "cpu"

    def on_device(self, device: str):
        """This prior with ``representation.device = device`` (one of ``cpu``, ``cuda``, ``auto``)."""
        if device not in DEVICES:
            raise InputError(f"device must be one of {DEVICES}; got {device!r}")
        rep = self.representation
        if not isinstance(rep, RepresentationConfig):
            raise InputError(
                f"{type(self).__name__}'s representation is a {type(rep).__name__}, which places its "
                "matrices itself; a device is set on a RepresentationConfig (its device field)"
            )
        return attrs.evolve(self, representation=attrs.evolve(rep, device=device))
