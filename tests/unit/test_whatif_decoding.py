"""/what-if's decoding questions (seqviz.analysis.decoding, seqviz.analysis.beam), checked against teacher forcing.

On the shipped translators and on two small ones trained here for a few seconds by seqviz's one training loop (an
undertrained model is unsure of its words, so its beams differ from greedy and its ties are not all 0.999 vs 0.001):
step-wise decoding is greedy decoding, beam width 1 is greedy, every hypothesis of the beam's tree scores the
teacher-forced sum of its log-probabilities, a forced word decodes as a prefix-forced greedy run, an attention edit
that writes back the model's own weights changes nothing, sampling has its own seeded generator, and hostile
settings get a ValueError with a plain sentence.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seqviz import zoo
from seqviz.analysis import beam, decoding
from seqviz.data.translation import CHAPTER_PAIRS, render_english, render_french, sample_sentence
from seqviz.models.common import BOS_ID, EOS_ID
from seqviz.models.seq2seq import Seq2Seq, Seq2SeqConfig
from seqviz.models.transformer_seq2seq import TransformerSeq2Seq, TransformerSeq2SeqConfig
from seqviz.tasks import Task, pad_batch
from seqviz.text import Vocab
from seqviz.train import TrainConfig, train

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

SHIPPED = [name for name in ("plain", "additive", "dot", "transformer-translator") if name in zoo.available()]
TINY = ["tiny-additive", "tiny-transformer"]
MODELS = SHIPPED + TINY
SENTENCES = [
    CHAPTER_PAIRS[0][0].split(),
    "my red phone never arrived .".split(),
    "the small box was delivered and the black watch arrived .".split(),
    "where is my zebra ?".split(),  # "zebra" is read as <unk>
]


class TinyTranslation(Task):
    """Short sentences of the grammar (3 to 9 tokens), for a model that trains in a few seconds."""

    name = kind = "translation"

    def __init__(self, count: int = 300, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        trees = [sample_sentence(rng, int(rng.integers(3, 10))) for _ in range(count)]
        self.pairs = [(render_english(t), render_french(t)) for t in trees]
        self.vocabularies = {"src": Vocab.build(e for e, _ in self.pairs), "tgt": Vocab.build(f for _, f in self.pairs)}
        src, tgt = self.vocabularies["src"], self.vocabularies["tgt"]
        self._src, self._lengths = pad_batch([src.encode(e) for e, _ in self.pairs])
        self._tgt, _ = pad_batch([[BOS_ID, *tgt.encode(f), EOS_ID] for _, f in self.pairs])

    def model_fields(self) -> dict:
        return {"src_vocab_size": len(self.vocabularies["src"]), "tgt_vocab_size": len(self.vocabularies["tgt"])}

    def batch(self, rng, batch_size, progress=1.0):
        rows = torch.from_numpy(rng.integers(0, len(self.pairs), size=batch_size))
        lengths = self._lengths[rows]
        return {"src": self._src[rows, : int(lengths.max())], "src_lengths": lengths, "tgt": self._tgt[rows]}


@pytest.fixture(scope="module")
def models():
    """name -> (model, vocabularies): the shipped translators and two trained here."""
    loaded = {name: (zoo.load(name).model, zoo.load(name).vocabularies) for name in SHIPPED}
    task = TinyTranslation()
    torch.manual_seed(0)
    lstm = Seq2Seq(Seq2SeqConfig(kind="additive", **task.model_fields(), emb_dim=12, hidden=12, attn_dim=12, layers=2))
    transformer = TransformerSeq2Seq(TransformerSeq2SeqConfig(**task.model_fields(), d_model=16, n_heads=2,
                                                              enc_layers=1, dec_layers=2, d_ff=32))
    for model in (lstm, transformer):
        train(model, task, TrainConfig(steps=60, batch_size=16, lr=1e-2, warmup=5))
        for p in model.parameters():
            p.requires_grad_(False)
    loaded["tiny-additive"] = (lstm, task.vocabularies)
    loaded["tiny-transformer"] = (transformer, task.vocabularies)
    return loaded


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


def teacher_greedy(model, vocabularies, tokens, prefix: list[int]) -> tuple[list[int], bool]:
    """Greedy decoding from a forced prefix, one teacher-forced pass per word: the reference for forcing."""
    src_ids = vocabularies["src"].encode(tokens)
    limit = 2 * len(src_ids) + 5
    if prefix and prefix[-1] == EOS_ID:
        return prefix[:-1], True
    out = list(prefix)
    with torch.inference_mode():
        while len(out) < limit:
            logits, _ = model.teacher_forced(torch.tensor([src_ids]), torch.tensor([len(src_ids)]),
                                             torch.tensor([[BOS_ID, *out]]))
            word = int(logits[0, -1].argmax())
            if word == EOS_ID:
                return out, True
            out.append(word)
    return out, False


def written(decoded: decoding.Decoded) -> list[int]:
    return [*decoded.ids, EOS_ID] if decoded.ended else list(decoded.ids)


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


# ---------------------------------------------------------------------------------------------------------
# 4. Edit the attention


def own_weights(model, vocabularies, tokens, decoded: decoding.Decoded, step: int) -> np.ndarray:
    """The weights the model itself used at ``step``: (T,) for an LSTM, (N, T) for the transformer's last layer."""
    if not isinstance(model, TransformerSeq2Seq):
        return decoded.weights[step]
    source = decoding.read_source(model, vocabularies, tokens)
    with torch.inference_mode():
        memory, src_mask, _ = model.encode(source.src, source.lengths)
        _, _, cross = model.decode(torch.tensor([[BOS_ID, *written(decoded)[:-1]]]), memory, src_mask)
    return cross[-1][0, :, step].numpy()  # (N, T)


