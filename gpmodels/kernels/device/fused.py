"""Fused device products in Triton: what the array-API tiles of :mod:`gpmodels.kernels.device.gram`
do in several passes over device memory, done in one.

- :meth:`FusedProducts.mixed_matmul`: O = float64(M) B for M stored in float32 (or float64, a stack of
  matrices: :mod:`gpmodels.kernels.device.stack`) and B, O in float64.  Each program
  reads a (BM, BK) tile of M once, widens it to float64 in registers and accumulates M B in float64
  (the App. D.1 mixed-precision scheme of :class:`~gpmodels.kernels.stored_gram.StoredGram`), so
  the product moves n1 n2 4 bytes of M and nothing else of size n1 n2: the array-API path writes and
  reads a float64 copy of every row tile (20 bytes per entry instead of 4).
- :meth:`FusedProducts.form_matmul`: O = g(D(Z_a, Z_b)) B for a recomputed kernel block (KeOps-style): per
  (BM, BK) tile, D = |z_a|^2 + |z_b|^2 - 2 Z_a Z_b^T by a float64 dot over the padded inputs, the
  profile g in registers, then the tile's product with B into a float64 accumulator.  No n1 x n2
  array touches device memory, so a product reads only Z (n x d) and B; its cost is the n1 n2
  exponentials (one per entry for all m columns of B) and the two dots.

Both run on a CUDA device through PyTorch tensors; with ``TRITON_INTERPRET=1`` set before this
module is imported, Triton's interpreter runs them on CPU tensors (the tests).  Without Triton
:data:`AVAILABLE` is False and the device representations keep their array-API products.

The profiles (``KIND``, a :class:`~gpmodels.kernels.device.forms.FusedProfile`) are those of
:mod:`gpmodels.kernels.device.forms`: Gaussian exp(-D/2);
Matérn ν = 1/2, 3/2, 5/2 (R&W eq. 4.14-4.17); rational quadratic (1 + D/(2α))^{-α} (R&W eq. 4.19).
Profiles with a kink at D = 0 read D with the entries at or below ``SNAP_RTOL`` (|z_a|^2 + |z_b|^2)
set to 0, as the array-API tiles do.
"""

from __future__ import annotations

from gpmodels.errors import DeviceError
from gpmodels.kernels.device.forms import FusedProfile
from gpmodels.kernels.stationary import SNAP_RTOL

try:
    import triton
    import triton.language as tl
except ImportError:  # the cuda extra without Triton: array-API products only
    triton = None

__all__ = ["AVAILABLE", "FusedProducts", "FUSED_MIN_ENTRIES"]

AVAILABLE = triton is not None


