-- Argo CD health check for ray.io/RayJob (KubeRay v1.7.0; docs/argocd-health.md).
-- Key in argocd-cm: resource.customizations.health.ray.io_RayJob
--
-- Runs in Argo CD's sandbox: Lua 5.1 with only the base, table and package libraries (no
-- `string` library: text is built with `..` only). Lua sees only this object.
-- Citations: ray-operator/apis/ray/v1/rayjob_types.go and
-- ray-operator/controllers/ray/rayjob_controller.go at v1.7.0.
--
-- status.observedGeneration is declared (rayjob_types.go:348-351) but no v1.7.0 controller writes
-- it, so it is not compared here: it would read 0 forever.
--
-- A RayJob is Healthy only once its Ray job SUCCEEDED: in a sync wave, what comes after a RayJob
-- waits for the job to finish. A stuck job turns Degraded only through KubeRay's own deadlines
-- (spec.activeDeadlineSeconds, spec.preRunningDeadlineSeconds: reasons DeadlineExceeded and
-- PreRunningDeadlineExceeded, rayjob_controller.go:1241-1259).

local function text(v)
  if v == nil then return "" end
  return tostring(v)
end

local function with_message(msg, status)
  if status.message ~= nil and status.message ~= "" then
    return msg .. ": " .. text(status.message)
  end
  return msg
end

local hs = {}
local status = obj.status
local spec = obj.spec or {}

if type(status) ~= "table" or status.jobDeploymentStatus == nil or status.jobDeploymentStatus == "" then
  -- JobDeploymentStatusNew is "" (rayjob_types.go:49): the operator has not initialised the job.
  hs.status = "Progressing"
  hs.message = "Waiting for the KubeRay operator to start the RayJob"
  return hs
end

local deployment = status.jobDeploymentStatus
local cluster = text(status.rayClusterName)
local job = text(status.jobStatus)

-- Validation failures are written as ValidationFailed with the error (rayjob_controller.go:143-161).
if deployment == "ValidationFailed" then
  hs.status = "Degraded"
  hs.message = with_message("The KubeRay operator rejected this RayJob", status)
  return hs
end

-- Failed is final: when spec.backoffLimit allows another attempt the same status update says
-- Retrying instead (rayjob_controller.go:518-557). reason is a JobFailedReason (rayjob_types.go:67-78).
if deployment == "Failed" then
  hs.status = "Degraded"
  hs.message = with_message("RayJob failed (" .. text(status.reason) .. ")", status)
  return hs
end

-- Complete: the Ray job reached a terminal JobStatus (rayjob_controller.go:334-356); FAILED goes
-- to Failed above, so Complete is SUCCEEDED or STOPPED.
if deployment == "Complete" then
  if job == "SUCCEEDED" then
    hs.status = "Healthy"
    hs.message = "Ray job " .. text(status.jobId) .. " succeeded"
  else
    hs.status = "Degraded"
    local msg = "Ray job " .. text(status.jobId) .. " ended " .. job .. " without succeeding"
    hs.message = with_message(msg, status)
  end
  return hs
end

-- spec.suspend (rayjob_types.go:296-300): Running or Initializing -> Suspending -> Suspended
-- (rayjob_controller.go:366-419, 1045-1060); resumed by setting it back to false.
if deployment == "Suspended" then
  if spec.suspend == true then
    hs.status = "Suspended"
    hs.message = "Suspended (spec.suspend): the RayCluster and submitter are deleted"
  else
    hs.status = "Progressing"
    hs.message = "Resuming: spec.suspend is false, waiting for the operator to start the job again"
  end
  return hs
end
if deployment == "Suspending" then
  hs.status = "Progressing"
  hs.message = "Suspending: the operator is deleting the RayCluster and submitter"
  return hs
end

if deployment == "Initializing" then
  local msg = "Initializing: waiting for RayCluster " .. cluster .. " to be ready"
  local cluster_status = status.rayClusterStatus
  if type(cluster_status) == "table" and cluster_status.state ~= nil and cluster_status.state ~= "" then
    msg = msg .. " (state " .. text(cluster_status.state) .. ")"
  end
  hs.status = "Progressing"
  hs.message = msg
  return hs
end

if deployment == "Waiting" then
  -- InteractiveMode: the operator waits for spec.jobId (rayjob_controller.go:237-248).
  hs.status = "Progressing"
  hs.message = "Waiting for a job to be submitted to RayCluster " .. cluster
    .. " (InteractiveMode: set spec.jobId)"
  return hs
end

if deployment == "Running" then
  local msg = "Ray job " .. text(status.jobId) .. " is " .. (job ~= "" and job or "submitted")
    .. " on RayCluster " .. cluster
  hs.status = "Progressing"
  hs.message = with_message(msg, status)
  return hs
end

if deployment == "Retrying" then
  -- A failed attempt within spec.backoffLimit; the next one starts from New (rayjob_controller.go:407-410).
  hs.status = "Progressing"
  hs.message = "Retrying after a failed attempt (" .. text(status.failed) .. " failed so far)"
  return hs
end

hs.status = "Unknown"
hs.message = "Unknown jobDeploymentStatus " .. text(deployment)
return hs
