"""Why a tool call failed: the stable codes and the exception handlers raise.

A leaf module (no imports of the rest of the kernel), so the path policy and the specs can
both use it without importing each other.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.StrEnum):
    """Stable error codes of a failed call; the model and the timeline see them."""

    UNKNOWN_TOOL = "unknown_tool"
    INVALID_ARGUMENTS = "invalid_arguments"
    PERMISSION_DENIED = "permission_denied"
    APPROVAL_DENIED = "approval_denied"
    APPROVAL_UNAVAILABLE = "approval_unavailable"
    TIMEOUT = "timeout"
    EXECUTION_ERROR = "execution_error"
    CANCELLED = "cancelled"
    LOOP_DETECTED = "loop_detected"
    RATE_LIMITED = "rate_limited"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"


class ToolError(Exception):
    """Raised by a handler for an expected failure: the message goes to the model.

    `retryable` marks transient failures the dispatcher may retry (up to the spec's
    `retries`); `code` lets a tool report a more precise code than execution_error.
    """

    def __init__(
        self,
        message: str,
        *,
        hint: str = "",
        retryable: bool = False,
        code: ErrorCode = ErrorCode.EXECUTION_ERROR,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.retryable = retryable
        self.code = code
