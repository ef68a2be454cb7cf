package main

// One case: the "before" object is written through the API-server simulation and converged
// (old clusters' deletion delay fast-forwarded), then the "after" object is written as an update
// and converged twice: first without fast-forward (old and new clusters coexist: the peak), then
// with it (the end state). What the operator did is read back from the world.

import (
	"crypto/sha1" //nolint:gosec // KubeRay's hash is SHA-1
	"encoding/base32"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/ray-project/kuberay/ray-operator/controllers/ray/utils"
)

const maxRounds = 80

// Case is one input line.
type Case struct {
	ID           string            `json:"id"`
	Version      string            `json:"version"`
	FeatureGates map[string]bool   `json:"featureGates"`
	Env          map[string]string `json:"env"`
	Kind         string            `json:"kind"`
	Before       map[string]any    `json:"before"`
	After        map[string]any    `json:"after"`
}

// Result is one output line.
type Result struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Admission struct {
		Before *Admission `json:"before"`
		After  *Admission `json:"after,omitempty"`
	} `json:"admission"`
	// Rollout in the comparison's vocabulary (README.md): new-cluster, incremental,
	// cluster-in-place, serve-in-place, not-applied, none, suspend, resume, recreate, scale,
	// latent, next-run.
	Rollout    string      `json:"rollout"`
	Validation *Validation `json:"validation"`
	Clusters   struct {
		Created []string `json:"created"`
		Updated []string `json:"updated"`
		Deleted []string `json:"deleted"`
	} `json:"clusters"`
	// Serve config submissions after the change, by cluster role: "old" (ran before the change)
	// or "new" (created by it).
	Serve map[string]int `json:"serve"`
	// Pods created/deleted after the change, by "role/group" ("old/gpu-group", "new/headgroup").
	Pods struct {
		Created map[string]int `json:"created"`
		Deleted map[string]int `json:"deleted"`
	} `json:"pods"`
	// Every extended resource: the total before the change, the peak while the change rolls
	// out, and the difference (extra).
	Accelerators struct {
		Before map[string]string `json:"before"`
		Peak   map[string]string `json:"peak"`
		Extra  map[string]string `json:"extra"`
	} `json:"accelerators"`
	Hash      *Hashes  `json:"hash,omitempty"`
	Probe     string   `json:"probe,omitempty"` // RayCluster: do pods built later differ? "differs" | "same"
	Events    []string `json:"events"`          // reasons recorded after the change, in order, deduplicated
	Rounds    []int    `json:"rounds"`
	Converged bool     `json:"converged"`
	Errors    int      `json:"reconcileErrors"`
	LastError string   `json:"lastReconcileError,omitempty"`
	Error     string   `json:"error,omitempty"` // the harness could not run the case
	Millis    int64    `json:"ms"`
	Debug     any      `json:"debug,omitempty"` // CONFORMANCE_DEBUG=1: submissions, events, changes
}

// Validation is the operator's validation verdict on the object after the change.
type Validation struct {
	Failed  bool   `json:"failed"`
	Reason  string `json:"reason,omitempty"` // the event reason, e.g. InvalidRayServiceSpec
	Message string `json:"message,omitempty"`
}

// Hashes: the RayCluster hash annotations before and after, and the goal hash of the stored
// "after" object with the exact bytes Go hashed (for a byte-for-byte comparison).
type Hashes struct {
	Annotation string            `json:"annotation"`
	Before     map[string]string `json:"before"`
	After      map[string]string `json:"after"`
	Goal       string            `json:"goal"`
	GoalInput  string            `json:"goalInput"`
}

func newObject(kind string) client.Object {
	switch kind {
	case "RayService":
		return &rayv1.RayService{}
	case "RayCluster":
		return &rayv1.RayCluster{}
	case "RayJob":
		return &rayv1.RayJob{}
	}
	return nil
}

