"""What scripts/mutation found the other tests let through in seqviz/checkpoints/ (issue 28; seqviz/text.py's are in
test_text.py, the document's and the config's bounds in test_checkpoint_edges.py): each test here fails on at least one
mutant that survived them (named in its docstring) and passes on the code. Most pin a message a person reads word for
word, or a bound exactly at its edge.
"""

from __future__ import annotations

import json
import re
import struct

import numpy as np
import pytest
from checkpoints_support import make, meta_for, split

from seqviz import checkpoints
from seqviz.checkpoints import CheckpointError, file
from seqviz.text import SPECIALS, Vocab


def exactly(message: str) -> str:
    """A ``match=`` pattern for this whole message and nothing else."""
    return f"^{re.escape(message)}$"


# ---- seqviz.checkpoints.file: sizes and their messages -------------------------------------------------------------


def lstm_file() -> bytes:
    return checkpoints.dumps(make("lstm"), meta_for())


TWO_MB = 2 * 2**20


def test_too_large_names_the_file_and_its_bound_in_whole_megabytes(tmp_path, monkeypatch):
    """(_too_large: "The file" changed, ``/`` for ``//``, ``2 * 20``, ``3**20``, ``2**21``; read and read_header
    passing None for the file's name.)"""
    monkeypatch.setattr(file, "MAX_FILE_BYTES", TWO_MB)
    with pytest.raises(CheckpointError, match=exactly("The file is larger than 2 MB, too large for a seqviz model.")):
        file.header_of(bytes(TWO_MB + 1))
    big = tmp_path / "big.safetensors"
    big.write_bytes(bytes(TWO_MB + 1))
    message = exactly("big.safetensors is larger than 2 MB, too large for a seqviz model.")
    with pytest.raises(CheckpointError, match=message):
        checkpoints.load(big)
    with pytest.raises(CheckpointError, match=message):
        checkpoints.read_meta(big)


def test_a_file_on_disk_of_max_file_bytes_is_read_and_one_byte_more_refused(tmp_path, monkeypatch):
    """(read and read_header: ``>=`` for ``>``; the bytes version is tests/unit/test_checkpoint_edges.py's.)"""
    path = file.write(tmp_path / "model", lstm_file())
    size = path.stat().st_size
    monkeypatch.setattr(file, "MAX_FILE_BYTES", size)
    assert checkpoints.load(path).family == "lstm"
    assert checkpoints.read_meta(path)["family"] == "lstm"
    monkeypatch.setattr(file, "MAX_FILE_BYTES", size - 1)
    for read in (checkpoints.load, checkpoints.read_meta):
        with pytest.raises(CheckpointError, match="too large for a seqviz model"):
            read(path)


def test_a_missing_or_unreadable_file_is_named_with_the_reason(tmp_path):
    """(read: the missing file's message; read_header: its message, and ``strerror and error``.)"""
    with pytest.raises(CheckpointError, match=exactly(
            f"gone.safetensors is missing: there is no checkpoint file at {tmp_path / 'gone.safetensors'}.")):
        checkpoints.load(tmp_path / "gone")
    with pytest.raises(CheckpointError, match=exactly("gone cannot be read (No such file or directory).")):
        checkpoints.read_meta(tmp_path / "gone")
    (tmp_path / "folder").mkdir()
    with pytest.raises(CheckpointError, match=exactly("folder cannot be read (Is a directory).")):
        checkpoints.read_meta(tmp_path / "folder")


def test_the_suffix_is_added_only_to_a_path_that_is_no_file_and_lacks_it(tmp_path):
    """(read: ``or`` for ``and``, ``path.is_file()`` for ``not path.is_file()``, ``==`` for ``!=``; with_suffix.)"""
    data = lstm_file()
    plain = tmp_path / "model.bin"  # a file under another name is read as it is
    plain.write_bytes(data)
    assert checkpoints.load(plain).family == "lstm"
    file.write(tmp_path / "tiny", data)
    assert checkpoints.load(tmp_path / "tiny").family == "lstm"  # no such file: tiny.safetensors
    assert file.with_suffix(tmp_path / "a.safetensors") == tmp_path / "a.safetensors"
    assert file.with_suffix(tmp_path / "a.bin") == tmp_path / "a.bin.safetensors"


