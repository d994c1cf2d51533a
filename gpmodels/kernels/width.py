"""The width of the stationary kernels: w = 1/ℓ², given as ``w``, as the length-scale ``length_scale`` ℓ,
or as ``'auto'``.

RBF / ARD, Matérn and rational quadratic kernels scale the squared distance by the inverse squared
length-scale w = 1/ℓ² (Seeger 2008, eq. 7; one w_j = 1/ℓ_j² per input dimension for ARD).  Their
constructors take either ``w`` or ``length_scale`` (scikit-learn's name), never both; the kernel stores w
and derives ℓ = 1/√w (``length_scale``), and its repr shows both.  Given neither, the width is ``'auto'``:
w = 1 / Σ_j Var[x_j] of the training inputs (Seeger 2008, Sec. 6.2; the default prior's width), set when
the kernel meets them (:func:`~gpmodels.kernels.auto_width.resolve_widths`, which the priors and the
estimators call when they build their operator; a fitted estimator's ``kernel_`` records the value).
"""

from __future__ import annotations

import attrs
import numpy as np

from gpmodels.data.scaling import auto_rbf_w
from gpmodels.errors import InputError
from gpmodels.validation import Validator

__all__ = ["AUTO", "Width", "WidthValue", "length_scale_field", "is_auto"]

#: the width set from the training inputs
AUTO = "auto"


def is_auto(w) -> bool:
    return isinstance(w, str) and w == AUTO


@attrs.frozen
class WidthValue(Validator):
    """attrs validator of ``w``: None (not given), ``'auto'``, or what ``inner`` allows (a positive
    number; for ARD a 1-D array of them)."""

    inner: Validator

    def describe(self) -> str:
        return f"{self.inner.describe()} or 'auto'"

    def allows(self, value) -> bool:
        return value is None or is_auto(value) or self.inner.allows(value)


def length_scale_field(converter, validator):
    """The ``length_scale`` argument of a width kernel: keyword only, stored only until ``w`` is derived
    from it (the attrs field ``_length_scale``; the value is the property ``length_scale``)."""
    return attrs.field(
        default=None, kw_only=True, converter=converter, validator=validator, repr=False, metadata={"spec": False}
    )


class Width:
    """Mixin of the width kernels (module docstring): ``w`` or ``length_scale`` or ``'auto'``; a subclass
    declares the attrs fields ``w`` (validator :class:`WidthValue`) and ``_length_scale``
    (:func:`length_scale_field`)."""

    #: setting ``length_scale`` (``set_params``) drops the w it replaces
    replaces = {"length_scale": ("w",)}
    #: one w for all input dimensions (True) or one w_j per dimension (ARD)
    isotropic: bool

    def __attrs_post_init__(self):
        w, scale = self.w, self._length_scale
        if scale is not None:
            if w is not None:
                raise InputError(
                    f"{type(self).__name__} takes w or length_scale (w = 1/length_scale²), not both; "
                    f"got w={w!r} and length_scale={scale!r}"
                )
            w = 1.0 / (scale * scale) if self.isotropic else 1.0 / np.square(scale)
        object.__setattr__(self, "w", AUTO if w is None else w)
        object.__setattr__(self, "_length_scale", None)

    @property
    def length_scale(self):
        """ℓ = 1/√w (one per input dimension for ARD); ``'auto'`` until the width is set."""
        if is_auto(self.w):
            return AUTO
        return float(1.0 / np.sqrt(self.w)) if self.isotropic else 1.0 / np.sqrt(self.w)

    def require_width(self) -> None:
        """Raise unless the width has a value (``resolve_widths`` of :mod:`gpmodels.kernels.auto_width` sets
        ``'auto'``)."""
        if is_auto(self.w):
            raise InputError(
                f"{type(self).__name__}(w='auto') has no width until it meets the training inputs "
                "(w = 1 / Σ_j Var[x_j], set by gpmodels.kernels.auto_width.resolve_widths(kernel, X), which the priors "
                "and estimators call); give w or length_scale for a kernel used on its own"
            )

    @property
    def params(self) -> np.ndarray:
        self.require_width()
        return super().params

    def check_inputs(self, X) -> None:
        self.require_width()
        super().check_inputs(X)

    def at_width_of(self, X):
        """This kernel with an ``'auto'`` width set from the training inputs X (itself otherwise)."""
        if not is_auto(self.w):
            return self
        w = auto_rbf_w(X)
        return attrs.evolve(self, w=w if self.isotropic else np.full(X.shape[1], w))

    def __repr__(self) -> str:
        parts = []
        for field in attrs.fields(type(self)):
            if field.repr:
                parts.append(f"{field.name}={getattr(self, field.name)!r}")
                if field.name == "w" and not is_auto(self.w):
                    parts.append(f"length_scale={self.length_scale!r}")
        return f"{type(self).__name__}({', '.join(parts)})"
