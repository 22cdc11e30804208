"""The version of cyscatter: its one source (pyproject.toml reads it, `cyscatter.__version__` imports it)."""
__version__ = "0.1.0"
