"""Is attention an explanation? Attention beside what an output depended on, and what happens when the weights
are replaced, for translators and email classifiers alike, through one model interface (:mod:`.batches`).

- :mod:`.importance`: attention beside the gradient, gradient × input, integrated gradients and leave-one-out
  (Captum), per output and input word, for one input or held-out ones;
- :mod:`.agreement`: how attention's ranking of the words agrees with each measure's (Kendall's τ, weighted τ,
  top-1 and top-3 agreement);
- :mod:`.ablation`: the output with the weights replaced (uniform, permuted): translations, held-out exact
  match, Jain & Wallace's permutation test;
- :mod:`.pronoun`: where "it" looks in every layer and head of a transformer classifier.
"""

from seqviz.analysis.explain.ablation import (
    ABLATIONS,
    HeldOutMatch,
    PermutationTest,
    ablation_mix,
    check_ablation,
    email_permutations,
    held_out_exact_match,
    index_mix,
    permutation_mix,
    permutation_test,
    translate_with,
    uniform_weights,
)
from seqviz.analysis.explain.agreement import (
    STATISTICS,
    Agreement,
    agreement,
    kendall_tau,
    kendall_tau_rows,
    mean_defined,
    top_k_agree,
    weighted_tau,
)
from seqviz.analysis.explain.batches import held_out_emails, held_out_pairs
from seqviz.analysis.explain.importance import (
    COMPLETENESS_TOLERANCE,
    MEASURES,
    ClassificationExplanation,
    HeldOutAgreement,
    Measures,
    TranslationExplanation,
    explain_classification,
    explain_emails,
    explain_many,
    explain_translation,
    held_out_classifier_taus,
    held_out_taus,
    measure,
)
from seqviz.analysis.explain.pronoun import PronounAttention, pronoun_attention

__all__ = [
    "ABLATIONS",
    "COMPLETENESS_TOLERANCE",
    "MEASURES",
    "STATISTICS",
    "Agreement",
    "ClassificationExplanation",
    "HeldOutAgreement",
    "HeldOutMatch",
    "Measures",
    "PermutationTest",
    "PronounAttention",
    "TranslationExplanation",
    "ablation_mix",
    "agreement",
    "check_ablation",
    "email_permutations",
    "explain_classification",
    "explain_emails",
    "explain_many",
    "explain_translation",
    "held_out_classifier_taus",
    "held_out_emails",
    "held_out_exact_match",
    "held_out_pairs",
    "held_out_taus",
    "index_mix",
    "kendall_tau",
    "kendall_tau_rows",
    "mean_defined",
    "measure",
    "permutation_mix",
    "permutation_test",
    "pronoun_attention",
    "top_k_agree",
    "translate_with",
    "uniform_weights",
    "weighted_tau",
]
