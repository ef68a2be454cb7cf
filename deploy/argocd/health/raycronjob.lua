-- Argo CD health check for ray.io/RayCronJob (KubeRay v1.7.0, feature gate RayCronJob, alpha and
-- off by default: pkg/features/features.go:110; docs/argocd-health.md).
-- Key in argocd-cm: resource.customizations.health.ray.io_RayCronJob
--
-- Runs in Argo CD's sandbox: Lua 5.1 with only the base, table and package libraries.
-- The operator writes one status field, lastScheduleTime (raycronjob_types.go:27-30,
-- raycronjob_controller.go:130); an invalid spec gets an event and no status
-- (raycronjob_controller.go:77-82). The RayJobs it creates carry their own health.
--
-- Unlike the other kinds, a missing status is Healthy here, not "Waiting for the KubeRay
-- operator": nothing is written before the first tick, which may be days away, and a sync wave
-- would wait for it that long.

local hs = {}
local spec = obj.spec or {}
local status = obj.status

-- spec.suspend stops new runs only (raycronjob_types.go:21-24, raycronjob_controller.go:84-90).
if spec.suspend == true then
  hs.status = "Suspended"
  hs.message = "Suspended (spec.suspend): no new RayJobs are created"
  return hs
end

local schedule = "Schedule " .. tostring(spec.schedule or "(none)")
hs.status = "Healthy"
if type(status) == "table" and status.lastScheduleTime ~= nil then
  hs.message = schedule .. ", last run scheduled at " .. tostring(status.lastScheduleTime)
else
  hs.message = schedule .. ", no run scheduled yet"
end
return hs
