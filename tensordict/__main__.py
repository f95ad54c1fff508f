"""``python -m tensordict``: the ``tensordict`` command (see :mod:`tensordict.cli`)."""

import sys

from tensordict.cli import main

# The guard matters: worker processes of ``tensordict demo`` are spawned, and spawn
# imports this module again in each of them.
if __name__ == "__main__":
    sys.exit(main())
