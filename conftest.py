"""This repository's cases as pytest items: the plugin ``harness.pytest_plugin`` reads
``[tool.conformance]`` of ``pyproject.toml``. Installed, the package registers it through its
``pytest11`` entry point (then this line is a no-op); the line keeps it loaded without that."""

pytest_plugins = ["harness.pytest_plugin"]
