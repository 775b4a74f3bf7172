"""torchx dashboard: every job of every installed scheduler in one local web page.

``torchx dashboard`` serves it; :func:`torchx_dashboard.app.create_app` builds the ASGI app
(for tests or to mount it elsewhere). Everything is read through the Runner API of the installed
plugins: the dashboard imports no backend of its own.
"""

from __future__ import annotations