func runCase(c *Case, crds map[string]*crd) (res Result) {
	start := time.Now()
	res.ID, res.Kind = c.ID, c.Kind
	res.Serve = map[string]int{}
	res.Pods.Created, res.Pods.Deleted = map[string]int{}, map[string]int{}
	defer func() {
		if r := recover(); r != nil {
			res.Error = fmt.Sprintf("panic: %v", r)
			if os.Getenv("CONFORMANCE_DEBUG") != "" {
				res.Error += "\n" + string(debug.Stack())
			}
		}
		res.Millis = time.Since(start).Milliseconds()
	}()
	api := crds[c.Kind]
	if api == nil || newObject(c.Kind) == nil || c.Before == nil || c.After == nil {
		res.Error = "unsupported case: kind " + c.Kind + " with both before and after"
		return res
	}
	restore := applySettings(c)
	defer restore()
	w := newWorld()

	// 1. before: create and converge to the steady state.
	w.phase = "before"
	adm := api.admit(w.ctx, c.Before, nil)
	res.Admission.Before = &adm
	if !adm.Accepted {
		res.Error = "the before object is rejected: " + strings.Join(adm.Errors, "; ")
		return res
	}
	obj := newObject(c.Kind)
	must(runtime.DefaultUnstructuredConverter.FromUnstructured(adm.Stored, obj))
	must(w.c.Create(w.ctx, obj))
	n, ok := w.converge(maxRounds, true)
	res.Rounds = append(res.Rounds, n)
	res.Converged = ok
	before := w.snapshot(c.Kind, obj.GetName())

	// 2. after: the user's write, as an update of the stored object.
	w.phase = "after"
	cur := newObject(c.Kind)
	must(w.c.Get(w.ctx, client.ObjectKeyFromObject(obj), cur))
	curU, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	must(err)
	old := runtime.DeepCopyJSON(adm.Stored)
	old["metadata"] = curU["metadata"]
	if st, ok := curU["status"]; ok {
		old["status"] = st
	}
	next := runtime.DeepCopyJSON(c.After)
	next["metadata"] = userMetadata(c.After, curU)
	adm2 := api.admit(w.ctx, next, old)
	res.Admission.After = &adm2
	if adm2.Accepted {
		obj2 := newObject(c.Kind)
		must(runtime.DefaultUnstructuredConverter.FromUnstructured(adm2.Stored, obj2))
		obj2.SetResourceVersion(cur.GetResourceVersion())
		must(w.c.Update(w.ctx, obj2))
		n, ok = w.converge(maxRounds, false)
		res.Rounds = append(res.Rounds, n)
		w.phase = "settle"
		w.fastForward()
		n2, ok2 := w.converge(maxRounds, true)
		res.Rounds = append(res.Rounds, n2)
		res.Converged = res.Converged && ok && ok2
	}
	after := w.snapshot(c.Kind, obj.GetName())
	w.readBack(&res, before, after)
	switch {
	case !adm2.Accepted:
		res.Rollout = "not-applied"
	case c.Kind == "RayService":
		w.rayService(&res, before, after, adm.Stored, adm2.Stored)
	case c.Kind == "RayCluster":
		w.rayCluster(&res, before, after, adm.Stored, adm2.Stored)
	case c.Kind == "RayJob":
		w.rayJob(&res, before, after, adm.Stored, adm2.Stored)
	}
	for k, v := range w.errors {
		if k != "before" {
			res.Errors += v
		}
	}
	res.LastError = w.lastErr
	if os.Getenv("CONFORMANCE_DEBUG") != "" {
		res.Debug = map[string]any{"submissions": w.submissions, "events": w.events, "log": w.log, "status": after.obj, "clusters": after.clusters, "errors": w.errors, "allErrors": w.allErrors}
	}
	return res
}

