-- Argo CD health check for ray.io/RayCluster (KubeRay v1.7.0; docs/argocd-health.md).
-- Key in argocd-cm: resource.customizations.health.ray.io_RayCluster
--
-- Runs in Argo CD's sandbox: Lua 5.1 with only the base, table and package libraries (no
-- `string` library: text is built with `..` only). Lua sees only this object, never pods, events
-- or the clock.
-- Citations: ray-operator/apis/ray/v1/raycluster_types.go and
-- ray-operator/controllers/ray/raycluster_controller.go at v1.7.0.
--
-- Not used, on purpose:
-- * status.observedGeneration. The operator writes the status only when state, replicas,
--   endpoints, head or conditions change (raycluster_controller.go:2369-2376 with
--   utils/consistency.go:10-33), so a spec change that moves none of them (say an image under
--   upgradeStrategy None) leaves observedGeneration behind for good: comparing it would report
--   Progressing forever.
-- * status.state "ready" alone while conditions exist: once set it is never cleared
--   (raycluster_controller.go:2017-2021), so it cannot show a head pod that later fails.
-- * spec validation: an invalid RayCluster gets an event and no status
--   (raycluster_controller.go:165-210); here it stays "Waiting for the KubeRay operator".

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

-- HeadPodReady carries the head pod's PodReady reason, replaced by the first waiting or
-- terminated container's reason when it is ContainersNotReady (utils/util.go:84-138). These
-- kubelet reasons do not clear by waiting.
local BAD_POD_REASON = {
  CrashLoopBackOff = true, ImagePullBackOff = true, ErrImagePull = true, ErrImageNeverPull = true,
  InvalidImageName = true, CreateContainerConfigError = true, CreateContainerError = true,
  RunContainerError = true, PreStartHookError = true, PostStartHookError = true, OOMKilled = true,
}

local function workers(status)
  local desired = tonumber(status.desiredWorkerReplicas) or 0
  local ready = tonumber(status.readyWorkerReplicas) or 0
  return ready, desired
end

local hs = {}
local status = obj.status
local spec = obj.spec or {}

if type(status) ~= "table" or next(status) == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the KubeRay operator to report status"
  return hs
end

local conditions = status.conditions
local suspending = find_condition(conditions, "RayClusterSuspending")
local suspended = find_condition(conditions, "RayClusterSuspended")
local failure = find_condition(conditions, "ReplicaFailure")
local head = find_condition(conditions, "HeadPodReady")
local provisioned = find_condition(conditions, "RayClusterProvisioned")

-- spec.suspend (raycluster_types.go:21-24): RayClusterSuspending, then RayClusterSuspended once
-- no pod is left, and state "suspended" (raycluster_controller.go:2064-2116). Suspending completes
-- even if suspend is set back to false.
if is_true(suspended) or (suspended == nil and status.state == "suspended") then
  if spec.suspend == true then
    hs.status = "Suspended"
    hs.message = "Suspended (spec.suspend): all Ray pods are deleted"
  else
    hs.status = "Progressing"
    hs.message = "Resuming: spec.suspend is false, waiting for the operator to recreate the pods"
  end
  return hs
end
if is_true(suspending) then
  hs.status = "Progressing"
  hs.message = "Suspending: the operator is deleting the Ray pods"
  return hs
end
if spec.suspend == true then
  hs.status = "Progressing"
  hs.message = "Suspend requested: waiting for the operator to delete the Ray pods"
  return hs
end

-- ReplicaFailure=True: the last reconcile failed to create or delete a pod (quota, admission,
-- ...); removed by the next reconcile that succeeds (raycluster_controller.go:1980-1995). Argo CD
-- treats a ReplicaSet's ReplicaFailure the same way.
if is_true(failure) then
  hs.status = "Degraded"
  hs.message = "The operator cannot create or delete pods (" .. text(failure.reason) .. ")" .. detail(failure)
  return hs
end

local ready_workers, desired_workers = workers(status)

if head ~= nil or provisioned ~= nil then
  -- Conditions (feature gate RayClusterStatusConditions, on by default: pkg/features/features.go:106).
  if head ~= nil and head.status ~= "True" then
    if BAD_POD_REASON[head.reason] then
      hs.status = "Degraded"
      hs.message = "Head pod is in " .. text(head.reason) .. detail(head)
    else
      hs.status = "Progressing"
      hs.message = "Waiting for the head pod to be ready (" .. text(head.reason) .. ")" .. detail(head)
    end
    return hs
  end
  -- RayClusterProvisioned: all pods ready once; never reset afterwards except by a suspend
  -- (raycluster_types.go:654-656, raycluster_controller.go:2044-2062).
  if not is_true(provisioned) then
    hs.status = "Progressing"
    hs.message = "Pods are being provisioned for the first time (" .. text(ready_workers) .. " of "
      .. text(desired_workers) .. " workers ready)"
    return hs
  end
elseif status.state ~= "ready" then
  -- Without conditions only state tells: "ready" once every pod runs (raycluster_controller.go:2017-2021).
  hs.status = "Progressing"
  hs.message = "Waiting for all Ray pods to run (state " .. text(status.state) .. ")"
  return hs
end

-- desiredWorkerReplicas sums replicas x numOfHosts over the groups; readyWorkerReplicas counts the
-- worker pods running and ready (utils/util.go:410-461). Fewer ready than desired is a scale-up
-- (by the autoscaler or the spec) or a worker that died.
if ready_workers < desired_workers then
  hs.status = "Progressing"
  hs.message = text(ready_workers) .. " of " .. text(desired_workers) .. " worker pods ready"
  return hs
end

hs.status = "Healthy"
hs.message = "Head pod ready, " .. text(ready_workers) .. " of " .. text(desired_workers)
  .. " worker pods ready"
return hs