def test_write_makes_missing_folders_and_leaves_no_temporary_file(tmp_path):
    """(write: ``parents=False`` or None.)"""
    path = checkpoints.save(tmp_path / "a" / "b" / "model", make("lstm"), meta_for())
    assert path == tmp_path / "a" / "b" / "model.safetensors"
    assert [p.name for p in path.parent.iterdir()] == ["model.safetensors"]
    assert checkpoints.save(path, make("lstm"), meta_for()) == path  # the folders exist now; a second save replaces


# ---- seqviz.checkpoints.file: the safetensors header ---------------------------------------------------------------


def raw_file(header: bytes, size: int | None = None, body: bytes = b"") -> bytes:
    return struct.pack("<Q", len(header) if size is None else size) + header + body


def test_the_smallest_safetensors_file_is_ten_bytes_and_its_header_size_must_fit():
    """(_header_size: ``total <= 10``, ``< 11``, ``size <= 2``, ``< 3``, ``size >= total - 8``, ``total + 8``,
    ``total - 9``.) Eight bytes of length and ``{}``: a header with no tensors and no description."""
    assert file.header_of(raw_file(b"{}")) == ({}, 2)
    with pytest.raises(CheckpointError, match="no seqviz description"):
        checkpoints.load_bytes(raw_file(b"{}"))
    not_safetensors = exactly(file.NOT_SAFETENSORS)
    for data in (raw_file(b"{}", size=4), raw_file(b"{}", size=3), raw_file(b"{", size=1, body=b"}"), b"\0" * 9):
        with pytest.raises(CheckpointError, match=not_safetensors):
            file.header_of(data)


def test_a_header_of_max_header_bytes_is_read_and_one_byte_more_refused(monkeypatch):
    """(_header_size: ``and`` for the second ``or``, ``>=`` for ``>``.)"""
    data = lstm_file()
    (size,) = struct.unpack("<Q", data[:8])
    monkeypatch.setattr(file, "MAX_HEADER_BYTES", size)
    assert file.header_of(data)[1] == size
    monkeypatch.setattr(file, "MAX_HEADER_BYTES", size - 1)
    with pytest.raises(CheckpointError, match=exactly(file.NOT_SAFETENSORS)):
        file.header_of(data)


def test_a_header_without_the_seqviz_description_says_so():
    """(document_text: the message changed; ``or True`` reading a header with no __metadata__.)"""
    message = exactly("The file is a safetensors file but not a seqviz checkpoint (no seqviz description).")
    for header in ({}, {"__metadata__": "text"}, {"__metadata__": {"other": "x"}}, {"__metadata__": {"seqviz": 1}}):
        with pytest.raises(CheckpointError, match=message):
            file.document_text(header)


def test_a_json_object_repeating_a_key_is_refused_word_for_word():
    """(no_duplicates: the message changed.)"""
    with pytest.raises(ValueError, match=exactly("a JSON object repeats a key")):
        json.loads('{"a": 1, "a": 2}', object_pairs_hook=file.no_duplicates)


# ---- seqviz.checkpoints.file: writing ------------------------------------------------------------------------------


def test_the_description_is_stored_as_compact_json_with_its_letters_as_utf8():
    """(encode: ``ensure_ascii=True``, ``separators=None`` or changed.)"""
    model, meta = make("lstm"), {**meta_for(), "description": "l'étiquette: déchirée, à refaire"}
    header, _ = split(checkpoints.dumps(model, meta))
    text = header["__metadata__"]["seqviz"]
    document = checkpoints.meta_document(model, meta)
    assert text == json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    assert "l'étiquette: déchirée, à refaire" in text and ", " not in text.replace(meta["description"], "")