// userMetadata: the metadata of the user's "after" object, with what the server and the
// operator own kept from the stored object (uid, resourceVersion, creationTimestamp,
// generation, finalizers: pitfall 13).
func userMetadata(after map[string]any, stored map[string]any) map[string]any {
	m := map[string]any{}
	if am, ok := after["metadata"].(map[string]any); ok {
		m = runtime.DeepCopyJSON(am)
	}
	sm, _ := stored["metadata"].(map[string]any)
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "generation", "finalizers", "namespace"} {
		if v, ok := sm[k]; ok {
			m[k] = v
		}
	}
	return m
}

// ---- snapshots -----------------------------------------------------------------------------

type snapshot struct {
	obj      client.Object                // the RayService / RayCluster / RayJob
	clusters map[string]*rayv1.RayCluster // by name
	heads    map[string]*corev1.Pod       // head pod by cluster name
	pods     map[string][]corev1.Pod      // by cluster name
	totals   map[string]int64
}

func (w *world) snapshot(kind, name string) *snapshot {
	s := &snapshot{obj: newObject(kind), clusters: map[string]*rayv1.RayCluster{}, heads: map[string]*corev1.Pod{},
		pods: map[string][]corev1.Pod{}, totals: map[string]int64{}}
	must(w.c.Get(w.ctx, client.ObjectKey{Namespace: namespace, Name: name}, s.obj))
	var clusters rayv1.RayClusterList
	var pods corev1.PodList
	must(w.c.List(w.ctx, &clusters))
	must(w.c.List(w.ctx, &pods))
	for i := range clusters.Items {
		s.clusters[clusters.Items[i].Name] = &clusters.Items[i]
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		cl := p.Labels[utils.RayClusterLabelKey]
		s.pods[cl] = append(s.pods[cl], *p)
		if p.Labels[utils.RayNodeTypeLabelKey] == string(rayv1.HeadNode) {
			s.heads[cl] = p
		}
		for k, v := range podResources(p) {
			s.totals[k] += v
		}
	}
	return s
}

