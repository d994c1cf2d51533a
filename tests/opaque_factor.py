"""A Hessian factor that only does the Newton–CG protocol around another one: no ``multinomial_pi`` (no
structure to exploit), no ``rows`` (no blocks of points), for tests of what a likelihood without them gets."""

from gpmodels.likelihoods.base import HessianFactor


class OpaqueFactor(HessianFactor):
    """The Newton–CG protocol of ``hf`` and nothing else."""

    def __init__(self, hf):
        self.hf, self.free, self.fixed_alpha, self.exact = hf, hf.free, hf.fixed_alpha, hf.exact

    def V(self, x):
        return self.hf.V(x)

    def Vt(self, y):
        return self.hf.Vt(y)

    def W(self, x):
        return self.hf.W(x)

    def g_tilde(self, g):
        return self.hf.g_tilde(g)

    def beta_init(self, alpha):
        return self.hf.beta_init(alpha)

    def precond_diag(self, diag_K, point_block_mvm):
        return self.hf.precond_diag(diag_K, point_block_mvm)
