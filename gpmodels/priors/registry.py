"""Registration point for priors usable from specs.

A spec names its prior in ``model.prior``.  The name is resolved here to a **builder**:

    builder(context: PriorContext) -> prior factory        (an object with ``operator(X, n_classes)``)

The built-in priors (``independent``, ``anova``, ``coupled``, ``loadings``) are a fixed table here,
:data:`BUILTIN_BUILDERS`, of import paths of the builders defined next to the priors
(``gpmodels.priors.independent:build_independent``, ...), imported when first resolved: nothing
has to be imported for them to be known, and this module imports nothing from the package above
``gpmodels.errors``.  User priors are registered by name::

    from gpmodels.priors import register_prior
    register_prior("class_similarity", build_class_similarity)

A spec may also name a builder by its import path, ``model.prior: "package.module:builder"``
(``module:Class.method`` works too).  Importing a module runs its code, so a path named by a file
(a spec, a model folder's ``spec.resolved.yaml``) is imported only when the user opted in for that
module: ``--allow-import package`` on the command line, ``allow_import=("package",)`` in Python
(``load_spec``, ``spec_from_dict``, ``run_spec``, ``load_model``).  An allowed name covers the module
and its sub-modules (``package`` allows ``package.module``).  Without the opt-in the path is checked
for its syntax only and resolving it is a SpecError; the path of a *registered* builder needs no
opt-in (it is matched against the registry, nothing is imported).  Free-form
``model.prior_options`` reach the builder as ``context.options``.

Unknown names raise :class:`SpecError` listing the registered ones, with the nearest name for a typo.
"""

from __future__ import annotations

import difflib
import importlib
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from gpmodels.errors import SpecError
from gpmodels.errors import shown as _shown

__all__ = [
    "PriorContext",
    "register_prior",
    "unregister_prior",
    "registered_priors",
    "resolve_prior",
    "is_import_path",
    "is_known_prior",
    "import_path_of",
    "unknown_prior_message",
    "BUILTIN_PRIORS",
    "check_allow_import",
    "import_allowed",
    "BUILTIN_BUILDERS",
]

#: name -> import path of the builder, next to the prior it builds; cannot be replaced or removed
BUILTIN_BUILDERS = {
    "independent": "gpmodels.priors.independent:build_independent",
    "anova": "gpmodels.priors.anova:build_anova",
    "coupled": "gpmodels.priors.coupled:build_coupled",
    "loadings": "gpmodels.priors.coupled:build_coupled",
}
BUILTIN_PRIORS = tuple(BUILTIN_BUILDERS)
#: where a spec's prior is named, for error messages
KEY = "model.prior"
OPTIONS_KEY = "model.prior_options"

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")
_MODULE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")

Builder = Callable[["PriorContext"], Any]
_REGISTRY: dict[str, Builder] = {}


@attrs.frozen(eq=False)
class PriorContext:
    """What a builder gets from the spec.

    ``name``: ``model.prior`` as written; ``options``: ``model.prior_options`` (a plain dict, empty
    when absent); ``model``: the whole ``model`` section (``w: auto`` already resolved), for builders
    that read ``variance``, ``sigma2``, ``sharing``, ...; ``kernel``: the :class:`Kernel` built from
    ``model.kernel``; ``representation``: the :class:`RepresentationConfig` of
    ``model.representation``; ``X_train``: the (scaled) training inputs; ``tree``: the class tree
    (:class:`ClassTree`) when the data have one, else None; ``base_dir``: the spec's folder, for
    relative file names in the options.
    """

    name: str
    options: Mapping[str, Any]
    model: Any
    kernel: Any
    representation: Any
    X_train: Any
    tree: Any = None
    base_dir: Path | None = None

    def require_tree(self):
        """The class tree, or a SpecError saying that this prior needs one."""
        if self.tree is None:
            raise SpecError(
                f"prior {self.name!r} needs a class hierarchy: set `data.hierarchy` (parent<TAB>child "
                "lines whose leaves are the classes) or use a named data set that has one",
                KEY,
            )
        return self.tree

    def options_with_defaults(self, defaults: Mapping[str, Any]) -> dict:
        """``options`` over ``defaults``; a key not in ``defaults`` is a SpecError naming the nearest."""
        for key in self.options:
            if key not in defaults:
                near = difflib.get_close_matches(str(key), list(defaults), n=1, cutoff=0.6)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                allowed = ", ".join(defaults) or "none"
                raise SpecError(
                    f"unknown option {key!r} of prior {self.name!r}{hint} (allowed: {allowed})", f"{OPTIONS_KEY}.{key}"
                )
        return {**defaults, **self.options}

    def variance(self):
        """``model.variance`` as the priors take it: a number, or a list of per-class values."""
        v = self.model.variance
        return list(v) if isinstance(v, tuple) else v


