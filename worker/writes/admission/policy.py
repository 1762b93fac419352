"""The MemoryPolicy of SPEC 5: its fields, how an agent's overrides are validated, and how
the global settings and the agent's fields combine into the policy a write is judged by."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from worker.settings import Settings


HOOK_FIELDS = ("memory_write_admission", "memory_promotion_admission")
POLICY_FIELDS = (
    "min_write_length", "reject_write_patterns", "screen_effects", "reject_foreign_identities",
    "reject_repetitive_writes", "max_writes_per_run", "reject_duplicate_writes",
    "memory_write_admission", "require_write_admission", "memory_promotion_admission",
    "require_promotion_for_internal_memory", "trusted_sources", "enforce_expires_at",
    "allow_unattributed_results",
)


@dataclass(frozen=True)
class MemoryPolicy:
    """SPEC 5's MemoryPolicy. Built by `resolve_policy`: settings, then the agent's fields."""

    min_write_length: int = 0
    reject_write_patterns: tuple[str, ...] = ()
    screen_effects: bool = True
    reject_foreign_identities: bool = True
    reject_repetitive_writes: bool = True
    max_writes_per_run: int | None = None
    reject_duplicate_writes: bool = False
    memory_write_admission: str | None = None
    require_write_admission: bool = False
    memory_promotion_admission: str | None = None
    require_promotion_for_internal_memory: bool = True
    trusted_sources: tuple[str, ...] = ("user",)
    enforce_expires_at: bool = False
    allow_unattributed_results: bool = True
    hook_timeout_s: float = 2.0
    # Hook paths an agent configuration named outside `admission_hook_modules`: calling one
    # fails like a hook that raised (blocks when fail-closed).
    untrusted_hooks: frozenset[str] = frozenset()

    @property
    def compiled_patterns(self) -> tuple[re.Pattern[str], ...]:
        return _compile_patterns(self.reject_write_patterns)

    def is_internal(self, source: str) -> bool:
        """Every source but the trusted ones is internal, so a source name a service invents
        cannot skip promotion."""
        return source not in self.trusted_sources

    def needs_promotion(self, source: str) -> bool:
        return self.require_promotion_for_internal_memory and self.is_internal(source)


@lru_cache(maxsize=64)
def _compile_patterns(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p, re.IGNORECASE) for p in patterns)


class PolicyError(ValueError):
    pass


_HOOK_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*([:.][A-Za-z_]\w*(\.[A-Za-z_]\w*)*)$")
_BOOL_FIELDS = ("screen_effects", "reject_foreign_identities", "reject_repetitive_writes",
                "reject_duplicate_writes", "require_write_admission",
                "require_promotion_for_internal_memory", "enforce_expires_at",
                "allow_unattributed_results")


def _string_list(name: str, value: Any, *, max_items: int, max_length: int) -> list[str]:
    if not isinstance(value, list | tuple) or len(value) > max_items:
        raise PolicyError(f"{name} must be a list of at most {max_items} strings")
    if not all(isinstance(v, str) and 0 < len(v) <= max_length for v in value):
        raise PolicyError(f"{name} items must be strings of 1 to {max_length} characters")
    return list(value)


def validate_policy_overrides(value: Any) -> dict[str, Any] | None:
    """Check an agent's `memory_policy` (a partial MemoryPolicy); return it JSON-ready.

    Raises PolicyError naming every problem. Regexes are compiled here so a bad pattern is
    refused when it is configured, not on the next write."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise PolicyError("memory_policy must be an object")
    problems: list[str] = []
    unknown = sorted(map(str, set(value) - set(POLICY_FIELDS)))
    if unknown:
        problems.append(f"unknown fields: {', '.join(unknown)}")
    clean: dict[str, Any] = {}
    for name, item in value.items():
        if name not in POLICY_FIELDS:
            continue
        try:
            clean[name] = _validate_field(name, item)
        except PolicyError as exc:
            problems.append(str(exc))
    if problems:
        raise PolicyError("; ".join(problems))
    return clean


def _validate_field(name: str, item: Any) -> Any:
    if name in _BOOL_FIELDS:
        if not isinstance(item, bool):
            raise PolicyError(f"{name} must be true or false")
        return item
    if name in ("min_write_length", "max_writes_per_run"):
        nullable = name == "max_writes_per_run"
        if item is None and nullable:
            return None
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item <= 10_000:
            raise PolicyError(f"{name} must be an integer from 0 to 10000")
        return item
    if name in HOOK_FIELDS:
        if item is not None and not (isinstance(item, str) and len(item) <= 300
                                     and _HOOK_PATH.match(item)):
            raise PolicyError(f"{name} must be a dotted path such as package.module:function")
        return item
    if name == "trusted_sources":
        return _string_list(name, item, max_items=50, max_length=100)
    patterns = _string_list(name, item, max_items=200, max_length=500)
    for pattern in patterns:
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise PolicyError(f"reject_write_patterns: {pattern[:60]!r} is not a valid "
                              f"regex ({exc})") from None
    return patterns


def _module_allowed(path: str, modules: Iterable[str]) -> bool:
    module = path.split(":", 1)[0] if ":" in path else path.rsplit(".", 1)[0]
    for prefix in modules:
        prefix = prefix.rstrip(".")
        if prefix and (module == prefix or module.startswith(prefix + ".")):
            return True
    return False


def resolve_policy(settings: Settings, overrides: Mapping[str, Any] | None = None
                   ) -> MemoryPolicy:
    """The global policy from settings, with the agent's fields on top (agent wins)."""
    values: dict[str, Any] = {name: getattr(settings, name) for name in POLICY_FIELDS}
    untrusted: set[str] = set()
    agent_fields = validate_policy_overrides(dict(overrides)) if overrides else None
    for name, item in (agent_fields or {}).items():
        if name in HOOK_FIELDS and item is not None and item != getattr(settings, name) \
                and not _module_allowed(item, settings.admission_hook_modules):
            untrusted.add(item)
        values[name] = tuple(item) if isinstance(item, list) else item
    return MemoryPolicy(**values, hook_timeout_s=settings.admission_hook_timeout_s,
                        untrusted_hooks=frozenset(untrusted))