def test_a_description_of_max_json_bytes_is_written_and_one_byte_more_refused():
    """(encode: ``>=`` for ``>``; its message word for word: ``/`` for ``//``, ``2 * 20``, ``3**20``, ``2**21``.)"""
    empty = len(json.dumps({"pad": ""}, separators=(",", ":")))
    file.encode({}, {"pad": "x" * (file.MAX_JSON_BYTES - empty)})
    with pytest.raises(ValueError, match=exactly("the checkpoint's description is larger than 4 MB")):
        file.encode({}, {"pad": "x" * (file.MAX_JSON_BYTES - empty + 1)})


def test_model_arrays_are_copies_the_model_does_not_share():
    """(model_arrays: ``copy=None`` or False hand out the model's own memory.)"""
    model = make("lstm")
    arrays = checkpoints.model_arrays(model)
    name, array = next((n, a) for n, a in arrays.items() if a.ndim == 2)
    before = model.state_dict()[name].clone()
    array += 1.0
    assert np.array_equal(model.state_dict()[name].numpy(), before.numpy())
    assert all(a.flags["C_CONTIGUOUS"] for a in arrays.values())


def test_model_arrays_reads_tensors_that_require_grad():
    """(model_arrays: ``np.asarray`` for every value, ``hasattr(None, "detach")``, "detach" misspelt; the
    detach is what lets a tensor that requires grad, as ``state_dict(keep_vars=True)`` gives, become numbers.)"""
    import torch

    weights = {"w": torch.ones(2, 3, requires_grad=True), "step": torch.tensor(4),
               "t": torch.arange(6.0).reshape(2, 3).T}  # a transposed view: not C-contiguous
    model = type("Model", (), {"state_dict": lambda self: weights})()
    arrays = checkpoints.model_arrays(model)
    assert arrays["w"].shape == (2, 3) and arrays["w"].dtype == np.float32 and arrays["step"].shape == ()
    assert arrays["t"].flags["C_CONTIGUOUS"] and arrays["t"].tolist() == [[0, 3], [1, 4], [2, 5]]  # (order=None)


# ---- seqviz.checkpoints.document and loading ---------------------------------------------------------------------


def test_numpy_numbers_in_meta_are_written_as_json_numbers():
    """(_json_ready: ``_json_ready(None)`` for a numpy scalar.)"""
    meta = {**meta_for(), "metrics": {"test_accuracy": np.float32(0.5), "count": np.int64(3)}, "seed": np.int64(7)}
    document = checkpoints.read_meta(checkpoints.dumps(make("lstm"), meta))
    assert document["metrics"] == {"test_accuracy": 0.5, "count": 3} and document["seed"] == 7


def test_meta_without_vocabularies_is_refused_word_for_word():
    """(meta_document: the message changed.)"""
    with pytest.raises(ValueError, match=exactly("a checkpoint needs its vocabularies: meta['vocabularies']")):
        checkpoints.dumps(make("lstm"), {"task": "emails"})


def test_load_from_a_path_keeps_gradients_when_asked(tmp_path):
    """(load: ``frozen`` not passed on to load_bytes.)"""
    path = checkpoints.save(tmp_path / "model", make("lstm"), meta_for())
    assert all(p.requires_grad for p in checkpoints.load(path, frozen=False).model.parameters())
    assert not any(p.requires_grad for p in checkpoints.load(path).model.parameters())



# ---- seqviz.checkpoints.file.read_weights: the tensors' table ----------------------------------------------------


def test_names_a_file_lacks_or_has_too_many_are_listed_five_of_each():
    """(read_weights: either list left out or shown empty, ``[:6]``, names cut at 41, the separator changed.)"""
    missing = {f"m{i}": ("F32", (1,)) for i in range(6)}
    extra = {f"{'x' * 45}{i}": {} for i in range(6)}
    start = "The weights do not belong to this model: "
    with pytest.raises(CheckpointError, match=exactly(f"{start}missing ['m0', 'm1', 'm2', 'm3', 'm4'].")):
        file.read_weights(b"", {}, 0, missing)
    cut = ["x" * 40] * 5
    with pytest.raises(CheckpointError, match=exactly(f"{start}unexpected {cut}.")):
        file.read_weights(b"", extra, 0, {})
    both = f"{start}missing ['m0', 'm1', 'm2', 'm3', 'm4']; unexpected {cut}."
    with pytest.raises(CheckpointError, match=exactly(both)):
        file.read_weights(b"", {"__metadata__": {}, **extra}, 0, missing)


