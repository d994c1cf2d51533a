"""The `auto` representation: which way to hold each kernel matrix within a memory budget.

:func:`choose_representation` is a pure function of n, the number of distinct kernel matrices G
(``tied`` / ``semi`` sharing: 1; ``separate``: C; groups: their number), the kernel and the budget:

1. the linear kernel: ``features`` (X (X^T B), exact, never forms M), unless a stored M fits the budget
   and one product with it costs less (:mod:`gpmodels.kernels.product_cost`: bytes and flops for X's
   n, d, nnz and the product's number of columns, given as ``linear_shape``); the reason gives both costs;
2. ``stored`` float64 if G n^2 8 bytes fit in the budget;
3. ``stored`` float32 if G n^2 4 bytes fit (exact up to one float32 rounding of M's entries);
4. with ``allow_lowrank``: ``lowrank`` (an approximation, so only when the user allows it) if
   G n (rank + 2) 8 bytes fit;
5. ``blocked`` (exact; M recomputed at every MVM, about n^2 kernel evaluations each) if
   n <= ``blocked_max_n``;
6. otherwise an :class:`~gpmodels.errors.InputError` naming the memory needed and the options,
   rather than a run that swaps the machine to death.

An explicit ``dtype`` restricts step 2-3 to that storage type.  The default budget is
:data:`SAFETY_FRACTION` of the memory the machine has available now (``MemAvailable`` of
/proc/meminfo, else psutil): the rest is for X, the (n, C) vectors of Newton–CG, cross blocks of
predictions and the other processes.
"""

from __future__ import annotations

import attrs

from gpmodels.errors import InputError
from gpmodels.kernels.product_cost import ProductRates, features_cost, stored_cost

__all__ = [
    "RepresentationChoice",
    "choose_representation",
    "stored_choice",
    "available_memory_bytes",
    "default_budget_bytes",
    "SAFETY_FRACTION",
    "format_bytes",
    "LinearShape",
    "linear_choice",
]

#: the fraction of the available memory that the default budget takes
SAFETY_FRACTION = 0.7
GIB = 2**30


