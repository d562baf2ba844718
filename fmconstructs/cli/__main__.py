"""``python -m fmconstructs.cli``: the ``fmc`` command before its console script is installed."""

from .main import main

if __name__ == "__main__":
    main()
