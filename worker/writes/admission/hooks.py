"""Running the admission and promotion hooks: loading them by dotted path, bounding them by
the policy's timeout, and turning what goes wrong in a hook into a verdict."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import import_module
from typing import Any

from worker.writes.admission.decisions import (
    AdmissionHookTimeout,
    HookNotAllowed,
    HookVerdict,
    InvalidAdmissionDecision,
    MemoryCandidate,
    PromotionVerdict,
    interpret_promotion_decision,
    interpret_write_decision,
)
from worker.writes.admission.policy import MemoryPolicy
from worker.writes.admission.reasons import ReasonCode

log = logging.getLogger(__name__)

# Hooks run on a small thread pool so a hung one can be abandoned after the timeout (a thread
# cannot be killed; it stays busy until the hook returns, and later calls queue behind at
# most HOOK_THREADS of them, then time out too). One pool per process: pools do not survive
# a fork.
HOOK_THREADS = 4
_pool: ThreadPoolExecutor | None = None
_pool_pid = 0
_pool_lock = threading.Lock()
_hooks: dict[str, Callable[..., Any]] = {}


def _executor() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid():
            _pool = ThreadPoolExecutor(HOOK_THREADS, thread_name_prefix="memory-admission-hook")
            _pool_pid = os.getpid()
        return _pool


def load_hook(path: str) -> Callable[..., Any]:
    """`package.module:attr.attr` or `package.module.attr`; imported once per process."""
    hook = _hooks.get(path)
    if hook is not None:
        return hook
    module_name, attrs = path.split(":", 1) if ":" in path else path.rsplit(".", 1)
    target: Any = import_module(module_name)
    for attr in attrs.split("."):
        target = getattr(target, attr)
    if not callable(target):
        raise TypeError(f"{path} is not callable")
    _hooks[path] = target
    return target


class HookFailure(Exception):
    """The hook could not give a decision; carries only the exception's type name."""

    def __init__(self, type_name: str) -> None:
        super().__init__(type_name)
        self.type_name = type_name


def call_hook(policy: MemoryPolicy, path: str, *args: Any) -> Any:
    """Run a hook with the policy's timeout. Anything going wrong *in the hook* (import,
    exception, timeout) becomes HookFailure; an exception raised in this thread while waiting
    (a Celery soft time limit) propagates."""
    try:
        if path in policy.untrusted_hooks:
            raise HookNotAllowed
        hook = load_hook(path)
    except Exception as exc:
        raise HookFailure(type(exc).__name__) from None
    future = _executor().submit(hook, *args)
    try:
        return future.result(timeout=policy.hook_timeout_s)
    except BaseException as exc:
        if future.done() and not future.cancelled() and future.exception(timeout=0) is exc:
            raise HookFailure(type(exc).__name__) from None
        if isinstance(exc, TimeoutError) and not future.done():
            future.cancel()
            log.warning("memory admission hook %s timed out after %.1fs", path,
                        policy.hook_timeout_s)
            raise HookFailure(AdmissionHookTimeout.__name__) from None
        raise


def run_write_hook(policy: MemoryPolicy, text: str, context: dict[str, Any]) -> HookVerdict:
    path = policy.memory_write_admission
    required = policy.require_write_admission
    if path is None:
        if required:
            return HookVerdict("block", ReasonCode.HOOK_MISSING, hooked=False)
        return HookVerdict("allow", hooked=False)
    try:
        value = call_hook(policy, path, text, dict(context))
        return interpret_write_decision(value, required=required)
    except (HookFailure, InvalidAdmissionDecision) as exc:
        error = exc.type_name if isinstance(exc, HookFailure) else type(exc).__name__
        if required:
            return HookVerdict("block", ReasonCode.HOOK_ERROR, error=error)
        return HookVerdict("allow", error=error)  # not fail-closed: the hook is advisory


def run_promotion_hook(policy: MemoryPolicy, candidate: MemoryCandidate,
                       context: dict[str, Any]) -> PromotionVerdict:
    """No hook, or a hook that fails: the candidate is kept (non-injectable) for review."""
    path = policy.memory_promotion_admission
    if path is None:
        return PromotionVerdict("keep", hooked=False)
    try:
        return interpret_promotion_decision(call_hook(policy, path, candidate, dict(context)))
    except HookFailure as exc:
        return PromotionVerdict("keep", error=exc.type_name)
    except InvalidAdmissionDecision:
        return PromotionVerdict("keep", error=InvalidAdmissionDecision.__name__)
