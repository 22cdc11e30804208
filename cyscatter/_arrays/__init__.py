"""Array classification, the bottom layer: where an array lives (host, CUDA, another device) asked through the
array protocols, other libraries' arrays checked and read, dtype classes (bfloat16 as a float) and integer
arguments. Imports nothing else of cyscatter."""