def available_memory_bytes() -> int | None:
    """Bytes of memory available now (/proc/meminfo MemAvailable, else psutil); None if unknown."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().available)


def default_budget_bytes() -> int:
    avail = available_memory_bytes()
    if avail is None:
        raise InputError(
            "the machine's available memory cannot be read (no /proc/meminfo, no psutil); give representation.memory_gb"
        )
    return int(SAFETY_FRACTION * avail)


@attrs.frozen
class RepresentationChoice:
    """What `auto` (or an explicit kind) picked for one kernel matrix, and why."""

    kind: str
    dtype: str
    reason: str
    bytes_per_matrix: int
    n_matrices: int
    budget_bytes: int | None
    #: where the matrix lives: ``cpu``, or the device representation's device (its backend's label)
    device: str = "cpu"

    def label(self) -> str:
        return f"{self.kind}-{self.dtype}" if self.kind == "stored" else self.kind

    def describe(self) -> str:
        return f"{self.label()}: {self.reason}"

    def as_dict(self) -> dict:
        return attrs.asdict(self) | {"label": self.label()}


def format_bytes(b: float) -> str:
    """A byte count for people: ``512 bytes``, ``39.1 KiB``, ``150 MiB``, ``16.2 GiB`` (3 significant digits)."""
    for unit, size in (("GiB", GIB), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= size:
            return f"{b / size:.3g} {unit}"
    return f"{int(b)} bytes"


_gib = format_bytes


def _nothing_fits(
    what: str, n: int, smallest: int, lowrank_need: int, rank: int, blocked_need: int, blocked_max_n: int
) -> InputError:
    """Step 6: the error that names the memory each representation needs and the settings that would allow one."""
    if n > blocked_max_n:
        why_not_blocked = (
            f"blocked (recomputing ~n^2 kernel values per MVM) is limited to n <= blocked_max_n = {blocked_max_n}"
        )
    else:
        why_not_blocked = f"blocked needs {_gib(blocked_need)} for its blocks (3 x memory_mb per matrix)"
    return InputError(
        f"representation auto: no exact representation fits ({what}): stored float32 needs {_gib(smallest)}, "
        f"and {why_not_blocked}. "
        "Allowed: raise representation.memory_gb (if the machine has the memory), set allow_lowrank: true "
        f"(low-rank approximation, needs {_gib(lowrank_need)} at rank {rank}), kind: blocked, "
        "or a larger blocked_max_n"
    )


def stored_choice(
    n: int, G: int, budget: int, dtype: str | None, what: str, device: str = "cpu"
) -> RepresentationChoice | None:
    """Steps 2-3 (module docstring): ``stored`` float64 if G n^2 8 bytes fit ``budget``, else float32 if
    G n^2 4 bytes fit; ``dtype`` restricts them to that storage type; None when neither fits."""
    for dt, size in (("float64", 8), ("float32", 4)):
        need = G * n * n * size
        if dtype in (None, dt) and need <= budget:
            reason = f"{G} x n^2 x {size} bytes = {_gib(need)} fits the budget ({what})"
            return RepresentationChoice("stored", dt, reason, n * n * size, G, budget, device)
    return None


@attrs.frozen
class LinearShape:
    """What the linear kernel's choice costs a product by: X's columns d, stored entries nnz (n d when
    dense), sparsity, and the number of columns of one product."""

    d: int
    nnz: int
    sparse: bool
    columns: int = 1


def linear_choice(
    n: int, G: int, budget: int, dtype: str | None, what: str, shape: LinearShape | None, rates: ProductRates
) -> RepresentationChoice:
    """Step 1 (module docstring): ``features`` unless a stored M fits and costs less per product."""
    feature_dtype = "float32" if dtype == "float32" and shape is not None and shape.sparse else "float64"
    if shape is None:
        return RepresentationChoice(
            "features", feature_dtype, f"linear kernel: X (X^T B), M never formed ({what})", 0, G, budget
        )
    feat = features_cost(
        n, shape.d, shape.nnz, shape.columns, sparse=shape.sparse, itemsize=4 if feature_dtype == "float32" else 8
    )
    stored = stored_choice(n, G, budget, dtype, what)
    costs = f"{shape.columns} columns, d = {shape.d}, nnz = {shape.nnz}"
    if stored is None:
        reason = f"linear kernel: X (X^T B) ({feat.describe(rates)}); a stored M does not fit ({costs}; {what})"
        return RepresentationChoice("features", feature_dtype, reason, 0, G, budget)
    gram = stored_cost(n, shape.columns, itemsize=4 if stored.dtype == "float32" else 8)
    if gram.seconds(rates) < feat.seconds(rates):
        reason = f"linear kernel, a product costs less stored: {gram.describe(rates)} against {feat.describe(rates)} "
        return attrs.evolve(stored, reason=reason + f"({costs}); {stored.reason}")
    reason = f"linear kernel, a product costs less as X (X^T B): {feat.describe(rates)} against {gram.describe(rates)}"
    return RepresentationChoice("features", feature_dtype, f"{reason} ({costs}; {what})", 0, G, budget)


def choose_representation(
    n: int,
    n_matrices: int,
    *,
    linear: bool,
    budget_bytes: int,
    dtype: str | None,
    allow_lowrank: bool,
    rank: int,
    blocked_max_n: int,
    blocked_memory_mb: float,
    linear_shape: LinearShape | None = None,
    rates: ProductRates | None = None,
) -> RepresentationChoice:
    """The `auto` choice (module docstring, steps 1-6) for G = ``n_matrices`` kernel matrices over n points;
    ``linear_shape`` / ``rates``: what step 1 costs a product by (None: ``features`` uncosted)."""
    G, budget = max(1, n_matrices), budget_bytes
    what = f"n = {n}, {G} kernel matri{'x' if G == 1 else 'ces'}, budget {_gib(budget)}"
    if linear:
        return linear_choice(n, G, budget, dtype, what, linear_shape, rates or ProductRates())
    stored = stored_choice(n, G, budget, dtype, what)
    if stored is not None:
        return stored
    smallest = G * n * n * (4 if dtype in (None, "float32") else 8)
    lowrank_need = G * n * (min(rank, n) + 2) * 8
    if allow_lowrank and lowrank_need <= budget:
        return RepresentationChoice(
            "lowrank",
            "float64",
            f"stored needs {_gib(smallest)} > budget; low-rank "
            f"rank <= {rank} needs {_gib(lowrank_need)} ({what}; allow_lowrank is set)",
            lowrank_need // G,
            G,
            budget,
        )
    blocked_need = G * int(3 * blocked_memory_mb * 2**20)
    if n <= blocked_max_n and blocked_need <= budget:
        return RepresentationChoice(
            "blocked",
            "float64",
            f"stored needs {_gib(smallest)} > budget; blocked "
            f"recomputes M at every MVM (n <= blocked_max_n = {blocked_max_n}; {what})",
            blocked_need // G,
            G,
            budget,
        )
    raise _nothing_fits(what, n, smallest, lowrank_need, rank, blocked_need, blocked_max_n)
