"""One LoRA training step of the LLM chapter against the machine's matrix-product limit. Not a test: prints ratios.

The LLM chapter's two training experiments (issue 32, item 3) run 2 x 12 LoRA fine-tunes of 180
AdamW steps each on the bundled SmolLM2-135M, 4 x 128 tokens a step. Nearly all of a step is
matrix products: the frozen model forward and the gradient with respect to its activations (the
frozen weights get none). This script, in one process, at ``--threads`` torch threads:

1. counts the floating-point operations of one step twice: with torch's own operation counter
   (``torch.utils.flop_counter.FlopCounterMode``, every matrix product the step dispatches) and in
   closed form from the model's configuration (:func:`step_flops`); the two must agree to a few per cent;
2. times the step (rank 16 on q_proj and v_proj, float32, the full profile's batch), the median of
   ``--repeat`` after one warm-up;
3. times float32 matrix products alone at the step's own shapes (tokens x hidden x intermediate,
   the output head) and one large square product, the best rate of these being what the machine's
   BLAS reaches here;
4. prints the step's rate against that limit, and the least wall time the chapter's 4,320 steps need
   at the limit (checkpoint evaluations and start-up left out, so the true floor is higher).

Usage: python bench/llm_step.py [--threads T] [--repeat R] [--rank R]
"""
from __future__ import annotations

import argparse
import statistics
import time


def step_flops(cfg, batch: int, seq: int, rank: int, adapted: int) -> float:
    """Floating-point operations of one LoRA training step of a Llama-style decoder, in closed form.

    Forward: 2 per weight per token for every projection and the output head, plus the attention
    scores and their weighted sum (``4 seq hidden`` per token per layer, the full square that the
    CPU kernel computes under a causal mask). Backward with frozen weights: only the gradient with
    respect to the activations, the same count again; the adapters (``adapted`` modules a layer, of
    width ``hidden``) add their own forward, activation and weight gradients.

    >>> from types import SimpleNamespace
    >>> c = SimpleNamespace(hidden_size=4, intermediate_size=8, num_hidden_layers=1, num_attention_heads=2,
    ...                     num_key_value_heads=1, vocab_size=10)
    >>> step_flops(c, batch=1, seq=2, rank=1, adapted=0)   # twice (2 tokens x 2 x 184 weights + 4 x 2 x 2 x 4)
    1600.0
    """
    h, f, L = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers
    kv = h * cfg.num_key_value_heads // cfg.num_attention_heads
    per_layer = h * h * 2 + h * kv * 2 + 3 * h * f  # q, o; k, v; gate, up, down
    weights = L * per_layer + h * cfg.vocab_size
    tokens = batch * seq
    forward = 2 * tokens * weights + 4 * tokens * seq * h * L
    lora = 2 * tokens * (2 * h * rank) * adapted * L  # x A and (x A) B: forward, input gradient, weight gradient
    return float(2 * forward + 3 * lora)


def _loss(model, ids):
    """Mean next-token cross-entropy of ``ids`` (blocks, seq), as ``companion.llm.probes.train_lora`` takes it."""
    import torch

    logits = model(input_ids=ids, use_cache=False).logits[:, :-1]
    return torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def counted_flops(model, ids) -> float:
    """Floating-point operations of one forward and backward, as torch's counter sees them."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as counter:
        _loss(model, ids).backward()
    model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops())


def time_step(model, ids, repeat: int) -> list[float]:
    """Seconds of one AdamW step (forward, loss, backward, update), one warm-up then ``repeat`` timed."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.0)
    times = []
    for k in range(repeat + 1):
        t0 = time.perf_counter()
        loss = _loss(model, ids)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if k:
            times.append(time.perf_counter() - t0)
    return times


def gemm_rate(m: int, k: int, n: int, repeat: int) -> float:
    """Best float32 rate (FLOP/s) of ``(m, k) @ (k, n)`` over ``repeat`` products after a warm-up."""
    import torch

    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    out = torch.empty(m, n)
    torch.mm(a, b, out=out)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        torch.mm(a, b, out=out)
        best = min(best, time.perf_counter() - t0)
    return 2.0 * m * k * n / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rank", type=int, default=16)
    args = ap.parse_args()
    import os

    import torch

    from companion.experiments.llm_probes._common import _load
    from companion.experiments.llm_probes.training import PROFILES_TRAINING
    from companion.llm import probes

    torch.set_num_threads(args.threads)
    full = PROFILES_TRAINING["full"]
    model, _, path = _load(None, torch.device("cpu"), tokenizer=False)
    cfg = model.config
    ids = torch.randint(cfg.vocab_size, (full.batch_size, full.train_block_len), generator=torch.Generator().manual_seed(0))
    pm = probes.add_lora(model, args.rank, targets=full.targets)
    pm.train()
    closed = step_flops(cfg, full.batch_size, full.train_block_len, args.rank, len(full.targets))
    counted = counted_flops(pm, ids)
    print(f"model {path}: {cfg.num_hidden_layers} layers, hidden {cfg.hidden_size}; step of {full.batch_size} x "
          f"{full.train_block_len} tokens, LoRA rank {args.rank} on {', '.join(full.targets)}")
    print(f"threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.2f}")
    print(f"FLOP a step: counted {counted / 1e9:.1f} G, closed form {closed / 1e9:.1f} G (ratio {counted / closed:.3f})")
    times = time_step(pm, ids, args.repeat)
    step = statistics.median(times)
    print(f"step: median {step:.3f} s over {args.repeat} (range {min(times):.3f}-{max(times):.3f} s), "
          f"{counted / step / 1e9:.0f} GFLOP/s")
    h, f = cfg.hidden_size, cfg.intermediate_size
    tokens = full.batch_size * full.train_block_len
    shapes = {f"{tokens} x {h} x {f} (MLP)": (tokens, h, f), f"{tokens} x {h} x {cfg.vocab_size} (head)":
              (tokens, h, cfg.vocab_size), "4096 x 4096 x 4096": (4096, 4096, 4096)}
    rates = {name: gemm_rate(*s, repeat=args.repeat) for name, s in shapes.items()}
    for name, r in rates.items():
        print(f"float32 matrix product {name}: {r / 1e9:.0f} GFLOP/s")
    limit = max(rates.values())
    runs = 2 * len(full.ranks) * len(full.seeds)
    steps = runs * full.steps
    print(f"the step reaches {counted / step / limit:.2f} of the best matrix-product rate")
    print(f"the chapter's {runs} fine-tunes x {full.steps} steps = {steps} steps: at least "
          f"{steps * counted / limit / 60:.0f} min at that rate, {steps * step / 60:.0f} min at the measured step")
    print(f"ratio {step * limit / counted:.2f}")


if __name__ == "__main__":
    main()
