"""One module per calculator page, each defining ``CALCULATOR`` (see ``dpscale.web.registry``)."""