def test_a_tensor_of_another_dtype_or_shape_is_described_short():
    """(read_weights: the file's dtype not shown, or cut at 11 characters; the shape cut at 9 numbers.)"""
    header = {"w": {"dtype": "F32-and-more", "shape": list(range(1, 11)), "data_offsets": [0, 4]}}
    with pytest.raises(CheckpointError, match=exactly(
            "The weights do not belong to this model: w is F32-and-mo (1, 2, 3, 4, 5, 6, 7, 8), the model needs "
            "F32 (2,).")):
        file.read_weights(b"", header, 0, {"w": ("F32", (2,))})


@pytest.mark.parametrize("entry", [[], "F32", {"dtype": "F32"}, {"dtype": "F32", "shape": "2"},
                                   {"dtype": "F32", "shape": [1], "data_offsets": ["0", "4"]},
                                   {"dtype": "F32", "shape": [1], "data_offsets": [0, None]},
                                   {"dtype": "F32", "shape": [1], "data_offsets": [-4, 4]}])
def test_a_tensor_entry_that_is_not_a_safetensors_one_is_refused(entry):
    """(read_weights: ``and`` for ``or`` in the entry's check and its message None; ``or o >= 0`` for the offsets.)"""
    with pytest.raises(CheckpointError, match=exactly(file.NOT_SAFETENSORS)):
        file.read_weights(raw_file(b"{}", body=bytes(4)), {"w": entry}, 2, {"w": ("F32", (1,))})


def test_a_file_with_no_tensors_has_no_weights():
    """(read_weights: ``end = 1`` for ``end = 0``, which calls the ten-byte file one byte short.)"""
    assert file.read_weights(raw_file(b"{}"), {}, 2, {}) == {}


def test_weights_that_do_not_fit_are_a_checkpoint_error_at_the_last_line_of_defence():
    """(_build_with: its message None, without the error, or cut at 161 characters.) read_weights checks the
    names and shapes first, so only a direct call reaches this."""
    from seqviz.checkpoints import loading

    model = make("lstm")
    start = "The weights do not fit the model: "
    with pytest.raises(CheckpointError) as raised:
        loading._build_with("lstm", model.config, {"nonsense": np.zeros(1, dtype=np.float32)})
    message = str(raised.value)
    assert message.startswith(f"{start}Error(s) in loading state_dict for ") and len(message) == len(start) + 160


def test_a_damaged_file_and_one_safetensors_refuses_say_so_word_for_word():
    """(read_weights: the damaged file's message changed; safetensors' own refusal with the message None.)"""
    data = raw_file(b"{}", body=bytes(4))
    with pytest.raises(CheckpointError, match=exactly("The file is truncated or has extra bytes: it is damaged.")):
        file.read_weights(data + b"\0", {}, 2, {})
    table = {name: {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]} for name in ("a", "b")}  # overlapping
    raw = json.dumps(table).encode()
    with pytest.raises(CheckpointError, match=exactly(file.NOT_SAFETENSORS)):
        file.read_weights(raw_file(raw, body=bytes(4)), table, len(raw), {n: ("F32", (1,)) for n in table})


# ---- seqviz.checkpoints.document.vocabularies_from_meta and loading._expected_tensors --------------------------