def register_prior(name: str, builder: Builder, *, replace: bool = False) -> Builder:
    """Make ``builder`` usable as ``model.prior: name``; returns the builder (usable as a decorator's body).

    Registering the same builder again is a no-op (a module imported twice); another builder under
    a taken name needs ``replace=True``.  Built-in names cannot be replaced.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"a prior name is a letter or _ followed by letters, digits, _ or -; got {name!r} "
            "(import paths 'module:builder' need no registration)"
        )
    if not callable(builder):
        raise TypeError(f"the builder of prior {name!r} must be callable; got {type(builder).__name__}")
    if name in BUILTIN_BUILDERS:
        if builder is not _builtin(name):
            raise ValueError(f"{name!r} is a built-in prior and cannot be replaced; register under another name")
        return builder
    old = _REGISTRY.get(name)
    if old is not None and old is not builder and not replace:
        raise ValueError(f"prior {name!r} is already registered (to {_describe(old)}); pass replace=True")
    _REGISTRY[name] = builder
    return builder


def unregister_prior(name: str) -> None:
    """Remove a user prior (built-ins stay)."""
    if name in BUILTIN_PRIORS:
        raise ValueError(f"{name!r} is a built-in prior and cannot be removed")
    _REGISTRY.pop(name, None)


def registered_priors() -> tuple[str, ...]:
    """Registered names: the built-ins first, then user priors in registration order."""
    return BUILTIN_PRIORS + tuple(_REGISTRY)


def is_import_path(name: str) -> bool:
    """Whether ``name`` has the form ``package.module:attribute``."""
    return len(name) <= 200 and bool(_IMPORT_PATH.match(name))


def is_known_prior(name: str) -> bool:
    """A built-in or registered name, or something shaped like an import path (imported only by resolve_prior)."""
    return name in BUILTIN_PRIORS or name in _REGISTRY or is_import_path(name)


def check_allow_import(allow_import) -> tuple[str, ...]:
    """``allow_import`` as a tuple of module names (a single string is one name); ValueError for anything else."""
    if allow_import is None:
        return ()
    if isinstance(allow_import, str):
        allow_import = (allow_import,)
    out = tuple(allow_import)
    for name in out:
        if not isinstance(name, str) or not _MODULE.match(name):
            raise ValueError(f"allow_import takes module names such as 'mypkg' or 'mypkg.priors'; got {name!r}")
    return out


def import_allowed(module: str, allow_import=()) -> bool:
    """Whether ``module`` is one of ``allow_import`` or a sub-module of one (``a`` allows ``a`` and ``a.b``)."""
    return any(module == a or module.startswith(a + ".") for a in check_allow_import(allow_import))


def _registered_path(path: str) -> Builder | None:
    """The built-in or registered builder whose ``module:qualname`` is ``path`` (found without importing
    anything but the built-in prior modules)."""
    for name, builtin in BUILTIN_BUILDERS.items():
        if builtin == path:
            return _builtin(name)
    for builder in _REGISTRY.values():
        if f"{getattr(builder, '__module__', '')}:{getattr(builder, '__qualname__', '')}" == path:
            return builder
    return None


def resolve_prior(name: str, key: str = KEY, *, allow_import=()) -> Builder:
    """The builder of a registered name, or of an import path ``module:attribute``.

    A path whose builder is registered resolves to it without an import; any other path is imported
    only when its module is in ``allow_import`` (see the module docstring), else SpecError."""
    if name in BUILTIN_BUILDERS:
        return _builtin(name)
    if name in _REGISTRY:
        return _REGISTRY[name]
    if ":" in name:
        if not is_import_path(name):
            raise SpecError(f"{_shown(name)} is not an import path of the form 'package.module:builder'", key)
        registered = _registered_path(name)
        if registered is not None:
            return registered
        module = name.split(":")[0]
        if not import_allowed(module, allow_import):
            raise SpecError(
                f"{name!r} names a Python module; importing code named by a spec needs --allow-import "
                f"{module} (in Python: allow_import=({module!r},)), or register the builder with "
                "gpmodels.priors.register_prior",
                key,
            )
        return _import(name, key)
    raise SpecError(unknown_prior_message(name), key)


def _builtin(name: str) -> Builder:
    return _import(BUILTIN_BUILDERS[name], KEY)


def unknown_prior_message(name: str) -> str:
    names = registered_priors()
    near = difflib.get_close_matches(name[:200], names, n=1)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return (
        f"unknown prior {_shown(name)}{hint} (registered: {', '.join(names)}; or 'package.module:builder' "
        "for a builder imported by path, see docs/extending.md)"
    )


def _import(path: str, key: str) -> Builder:
    if not is_import_path(path):
        raise SpecError(f"{path!r} is not an import path of the form 'package.module:builder'", key)
    module_name, attr = path.split(":")
    try:
        obj = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(
            f"cannot import module {module_name!r} of prior {path!r}: {exc} (is it on PYTHONPATH / installed?)", key
        ) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise SpecError(f"module {module_name!r} has no attribute {attr!r} (prior {path!r})", key)
        obj = getattr(obj, part)
    if not callable(obj):
        raise SpecError(f"{path!r} is a {type(obj).__name__}, not a builder (a callable taking a PriorContext)", key)
    return obj


def import_path_of(builder: Builder) -> str | None:
    """``module:qualname`` of ``builder`` when importing that path gives back the same object, else None.

    Used to write a registered user prior into ``spec.resolved.yaml`` so that a saved model can be
    rebuilt in a process that never registered it.
    """
    module, qualname = getattr(builder, "__module__", None), getattr(builder, "__qualname__", None)
    if not module or not qualname or "<" in qualname or module == "__main__":
        return None
    path = f"{module}:{qualname}"
    if not is_import_path(path):
        return None
    try:
        found = _import(path, KEY)
    except SpecError:
        return None
    return path if found is builder else None


def _describe(builder) -> str:
    return import_path_of(builder) or repr(builder)
