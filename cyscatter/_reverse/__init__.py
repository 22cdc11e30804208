"""Split reverse functions (VJPs) and forward derivatives (JVPs), free of any autodiff framework: `rules` holds
each op's rules on the canonical view; the other modules are the public reverse functions of each family."""
