"""Programs some components run inside the job, as ``python -m torchx_components.apps.<name>``.

They use only the standard library, plus fsspec for URLs (``torchx-components[copy]``).
"""
