"""The web app: calculator pages in several languages, embed views and a JSON API.

Needs the ``web`` extra (``pip install 'dpscale[web]'``); start it with ``dpscale serve``.
"""

from dpscale.web.app import create_app

__all__ = ["create_app"]
