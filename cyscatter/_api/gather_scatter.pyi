"""Static types of `cyscatter._api.gather_scatter`: type checkers read this stub in place of gather_scatter.py."""
from typing import Any, SupportsIndex, overload

from numpy.typing import NDArray

from cyscatter._plan.edges import GatherScatterPlan
from cyscatter._typing import ArrayInput, DeviceArray, DeviceIndex, DimSize, FillValue, IndexLike, Mode, ReduceOpLike

@overload
def gather_scatter(src: DeviceArray, gather_index: IndexLike | None = ..., scatter_index: IndexLike | None = ...,
                   op: ReduceOpLike = ..., *, weight: ArrayInput | None = ..., dim_size: DimSize | None = ...,
                   axis: SupportsIndex = ..., fill_value: FillValue | None = ..., mode: Mode | None = ...,
                   plan: GatherScatterPlan | None = ..., num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def gather_scatter(src: ArrayInput, gather_index: DeviceIndex, scatter_index: IndexLike | None = ..., op: ReduceOpLike = ...,
                   *, weight: ArrayInput | None = ..., dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                   fill_value: FillValue | None = ..., mode: Mode | None = ..., plan: GatherScatterPlan | None = ...,
                   num_threads: SupportsIndex | None = ...) -> Any: ...
@overload
def gather_scatter(src: ArrayInput, gather_index: IndexLike | None = ..., scatter_index: IndexLike | None = ...,
                   op: ReduceOpLike = ..., *, weight: ArrayInput | None = ..., dim_size: DimSize | None = ...,
                   axis: SupportsIndex = ..., fill_value: FillValue | None = ..., mode: Mode | None = ...,
                   plan: GatherScatterPlan | None = ..., num_threads: SupportsIndex | None = ...) -> NDArray[Any]: ...