def test_vocabulary_problems_are_named_word_for_word():
    """(vocabularies_from_meta: its messages changed, the name cut at 41, the error at 121; the src and tgt sizes
    not checked.)"""
    from types import SimpleNamespace

    from seqviz.checkpoints import document

    config = SimpleNamespace()
    with pytest.raises(CheckpointError, match=exactly(
            "The checkpoint has more vocabularies than any seqviz model reads.")):
        document.vocabularies_from_meta({"vocabularies": {f"v{i}": list(SPECIALS) for i in range(5)}}, config)
    long_words = [f"{'w' * 30}{i}" for i in range(5)]
    with pytest.raises(ValueError) as refused:
        Vocab.from_json(long_words)
    error = str(refused.value)
    assert len(error) > 121
    with pytest.raises(CheckpointError, match=exactly(
            f"The checkpoint's vocabulary {'n' * 40!r} is not valid: {error[:120]}")):
        document.vocabularies_from_meta({"vocabularies": {"n" * 50: long_words}}, config)
    translator = SimpleNamespace(src_vocab_size=6, tgt_vocab_size=6)
    six, five = [*SPECIALS, "a", "b"], [*SPECIALS, "a"]
    for name, vocabularies in (("src", {"src": five, "tgt": six}), ("tgt", {"src": six, "tgt": five})):
        with pytest.raises(CheckpointError, match=exactly(
                f"The {name!r} vocabulary has 5 words but the model expects 6.")):
            document.vocabularies_from_meta({"vocabularies": vocabularies}, translator)
    with pytest.raises(CheckpointError, match=exactly(
            "The checkpoint's labels differ from its model config's labels.")):
        document.vocabularies_from_meta({"vocabularies": {}, "labels": ["a", "b"]}, SimpleNamespace(labels=("b", "a")))


def test_a_config_no_model_accepts_is_a_checkpoint_error_naming_the_family():
    """(_expected_tensors: its message None, without the error, or the error cut at 161.) The configs check
    themselves first, so only a direct call reaches this."""
    from seqviz.checkpoints import loading

    class Refused:
        def __getattr__(self, name):
            raise ValueError("r" * 200)

    with pytest.raises(CheckpointError, match=exactly(f"A lstm model cannot be built from this config: {'r' * 160}")):
        loading._expected_tensors("lstm", Refused())


def test_a_header_that_is_no_json_object_or_repeats_a_key_is_not_safetensors():
    """(_parse_header: no duplicate check, the message None.)"""
    for header in (b'{"a":1,"a":2}', b"[1,2]", b"{no json", b"\xff\xfe"):
        with pytest.raises(CheckpointError, match=exactly(file.NOT_SAFETENSORS)):
            file.header_of(raw_file(header))


def test_load_bytes_freezes_the_model_unless_asked_not_to():
    """(load_bytes: ``frozen=False`` as the default.)"""
    data = lstm_file()
    assert not any(p.requires_grad for p in checkpoints.load_bytes(data).model.parameters())
    assert all(p.requires_grad for p in checkpoints.load_bytes(data, frozen=False).model.parameters())


def test_loading_fills_no_meta_tensor_so_torch_dynamo_stays_unimported():
    """(models.common._SkipInitialisation: no function name read, the name misspelt, no target, the "_" suffix
    misspelt: each lets the skeleton's initialisation run, which imports torch._dynamo, 1.8 s of a server's first
    load.)"""
    import os
    import subprocess
    import sys

    import seqviz

    checkpoints.load_bytes(checkpoints.dumps(make("transformer"), meta_for()))  # here too (scripts/mutation runs
    # the tests that call a function for its mutants: the fresh interpreter's calls are not seen)
    program = ("import sys\nfrom checkpoints_support import make, meta_for\nfrom seqviz import checkpoints\n"
               "data = checkpoints.dumps(make('transformer'), meta_for())\ncheckpoints.load_bytes(data)\n"
               "print(checkpoints.__file__, 'torch._dynamo' in sys.modules)")
    here = os.path.dirname(os.path.dirname(seqviz.__file__))  # this seqviz (scripts/mutation's mutated copy)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, *(p for p in sys.path if p)])}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
    assert done.stdout.split() == [checkpoints.__file__, "False"], done.stderr[-2000:]


def test_added_in_keeps_metadata_of_its_own():
    """(added_in: ``options.pop`` of another key leaves ``metadata`` in the options: passed twice, a TypeError.)"""
    from seqviz.checkpoints import document

    field = document.added_in(3, before=False, default=True, metadata={"help": "LayerNorm"})
    assert dict(field.metadata) == {"help": "LayerNorm", document.ADDED_IN: 3, document.BEFORE: False}
    assert field.default is True
