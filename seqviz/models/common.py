"""What every model module shares: the special ids, size bounds on configs, one sentence encoded, a model's
skeleton."""

from __future__ import annotations

from seqviz import limits

# Special ids fixed by the contract of seqviz.text.Vocab: <pad>=0, <unk>=1, <bos>=2, <eos>=3.
PAD_ID, BOS_ID, EOS_ID = 0, 2, 3

_BOUNDS = {
    "vocab": (4, limits.MAX_MODEL_VOCAB),
    "width": (1, limits.MAX_MODEL_WIDTH),
    "layers": (1, limits.MAX_MODEL_LAYERS),
    "heads": (1, limits.MAX_MODEL_HEADS),
    "positions": (1, limits.MAX_MODEL_POSITIONS),
    "labels": (2, limits.MAX_MODEL_LABELS),
}


def check_sizes(config, **groups: tuple[str, ...]) -> None:
    """Raise ValueError unless every named field of ``config`` is an int within its group's bounds.

    ``check_sizes(config, vocab=("vocab_size",), width=("emb_dim", "hidden_dim"))``: the groups are
    vocab, width, layers, heads, positions (limits.MAX_MODEL_*); "labels" counts a tuple's items.
    A config checked here can be built (on the "meta" device, say) without blowing up.
    """
    for group, names in groups.items():
        low, high = _BOUNDS[group]
        for name in names:
            value = getattr(config, name)
            count = len(value) if group == "labels" else value
            if not isinstance(count, int) or isinstance(count, bool) or not low <= count <= high:
                raise ValueError(f"{name} must be {'a tuple of ' if group == 'labels' else ''}"
                                 f"{low} to {high}{' names' if group == 'labels' else ''}, not {value!r:.40}")


def one_sentence(tokens, vocab) -> tuple[list[int], list[str]]:
    """Encode one tokenized sentence; the tokens come back as the model saw them (``<unk>`` kept visible)."""
    ids = vocab.encode(list(tokens))
    if not ids:
        raise ValueError("The sentence has no words to read: type at least one word.")
    return ids, vocab.decode(ids)


def skeleton(model_class, config):
    """A model of ``config`` built on torch's "meta" device with its weights left unfilled: its parameters' names,
    shapes and dtypes, in no memory, with no computation and no random draw (counting a run's parameters, checking a
    checkpoint's tensors before reading them)."""
    import torch

    with torch.device("meta"), _SkipInitialisation():
        return model_class(config)


def _SkipInitialisation():
    """A torch function mode that skips in-place fills (``normal_``, ``uniform_``, ``zero_``...) of meta tensors.

    Filling a skeleton on the meta device computes nothing, yet torch routes it through Python references that
    import torch._dynamo: seconds of a server's first checkpoint loaded, or of /train's first form.
    """
    import torch
    from torch.overrides import TorchFunctionMode

    class SkipInitialisation(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            target = args[0] if args else kwargs.get("tensor")  # torch.nn.init passes it by name
            if name.endswith("_") and not name.startswith("_") and isinstance(target, torch.Tensor) and target.is_meta:
                return target
            return func(*args, **kwargs)

    return SkipInitialisation()
