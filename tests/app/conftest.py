"""Shared fixtures for tests/app. The HTTP service's fixtures are named ``analysis_*``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import pytest
from fastapi import FastAPI
from serverutil import running_server

from app.server import create_app
from app.settings import load_settings

ANALYSIS_MAX_BODY_BYTES = 4 * 1024 * 1024


class LiveService(NamedTuple):
    base_url: str
    app: FastAPI


@pytest.fixture(scope="session")
def analysis_service() -> Iterator[LiveService]:
    """The HTTP service on a real uvicorn server (process pool of 2), for the whole session."""
    app = create_app(load_settings(max_body_bytes=ANALYSIS_MAX_BODY_BYTES, analysis_workers=2,
                                   analysis_queue=8, analysis_timeout_seconds=20, policy_file=None,
                                   kuberay_version="1.7.0", live_basis="off"))
    with running_server(app) as base_url:
        yield LiveService(base_url, app)
