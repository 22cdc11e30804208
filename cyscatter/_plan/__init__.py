"""Planning: user arguments turned into what a kernel call needs, validated once.

`index` parses an integer or tuple index into flat destination rows under a mode, `layout` places the index dims
in `src` (axis, broadcasting) and gives the canonical (outer, n, inner) shapes, `values` decides dtypes,
`dtype=`, `out=`, fill values and scalar arguments, `edges` plans gather_scatter's edge pairs, and `groups` the
float group ops (softmax family, moments).
"""
