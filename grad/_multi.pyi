"""Static types of `grad._multi`: type checkers read this stub in place of _multi.py."""
# each function takes the parameters and gives the result of its cyscatter namesake: typed as that function
from cyscatter._api.multi import gather_scatter_multi as gather_scatter_multi
from cyscatter._api.multi import scatter_multi as scatter_multi
from cyscatter._api.multi import segment_multi as segment_multi
