"""Device selection: the same code runs on CPU or CUDA, the device is asked for, never assumed.

Simulators follow the device of their input tensor (``init.uniform_sphere(..., device=dev)``), so
the only decision is which device to ask for; :func:`resolve_device` turns a request into a valid
torch device string or explains why it cannot be had.

The pinned ``torch==2.13.0`` resolves to a CPU wheel. On a GPU machine install the CUDA build of
the same version first, e.g. ``pip install torch==2.13.0 --index-url
https://download.pytorch.org/whl/cu128`` (pick the CUDA tag matching the driver).
"""
from __future__ import annotations

import torch

__all__ = ["resolve_device", "cuda_summary", "synchronize"]


def resolve_device(device: str | torch.device | None = "cpu") -> str:
    """A valid device string for ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:N"``, or ``"auto"``).

    ``"auto"`` (or None) is CUDA when available, else CPU.

    Examples
    --------
    >>> resolve_device("cpu")
    'cpu'
    >>> resolve_device("tpu")
    Traceback (most recent call last):
    ...
    ValueError: device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got 'tpu'
    """
    d = "auto" if device is None else str(device)
    if d == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if d == "cpu":
        return d
    if d == "cuda" or (d.startswith("cuda:") and d[5:].isdigit()):
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={d!r} but torch {torch.__version__} sees no CUDA device "
                f"(torch built with CUDA {torch.version.cuda}); use device='cpu', or install a CUDA build of torch"
            )
        if ":" in d and int(d[5:]) >= torch.cuda.device_count():
            raise ValueError(f"device={d!r} but only {torch.cuda.device_count()} CUDA device(s) exist")
        return d
    raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {d!r}")


def cuda_summary() -> str:
    """One line naming the CUDA device(s), or why there is none.

    Examples
    --------
    >>> isinstance(cuda_summary(), str)
    True
    """
    if not torch.cuda.is_available():
        return f"none (torch {torch.__version__}, CUDA build: {torch.version.cuda})"
    names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return f"{', '.join(names)} (CUDA {torch.version.cuda})"


def synchronize(device: str | torch.device) -> None:
    """Wait for queued kernels on ``device`` (no-op on CPU), so wall-clock timings are honest.

    Examples
    --------
    >>> synchronize("cpu")
    """
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)
