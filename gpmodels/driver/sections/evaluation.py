"""The `evaluation` section (scores on the test set, the test predictive) and the `output` section."""

from __future__ import annotations

import attrs

from gpmodels.driver.schema import Node, option
from gpmodels.inference.map.predictive import PREDICTIVE_METHODS, PREDICTIVES
from gpmodels.validation import MAX_SIZE, boolean, integer, number, one_of, sequence_of, string

__all__ = ["EvaluationSpec", "OutputSpec", "DECISIONS"]

#: decision rules scored on a class tree (Sec. 6.1): argmax, each score's Bayes rule, or both
DECISIONS = ("argmax", "expected_loss", "both")


@attrs.frozen
class EvaluationSpec(Node):
    """Scores computed on the test set."""

    error_reject: tuple = option(
        (0.0, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35),
        sequence_of(number(0.0, 0.99), min_len=1, max_len=100, unique=True),
        doc="rejection fractions of the error-reject curve",
    )
    train_scores: bool = option(False, boolean(), doc="also score the training set")
    decision: str = option(
        "both",
        one_of(DECISIONS),
        doc="with a class tree: score pacc / taxo-loss with the `argmax` rule, with each score's "
        "Bayes rule (`expected_loss`, Sec. 6.1), or `both`",
    )
    predictive: str = option(
        "plugin",
        one_of(PREDICTIVES),
        doc="test probabilities: `plugin` = the likelihood at the latent mean u_* = K̃_{*,.} α̂; `laplace` = "
        "averaged over the Laplace latent predictive N(μ_*, Σ_*) (R&W eq. 3.40, 3.43) by seeded Monte Carlo "
        "(objectives `map` and `cv`, likelihoods softmax and logistic)",
    )
    predictive_latent: str = option(
        "exact",
        one_of(PREDICTIVE_METHODS),
        doc="`laplace` predictive: Σ_* by batched CG (`exact`) or a rank-`predictive_rank` Lanczos "
        "basis (`lanczos`, LOVE; over-estimates Σ_*, cheaper for many test points)",
    )
    predictive_rank: int = option(
        256, integer(1, MAX_SIZE), doc="`laplace` predictive with `lanczos`: the Lanczos rank"
    )
    predictive_samples: int = option(
        2000, integer(1, MAX_SIZE), doc="`laplace` predictive: Monte Carlo samples per test point (seeded by `seed`)"
    )


@attrs.frozen
class OutputSpec(Node):
    """Where reports go."""

    dir: str = option("runs/{name}", string(), doc="report folder; `{name}` is replaced by the spec's name")
