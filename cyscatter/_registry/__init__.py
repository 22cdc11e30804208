"""The op registry (`ops`): one `Op` per reduction, the single source of truth that the backends, the planning
layer, the public functions, `grad` and the tests read."""
