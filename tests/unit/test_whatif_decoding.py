"""/what-if's decoding questions (seqviz.analysis.decoding, seqviz.analysis.beam), checked against teacher forcing.

On the shipped translators and on two small ones trained here for a few seconds by seqviz's one training loop (an
undertrained model is unsure of its words, so its beams differ from greedy and its ties are not all 0.999 vs 0.001):
step-wise decoding is greedy decoding, beam width 1 is greedy, every hypothesis of the beam's tree scores the
teacher-forced sum of its log-probabilities, a forced word decodes as a prefix-forced greedy run, and sampling has
its own seeded generator. Attention edits, one word changed and hostile settings:
tests/unit/test_whatif_decoding_edits.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import whatif_support
from whatif_support import MODELS, SENTENCES, SHIPPED, teacher_greedy, written

from seqviz.analysis import beam, decoding
from seqviz.models.common import BOS_ID, EOS_ID
from seqviz.tasks import pad_batch

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

models = whatif_support.models  # its fixture: name -> (model, vocabularies)


def teacher_log_probs(model, vocabularies, tokens, ids: list[int]) -> np.ndarray:
    """log p(y_t | y_<t, x) of ``ids`` (the words written, <eos> included if it was), teacher-forced in one pass."""
    return batched_log_probs(model, vocabularies, tokens, [ids])[0]


def batched_log_probs(model, vocabularies, tokens, paths: list[list[int]]) -> list[np.ndarray]:
    src_ids = vocabularies["src"].encode(tokens)
    src = torch.tensor([src_ids] * len(paths))
    lengths = torch.tensor([len(src_ids)] * len(paths))
    tgt_in, _ = pad_batch([[BOS_ID, *path[:-1]] for path in paths])  # (B, U)
    targets, _ = pad_batch(paths)
    with torch.inference_mode():
        logits, _ = model.teacher_forced(src, lengths, tgt_in)  # (B, U, V)
        log_probs = torch.log_softmax(logits.double(), -1).gather(-1, targets[..., None])[..., 0]
    return [log_probs[b, : len(path)].numpy() for b, path in enumerate(paths)]


# ---------------------------------------------------------------------------------------------------------
# 1. The next word


@pytest.mark.parametrize("name", MODELS)
def test_step_wise_decoding_is_greedy_and_its_top_words_are_the_teacher_forced_ones(models, name):
    model, vocabularies = models[name]
    for tokens in SENTENCES:
        source = decoding.read_source(model, vocabularies, tokens)
        greedy = model.translate(source.src, source.lengths)[0]
        decoded = decoding.next_words(model, vocabularies, tokens, k=4)
        assert decoded.ids == greedy
        assert decoded.tokens == vocabularies["tgt"].decode(greedy)
        reference = teacher_log_probs(model, vocabularies, tokens, written(decoded))
        np.testing.assert_allclose(decoded.log_probs, reference, atol=2e-5)
        assert len(decoded.steps) == len(written(decoded)) == decoded.hidden.shape[0]
        for step in decoded.steps:
            assert step.chosen == step.greedy == step.top_tokens[0]
            assert len(step.top_tokens) == 4 and np.all(np.diff(step.top_probs) <= 0)
            assert step.chosen_prob == pytest.approx(float(step.top_probs[0]))
        if model.has_attention:
            assert decoded.weights.shape == (len(decoded.steps), len(tokens))
            np.testing.assert_allclose(decoded.weights.sum(axis=1), 1.0, atol=1e-5)
        else:
            assert decoded.weights is None and decoded.alignment is None


@pytest.mark.parametrize("name", MODELS)
def test_top_probabilities_are_the_models_distribution(models, name):
    model, vocabularies = models[name]
    tokens = SENTENCES[1]
    decoded = decoding.next_words(model, vocabularies, tokens, k=3)
    source = decoding.read_source(model, vocabularies, tokens)
    with torch.inference_mode():
        logits, _ = model.teacher_forced(source.src, source.lengths, torch.tensor([[BOS_ID, *written(decoded)[:-1]]]))
        probs = torch.softmax(logits[0].double(), -1)  # (S, V)
    for t, step in enumerate(decoded.steps):
        top = probs[t].topk(3)
        np.testing.assert_allclose(step.top_probs, top.values.numpy(), atol=2e-5)
        assert step.top_tokens[0] == vocabularies["tgt"].decode([int(top.indices[0])])[0]


@pytest.mark.parametrize("name", ["additive", "tiny-additive", "tiny-transformer"])
def test_sampling_has_its_own_seeded_generator(models, name):
    if name not in models:
        pytest.skip(f"{name} is not trained")
    model, vocabularies = models[name]
    tokens = SENTENCES[2]
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first = decoding.next_words(model, vocabularies, tokens, temperature=1.5, seed=7)
    assert torch.equal(torch.get_rng_state(), before), "the process-wide generator was used"
    torch.manual_seed(999)  # another visitor's draws do not change ours
    again = decoding.next_words(model, vocabularies, tokens, temperature=1.5, seed=7)
    assert first.ids == again.ids and np.array_equal(first.log_probs, again.log_probs)
    for step in first.steps:  # the written word is the sampled one; its probability is the model's
        assert step.chosen in vocabularies["tgt"]
    reference = teacher_log_probs(model, vocabularies, tokens, written(first))
    np.testing.assert_allclose(first.log_probs, reference, atol=2e-5)
    if name.startswith("tiny"):  # an unsure model at a high temperature strays from greedy for some seed
        runs = [decoding.next_words(model, vocabularies, tokens, temperature=5.0, seed=s) for s in range(5)]
        assert any(step.chosen != step.greedy for run in runs for step in run.steps)
        assert len({tuple(run.ids) for run in runs}) > 1
    else:  # a sure model at a low temperature writes greedy's words
        cold = decoding.next_words(model, vocabularies, tokens, temperature=0.1, seed=3)
        assert cold.ids == decoding.next_words(model, vocabularies, tokens).ids


# ---------------------------------------------------------------------------------------------------------
# 2. Beam search


@pytest.mark.parametrize("name", MODELS)
def test_beam_width_one_is_greedy(models, name):
    model, vocabularies = models[name]
    for tokens in SENTENCES:
        searched = beam.beam_search(model, vocabularies, tokens, width=1)
        greedy = decoding.next_words(model, vocabularies, tokens)
        assert len(searched.final) == 1
        assert searched.best.ids == greedy.ids == searched.greedy.ids
        assert searched.best.ended == greedy.ended
        assert searched.best.log_prob == pytest.approx(greedy.log_prob, abs=1e-4)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("width", [3, 8])
def test_every_beam_score_is_the_teacher_forced_sum_of_its_log_probabilities(models, name, width):
    model, vocabularies = models[name]
    tokens = SENTENCES[1] if name in SHIPPED else SENTENCES[2]
    for length_norm in (True, False):
        searched = beam.beam_search(model, vocabularies, tokens, width=width, length_norm=length_norm)
        nodes = searched.nodes
        paths = []
        for node in nodes[1:]:  # every hypothesis of the tree, kept or pruned
            path, at = [], node
            while at.parent is not None:
                path.append(vocabularies["tgt"].stoi[at.token])
                at = nodes[at.parent]
            paths.append(path[::-1])
        sums = [float(lp.sum()) for lp in batched_log_probs(model, vocabularies, tokens, paths)]
        np.testing.assert_allclose([n.log_prob for n in nodes[1:]], sums, atol=1e-4)
        for hypothesis in searched.final:
            ids = [*hypothesis.ids, EOS_ID] if hypothesis.ended else hypothesis.ids
            total = float(teacher_log_probs(model, vocabularies, tokens, ids).sum())
            assert hypothesis.log_prob == pytest.approx(total, abs=1e-4)
            assert hypothesis.score == pytest.approx(total / len(ids) if length_norm else total, abs=1e-4)
            assert nodes[hypothesis.node].log_prob == hypothesis.log_prob


@pytest.mark.parametrize("name", MODELS)
def test_the_beams_tree_is_a_tree_and_its_final_beam_is_ranked(models, name):
    model, vocabularies = models[name]
    tokens = SENTENCES[2]
    width = 4
    runs = {norm: beam.beam_search(model, vocabularies, tokens, width=width, length_norm=norm)
            for norm in (True, False)}
    for searched in runs.values():
        nodes = searched.nodes
        assert nodes[0].token == "<bos>" and nodes[0].parent is None
        children = {n.id: [] for n in nodes}
        for node in nodes[1:]:
            assert node.parent < node.id and node.step == nodes[node.parent].step + 1
            parent = nodes[node.parent]
            assert not parent.pruned and not parent.finished  # only open hypotheses grow
            children[parent.id].append(node)
        for node in nodes:
            if node.pruned or node.finished:
                assert not children[node.id]
        assert all(len(c) == width for n, c in children.items() if c)  # each open hypothesis: its width best words
        assert len(searched.final) == width
        assert [h.score for h in searched.final] == sorted((h.score for h in searched.final), reverse=True)
        assert sum(n.finished for n in nodes) == sum(h.ended for h in searched.final)
        for hypothesis in searched.final:
            path, at = [], nodes[hypothesis.node]
            while at.parent is not None:
                path.append(at.token)
                at = nodes[at.parent]
            assert path[::-1] == hypothesis.tokens + (["<eos>"] if hypothesis.ended else [])
    # length normalisation ranks the same final beam differently; it never changes what the search kept
    finals = [sorted(tuple(h.ids) for h in runs[norm].final) for norm in (True, False)]
    assert finals[0] == finals[1]


# ---------------------------------------------------------------------------------------------------------
# 3. Force a word


@pytest.mark.parametrize("name", MODELS)
def test_a_forced_word_decodes_as_a_prefix_forced_greedy_run(models, name):
    model, vocabularies = models[name]
    tgt = vocabularies["tgt"]
    rng = np.random.default_rng(0)
    for tokens in SENTENCES[1:3]:
        original = decoding.next_words(model, vocabularies, tokens)
        last = len(original.steps) - 1
        for step in sorted({0, last // 2, last}):
            words = [original.steps[step].top_tokens[1], tgt.itos[int(rng.integers(4, len(tgt)))], "<eos>"]
            for word in words:
                forced = decoding.force_word(model, vocabularies, tokens, step, word)
                prefix = [*original.ids[:step], tgt.stoi[word]]
                ids, ended = teacher_greedy(model, vocabularies, tokens, prefix)
                assert (forced.forced.ids, forced.forced.ended) == (ids, ended), (step, word)
                assert forced.forced.steps[step].chosen == word and forced.replaced == original.steps[step].chosen
                p = np.exp(teacher_log_probs(model, vocabularies, tokens, prefix)[-1])
                assert forced.word_prob == pytest.approx(p, abs=1e-5)
                assert [s.chosen for s in forced.forced.steps[:step]] == [s.chosen for s in original.steps[:step]]
        own = decoding.force_word(model, vocabularies, tokens, 1, original.steps[1].chosen)
        assert own.forced.ids == original.ids and own.word_prob == pytest.approx(own.replaced_prob)

