"""Request and response models of the HTTP API: what /openapi.json and /docs show.

The report models mirror ``diffing.Report.to_dict()`` (docs/contract.md "The report"); the
service sends the core's dict as is, and a test checks real answers against these models.
Extra keys are allowed in responses, so a field the core adds does not break clients.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from diffing import kinds, vocab
from diffing.versions import DEFAULT

# Derived from the core's vocabularies, so a rollout or category the core adds is in the schema.
Decision = Literal[tuple(d.value for d in vocab.Decision)]  # type: ignore[valid-type]
Kind = Literal[kinds.NAMES]  # type: ignore[valid-type]
Rollout = Literal[tuple(r.value for r in vocab.Rollout)]  # type: ignore[valid-type]
Category = Literal[tuple(dict.fromkeys(  # type: ignore[valid-type]
    str(c) for k in kinds.KINDS for c in k.analysis.categories))]
Amount = int | str


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AnalyzeRequest(_Strict):
    """Two manifest texts and the options of ``diffing.analyze``."""

    before: str = Field(description='YAML before the change; "" = nothing there (the resource is created)')
    after: str = Field(description='YAML after the change; "" = nothing there (the resource is deleted)')
    kuberayVersion: str | None = Field(default=None, examples=[DEFAULT],
                                       description="operator version whose rules apply (1.6.x, 1.7.x)")
    headroom: dict[str, Amount] | None = Field(default=None, examples=[{"nvidia.com/gpu": 8}],
                                               description="free capacity known to the caller")
    policy: dict[str, Any] | None = Field(
        default=None,
        description="a policy mapping, as in the policy YAML; default: RAYSERVICE_IMPACT_POLICY_FILE")


class ManagedResource(BaseModel):
    """One Argo CD ``v1alpha1ResourceDiff``; the states are JSON strings, "null" when absent."""

    model_config = ConfigDict(extra="allow")

    group: str | None = None
    kind: str | None = None
    namespace: str | None = None
    name: str | None = None
    liveState: str | None = None
    targetState: str | None = None
    normalizedLiveState: str | None = None
    predictedLiveState: str | None = None
    hook: bool | None = None
    modified: bool | None = None
    resourceVersion: str | None = None
    diff: str | None = None


class ManagedResourcesRequest(BaseModel):
    """An Argo CD ``applicationManagedResourcesResponse``."""

    model_config = ConfigDict(extra="allow")

    items: list[ManagedResource] | None = None


class ChangeModel(BaseModel):
    path: str
    category: Category
    before: Any = None
    after: Any = None
    detail: str | None = None


class FindingModel(BaseModel):
    severity: Literal["error", "warning", "info"]
    code: str
    path: str
    message: str
    line: int | None = None


class CapacityModel(BaseModel):
    basis: Literal["manifest", "live"]
    extra: dict[str, Amount]
    peak: dict[str, Amount]
    headroom: dict[str, Amount] | None = None
    serveGpus: dict[str, Any] | None = None


class ResourceModel(BaseModel):
    apiVersion: str
    kind: Kind
    namespace: str
    name: str
    action: Literal["created", "deleted", "updated", "unchanged"]
    rollout: Rollout
    decision: Decision
    reasons: list[str]
    changes: list[ChangeModel]
    capacity: CapacityModel
    findings: list[FindingModel]
    ignoreDifferences: list[dict[str, Any]]


class ReportResponse(BaseModel):
    """The report (schemaVersion 1)."""

    schemaVersion: Literal[1]
    kuberayVersion: str
    decision: Decision
    summary: str
    resources: list[ResourceModel]


class ErrorLocation(BaseModel):
    source: str | None = None
    document: int | None = None
    line: int | None = None
    path: str | None = None


class ErrorDetail(BaseModel):
    code: str = Field(examples=["invalid-manifest"])
    message: str
    location: ErrorLocation | None = None


class ErrorResponse(BaseModel):
    """Every error answer."""

    error: ErrorDetail


class HealthResponse(BaseModel):
    status: Literal["ok"]


class ReadyResponse(BaseModel):
    status: Literal["ready"]
    workers: int
    inFlight: int
    capacity: int


def _error(description: str) -> dict[str, Any]:
    return {"model": ErrorResponse, "description": description}


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: _error("malformed JSON (or not UTF-8)"),
    413: _error("body over RAYSERVICE_IMPACT_MAX_BODY_BYTES"),
    415: _error("Content-Type is not application/json"),
    422: _error("a body of the wrong shape, YAML that cannot be read, a bad policy or KubeRay version"),
    503: _error("the analysis pool is saturated, starting, or the time budget ran out (see Retry-After)"),
}

REPORT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "the report; with ?format=markdown the same as markdown text",
          "content": {"text/markdown": {"schema": {"type": "string"}}}},
    **ERROR_RESPONSES,
}


def request_body(model: type[BaseModel]) -> dict[str, Any]:
    """``openapi_extra`` for a route that reads and validates its JSON body itself."""
    return {"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}}}


def component_schemas(*models: type[BaseModel]) -> dict[str, Any]:
    """JSON schemas of request models, flattened into OpenAPI components."""
    out: dict[str, Any] = {}
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        out.update(schema.pop("$defs", {}))
        out[model.__name__] = schema
    return out
