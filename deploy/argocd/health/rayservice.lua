-- Argo CD health check for ray.io/RayService (KubeRay v1.7.0; docs/argocd-health.md).
-- Key in argocd-cm: resource.customizations.health.ray.io_RayService
--
-- Runs in Argo CD's sandbox: Lua 5.1 with only the base, table and package libraries and an `os`
-- reduced to time/date. There is no `string` library (no string.format, no s:sub): text is built
-- with `..` only. Every state below is one the operator writes; Lua sees only this object, never
-- events, pods or the clock.
-- Citations: ray-operator/apis/ray/v1/rayservice_types.go and
-- ray-operator/controllers/ray/rayservice_controller.go at v1.7.0.

local function text(v)
  if v == nil then return "" end
  return tostring(v)
end

local function find_condition(conditions, ctype)
  if type(conditions) ~= "table" then return nil end
  for _, c in ipairs(conditions) do
    if type(c) == "table" and c.type == ctype then return c end
  end
  return nil
end

local function is_true(c) return c ~= nil and c.status == "True" end

local function detail(c)
  if c == nil or c.message == nil or c.message == "" then return "" end
  return ": " .. text(c.message)
end

-- Serve applications (a map keyed by name) in a stable order: Argo CD's Lua (gopher-lua) and
-- C Lua walk a table's keys in different orders, the message must not depend on it.
local function app_names(service_status)
  local names = {}
  if type(service_status) ~= "table" or type(service_status.applicationStatuses) ~= "table" then
    return names
  end
  for name, _ in pairs(service_status.applicationStatuses) do table.insert(names, name) end
  table.sort(names)
  return names
end

-- Ray Serve's application states that do not heal by waiting (rayservice_types.go:36-50):
-- DEPLOY_FAILED stays until a new config is submitted, UNHEALTHY is a failing health check. KubeRay
-- no longer acts on either (serviceUnhealthySecondThreshold is unused, rayservice_types.go:94-99).
local FAILED_APP = { DEPLOY_FAILED = true, UNHEALTHY = true }

local function failed_app(service_status)
  for _, name in ipairs(app_names(service_status)) do
    local app = service_status.applicationStatuses[name]
    if type(app) == "table" and FAILED_APP[app.status] then
      local msg = "Serve application " .. text(name) .. " is " .. text(app.status)
      if app.message ~= nil and app.message ~= "" then msg = msg .. ": " .. text(app.message) end
      return msg
    end
  end
  return nil
end

local function unready_app(service_status)
  for _, name in ipairs(app_names(service_status)) do
    local app = service_status.applicationStatuses[name]
    if type(app) == "table" and app.status ~= nil and app.status ~= "RUNNING" then
      return "Serve application " .. text(name) .. " is " .. text(app.status)
    end
  end
  return nil
end

-- A pod failure of the new cluster, read from the RayCluster status the RayService copies
-- (rayservice_controller.go:664). That copy is refreshed only when another status field changes
-- (utils/consistency.go:36-37), so it can lag; it never shows a failure that did not happen.
local BAD_POD_REASON = {
  CrashLoopBackOff = true, ImagePullBackOff = true, ErrImagePull = true, ErrImageNeverPull = true,
  InvalidImageName = true, CreateContainerConfigError = true, CreateContainerError = true,
  RunContainerError = true, PreStartHookError = true, PostStartHookError = true, OOMKilled = true,
}

local function cluster_failure(cluster_status)
  if type(cluster_status) ~= "table" then return nil end
  local failure = find_condition(cluster_status.conditions, "ReplicaFailure")
  if is_true(failure) then
    return "its pods cannot be created (" .. text(failure.reason) .. ")" .. detail(failure)
  end
  local head = find_condition(cluster_status.conditions, "HeadPodReady")
  if head ~= nil and head.status ~= "True" and BAD_POD_REASON[head.reason] then
    return "its head pod is in " .. text(head.reason) .. detail(head)
  end
  return nil
end

local hs = {}
local status = obj.status
local spec = obj.spec or {}
local meta = obj.metadata or {}

if type(status) ~= "table" or next(status) == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the KubeRay operator to report status"
  return hs
end

local ready = find_condition(status.conditions, "Ready")
local upgrading = find_condition(status.conditions, "UpgradeInProgress")
local rolling_back = find_condition(status.conditions, "RollbackInProgress")
local suspending = find_condition(status.conditions, "Suspending")
local suspended = find_condition(status.conditions, "Suspended")
local active = status.activeServiceStatus or {}
local pending = status.pendingServiceStatus or {}
local active_name = text(active.rayClusterName)
local pending_name = text(pending.rayClusterName)

-- A spec the operator refuses: Ready=False/ValidationFailed, written before anything else and
-- without moving observedGeneration (rayservice_controller.go:157-171).
if ready ~= nil and ready.status == "False" and ready.reason == "ValidationFailed" then
  hs.status = "Degraded"
  hs.message = "The KubeRay operator rejected this RayService" .. detail(ready)
  return hs
end

-- ray.io/initializing-timeout fired: terminal. The operator deletes the RayClusters and never
-- retries; only deleting and recreating the RayService recovers (rayservice_controller.go:184-197,
-- 2229-2275). It fires only while Ready is False/Initializing, i.e. before the RayService first
-- serves, never during an upgrade of a serving RayService (rayservice_controller.go:2244-2247).
if ready ~= nil and ready.status == "False" and ready.reason == "InitializingTimeout" then
  hs.status = "Degraded"
  hs.message = "Initialization timed out (ray.io/initializing-timeout); the operator deleted the "
    .. "RayClusters and will not retry: delete and recreate the RayService" .. detail(ready)
  return hs
end

