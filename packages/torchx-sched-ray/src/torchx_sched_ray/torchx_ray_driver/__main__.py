"""``python -m torchx_ray_driver``: run the app in ``app.json`` (see :mod:`torchx_ray_driver.driver`)."""

import sys

from .driver import main

sys.exit(main())
