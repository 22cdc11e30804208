"""Static types of `grad._scan`: type checkers read this stub in place of _scan.py."""
# the primitive takes the parameters and gives the result of cyscatter.scatter_scan: typed as that function
from cyscatter._api.scan import scatter_scan as scatter_scan