-- spec.suspend (rayservice_types.go:125-129): Suspending, then Suspended, set only by handleSuspend
-- (rayservice_controller.go:383-462). Suspending completes even if suspend is set back to false.
if is_true(suspended) then
  if spec.suspend == true then
    hs.status = "Suspended"
    hs.message = "Suspended (spec.suspend): all RayClusters and Services of this RayService are deleted"
  else
    hs.status = "Progressing"
    hs.message = "Resuming: spec.suspend is false, waiting for the operator to recreate the RayCluster"
  end
  return hs
end
if is_true(suspending) then
  hs.status = "Progressing"
  hs.message = "Suspending: the operator is deleting the RayClusters" .. detail(suspending)
  return hs
end
if spec.suspend == true then
  hs.status = "Progressing"
  hs.message = "Suspend requested: waiting for the operator to start suspending"
  return hs
end

-- calculateStatus stamps observedGeneration on every pass (rayservice_controller.go:653) and the
-- conditions carry it, so the status is written (utils/consistency.go:100-102): an older value
-- means the operator has not yet acted on the current spec.
local generation = tonumber(meta.generation)
local observed = tonumber(status.observedGeneration)
if generation ~= nil and observed ~= nil and observed < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the KubeRay operator to act on generation " .. text(generation)
    .. " (status is for generation " .. text(observed) .. ")"
  return hs
end

-- A stuck upgrade, as far as the operator's status shows it: the new cluster's Serve application
-- failed or its pods cannot start. KubeRay keeps the old cluster serving and waits without a
-- deadline (no timeout applies once the RayService has served).
if pending_name ~= "" then
  local why = failed_app(pending)
  if why == nil then
    local failure = cluster_failure(pending.rayClusterStatus)
    if failure ~= nil then why = "RayCluster " .. pending_name .. ": " .. failure end
  end
  if why ~= nil then
    hs.status = "Degraded"
    if active_name ~= "" then
      hs.message = "Upgrade stuck on the new RayCluster " .. pending_name .. ": " .. why
        .. ". " .. active_name .. " keeps serving; KubeRay switches only once the new cluster is ready"
    else
      hs.message = "Initialization stuck on RayCluster " .. pending_name .. ": " .. why
    end
    return hs
  end
end

-- RollbackInProgress: an incremental upgrade whose target went back to the running cluster's
-- spec; traffic moves back to the active cluster (rayservice_controller.go:701-716).
if is_true(rolling_back) then
  hs.status = "Progressing"
  hs.message = "Rolling back the upgrade: traffic is moving back to " .. active_name .. detail(rolling_back)
  return hs
end

-- UpgradeInProgress=True while both an active and a pending cluster exist
-- (rayservice_controller.go:806-808).
if is_true(upgrading) or (pending_name ~= "" and active_name ~= "") then
  local msg = "Upgrade in progress: new RayCluster " .. pending_name .. " is being prepared, "
    .. active_name .. " keeps serving"
  if pending.trafficRoutedPercent ~= nil then
    msg = msg .. " (" .. text(pending.trafficRoutedPercent) .. "% of traffic on the new cluster)"
  end
  local app = unready_app(pending)
  if app ~= nil then msg = msg .. "; " .. app end
  hs.status = "Progressing"
  hs.message = msg
  return hs
end

if is_true(ready) then
  local why = failed_app(active)
  if why ~= nil then
    hs.status = "Degraded"
    hs.message = why .. " (RayCluster " .. active_name .. ")"
    return hs
  end
  local app = unready_app(active)
  if app ~= nil then
    hs.status = "Progressing"
    hs.message = app .. " (RayCluster " .. active_name .. ")"
    return hs
  end
  hs.status = "Healthy"
  hs.message = "Serving from RayCluster " .. active_name .. " with " .. text(status.numServeEndpoints)
    .. " serve endpoint(s)"
  return hs
end

-- Ready=False/ZeroServeEndpoints: it served, and now no pod serves (rayservice_controller.go:797-798).
if ready ~= nil and ready.reason == "ZeroServeEndpoints" then
  hs.status = "Degraded"
  hs.message = "No serve endpoints: the RayService served before and now no Ray pod serves traffic"
  return hs
end

-- Ready=False/Initializing: first start (or resume) not finished (rayservice_controller.go:789-792).
if ready ~= nil and ready.reason == "Initializing" then
  local msg = "Initializing"
  if pending_name ~= "" then
    msg = msg .. ": waiting for RayCluster " .. pending_name .. " and its Serve applications"
  end
  local annotations = meta.annotations or {}
  local timeout = annotations["ray.io/initializing-timeout"]
  if timeout ~= nil and timeout ~= "" then
    msg = msg .. " (the operator gives up after ray.io/initializing-timeout=" .. text(timeout) .. ")"
  else
    msg = msg .. " (no ray.io/initializing-timeout is set: the operator waits without a deadline)"
  end
  hs.status = "Progressing"
  hs.message = msg
  return hs
end

-- UpgradeInProgress=Unknown/NoActiveCluster: no active cluster and not initializing, a state the
-- operator itself calls unexpected (rayservice_controller.go:811-816).
if upgrading ~= nil and upgrading.status == "Unknown" then
  hs.status = "Unknown"
  hs.message = "No active RayCluster and not initializing" .. detail(upgrading)
  return hs
end

-- Operators before conditions existed only set serviceStatus (rayservice_types.go:13-20).
if ready == nil and status.serviceStatus == "Running" then
  hs.status = "Healthy"
  hs.message = "Serving (serviceStatus Running)"
  return hs
end

hs.status = "Progressing"
hs.message = "Waiting for the RayService to become ready" .. detail(ready)
return hs