if AVAILABLE:

    @triton.jit
    def _mixed_matmul_kernel(
        M,
        B,
        O,
        n1,
        n2,
        m,
        s_br,
        s_or,
        s_mr,
        s_mc,
        s_mg,
        s_bg,
        s_og,
        BM: tl.constexpr,
        BK: tl.constexpr,
        BN: tl.constexpr,
    ):
        g = tl.program_id(2).to(tl.int64)  # the matrix of a stack (s_*g: its strides; 0 for one matrix)
        M, B, O = M + g * s_mg, B + g * s_bg, O + g * s_og
        rows = tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM)  # 64-bit offsets: n1 n2 > 2^31
        cols = tl.program_id(1) * BN + tl.arange(0, BN)
        rmask, cmask = rows < n1, cols < m
        acc = tl.zeros((BM, BN), dtype=tl.float64)
        for k0 in range(0, n2, BK):
            ks = k0 + tl.arange(0, BK).to(tl.int64)
            kmask = ks < n2
            a = tl.load(M + rows[:, None] * s_mr + ks[None, :] * s_mc, mask=rmask[:, None] & kmask[None, :], other=0.0)
            b = tl.load(B + ks[:, None] * s_br + cols[None, :], mask=kmask[:, None] & cmask[None, :], other=0.0)
            acc = tl.dot(a.to(tl.float64), b, acc, out_dtype=tl.float64)
        tl.store(O + rows[:, None] * s_or + cols[None, :], acc, mask=rmask[:, None] & cmask[None, :])

    _GAUSSIAN = tl.constexpr(FusedProfile.GAUSSIAN)
    _MATERN_12 = tl.constexpr(FusedProfile.MATERN_12)
    _MATERN_32 = tl.constexpr(FusedProfile.MATERN_32)
    _MATERN_52 = tl.constexpr(FusedProfile.MATERN_52)

    @triton.jit
    def _profile(D, scale, param, snap_rtol, KIND: tl.constexpr):
        if KIND == _GAUSSIAN:
            M = tl.exp(tl.maximum(D, 0.0) * -0.5)
        else:
            D = tl.where(D <= scale * snap_rtol, 0.0, D)
            if KIND == _MATERN_12:
                M = tl.exp(-tl.sqrt(D))
            elif KIND == _MATERN_32:
                s = tl.sqrt(D * 3.0)
                M = (1.0 + s) * tl.exp(-s)
            elif KIND == _MATERN_52:
                s = tl.sqrt(D * 5.0)
                M = (1.0 + s + s * s / 3.0) * tl.exp(-s)
            else:  # rational quadratic
                M = tl.exp(tl.log(1.0 + D / (2.0 * param)) * -param)
        return M

    @triton.jit
    def _form_matmul_kernel(
        Za,
        Zb,
        Qa,
        Qb,
        B,
        O,
        n1,
        n2,
        m,
        s_br,
        s_or,
        P,
        KIND: tl.constexpr,
        DP: tl.constexpr,
        DK: tl.constexpr,
        BM: tl.constexpr,
        BK: tl.constexpr,
        BN: tl.constexpr,
    ):
        rows = tl.program_id(0).to(tl.int64) * BM + tl.arange(0, BM)
        cols = tl.program_id(1) * BN + tl.arange(0, BN)
        rmask, cmask = rows < n1, cols < m
        param, snap_rtol = tl.load(P), tl.load(P + 1)  # float64 (a Python float argument would be float32)
        qa = tl.load(Qa + rows, mask=rmask, other=0.0)
        acc = tl.zeros((BM, BN), dtype=tl.float64)
        for k0 in range(0, n2, BK):
            ks = k0 + tl.arange(0, BK).to(tl.int64)
            kmask = ks < n2
            G = tl.zeros((BM, BK), dtype=tl.float64)
            for d0 in tl.static_range(0, DP, DK):
                ds = d0 + tl.arange(0, DK)
                za = tl.load(Za + rows[:, None] * DP + ds[None, :], mask=rmask[:, None], other=0.0)
                zb = tl.load(Zb + ks[:, None] * DP + ds[None, :], mask=kmask[:, None], other=0.0)
                G = tl.dot(za, tl.trans(zb), G, out_dtype=tl.float64)
            qb = tl.load(Qb + ks, mask=kmask, other=0.0)
            scale = qa[:, None] + qb[None, :]
            Mt = _profile(scale - 2.0 * G, scale, param, snap_rtol, KIND)
            Mt = tl.where(rmask[:, None] & kmask[None, :], Mt, 0.0)
            b = tl.load(B + ks[:, None] * s_br + cols[None, :], mask=kmask[:, None] & cmask[None, :], other=0.0)
            acc = tl.dot(Mt, b, acc, out_dtype=tl.float64)
        tl.store(O + rows[:, None] * s_or + cols[None, :], acc, mask=rmask[:, None] & cmask[None, :])

    def _autotuned(kernel, shapes, key):
        """``kernel`` through Triton's autotuner, which times each block shape (BM, BK, warps, stages)
        once per value of ``key`` on a GPU and keeps the fastest."""
        configs = [triton.Config({"BM": bm, "BK": bk}, num_warps=w, num_stages=st) for bm, bk, w, st in shapes]
        return triton.autotune(configs=configs, key=key)(kernel)

    _MIXED_TUNED = _autotuned(
        _mixed_matmul_kernel, [(64, 64, 4, 4), (128, 32, 8, 4), (128, 64, 8, 3), (64, 128, 8, 3)], ["n2", "m", "BN"]
    )
    _FORM_TUNED = _autotuned(
        _form_matmul_kernel,
        [(64, 32, 4, 3), (64, 64, 4, 3), (128, 32, 8, 3), (128, 64, 8, 2)],
        ["n2", "m", "DP", "BN", "KIND"],
    )

#: the block shape of an untuned launch (small products, and Triton's interpreter, which cannot time)
UNTUNED = {"BM": 64, "BK": 32}
#: products of at least this many kernel entries are launched through the autotuner
TUNE_MIN_ENTRIES = 1 << 26
#: products of fewer kernel entries keep the array-API path on a GPU: Triton compiles one kernel per
#: block size and strides (about a second each, on a machine's first run), while such a product
#: takes a few launches and well under a millisecond either way (CV folds of a few thousand points)
FUSED_MIN_ENTRIES = 1 << 25


