"""``oomkit serve``: a local web page and JSON API over the same functions as the CLI.

:mod:`oomkit.web.bridge` (no web framework) turns a request body into the CLI's own JSON
document; :mod:`oomkit.web.app` (FastAPI, the ``web`` extra) serves it and the static page.
"""
