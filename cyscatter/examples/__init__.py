"""Runnable examples of cyscatter; ``python -m cyscatter.examples.gcn`` is the main one.

They need the ``examples`` extra (``pip install "cyscatter[examples]"``: autograd, scikit-learn, matplotlib,
tqdm). Importing this package imports none of them; each example imports what it needs when it runs.
"""