def _column_block(m: int) -> int:
    """The columns of B one program takes: the smallest power of two >= m, within [16, 64]."""
    return min(64, max(16, 1 << (m - 1).bit_length()))


class FusedProducts:
    """The fused products of one PyTorch backend (its tensors: CUDA, or CPU under Triton's interpreter).

    ``tune``: launch products of :data:`TUNE_MIN_ENTRIES` or more through Triton's autotuner (a GPU: it
    times each block shape once per problem shape), the others with the block shape :data:`UNTUNED`.
    ``min_entries``: the smallest product (n1 n2 kernel entries) the fused kernels take (:meth:`covers`);
    smaller ones stay with the array-API code.
    """

    def __init__(self, torch, tune: bool = True, min_entries: int = FUSED_MIN_ENTRIES):
        if not AVAILABLE:
            raise DeviceError("fused device products need Triton, which is not installed")
        self.torch, self.tune, self.min_entries = torch, tune, int(min_entries)

    def covers(self, n1: int, n2: int) -> bool:
        """Whether a product over an n1 x n2 kernel block is fused (at least ``min_entries`` entries)."""
        return n1 * n2 >= self.min_entries

    def _product(self, kernels, inputs: tuple, n1: int, n2: int, B, extra: tuple = (), **constants):
        """Launch one of the kernels (tuned, untuned) on ``inputs`` and B (n2, m), or a stack of G of them
        (G, n2, m) for a kernel that takes the stack's strides: O (n1, m) or (G, n1, m) float64."""
        tuned, raw = kernels
        B = B.contiguous()
        m, G = B.shape[-1], (B.shape[0] if B.ndim == 3 else 1)
        O = self.torch.empty((*B.shape[:-2], n1, m), dtype=self.torch.float64, device=B.device)
        BN = _column_block(m)

        def grid(meta):
            return (triton.cdiv(n1, meta["BM"]), triton.cdiv(m, BN), G)

        args = (*inputs, B, O, n1, n2, m, B.stride(-2), O.stride(-2), *extra)
        if self.tune and n1 * n2 >= TUNE_MIN_ENTRIES:  # per matrix of a stack: tuning compiles each shape
            tuned[grid](*args, BN=BN, **constants)
        else:
            raw[grid(UNTUNED)](*args, BN=BN, **constants, **UNTUNED)
        return O

    def mixed_matmul(self, M, B):
        """float64(M) @ B for a float32 (or float64) M (n1, n2), any strides, and a float64 B (n2, m): float64
        (n1, m); or for a stack of G such matrices M (G, n1, n2), any strides, and B (G, n2, m): every
        product in one launch, (G, n1, m)."""
        n1, n2 = M.shape[-2:]
        stack = (M.stride(0), B.shape[1] * B.shape[2], n1 * B.shape[2]) if M.ndim == 3 else (0, 0, 0)
        return self._product(
            (_MIXED_TUNED, _mixed_matmul_kernel), (M,), n1, n2, B, (M.stride(-2), M.stride(-1), *stack)
        )

    def padded_inputs(self, Z):
        """Z (n, d) float64 as a contiguous (n, DP) array with zero columns up to DP, the next multiple of 16."""
        n, d = Z.shape
        DP = -(-d // 16) * 16
        if DP == d:
            return Z.contiguous()
        out = self.torch.zeros((n, DP), dtype=self.torch.float64, device=Z.device)
        out[:, :d] = Z
        return out

    def form_matmul(self, profile: tuple[int, float], Za, Qa, Zb, Qb, B):
        """g(D(Z_a, Z_b)) @ B for ``profile`` = (kind, parameter) of the form: ``Za``/``Zb`` from
        :meth:`padded_inputs`, ``Qa``/``Qb`` their squared norms, ``B`` float64 (n_b, m); float64 (n_a, m)."""
        kind, param = profile
        DP = Za.shape[1]
        P = self.torch.tensor([float(param), SNAP_RTOL], dtype=self.torch.float64, device=B.device)
        return self._product(
            (_FORM_TUNED, _form_matmul_kernel),
            (Za, Zb, Qa.contiguous(), Qb.contiguous()),
            Za.shape[0],
            Zb.shape[0],
            B,
            (P,),
            KIND=int(kind),
            DP=DP,
            DK=32 if DP % 32 == 0 else 16,
        )