// readBack fills what every kind shares: clusters and pods changed after the change, Serve
// submissions, the accelerator peak and the events.
func (w *world) readBack(res *Result, before, after *snapshot) {
	role := func(cluster string) string {
		if _, ok := before.clusters[cluster]; ok {
			return "old"
		}
		return "new"
	}
	for _, ch := range w.log {
		if ch.Phase == "before" {
			continue
		}
		switch {
		case ch.Kind == "RayCluster" && ch.Verb == "created":
			res.Clusters.Created = appendOnce(res.Clusters.Created, ch.Name)
		case ch.Kind == "RayCluster" && ch.Verb == "updated" && role(ch.Name) == "old":
			res.Clusters.Updated = appendOnce(res.Clusters.Updated, ch.Name)
		case ch.Kind == "RayCluster" && ch.Verb == "deleted":
			res.Clusters.Deleted = appendOnce(res.Clusters.Deleted, ch.Name)
		case ch.Kind == "Pod" && ch.Verb == "created":
			res.Pods.Created[role(ch.Cluster)+"/"+ch.Group]++
		case ch.Kind == "Pod" && ch.Verb == "deleted":
			res.Pods.Deleted[role(ch.Cluster)+"/"+ch.Group]++
		}
	}
	for _, s := range w.submissions {
		if s.Phase != "before" {
			res.Serve[role(s.Cluster)]++
		}
	}
	res.Accelerators.Before, res.Accelerators.Peak, res.Accelerators.Extra = map[string]string{}, map[string]string{}, map[string]string{}
	peak := map[string]int64{}
	for k, v := range before.totals {
		peak[k] = v
	}
	for k, v := range w.peak["after"] {
		if v > peak[k] {
			peak[k] = v
		}
	}
	for k, v := range peak {
		res.Accelerators.Peak[k] = milliString(v)
		if b := before.totals[k]; v > b {
			res.Accelerators.Extra[k] = milliString(v - b)
		}
	}
	for k, v := range before.totals {
		res.Accelerators.Before[k] = milliString(v)
	}
	seen := map[string]bool{}
	for _, e := range w.events {
		if e.Phase != "before" && !seen[e.Reason] {
			seen[e.Reason] = true
			res.Events = append(res.Events, e.Reason)
		}
	}
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func (w *world) eventsAfter(reasons ...string) *Event {
	for i := range w.events {
		e := &w.events[i]
		if e.Phase == "before" {
			continue
		}
		for _, r := range reasons {
			if e.Reason == r {
				return e
			}
		}
	}
	return nil
}

// ---- RayService -------------------------------------------------------------------------------

func (w *world) rayService(res *Result, before, after *snapshot, storedBefore, storedAfter map[string]any) {
	rs := after.obj.(*rayv1.RayService)
	b := before.obj.(*rayv1.RayService)
	res.Hash = w.serviceHashes(before, after, rs)
	res.Validation = &Validation{}
	// Validation failure: the Ready condition's reason and the event (rayservice_controller.go:157-171).
	if cond := meta.FindStatusCondition(rs.Status.Conditions, string(rayv1.RayServiceReady)); cond != nil &&
		cond.Reason == string(rayv1.RayServiceValidationFailed) {
		res.Validation.Failed, res.Validation.Message = true, cond.Message
		if e := w.eventsAfter(string(utils.InvalidRayServiceSpec), string(utils.InvalidRayServiceMetadata)); e != nil {
			res.Validation.Reason = e.Reason
		}
	}
	wasSuspended := meta.IsStatusConditionTrue(b.Status.Conditions, rayServiceSuspended)
	// Suspending counts: the deletion may wait on finalizers (GCS FT Redis cleanup).
	isSuspended := meta.IsStatusConditionTrue(rs.Status.Conditions, rayServiceSuspended) ||
		meta.IsStatusConditionTrue(rs.Status.Conditions, rayServiceSuspending)
	created := len(res.Clusters.Created) > 0
	clusterPending, servePending := w.pendingServiceChange(rs, after, storedBefore, storedAfter)
	// A cluster change the hash sees (goal hash != the active cluster's annotation) that was not
	// carried out, versus one only in fields the hash mutes (replicas, bounds, tolerations,
	// suspend...), which KubeRay never copies to a running cluster.
	hashPending := clusterPending && res.Hash.After[utils.HashWithoutReplicasAndWorkersToDeleteKey] != "" &&
		res.Hash.After[utils.HashWithoutReplicasAndWorkersToDeleteKey] != res.Hash.Goal
	if after.clusters[rs.Status.ActiveServiceStatus.RayClusterName] == nil {
		hashPending = clusterPending // no cluster runs: any change of the stored spec waits
	}
	// One word per case, first match wins: what the operator did to clusters; a hashed cluster
	// change it left undone; Serve re-submitted; then changes only in muted fields or Serve
	// left undone.
	switch {
	case res.Validation.Failed:
		res.Rollout = "not-applied"
	case isSuspended && !wasSuspended:
		res.Rollout = "suspend"
	case wasSuspended && !isSuspended && created:
		res.Rollout = "resume"
	case created && w.hasGateway():
		res.Rollout = "incremental"
	case created:
		res.Rollout = "new-cluster"
	case len(res.Clusters.Updated) > 0:
		res.Rollout = "cluster-in-place"
	case utils.ManagedByExternalController(rs.Spec.ManagedBy) != nil:
		res.Rollout = "none" // the operator skips the RayService (rayservice_controller.go:120-123)
	case hashPending:
		res.Rollout = "not-applied"
	case res.Serve["old"] > 0:
		res.Rollout = "serve-in-place"
	case clusterPending || servePending:
		res.Rollout = "not-applied"
	default:
		res.Rollout = "none"
	}
}

// hasGateway: an incremental upgrade routes through a Gateway the operator creates
// (rayservice_controller.go reconcileGateway); the other strategies create none.
func (w *world) hasGateway() bool {
	var gws gwv1.GatewayList
	must(w.c.List(w.ctx, &gws))
	return len(gws.Items) > 0
}

// pendingServiceChange: what runs is not what the RayService asks for. cluster: the active
// cluster's spec differs from rayClusterConfig (suspend included: modifyRayCluster keeps the
// cluster's own, rayservice_controller.go:1466-1475); with no cluster running (suspended), the
// stored spec changed. serve: the active cluster's last Serve config differs from serveConfigV2.
func (w *world) pendingServiceChange(rs *rayv1.RayService, after *snapshot, storedBefore, storedAfter map[string]any) (bool, bool) {
	active := after.clusters[rs.Status.ActiveServiceStatus.RayClusterName]
	if active == nil {
		bs, _ := storedBefore["spec"].(map[string]any)
		as, _ := storedAfter["spec"].(map[string]any)
		return !reflect.DeepEqual(withoutKey(bs, "suspend"), withoutKey(as, "suspend")), false
	}
	cluster := !utils.CompareJsonStruct(rs.Spec.RayClusterSpec, active.Spec)
	var last map[string]any
	for _, s := range w.submissions {
		if s.Cluster == active.Name {
			last = s.Config
		}
	}
	var want map[string]any
	if err := yaml.Unmarshal([]byte(rs.Spec.ServeConfigV2), &want); err != nil || last == nil {
		return cluster, rs.Spec.ServeConfigV2 != "" && last == nil
	}
	return cluster, !utils.CompareJsonStruct(want, withoutKey(last, "target_capacity"))
}

func withoutKey(m map[string]any, key string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// serviceHashes: the annotations KubeRay writes on a RayService's RayClusters
// (utils/constant.go:26-29) on the active cluster before and after, and the goal hash of the
// stored "after" spec: GenerateHashWithoutReplicasAndWorkersToDelete of rayClusterSpecForHashing
// (rayservice_controller.go:1498-1502: the spec without Suspend).
func (w *world) serviceHashes(before, after *snapshot, rs *rayv1.RayService) *Hashes {
	h := &Hashes{Annotation: utils.HashWithoutReplicasAndWorkersToDeleteKey}
	b := before.obj.(*rayv1.RayService)
	h.Before = clusterAnnotations(before.clusters[b.Status.ActiveServiceStatus.RayClusterName])
	h.After = clusterAnnotations(after.clusters[rs.Status.ActiveServiceStatus.RayClusterName])
	spec := rs.Spec.RayClusterSpec.DeepCopy()
	spec.Suspend = nil
	h.Goal, h.GoalInput = goalHash(*spec)
	return h
}

func clusterAnnotations(c *rayv1.RayCluster) map[string]string {
	out := map[string]string{}
	if c == nil {
		return out
	}
	for _, k := range []string{utils.HashWithoutReplicasAndWorkersToDeleteKey, utils.NumWorkerGroupsKey, utils.KubeRayVersion} {
		if v, ok := c.Annotations[k]; ok {
			out[k] = v
		}
	}
	return out
}

// goalHash returns KubeRay's hash of spec and the JSON bytes it is the SHA-1 of. The bytes are
// re-derived here (the muting of utils/util.go:645-668) and checked against KubeRay's own
// function: a mismatch is a harness error, never silently reported.
func goalHash(spec rayv1.RayClusterSpec) (string, string) {
	want, err := utils.GenerateHashWithoutReplicasAndWorkersToDelete(spec)
	must(err)
	s := spec.DeepCopy()
	s.HeadGroupSpec.Template.Spec.Tolerations = nil
	s.HeadGroupSpec.Template.Spec.SchedulingGates = nil
	for i := range s.WorkerGroupSpecs {
		g := &s.WorkerGroupSpecs[i]
		g.Replicas, g.MaxReplicas, g.MinReplicas, g.ScaleStrategy.WorkersToDelete = nil, nil, nil, nil
		g.Template.Spec.Tolerations, g.Template.Spec.SchedulingGates = nil, nil
	}
	s.UpgradeStrategy = nil
	data, err := json.Marshal(s)
	must(err)
	sum := sha1.Sum(data) //nolint:gosec
	if got := base32.HexEncoding.EncodeToString(sum[:]); got != want {
		panic(fmt.Sprintf("hash input re-derivation is wrong: %s != %s", got, want))
	}
	return want, string(data)
}

// ---- RayCluster -------------------------------------------------------------------------------

func (w *world) rayCluster(res *Result, before, after *snapshot, storedBefore, stored map[string]any) {
	rc := after.obj.(*rayv1.RayCluster)
	b := before.obj.(*rayv1.RayCluster)
	// The head pod's ray.io/upgrade-strategy-recreate-hash (raycluster_controller.go:1636-1644) and
	// the goal: GenerateHashWithoutReplicasAndWorkersToDelete of the spec after setDefaults
	// (rc.go:2422-2432 only fills nil rayStartParams, which omitempty hides from the hash).
	h := &Hashes{Annotation: utils.UpgradeStrategyRecreateHashKey, Before: headAnnotations(before.heads[b.Name]),
		After: headAnnotations(after.heads[rc.Name])}
	spec := rc.Spec.DeepCopy()
	if spec.HeadGroupSpec.RayStartParams == nil {
		spec.HeadGroupSpec.RayStartParams = map[string]string{}
	}
	for i := range spec.WorkerGroupSpecs {
		if spec.WorkerGroupSpecs[i].RayStartParams == nil {
			spec.WorkerGroupSpecs[i].RayStartParams = map[string]string{}
		}
	}
	h.Goal, h.GoalInput = goalHash(*spec)
	// A head pod built after the change carries the goal: a check of the re-derivation above.
	if head := after.heads[rc.Name]; head != nil && w.builtAfterChange(head.Name) &&
		head.Annotations[utils.UpgradeStrategyRecreateHashKey] != h.Goal {
		panic("the head pod's recreate hash is not the goal hash: " + head.Annotations[utils.UpgradeStrategyRecreateHashKey])
	}
	res.Hash = h
	res.Validation = &Validation{}
	// Validation failure: an event only, the cluster is not reconciled (rc.go:165-215). The
	// autoscaler-v1 restartPolicy event shares the reason but is a warning ("spec warning").
	for _, e := range w.events {
		if e.Phase == "before" || !strings.HasPrefix(e.Reason, "InvalidRayCluster") || strings.Contains(e.Note, "spec warning") {
			continue
		}
		res.Validation.Failed, res.Validation.Reason, res.Validation.Message = true, e.Reason, e.Note
		break
	}
	recreated := false
	for _, e := range w.events {
		if e.Phase != "before" && e.Reason == string(utils.DeletedPod) && strings.Contains(e.Note, "Recreate upgradeStrategy") {
			recreated = true
		}
	}
	moved := len(res.Pods.Created)+len(res.Pods.Deleted) > 0
	wasSuspended := b.Spec.Suspend != nil && *b.Spec.Suspend
	isSuspended := rc.Spec.Suspend != nil && *rc.Spec.Suspend
	switch {
	case res.Validation.Failed:
		res.Rollout = "not-applied"
	case utils.ManagedByExternalController(rc.Spec.ManagedBy) != nil:
		res.Rollout = "none" // the operator skips the RayCluster (raycluster_controller.go:157-160)
	case isSuspended && !wasSuspended && moved:
		res.Rollout = "suspend"
	case wasSuspended && !isSuspended && moved:
		res.Rollout = "resume"
	case recreated:
		res.Rollout = "recreate"
	case moved:
		res.Rollout = "scale"
	default:
		// Nothing moved now. Do pods built later differ? Build the cluster from scratch from the
		// stored "before" and "after" objects, each in a world of its own, and compare the pods.
		res.Probe = "same"
		if freshPods(storedBefore) != freshPods(stored) {
			res.Probe = "differs"
		}
		if res.Probe == "differs" {
			res.Rollout = "latent"
		} else {
			res.Rollout = "none"
		}
	}
}

// builtAfterChange: the pod was created after the "after" object was written.
func (w *world) builtAfterChange(pod string) bool {
	for _, ch := range w.log {
		if ch.Kind == "Pod" && ch.Name == pod && ch.Verb == "created" {
			return ch.Phase != "before"
		}
	}
	return false
}

// freshPods: the pods the operator builds for a stored RayCluster in an empty world, every
// worker group with at least one replica (a group at zero would hide its template).
func freshPods(stored map[string]any) string {
	key, _ := json.Marshal(stored)
	if shape, ok := freshMemo[string(key)]; ok {
		return shape
	}
	obj := runtime.DeepCopyJSON(stored)
	spec, _ := obj["spec"].(map[string]any)
	groups, _ := spec["workerGroupSpecs"].([]any)
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		if n, _ := number(gm["replicas"]); n < 1 {
			gm["replicas"] = int64(1)
		}
		if n, ok := number(gm["maxReplicas"]); ok && n < 1 {
			gm["maxReplicas"] = int64(1)
		}
	}
	meta := obj["metadata"].(map[string]any)
	obj["metadata"] = map[string]any{"name": meta["name"], "namespace": namespace, "labels": meta["labels"],
		"annotations": meta["annotations"]}
	delete(obj, "status")
	w := newWorld()
	w.phase = "probe"
	rc := &rayv1.RayCluster{}
	must(runtime.DefaultUnstructuredConverter.FromUnstructured(obj, rc))
	must(w.c.Create(w.ctx, rc))
	w.converge(maxRounds, true)
	var pods corev1.PodList
	must(w.c.List(w.ctx, &pods))
	shape := podShapes(pods.Items)
	if dir := os.Getenv("CONFORMANCE_DEBUG_SHAPES"); dir != "" {
		_ = os.WriteFile(fmt.Sprintf("%s/shape-%d.txt", dir, len(freshMemo)), []byte(shape), 0o644)
	}
	freshMemo[string(key)] = shape
	return shape
}

// number reads a JSON number (float64 from encoding/json, int64 from the API machinery).
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	}
	return 0, false
}

