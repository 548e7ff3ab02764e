"""A user's own kernels, written as in Triton's tutorials, with no launch_metadata: what
`rooflinectl profile` makes of them (issue 37, docs/custom-kernels.md).

- add_kernel: the tutorial's vector add, 2^26 fp32 elements (805 MB moved per call);
- softmax_kernel: the tutorial's fused row softmax over a [16384, 4096] bf16 tensor;
- strided_add_kernel: the same add with a transposed index over a [2^22, 16] view (neighbouring
  lanes 64 bytes apart, each 32-byte sector fetched for one element and fetched again for each of
  the row's other elements, after 128 MB of other sectors: more than the L2 holds): the same
  arguments, uncoalesced;
- rltest::triton_scale: a torch.library custom op wrapping a Triton kernel;
- rltest_ext::axpb (--ext): a small inline C++/CUDA extension op registered with the dispatcher
  (built by torch.utils.cpp_extension.load_inline; --build-ext builds it and exits).

    rooflinectl profile examples/user_triton.py            # CUDA
    python examples/user_triton.py --size 4096 --rows 64   # any device Triton runs on
"""

from __future__ import annotations

import argparse
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(output_ptr + offsets, x + y, mask=mask)


@triton.jit
def strided_add_kernel(x_ptr, y_ptr, output_ptr, n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    """The add over an [n_rows, n_cols] buffer, walked column by column: lane i of a block takes
    row i, so neighbouring lanes are n_cols elements apart (every element still read once)."""
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_rows * n_cols
    index = (offsets % n_rows) * n_cols + offsets // n_rows
    x = tl.load(x_ptr + index, mask=mask)
    y = tl.load(y_ptr + index, mask=mask)
    tl.store(output_ptr + index, x + y, mask=mask)


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in range(row_start, n_rows, row_step):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float("inf")).to(tl.float32)
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        tl.store(output_row_start_ptr + col_offsets, softmax_output.to(output_ptr.dtype.element_ty), mask=mask)


@triton.jit
def scale_kernel(x_ptr, out_ptr, alpha, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * alpha, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta["BLOCK_SIZE"]),)  # noqa: E731 - as in the tutorial
    add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=1024)
    return output


def strided_add(x: torch.Tensor, y: torch.Tensor, n_cols: int) -> torch.Tensor:
    output = torch.empty_like(x)
    n_rows = x.numel() // n_cols
    strided_add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, output, n_rows, n_cols, BLOCK_SIZE=1024)
    return output


def softmax(x: torch.Tensor) -> torch.Tensor:
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    num_warps = 8 if block >= 2048 else 4
    softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=block, num_warps=num_warps)
    return y


@torch.library.custom_op("rltest::triton_scale", mutates_args=())
def triton_scale(x: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, alpha, x.numel(), BLOCK_SIZE=1024)
    return out


@triton_scale.register_fake
def _(x: torch.Tensor, alpha: float) -> torch.Tensor:
    return torch.empty_like(x)


EXT_CPP = r"""
#include <torch/library.h>
#include <ATen/ATen.h>
at::Tensor axpb_cuda(const at::Tensor& x, double a, double b);
at::Tensor axpb_meta(const at::Tensor& x, double a, double b) { return at::empty_like(x); }
TORCH_LIBRARY(rltest_ext, m) { m.def("axpb(Tensor x, float a, float b) -> Tensor"); }
TORCH_LIBRARY_IMPL(rltest_ext, CUDA, m) { m.impl("axpb", &axpb_cuda); }
TORCH_LIBRARY_IMPL(rltest_ext, Meta, m) { m.impl("axpb", &axpb_meta); }
"""
EXT_CUDA = r"""
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void axpb_kernel(const float* x, float* y, float a, float b, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}
at::Tensor axpb_cuda(const at::Tensor& x, double a, double b) {
  TORCH_CHECK(x.is_cuda() && x.is_contiguous() && x.scalar_type() == at::kFloat, "axpb: contiguous fp32 CUDA");
  auto y = at::empty_like(x);
  long n = x.numel();
  axpb_kernel<<<(n + 255) / 256, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), (float)a, (float)b, n);
  return y;
}
"""


def load_extension() -> None:
    """Build (or load from torch's extension cache) the inline extension; registers rltest_ext::axpb."""
    from torch.utils.cpp_extension import load_inline

    load_inline("rltest_ext", cpp_sources=[EXT_CPP], cuda_sources=[EXT_CUDA], is_python_module=False,
                extra_cuda_cflags=["-O2"], verbose=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 26, help="elements of the vector adds")
    parser.add_argument("--rows", type=int, default=16384, help="softmax rows")
    parser.add_argument("--cols", type=int, default=4096, help="softmax columns")
    parser.add_argument("--stride", type=int, default=16, help="the strided add's row length (elements)")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--ext", action="store_true", help="also call the inline C++/CUDA extension op")
    parser.add_argument("--build-ext", action="store_true", help="build the extension and exit")
    args = parser.parse_args(argv)
    if args.build_ext:
        load_extension()
        print("extension built")
        return 0
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    x, y = torch.rand(args.size, device=device), torch.rand(args.size, device=device)
    rows = torch.randn(args.rows, args.cols, device=device, dtype=torch.bfloat16)
    if args.ext:
        load_extension()
    for _ in range(args.calls):
        out = add(x, y)
        strided = strided_add(x, y, args.stride)
        probs = softmax(rows)
        scaled = triton_scale(x, 2.0)
        if args.ext:
            ext = torch.ops.rltest_ext.axpb(x, 2.0, 1.0)
    if device == "cuda":
        torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)
    torch.testing.assert_close(strided, x + y)
    torch.testing.assert_close(probs.float(), torch.softmax(rows.float(), dim=1), atol=1e-2, rtol=2e-2)
    torch.testing.assert_close(scaled, x * 2.0)
    if args.ext:
        torch.testing.assert_close(ext, 2.0 * x + 1.0)
    print(f"user kernels checked on {device} ({args.calls} calls each)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
