"""``torchx.components.component_test_base``: a ``unittest`` base for testing components.

Upstream TorchX's helper, for teams that test their own components::

    from torchx.components.component_test_base import ComponentTestCase
    import my_components

    class MyComponentsTest(ComponentTestCase):
        def test_trainer(self) -> None:
            self.validate(my_components, "trainer")           # passes the component linter
            status = self.run_component(my_components.trainer, {"epochs": 1})
            self.assertEqual(status.state, AppState.SUCCEEDED)

This module holds no component (it is not listed by ``torchx builtins``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import unittest
from collections.abc import Callable
from types import ModuleType
from typing import Any

from torchx.specs import AppDef, AppStatus

__all__ = ["ComponentTestCase"]


class ComponentTestCase(unittest.TestCase):
    """Checks components with the linter and runs them on a scheduler (``local_cwd`` by default).

    Each test runs in a fresh temporary directory (``self.tmpdir``), which is also the
    working directory of the jobs ``local_cwd`` starts.
    """

    def setUp(self) -> None:
        self.tmpdir = tempfile.mkdtemp(prefix="torchx_component_test_")
        self._old_cwd = os.getcwd()
        os.chdir(self.tmpdir)

    def tearDown(self) -> None:
        os.chdir(self._old_cwd)
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def validate(self, module: ModuleType, function_name: str) -> None:
        """Fails the test if ``module.function_name`` is not a valid component (linter errors)."""
        from torchx.specs.file_linter import validate

        path = module.__file__
        self.assertIsNotNone(path, f"{module.__name__} has no source file to lint")
        errors = [m for m in validate(str(path), function_name) if m.severity == "error"]
        self.assertEqual([], [f"{m.name}: {m.description}" for m in errors])

    def run_component(
        self,
        component: Callable[..., AppDef],
        args: dict[str, Any] | None = None,
        scheduler_params: dict[str, Any] | None = None,
        scheduler: str = "local_cwd",
        interval: float = 1.0,
    ) -> AppStatus | None:
        """Builds the app with ``component(**args)``, runs it on ``scheduler`` and waits for it
        to end; returns its final status."""
        from torchx.runner import get_runner

        app = component(**(args or {}))
        with get_runner(**(scheduler_params or {})) as runner:
            handle = runner.run(app, scheduler)
            return runner.wait(handle, wait_interval=interval)