// freshMemo: fresh-world answers by stored object (many cases share their "before").
var freshMemo = map[string]string{}

func headAnnotations(p *corev1.Pod) map[string]string {
	out := map[string]string{}
	if p == nil {
		return out
	}
	for _, k := range []string{utils.UpgradeStrategyRecreateHashKey, utils.KubeRayVersion} {
		if v, ok := p.Annotations[k]; ok {
			out[k] = v
		}
	}
	return out
}

// podShapes: the distinct pods of a cluster (their specs, labels and annotations, without what
// names them, the status and the hash annotation), sorted: how many of each is scale, not this.
func podShapes(pods []corev1.Pod) string {
	var shapes []string
	seen := map[string]bool{}
	for _, p := range pods {
		q := p.DeepCopy()
		q.ObjectMeta = metaShape(q)
		q.Status = corev1.PodStatus{}
		q.Spec.Hostname = ""
		data, _ := json.Marshal(q)
		if !seen[string(data)] {
			seen[string(data)] = true
			shapes = append(shapes, string(data))
		}
	}
	sort.Strings(shapes)
	return strings.Join(shapes, "\n")
}

func metaShape(p *corev1.Pod) (m metav1.ObjectMeta) {
	m.Labels = map[string]string{}
	for k, v := range p.Labels {
		if k == "ray.io/worker-group-replica-name" { // a random suffix per replica (multi-host groups)
			v = "<random>"
		}
		m.Labels[k] = v
	}
	m.Annotations = map[string]string{}
	for k, v := range p.Annotations {
		if k != utils.UpgradeStrategyRecreateHashKey {
			m.Annotations[k] = v
		}
	}
	m.GenerateName = p.GenerateName
	return m
}

