"""The ``dpscale`` command line: one command per capability, ``--json`` everywhere."""
