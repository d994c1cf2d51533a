"""Cross-validation hyperparameter learning (Seeger 2008, Sec. 4, 5.2): Ψ, ∇Ψ, learning, one-vs-rest."""

from gpmodels.inference.cv.criterion import (
    CV_SOLVERS,
    CVEvaluation,
    CVOptions,
    CVState,
    FoldDiagnostics,
    check_partition,
    cv_criterion,
    scaled_start,
    unscaled_start,
)
from gpmodels.inference.cv.learn import (
    Checkpointing,
    EvaluationLog,
    LearnOptions,
    LearnResult,
    fit_learned,
    learn_hyperparameters,
)
from gpmodels.inference.cv.one_vs_rest import (
    OneVsRestModel,
    binary_targets,
    check_one_vs_rest,
    fit_binary_task,
    fit_one_vs_rest,
    learn_binary_task,
    learn_one_vs_rest,
    task_checkpoint,
)

__all__ = ["CVOptions", "CVState", "CVEvaluation", "FoldDiagnostics", "cv_criterion", "check_partition",
           "CV_SOLVERS", "scaled_start", "unscaled_start", "LearnOptions", "Checkpointing", "LearnResult",
           "learn_hyperparameters", "fit_learned",
           "EvaluationLog", "OneVsRestModel", "learn_one_vs_rest", "fit_one_vs_rest", "learn_binary_task",
           "fit_binary_task", "binary_targets", "check_one_vs_rest", "task_checkpoint"]
