"""The generated reference pages (docs/_hooks/reference.py): every setting is documented where
it is declared, and every setting, command, disposition and reason code reaches the site."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from tests.helpers import PROJECT_ROOT


def _reference() -> ModuleType:
    name = "docs_reference_hook"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, PROJECT_ROOT / "docs" / "_hooks" / "reference.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_every_setting_has_a_description():
    """A field of worker/settings.py needs a comment above it: the configuration reference
    is generated from those comments."""
    assert _reference().undocumented_settings() == []


def test_a_setting_without_a_comment_is_found():
    from pydantic_settings import BaseSettings

    source = '''
class Example(BaseSettings):
    # --- a section -----
    # The first field.
    first: int = 1
    second: int = 2  # The second field, at the end of its line.

    # A paragraph about the section.

    third: int = 3
'''
    namespace: dict[str, object] = {"BaseSettings": BaseSettings}
    exec(source, namespace)
    assert _reference().undocumented_settings(source, namespace["Example"]) == ["third"]


def test_the_configuration_page_names_every_variable():
    from worker.settings import Settings

    reference = _reference()
    page = reference.configuration_markdown()
    for name, info in Settings.model_fields.items():
        for variable in reference.env_names(name, info):
            assert f"`{variable}`" in page, variable
    assert "`DATABASE_URL`" in page and "`REDIS_URL`" in page and "`BROKER_URL`" in page


def test_the_cli_page_has_every_command_and_option():
    reference = _reference()
    page = reference.cli_markdown()
    commands = reference.cli_commands()
    assert len(commands) > 30
    for name, command in commands:
        if name != "memory-worker":
            assert f"`{name}`" in page, name
        for param in command.params:
            if param.param_type_name == "option" and not getattr(param, "hidden", False):
                assert param.opts[0] in page, (name, param.opts)
    assert "`memory-worker notes list`" in page and "`memory-worker health ready`" in page


def test_every_disposition_and_reason_code_is_described():
    from db.enums import Disposition
    from worker.writes.admission.reasons import ReasonCode

    reference = _reference()
    assert set(reference.DISPOSITIONS) == {d.value for d in Disposition}
    codes = reference.reason_codes_markdown()
    for code in ReasonCode:
        assert f"| `{code.value}` | |" not in codes
        assert f"`{code.value}`" in codes


def test_metrics_are_read_from_the_code():
    names = {metric.name for metric in _reference().metrics()}
    assert {"memory_writes_total", "memory_write_duration_seconds", "memory_notes",
            "memory_oldest_provisional_age_seconds"} <= names
