"""Structured JSON logs: one line per event, one line per HTTP request.

Only fields chosen here are written: never a request body, a header or a setting value, so
secrets and manifests cannot leak into the log.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

ACCESS_LOGGER = "rayservice_impact.access"
_ACCESS_FIELDS = ("method", "route", "status", "duration_ms", "decision", "error", "cache", "client",
                  "request_id")


class JSONFormatter(logging.Formatter):
    """``{"ts": ..., "level": ..., "logger": ..., "msg": ..., <extra fields>}`` per record."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key in _ACCESS_FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                line[key] = value
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure_logging(level: str = "info") -> None:
    """Route the service's and uvicorn's loggers to one JSON handler on stderr.

    ``app`` covers every module logger named after its module (``app.github.flow``,
    ``app.clients.github``...), which used to bypass the handler (plain-text warnings, INFO lost).
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter())
    for name in ("rayservice_impact", "app", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False
    logging.getLogger("uvicorn.access").disabled = True  # our access line replaces it


def log_request(fields: dict[str, Any]) -> None:
    logger = logging.getLogger(ACCESS_LOGGER)
    if logger.isEnabledFor(logging.INFO):
        logger.info("request", extra={k: v for k, v in fields.items() if k in _ACCESS_FIELDS})
