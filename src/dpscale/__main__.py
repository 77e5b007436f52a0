"""``python -m dpscale``: the same as the ``dpscale`` command."""

from dpscale.cli.main import main

if __name__ == "__main__":
    main()
