"""Static types of `cyscatter._reverse.gather_scatter`: type checkers read this stub in place of gather_scatter.py."""
from typing import Any, SupportsIndex, overload

from numpy.typing import NDArray

from cyscatter._plan.edges import GatherScatterPlan
from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, DimSize, IndexLike, Mode, OpLike

@overload
def gather_scatter_vjp_src(op: OpLike, grad_out: DeviceArray, src: ArrayInput, gather_index: IndexLike | None = ...,
                           scatter_index: IndexLike | None = ..., out: ArrayInput | None = ..., *,
                           weight: ArrayInput | None = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                           mode: Mode | None = ..., plan: GatherScatterPlan | None = ...,
                           num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def gather_scatter_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, gather_index: DeviceIndex,
                           scatter_index: IndexLike | None = ..., out: ArrayInput | None = ..., *,
                           weight: ArrayInput | None = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                           mode: Mode | None = ..., plan: GatherScatterPlan | None = ...,
                           num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def gather_scatter_vjp_src(op: OpLike, grad_out: ArrayInput, src: ArrayInput, gather_index: IndexLike | None = ...,
                           scatter_index: IndexLike | None = ..., out: ArrayInput | None = ..., *,
                           weight: ArrayInput | None = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                           mode: Mode | None = ..., plan: GatherScatterPlan | None = ...,
                           num_threads: SupportsIndex | None = ...) -> NDArray[Any]: ...

@overload
def gather_scatter_vjp_weight(op: OpLike, grad_out: DeviceArray, src: ArrayInput, gather_index: IndexLike | None = ...,
                              scatter_index: IndexLike | None = ..., out: ArrayInput | None = ..., *,
                              weight: ArrayInput | None = ..., dim_size: DimSize | None = ...,
                              axis: SupportsIndex = ..., mode: Mode | None = ..., plan: GatherScatterPlan | None = ...,
                              num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def gather_scatter_vjp_weight(op: OpLike, grad_out: ArrayInput, src: ArrayInput, gather_index: DeviceIndex,
                              scatter_index: IndexLike | None = ..., out: ArrayInput | None = ..., *,
                              weight: ArrayInput | None = ..., dim_size: DimSize | None = ...,
                              axis: SupportsIndex = ..., mode: Mode | None = ..., plan: GatherScatterPlan | None = ...,
                              num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def gather_scatter_vjp_weight(op: OpLike, grad_out: ArrayInput, src: ArrayInput, gather_index: IndexLike | None = ...,
                              scatter_index: IndexLike | None = ..., out: ArrayInput | None = ..., *,
                              weight: ArrayInput | None = ..., dim_size: DimSize | None = ...,
                              axis: SupportsIndex = ..., mode: Mode | None = ..., plan: GatherScatterPlan | None = ...,
                              num_threads: SupportsIndex | None = ...) -> NDArray[Any]: ...

@overload
def gather_scatter_jvp(op: OpLike, src: DeviceArray, gather_index: IndexLike | None = ...,
                       scatter_index: IndexLike | None = ..., out: ArrayInput | None = ...,
                       src_dot: ArrayInput | None = ..., *, weight: ArrayInput | None = ...,
                       weight_dot: ArrayInput | None = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                       mode: Mode | None = ..., plan: GatherScatterPlan | None = ...,
                       num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def gather_scatter_jvp(op: OpLike, src: ArrayInput, gather_index: DeviceIndex, scatter_index: IndexLike | None = ...,
                       out: ArrayInput | None = ..., src_dot: ArrayInput | None = ..., *,
                       weight: ArrayInput | None = ..., weight_dot: ArrayInput | None = ...,
                       dim_size: DimSize | None = ..., axis: SupportsIndex = ..., mode: Mode | None = ...,
                       plan: GatherScatterPlan | None = ..., num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def gather_scatter_jvp(op: OpLike, src: ArrayInput, gather_index: IndexLike | None = ...,
                       scatter_index: IndexLike | None = ..., out: ArrayInput | None = ...,
                       src_dot: ArrayInput | None = ..., *, weight: ArrayInput | None = ...,
                       weight_dot: ArrayInput | None = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                       mode: Mode | None = ..., plan: GatherScatterPlan | None = ...,
                       num_threads: SupportsIndex | None = ...) -> NDArray[Any]: ...
