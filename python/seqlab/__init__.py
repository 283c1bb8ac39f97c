"""seqlab from Python: the library behind the `seqlab` command line (docs/python.md).

    import seqlab
    model = seqlab.load("models/teacher-en")        # forward(ids) -> logits, a torch.Tensor
    fast = seqlab.FastModel("models/teacher-en")    # the fast decoder: generate, step, states
    seqlab.convert("models/teacher-en", "runs/t2r", to="t2r")

Tensors are shared with PyTorch, not copied: torch (Debian's python3-torch) is the same LibTorch
the extension links, and it is imported first so that the extension can hand out torch.Tensor.
"""
import torch  # noqa: F401  (must come before the extension: it registers torch.Tensor)

from ._seqlab import (  # noqa: F401
    Error,
    FastModel,
    FastState,
    Model,
    State,
    Stream,
    Tokenizer,
    __version__,
    convert,
    finetune,
    load,
    read_results,
    run_suite,
    suite_cells,
    suites,
)

__all__ = [
    "Error",
    "FastModel",
    "FastState",
    "Model",
    "State",
    "Stream",
    "Tokenizer",
    "convert",
    "finetune",
    "load",
    "read_results",
    "run_suite",
    "suite_cells",
    "suites",
]
