"""Device selection: the same code runs on CPU or CUDA, the device is asked for, never assumed.

Simulators follow the device of their input tensor (``init.uniform_sphere(..., device=dev)``), so
the only decision is which device to ask for; :func:`resolve_device` turns a request into a valid
torch device string or explains why it cannot be had.

The pinned ``torch==2.13.0`` resolves to a CPU wheel (``2.13.0+cpu``). On a GPU machine install the
CUDA build of the same version into the environment, naming the local label (``torch==2.13.0`` alone
is already satisfied by ``2.13.0+cpu``, so pip would keep the CPU build)::

    .venv/bin/python -m pip install "torch==2.13.0+cu128" --index-url https://download.pytorch.org/whl/cu128

with the CUDA tag (``cu128`` here) no newer than the driver's CUDA version (``nvidia-smi``), then
verify with ``make gpu-check``.
"""
from __future__ import annotations

import sys

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
            raise ValueError(f"device={d!r} but torch {torch.__version__} sees no CUDA device: {_no_cuda_remedy()}")
        if ":" in d and int(d[5:]) >= torch.cuda.device_count():
            raise ValueError(f"device={d!r} but only {torch.cuda.device_count()} CUDA device(s) exist")
        return d
    raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {d!r}")


def _no_cuda_remedy() -> str:
    """Why torch sees no CUDA device and what to do: a CPU-only build needs the CUDA build of the same
    version (the pin stays); a CUDA build that sees no device is a driver or visibility problem."""
    if torch.version.cuda is None:
        base = torch.__version__.split("+")[0]
        return ("this torch is a CPU-only build. Install the CUDA build of the same version into this environment, "
                f"e.g. `{sys.executable} -m pip install \"torch=={base}+cu128\" --index-url https://download.pytorch.org/whl/cu128` "
                "(a CUDA tag no newer than the driver's CUDA version in `nvidia-smi`), check it with `make gpu-check`, "
                "or use device='cpu'")
    return (f"this torch is built for CUDA {torch.version.cuda}, but no GPU is visible to this process: check "
            f"`nvidia-smi` (a driver supporting CUDA {torch.version.cuda}) and CUDA_VISIBLE_DEVICES, then "
            "`make gpu-check`; or use device='cpu'")


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