// ---- RayJob ---------------------------------------------------------------------------------

func (w *world) rayJob(res *Result, before, after *snapshot, storedBefore, stored map[string]any) {
	job := after.obj.(*rayv1.RayJob)
	b := before.obj.(*rayv1.RayJob)
	res.Validation = &Validation{}
	// rayjob_controller.go:147-161: JobDeploymentStatus ValidationFailed and an event.
	if job.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusValidationFailed {
		res.Validation.Failed, res.Validation.Message = true, job.Status.Message
		if e := w.eventsAfter(string(utils.InvalidRayJobSpec), string(utils.InvalidRayJobMetadata), string(utils.InvalidRayJobStatus)); e != nil {
			res.Validation.Reason = e.Reason
		}
	}
	created := len(res.Clusters.Created) > 0
	deleted := len(res.Clusters.Deleted) > 0
	switch {
	case res.Validation.Failed:
		res.Rollout = "not-applied"
	case job.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusSuspended && b.Status.JobDeploymentStatus != rayv1.JobDeploymentStatusSuspended:
		res.Rollout = "suspend"
	case b.Status.JobDeploymentStatus == rayv1.JobDeploymentStatusSuspended && created:
		res.Rollout = "resume"
	case created || deleted:
		res.Rollout = "new-cluster" // not expected: reported as it is
	case utils.ManagedByExternalController(job.Spec.ManagedBy) != nil:
		res.Rollout = "none" // the operator skips the RayJob (rayjob_controller.go:107-110)
	default:
		// The running job keeps its cluster and submission ("Disregard changes in RayClusterSpec",
		// rayjob_controller.go:988-992). Would the next run differ? Run the stored "before" and
		// "after" objects from scratch, each in a world of its own, and compare what they start.
		res.Probe = "same"
		if freshRun(storedBefore) != freshRun(stored) {
			res.Probe = "differs"
		}
		if res.Probe == "differs" {
			res.Rollout = "next-run"
		} else {
			res.Rollout = "none"
		}
	}
}

