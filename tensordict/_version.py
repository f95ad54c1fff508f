"""The one version of the package, and the version of the well-known API it implements.

``pyproject.toml`` reads ``__version__`` from here (the package metadata), the package
exports it as ``tensordict.__version__``, and ``tensordict --version`` prints both.
"""

__version__ = "0.1.0"

# The release of the well-known TensorDict whose API this package implements.
REFERENCE_API = "0.15.3"
