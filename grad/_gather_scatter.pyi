"""Static types of `grad._gather_scatter`: type checkers read this stub in place of _gather_scatter.py."""
# the primitive takes the parameters and gives the result of cyscatter.gather_scatter: typed as that function
from cyscatter._api.gather_scatter import gather_scatter as gather_scatter
