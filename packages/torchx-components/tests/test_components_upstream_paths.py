"""``torchx.components`` is this package (one module object per file), and its test base works."""

from __future__ import annotations

import unittest


def test_torchx_components_is_this_package() -> None:
    import torchx.components
    import torchx.components.dist
    import torchx_components
    import torchx_components.dist

    assert torchx.components is torchx_components
    assert torchx.components.dist is torchx_components.dist


def test_component_test_case_validates() -> None:
    import torchx.components.utils as utils
    from torchx.components.component_test_base import ComponentTestCase

    class Lint(ComponentTestCase):
        def test_echo(self) -> None:
            self.validate(utils, "echo")

    result = unittest.TextTestRunner(verbosity=0).run(unittest.defaultTestLoader.loadTestsFromTestCase(Lint))
    assert result.wasSuccessful()
