"""The linear kernel's two exact forms costed per product: X (X^T B) against a stored Gram matrix M = X X^T.

For X (n, d) with nnz stored entries (n d when dense) and B (n, k) in the row-major latent layout:

- ``features`` (Seeger 2008, App. D.3): two products, X^T B then X (X^T B).  Sparse X: every stored entry
  reads one row of the dense operand (k numbers, itemsize s: 8, or 4 with float32 storage) and adds it
  into an output row, so each product moves nnz (s + 4) bytes of X, nnz k s bytes of operand rows and
  writes its output (d k s, then n k 8), for 2 nnz k multiply-adds.  Dense X: two GEMMs, 4 n d k flops,
  X read twice.
- ``stored``: M read once per product (n^2 s_M bytes; a GEMM passes over it once for all k columns),
  B read and the output written (16 n k), 2 n^2 k flops; and M must fit the memory budget (n^2 s_M).

The time of a product is taken as max(bytes / bandwidth, flops / flop rate) with the rates of
:class:`ProductRates`; the form with the smaller time wins, and the reason records both figures.  Building
M (one sparse X X^T, once) is not charged: the Newton–CG and CV loops run hundreds of products.

With section B of WIPO-alpha (n = 9794, d = 30 000, ~150 entries per row, k = 1319): features moves about
2 x 1.5e6 x 1319 x 8 B = 31 GB (3 s at 10 GB/s) for 7.7 GFlop, stored needs 2 n^2 k = 253 GFlop (5 s at
50 GFlop/s): features.  Dense-ish rows (nnz per row above about n / 40 at these rates) make stored
cheaper at many columns, and so does a small n with long rows at few columns.
"""

from __future__ import annotations

import attrs

from gpmodels.validation import positive_number

__all__ = ["ProductRates", "ProductCost", "features_cost", "stored_cost"]


@attrs.frozen
class ProductRates:
    """Memory bandwidth (bytes/s) and floating-point rate (flops/s) the choice is costed with.  Only their
    ratio matters to the choice; the defaults are of a 2-core server of 2024 (bench/sparse_products.py
    measures this machine's bandwidth)."""

    bandwidth: float = attrs.field(default=10e9, validator=positive_number())
    flops: float = attrs.field(default=50e9, validator=positive_number())


@attrs.frozen
class ProductCost:
    """Bytes moved and flops of one product, and its time at given rates."""

    kind: str
    bytes: float
    flops: float

    def seconds(self, rates: ProductRates) -> float:
        return max(self.bytes / rates.bandwidth, self.flops / rates.flops)

    def describe(self, rates: ProductRates) -> str:
        return (
            f"{self.kind} {self.bytes / 1e9:.3g} GB, {self.flops / 1e9:.3g} GFlop, "
            f"~{self.seconds(rates) * 1e3:.3g} ms per product"
        )


def features_cost(n: int, d: int, nnz: int, columns: int, *, sparse: bool, itemsize: int = 8) -> ProductCost:
    """One product X (X^T B) with B (n, ``columns``) (module docstring); ``itemsize``: storage of X and the
    intermediate on sparse X (8 or 4)."""
    k = max(1, int(columns))
    if not sparse:
        return ProductCost("features", 2.0 * 8 * n * d + 8.0 * k * (2 * n + d) + 8.0 * n * k, 4.0 * n * d * k)
    matrix = 2.0 * nnz * (itemsize + 4) + 8.0 * (n + d)
    rows = 2.0 * nnz * k * itemsize
    written = float(d * k * itemsize + n * k * 8)
    return ProductCost("features", matrix + rows + written, 4.0 * nnz * k)


def stored_cost(n: int, columns: int, *, itemsize: int = 8) -> ProductCost:
    """One product M B with a stored n x n matrix and B (n, ``columns``) (module docstring)."""
    k = max(1, int(columns))
    return ProductCost("stored", float(n) * n * itemsize + 16.0 * n * k, 2.0 * n * n * k)
