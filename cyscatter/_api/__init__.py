"""The public functions, one module per family: each plans its arguments (`cyscatter._plan`), runs a backend
(`cyscatter._backends`) and finishes the result."""
