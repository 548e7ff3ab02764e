"""The same small GPT-style model eager and under torch.compile: profile both and compare.

python examples/compile_compare.py --compile default          (CPU: fp32; CUDA: bf16)
rooflinectl profile examples/compile_compare.py -o eager.profile.json -- --compile none
rooflinectl profile examples/compile_compare.py -o compiled.profile.json -- --compile default
rooflinectl diff eager.profile.json compiled.profile.json
rooflinectl plot eager.profile.json compiled.profile.json -o eager-vs-compiled.png

The timed steps run inside `rooflinectl.region("step")`, so compilation and warm-up are not
counted. Prints an OUTPUT digest: a profiled run computes the same as one without rooflinectl.
On the GPU, `--compile reduce-overhead` replays CUDA graphs and `max-autotune` adds template GEMMs.
"""

from __future__ import annotations

import argparse
import json

import torch

import rooflinectl


class Block(torch.nn.Module):
    """Pre-norm transformer block: causal self-attention (SDPA) and a GELU MLP."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = torch.nn.LayerNorm(width)
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)
        self.ln_2 = torch.nn.LayerNorm(width)
        self.fc = torch.nn.Linear(width, 4 * width)
        self.out = torch.nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, w = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(w, dim=-1)
        q, k, v = (t.view(b, s, self.heads, w // self.heads).transpose(1, 2) for t in (q, k, v))
        attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, s, w))
        return x + self.out(torch.nn.functional.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab: int, width: int, layers: int, heads: int, seq: int) -> None:
        super().__init__()
        self.tok = torch.nn.Embedding(vocab, width)
        self.pos = torch.nn.Embedding(seq, width)
        self.blocks = torch.nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compile", choices=["none", "default", "reduce-overhead", "max-autotune"], default="none")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--width", type=int, default=None, help="default: 64 on CPU, 768 on CUDA")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    width = args.width or (768 if device == "cuda" else 64)
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    model = TinyGPT(1024, width, args.layers, max(width // 64, 1), args.seq).to(device=device, dtype=dtype).eval()
    ids = torch.randint(0, 1024, (args.batch, args.seq), device=device)
    step = model if args.compile == "none" else torch.compile(model, mode=None if args.compile == "default" else args.compile)
    with torch.no_grad():
        for _ in range(args.warmup):  # compiles on the first call
            out = step(ids)
        for _ in range(args.steps):
            with rooflinectl.region("step"):
                out = step(ids)
    values = out.float()
    print("OUTPUT " + json.dumps({"sum": round(float(values.sum()), 4), "abs_sum": round(float(values.abs().sum()), 4)}))


if __name__ == "__main__":
    main()
