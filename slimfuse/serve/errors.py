"""The server's errors as a client sees them: {"error": NAME, "exit_code": CODE, "message": ONE LINE}, and the HTTP
status of each of slimfuse's own errors."""
from __future__ import annotations

# HTTP status of slimfuse's errors, by exit code (the rest are 500).
STATUS_BY_EXIT = {2: 422, 3: 404, 4: 422, 5: 422, 6: 422, 7: 415, 8: 422, 9: 422, 14: 503, 15: 503, 16: 413,
                  18: 503, 24: 503, 30: 422, 31: 422, 32: 415, 33: 422, 36: 422, 41: 422}


class ApiError(Exception):
    """An error of the server itself (not of a swap)."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error, self.message = status, error, message


def error_body(error: str, exit_code: int | None, message: str) -> dict[str, object]:
    return {"error": error, "exit_code": exit_code, "message": message}