@pytest.mark.parametrize("name", [n for n in MODELS if n != "plain"])
def test_an_attention_edit_that_writes_back_the_models_own_weights_changes_nothing(models, name):
    model, vocabularies = models[name]
    for tokens in SENTENCES[:3]:
        original = decoding.next_words(model, vocabularies, tokens)
        for step in (0, len(original.steps) // 2, len(original.steps) - 1):
            weights = own_weights(model, vocabularies, tokens, original, step)
            edited = decoding.edit_attention(model, vocabularies, tokens, step, weights=weights)
            assert edited.edited.ids == original.ids and edited.word_after == edited.word_before
            np.testing.assert_allclose(edited.edited.log_probs, original.log_probs, atol=1e-5)
            np.testing.assert_allclose(edited.weights_after, edited.weights_before, atol=1e-6)


@pytest.mark.parametrize("name", [n for n in MODELS if n != "plain"])
def test_an_attention_edit_puts_the_weight_where_asked_at_that_step_only(models, name):
    model, vocabularies = models[name]
    tokens = SENTENCES[1]
    original = decoding.next_words(model, vocabularies, tokens)
    step = 2
    for position in range(len(tokens)):
        edited = decoding.edit_attention(model, vocabularies, tokens, step, source_position=position)
        expected = np.eye(len(tokens))[position]
        np.testing.assert_allclose(edited.weights_after, expected, atol=1e-6)
        np.testing.assert_allclose(edited.edited.log_probs[:step], original.log_probs[:step], atol=1e-6)
        assert edited.edited.ids[:step] == original.ids[:step]
        if not isinstance(model, Seq2Seq) or not model.decoder.attention.before_step:
            # the edit reaches only this step's word (dot: c_t is found after the step; the transformer's last
            # layer feeds no later position), so the rest is greedy from the words written
            ids, ended = teacher_greedy(model, vocabularies, tokens, written(edited.edited)[: step + 1])
            assert (edited.edited.ids, edited.edited.ended) == (ids, ended)
    row = np.arange(1, len(tokens) + 1, dtype=float)  # any non-negative row, renormalised
    edited = decoding.edit_attention(model, vocabularies, tokens, step, weights=row)
    np.testing.assert_allclose(edited.weights_after, row / row.sum(), atol=1e-6)


def test_the_plain_translator_has_no_attention_to_edit(models):
    if "plain" not in models:
        pytest.skip("plain is not trained")
    model, vocabularies = models["plain"]
    with pytest.raises(ValueError, match="no attention to edit"):
        decoding.edit_attention(model, vocabularies, SENTENCES[1], 0, source_position=0)


# ---------------------------------------------------------------------------------------------------------
# 7. One word changed


@pytest.mark.parametrize("name", MODELS)
def test_one_word_changed_gives_both_translations_and_marks_the_differences(models, name):
    model, vocabularies = models[name]
    tokens = "the parcel arrived .".split()
    change = decoding.change_word(model, vocabularies, tokens, 1, "box")
    assert change.before.ids == decoding.next_words(model, vocabularies, tokens).ids
    assert change.after.ids == decoding.next_words(model, vocabularies, "the box arrived .".split()).ids
    assert change.after.src_tokens == "the box arrived .".split()
    assert len(change.differs_before) == len(change.before.ids) and len(change.differs_after) == len(change.after.ids)
    kept_before = [w for w, d in zip(change.before.tokens, change.differs_before, strict=True) if not d]
    kept_after = [w for w, d in zip(change.after.tokens, change.differs_after, strict=True) if not d]
    assert kept_before == kept_after  # the words not marked are the ones both have, in order
    if name in ("additive", "dot", "transformer-translator"):  # exact on the grammar
        assert change.before.tokens == "le colis est arrivé .".split()
        assert change.after.tokens == "la boîte est arrivée .".split()
        assert change.differs_before == change.differs_after == [True, True, False, True, False]
    same = decoding.change_word(model, vocabularies, tokens, 1, "parcel")
    assert not any(same.differs_before) and not any(same.differs_after)


# ---------------------------------------------------------------------------------------------------------
# Hostile input


HOSTILE = {
    "empty sentence": (lambda m, v: decoding.next_words(m, v, []), "no words"),
    "too long": (lambda m, v: decoding.next_words(m, v, ["the"] * 61), "at most 60"),
    "not words": (lambda m, v: decoding.next_words(m, v, ["the", 3]), "list of words"),
    "k 0": (lambda m, v: decoding.next_words(m, v, ["the"], k=0), "number of next words"),
    "k 11": (lambda m, v: decoding.next_words(m, v, ["the"], k=11), "number of next words"),
    "k True": (lambda m, v: decoding.next_words(m, v, ["the"], k=True), "number of next words"),
    "temperature -1": (lambda m, v: decoding.next_words(m, v, ["the"], temperature=-1.0), "temperature"),
    "temperature 9": (lambda m, v: decoding.next_words(m, v, ["the"], temperature=9.0), "temperature"),
    "temperature nan": (lambda m, v: decoding.next_words(m, v, ["the"], temperature=float("nan")), "temperature"),
    "seed -1": (lambda m, v: decoding.next_words(m, v, ["the"], temperature=1.0, seed=-1), "seed"),
    "max_len 0": (lambda m, v: decoding.next_words(m, v, ["the"], max_len=0), "length limit"),
    "width 0": (lambda m, v: beam.beam_search(m, v, ["the"], width=0), "beam width"),
    "width 9": (lambda m, v: beam.beam_search(m, v, ["the"], width=9), "beam width"),
    "width 2.5": (lambda m, v: beam.beam_search(m, v, ["the"], width=2.5), "beam width"),
    "length_norm": (lambda m, v: beam.beam_search(m, v, ["the"], length_norm="yes"), "Length normalisation"),
    "step -1": (lambda m, v: decoding.force_word(m, v, ["the"], -1, "le"), "output step"),
    "step 99": (lambda m, v: decoding.force_word(m, v, ["the"], 99, "le"), "output step"),
    "unknown forced word": (lambda m, v: decoding.force_word(m, v, ["the"], 0, "zèbre"), "not a word"),
    "forced <pad>": (lambda m, v: decoding.force_word(m, v, ["the"], 0, "<pad>"), "not a word"),
    "forced <unk>": (lambda m, v: decoding.force_word(m, v, ["the"], 0, "<unk>"), "not a word"),
    "edit both": (lambda m, v: decoding.edit_attention(m, v, ["the"], 0, 0, [1.0]), "either"),
    "edit neither": (lambda m, v: decoding.edit_attention(m, v, ["the"], 0), "either"),
    "edit position": (lambda m, v: decoding.edit_attention(m, v, ["the"], 0, source_position=1), "position"),
    "edit step": (lambda m, v: decoding.edit_attention(m, v, ["the"], 99, source_position=0), "output step"),
    "edit shape": (lambda m, v: decoding.edit_attention(m, v, ["the", "box"], 0, weights=[1.0]), "must be"),
    "edit negative": (lambda m, v: decoding.edit_attention(m, v, ["the", "box"], 0, weights=[2.0, -1.0]), "non-neg"),
    "edit zeros": (lambda m, v: decoding.edit_attention(m, v, ["the", "box"], 0, weights=[0.0, 0.0]), "not all 0"),
    "edit nan": (lambda m, v: decoding.edit_attention(m, v, ["the", "box"], 0, weights=[np.nan, 1.0]), "non-neg"),
    "edit text": (lambda m, v: decoding.edit_attention(m, v, ["the", "box"], 0, weights=["a", "b"]), "numbers"),
    "change position": (lambda m, v: decoding.change_word(m, v, ["the", "box"], 2, "the"), "position"),
    "change unknown": (lambda m, v: decoding.change_word(m, v, ["the", "box"], 1, "zebra"), "not a word"),
    "change <eos>": (lambda m, v: decoding.change_word(m, v, ["the", "box"], 1, "<eos>"), "not a word"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
@pytest.mark.parametrize("name", ["additive", "tiny-transformer"])
def test_hostile_settings_get_a_plain_message(models, name, case):
    if name not in models:
        pytest.skip(f"{name} is not trained")
    model, vocabularies = models[name]
    call, message = HOSTILE[case]
    with pytest.raises(ValueError, match=message) as raised:
        call(model, vocabularies)
    assert len(str(raised.value)) < 200 and "Traceback" not in str(raised.value)


def test_a_classifier_is_not_a_translator():
    if "lstm" not in zoo.available():
        pytest.skip("lstm is not trained")
    checkpoint = zoo.load("lstm")
    with pytest.raises(ValueError, match="does not translate"):
        decoding.next_words(checkpoint.model, checkpoint.vocabularies, ["hello"])


def test_unknown_source_words_are_read_as_unk_as_on_every_page(models):
    model, vocabularies = models["tiny-additive"]
    decoded = decoding.next_words(model, vocabularies, SENTENCES[3])
    assert decoded.src_tokens == ["where", "is", "my", "<unk>", "?"]
    assert decoding.read_source(model, vocabularies, SENTENCES[3]).unknown == ["zebra"]


def test_the_pickers_offer_exactly_the_words_the_functions_take(models):
    model, vocabularies = models["tiny-additive"]
    forceable, replacements = decoding.forceable_words(vocabularies), decoding.replacement_words(vocabularies)
    assert "<eos>" in forceable and not {"<pad>", "<unk>", "<bos>"} & set(forceable)
    assert set(forceable) == set(vocabularies["tgt"].itos) - {"<pad>", "<unk>", "<bos>"}
    assert set(replacements) == set(vocabularies["src"].itos) - {"<pad>", "<unk>", "<bos>", "<eos>"}
    assert decoding.force_word(model, vocabularies, SENTENCES[1], 0, forceable[-1]).word == forceable[-1]
    assert decoding.change_word(model, vocabularies, SENTENCES[1], 0, replacements[-1]).word == replacements[-1]
