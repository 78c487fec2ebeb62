"""Flotilla API client for Python 3 (standard library only).

    from flotilla_client import Client
    c = Client("http://127.0.0.1:8787", token)
    job = c.create_job("hello-py", input={}, labels={}, budget_usd=1)
    for event in c.follow_events(job["id"]):
        print(event["type"], event["data"])
"""
from .client import Client, COST_GROUPS, JOB_STATUSES
from .errors import (
    BadRequest,
    BadResponse,
    Conflict,
    FlotillaError,
    Forbidden,
    InvalidInput,
    NetworkError,
    NotFound,
    ServerError,
    Unauthorized,
)

__all__ = [
    "Client", "COST_GROUPS", "JOB_STATUSES", "FlotillaError", "BadRequest", "Unauthorized", "Forbidden",
    "NotFound", "Conflict", "InvalidInput", "ServerError", "NetworkError", "BadResponse",
]
