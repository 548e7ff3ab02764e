"""The one entry point of the cost model: `explain_cost(source)` and `cost_of(source)`.

Every FLOP and byte figure a profile holds comes through here; the source's type says which
formula applies (see costs/__init__.py for the list). Attribution decides which source a kernel
has (an op call, a collective, a generated kernel, a Triton launch's declaration, a transfer) and
builds it from the trace; the formulas are all in costs/.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from rooflinectl.costs import registry
from rooflinectl.costs.collectives import Collective, collective_cost
from rooflinectl.costs.inductor import cpp_kernel_cost, triton_kernel_cost
from rooflinectl.costs.registry import OpCost
from rooflinectl.costs.tensors import OpCall
from rooflinectl.costs.transfers import transfer_cost
from rooflinectl.costs.triton_declared import argument_cost, combined_declaration, declared_cost


@dataclass(frozen=True, eq=False)  # identity: the dicts inside are not hashable
class InductorTritonLaunch:
    """One launch of an Inductor-generated Triton kernel: its profiler op's args (kernel_num_gb,
    kernel_flop) and its call (the tensors it was passed)."""

    kernel: str
    args: dict[str, Any]
    call: OpCall


@dataclass(frozen=True, eq=False)  # identity: the dicts inside are not hashable
class InductorCppCall:
    """One call of an Inductor C++ kernel (CPU) with the buffers its generated wrapper names."""

    kernel: str
    buffers: list[dict[str, Any]] | None = None


@dataclass(frozen=True, eq=False)  # identity: the dicts inside are not hashable
class TritonDeclaration:
    """The launches of one Triton call as capture/run/triton_hook.py summarised their launch_metadata
    (one launch in a profile; all of a reference kernel variant's launches in `rooflinectl kernels`)."""

    launches: tuple[dict[str, Any], ...]


@dataclass(frozen=True, eq=False)  # identity: the dicts inside are not hashable
class TritonArguments:
    """An undeclared Triton launch: the bytes its tensor arguments span (capture/run/triton_args.py)."""

    summary: dict[str, Any]


@dataclass(frozen=True, eq=False)  # identity: the dicts inside are not hashable
class Transfer:
    """A memset or memcpy with the size the trace records; kind as costs/transfers.TRANSFER_KINDS."""

    kind: str
    size_bytes: float


@functools.singledispatch
def explain_cost(source: Any) -> tuple[OpCost | None, str]:
    """(cost, "") or (None, why not) for any cost source; a type with no formula raises TypeError."""
    raise TypeError(f"no cost source for {type(source).__name__}")


@explain_cost.register
def _op_call(source: OpCall) -> tuple[OpCost | None, str]:
    # the registry's formulas (torch's FLOP counter inside the GEMM, conv and attention ones),
    # and the inputs-and-outputs fallback for a custom op
    return registry.explain_cost(source)


@explain_cost.register
def _collective(source: Collective) -> tuple[OpCost | None, str]:
    return collective_cost(source), ""


@explain_cost.register
def _inductor_triton(source: InductorTritonLaunch) -> tuple[OpCost | None, str]:
    cost = triton_kernel_cost(source.kernel, source.args, source.call)
    return cost, "" if cost is not None else "Inductor kernel without kernel_num_gb or its tensors' sizes"


@explain_cost.register
def _inductor_cpp(source: InductorCppCall) -> tuple[OpCost | None, str]:
    cost = cpp_kernel_cost(source.kernel, source.buffers)
    return cost, "" if cost is not None else "Inductor C++ kernel whose buffers were not read"


@explain_cost.register
def _triton_declared(source: TritonDeclaration) -> tuple[OpCost | None, str]:
    if not source.launches:
        return None, "no launch declared a cost"
    cost = declared_cost(combined_declaration(list(source.launches)))
    return cost, "" if cost is not None else "its launch_metadata declares no bytes"


@explain_cost.register
def _triton_arguments(source: TritonArguments) -> tuple[OpCost | None, str]:
    return argument_cost(source.summary), ""


@explain_cost.register
def _transfer(source: Transfer) -> tuple[OpCost | None, str]:
    return transfer_cost(source.kind, source.size_bytes), ""


def cost_of(source: Any) -> OpCost | None:
    """The cost of any cost source (explain_cost without the reason), or None when unknown."""
    return explain_cost(source)[0]
