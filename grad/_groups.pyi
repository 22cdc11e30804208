"""Static types of `grad._groups`: type checkers read this stub in place of _groups.py."""
# each primitive takes the parameters and gives the result of its cyscatter namesake: typed as that function
from typing import Any, SupportsIndex

from cyscatter._api.argext import scatter_argmax as scatter_argmax
from cyscatter._api.argext import scatter_argmin as scatter_argmin
from cyscatter._api.moments import scatter_nanstd as scatter_nanstd
from cyscatter._api.moments import scatter_nanvar as scatter_nanvar
from cyscatter._api.moments import scatter_std as scatter_std
from cyscatter._api.moments import scatter_var as scatter_var
from cyscatter._api.ranges import segment_ranges as segment_ranges
from cyscatter._api.segment import gather_segment as gather_segment
from cyscatter._api.segment import segment as segment
from cyscatter._typing import ArrayInput, DimSize, IndexLike, Mode

# the softmax family without cyscatter's out= (results here are new arrays, as autograd's own functions give)
def scatter_logsumexp(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                      mode: Mode = ...) -> Any: ...
def scatter_softmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ..., axis: SupportsIndex = ...,
                    mode: Mode = ...) -> Any: ...
def scatter_log_softmax(src: ArrayInput, index: IndexLike, *, dim_size: DimSize | None = ...,
                        axis: SupportsIndex = ..., mode: Mode = ...) -> Any: ...