// freshRun: what the operator starts for a stored RayJob in an empty world: its RayCluster's
// spec, the submitter Job's pod template and the dashboard submissions, with the random job id
// and cluster name replaced by placeholders.
func freshRun(stored map[string]any) string {
	key, _ := json.Marshal(map[string]any{"run": stored})
	if shape, ok := freshMemo[string(key)]; ok {
		return shape
	}
	obj := runtime.DeepCopyJSON(stored)
	meta := obj["metadata"].(map[string]any)
	obj["metadata"] = map[string]any{"name": meta["name"], "namespace": namespace, "labels": meta["labels"],
		"annotations": meta["annotations"]}
	delete(obj, "status")
	if spec, ok := obj["spec"].(map[string]any); ok {
		spec["suspend"] = false
	}
	w := newWorld()
	w.phase = "probe"
	job := &rayv1.RayJob{}
	must(runtime.DefaultUnstructuredConverter.FromUnstructured(obj, job))
	must(w.c.Create(w.ctx, job))
	w.converge(maxRounds, true)
	must(w.c.Get(w.ctx, client.ObjectKeyFromObject(job), job))
	var clusters rayv1.RayClusterList
	var jobs batchv1.JobList
	must(w.c.List(w.ctx, &clusters))
	must(w.c.List(w.ctx, &jobs))
	var parts []string
	for _, c := range clusters.Items {
		data, _ := json.Marshal(c.Spec)
		parts = append(parts, "cluster "+string(data))
	}
	for _, j := range jobs.Items {
		data, _ := json.Marshal(j.Spec.Template.Spec)
		parts = append(parts, "submitter "+string(data))
	}
	parts = append(parts, w.jobSubmissions...)
	out := strings.Join(parts, "\n")
	for _, s := range []string{job.Status.JobId, job.Status.RayClusterName} {
		if s != "" {
			out = strings.ReplaceAll(out, s, "<id>")
		}
	}
	freshMemo[string(key)] = out
	return out
}
